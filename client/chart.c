/*-------------------------------------------------------------------------
 *
 * chart.c
 *		The history drawn two ways: inline SVG charts for the HTML report
 *		(stacked areas or lines over time, a gap where the server kept no
 *		second), and one-line sparklines for top.
 *
 * Each chart carries data-max and data-points attributes with what it
 * plots, so a test (or a reader of the page's source) can check the
 * figures without rendering it.
 *
 *-------------------------------------------------------------------------
 */
#include "client.h"

#include <math.h>
#include <string.h>

#define CHART_WIDTH		860
#define CHART_HEIGHT	220
#define PLOT_LEFT		64
#define PLOT_RIGHT		16
#define PLOT_TOP		34
#define PLOT_BOTTOM		30
#define GAP_SECONDS		2.5		/* a longer step between seconds is a gap */

/* The i-th double of a strided array (a field of an array of structs). */
static double
strided(const double *first, size_t stride, int i)
{
	double		v;

	memcpy(&v, (const char *) first + (size_t) i * stride, sizeof(v));
	return v;
}

static double
value_at(const ChartSeries *s, int i)
{
	return strided(s->values, s->stride, i);
}

static double
epoch_at(const double *epochs, size_t stride, int i)
{
	return strided(epochs, stride, i);
}

/* 1, 2 or 5 times a power of ten, at least v. */
static double
nice_ceiling(double v)
{
	double		p;

	if (!(v > 0))
		return 1;
	p = pow(10, floor(log10(v)));
	if (v <= p)
		return p;
	if (v <= 2 * p)
		return 2 * p;
	if (v <= 5 * p)
		return 5 * p;
	return 10 * p;
}

/* The value stacked up to and including series k (NAN if any is missing). */
static double
stacked_at(const ChartSeries *series, int k, int i)
{
	double		sum = 0;

	for (int j = 0; j <= k; j++)
	{
		double		v = value_at(&series[j], i);

		if (isnan(v))
			return NAN;
		sum += v;
	}
	return sum;
}

