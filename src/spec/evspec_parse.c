// SPDX-License-Identifier: MIT
/*
 * The -e parser: recursive descent over the text, one event at a time,
 * resolving each against sysfs, tracefs or an ELF file as soon as it is read
 * so that every error can point at the character that caused it. This file is
 * the grammar's top (events, groups, specs) and the list's life cycle; the
 * rest is in evspec_{lex,terms,kinds,list}.c (spec/evspec_parse.h).
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
#define MAX_SPEC_LEN 65536
#define MAX_EVENTS 4096

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
	case PREC_EV_KPROBE: return "kprobe";
	case PREC_EV_KRETPROBE: return "kretprobe";
	}
	return "?";
}


static int finalize_mods(struct parser *p, struct ev *e)
{
	struct prec_event *pe = &e->pub;
	bool user_only = pe->emulated && !(pe->kind == PREC_EV_AUX && p->el->opts.emulate_kernel);

	if (user_only && (pe->kind == PREC_EV_AUX || pe->kind == PREC_EV_HW) &&
	    (e->mods.kernel || e->mods.hv)) {
		prec_evp_perr(p, -EINVAL, e->mods_pos >= 0 ? e->mods_pos : pe->pos,
			      "emulation traces user space only; use u");
		prec_diag_hint(p->d, "the software tracer runs the program in user mode; "
				     "drop the k (and h) modifier");
		return -EINVAL;
	}
	prec_mods_apply(&e->mods, &pe->attr);
	if (user_only && (pe->kind == PREC_EV_AUX || pe->kind == PREC_EV_HW)) {
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
	char *name = NULL;
	long npos;
	int err;
	char c = prec_evp_peek(p);

	if (!c || c == ',' || c == '}') {
		if (!c && p->i > 0 && p->s[p->i - 1] == ',')
			return prec_evp_perr(p, -PREC_E_SYNTAX, (long)p->i,
					     "expected an event after the trailing ','");
		return prec_evp_perr(p, -PREC_E_SYNTAX, (long)p->i, "empty event%s",
			    c == ',' ? " before ','" : c == '}' ? " before '}'" : "");
	}
	if (p->nev + p->el->nev >= MAX_EVENTS)
		return prec_evp_perr(p, -E2BIG, (long)p->i, "too many events (the limit is %d)",
				     MAX_EVENTS);
	e = calloc(1, sizeof(*e));
	if (!e)
		return prec_evp_nomem(p);
	e->pub.pos = (long)p->i;
	e->pub.arg = p->arg;
	e->pub.leader = -1;
	e->pub.tp.syscall_nr = -1;
	e->pub.in_braces = in_braces;
	e->mods_pos = e->action_pos = e->output_pos = e->ssize_pos = -1;
	e->ugroup = ugroup;
	if (PREC_ARRAY_RESERVE(p->ev, p->nev, 1)) {
		prec_evp_ev_free(e);
		return prec_evp_nomem(p);
	}
	p->ev[p->nev++] = e;

	err = prec_evp_read_name(p, &name, &npos);
	if (err)
		return err;
	if (prec_evp_is_glob(prec_evp_peek(p))) {
		err = prec_evp_unexpected(p, NULL);
	} else if (!*name) {
		err = prec_evp_peek(p) == '/'
			  ? prec_evp_perr(p, -PREC_E_SYNTAX, npos,
					  "expected a PMU or event name before '/'")
			  : prec_evp_unexpected(p, "an event");
	} else if ((!strcmp(name, "uprobe") || !strcmp(name, "uretprobe")) &&
		   prec_evp_peek(p) == ':') {
		err = prec_evp_parse_uprobe(p, e, name[1] == 'r');
	} else if ((!strcmp(name, "kprobe") || !strcmp(name, "kretprobe")) &&
		   prec_evp_peek(p) == ':') {
		err = prec_evp_parse_kprobe(p, e, name[1] == 'r');
	} else if (!strcmp(name, "mem") && prec_evp_peek(p) == ':') {
		err = prec_evp_parse_breakpoint(p, e);
	} else if (prec_evp_peek(p) == ':' && !prec_generic_event_find(name) &&
		   !prec_evp_is_raw_name(name)) {
		err = prec_evp_parse_tracepoint(p, e, name, npos);
		name = NULL; /* owned by the event now */
	} else {
		err = prec_evp_parse_named(p, e, name, npos);
	}
	free(name);
	if (err)
		return err;
	c = prec_evp_peek(p);
	if (c && c != ',' && c != '}')
		return prec_evp_unexpected(p, "',' or the end of the event");
	e->pub.text = prec_evp_xstrndup(p->s + e->pub.pos, p->i - (size_t)e->pub.pos);
	if (!e->pub.text)
		return prec_evp_nomem(p);
	if (!e->pub.name) {
		e->pub.name = strdup(e->pub.text);
		if (!e->pub.name)
			return prec_evp_nomem(p);
	}
	e->pub.pmu_type = e->pub.attr.type;
	return prec_evp_check_event(p, e);
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
		char c = prec_evp_peek(p);

		if (c == '{')
			return prec_evp_perr(p, -PREC_E_SYNTAX, (long)p->i,
					     "groups cannot be nested");
		if (c == '}') {
			if (p->nev == first)
				return prec_evp_perr(p, -PREC_E_SYNTAX, (long)p->i, "empty group");
			return prec_evp_perr(p, -PREC_E_SYNTAX, (long)p->i, "expected an event before '}'");
		}
		if (!c)
			goto unclosed;
		err = parse_event(p, gid, true);
		if (err)
			return err;
		c = prec_evp_peek(p);
		if (c == '}')
			break;
		if (c == ',') {
			p->i++;
			continue;
		}
		goto unclosed;
	}
	p->i++; /* '}' */
	if (prec_evp_peek(p) == ':') {
		size_t st;

		p->i++;
		st = p->i;
		while (p->i < p->n && ((p->s[p->i] >= 'a' && p->s[p->i] <= 'z') ||
				       (p->s[p->i] >= 'A' && p->s[p->i] <= 'Z')))
			p->i++;
		if (p->i == st)
			return prec_evp_unexpected(p, "modifiers after '}:'");
		gm_pos = (long)st;
		err = prec_mods_parse(p->s + st, p->i - st, (long)st, &gm, p->d);
		if (err)
			return err;
	}
	if (prec_evp_peek(p) && prec_evp_peek(p) != ',')
		return prec_evp_unexpected(p, "',' after the group");
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
	prec_evp_perr(p, -PREC_E_SYNTAX, (long)p->i, "missing '}' to close the group");
	prec_diag_hint(p->d, "the group opens at column %ld", open);
	return -PREC_E_SYNTAX;
}

