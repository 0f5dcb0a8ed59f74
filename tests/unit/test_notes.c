// SPDX-License-Identifier: MIT
/* base/notes: the one notes type of the importers and exporters. */
#include <stdio.h>
#include <string.h>

#include "base/notes.h"
#include "harness.h"

static void keeps_first_counts_all(void)
{
	struct prec_notes ns = { 0 };
	unsigned i;

	for (i = 0; i < PREC_NOTES_KEPT + 5; i++)
		prec_notes_add(&ns, "note %u", i);
	T_EQ_INT(ns.n, PREC_NOTES_KEPT + 5);
	T_EQ_INT(prec_notes_kept(&ns), PREC_NOTES_KEPT);
	T_EQ_STR(ns.text[0], "note 0");
	T_EQ_STR(ns.text[PREC_NOTES_KEPT - 1], "note 15");
}

static void cut_at_the_line_length(void)
{
	struct prec_notes ns = { 0 };
	char big[PREC_NOTE_LEN * 2];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	prec_notes_add(&ns, "%s", big);
	T_EQ_INT(strlen(ns.text[0]), PREC_NOTE_LEN - 1);
}

static void once_skips_repeats(void)
{
	struct prec_notes ns = { 0 };

	T_OK(prec_notes_add_once(&ns, "gap at %d", 1));
	T_OK(!prec_notes_add_once(&ns, "gap at %d", 1));
	T_OK(prec_notes_add_once(&ns, "gap at %d", 2));
	T_EQ_INT(ns.n, 2);
	T_EQ_STR(ns.text[1], "gap at 2");
}

static void append_keeps_the_count(void)
{
	struct prec_notes a = { 0 }, b = { 0 };
	unsigned i;

	prec_notes_add(&a, "first");
	for (i = 0; i < PREC_NOTES_KEPT + 3; i++)
		prec_notes_add(&b, "b%u", i);
	prec_notes_append(&a, &b);
	T_EQ_INT(a.n, 1 + PREC_NOTES_KEPT + 3);
	T_EQ_STR(a.text[0], "first");
	T_EQ_STR(a.text[1], "b0");
	T_EQ_STR(a.text[PREC_NOTES_KEPT - 1], "b14");
}

static const struct t_case cases[] = {
	T(keeps_first_counts_all),
	T(cut_at_the_line_length),
	T(once_skips_repeats),
	T(append_keeps_the_count),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}