void
chart_svg(Buf *out, const char *id, const char *title, const char *unit,
		  const double *epochs, size_t epoch_stride, int npoints,
		  const ChartSeries *series, int nseries, bool stacked)
{
	double		t0 = npoints > 0 ? epoch_at(epochs, epoch_stride, 0) : 0;
	double		t1 = npoints > 0 ? epoch_at(epochs, epoch_stride, npoints - 1) : 1;
	double		max = 0,
				top;
	double		plot_w = CHART_WIDTH - PLOT_LEFT - PLOT_RIGHT;
	double		plot_h = CHART_HEIGHT - PLOT_TOP - PLOT_BOTTOM;
	Buf			legend;
	int			legend_width = 0;

	if (t1 <= t0)
		t1 = t0 + 1;
	for (int i = 0; i < npoints; i++)
	{
		if (stacked)
		{
			double		v = stacked_at(series, nseries - 1, i);

			if (!isnan(v) && v > max)
				max = v;
		}
		else
			for (int k = 0; k < nseries; k++)
			{
				double		v = value_at(&series[k], i);

				if (!isnan(v) && v > max)
					max = v;
			}
	}
	top = nice_ceiling(max);

#define X(i) (PLOT_LEFT + plot_w * (epoch_at(epochs, epoch_stride, (i)) - t0) / (t1 - t0))
#define Y(v) (PLOT_TOP + plot_h * (1 - (v) / top))

	buf_printf(out, "<svg id=\"chart-%s\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
			   "viewBox=\"0 0 %d %d\" role=\"img\" data-max=\"%g\" data-points=\"%d\">\n",
			   id, CHART_WIDTH, CHART_HEIGHT, max, npoints);
	buf_append(out, "<title>");
	buf_html(out, title);
	buf_append(out, "</title>\n");
	buf_printf(out, "<text x=\"%d\" y=\"18\" class=\"chart-title\">", PLOT_LEFT);
	buf_html(out, title);
	buf_printf(out, " <tspan class=\"unit\">(%s; max %s)</tspan></text>\n", unit,
			   fmt_compact(max));

	/* Grid and y labels: 0, half, top. */
	for (int g = 0; g <= 2; g++)
	{
		double		v = top * g / 2;

		buf_printf(out, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
				   "<text class=\"axis\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
				   PLOT_LEFT, CHART_WIDTH - PLOT_RIGHT, Y(v), Y(v), PLOT_LEFT - 6, Y(v) + 4,
				   fmt_compact(v));
	}
	/* x labels: start, middle, end. */
	if (npoints > 0)
		buf_printf(out,
				   "<text class=\"axis\" x=\"%d\" y=\"%d\">%s</text>"
				   "<text class=\"axis\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>"
				   "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n",
				   PLOT_LEFT, CHART_HEIGHT - 10, fmt_clock(t0),
				   PLOT_LEFT + plot_w / 2, CHART_HEIGHT - 10, fmt_clock((t0 + t1) / 2),
				   CHART_WIDTH - PLOT_RIGHT, CHART_HEIGHT - 10, fmt_clock(t1));
	else
		buf_printf(out, "<text class=\"axis\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">"
				   "no history: the sampler has not recorded any second</text>\n",
				   PLOT_LEFT + plot_w / 2, PLOT_TOP + plot_h / 2);

	buf_init(&legend);
	for (int k = 0; k < nseries; k++)
	{
		double		series_max = 0;
		bool		open = false;
		int			segment_start = 0;

		for (int i = 0; i < npoints; i++)
		{
			double		v = value_at(&series[k], i);

			if (!isnan(v) && v > series_max)
				series_max = v;
		}
		/* A stacked class that never occurred only clutters the legend. */
		if (stacked && series_max == 0)
			continue;
		buf_printf(out, "<g class=\"series\" data-series=\"%s\" data-max=\"%g\">", series[k].name,
				   series_max);
		buf_append(out, "<path d=\"");
		for (int i = 0; i <= npoints; i++)
		{
			bool		gap = i == npoints ||
				isnan(stacked ? stacked_at(series, k, i) : value_at(&series[k], i)) ||
				(i > 0 && epoch_at(epochs, epoch_stride, i) -
				 epoch_at(epochs, epoch_stride, i - 1) > GAP_SECONDS);

			if (gap && open && stacked)
			{
				/* Close the band along the series below, backwards. */
				for (int j = i - 1; j >= segment_start; j--)
					buf_printf(out, "L%.1f %.1f ", X(j),
							   Y(k > 0 ? stacked_at(series, k - 1, j) : 0));
				buf_append(out, "Z ");
			}
			if (gap)
				open = false;
			if (i == npoints)
				break;
			if (isnan(stacked ? stacked_at(series, k, i) : value_at(&series[k], i)))
				continue;
			if (!open)
			{
				segment_start = i;
				buf_printf(out, "M%.1f %.1f ", X(i),
						   Y(stacked ? stacked_at(series, k, i) : value_at(&series[k], i)));
				open = true;
			}
			else
				buf_printf(out, "L%.1f %.1f ", X(i),
						   Y(stacked ? stacked_at(series, k, i) : value_at(&series[k], i)));
		}
		if (stacked)
			buf_printf(out, "\" fill=\"%s\" stroke=\"none\"/>", series[k].color);
		else
			buf_printf(out, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\"/>",
					   series[k].color);
		buf_append(out, "</g>\n");

		/* Legend entries in series order (bottom of the stack first). */
		buf_printf(&legend, "<rect x=\"%d\" y=\"8\" width=\"10\" height=\"10\" fill=\"%s\"/>"
				   "<text class=\"legend\" x=\"%d\" y=\"17\">%s</text>\n",
				   legend_width, series[k].color, legend_width + 14, series[k].name);
		legend_width += 7 * (int) strlen(series[k].name) + 26;
	}
	/* Right-aligned along the top. */
	buf_printf(out, "<g class=\"legend\" transform=\"translate(%d,0)\">\n%s</g>\n",
			   CHART_WIDTH - PLOT_RIGHT - legend_width, legend.data);
	buf_free(&legend);
	buf_printf(out, "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\"/>\n",
			   PLOT_LEFT, PLOT_TOP, plot_w, plot_h);
	buf_append(out, "</svg>\n");
#undef X
#undef Y
}

/*
 * One line of width characters for npoints values: each character the
 * highest value of the points it covers, on a scale from 0 to the highest
 * value of all; a blank where nothing is known.
 */
void
sparkline(Buf *out, const double *values, size_t stride, int npoints, int width, bool utf8)
{
	static const char *const blocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
	static const char ramp[] = "_.:-=+*#";
	double		max = 0;

#define V(i) strided(values, stride, (i))
	for (int i = 0; i < npoints; i++)
		if (!isnan(V(i)) && V(i) > max)
			max = V(i);
	for (int c = 0; c < width; c++)
	{
		int			from = npoints * c / width;
		int			to = npoints * (c + 1) / width;
		double		v = NAN;
		int			level;

		if (to <= from)
			to = from + 1;
		for (int i = from; i < to && i < npoints; i++)
			if (!isnan(V(i)) && (isnan(v) || V(i) > v))
				v = V(i);
		if (isnan(v))
		{
			buf_append(out, " ");
			continue;
		}
		level = max > 0 ? (int) floor(v / max * 7.999) : 0;
		if (level < 0)
			level = 0;
		if (level > 7)
			level = 7;
		if (utf8)
			buf_append(out, blocks[level]);
		else
			buf_appendn(out, &ramp[level], 1);
	}
#undef V
}
