// SPDX-License-Identifier: MIT
/* --folded and --perfetto: the profile as pictures (report.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "output/report.h"

/*
 * A frame's name in a folded stack: the symbol, or [object] when it has none;
 * ';' separates frames and ' ' the count, so neither is left in a name. Made
 * once per function (a stack repeats its callers' names on every line).
 */
static char *frame_name(const struct prec_pfunc *f)
{
	char *s, *c;

	if (!strcmp(f->name, "[unknown]")) {
		const char *base = prec_profile_base(f->dso);

		s = malloc(strlen(base) + 3);
		if (s)
			sprintf(s, "[%s]", base);
		return s;
	}
	s = strdup(f->name);
	for (c = s; c && *c; c++)
		if (*c == ';' || *c == ' ')
			*c = *c == ';' ? ':' : '_';
	return s;
}

static uint64_t weight_of(const struct prec_pnode *n, enum prec_weight w)
{
	return w == PREC_WEIGHT_TIME ? n->ns : w == PREC_WEIGHT_CALLS ? n->calls : n->insns;
}

int prec_view_folded(const struct prec_profile *p, const struct prec_view_opts *o, FILE *out)
{
	char **names = calloc(p->nfn ? p->nfn : 1, sizeof(*names));
	uint32_t *path = NULL;
	size_t i;
	int err = 0;

	if (!names)
		return -ENOMEM;
	for (i = 1; i < p->nnode && !err; i++) {
		uint64_t w = weight_of(&p->node[i], o->weight);
		size_t n = 0;
		uint32_t k;

		if (!w)
			continue;
		for (k = (uint32_t)i; k; k = p->node[k].parent) {
			if (PREC_ARRAY_RESERVE(path, n, 1)) {
				err = -ENOMEM;
				break;
			}
			path[n++] = p->node[k].fn;
		}
		while (!err && n--) {
			uint32_t fn = path[n];

			if (!names[fn] && !(names[fn] = frame_name(&p->fn[fn])))
				err = -ENOMEM;
			else {
				fputs(names[fn], out);
				putc(n ? ';' : ' ', out);
			}
		}
		if (!err)
			fprintf(out, "%" PRIu64 "\n", w);
	}
	for (i = 0; i < p->nfn; i++)
		free(names[i]);
	free(names);
	free(path);
	return err ? err : prec_view_status(out);
}

/* ---- --perfetto: Chrome trace-event JSON ---- */

/* The windows' process: after every real pid, so viewers list threads first. */
#define WINDOWS_PID 2147483647

static int slice_cmp(const void *a, const void *b)
{
	const struct prec_pslice *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* A span @v in microseconds (from ns) in a timed trace, else in instructions. */
static void us_field(const struct prec_profile *p, const char *key, uint64_t v, FILE *out)
{
	if (p->timed)
		fprintf(out, ",\"%s\":%" PRIu64 ".%03" PRIu64, key, v / 1000, v % 1000);
	else
		fprintf(out, ",\"%s\":%" PRIu64, key, v);
}

/* A point in time: since the trace's first time (or an instruction count). */
static void ts_field(const struct prec_profile *p, uint64_t t, FILE *out)
{
	us_field(p, "ts", p->timed ? (t > p->first_time ? t - p->first_time : 0) : t, out);
}

static int pid_of(const struct prec_profile *p, int tid)
{
	int pid = prec_session_pid_of(p->s, tid, UINT64_MAX);

	return pid >= 0 ? pid : tid;
}

/* One track name per thread (its comm), and the windows' process. */
static void track_names(const struct prec_profile *p, FILE *out)
{
	int last = -2;
	size_t i;

	for (i = 0; i < p->nslice; i++) {
		const char *comm;

		if (p->slice[i].tid == last)
			continue;
		last = p->slice[i].tid;
		comm = prec_session_comm(p->s, last, UINT64_MAX);
		fprintf(out, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
			     "\"args\":{\"name\":",
			pid_of(p, last), last);
		prec_json_str(out, comm && *comm ? comm : "?");
		fputs("}}", out);
	}
	fprintf(out, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,"
		     "\"args\":{\"name\":\"trace windows\"}}", WINDOWS_PID);
}

static void windows_track(const struct prec_profile *p, FILE *out)
{
	size_t i;

	for (i = 0; i < p->nwin; i++) {
		const struct prec_pwin *w = &p->win[i];

		fprintf(out, ",\n{\"ph\":\"X\",\"cat\":\"window\",\"name\":\"window %zu\","
			     "\"pid\":%d,\"tid\":%d",
			i + 1, WINDOWS_PID, w->tid);
		ts_field(p, p->timed ? w->start : 0, out);
		us_field(p, "dur", p->timed ? (w->end > w->start ? w->end - w->start : 0) : w->insns,
			 out);
		fprintf(out, ",\"args\":{\"insns\":%" PRIu64 ",\"calls\":%" PRIu64 ",\"opened_by\":",
			w->insns, w->calls);
		prec_json_str(out, prec_profile_trig_name(p, w->open_trig, ""));
		fputs(",\"closed_by\":", out);
		prec_json_str(out, prec_profile_trig_name(p, w->close_trig, ""));
		fputs("}}", out);
	}
}

int prec_view_perfetto(const struct prec_profile *p, size_t limit, FILE *out)
{
	size_t i;

	qsort(p->slice, p->nslice, sizeof(*p->slice), slice_cmp);
	fprintf(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"ptdump\","
		     "\"time_unit\":\"%s\",\"calls_kept\":%zu,\"calls_left_out\":%" PRIu64
		     ",\"max_events\":%zu},\n\"traceEvents\":[\n",
		p->timed ? "us" : "instructions", p->nslice, p->slices_dropped,
		limit ? limit : (size_t)1000000);
	fputs("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":1,"
	      "\"args\":{\"name\":\"ptdump\"}}", out);
	track_names(p, out);
	for (i = 0; i < p->nslice; i++) {
		const struct prec_pslice *sl = &p->slice[i];
		const struct prec_pfunc *f = &p->fn[sl->fn];

		fputs(",\n{\"ph\":\"X\",\"cat\":\"call\",\"name\":", out);
		prec_json_str(out, f->name);
		fprintf(out, ",\"pid\":%d,\"tid\":%d", pid_of(p, sl->tid), sl->tid);
		ts_field(p, sl->start, out);
		us_field(p, "dur", sl->dur, out);
		fputs(",\"args\":{\"object\":", out);
		prec_json_str(out, f->dso);
		fputs("}}", out);
	}
	for (i = 0; i < p->ninst; i++) {
		const struct prec_pinstant *in = &p->inst[i];

		fputs(",\n{\"ph\":\"i\",\"s\":\"t\",\"cat\":", out);
		prec_json_str(out, in->what);
		fputs(",\"name\":", out);
		prec_json_str(out, in->detail[0] ? in->detail : in->what);
		fprintf(out, ",\"pid\":%d,\"tid\":%d", pid_of(p, in->tid), in->tid);
		ts_field(p, p->timed ? in->time : 0, out);
		fputs("}", out);
	}
	windows_track(p, out);
	fputs("\n]}\n", out);
	return prec_view_status(out);
}
