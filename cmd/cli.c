// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "base/util.h"

const char *cli_prog = "ptrec";
int cli_verbose;

static void vreport(const char *kind, const char *fmt, va_list ap)
{
	fflush(stdout);
	if (kind)
		fprintf(stderr, "%s: %s: ", cli_prog, kind);
	else
		fprintf(stderr, "%s: ", cli_prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void cli_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("error", fmt, ap);
	va_end(ap);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("warning", fmt, ap);
	va_end(ap);
}

void cli_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(NULL, fmt, ap);
	va_end(ap);
}

void cli_dbg(int level, const char *fmt, ...)
{
	va_list ap;

	if (cli_verbose < level)
		return;
	va_start(ap, fmt);
	vreport("debug", fmt, ap);
	va_end(ap);
}

/*
 * The text with a caret under byte @pos; a text wider than DIAG_COLS shows
 * the DIAG_COLS columns around the caret, "..." marking what is left out.
 */
#define DIAG_COLS 100
static void show_caret(const char *text, long pos)
{
	size_t len = strlen(text), from = 0, to, i;

	if (pos > (long)len)
		pos = (long)len;
	to = len;
	if (len > DIAG_COLS) {
		from = (size_t)pos > DIAG_COLS / 2 ? (size_t)pos - DIAG_COLS / 2 : 0;
		to = PREC_MIN(len, from + DIAG_COLS);
		if (to - from < DIAG_COLS)
			from = to - DIAG_COLS;
	}
	fprintf(stderr, "  %s%.*s%s\n  %s", from ? "..." : "", (int)(to - from), text + from,
		to < len ? "..." : "", from ? "   " : "");
	for (i = from; i < (size_t)pos; i++)
		fputc(text[i] == '\t' ? '\t' : ' ', stderr);
	fputs("^\n", stderr);
}

void cli_diag(const char *what, const char *text, const struct prec_diag *d)
{
	fflush(stdout);
	fprintf(stderr, "%s: error: %s%s%s\n", cli_prog, what ? what : "",
		what ? ": " : "", d->msg[0] ? d->msg : prec_strerror(d->code));
	if (text && d->pos >= 0)
		show_caret(text, d->pos);
	if (d->hint[0])
		fprintf(stderr, "  hint: %s\n", d->hint);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: error: ", cli_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (cmd)
		fprintf(stderr, "; see '%s %s --help'\n", cli_prog, cmd);
	else
		fprintf(stderr, "; see '%s --help'\n", cli_prog);
	return EXIT_USAGE;
}

int cli_parse_size(const char *s, uint64_t *out)
{
	char num[32];
	size_t n = strlen(s);
	unsigned shift = 0;
	uint64_t v;
	int err;

	if (!n || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n + 1);
	switch (toupper((unsigned char)num[n - 1])) {
	case 'K': shift = 10; break;
	case 'M': shift = 20; break;
	case 'G': shift = 30; break;
	case 'B': shift = 0; break;
	default: n++; break;
	}
	num[n - 1] = '\0';
	err = prec_parse_u64(num, 10, &v);
	if (err)
		return err;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}
