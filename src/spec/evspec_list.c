// SPDX-License-Identifier: MIT
/*
 * A parsed list finished into groups in kernel order, and what callers read
 * of it: events, groups, the AUX event, a dump.
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

static int ferr(struct prec_evlist *el, struct prec_diag *d, const struct ev *e, int code, long pos,
		const char *fmt, ...) prec_printf(6, 7);

static int ferr(struct prec_evlist *el, struct prec_diag *d, const struct ev *e, int code, long pos,
		const char *fmt, ...)
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

/* Does @e use the AUX area of its group's leader (pause/resume, aux-output, aux samples)? */
static bool needs_aux_leader(const struct ev *e)
{
	return (e->pub.aux_action & (PREC_AUX_PAUSE | PREC_AUX_RESUME)) || e->pub.attr.aux_output ||
	       e->pub.attr.aux_sample_size;
}

/* The column of the term that makes @e need an AUX leader. */
static long aux_term_pos(const struct ev *e)
{
	return e->action_pos >= 0   ? e->action_pos
	       : e->output_pos >= 0 ? e->output_pos
				    : e->ssize_pos;
}

/* The aux-* terms of one event that contradict each other or its kind. */
static int check_aux_terms(struct prec_evlist *el, struct prec_diag *d, const struct ev *e)
{
	uint32_t a = e->pub.aux_action;
	int err;

	if ((a & PREC_AUX_START_PAUSED) && !e->pub.aux) {
		err = ferr(el, d, e, -EINVAL, e->action_pos,
			   "aux-action 'start-paused' can only be used with an AUX area event");
		prec_diag_hint(d, "start-paused goes on the tracer (intel_pt/aux-start-paused/); "
				  "triggers take pause or resume");
		return err;
	}
	if ((a & (PREC_AUX_PAUSE | PREC_AUX_RESUME)) && e->pub.aux) {
		err = ferr(el, d, e, -EINVAL, e->action_pos,
			   "aux-action '%s' cannot be used for the AUX area event itself",
			   a & PREC_AUX_PAUSE ? "pause" : "resume");
		prec_diag_hint(d, "put pause/resume on the trigger events; the tracer takes "
				  "start-paused");
		return err;
	}
	if (e->pub.snapshot && (a & PREC_AUX_RESUME)) {
		err = ferr(el, d, e, -EINVAL, e->action_pos,
			   "a snapshot trigger pauses tracing; it cannot resume it");
		prec_diag_hint(d, "put aux-action=resume on another event of the group");
		return err;
	}
	if ((a & PREC_AUX_PAUSE) && (a & PREC_AUX_RESUME)) {
		err = ferr(el, d, e, -EINVAL, e->action_pos,
			   "one event cannot both pause and resume tracing");
		prec_diag_hint(d, "use two events, one with aux-pause and one with aux-resume");
		return err;
	}
	if (e->pub.attr.aux_output && (a & (PREC_AUX_PAUSE | PREC_AUX_RESUME)))
		return ferr(el, d, e, -EOPNOTSUPP, e->output_pos,
			    "aux-output cannot be combined with aux pause/resume");
	if (e->pub.attr.aux_output && e->pub.attr.aux_sample_size)
		return ferr(el, d, e, -EINVAL, e->ssize_pos,
			    "aux-output cannot be combined with aux-sample-size");
	return 0;
}

/*
 * Checks the aux-* terms, and moves an event outside braces that needs an AUX
 * leader into the group of the last AUX event before it.
 */
static int attach_to_aux(struct prec_evlist *el, struct prec_diag *d)
{
	int last_aux = -1, naux = 0, err;
	size_t i;

	for (i = 0; i < el->nev; i++) {
		struct ev *e = el->ev[i];

		if (e->pub.aux && ++naux > 1) {
			err = ferr(el, d, e, -EINVAL, e->pub.pos,
				   "only one AUX tracer event is allowed");
			prec_diag_hint(d, "put all its terms into one %s/.../ event", e->pub.pmu);
			return err;
		}
		err = check_aux_terms(el, d, e);
		if (err)
			return err;
		if (needs_aux_leader(e) && !e->pub.aux && !e->pub.in_braces) {
			if (last_aux < 0) {
				err = ferr(el, d, e, -EINVAL, aux_term_pos(e),
					   "events with aux-action must have an AUX area event as "
					   "group leader, and there is none before this one");
				prec_diag_hint(d,
					       "name the tracer first, e.g. "
					       "-e intel_pt/aux-start-paused/u -e %s",
					       e->pub.text);
				return err;
			}
			e->ugroup = el->ev[last_aux]->ugroup;
		}
		if (e->pub.aux)
			last_aux = (int)i;
	}
	return 0;
}

/* Lays groups out contiguously, ordered by their leader's position. */
static int layout_groups(struct prec_evlist *el, struct prec_diag *d)
{
	size_t i, g;
	int *lead = malloc(sizeof(*lead) * (size_t)(el->next_group ? el->next_group : 1));

	if (!lead)
		return prec_diag_set(d, -ENOMEM, -1, "out of memory");
	for (i = 0; i < (size_t)el->next_group; i++)
		lead[i] = -1;
	for (i = 0; i < el->nev; i++)
		if (lead[el->ev[i]->ugroup] < 0)
			lead[el->ev[i]->ugroup] = (int)i;
	for (i = 0; i < el->nev; i++)
		el->ev[i]->ugroup = lead[el->ev[i]->ugroup];
	free(lead);
	qsort(el->ev, el->nev, sizeof(*el->ev), cmp_ev);
	free(el->grp_first);
	free(el->grp_n);
	el->grp_first = calloc(el->nev, sizeof(size_t));
	el->grp_n = calloc(el->nev, sizeof(size_t));
	if (!el->grp_first || !el->grp_n)
		return prec_diag_set(d, -ENOMEM, -1, "out of memory");
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
	return 0;
}

