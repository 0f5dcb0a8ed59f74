// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/common.h"

const char *prec_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0: return "success";
	case PREC_E_SYNTAX: return "syntax error";
	case PREC_E_FORMAT: return "malformed file";
	case PREC_E_CHECKSUM: return "checksum mismatch";
	case PREC_E_VERSION: return "unsupported file version";
	case PREC_E_TRUNCATED: return "input is truncated";
	case PREC_E_NOPMU: return "no such PMU";
	case PREC_E_NOSYM: return "symbol not found";
	case PREC_E_DECODE: return "trace decode error";
	case PREC_E_INTERNAL: return "internal error (a bug in ptrec)";
	case PREC_E_NOMATCH: return "nothing matched";
	}
	if (err < PREC_E_BASE)
		return strerror(err);
	return "unknown error";
}

int prec_diag_set(struct prec_diag *d, int code, long pos, const char *fmt, ...)
{
	va_list ap;

	if (!d)
		return code;
	d->code = code;
	d->pos = pos;
	d->hint[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	return code;
}

void prec_diag_hint(struct prec_diag *d, const char *fmt, ...)
{
	va_list ap;

	if (!d)
		return;
	va_start(ap, fmt);
	vsnprintf(d->hint, sizeof(d->hint), fmt, ap);
	va_end(ap);
}
