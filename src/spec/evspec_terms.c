// SPDX-License-Identifier: MIT
/*
 * Terms applied to an event: PMU formats and aliases, the common terms
 * (period, freq, aux-*), and the intel_pt capability checks.
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

/* ---- terms ---- */

static const char *const common_terms[] = {
	"config", "config1", "config2", "config3", "period", "freq", "name",
	"aux-output", "aux-sample-size", "aux-action", "aux-start-paused", "aux-pause",
	"aux-resume", "snapshot",
};

static const char *const aux_action_values[] = { "start-paused", "pause", "resume" };

static int set_format(struct parser *p, struct ev *e, const struct prec_pmu_format *f,
		      const struct term *t, uint64_t v)
{
	uint64_t bits;
	__u64 *w;

	if (prec_pmu_format_encode(f, v, &bits)) {
		prec_evp_perr(
		    p, -ERANGE, t->vpos >= 0 ? t->vpos : t->pos,
		    "value %llu is out of range for %s (%u bit%s: 0..%llu)", (unsigned long long)v,
		    f->name, f->width, f->width == 1 ? "" : "s",
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
		return prec_evp_nomem(p);
	if (t->value) {
		free(copy);
		return prec_evp_perr(p, -PREC_E_SYNTAX, t->pos, "event '%s' takes no value",
				     t->name);
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
		if (eq && prec_evp_parse_num(eq + 1, &v)) {
			err = prec_evp_perr(p, -PREC_E_FORMAT, t->pos, "sysfs event '%s' of %s has a bad value "
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
			err = prec_evp_perr(p, -PREC_E_FORMAT, t->pos,
					    "sysfs event '%s' of %s uses '%s', "
					    "which the PMU's format does not define",
					    t->name, e->pmu->name, tok);
			break;
		}
		err = set_format(p, e, f, t, v);
	}
	free(copy);
	return err;
}

static int unknown_term(struct parser *p, struct ev *e, const struct term *t)
{
	struct prec_near s;
	size_t i;

	if (e->pmu)
		prec_evp_perr(p, -PREC_E_SYNTAX, t->pos, "unknown term '%s' for %s", t->name,
			      e->pmu->name);
	else
		prec_evp_perr(p, -PREC_E_SYNTAX, t->pos, "unknown term '%s'", t->name);
	prec_evp_sugg_init(&s, t->name);
	for (i = 0; i < PREC_ARRAY_SIZE(common_terms); i++)
		prec_near_add(&s, common_terms[i]);
	for (i = 0; e->pmu && i < e->pmu->nr_formats; i++)
		prec_near_add(&s, e->pmu->formats[i].name);
	for (i = 0; e->pmu && i < e->pmu->nr_events; i++)
		prec_near_add(&s, e->pmu->events[i].name);
	if (!prec_evp_sugg_hint(&s, p->d, NULL)) {
		if (e->pmu && e->pmu->nr_formats)
			prec_diag_hint(p->d, "'ptrec list %s' shows its terms", e->pmu->name);
		else
			prec_diag_hint(p->d, "terms here: config, config1, config2, config3, period, "
					     "freq, name, aux-output, aux-sample-size, aux-action, "
					     "snapshot");
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
		return prec_evp_perr(p, -PREC_E_SYNTAX, t->pos, "'%s' needs a value (%s=N)",
				     t->name, t->name);
	err = prec_evp_parse_num(t->value, v);
	if (err == -ERANGE)
		return prec_evp_perr(p, -ERANGE, t->vpos, "value '%s' of %s is too large", t->value,
				     t->name);
	if (err)
		return prec_evp_perr(p, -PREC_E_SYNTAX, t->vpos, "bad number '%s' for %s", t->value,
				     t->name);
	if (positive && !*v)
		return prec_evp_perr(p, -ERANGE, t->vpos, "%s must be greater than 0", t->name);
	return 0;
}

static int set_action(struct parser *p, struct ev *e, const struct term *t, uint32_t bit)
{
	if (e->action_pos < 0)
		e->action_pos = t->pos;
	e->pub.aux_action |= bit;
	return 0;
}

static int need_value(struct parser *p, const struct term *t)
{
	return prec_evp_perr(p, -PREC_E_SYNTAX, t->pos, "'%s' needs a value (%s=...)", t->name,
			     t->name);
}

/* aux-action=VALUE */
static int term_aux_action(struct parser *p, struct ev *e, const struct term *t)
{
	struct prec_near s;
	size_t i;

	if (!t->value)
		return need_value(p, t);
	for (i = 0; i < PREC_ARRAY_SIZE(aux_action_values); i++)
		if (!strcmp(t->value, aux_action_values[i]))
			return set_action(p, e, t, 1u << i);
	prec_evp_perr(p, -PREC_E_SYNTAX, t->vpos, "bad aux-action '%s'", t->value);
	prec_evp_sugg_init(&s, t->value);
	for (i = 0; i < PREC_ARRAY_SIZE(aux_action_values); i++)
		prec_near_add(&s, aux_action_values[i]);
	if (prec_near_get(&s, 0))
		prec_diag_hint(p->d, "did you mean '%s'? valid values: start-paused, pause, resume",
			       prec_near_get(&s, 0));
	else
		prec_diag_hint(p->d, "valid values: start-paused, pause, resume");
	return -PREC_E_SYNTAX;
}

/* config, config1, config2, config3 */
static int term_config(struct parser *p, struct ev *e, const struct term *t)
{
	const char *n = t->name;
	int word = n[6] ? n[6] - '0' : 0, err;
	uint64_t v = 0;

	if (!has_config_words(e)) {
		prec_evp_perr(p, -PREC_E_SYNTAX, t->pos, "'%s' applies to PMU and raw events only",
			      n);
		prec_diag_hint(p->d, "a %s event has its config set by its name",
			       prec_ev_kind_name(e->pub.kind));
		return -PREC_E_SYNTAX;
	}
	if (e->pub.kind == PREC_EV_RAW && word == 0) {
		prec_evp_perr(p, -PREC_E_SYNTAX, t->pos, "a raw event's config is its rNNNN");
		return -PREC_E_SYNTAX;
	}
	err = term_u64(p, t, &v, false);
	if (err)
		return err;
	*prec_attr_word(&e->pub.attr, word) = v;
	return 0;
}

/* period=N or freq=N */
static int term_period(struct parser *p, struct ev *e, const struct term *t)
{
	struct prec_attr *a = &e->pub.attr;
	uint64_t v = 0;
	int err = term_u64(p, t, &v, true);

	if (err)
		return err;
	if (t->name[0] == 'p') {
		e->pub.period = v;
		a->sample_period = v;
	} else {
		e->pub.freq = v;
		a->sample_freq = v;
		a->freq = 1;
	}
	if (e->pub.period && e->pub.freq) {
		prec_evp_perr(p, -PREC_E_SYNTAX, t->pos, "both period and freq given");
		prec_diag_hint(p->d, "sample every N events (period=N) or N times a second "
				     "(freq=N), not both");
		return -PREC_E_SYNTAX;
	}
	return 0;
}

/* aux-output[=0|1] and aux-sample-size=N */
static int term_aux_sample(struct parser *p, struct ev *e, const struct term *t)
{
	struct prec_attr *a = &e->pub.attr;
	uint64_t v = 0;
	int err;

	if (!strcmp(t->name, "aux-output")) {
		if (t->value && (prec_evp_parse_num(t->value, &v) || v > 1))
			return prec_evp_perr(p, -PREC_E_SYNTAX, t->vpos,
					     "aux-output is 0 or 1, not '%s'", t->value);
		a->aux_output = t->value ? (v != 0) : 1;
		e->output_pos = a->aux_output ? t->pos : -1;
		return 0;
	}
	err = term_u64(p, t, &v, true);
	if (err)
		return err;
	if (v > UINT32_MAX)
		return prec_evp_perr(p, -ERANGE, t->vpos, "aux-sample-size %llu is above %u",
				     (unsigned long long)v, UINT32_MAX);
	a->aux_sample_size = (uint32_t)v;
	e->ssize_pos = t->pos;
	return 0;
}

/* @sink: a CoreSight sink by name, through the sinkid format field. */
static int term_sink(struct parser *p, struct ev *e, const struct term *t)
{
	const char *sink = prec_pmu_sink(e->pmu, t->name + 1);
	const struct prec_pmu_format *f = prec_pmu_format(e->pmu, "sinkid");
	uint64_t v = 0;

	if (!sink || !f) {
		prec_evp_perr(p, -PREC_E_NOPMU, t->pos, "no sink '%s' for %s", t->name + 1,
			      e->pmu->name);
		prec_diag_hint(p->d, "'ptrec list %s' shows its sinks", e->pmu->name);
		return -PREC_E_NOPMU;
	}
	if (prec_evp_parse_num(sink, &v) && prec_parse_u64(sink, 16, &v))
		return prec_evp_perr(p, -PREC_E_FORMAT, t->pos, "sysfs sink '%s' has a bad id '%s'",
				     t->name + 1, sink);
	return set_format(p, e, f, t, v);
}

/* A term of the PMU's own: a sink, a format field, or an event alias. */
static int term_pmu(struct parser *p, struct ev *e, const struct term *t)
{
	const struct prec_pmu_format *f;
	const char *n = t->name, *alias;
	uint64_t v = 0;
	int err;

	if (n[0] == '@')
		return term_sink(p, e, t);
	f = prec_pmu_format(e->pmu, n);
	if (f) {
		if (!t->value) {
			if (f->width != 1)
				return prec_evp_perr(
				    p, -PREC_E_SYNTAX, t->pos,
				    "'%s' needs a value (%u bits: 0..%llu)", n, f->width,
				    (unsigned long long)(f->width >= 64 ? UINT64_MAX
									: (1ull << f->width) - 1));
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
	return unknown_term(p, e, t);
}

static int apply_term(struct parser *p, struct ev *e, const struct term *t)
{
	const char *n = t->name;

	if (n[0] == '-') {
		prec_evp_perr(p, -PREC_E_SYNTAX, t->pos, "term '%s' starts with '-'", n);
		prec_diag_hint(p->d, "terms take no leading '-'; write '%s' (perf's documentation "
				     "has the same typo)", n + 1);
		return -PREC_E_SYNTAX;
	}
	if (!strcmp(n, "aux-action"))
		return term_aux_action(p, e, t);
	if (!strcmp(n, "aux-start-paused") || !strcmp(n, "aux-pause") || !strcmp(n, "aux-resume")) {
		if (t->value) {
			prec_evp_perr(p, -PREC_E_SYNTAX, t->pos, "'%s' takes no value", n);
			prec_diag_hint(p->d, "write '%s' alone, or aux-action=%s", n, n + 4);
			return -PREC_E_SYNTAX;
		}
		return set_action(p, e, t, n[4] == 's' ? PREC_AUX_START_PAUSED :
					   n[5] == 'a' ? PREC_AUX_PAUSE : PREC_AUX_RESUME);
	}
	if (!strcmp(n, "config") || !strcmp(n, "config1") || !strcmp(n, "config2") ||
	    !strcmp(n, "config3"))
		return term_config(p, e, t);
	if (!strcmp(n, "period") || !strcmp(n, "freq"))
		return term_period(p, e, t);
	if (!strcmp(n, "name")) {
		if (!t->value)
			return need_value(p, t);
		free(e->pub.name);
		e->pub.name = strdup(t->value);
		return e->pub.name ? 0 : prec_evp_nomem(p);
	}
	if (!strcmp(n, "aux-output") || !strcmp(n, "aux-sample-size"))
		return term_aux_sample(p, e, t);
	if (!strcmp(n, "snapshot")) {
		/* A pause trigger that also takes a snapshot (ptrec's own term). */
		if (t->value) {
			prec_evp_perr(p, -PREC_E_SYNTAX, t->pos, "'snapshot' takes no value");
			prec_diag_hint(p->d, "write 'snapshot' alone: it pauses the tracer and "
					     "takes a snapshot");
			return -PREC_E_SYNTAX;
		}
		e->pub.snapshot = true;
		return set_action(p, e, t, PREC_AUX_PAUSE);
	}
	if (e->pmu && (e->pub.kind == PREC_EV_PMU || e->pub.kind == PREC_EV_AUX))
		return term_pmu(p, e, t);
	return unknown_term(p, e, t);
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
	prec_evp_perr(p, -ERANGE, term_pos(t, nt, term, e->pub.pos),
		      "%s=%llu is not supported by this %s", term, (unsigned long long)v,
		      e->pmu->name);
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
	prec_evp_perr(p, -EOPNOTSUPP, term_pos(t, nt, term, e->pub.pos),
		      "%s is not supported by this %s", term,
		      e->pmu->emulated ? "emulated intel_pt" : e->pmu->name);
	prec_diag_hint(p->d, "caps/%s is 0; leave out '%s'", cap, term);
	return -EOPNOTSUPP;
}

int prec_evp_check_intel_pt(struct parser *p, struct ev *e, const struct term *t, size_t nt)
{
	bool have_pt, have_branch;
	uint64_t pt = field(e, "pt", &have_pt), branch = field(e, "branch", &have_branch);
	int err;

	if (strcmp(e->pmu->name, "intel_pt"))
		return 0;
	if (have_pt && have_branch && branch && !pt) {
		prec_evp_perr(p, -EINVAL, term_pos(t, nt, "pt", e->pub.pos), "branch needs pt");
		prec_diag_hint(p->d, "the kernel refuses branch=1 with pt=0; drop pt=0");
		return -EINVAL;
	}
	if (field(e, "fup_on_ptw", NULL) && !field(e, "ptw", NULL)) {
		prec_evp_perr(p, -EINVAL, term_pos(t, nt, "fup_on_ptw", e->pub.pos),
			      "fup_on_ptw needs ptw");
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

int prec_evp_apply_terms(struct parser *p, struct ev *e, struct term *t, size_t nt)
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
				return prec_evp_perr(p, -PREC_E_SYNTAX, t[i].pos,
						     "term '%s' given twice", t[i].name);
		err = apply_term(p, e, &t[i]);
		if (err)
			return err;
	}
	if (e->pmu && e->pub.kind == PREC_EV_AUX)
		return prec_evp_check_intel_pt(p, e, t, nt);
	return 0;
}

static bool has_term(const struct term *t, size_t nt, const char *name)
{
	size_t i;

	for (i = 0; i < nt; i++)
		if (!strcmp(t[i].name, name))
			return true;
	return false;
}

/* Sets the 1-bit format term @name to 1 where the PMU has it. */
static void set_flag_term(struct ev *e, const char *name)
{
	const struct prec_pmu_format *f = prec_pmu_format(e->pmu, name);
	uint64_t bits;

	if (f && !prec_pmu_format_encode(f, 1, &bits))
		*prec_attr_word(&e->pub.attr, f->word) |= bits;
}

/*
 * perf's defaults for cs_etm with per-CPU rings (tools/perf/arch/arm/util/
 * cs-etm.c, cs_etm_recording_options(): "timestamp" and "contextid" unless
 * the user configured them): per-CPU trace is matched with the SWITCH and
 * MMAP records by time and PID. The kernel's "contextid" format names
 * contextid1 or, on a VHE kernel, contextid2, so its bit is the right one.
 * A raw config= counts as setting both.
 */
void prec_evp_cs_etm_per_cpu_defaults(struct parser *p, struct ev *e, const struct term *t,
				      size_t nt)
{
	if (!p->el->opts.per_cpu || !e->pmu || strcmp(e->pmu->name, "cs_etm") ||
	    has_term(t, nt, "config"))
		return;
	if (!has_term(t, nt, "timestamp"))
		set_flag_term(e, "timestamp");
	if (!has_term(t, nt, "contextid") && !has_term(t, nt, "contextid1") &&
	    !has_term(t, nt, "contextid2"))
		set_flag_term(e, "contextid");
}

/* What may follow an event's name: "/terms/" with trailing modifiers, or ":modifiers". */
int prec_evp_parse_event_tail(struct parser *p, struct ev *e)
{
	struct term *t = NULL;
	size_t nt = 0;
	int err = 0;

	if (prec_evp_peek(p) == '/') {
		err = prec_evp_parse_terms(p, &t, &nt);
		if (!err)
			err = prec_evp_parse_tail_mods(p, e);
		if (!err)
			err = prec_evp_apply_terms(p, e, t, nt);
	} else if (prec_evp_peek(p) == ':') {
		p->i++;
		err = prec_evp_parse_mods(p, e, true);
	}
	if (!err && e->pub.kind == PREC_EV_AUX)
		prec_evp_cs_etm_per_cpu_defaults(p, e, t, nt);
	prec_evp_term_free(t, nt);
	free(t);
	return err;
}