static int parse_spec(struct parser *p)
{
	int err;

	if (!p->n)
		return prec_evp_perr(p, -PREC_E_SYNTAX, 0, "empty event specification");
	for (;;) {
		if (prec_evp_peek(p) == '{') {
			err = parse_group(p);
		} else if (prec_evp_peek(p) == '}') {
			return prec_evp_perr(p, -PREC_E_SYNTAX, (long)p->i, "unbalanced '}'");
		} else {
			err = parse_event(p, p->el->next_group++, false);
			if (!err)
				err = finalize_mods(p, p->ev[p->nev - 1]);
		}
		if (err)
			return err;
		if (p->i == p->n)
			return 0;
		if (prec_evp_peek(p) == '}')
			return prec_evp_perr(p, -PREC_E_SYNTAX, (long)p->i, "unbalanced '}'");
		if (prec_evp_peek(p) != ',')
			return prec_evp_unexpected(p, "','");
		p->i++;
		if (p->i == p->n)
			return prec_evp_perr(p, -PREC_E_SYNTAX, (long)p->i,
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
		prec_evp_ev_free(el->ev[i]);
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
	char *copy;
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
		if (PREC_ARRAY_RESERVE(el->specs, el->nspecs, 1) ||
		    PREC_ARRAY_RESERVE(el->ev, el->nev, p.nev))
			err = prec_diag_set(d, -ENOMEM, -1, "out of memory");
	}
	if (err) {
		for (i = 0; i < p.nev; i++)
			prec_evp_ev_free(p.ev[i]);
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

