/*-------------------------------------------------------------------------
 *
 * main.c
 *		pg_contention: the command-line client of the pg_contention
 *		extension.  Parses the command line, connects (conn.c), and runs one
 *		command.
 *
 *		pg_contention [OPTION]... {top | check | report | incidents} [DBNAME | CONNINFO]
 *
 * Every error is one line on stderr and exit code 3, the monitoring-plugin
 * convention for "unknown"; check exits 0, 1 or 2 by the worst finding.
 *
 *-------------------------------------------------------------------------
 */
#include "client.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void connection_usage(void);

static void
usage(void)
{
	printf("%s names the causes of contention on a PostgreSQL server that runs the\n"
		   "pg_contention extension: overflowed subtransaction caches, a held xmin horizon,\n"
		   "dead index entries, old_snapshot_threshold spinlock pressure.\n\n", progname_get());
	printf("Usage:\n"
		   "  %s [OPTION]... COMMAND [DBNAME | CONNINFO]\n\n", progname_get());
	printf("Commands:\n"
		   "  top                 full-screen live view, refreshed every second\n"
		   "  check               the findings, one line each; exit 0 (nothing above info),\n"
		   "                      1 (warning), 2 (critical), 3 (could not tell)\n"
		   "  report              a report for the incident ticket: plain text, or a\n"
		   "                      self-contained HTML page with charts of the history\n"
		   "  incidents           the incidents the server kept, one line each: the open\n"
		   "                      ones first, then the closed ones (extension 1.4)\n\n");
	printf("Command options:\n"
		   "  -i, --interval=SECONDS   top: seconds between refreshes (default 1)\n"
		   "  -n, --iterations=N       top: stop after N refreshes (default: until q)\n"
		   "      --json               check, incidents: one JSON document\n"
		   "      --live               check: evaluate the findings now, not read the\n"
		   "                           incidents worker's evaluation (at most two\n"
		   "                           pg_contention.incident_interval old)\n"
		   "      --html=FILE          report: write the HTML page to FILE (- for stdout)\n"
		   "      --text               report: print the plain-text report (the default)\n"
		   "      --incident=ID        report: the report of that incident, as the server\n"
		   "                           froze it (IDs: pg_contention incidents)\n"
		   "      --with-values        report: statements with their constants, where you\n"
		   "                           may read them (default: normalized, $1, $2, ...)\n\n");
	connection_usage();
	printf("Other options:\n"
		   "  -V, --version            print the version and exit\n"
		   "  -?, --help               show this help and exit\n\n");
	printf("\"%s COMMAND --help\" shows one command's help: top's keys, check's\n"
		   "exit status.\n", progname_get());
}

/* The connection options, as every command's help gives them. */
static void
connection_usage(void)
{
	printf("Connection options:\n"
		   "  -h, --host=HOSTNAME      database server host or socket directory\n"
		   "  -p, --port=PORT          database server port\n"
		   "  -U, --username=USERNAME  database user name\n"
		   "  -d, --dbname=DBNAME      database to connect to (or a connection string);\n"
		   "                           the one where CREATE EXTENSION pg_contention ran\n"
		   "  -w, --no-password        never prompt for a password (the default: use\n"
		   "                           PGPASSWORD or ~/.pgpass)\n"
		   "The PG* environment variables (PGHOST, PGPORT, PGDATABASE, ...) apply too.\n\n");
}

/*
 * One command's help: pg_contention COMMAND --help (or -?), the way
 * PostgreSQL's programs give theirs.
 */