/* Every event that needs an AUX leader has one, now that groups are laid out. */
static int check_leaders(struct prec_evlist *el, struct prec_diag *d)
{
	size_t i;
	int err;

	for (i = 0; i < el->nev; i++) {
		struct ev *e = el->ev[i];
		const struct ev *l = el->ev[e->pub.leader];

		if (needs_aux_leader(e) && !l->pub.aux) {
			err = ferr(el, d, e, -EINVAL, aux_term_pos(e),
				   "events with aux-action must have an AUX area event as group "
				   "leader");
			prec_diag_hint(d,
				       "the leader of this group is '%s'; put the tracer first: "
				       "{intel_pt/aux-start-paused/,...}",
				       l->pub.text);
			return err;
		}
	}
	return 0;
}

/*
 * What only a group's leader may carry. The kernel refuses pinned and
 * exclusive on a member (perf_event_open(): "Only a group leader can be
 * exclusive or pinned"), so D and e on any event of a group pin or reserve
 * the group through its leader. With S (leader sampling) the leader samples
 * and reads the whole group with each sample, and the members only count, as
 * perf's evsel__config_leader_sampling() and evsel__config() set it up: no
 * sample period on members, PERF_SAMPLE_READ and a group read_format on the
 * leader.
 */
static void leader_only(struct prec_evlist *el)
{
	size_t i;

	for (i = 0; i < el->nev; i++) {
		struct ev *e = el->ev[i];
		struct ev *l = el->ev[e->pub.leader];

		if (e == l || el->grp_n[e->pub.group] < 2)
			continue;
		l->pub.attr.pinned |= e->pub.attr.pinned;
		l->pub.attr.exclusive |= e->pub.attr.exclusive;
		e->pub.attr.pinned = 0;
		e->pub.attr.exclusive = 0;
		if (!l->pub.sample_read || l->pub.aux)
			continue;
		e->pub.attr.sample_period = 0;
		e->pub.attr.freq = 0;
		e->pub.period = 0;
		e->pub.freq = 0;
		l->pub.attr.sample_type |= PERF_SAMPLE_READ;
		l->pub.attr.read_format |= PERF_FORMAT_GROUP | PERF_FORMAT_ID;
		e->pub.attr.read_format |= PERF_FORMAT_GROUP | PERF_FORMAT_ID;
	}
}

int prec_evlist_finish(struct prec_evlist *el, struct prec_diag *d)
{
	struct prec_diag dummy;
	int err;

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
	err = attach_to_aux(el, d);
	if (!err)
		err = layout_groups(el, d);
	if (!err)
		err = check_leaders(el, d);
	if (!err) {
		leader_only(el);
		el->finished = true;
	}
	return err;
}

const char *prec_evlist_diag_text(const struct prec_evlist *el)
{
	return el ? el->diag_text : NULL;
}

size_t prec_evlist_nr_events(const struct prec_evlist *el) { return el ? el->nev : 0; }

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

bool prec_evlist_emulated(const struct prec_evlist *el) { return el && el->opts.emulate; }

static int dump_event(const struct prec_evlist *el, const struct ev *e, struct prec_buf *b)
{
	const struct prec_event *pe = &e->pub;
	int err;

	err = prec_buf_printf(b, "  #%d %s\n", pe->idx, pe->text);
	if (!err)
		err = prec_buf_printf(b,
				      "     kind %s, pmu %s (type %u)%s%s, from -e #%d at "
				      "offset %ld\n",
				      prec_ev_kind_name(pe->kind), pe->pmu, pe->pmu_type,
				      pe->aux ? ", AUX tracer" : "",
				      pe->emulated ? ", emulated" : "", pe->arg + 1, pe->pos);
	if (!err && strcmp(pe->name, pe->text))
		err = prec_buf_printf(b, "     name %s\n", pe->name);
	if (!err && pe->aux_action)
		err = prec_buf_printf(b, "     aux-action %s%s\n", prec_aux_action_str(pe->aux_action),
				      pe->snapshot ? ", snapshot" : "");
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
	if (!err && (pe->kind == PREC_EV_KPROBE || pe->kind == PREC_EV_KRETPROBE))
		err = prec_buf_printf(b, "     %s %s+%llu: a tracefs %s event, made when the "
				      "recording starts\n",
				      pe->kind == PREC_EV_KPROBE ? "kprobe at" : "kretprobe of",
				      pe->kprobe.func, (unsigned long long)pe->kprobe.offset,
				      pe->kind == PREC_EV_KPROBE ? "kprobe" : "kretprobe");
	if (!err && pe->kind == PREC_EV_TRACEPOINT) {
		err = prec_buf_printf(b, "     tracepoint %s:%s id %llu", pe->tp.sys, pe->tp.name,
				      (unsigned long long)pe->tp.id);
		if (!err && pe->tp.syscall_nr >= 0)
			err = prec_buf_printf(b, ", syscall %d %s", pe->tp.syscall_nr,
					      pe->tp.syscall_dir == PREC_SYSCALL_ENTER ? "enter"
										       : "exit");
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
	err = prec_buf_printf(b, "%zu event%s in %zu group%s%s\n", el->nev, el->nev == 1 ? "" : "s",
			      el->ngroups, el->ngroups == 1 ? "" : "s",
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
