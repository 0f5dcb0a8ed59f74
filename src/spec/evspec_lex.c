// SPDX-License-Identifier: MIT
/*
 * The -e text as characters: names, numbers, "did you mean", error positions,
 * the /terms/ and :modifiers syntax.
 */
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spec/attr.h"
#include "spec/evspec.h"
#include "spec/evspec_parse.h"
#include "spec/pmu.h"
#include "spec/uprobe.h"

/* Bounds that keep hostile input from allocating without end. */
#define MAX_TERMS 256

/* ---- "did you mean" ---- */

/* One suggestion, within one edit for short names and two for longer ones. */
void prec_evp_sugg_init(struct prec_near *s, const char *want)
{
	prec_near_init(s, want, strlen(want) <= 3 ? 1 : 2, 1);
}

bool prec_evp_sugg_hint(struct prec_near *s, struct prec_diag *d, const char *prefix)
{
	const char *name = prec_near_get(s, 0);

	if (!name)
		return false;
	prec_diag_hint(d, "did you mean '%s%s'?", prefix ? prefix : "", name);
	return true;
}

/* ---- small helpers ---- */

void prec_evp_term_free(struct term *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(t[i].name);
		free(t[i].value);
	}
}

void prec_evp_ev_free(struct ev *e)
{
	if (!e)
		return;
	free(e->pub.text);
	free(e->pub.name);
	free(e->pub.pmu);
	free(e->pub.uprobe.path);
	free(e->pub.uprobe.symbol);
	free(e->pub.kprobe.func);
	free(e->pub.tp.sys);
	free(e->pub.tp.name);
	free(e);
}

char *prec_evp_xstrndup(const char *s, size_t n)
{
	char *r = malloc(n + 1);

	if (r) {
		memcpy(r, s, n);
		r[n] = '\0';
	}
	return r;
}

int prec_evp_nomem(struct parser *p)
{
	return prec_diag_set(p->d, -ENOMEM, -1, "out of memory");
}