static void
command_usage(const char *command)
{
	const char *p = progname_get();

	if (strcmp(command, "top") == 0)
	{
		printf("%s top shows the server's contention live, full screen: the findings,\n"
			   "the holders of the xmin horizon, the overflowed subtransaction caches, the\n"
			   "statements that cost most, and charts of the last minutes.\n\n", p);
		printf("Usage:\n"
			   "  %s [OPTION]... top [DBNAME | CONNINFO]\n\n", p);
		printf("Options:\n"
			   "  -i, --interval=SECONDS   seconds between refreshes, 0.1 to 3600 (default 1)\n"
			   "  -n, --iterations=N       stop after N refreshes (default: until q)\n\n");
		printf("Keys:\n"
			   "  q                        quit\n"
			   "  p or space               pause and resume the refreshes\n"
			   "  s                        switch the statements' sort (cost, volume, recent)\n"
			   "  up, down (or k, j)       select a finding\n"
			   "  enter                    read the selected finding whole; esc goes back\n\n");
		printf("Not on a terminal, top prints plain text each refresh.\n\n");
	}
	else if (strcmp(command, "check") == 0)
	{
		printf("%s check prints the findings, one line each, for a person or a\n"
			   "monitoring system (the Nagios plugin convention).\n\n", p);
		printf("Usage:\n"
			   "  %s [OPTION]... check [DBNAME | CONNINFO]\n\n", p);
		printf("Options:\n"
			   "      --json               one JSON document instead of lines\n"
			   "      --live               evaluate the findings now instead of reading the\n"
			   "                           incidents worker's last evaluation\n\n");
		printf("The answer is the incidents worker's last evaluation where it is this\n"
			   "session's own (same database, pg_read_all_stats, the same settings): at most\n"
			   "two pg_contention.incident_interval old (20 s by default), its age in the\n"
			   "status line.  Otherwise, or with --live, the check evaluates now.\n\n");
		printf("Exit status:\n"
			   "  0  nothing above info\n"
			   "  1  a warning\n"
			   "  2  a critical finding\n"
			   "  3  could not tell (no connection, no extension, an error)\n\n");
	}
	else if (strcmp(command, "report") == 0)
	{
		printf("%s report writes a report for an incident ticket: the findings with\n"
			   "their evidence, the statements, the history, as plain text or as one\n"
			   "self-contained HTML page with charts.\n\n", p);
		printf("Usage:\n"
			   "  %s [OPTION]... report [DBNAME | CONNINFO]\n\n", p);
		printf("Options:\n"
			   "      --html=FILE          write the HTML page to FILE (- for stdout)\n"
			   "      --text               print the plain-text report (the default)\n"
			   "      --incident=ID        the report of that incident, as the server froze\n"
			   "                           it (IDs: %s incidents)\n"
			   "      --with-values        statements with their constants, where you may\n"
			   "                           read them (default: normalized, $1, $2, ...)\n\n", p);
	}
	else
	{
		printf("%s incidents lists the incidents the server kept, one line each: the\n"
			   "open ones first, then the closed ones (extension 1.4 or later).\n\n", p);
		printf("Usage:\n"
			   "  %s [OPTION]... incidents [DBNAME | CONNINFO]\n\n", p);
		printf("Options:\n"
			   "      --json               one JSON document instead of lines\n\n");
		printf("\"%s report --incident=ID\" gives one incident's whole report.\n\n", p);
	}
	connection_usage();
	printf("Other options:\n"
		   "  -?, --help               show this help and exit\n\n"
		   "\"%s --help\" lists every command.\n", p);
}

static void
usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: error: ", progname_get());
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry \"%s --help\" for more information.\n", progname_get());
	exit(EXIT_UNKNOWN);
}

/* A positive number of seconds for --interval, 0.1 to 3600. */
static double
parse_interval(const char *arg)
{
	char	   *end;
	double		v = strtod(arg, &end);

	if (end == arg || *end != '\0' || isnan(v) || v < 0.1 || v > 3600)
		usage_error("invalid interval \"%s\": give seconds from 0.1 to 3600", arg);
	return v;
}

static long
parse_iterations(const char *arg)
{
	char	   *end;
	long		v = strtol(arg, &end, 10);

	if (end == arg || *end != '\0' || v < 1)
		usage_error("invalid iteration count \"%s\": give a whole number from 1", arg);
	return v;
}

/* An incident's id: a whole number from 1. */
static long long
parse_incident(const char *arg)
{
	char	   *end;
	long long	v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (!isdigit((unsigned char) arg[0]) || *end != '\0' || errno != 0 || v < 1)
		usage_error("invalid incident \"%s\": give its id, a whole number from 1 "
					"(pg_contention incidents lists them)", arg);
	return v;
}

