// SPDX-License-Identifier: MIT
/*
 * The -e parser: recursive descent over the text, one event at a time,
 * resolving each against sysfs, tracefs or an ELF file as soon as it is read
 * so that every error can point at the character that caused it.
 */
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attr.h"
#include "evspec.h"
#include "pmu.h"
#include "uprobe.h"

/* Bounds that keep hostile input from allocating without end. */
#define MAX_SPEC_LEN 65536
#define MAX_EVENTS 4096
#define MAX_TERMS 256

struct term {
	char *name;
	char *value;        /* NULL when the term has no '=' */
	long pos, vpos;
};

struct ev {
	struct prec_event pub;
	struct prec_pmu *pmu;   /* borrowed from the evlist's cache */
	struct prec_mods mods;
	long mods_pos;          /* column of the first modifier letter, -1 if none */
	long action_pos, output_pos, ssize_pos;
	int ugroup;             /* group id while parsing */
	int orig;               /* index in parse order */
};

struct pmu_ent {
	char *key;
	struct prec_pmu *pmu;
};

struct prec_evlist {
	struct prec_evspec_opts opts;
	struct ev **ev;
	size_t nev;
	char **specs;
	size_t nspecs;
	struct pmu_ent *pmus;
	size_t npmus;
	int next_group;
	bool finished;
	const char *diag_text;
	size_t *grp_first, *grp_n;
	size_t ngroups;
};

struct parser {
	struct prec_evlist *el;
	const char *s;
	size_t n, i;
	int arg;
	struct prec_diag *d;
	struct ev **ev;         /* the events of this spec, handed over on success */
	size_t nev, cap;
};

const char *prec_ev_kind_name(enum prec_ev_kind k)
{
	switch (k) {
	case PREC_EV_HW: return "hardware";
	case PREC_EV_SW: return "software";
	case PREC_EV_RAW: return "raw";
	case PREC_EV_TRACEPOINT: return "tracepoint";
	case PREC_EV_UPROBE: return "uprobe";
	case PREC_EV_URETPROBE: return "uretprobe";
	case PREC_EV_BREAKPOINT: return "breakpoint";
	case PREC_EV_PMU: return "pmu";
	case PREC_EV_AUX: return "aux tracer";
	}
	return "?";
}

const char *prec_aux_action_str(uint32_t a)
{
	static const char *const names[] = {
		"none", "start-paused", "pause", "start-paused+pause",
		"resume", "start-paused+resume", "pause+resume", "start-paused+pause+resume",
	};

	return names[a & 7];
}

/* ---- "did you mean" ---- */

struct sugg {
	const char *want;
	unsigned max, best;
	char name[128];
};

/*
 * Ranks a candidate at edit distance @dist: closer is better; at equal
 * distance a swap of letters (same letters, same length) beats other edits,
 * then the nearer length wins.
 */
static unsigned near_score(const char *want, const char *cand, unsigned dist)
{
	size_t lw = strlen(want), lc = strlen(cand), i;
	unsigned cw[256] = { 0 };
	bool anagram = lw == lc;

	for (i = 0; anagram && i < lw; i++) {
		cw[(unsigned char)want[i]]++;
		cw[(unsigned char)cand[i]]--;
	}
	for (i = 0; anagram && i < 256; i++)
		anagram = cw[i] == 0;
	return dist * 4 + (anagram ? 0 : 2) + (lw == lc ? 0 : 1);
}

static void sugg_init(struct sugg *s, const char *want)
{
	s->want = want;
	s->max = strlen(want) <= 3 ? 1 : 2;
	s->best = UINT32_MAX;
	s->name[0] = '\0';
}

static void sugg_add(struct sugg *s, const char *cand)
{
	unsigned dist;

	if (!cand || !strcmp(cand, s->want) || strlen(cand) >= sizeof(s->name))
		return;
	dist = prec_edit_distance(s->want, cand, s->max);
	if (dist > s->max)
		return;
	dist = near_score(s->want, cand, dist);
	if (dist < s->best) {
		s->best = dist;
		snprintf(s->name, sizeof(s->name), "%s", cand);
	}
}

static bool sugg_hint(struct sugg *s, struct prec_diag *d, const char *prefix)
{
	if (!s->name[0])
		return false;
	prec_diag_hint(d, "did you mean '%s%s'?", prefix ? prefix : "", s->name);
	return true;
}

/* ---- small helpers ---- */

static void term_free(struct term *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(t[i].name);
		free(t[i].value);
	}
}

static void ev_free(struct ev *e)
{
	if (!e)
		return;
	free(e->pub.text);
	free(e->pub.name);
	free(e->pub.pmu);
	free(e->pub.uprobe.path);
	free(e->pub.uprobe.symbol);
	free(e->pub.tp.sys);
	free(e->pub.tp.name);
	free(e);
}

static char *xstrndup(const char *s, size_t n)
{
	char *r = malloc(n + 1);

	if (r) {
		memcpy(r, s, n);
		r[n] = '\0';
	}
	return r;
}

static int nomem(struct parser *p)
{
	return prec_diag_set(p->d, -ENOMEM, -1, "out of memory");
}

static int perr(struct parser *p, int code, long pos, const char *fmt, ...) prec_printf(4, 5);

static int perr(struct parser *p, int code, long pos, const char *fmt, ...)
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

