// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>

#include "base/notes.h"

void prec_notes_vadd(struct prec_notes *ns, const char *fmt, va_list ap)
{
	if (ns->n < PREC_NOTES_KEPT)
		vsnprintf(ns->text[ns->n], sizeof(ns->text[0]), fmt, ap);
	ns->n++;
}

void prec_notes_add(struct prec_notes *ns, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	prec_notes_vadd(ns, fmt, ap);
	va_end(ap);
}

bool prec_notes_add_once(struct prec_notes *ns, const char *fmt, ...)
{
	char line[PREC_NOTE_LEN];
	unsigned i;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	for (i = 0; i < prec_notes_kept(ns); i++)
		if (!strcmp(ns->text[i], line))
			return false;
	prec_notes_add(ns, "%s", line);
	return true;
}

void prec_notes_append(struct prec_notes *to, const struct prec_notes *from)
{
	unsigned i;

	for (i = 0; i < prec_notes_kept(from); i++)
		prec_notes_add(to, "%s", from->text[i]);
	/* The ones @from only counted are counted here too. */
	to->n += from->n - prec_notes_kept(from);
}