int
main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{"host", required_argument, NULL, 'h'},
		{"port", required_argument, NULL, 'p'},
		{"username", required_argument, NULL, 'U'},
		{"dbname", required_argument, NULL, 'd'},
		{"no-password", no_argument, NULL, 'w'},
		{"interval", required_argument, NULL, 'i'},
		{"iterations", required_argument, NULL, 'n'},
		{"json", no_argument, NULL, 1},
		{"html", required_argument, NULL, 2},
		{"text", no_argument, NULL, 3},
		{"incident", required_argument, NULL, 4},
		{"live", no_argument, NULL, 5},
		{"with-values", no_argument, NULL, 6},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 7},
		{NULL, 0, NULL, 0}
	};
	const char *keywords[9];
	const char *values[9];
	const char *host = NULL,
			   *port = NULL,
			   *user = NULL,
			   *dbname = NULL;
	const char *command = NULL;
	const char *html_path = NULL;
	long long	incident = 0;
	bool		json = false,
				live = false,
				text = false,
				with_values = false,
				help = false,
				interval_given = false,
				iterations_given = false;
	TopOptions top = {1.0, 0};
	Conn		c = {0};
	char	   *message = NULL;
	ConnProblem problem;
	int			opt,
				k = 0,
				rc;

	progname_set(argv[0]);
	setlocale(LC_ALL, "");
	/* Numbers from the server are parsed with strtod(): always "1.5". */
	setlocale(LC_NUMERIC, "C");
	text_init();

	if (argc > 1 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0))
	{
		printf("pg_contention (client) %s\n", PGC_CLIENT_PROGRAM_VERSION);
		return 0;
	}

	while ((opt = getopt_long(argc, argv, "h:p:U:d:wi:n:V?", long_options, NULL)) != -1)
	{
		switch (opt)
		{
			case 'h':
				host = optarg;
				break;
			case 'p':
				port = optarg;
				break;
			case 'U':
				user = optarg;
				break;
			case 'd':
				dbname = optarg;
				break;
			case 'w':
				break;			/* the client never prompts */
			case 'i':
				top.interval = parse_interval(optarg);
				interval_given = true;
				break;
			case 'n':
				top.iterations = parse_iterations(optarg);
				iterations_given = true;
				break;
			case 1:
				json = true;
				break;
			case 2:
				html_path = optarg;
				break;
			case 3:
				text = true;
				break;
			case 4:
				incident = parse_incident(optarg);
				break;
			case 5:
				live = true;
				break;
			case 6:
				with_values = true;
				break;
			case 'V':
				printf("pg_contention (client) %s\n", PGC_CLIENT_PROGRAM_VERSION);
				return 0;
			case 7:
				help = true;
				break;
			case '?':
				if (strcmp(argv[optind - 1], "-?") == 0)
				{
					help = true;
					break;
				}
				/* -h is the host, as in psql: say so to who meant help */
				if (optopt == 'h')
					fprintf(stderr, "%s: -h is the host option, as in psql; -? or --help shows the help\n",
							progname_get());
				fprintf(stderr, "Try \"%s --help\" for more information.\n", progname_get());
				return EXIT_UNKNOWN;
			default:
				fprintf(stderr, "Try \"%s --help\" for more information.\n", progname_get());
				return EXIT_UNKNOWN;
		}
	}

	if (optind < argc)
		command = argv[optind++];
	if (help)
	{
		/* A command's own help, or everything when there is none. */
		if (command != NULL &&
			(strcmp(command, "top") == 0 || strcmp(command, "check") == 0 ||
			 strcmp(command, "report") == 0 || strcmp(command, "incidents") == 0))
			command_usage(command);
		else
			usage();
		return 0;
	}
	if (optind < argc && dbname == NULL)
		dbname = argv[optind++];
	if (optind < argc)
		usage_error("too many arguments, first extra one: \"%s\"", argv[optind]);
	if (command == NULL)
		usage_error("%sno command given: top, check, report or incidents", "");
	if (strcmp(command, "top") != 0 && strcmp(command, "check") != 0 &&
		strcmp(command, "report") != 0 && strcmp(command, "incidents") != 0)
		usage_error("unknown command \"%s\": use top, check, report or incidents", command);
	if (json && strcmp(command, "check") != 0 && strcmp(command, "incidents") != 0)
		usage_error("--json is an option of check and incidents, not of %s", command);
	if ((html_path || text) && strcmp(command, "report") != 0)
		usage_error("--html and --text are options of report, not of %s", command);
	if (live && strcmp(command, "check") != 0)
		usage_error("--live is an option of check, not of %s", command);
	if (incident && strcmp(command, "report") != 0)
		usage_error("--incident is an option of report, not of %s", command);
	if (with_values && strcmp(command, "report") != 0)
		usage_error("--with-values is an option of report, not of %s", command);
	if ((interval_given || iterations_given) && strcmp(command, "top") != 0)
		usage_error("--interval and --iterations are options of top, not of %s", command);

	if (host)
	{
		keywords[k] = "host";
		values[k++] = host;
	}
	if (port)
	{
		keywords[k] = "port";
		values[k++] = port;
	}
	if (user)
	{
		keywords[k] = "user";
		values[k++] = user;
	}
	/* Never hang on an unreachable host, unless told otherwise. */
	if (getenv("PGCONNECT_TIMEOUT") == NULL)
	{
		keywords[k] = "connect_timeout";
		values[k++] = "10";
	}
	/* Last, so that a connection string in dbname overrides the others. */
	if (dbname)
	{
		keywords[k] = "dbname";
		values[k++] = dbname;
	}
	keywords[k] = "fallback_application_name";
	values[k++] = "pg_contention";
	keywords[k] = NULL;
	values[k] = NULL;
	c.keywords = keywords;
	c.values = values;

	problem = conn_open(&c, &message);
	if (problem != CONN_OK)
	{
		fprintf(stderr, "%s: error: %s\n", progname_get(), message);
		if (strcmp(command, "check") == 0)
			check_print_unknown(message, json);
		conn_close(&c);
		return EXIT_UNKNOWN;
	}

	if (strcmp(command, "top") == 0)
		rc = command_top(&c, &top);
	else if (strcmp(command, "check") == 0)
		rc = command_check(&c, json, live);
	else if (strcmp(command, "incidents") == 0)
		rc = command_incidents(&c, json);
	else
		rc = command_report(&c, html_path, text || html_path == NULL, incident, with_values);
	conn_close(&c);
	return rc;
}