int prec_evp_perr(struct parser *p, int code, long pos, const char *fmt, ...)
{
	va_list ap;

	p->d->code = code;
	p->d->pos = pos;
	p->d->hint[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(p->d->msg, sizeof(p->d->msg), fmt, ap);
	va_end(ap);
	return code;
}

char prec_evp_peek(const struct parser *p)
{
	return p->i < p->n ? p->s[p->i] : '\0';
}

bool prec_evp_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

/* Reads [A-Za-z0-9_.-]* at the cursor into a new string. */
int prec_evp_read_name(struct parser *p, char **out, long *pos)
{
	size_t st = p->i;

	while (p->i < p->n && prec_evp_name_char(p->s[p->i]))
		p->i++;
	*pos = (long)st;
	*out = prec_evp_xstrndup(p->s + st, p->i - st);
	return *out ? 0 : prec_evp_nomem(p);
}

bool prec_evp_is_glob(char c)
{
	return c == '*' || c == '?' || c == '[';
}

/* Explains a character that cannot start or continue an event here. */
int prec_evp_unexpected(struct parser *p, const char *what)
{
	char c = prec_evp_peek(p);
	long pos = (long)p->i;

	if (!c)
		return prec_evp_perr(p, -PREC_E_SYNTAX, pos,
				     "unexpected end of the event specification%s%s",
				     what ? ": expected " : "", what ? what : "");
	if (c == ' ' || c == '\t' || c == '\n') {
		prec_evp_perr(p, -PREC_E_SYNTAX, pos,
			      "unexpected space in the event specification");
		prec_diag_hint(p->d, "events are separated by ',' without spaces");
		return -PREC_E_SYNTAX;
	}
	if (prec_evp_is_glob(c)) {
		prec_evp_perr(p, -PREC_E_SYNTAX, pos, "unexpected '%c': wildcards are not supported", c);
		prec_diag_hint(p->d, "name each event; 'ptrec list GLOB' shows what matches");
		return -PREC_E_SYNTAX;
	}
	if (what)
		return prec_evp_perr(p, -PREC_E_SYNTAX, pos, "unexpected '%c': expected %s", c,
				     what);
	return prec_evp_perr(p, -PREC_E_SYNTAX, pos, "unexpected '%c'", c);
}

/* Numbers in terms: decimal, or hex with 0x (perf's rules; no octal). */
int prec_evp_parse_num(const char *s, uint64_t *v)
{
	if (!s || !*s)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return s[2] ? prec_parse_u64(s + 2, 16, v) : -EINVAL;
	return prec_parse_u64(s, 10, v);
}

bool prec_evp_is_raw_name(const char *s)
{
	size_t i, n = strlen(s);

	if (n < 2 || n > 17 || s[0] != 'r')
		return false;
	for (i = 1; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F')))
			return false;
	return true;
}


int prec_evp_parse_terms(struct parser *p, struct term **terms, size_t *nterms)
{
	struct term *t = NULL;
	size_t nt = 0;
	long open = (long)p->i;
	int err = 0;

	p->i++; /* '/' */
	while (prec_evp_peek(p) != '/') {
		size_t st = p->i;
		char c;

		if (nt >= MAX_TERMS) {
			err = prec_evp_perr(p, -PREC_E_SYNTAX, (long)p->i, "too many terms");
			goto out;
		}
		while (p->i < p->n && (prec_evp_name_char(p->s[p->i]) || p->s[p->i] == '@'))
			p->i++;
		if (p->i == st) {
			if (!prec_evp_peek(p)) {
				err = prec_evp_perr(p, -PREC_E_SYNTAX, (long)p->i,
					   "missing closing '/' after the terms");
				prec_diag_hint(p->d, "terms go between slashes: pmu/term,term=value/; "
						     "the list opened at column %ld", open);
			} else if (prec_evp_peek(p) == ',') {
				err = prec_evp_perr(p, -PREC_E_SYNTAX, (long)p->i, "empty term before ','");
			} else {
				err = prec_evp_unexpected(p, "a term name");
			}
			goto out;
		}
		if (PREC_ARRAY_RESERVE(t, nt, 1)) {
			err = prec_evp_nomem(p);
			goto out;
		}
		memset(&t[nt], 0, sizeof(t[nt]));
		t[nt].pos = (long)st;
		t[nt].vpos = -1;
		t[nt].name = prec_evp_xstrndup(p->s + st, p->i - st);
		nt++;
		if (!t[nt - 1].name) {
			err = prec_evp_nomem(p);
			goto out;
		}
		if (prec_evp_peek(p) == '=') {
			size_t vs = ++p->i;

			while (p->i < p->n && p->s[p->i] != ',' && p->s[p->i] != '/')
				p->i++;
			t[nt - 1].vpos = (long)vs;
			if (p->i == vs) {
				err = prec_evp_perr(p, -PREC_E_SYNTAX, (long)vs,
						    "missing value after '%s='", t[nt - 1].name);
				goto out;
			}
			t[nt - 1].value = prec_evp_xstrndup(p->s + vs, p->i - vs);
			if (!t[nt - 1].value) {
				err = prec_evp_nomem(p);
				goto out;
			}
		}
		c = prec_evp_peek(p);
		if (c == ',') {
			p->i++;
			if (prec_evp_peek(p) == '/') {
				err = prec_evp_perr(p, -PREC_E_SYNTAX, (long)p->i, "expected a term after ','");
				goto out;
			}
			continue;
		}
		if (c == '/')
			break;
		if (!c) {
			err = prec_evp_perr(p, -PREC_E_SYNTAX, (long)p->i,
					    "missing closing '/' after the terms");
			prec_diag_hint(p->d, "terms go between slashes: pmu/term,term=value/; the "
					     "list opened at column %ld", open);
		} else {
			err = prec_evp_unexpected(p, "',' or '/'");
		}
		goto out;
	}
	p->i++; /* closing '/' */
out:
	if (err) {
		prec_evp_term_free(t, nt);
		free(t);
		return err;
	}
	*terms = t;
	*nterms = nt;
	return 0;
}

/* Modifier letters at the cursor ("" allowed unless @need). */
int prec_evp_parse_mods(struct parser *p, struct ev *e, bool need)
{
	size_t st = p->i;

	while (p->i < p->n && ((p->s[p->i] >= 'a' && p->s[p->i] <= 'z') ||
			       (p->s[p->i] >= 'A' && p->s[p->i] <= 'Z')))
		p->i++;
	if (p->i == st) {
		if (need)
			return prec_evp_unexpected(p, "modifiers (u, k, ...)");
		return 0;
	}
	if (e->mods_pos < 0)
		e->mods_pos = (long)st;
	return prec_mods_parse(p->s + st, p->i - st, (long)st, &e->mods, p->d);
}

/* After "/terms/": modifiers directly or after ':'. */
int prec_evp_parse_tail_mods(struct parser *p, struct ev *e)
{
	if (prec_evp_peek(p) == ':') {
		p->i++;
		return prec_evp_parse_mods(p, e, true);
	}
	return prec_evp_parse_mods(p, e, false);
}
