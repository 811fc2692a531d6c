#!/usr/bin/env bash
# The manual's links: every relative Markdown link and every #anchor in
# README.md, BENCHMARKS.md and doc/*.md must resolve (the file exists; the
# anchor is a heading of the target page, slugged as GitHub does it:
# lowercase, spaces to '-', punctuation other than '-' and '_' dropped,
# "-1", "-2" ... after a repeated heading), README.md must stay under
# 500 lines, and doc/testing.md's index of the TAP tests must be the one
# tools/tap-index.pl makes from them.  Links to other sites are not
# followed: no network.
#
#   tools/check-docs.sh
#
# Prints each failure, then one last line "docs: PASSED FAILED 0" (links
# that resolve, links that do not, plus the README's length check when it
# fails), and exits non-zero when anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."

files=(README.md BENCHMARKS.md doc/*.md)
readme_max=500

# One pass over every page: "H page slug" for each heading (and HTML
# anchor), "L page line path anchor link" for each
# relative link, fields separated by \037 (a tab would merge empty fields),
# its path resolved from the repository root.  Fenced
# code blocks and inline code spans are skipped.
records=$(LC_ALL=C awk '
function norm(dir, rel,    n, i, parts, out, k, res) {
	if (dir != "" && rel !~ /^\//) rel = dir "/" rel
	sub(/^\/+/, "", rel)
	n = split(rel, parts, "/"); k = 0
	for (i = 1; i <= n; i++) {
		if (parts[i] == "" || parts[i] == ".") continue
		if (parts[i] == "..") { if (k == 0) return "../OUTSIDE"; k--; continue }
		out[++k] = parts[i]
	}
	res = ""
	for (i = 1; i <= k; i++) res = res (i > 1 ? "/" : "") out[i]
	return res == "" ? "." : res
}
function slug(text,    s) {
	s = tolower(text)
	gsub(/[^a-z0-9 _-]/, "", s)
	gsub(/ /, "-", s)
	return s
}
function emit_link(target,    path, anchor, i) {
	sub(/^</, "", target); sub(/>$/, "", target)
	sub(/[ \t]+".*$/, "", target)
	if (target == "" || target ~ /^[A-Za-z][A-Za-z0-9+.-]*:/) return
	i = index(target, "#")
	if (i) { path = substr(target, 1, i - 1); anchor = substr(target, i + 1) }
	else { path = target; anchor = "" }
	path = (path == "") ? FILENAME : norm(dir, path)
	printf "L\037%s\037%d\037%s\037%s\037%s\n", FILENAME, FNR, path, anchor, target
}
FNR == 1 {
	fence = ""; delete seen
	dir = FILENAME; if (!sub(/\/[^\/]*$/, "", dir)) dir = ""
}
{
	line = $0
	if (fence != "") {
		if (substr(line, 1, 3) == fence || substr(line, 2, 3) == fence || substr(line, 3, 3) == fence || substr(line, 4, 3) == fence) fence = ""
		next
	}
	if (line ~ /^ ? ? ?(```|~~~)/) {
		fence = line; sub(/^ +/, "", fence)
		fence = substr(fence, 1, 3)
		next
	}
	if (line ~ /^##?#?#?#?#?[ \t]/) {
		h = line
		sub(/^#+[ \t]+/, "", h); sub(/[ \t]+#+[ \t]*$/, "", h); sub(/[ \t]+$/, "", h)
		s = slug(h)
		if (s in seen) { seen[s]++; s = s "-" seen[s] } else seen[s] = 0
		printf "H\037%s\037%s\n", FILENAME, s
	}
	rest = line
	while (match(rest, /<a [^>]*(name|id)="[^"]*"/)) {
		a = substr(rest, RSTART, RLENGTH); sub(/^.*(name|id)="/, "", a); sub(/"$/, "", a)
		printf "H\037%s\037%s\n", FILENAME, a
		rest = substr(rest, RSTART + RLENGTH)
	}
	# inline code spans hold no links
	gsub(/``[^`]*``/, "", line)
	gsub(/`[^`]*`/, "", line)
	if (match(line, /^ ? ? ?\[[^]]+\]:[ \t]*[^ \t]+/)) {
		t = substr(line, RSTART, RLENGTH); sub(/^[^]]*\]:[ \t]*/, "", t)
		emit_link(t)
		next
	}
	while (match(line, /\]\([^)]*\)/)) {
		t = substr(line, RSTART + 2, RLENGTH - 3)
		emit_link(t)
		line = substr(line, RSTART + RLENGTH)
	}
}
' "${files[@]}")

declare -A anchors=()
while IFS=$'\037' read -r kind page a _; do
	[[ $kind == H ]] && anchors["$page#$a"]=1
done <<<"$records"

passed=0
failed=0
while IFS=$'\037' read -r kind page line path anchor link; do
	[[ $kind == L ]] || continue
	if [[ $path == ../OUTSIDE || ! -e $path ]]; then
		echo "$page:$line: $link: no such file ($path)"
		failed=$((failed + 1))
	elif [[ -n $anchor && $path == *.md && -z ${anchors["$path#$anchor"]:-} ]]; then
		echo "$page:$line: $link: no heading \"#$anchor\" in $path"
		failed=$((failed + 1))
	else
		passed=$((passed + 1))
	fi
done <<<"$records"

lines=$(wc -l < README.md)
if (( lines >= readme_max )); then
	echo "README.md: $lines lines, must stay under $readme_max (move reference text to doc/)"
	failed=$((failed + 1))
fi

# The TAP tests' index in doc/testing.md is the tests' own (tools/tap-index.pl).
if ! "$(dirname "$0")/tap-index.pl" --check; then
	failed=$((failed + 1))
fi

echo "docs: $passed $failed 0"
(( failed == 0 ))
