/*-------------------------------------------------------------------------
 *
 * report.h
 *		The report's files: the live report and the text (report.c), one
 *		incident's page (report_incident.c), and the parts of the HTML
 *		page they share (report_page.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_CLIENT_REPORT_H
#define PGC_CLIENT_REPORT_H

#include "client.h"

/* report_page.c */
extern const char *const html_page_style;

extern void html_cell(Buf *b, const char *text);
extern void html_cell_number(Buf *b, const char *text);
extern void html_cell_query(Buf *b, const char *text);
extern void html_table_start(Buf *b, const char *title, const char *const *headers,
							 int nheaders, int rows, const char *none);
extern void html_table_end(Buf *b, int rows);
extern void html_seconds_charts(Buf *b, const Second *sec, int nseconds, const char *problem);
extern bool html_write_out(const char *path, const char *data, size_t len);

/* report_incident.c */
extern int	report_incident_html(Conn *c, const char *path, long long id, bool with_values);

#endif							/* PGC_CLIENT_REPORT_H */