static char peek(const struct parser *p)
{
	return p->i < p->n ? p->s[p->i] : '\0';
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

/* Reads [A-Za-z0-9_.-]* at the cursor into a new string. */
static int read_name(struct parser *p, char **out, long *pos)
{
	size_t st = p->i;

	while (p->i < p->n && name_char(p->s[p->i]))
		p->i++;
	*pos = (long)st;
	*out = xstrndup(p->s + st, p->i - st);
	return *out ? 0 : nomem(p);
}

static bool is_glob(char c)
{
	return c == '*' || c == '?' || c == '[';
}

/* Explains a character that cannot start or continue an event here. */
static int unexpected(struct parser *p, const char *what)
{
	char c = peek(p);
	long pos = (long)p->i;

	if (!c)
		return perr(p, -PREC_E_SYNTAX, pos, "unexpected end of the event specification%s%s",
			    what ? ": expected " : "", what ? what : "");
	if (c == ' ' || c == '\t' || c == '\n') {
		perr(p, -PREC_E_SYNTAX, pos, "unexpected space in the event specification");
		prec_diag_hint(p->d, "events are separated by ',' without spaces");
		return -PREC_E_SYNTAX;
	}
	if (is_glob(c)) {
		perr(p, -PREC_E_SYNTAX, pos, "unexpected '%c': wildcards are not supported", c);
		prec_diag_hint(p->d, "name each event; 'ptrec list GLOB' shows what matches");
		return -PREC_E_SYNTAX;
	}
	if (what)
		return perr(p, -PREC_E_SYNTAX, pos, "unexpected '%c': expected %s", c, what);
	return perr(p, -PREC_E_SYNTAX, pos, "unexpected '%c'", c);
}

/* Numbers in terms: decimal, or hex with 0x (perf's rules; no octal). */
static int parse_num(const char *s, uint64_t *v)
{
	if (!s || !*s)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return s[2] ? prec_parse_u64(s + 2, 16, v) : -EINVAL;
	return prec_parse_u64(s, 10, v);
}

static bool is_raw_name(const char *s)
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

/* ---- PMU lookup ---- */

static struct prec_pmu *cache_get(struct prec_evlist *el, const char *key)
{
	size_t i;

	for (i = 0; i < el->npmus; i++)
		if (!strcmp(el->pmus[i].key, key))
			return el->pmus[i].pmu;
	return NULL;
}

static int cache_put(struct prec_evlist *el, const char *key, struct prec_pmu *pmu)
{
	struct pmu_ent *n = realloc(el->pmus, (el->npmus + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	el->pmus = n;
	n[el->npmus].key = strdup(key);
	if (!n[el->npmus].key)
		return -ENOMEM;
	n[el->npmus++].pmu = pmu;
	return 0;
}

/* Loads a PMU through the cache; returns 0, -PREC_E_NOPMU or another error. */
static int get_pmu(struct prec_evlist *el, const char *name, bool emulated, struct prec_pmu **out)
{
	const char *key = emulated ? "#emulated-intel_pt" : name;
	struct prec_pmu *pmu = cache_get(el, key);
	int err;

	if (pmu) {
		*out = pmu;
		return 0;
	}
	err = emulated ? prec_pmu_load_emulated(&pmu) : prec_pmu_load(name, &pmu);
	if (err)
		return err;
	err = cache_put(el, key, pmu);
	if (err) {
		prec_pmu_free(pmu);
		return err;
	}
	*out = pmu;
	return 0;
}

static void add_pmu_names(struct sugg *s)
{
	char **names;
	size_t n, i;

	if (prec_pmu_names(&names, &n))
		return;
	for (i = 0; i < n; i++)
		sugg_add(s, names[i]);
	prec_strv_free(names, n);
}

static void add_generic_names(struct sugg *s)
{
	const struct prec_generic_event *g;
	size_t n, i;

	g = prec_generic_events(&n);
	for (i = 0; i < n; i++)
		sugg_add(s, g[i].name);
}

static int no_tracer(struct parser *p, const char *name, long pos)
{
	char aux[256];

	prec_pmu_aux_names(aux, sizeof(aux));
	if (!strcmp(name, "pt"))
		perr(p, -PREC_E_NOPMU, pos,
		     "no hardware tracer PMU (intel_pt or cs_etm) on this machine");
	else
		perr(p, -PREC_E_NOPMU, pos, "no %s PMU on this machine", name);
	prec_diag_hint(p->d, "AUX-capable PMUs here: %s; see 'ptrec check', or record with --emulate",
		       aux);
	return -PREC_E_NOPMU;
}

static int unknown_event(struct parser *p, const char *name, long pos, bool as_pmu);

/* Resolves a PMU name written as pmu/.../ (@as_pmu) or bare; errors set the diag. */
static int resolve_pmu(struct parser *p, const char *name, long pos, bool as_pmu,
		       struct prec_pmu **out)
{
	struct prec_evlist *el = p->el;
	int err;

	if (el->opts.emulate) {
		if (!strcmp(name, "intel_pt") || !strcmp(name, "pt"))
			err = get_pmu(el, name, true, out);
		else if (prec_pmu_name_is_aux(name)) {
			perr(p, -PREC_E_NOPMU, pos, "the software tracer emulates intel_pt, not %s",
			     name);
			prec_diag_hint(p->d, "use intel_pt/.../ (or pt/.../) with --emulate");
			return -PREC_E_NOPMU;
		} else {
			err = get_pmu(el, name, false, out);
		}
	} else if (!strcmp(name, "pt")) {
		err = get_pmu(el, "pt", false, out);
		if (err == -PREC_E_NOPMU)
			err = get_pmu(el, "intel_pt", false, out);
		if (err == -PREC_E_NOPMU)
			err = get_pmu(el, "cs_etm", false, out);
	} else {
		err = get_pmu(el, name, false, out);
	}
	if (!err)
		return 0;
	if (err == -ENOMEM)
		return nomem(p);
	if (err != -PREC_E_NOPMU)
		return perr(p, err, pos, "cannot read PMU '%s' from sysfs: %s", name,
			    prec_strerror(err));
	if (!strcmp(name, "pt") || prec_pmu_name_is_aux(name))
		return no_tracer(p, name, pos);
	return unknown_event(p, name, pos, as_pmu);
}

static int unknown_event(struct parser *p, const char *name, long pos, bool as_pmu)
{
	struct sugg s;

	if (as_pmu)
		perr(p, -PREC_E_NOPMU, pos, "unknown PMU '%s'", name);
	else
		perr(p, -PREC_E_NOPMU, pos, "unknown event '%s'", name);
	sugg_init(&s, name);
	add_generic_names(&s);
	add_pmu_names(&s);
	sugg_add(&s, "intel_pt");
	sugg_add(&s, "cs_etm");
	sugg_add(&s, "pt");
	sugg_add(&s, "uprobe");
	sugg_add(&s, "uretprobe");
	if (!sugg_hint(&s, p->d, NULL))
		prec_diag_hint(p->d, "'ptrec list' shows the PMUs, events and tracepoints here");
	return -PREC_E_NOPMU;
}

/* ---- terms ---- */

static const char *const common_terms[] = {
	"config", "config1", "config2", "config3", "period", "freq", "name",
	"aux-output", "aux-sample-size", "aux-action", "aux-start-paused", "aux-pause",
	"aux-resume",
};

static const char *const aux_action_values[] = { "start-paused", "pause", "resume" };

static int parse_terms(struct parser *p, struct term **terms, size_t *nterms)
{
	struct term *t = NULL;
	size_t nt = 0;
	long open = (long)p->i;
	int err = 0;

	p->i++; /* '/' */
	while (peek(p) != '/') {
		size_t st = p->i;
		struct term *nt_;
		char c;

		if (nt >= MAX_TERMS) {
			err = perr(p, -PREC_E_SYNTAX, (long)p->i, "too many terms");
			goto out;
		}
		while (p->i < p->n && (name_char(p->s[p->i]) || p->s[p->i] == '@'))
			p->i++;
		if (p->i == st) {
			if (!peek(p)) {
				err = perr(p, -PREC_E_SYNTAX, (long)p->i,
					   "missing closing '/' after the terms");
				prec_diag_hint(p->d, "terms go between slashes: pmu/term,term=value/; "
						     "the list opened at column %ld", open);
			} else if (peek(p) == ',') {
				err = perr(p, -PREC_E_SYNTAX, (long)p->i, "empty term before ','");
			} else {
				err = unexpected(p, "a term name");
			}
			goto out;
		}
		nt_ = realloc(t, (nt + 1) * sizeof(*t));
		if (!nt_) {
			err = nomem(p);
			goto out;
		}
		t = nt_;
		memset(&t[nt], 0, sizeof(t[nt]));
		t[nt].pos = (long)st;
		t[nt].vpos = -1;
		t[nt].name = xstrndup(p->s + st, p->i - st);
		nt++;
		if (!t[nt - 1].name) {
			err = nomem(p);
			goto out;
		}
		if (peek(p) == '=') {
			size_t vs = ++p->i;

			while (p->i < p->n && p->s[p->i] != ',' && p->s[p->i] != '/')
				p->i++;
			t[nt - 1].vpos = (long)vs;
			if (p->i == vs) {
				err = perr(p, -PREC_E_SYNTAX, (long)vs, "missing value after '%s='",
					   t[nt - 1].name);
				goto out;
			}
			t[nt - 1].value = xstrndup(p->s + vs, p->i - vs);
			if (!t[nt - 1].value) {
				err = nomem(p);
				goto out;
			}
		}
		c = peek(p);
		if (c == ',') {
			p->i++;
			if (peek(p) == '/') {
				err = perr(p, -PREC_E_SYNTAX, (long)p->i, "expected a term after ','");
				goto out;
			}
			continue;
		}
		if (c == '/')
			break;
		if (!c) {
			err = perr(p, -PREC_E_SYNTAX, (long)p->i,
				   "missing closing '/' after the terms");
			prec_diag_hint(p->d, "terms go between slashes: pmu/term,term=value/; the "
					     "list opened at column %ld", open);
		} else {
			err = unexpected(p, "',' or '/'");
		}
		goto out;
	}
	p->i++; /* closing '/' */
out:
	if (err) {
		term_free(t, nt);
		free(t);
		return err;
	}
	*terms = t;
	*nterms = nt;
	return 0;
}

/* Modifier letters at the cursor ("" allowed unless @need). */
static int parse_mods(struct parser *p, struct ev *e, bool need)
{
	size_t st = p->i;

	while (p->i < p->n && ((p->s[p->i] >= 'a' && p->s[p->i] <= 'z') ||
			       (p->s[p->i] >= 'A' && p->s[p->i] <= 'Z')))
		p->i++;
	if (p->i == st) {
		if (need)
			return unexpected(p, "modifiers (u, k, ...)");
		return 0;
	}
	if (e->mods_pos < 0)
		e->mods_pos = (long)st;
	return prec_mods_parse(p->s + st, p->i - st, (long)st, &e->mods, p->d);
}

/* After "/terms/": modifiers directly or after ':'. */
static int parse_tail_mods(struct parser *p, struct ev *e)
{
	if (peek(p) == ':') {
		p->i++;
		return parse_mods(p, e, true);
	}
	return parse_mods(p, e, false);
}

static int set_format(struct parser *p, struct ev *e, const struct prec_pmu_format *f,
		      const struct term *t, uint64_t v)
{
	uint64_t bits;
	__u64 *w;

	if (prec_pmu_format_encode(f, v, &bits)) {
		perr(p, -ERANGE, t->vpos >= 0 ? t->vpos : t->pos,
		     "value %llu is out of range for %s (%u bit%s: 0..%llu)",
		     (unsigned long long)v, f->name, f->width, f->width == 1 ? "" : "s",
		     (unsigned long long)(f->width >= 64 ? UINT64_MAX : (1ull << f->width) - 1));
		return -ERANGE;
	}
	w = prec_attr_word(&e->pub.attr, f->word);
	*w = (*w & ~f->mask) | bits;
	return 0;
}

/* A sysfs event alias: "event=0x3c,umask=0x00" applied as format terms. */
static int apply_alias(struct parser *p, struct ev *e, const struct term *t, const char *text)
{
	char *copy = strdup(text), *save = NULL, *tok;
	int err = 0;

	if (!copy)
		return nomem(p);
	if (t->value) {
		free(copy);
		return perr(p, -PREC_E_SYNTAX, t->pos, "event '%s' takes no value", t->name);
	}
	for (tok = strtok_r(copy, ",\n", &save); tok && !err; tok = strtok_r(NULL, ",\n", &save)) {
		char *eq = strchr(tok, '=');
		const struct prec_pmu_format *f;
		uint64_t v = 1;
		__u64 *w;

		while (*tok == ' ')
			tok++;
		if (!*tok)
			continue;
		if (eq)
			*eq = '\0';
		if (eq && parse_num(eq + 1, &v)) {
			err = perr(p, -PREC_E_FORMAT, t->pos, "sysfs event '%s' of %s has a bad value "
				   "'%s'", t->name, e->pmu->name, eq + 1);
			break;
		}
		if (!strcmp(tok, "config") || !strcmp(tok, "config1") || !strcmp(tok, "config2") ||
		    !strcmp(tok, "config3")) {
			w = prec_attr_word(&e->pub.attr, tok[6] ? tok[6] - '0' : 0);
			*w = v;
			continue;
		}
		f = prec_pmu_format(e->pmu, tok);
		if (!f) {
			err = perr(p, -PREC_E_FORMAT, t->pos, "sysfs event '%s' of %s uses '%s', "
				   "which the PMU's format does not define", t->name,
				   e->pmu->name, tok);
			break;
		}
		err = set_format(p, e, f, t, v);
	}
	free(copy);
	return err;
}

static int unknown_term(struct parser *p, struct ev *e, const struct term *t)
{
	struct sugg s;
	size_t i;

	if (e->pmu)
		perr(p, -PREC_E_SYNTAX, t->pos, "unknown term '%s' for %s", t->name, e->pmu->name);
	else
		perr(p, -PREC_E_SYNTAX, t->pos, "unknown term '%s'", t->name);
	sugg_init(&s, t->name);
	for (i = 0; i < PREC_ARRAY_SIZE(common_terms); i++)
		sugg_add(&s, common_terms[i]);
	for (i = 0; e->pmu && i < e->pmu->nr_formats; i++)
		sugg_add(&s, e->pmu->formats[i].name);
	for (i = 0; e->pmu && i < e->pmu->nr_events; i++)
		sugg_add(&s, e->pmu->events[i].name);
	if (!sugg_hint(&s, p->d, NULL)) {
		if (e->pmu && e->pmu->nr_formats)
			prec_diag_hint(p->d, "'ptrec list %s' shows its terms", e->pmu->name);
		else
			prec_diag_hint(p->d, "terms here: config, config1, config2, config3, period, "
					     "freq, name, aux-output, aux-sample-size, aux-action");
	}
	return -PREC_E_SYNTAX;
}

static bool has_config_words(const struct ev *e)
{
	return e->pub.kind == PREC_EV_PMU || e->pub.kind == PREC_EV_AUX ||
	       e->pub.kind == PREC_EV_RAW;
}

static int term_u64(struct parser *p, const struct term *t, uint64_t *v, bool positive)
{
	int err;

	if (!t->value)
		return perr(p, -PREC_E_SYNTAX, t->pos, "'%s' needs a value (%s=N)", t->name,
			    t->name);
	err = parse_num(t->value, v);
	if (err == -ERANGE)
		return perr(p, -ERANGE, t->vpos, "value '%s' of %s is too large", t->value,
			    t->name);
	if (err)
		return perr(p, -PREC_E_SYNTAX, t->vpos, "bad number '%s' for %s", t->value,
			    t->name);
	if (positive && !*v)
		return perr(p, -ERANGE, t->vpos, "%s must be greater than 0", t->name);
	return 0;
}

static int set_action(struct parser *p, struct ev *e, const struct term *t, uint32_t bit)
{
	if (e->action_pos < 0)
		e->action_pos = t->pos;
	e->pub.aux_action |= bit;
	return 0;
}

static int apply_term(struct parser *p, struct ev *e, const struct term *t)
{
	struct prec_attr *a = &e->pub.attr;
	const char *n = t->name;
	uint64_t v = 0;
	int err;

	if (n[0] == '-') {
		perr(p, -PREC_E_SYNTAX, t->pos, "term '%s' starts with '-'", n);
		prec_diag_hint(p->d, "terms take no leading '-'; write '%s' (perf's documentation "
				     "has the same typo)", n + 1);
		return -PREC_E_SYNTAX;
	}
	if (!strcmp(n, "aux-action")) {
		struct sugg s;
		size_t i;

		if (!t->value)
			goto need_value;
		for (i = 0; i < PREC_ARRAY_SIZE(aux_action_values); i++)
			if (!strcmp(t->value, aux_action_values[i]))
				return set_action(p, e, t, 1u << i);
		perr(p, -PREC_E_SYNTAX, t->vpos, "bad aux-action '%s'", t->value);
		sugg_init(&s, t->value);
		for (i = 0; i < PREC_ARRAY_SIZE(aux_action_values); i++)
			sugg_add(&s, aux_action_values[i]);
		if (s.name[0])
			prec_diag_hint(p->d, "did you mean '%s'? valid values: start-paused, pause, "
					     "resume", s.name);
		else
			prec_diag_hint(p->d, "valid values: start-paused, pause, resume");
		return -PREC_E_SYNTAX;
	}
	if (!strcmp(n, "aux-start-paused") || !strcmp(n, "aux-pause") || !strcmp(n, "aux-resume")) {
		if (t->value) {
			perr(p, -PREC_E_SYNTAX, t->pos, "'%s' takes no value", n);
			prec_diag_hint(p->d, "write '%s' alone, or aux-action=%s", n, n + 4);
			return -PREC_E_SYNTAX;
		}
		return set_action(p, e, t, n[4] == 's' ? PREC_AUX_START_PAUSED :
				  n[5] == 'a' ? PREC_AUX_PAUSE : PREC_AUX_RESUME);
	}
	if (!strcmp(n, "config") || !strcmp(n, "config1") || !strcmp(n, "config2") ||
	    !strcmp(n, "config3")) {
		int word = n[6] ? n[6] - '0' : 0;

		if (!has_config_words(e)) {
			perr(p, -PREC_E_SYNTAX, t->pos, "'%s' applies to PMU and raw events only", n);
			prec_diag_hint(p->d, "a %s event has its config set by its name",
				       prec_ev_kind_name(e->pub.kind));
			return -PREC_E_SYNTAX;
		}
		if (e->pub.kind == PREC_EV_RAW && word == 0) {
			perr(p, -PREC_E_SYNTAX, t->pos, "a raw event's config is its rNNNN");
			return -PREC_E_SYNTAX;
		}
		err = term_u64(p, t, &v, false);
		if (err)
			return err;
		*prec_attr_word(a, word) = v;
		return 0;
	}
	if (!strcmp(n, "period") || !strcmp(n, "freq")) {
		err = term_u64(p, t, &v, true);
		if (err)
			return err;
		if (n[0] == 'p') {
			e->pub.period = v;
			a->sample_period = v;
		} else {
			e->pub.freq = v;
			a->sample_freq = v;
			a->freq = 1;
		}
		if (e->pub.period && e->pub.freq) {
			perr(p, -PREC_E_SYNTAX, t->pos, "both period and freq given");
			prec_diag_hint(p->d, "sample every N events (period=N) or N times a second "
					     "(freq=N), not both");
			return -PREC_E_SYNTAX;
		}
		return 0;
	}
	if (!strcmp(n, "name")) {
		if (!t->value)
			goto need_value;
		free(e->pub.name);
		e->pub.name = strdup(t->value);
		return e->pub.name ? 0 : nomem(p);
	}
	if (!strcmp(n, "aux-output")) {
		if (t->value && (parse_num(t->value, &v) || v > 1))
			return perr(p, -PREC_E_SYNTAX, t->vpos, "aux-output is 0 or 1, not '%s'",
				    t->value);
		a->aux_output = t->value ? (v != 0) : 1;
		e->output_pos = a->aux_output ? t->pos : -1;
		return 0;
	}
	if (!strcmp(n, "aux-sample-size")) {
		err = term_u64(p, t, &v, true);
		if (err)
			return err;
		if (v > UINT32_MAX)
			return perr(p, -ERANGE, t->vpos, "aux-sample-size %llu is above %u",
				    (unsigned long long)v, UINT32_MAX);
		a->aux_sample_size = (uint32_t)v;
		e->ssize_pos = t->pos;
		return 0;
	}
	if (e->pmu && (e->pub.kind == PREC_EV_PMU || e->pub.kind == PREC_EV_AUX)) {
		const struct prec_pmu_format *f;
		const char *alias;

		if (n[0] == '@') {
			const char *sink = prec_pmu_sink(e->pmu, n + 1);

			f = prec_pmu_format(e->pmu, "sinkid");
			if (!sink || !f) {
				perr(p, -PREC_E_NOPMU, t->pos, "no sink '%s' for %s", n + 1,
				     e->pmu->name);
				prec_diag_hint(p->d, "'ptrec list %s' shows its sinks", e->pmu->name);
				return -PREC_E_NOPMU;
			}
			if (parse_num(sink, &v) && prec_parse_u64(sink, 16, &v))
				return perr(p, -PREC_E_FORMAT, t->pos, "sysfs sink '%s' has a bad id "
					    "'%s'", n + 1, sink);
			return set_format(p, e, f, t, v);
		}
		f = prec_pmu_format(e->pmu, n);
		if (f) {
			if (!t->value) {
				if (f->width != 1)
					return perr(p, -PREC_E_SYNTAX, t->pos,
						    "'%s' needs a value (%u bits: 0..%llu)", n,
						    f->width,
						    (unsigned long long)(f->width >= 64 ? UINT64_MAX :
									  (1ull << f->width) - 1));
				v = 1;
			} else {
				err = term_u64(p, t, &v, false);
				if (err)
					return err;
			}
			return set_format(p, e, f, t, v);
		}
		alias = prec_pmu_event(e->pmu, n);
		if (alias)
			return apply_alias(p, e, t, alias);
	}
	return unknown_term(p, e, t);
need_value:
	return perr(p, -PREC_E_SYNTAX, t->pos, "'%s' needs a value (%s=...)", n, n);
}

/*
 * The kernel's pt_event_valid() rules, checked here so the user hears which
 * term is wrong instead of a bare EINVAL.
 */
static long term_pos(const struct term *t, size_t nt, const char *name, long dflt)
{
	size_t i;

	for (i = nt; i-- > 0;)
		if (!strcmp(t[i].name, name))
			return t[i].vpos >= 0 ? t[i].vpos : t[i].pos;
	return dflt;
}

static uint64_t field(const struct ev *e, const char *name, bool *present)
{
	const struct prec_pmu_format *f = prec_pmu_format(e->pmu, name);

	if (present)
		*present = f != NULL;
	if (!f)
		return 0;
	return prec_pmu_format_decode(f, prec_attr_word_get(&e->pub.attr, f->word));
}

static bool cap_bits(const struct prec_pmu *pmu, const char *name, uint64_t *v)
{
	const char *s = prec_pmu_cap(pmu, name);

	return s && !prec_parse_u64(s, 16, v);
}

static void valid_list(uint64_t bits, char *buf, size_t size)
{
	size_t len = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < 64 && len < size; i++) {
		int w;

		if (!(bits & (1ull << i)))
			continue;
		w = snprintf(buf + len, size - len, "%s%d", len ? ", " : "", i);
		len += w > 0 ? (size_t)w : 0;
	}
}

static int check_value_cap(struct parser *p, struct ev *e, const struct term *t, size_t nt,
			   const char *term, const char *cap)
{
	uint64_t v = field(e, term, NULL), allowed;
	char list[200];

	if (!cap_bits(e->pmu, cap, &allowed))
		return 0;
	allowed |= 1; /* 0 always means "the hardware default" */
	if (v < 64 && (allowed & (1ull << v)))
		return 0;
	perr(p, -ERANGE, term_pos(t, nt, term, e->pub.pos),
	     "%s=%llu is not supported by this %s", term, (unsigned long long)v, e->pmu->name);
	valid_list(allowed, list, sizeof(list));
	prec_diag_hint(p->d, "valid values (caps/%s): %s", cap, list);
	return -ERANGE;
}

static int need_cap(struct parser *p, struct ev *e, const struct term *t, size_t nt,
		    const char *term, const char *cap)
{
	uint64_t v;

	if (!field(e, term, NULL))
		return 0;
	if (!cap_bits(e->pmu, cap, &v) || v)
		return 0;
	perr(p, -EOPNOTSUPP, term_pos(t, nt, term, e->pub.pos), "%s is not supported by this %s",
	     term, e->pmu->emulated ? "emulated intel_pt" : e->pmu->name);
	prec_diag_hint(p->d, "caps/%s is 0; leave out '%s'", cap, term);
	return -EOPNOTSUPP;
}

static int check_intel_pt(struct parser *p, struct ev *e, const struct term *t, size_t nt)
{
	bool have_pt, have_branch;
	uint64_t pt = field(e, "pt", &have_pt), branch = field(e, "branch", &have_branch);
	int err;

	if (strcmp(e->pmu->name, "intel_pt"))
		return 0;
	if (have_pt && have_branch && branch && !pt) {
		perr(p, -EINVAL, term_pos(t, nt, "pt", e->pub.pos), "branch needs pt");
		prec_diag_hint(p->d, "the kernel refuses branch=1 with pt=0; drop pt=0");
		return -EINVAL;
	}
	if (field(e, "fup_on_ptw", NULL) && !field(e, "ptw", NULL)) {
		perr(p, -EINVAL, term_pos(t, nt, "fup_on_ptw", e->pub.pos), "fup_on_ptw needs ptw");
		return -EINVAL;
	}
	if (!e->pmu->nr_caps)
		return 0;
	if ((err = need_cap(p, e, t, nt, "cyc", "psb_cyc")) ||
	    (err = need_cap(p, e, t, nt, "cyc_thresh", "psb_cyc")) ||
	    (err = need_cap(p, e, t, nt, "psb_period", "psb_cyc")) ||
	    (err = need_cap(p, e, t, nt, "mtc", "mtc")) ||
	    (err = need_cap(p, e, t, nt, "ptw", "ptwrite")) ||
	    (err = need_cap(p, e, t, nt, "pwr_evt", "power_event_trace")) ||
	    (err = need_cap(p, e, t, nt, "event", "event_trace")) ||
	    (err = need_cap(p, e, t, nt, "notnt", "tnt_disable")))
		return err;
	if (field(e, "mtc", NULL) || field(e, "mtc_period", NULL)) {
		err = check_value_cap(p, e, t, nt, "mtc_period", "mtc_periods");
		if (err)
			return err;
	}
	if ((err = check_value_cap(p, e, t, nt, "psb_period", "psb_periods")) ||
	    (err = check_value_cap(p, e, t, nt, "cyc_thresh", "cycle_thresholds")))
		return err;
	return 0;
}

static int apply_terms(struct parser *p, struct ev *e, struct term *t, size_t nt)
{
	size_t i, j;
	int err;

	for (i = 0; i < nt; i++) {
		bool action = !strncmp(t[i].name, "aux-", 4) &&
			      (!strcmp(t[i].name, "aux-action") || !strcmp(t[i].name, "aux-pause") ||
			       !strcmp(t[i].name, "aux-resume") ||
			       !strcmp(t[i].name, "aux-start-paused"));

		for (j = 0; j < i && !action; j++)
			if (!strcmp(t[i].name, t[j].name))
				return perr(p, -PREC_E_SYNTAX, t[i].pos, "term '%s' given twice",
					    t[i].name);
		err = apply_term(p, e, &t[i]);
		if (err)
			return err;
	}
	if (e->pmu && e->pub.kind == PREC_EV_AUX)
		return check_intel_pt(p, e, t, nt);
	return 0;
}

/* What may follow an event's name: "/terms/" with trailing modifiers, or ":modifiers". */
static int parse_event_tail(struct parser *p, struct ev *e)
{
	struct term *t = NULL;
	size_t nt = 0;
	int err = 0;

	if (peek(p) == '/') {
		err = parse_terms(p, &t, &nt);
		if (!err)
			err = parse_tail_mods(p, e);
		if (!err)
			err = apply_terms(p, e, t, nt);
	} else if (peek(p) == ':') {
		p->i++;
		err = parse_mods(p, e, true);
	}
	term_free(t, nt);
	free(t);
	return err;
}

/* ---- event kinds ---- */

static int set_pmu_name(struct parser *p, struct ev *e, const char *name)
{
	free(e->pub.pmu);
	e->pub.pmu = strdup(name);
	return e->pub.pmu ? 0 : nomem(p);
}

static int init_generic(struct parser *p, struct ev *e, const char *name)
{
	const struct prec_generic_event *g = prec_generic_event_find(name);
	uint64_t raw;

	if (g) {
		e->pub.kind = g->type == PERF_TYPE_HARDWARE ? PREC_EV_HW : PREC_EV_SW;
		prec_attr_init(&e->pub.attr, g->type, g->config);
		return set_pmu_name(p, e, g->type == PERF_TYPE_HARDWARE ? "hardware" : "software");
	}
	if (prec_parse_u64(name + 1, 16, &raw))
		return perr(p, -PREC_E_SYNTAX, e->pub.pos, "bad raw event '%s'", name);
	e->pub.kind = PREC_EV_RAW;
	prec_attr_init(&e->pub.attr, PERF_TYPE_RAW, raw);
	return set_pmu_name(p, e, "raw");
}

static int init_pmu(struct parser *p, struct ev *e, struct prec_pmu *pmu)
{
	int err;

	e->pmu = pmu;
	e->pub.aux = pmu->aux;
	e->pub.kind = pmu->aux ? PREC_EV_AUX : PREC_EV_PMU;
	prec_attr_init(&e->pub.attr, pmu->type, 0);
	if (pmu->aux) {
		err = prec_pmu_default_config(pmu, &e->pub.attr);
		if (err)
			return perr(p, -PREC_E_INTERNAL, e->pub.pos,
				    "cannot build the default config of %s", pmu->name);
	}
	return set_pmu_name(p, e, pmu->name);
}

/* name, name/terms/mods, or name:mods for generic, raw and PMU events. */
static int parse_named(struct parser *p, struct ev *e, const char *name, long npos)
{
	struct term *t = NULL;
	size_t nt = 0;
	struct prec_pmu *pmu = NULL;
	bool generic = prec_generic_event_find(name) || is_raw_name(name);
	int err;

	if (generic) {
		err = init_generic(p, e, name);
	} else {
		err = resolve_pmu(p, name, npos, peek(p) == '/', &pmu);
		if (!err)
			err = init_pmu(p, e, pmu);
	}
	if (err)
		return err;
	if (peek(p) == '/') {
		err = parse_terms(p, &t, &nt);
		if (!err)
			err = parse_tail_mods(p, e);
		if (!err)
			err = apply_terms(p, e, t, nt);
	} else if (peek(p) == ':') {
		p->i++;
		err = parse_mods(p, e, true);
	} else if (e->pub.kind == PREC_EV_AUX) {
		err = check_intel_pt(p, e, NULL, 0);
	}
	term_free(t, nt);
	free(t);
	return err;
}

/* @mounting: the error came from finding (or mounting) tracefs, not from reading it. */
static int tracefs_error(struct parser *p, int err, long pos, const char *sys, const char *name,
			 bool mounting)
{
	if (err == -ENOENT) {
		perr(p, -ENOENT, pos, "tracefs is not mounted, so tracepoint '%s:%s' cannot be "
		     "resolved", sys, name);
		if (prec_sysroot()[0])
			prec_diag_hint(p->d, "PTREC_SYSROOT is set and %s has no "
					     "sys/kernel/tracing/events", prec_sysroot());
		else
			prec_diag_hint(p->d, "as root: mount -t tracefs nodev /sys/kernel/tracing");
		return -ENOENT;
	}
	/* A non-root user never mounts: EACCES means tracefs is there but closed. */
	if ((!mounting || geteuid() != 0) && (err == -EACCES || err == -EPERM)) {
		perr(p, err, pos, "cannot read tracefs: %s", strerror(-err));
		prec_diag_hint(p->d, "run as root, or have root make tracefs readable "
				     "(mount -o remount,mode=755 /sys/kernel/tracing)");
		return err;
	}
	perr(p, err, pos, "tracefs is not mounted and mounting it on /sys/kernel/tracing failed: %s",
	     prec_strerror(err));
	prec_diag_hint(p->d, "have root mount it: mount -t tracefs nodev /sys/kernel/tracing");
	return err;
}

static int resolve_tracepoint(struct parser *p, struct ev *e, long spos, long npos)
{
	const char *sys = e->pub.tp.sys, *name = e->pub.tp.name;
	char dir[4096], **names;
	size_t n, i;
	struct sugg s;
	bool found = false;
	int err;

	err = prec_tracefs_dir(dir, sizeof(dir));
	if (err)
		return tracefs_error(p, err, spos, sys, name, true);
	err = prec_tracepoint_id(sys, name, &e->pub.tp.id);
	if (!err) {
		e->pub.attr.config = e->pub.tp.id;
		return 0;
	}
	if (err == -EACCES || err == -EPERM)
		return tracefs_error(p, err, spos, sys, name, false);
	if (err == -EIO)
		return perr(p, -EIO, npos, "tracepoint '%s:%s' has no id file in tracefs", sys,
			    name);
	if (err != -ENOENT)
		return perr(p, err, spos, "cannot read tracepoint '%s:%s': %s", sys, name,
			    prec_strerror(err));
	if (prec_tracepoint_names(NULL, &names, &n))
		names = NULL, n = 0;
	sugg_init(&s, sys);
	for (i = 0; i < n; i++) {
		if (!strcmp(names[i], sys))
			found = true;
		sugg_add(&s, names[i]);
	}
	prec_strv_free(names, n);
	if (!found) {
		const struct prec_generic_event *g;
		size_t ng;

		perr(p, -ENOENT, spos, "unknown tracepoint subsystem '%s'", sys);
		g = prec_generic_events(&ng);
		for (i = 0; i < ng; i++)
			sugg_add(&s, g[i].name);
		if (!sugg_hint(&s, p->d, NULL))
			prec_diag_hint(p->d, "'ptrec list' shows the tracepoints here");
		return -ENOENT;
	}
	perr(p, -ENOENT, npos, "unknown tracepoint '%s:%s'", sys, name);
	sugg_init(&s, name);
	if (!prec_tracepoint_names(sys, &names, &n)) {
		for (i = 0; i < n; i++)
			sugg_add(&s, names[i]);
		prec_strv_free(names, n);
	}
	if (!sugg_hint(&s, p->d, NULL))
		prec_diag_hint(p->d, "'ptrec list %s:*' shows that subsystem's tracepoints", sys);
	return -ENOENT;
}

static int emulated_tracepoint(struct parser *p, struct ev *e, long spos, long npos)
{
	struct sugg s;
	const char *nm;
	size_t i;
	int nr;

	if (strcmp(e->pub.tp.sys, "syscalls") ||
	    (strncmp(e->pub.tp.name, "sys_enter_", 10) && strncmp(e->pub.tp.name, "sys_exit_", 9))) {
		perr(p, -EINVAL, spos, "tracepoint '%s:%s' is not available under --emulate",
		     e->pub.tp.sys, e->pub.tp.name);
		prec_diag_hint(p->d, "the software tracer triggers on syscalls:sys_enter_NAME and "
				     "syscalls:sys_exit_NAME only");
		return -EINVAL;
	}
	if (e->pub.tp.syscall_nr >= 0)
		return 0;
	perr(p, -ENOENT, npos, "unknown system call tracepoint '%s'", e->pub.tp.name);
	sugg_init(&s, e->pub.tp.name);
	for (i = 0; (nm = prec_syscall_at(i, &nr)); i++) {
		char buf[128];

		snprintf(buf, sizeof(buf), "%s%s", e->pub.tp.syscall_dir == PREC_SYSCALL_ENTER ?
			 "sys_enter_" : "sys_exit_", nm);
		sugg_add(&s, buf);
	}
	sugg_hint(&s, p->d, NULL);
	return -ENOENT;
}

static int parse_tracepoint(struct parser *p, struct ev *e, char *sys, long spos)
{
	char *name;
	long npos;
	int err;

	e->pub.tp.sys = sys;
	p->i++; /* ':' */
	err = read_name(p, &name, &npos);
	if (err)
		return err;
	e->pub.tp.name = name;
	if (!*name || is_glob(peek(p)))
		return unexpected(p, "a tracepoint name after ':'");
	e->pub.kind = PREC_EV_TRACEPOINT;
	e->pub.tp.syscall_nr = -1;
	if (!strcmp(sys, "syscalls")) {
		if (!strncmp(name, "sys_enter_", 10)) {
			e->pub.tp.syscall_dir = PREC_SYSCALL_ENTER;
			e->pub.tp.syscall_nr = prec_syscall_nr(name + 10);
		} else if (!strncmp(name, "sys_exit_", 9)) {
			e->pub.tp.syscall_dir = PREC_SYSCALL_EXIT;
			e->pub.tp.syscall_nr = prec_syscall_nr(name + 9);
		}
		if (e->pub.tp.syscall_nr < 0)
			e->pub.tp.syscall_nr = -1;
	}
	prec_attr_init(&e->pub.attr, PERF_TYPE_TRACEPOINT, 0);
	err = set_pmu_name(p, e, "tracepoint");
	if (err)
		return err;
	if (p->el->opts.emulate)
		err = emulated_tracepoint(p, e, spos, npos);
	else
		err = resolve_tracepoint(p, e, spos, npos);
	if (err)
		return err;
	return parse_event_tail(p, e);
}

static int parse_uprobe(struct parser *p, struct ev *e, bool ret)
{
	struct prec_uprobe_target tg;
	struct prec_diag ud = { 0 };
	struct prec_pmu *pmu = NULL;
	size_t st;
	char *path = NULL, *sym = NULL;
	long ppos, spos, opos = -1;
	uint64_t off = 0;
	int err = 0;

	p->i++; /* ':' after uprobe */
	ppos = (long)p->i;
	path = malloc(p->n - p->i + 1);
	if (!path)
		return nomem(p);
	st = 0;
	if (peek(p) == '"') {
		p->i++;
		while (p->i < p->n && p->s[p->i] != '"')
			path[st++] = p->s[p->i++];
		if (peek(p) != '"') {
			err = perr(p, -PREC_E_SYNTAX, ppos, "missing closing '\"' of the path");
			goto out;
		}
		p->i++;
	} else {
		while (p->i < p->n && p->s[p->i] != ':') {
			if (p->s[p->i] == '\\' && p->i + 1 < p->n &&
			    (p->s[p->i + 1] == ':' || p->s[p->i + 1] == '\\'))
				p->i++;
			path[st++] = p->s[p->i++];
		}
	}
	path[st] = '\0';
	if (!st) {
		err = perr(p, -PREC_E_SYNTAX, ppos, "expected a file path after '%s:'",
			   ret ? "uretprobe" : "uprobe");
		prec_diag_hint(p->d, "%s:PATH:FUNCTION, e.g. %s:/bin/true:main",
			       ret ? "uretprobe" : "uprobe", ret ? "uretprobe" : "uprobe");
		goto out;
	}
	if (peek(p) != ':') {
		err = perr(p, -PREC_E_SYNTAX, (long)p->i, "expected ':FUNCTION' after the path");
		prec_diag_hint(p->d, "%s:PATH:FUNCTION; write a ':' inside PATH as '\\:' or quote "
				     "the path", ret ? "uretprobe" : "uprobe");
		goto out;
	}
	p->i++;
	spos = (long)p->i;
	while (p->i < p->n && (name_char(p->s[p->i]) || p->s[p->i] == '$') && p->s[p->i] != '-')
		p->i++;
	if ((long)p->i == spos) {
		err = unexpected(p, "a function name or 0xADDRESS");
		goto out;
	}
	sym = xstrndup(p->s + spos, p->i - (size_t)spos);
	if (!sym) {
		err = nomem(p);
		goto out;
	}
	if (peek(p) == '+') {
		char num[32];

		p->i++;
		opos = (long)p->i;
		while (p->i < p->n && name_char(p->s[p->i]) && p->s[p->i] != '-' &&
		       p->s[p->i] != '.')
			p->i++;
		if (p->i - (size_t)opos >= sizeof(num) || (long)p->i == opos) {
			err = perr(p, -PREC_E_SYNTAX, opos, "expected an offset after '+'");
			goto out;
		}
		memcpy(num, p->s + opos, p->i - (size_t)opos);
		num[p->i - (size_t)opos] = '\0';
		if (parse_num(num, &off)) {
			err = perr(p, -PREC_E_SYNTAX, opos, "bad offset '%s'", num);
			goto out;
		}
		if (ret) {
			err = perr(p, -PREC_E_SYNTAX, opos - 1, "a uretprobe takes no offset");
			prec_diag_hint(p->d, "a return probe fires when the function returns; give "
					     "the function itself");
			goto out;
		}
	}
	err = prec_uprobe_resolve(path, sym, off, &tg, &ud);
	if (err) {
		long at = ppos;

		if (err == -PREC_E_NOSYM || err == -EINVAL || err == -EFAULT)
			at = spos;
		if (err == -ERANGE)
			at = opos >= 0 ? opos : spos;
		*p->d = ud;
		p->d->pos = at;
		goto out;
	}
	e->pub.kind = ret ? PREC_EV_URETPROBE : PREC_EV_UPROBE;
	e->pub.uprobe.path = tg.path;
	e->pub.uprobe.symbol = tg.symbol;
	e->pub.uprobe.sym_offset = tg.sym_offset;
	e->pub.uprobe.vaddr = tg.vaddr;
	e->pub.uprobe.file_offset = tg.file_offset;
	err = get_pmu(p->el, "uprobe", false, &pmu);
	if (err && (err != -PREC_E_NOPMU || !p->el->opts.emulate)) {
		if (err == -PREC_E_NOPMU) {
			err = perr(p, -PREC_E_NOPMU, e->pub.pos, "no uprobe PMU on this machine");
			prec_diag_hint(p->d, "the kernel needs CONFIG_UPROBE_EVENTS; or record with "
					     "--emulate");
		} else {
			err = perr(p, err, e->pub.pos, "cannot read the uprobe PMU: %s",
				   prec_strerror(err));
		}
		goto out;
	}
	err = 0;
	prec_attr_init(&e->pub.attr, pmu ? pmu->type : 0, 0);
	if (ret && pmu) {
		const struct prec_pmu_format *f = prec_pmu_format(pmu, "retprobe");
		uint64_t bits;

		if (!f || prec_pmu_format_encode(f, 1, &bits)) {
			err = perr(p, -PREC_E_FORMAT, e->pub.pos,
				   "the uprobe PMU has no usable format/retprobe");
			goto out;
		}
		*prec_attr_word(&e->pub.attr, f->word) |= bits;
	}
	e->pub.attr.uprobe_path = (uint64_t)(uintptr_t)e->pub.uprobe.path;
	e->pub.attr.probe_offset = e->pub.uprobe.file_offset;
	err = set_pmu_name(p, e, "uprobe");
	if (err)
		goto out;
	err = parse_event_tail(p, e);
out:
	free(path);
	free(sym);
	return err;
}

static int parse_breakpoint(struct parser *p, struct ev *e)
{
	size_t st;
	long apos, lpos = -1, xpos = -1;
	uint64_t addr, len = 0;
	uint32_t type = 0;
	char num[32];
	int err = 0;

	p->i++; /* ':' after mem */
	apos = st = p->i;
	while (p->i < p->n && ((p->s[p->i] >= '0' && p->s[p->i] <= '9') ||
			       (p->s[p->i] >= 'a' && p->s[p->i] <= 'f') ||
			       (p->s[p->i] >= 'A' && p->s[p->i] <= 'F') || p->s[p->i] == 'x' ||
			       p->s[p->i] == 'X'))
		p->i++;
	if (p->i == st)
		return unexpected(p, "a breakpoint address (mem:0xADDR)");
	if (p->i - st >= sizeof(num) || (memcpy(num, p->s + st, p->i - st), num[p->i - st] = '\0',
					  parse_num(num, &addr)))
		return perr(p, -PREC_E_SYNTAX, apos, "bad breakpoint address '%.*s'",
			    (int)(p->i - st), p->s + st);
	if (peek(p) == '/' && p->i + 1 < p->n && p->s[p->i + 1] >= '0' && p->s[p->i + 1] <= '9') {
		p->i++;
		lpos = st = p->i;
		while (p->i < p->n && name_char(p->s[p->i]) && p->s[p->i] != '-')
			p->i++;
		if (p->i - st >= sizeof(num) || (memcpy(num, p->s + st, p->i - st),
						  num[p->i - st] = '\0', parse_num(num, &len)))
			return perr(p, -PREC_E_SYNTAX, lpos, "bad breakpoint length '%.*s'",
				    (int)(p->i - st), p->s + st);
	}
	if (peek(p) == ':') {
		size_t j = p->i + 1;
		bool any = false, other = false;

		while (j < p->n && ((p->s[j] >= 'a' && p->s[j] <= 'z') ||
				    (p->s[j] >= 'A' && p->s[j] <= 'Z'))) {
			if (p->s[j] == 'r' || p->s[j] == 'w' || p->s[j] == 'x')
				any = true;
			else
				other = true;
			j++;
		}
		if (any && other)
			return perr(p, -PREC_E_SYNTAX, (long)p->i + 1,
				    "bad breakpoint access '%.*s'", (int)(j - p->i - 1),
				    p->s + p->i + 1);
		if (any) {
			for (st = p->i + 1; st < j; st++) {
				uint32_t bit = p->s[st] == 'r' ? HW_BREAKPOINT_R :
					       p->s[st] == 'w' ? HW_BREAKPOINT_W : HW_BREAKPOINT_X;

				if (type & bit)
					return perr(p, -PREC_E_SYNTAX, (long)st,
						    "access '%c' given twice", p->s[st]);
				if (bit == HW_BREAKPOINT_X)
					xpos = (long)st;
				type |= bit;
			}
			p->i = j;
		}
	}
	if ((type & HW_BREAKPOINT_X) && (type & HW_BREAKPOINT_RW)) {
		perr(p, -EINVAL, xpos, "an execute breakpoint cannot also watch reads or writes");
		prec_diag_hint(p->d, "use two events: mem:ADDR:x and mem:ADDR:rw");
		return -EINVAL;
	}
	if (!type)
		type = HW_BREAKPOINT_RW;
	if (!len)
		len = type == HW_BREAKPOINT_X ? sizeof(long) : HW_BREAKPOINT_LEN_4;
	if (len != 1 && len != 2 && len != 4 && len != 8) {
		perr(p, -EINVAL, lpos, "breakpoint length %llu is not 1, 2, 4 or 8",
		     (unsigned long long)len);
		return -EINVAL;
	}
	if (type == HW_BREAKPOINT_X && len != sizeof(long)) {
		perr(p, -EINVAL, lpos, "an execute breakpoint has length %zu here", sizeof(long));
		return -EINVAL;
	}
	if (type != HW_BREAKPOINT_X && (addr & (len - 1))) {
		perr(p, -EINVAL, apos, "address %#llx is not aligned to the length %llu",
		     (unsigned long long)addr, (unsigned long long)len);
		return -EINVAL;
	}
	e->pub.kind = PREC_EV_BREAKPOINT;
	prec_attr_init(&e->pub.attr, PERF_TYPE_BREAKPOINT, 0);
	e->pub.attr.bp_type = type;
	e->pub.attr.bp_addr = addr;
	e->pub.attr.bp_len = len;
	e->pub.bp.addr = addr;
	e->pub.bp.len = (uint32_t)len;
	e->pub.bp.type = type;
	err = set_pmu_name(p, e, "breakpoint");
	if (err)
		return err;
	return parse_event_tail(p, e);
}

/* The rules that hold per event once its terms are known. */
static int check_event(struct parser *p, struct ev *e)
{
	struct prec_event *pe = &e->pub;
	bool counter = pe->kind == PREC_EV_HW || pe->kind == PREC_EV_SW ||
		       pe->kind == PREC_EV_RAW || pe->kind == PREC_EV_PMU;

	if (p->el->opts.emulate) {
		bool ok = pe->kind == PREC_EV_AUX || pe->kind == PREC_EV_UPROBE ||
			  pe->kind == PREC_EV_URETPROBE || pe->kind == PREC_EV_TRACEPOINT ||
			  (pe->kind == PREC_EV_HW &&
			   pe->attr.config == PERF_COUNT_HW_INSTRUCTIONS);

		pe->emulated = true;
		if (!ok) {
			perr(p, -EINVAL, pe->pos, "'%.*s' is not available under --emulate",
			     (int)(p->i - (size_t)pe->pos), p->s + pe->pos);
			prec_diag_hint(p->d, "the software tracer takes intel_pt (or pt), uprobe:, "
					     "uretprobe:, syscalls:sys_enter_*/sys_exit_* and "
					     "instructions/period=N/ events");
			return -EINVAL;
		}
		if (pe->kind == PREC_EV_HW && !pe->period) {
			perr(p, -EINVAL, pe->pos, "instructions needs period=N under --emulate");
			prec_diag_hint(p->d, "the software tracer counts instructions exactly; e.g. "
					     "instructions/period=100000,aux-action=pause/u");
			return -EINVAL;
		}
	}
	if (counter && (pe->aux_action & (PREC_AUX_PAUSE | PREC_AUX_RESUME)) && !pe->period &&
	    !pe->freq) {
		perr(p, -EINVAL, e->action_pos, "a counter that pauses or resumes tracing needs "
		     "period=N or freq=N");
		prec_diag_hint(p->d, "the action runs when the counter overflows, e.g. "
				     "instructions/period=100000,aux-action=pause/");
		return -EINVAL;
	}
	if (!pe->period && !pe->freq &&
	    (pe->kind == PREC_EV_AUX || pe->kind == PREC_EV_TRACEPOINT ||
	     pe->kind == PREC_EV_UPROBE || pe->kind == PREC_EV_URETPROBE ||
	     pe->kind == PREC_EV_BREAKPOINT))
		pe->attr.sample_period = 1;
	pe->attr.aux_action = pe->aux_action;
	return 0;
}

/* Modifiers are applied last: group modifiers arrive after the members. */
static int finalize_mods(struct parser *p, struct ev *e)
{
	struct prec_event *pe = &e->pub;

	if (pe->emulated && (pe->kind == PREC_EV_AUX || pe->kind == PREC_EV_HW) &&
	    (e->mods.kernel || e->mods.hv)) {
		perr(p, -EINVAL, e->mods_pos >= 0 ? e->mods_pos : pe->pos,
		     "emulation traces user space only; use u");
		prec_diag_hint(p->d, "the software tracer runs the program in user mode; "
				     "drop the k (and h) modifier");
		return -EINVAL;
	}
	prec_mods_apply(&e->mods, &pe->attr);
	if (pe->emulated && (pe->kind == PREC_EV_AUX || pe->kind == PREC_EV_HW)) {
		pe->attr.exclude_kernel = 1;
		pe->attr.exclude_hv = 1;
	}
	pe->sample_read = e->mods.sample_read;
	pe->weak_group = e->mods.weak_group;
	return 0;
}

static int parse_event(struct parser *p, int ugroup, bool in_braces)
{
	struct ev *e;
	struct ev **nv;
	char *name = NULL;
	long npos;
	int err;
	char c = peek(p);

	if (!c || c == ',' || c == '}') {
		if (!c && p->i > 0 && p->s[p->i - 1] == ',')
			return perr(p, -PREC_E_SYNTAX, (long)p->i,
				    "expected an event after the trailing ','");
		return perr(p, -PREC_E_SYNTAX, (long)p->i, "empty event%s",
			    c == ',' ? " before ','" : c == '}' ? " before '}'" : "");
	}
	if (p->nev + p->el->nev >= MAX_EVENTS)
		return perr(p, -E2BIG, (long)p->i, "too many events (the limit is %d)", MAX_EVENTS);
	e = calloc(1, sizeof(*e));
	if (!e)
		return nomem(p);
	e->pub.pos = (long)p->i;
	e->pub.arg = p->arg;
	e->pub.leader = -1;
	e->pub.tp.syscall_nr = -1;
	e->pub.in_braces = in_braces;
	e->mods_pos = e->action_pos = e->output_pos = e->ssize_pos = -1;
	e->ugroup = ugroup;
	if (p->nev == p->cap) {
		size_t nc = p->cap ? p->cap * 2 : 8;

		nv = realloc(p->ev, nc * sizeof(*nv));
		if (!nv) {
			ev_free(e);
			return nomem(p);
		}
		p->ev = nv;
		p->cap = nc;
	}
	p->ev[p->nev++] = e;

	err = read_name(p, &name, &npos);
	if (err)
		return err;
	if (is_glob(peek(p))) {
		err = unexpected(p, NULL);
	} else if (!*name) {
		err = peek(p) == '/' ? perr(p, -PREC_E_SYNTAX, npos,
					    "expected a PMU or event name before '/'")
				     : unexpected(p, "an event");
	} else if ((!strcmp(name, "uprobe") || !strcmp(name, "uretprobe")) && peek(p) == ':') {
		err = parse_uprobe(p, e, name[1] == 'r');
	} else if (!strcmp(name, "mem") && peek(p) == ':') {
		err = parse_breakpoint(p, e);
	} else if (peek(p) == ':' && !prec_generic_event_find(name) && !is_raw_name(name)) {
		err = parse_tracepoint(p, e, name, npos);
		name = NULL; /* owned by the event now */
	} else {
		err = parse_named(p, e, name, npos);
	}
	free(name);
	if (err)
		return err;
	c = peek(p);
	if (c && c != ',' && c != '}')
		return unexpected(p, "',' or the end of the event");
	e->pub.text = xstrndup(p->s + e->pub.pos, p->i - (size_t)e->pub.pos);
	if (!e->pub.text)
		return nomem(p);
	if (!e->pub.name) {
		e->pub.name = strdup(e->pub.text);
		if (!e->pub.name)
			return nomem(p);
	}
	e->pub.pmu_type = e->pub.attr.type;
	return check_event(p, e);
}

static int parse_group(struct parser *p)
{
	long open = (long)p->i;
	int gid = p->el->next_group++;
	size_t first = p->nev, k;
	struct prec_mods gm = { 0 };
	long gm_pos = -1;
	int err;

	p->i++; /* '{' */
	for (;;) {
		char c = peek(p);

		if (c == '{')
			return perr(p, -PREC_E_SYNTAX, (long)p->i, "groups cannot be nested");
		if (c == '}') {
			if (p->nev == first)
				return perr(p, -PREC_E_SYNTAX, (long)p->i, "empty group");
			return perr(p, -PREC_E_SYNTAX, (long)p->i, "expected an event before '}'");
		}
		if (!c)
			goto unclosed;
		err = parse_event(p, gid, true);
		if (err)
			return err;
		c = peek(p);
		if (c == '}')
			break;
		if (c == ',') {
			p->i++;
			continue;
		}
		goto unclosed;
	}
	p->i++; /* '}' */
	if (peek(p) == ':') {
		size_t st;

		p->i++;
		st = p->i;
		while (p->i < p->n && ((p->s[p->i] >= 'a' && p->s[p->i] <= 'z') ||
				       (p->s[p->i] >= 'A' && p->s[p->i] <= 'Z')))
			p->i++;
		if (p->i == st)
			return unexpected(p, "modifiers after '}:'");
		gm_pos = (long)st;
		err = prec_mods_parse(p->s + st, p->i - st, (long)st, &gm, p->d);
		if (err)
			return err;
	}
	if (peek(p) && peek(p) != ',')
		return unexpected(p, "',' after the group");
	for (k = first; k < p->nev; k++) {
		struct ev *e = p->ev[k];

		prec_mods_merge(&e->mods, &gm);
		if (e->mods_pos < 0 && gm_pos >= 0)
			e->mods_pos = gm_pos;
		err = finalize_mods(p, e);
		if (err)
			return err;
	}
	return 0;
unclosed:
	perr(p, -PREC_E_SYNTAX, (long)p->i, "missing '}' to close the group");
	prec_diag_hint(p->d, "the group opens at column %ld", open);
	return -PREC_E_SYNTAX;
}

static int parse_spec(struct parser *p)
{
	int err;

	if (!p->n)
		return perr(p, -PREC_E_SYNTAX, 0, "empty event specification");
	for (;;) {
		if (peek(p) == '{') {
			err = parse_group(p);
		} else if (peek(p) == '}') {
			return perr(p, -PREC_E_SYNTAX, (long)p->i, "unbalanced '}'");
		} else {
			err = parse_event(p, p->el->next_group++, false);
			if (!err)
				err = finalize_mods(p, p->ev[p->nev - 1]);
		}
		if (err)
			return err;
		if (p->i == p->n)
			return 0;
		if (peek(p) == '}')
			return perr(p, -PREC_E_SYNTAX, (long)p->i, "unbalanced '}'");
		if (peek(p) != ',')
			return unexpected(p, "','");
		p->i++;
		if (p->i == p->n)
			return perr(p, -PREC_E_SYNTAX, (long)p->i,
				    "expected an event after the trailing ','");
	}
}

struct prec_evlist *prec_evlist_new(const struct prec_evspec_opts *opts)
{
	struct prec_evlist *el = calloc(1, sizeof(*el));

	if (el && opts)
		el->opts = *opts;
	return el;
}

void prec_evlist_free(struct prec_evlist *el)
{
	size_t i;

	if (!el)
		return;
	for (i = 0; i < el->nev; i++)
		ev_free(el->ev[i]);
	free(el->ev);
	for (i = 0; i < el->nspecs; i++)
		free(el->specs[i]);
	free(el->specs);
	for (i = 0; i < el->npmus; i++) {
		free(el->pmus[i].key);
		prec_pmu_free(el->pmus[i].pmu);
	}
	free(el->pmus);
	free(el->grp_first);
	free(el->grp_n);
	free(el);
}

int prec_evlist_add(struct prec_evlist *el, const char *spec, struct prec_diag *d)
{
	struct prec_diag dummy;
	struct parser p = { 0 };
	struct ev **nv;
	char **ns, *copy;
	size_t i;
	int err;

	if (!d)
		d = &dummy;
	memset(d, 0, sizeof(*d));
	d->pos = -1;
	if (!el || !spec)
		return prec_diag_set(d, -EINVAL, -1, "no event list or specification");
	if (el->finished)
		return prec_diag_set(d, -EINVAL, -1, "the event list is already finished");
	if (strlen(spec) > MAX_SPEC_LEN)
		return prec_diag_set(d, -E2BIG, MAX_SPEC_LEN,
				     "event specification longer than %d bytes", MAX_SPEC_LEN);
	copy = strdup(spec);
	if (!copy)
		return prec_diag_set(d, -ENOMEM, -1, "out of memory");
	el->diag_text = NULL;
	p.el = el;
	p.s = copy;
	p.n = strlen(copy);
	p.arg = (int)el->nspecs;
	p.d = d;
	err = parse_spec(&p);
	if (!err) {
		ns = realloc(el->specs, (el->nspecs + 1) * sizeof(*ns));
		nv = ns ? realloc(el->ev, (el->nev + p.nev) * sizeof(*nv)) : NULL;
		if (ns)
			el->specs = ns;
		if (nv)
			el->ev = nv;
		if (!ns || !nv)
			err = prec_diag_set(d, -ENOMEM, -1, "out of memory");
	}
	if (err) {
		for (i = 0; i < p.nev; i++)
			ev_free(p.ev[i]);
		free(p.ev);
		free(copy);
		return err;
	}
	el->specs[el->nspecs++] = copy;
	for (i = 0; i < p.nev; i++) {
		p.ev[i]->pub.spec = copy;
		p.ev[i]->orig = (int)el->nev;
		p.ev[i]->pub.idx = (int)el->nev;
		el->ev[el->nev++] = p.ev[i];
	}
	free(p.ev);
	return 0;
}

static int ferr(struct prec_evlist *el, struct prec_diag *d, const struct ev *e, int code,
		long pos, const char *fmt, ...) prec_printf(6, 7);

static int ferr(struct prec_evlist *el, struct prec_diag *d, const struct ev *e, int code,
		long pos, const char *fmt, ...)
{
	va_list ap;

	el->diag_text = e->pub.spec;
	d->code = code;
	d->pos = pos >= 0 ? pos : e->pub.pos;
	d->hint[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	return code;
}

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = *(struct ev *const *)a, *y = *(struct ev *const *)b;

	/* ugroup was renumbered to the leader's parse index before sorting. */
	if (x->ugroup != y->ugroup)
		return x->ugroup < y->ugroup ? -1 : 1;
	return x->orig < y->orig ? -1 : x->orig > y->orig;
}

int prec_evlist_finish(struct prec_evlist *el, struct prec_diag *d)
{
	struct prec_diag dummy;
	int last_aux = -1, naux = 0, err = 0;
	size_t i, g;
	int *lead = NULL;

	if (!d)
		d = &dummy;
	memset(d, 0, sizeof(*d));
	d->pos = -1;
	if (!el)
		return prec_diag_set(d, -EINVAL, -1, "no event list");
	if (el->finished)
		return 0;
	el->diag_text = NULL;
	if (!el->nev)
		return prec_diag_set(d, -EINVAL, -1, "no events given");

	for (i = 0; i < el->nev; i++) {
		struct ev *e = el->ev[i];
		uint32_t a = e->pub.aux_action;
		bool needs;

		if (e->pub.aux && ++naux > 1) {
			err = ferr(el, d, e, -EINVAL, e->pub.pos,
				   "only one AUX tracer event is allowed");
			prec_diag_hint(d, "put all its terms into one %s/.../ event", e->pub.pmu);
			goto out;
		}
		if ((a & PREC_AUX_START_PAUSED) && !e->pub.aux) {
			err = ferr(el, d, e, -EINVAL, e->action_pos,
				   "aux-action 'start-paused' can only be used with an AUX area "
				   "event");
			prec_diag_hint(d, "start-paused goes on the tracer (intel_pt/aux-start-paused/); "
					  "triggers take pause or resume");
			goto out;
		}
		if ((a & (PREC_AUX_PAUSE | PREC_AUX_RESUME)) && e->pub.aux) {
			err = ferr(el, d, e, -EINVAL, e->action_pos,
				   "aux-action '%s' cannot be used for the AUX area event itself",
				   a & PREC_AUX_PAUSE ? "pause" : "resume");
			prec_diag_hint(d, "put pause/resume on the trigger events; the tracer takes "
					  "start-paused");
			goto out;
		}
		if ((a & PREC_AUX_PAUSE) && (a & PREC_AUX_RESUME)) {
			err = ferr(el, d, e, -EINVAL, e->action_pos,
				   "one event cannot both pause and resume tracing");
			prec_diag_hint(d, "use two events, one with aux-pause and one with aux-resume");
			goto out;
		}
		if (e->pub.attr.aux_output && (a & (PREC_AUX_PAUSE | PREC_AUX_RESUME))) {
			err = ferr(el, d, e, -EOPNOTSUPP, e->output_pos,
				   "aux-output cannot be combined with aux pause/resume");
			goto out;
		}
		if (e->pub.attr.aux_output && e->pub.attr.aux_sample_size) {
			err = ferr(el, d, e, -EINVAL, e->ssize_pos,
				   "aux-output cannot be combined with aux-sample-size");
			goto out;
		}
		needs = (a & (PREC_AUX_PAUSE | PREC_AUX_RESUME)) || e->pub.attr.aux_output ||
			e->pub.attr.aux_sample_size;
		if (needs && !e->pub.aux && !e->pub.in_braces) {
			if (last_aux < 0) {
				long pos = e->action_pos >= 0 ? e->action_pos :
					   e->output_pos >= 0 ? e->output_pos : e->ssize_pos;

				err = ferr(el, d, e, -EINVAL, pos,
					   "events with aux-action must have an AUX area event as "
					   "group leader, and there is none before this one");
				prec_diag_hint(d, "name the tracer first, e.g. "
						  "-e intel_pt/aux-start-paused/u -e %s", e->pub.text);
				goto out;
			}
			e->ugroup = el->ev[last_aux]->ugroup;
		}
		if (e->pub.aux)
			last_aux = (int)i;
	}

	/* Lay groups out contiguously, ordered by their leader's position. */
	lead = malloc(sizeof(*lead) * (size_t)(el->next_group ? el->next_group : 1));
	if (!lead) {
		err = prec_diag_set(d, -ENOMEM, -1, "out of memory");
		goto out;
	}
	for (i = 0; i < (size_t)el->next_group; i++)
		lead[i] = -1;
	for (i = 0; i < el->nev; i++)
		if (lead[el->ev[i]->ugroup] < 0)
			lead[el->ev[i]->ugroup] = (int)i;
	for (i = 0; i < el->nev; i++)
		el->ev[i]->ugroup = lead[el->ev[i]->ugroup];
	qsort(el->ev, el->nev, sizeof(*el->ev), cmp_ev);
	free(el->grp_first);
	free(el->grp_n);
	el->grp_first = calloc(el->nev, sizeof(size_t));
	el->grp_n = calloc(el->nev, sizeof(size_t));
	if (!el->grp_first || !el->grp_n) {
		err = prec_diag_set(d, -ENOMEM, -1, "out of memory");
		goto out;
	}
	g = 0;
	for (i = 0; i < el->nev; i++) {
		struct ev *e = el->ev[i];

		if (i == 0 || e->ugroup != el->ev[i - 1]->ugroup) {
			el->grp_first[g] = i;
			el->grp_n[g] = 0;
			g++;
		}
		el->grp_n[g - 1]++;
		e->pub.idx = (int)i;
		e->pub.group = (int)(g - 1);
		e->pub.leader = (int)el->grp_first[g - 1];
	}
	el->ngroups = g;

	for (i = 0; i < el->nev; i++) {
		struct ev *e = el->ev[i];
		const struct ev *l = el->ev[e->pub.leader];
		bool needs = (e->pub.aux_action & (PREC_AUX_PAUSE | PREC_AUX_RESUME)) ||
			     e->pub.attr.aux_output || e->pub.attr.aux_sample_size;

		if (needs && !l->pub.aux) {
			long pos = e->action_pos >= 0 ? e->action_pos :
				   e->output_pos >= 0 ? e->output_pos : e->ssize_pos;

			err = ferr(el, d, e, -EINVAL, pos,
				   "events with aux-action must have an AUX area event as group "
				   "leader");
			prec_diag_hint(d, "the leader of this group is '%s'; put the tracer first: "
					  "{intel_pt/aux-start-paused/,...}", l->pub.text);
			goto out;
		}
	}
	el->finished = true;
out:
	free(lead);
	return err;
}

const char *prec_evlist_diag_text(const struct prec_evlist *el)
{
	return el ? el->diag_text : NULL;
}

size_t prec_evlist_nr_events(const struct prec_evlist *el)
{
	return el ? el->nev : 0;
}

const struct prec_event *prec_evlist_event(const struct prec_evlist *el, size_t i)
{
	return el && i < el->nev ? &el->ev[i]->pub : NULL;
}

size_t prec_evlist_nr_groups(const struct prec_evlist *el)
{
	return el && el->finished ? el->ngroups : 0;
}

int prec_evlist_group(const struct prec_evlist *el, size_t g, size_t *first, size_t *n)
{
	if (!el || !el->finished || g >= el->ngroups)
		return -EINVAL;
	*first = el->grp_first[g];
	*n = el->grp_n[g];
	return 0;
}

int prec_evlist_aux_index(const struct prec_evlist *el)
{
	size_t i;

	for (i = 0; el && i < el->nev; i++)
		if (el->ev[i]->pub.aux)
			return (int)i;
	return -1;
}

bool prec_evlist_emulated(const struct prec_evlist *el)
{
	return el && el->opts.emulate;
}

static int dump_event(const struct prec_evlist *el, const struct ev *e, struct prec_buf *b)
{
	const struct prec_event *pe = &e->pub;
	int err;

	err = prec_buf_printf(b, "  #%d %s\n", pe->idx, pe->text);
	if (!err)
		err = prec_buf_printf(b, "     kind %s, pmu %s (type %u)%s%s, from -e #%d at "
				      "offset %ld\n", prec_ev_kind_name(pe->kind), pe->pmu,
				      pe->pmu_type, pe->aux ? ", AUX tracer" : "",
				      pe->emulated ? ", emulated" : "", pe->arg + 1, pe->pos);
	if (!err && strcmp(pe->name, pe->text))
		err = prec_buf_printf(b, "     name %s\n", pe->name);
	if (!err && pe->aux_action)
		err = prec_buf_printf(b, "     aux-action %s\n", prec_aux_action_str(pe->aux_action));
	if (!err && e->pmu && (pe->kind == PREC_EV_AUX || pe->kind == PREC_EV_PMU)) {
		char cfg[512];

		if (!prec_pmu_config_str(e->pmu, &pe->attr, cfg, sizeof(cfg)))
			err = prec_buf_printf(b, "     terms %s\n", cfg[0] ? cfg : "(none)");
	}
	if (!err && (pe->kind == PREC_EV_UPROBE || pe->kind == PREC_EV_URETPROBE))
		err = prec_buf_printf(b, "     %s %s:%s+%llu vaddr %#llx file offset %#llx\n",
				      pe->kind == PREC_EV_UPROBE ? "uprobe" : "uretprobe",
				      pe->uprobe.path, pe->uprobe.symbol,
				      (unsigned long long)pe->uprobe.sym_offset,
				      (unsigned long long)pe->uprobe.vaddr,
				      (unsigned long long)pe->uprobe.file_offset);
	if (!err && pe->kind == PREC_EV_TRACEPOINT) {
		err = prec_buf_printf(b, "     tracepoint %s:%s id %llu", pe->tp.sys, pe->tp.name,
				      (unsigned long long)pe->tp.id);
		if (!err && pe->tp.syscall_nr >= 0)
			err = prec_buf_printf(b, ", syscall %d %s", pe->tp.syscall_nr,
					      pe->tp.syscall_dir == PREC_SYSCALL_ENTER ? "enter" :
					      "exit");
		if (!err)
			err = prec_buf_printf(b, "\n");
	}
	if (!err && pe->kind == PREC_EV_BREAKPOINT)
		err = prec_buf_printf(b, "     breakpoint %#llx len %u %s%s%s\n",
				      (unsigned long long)pe->bp.addr, pe->bp.len,
				      pe->bp.type & HW_BREAKPOINT_R ? "r" : "",
				      pe->bp.type & HW_BREAKPOINT_W ? "w" : "",
				      pe->bp.type & HW_BREAKPOINT_X ? "x" : "");
	if (!err && (pe->sample_read || pe->weak_group))
		err = prec_buf_printf(b, "     %s%s\n", pe->sample_read ? "sample-read " : "",
				      pe->weak_group ? "weak-group" : "");
	if (!err)
		err = prec_buf_printf(b, "     perf_event_attr:\n");
	if (!err)
		err = prec_attr_dump(b, &pe->attr, "       ");
	return err;
}

int prec_evlist_dump(const struct prec_evlist *el, struct prec_buf *b)
{
	size_t g, i;
	int err;

	if (!el)
		return -EINVAL;
	err = prec_buf_printf(b, "%zu event%s in %zu group%s%s\n", el->nev,
			      el->nev == 1 ? "" : "s", el->ngroups, el->ngroups == 1 ? "" : "s",
			      el->opts.emulate ? " (emulated: software tracer)" : "");
	for (g = 0; g < el->ngroups && !err; g++) {
		err = prec_buf_printf(b, "group %zu: leader #%zu, %zu member%s\n", g,
				      el->grp_first[g], el->grp_n[g], el->grp_n[g] == 1 ? "" : "s");
		for (i = el->grp_first[g]; i < el->grp_first[g] + el->grp_n[g] && !err; i++)
			err = dump_event(el, el->ev[i], b);
	}
	if (!el->finished)
		for (i = 0; i < el->nev && !err; i++)
			err = dump_event(el, el->ev[i], b);
	return err;
}

int prec_evspec_parse(const char *spec, const struct prec_evspec_opts *opts,
		      struct prec_evlist **out, struct prec_diag *d)
{
	struct prec_evlist *el = prec_evlist_new(opts);
	int err;

	*out = NULL;
	if (!el)
		return prec_diag_set(d, -ENOMEM, -1, "out of memory");
	err = prec_evlist_add(el, spec, d);
	if (!err)
		err = prec_evlist_finish(el, d);
	if (err) {
		prec_evlist_free(el);
		return err;
	}
	*out = el;
	return 0;
}
