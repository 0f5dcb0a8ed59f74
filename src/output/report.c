// SPDX-License-Identifier: MIT
/* --report and --windows: per function and per trace window (report.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "output/report.h"

static const char *const sort_names[] = { "insns", "self", "calls", "time", "self-time", "name" };
static const char *const mode_names[] = { "flat", "caller", "callee" };
static const char *const weight_names[] = { "insns", "time", "calls" };

static int parse_word(const char *s, const char *const *names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return (int)i;
	return -1;
}

int prec_parse_sort(const char *s, enum prec_sort *out)
{
	int i = parse_word(s, sort_names, 6);

	if (i < 0)
		return -EINVAL;
	*out = (enum prec_sort)i;
	return 0;
}

int prec_parse_report_mode(const char *s, enum prec_report_mode *out)
{
	int i = parse_word(s, mode_names, 3);

	if (i < 0)
		return -EINVAL;
	*out = (enum prec_report_mode)i;
	return 0;
}

int prec_parse_weight(const char *s, enum prec_weight *out)
{
	int i = parse_word(s, weight_names, 3);

	if (i < 0)
		return -EINVAL;
	*out = (enum prec_weight)i;
	return 0;
}

/* ---- JSON ---- */

void prec_json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

void prec_json_header(FILE *out, const char *view)
{
	fprintf(out, "{\"schema\":\"%s\",\"view\":\"%s\"}\n", PREC_JSON_SCHEMA, view);
}

int prec_view_status(FILE *out)
{
	if (fflush(out) == EOF || ferror(out))
		return errno == EPIPE ? -EPIPE : -EIO;
	return 0;
}

/* ---- the function table, sorted ---- */

static const struct prec_profile *sort_p;
static enum prec_sort sort_key;

static uint64_t total_insns(const struct prec_pfunc *f);

static uint64_t key_of(const struct prec_pfunc *f)
{
	switch (sort_key) {
	case PREC_SORT_SELF:
		return f->self_insns;
	case PREC_SORT_CALLS:
		return f->calls;
	case PREC_SORT_TIME:
		return f->total_ns;
	case PREC_SORT_SELF_TIME:
		return f->self_ns;
	default:
		return total_insns(f);
	}
}

static int fn_cmp(const void *a, const void *b)
{
	const struct prec_pfunc *x = &sort_p->fn[*(const uint32_t *)a];
	const struct prec_pfunc *y = &sort_p->fn[*(const uint32_t *)b];
	int c;

	if (sort_key != PREC_SORT_NAME && key_of(x) != key_of(y))
		return key_of(x) > key_of(y) ? -1 : 1;
	c = strcmp(x->name, y->name);
	if (!c)
		c = strcmp(x->dso, y->dso);
	return c ? c : x->tid - y->tid;
}

/* The functions that ran or were called, sorted by @key. NULL on ENOMEM. */
static uint32_t *sorted_fns(const struct prec_profile *p, enum prec_sort key, size_t *n)
{
	uint32_t *ix = malloc((p->nfn + 1) * sizeof(*ix));
	size_t i;

	*n = 0;
	if (!ix)
		return NULL;
	for (i = 0; i < p->nfn; i++)
		if (!p->fn[i].hidden &&
		    (p->fn[i].calls || p->fn[i].self_insns || p->fn[i].total_insns))
			ix[(*n)++] = (uint32_t)i;
	sort_p = p;
	sort_key = key;
	qsort(ix, *n, sizeof(*ix), fn_cmp);
	return ix;
}

/* The total a function shows: at least its own instructions. */
static uint64_t total_insns(const struct prec_pfunc *f)
{
	return f->total_insns > f->self_insns ? f->total_insns : f->self_insns;
}

static void time_col(FILE *out, uint64_t ns)
{
	fprintf(out, " %12.3f", ns / 1000.0);
}

static void fn_json(const struct prec_profile *p, const struct prec_pfunc *f, FILE *out)
{
	fputs("{\"type\":\"function\",\"object\":", out);
	prec_json_str(out, f->dso);
	fputs(",\"name\":", out);
	prec_json_str(out, f->name);
	if (f->tid >= 0)
		fprintf(out, ",\"tid\":%d", f->tid);
	fprintf(out, ",\"calls\":%" PRIu64 ",\"insns_total\":%" PRIu64 ",\"insns_self\":%" PRIu64
		     ",\"share\":%.6f",
		f->calls, total_insns(f), f->self_insns,
		p->insns ? (double)f->self_insns / (double)p->insns : 0.0);
	if (p->timed)
		fprintf(out, ",\"time_total_ns\":%" PRIu64 ",\"time_self_ns\":%" PRIu64,
			f->total_ns, f->self_ns);
	fputs("}\n", out);
}

static void fn_text(const struct prec_profile *p, const struct prec_pfunc *f, FILE *out)
{
	if (f->tid >= 0)
		fprintf(out, "%8d ", f->tid);
	fprintf(out, "%10" PRIu64 " %14" PRIu64 " %14" PRIu64 " %6.2f%%", f->calls,
		total_insns(f), f->self_insns,
		p->insns ? 100.0 * (double)f->self_insns / (double)p->insns : 0.0);
	if (p->timed) {
		time_col(out, f->total_ns);
		time_col(out, f->self_ns);
	}
	fprintf(out, "  %s (%s)\n", f->name, prec_profile_base(f->dso));
}

/* The edges into (@callers) or out of @fn, as lines under its row. */
static void edges_of(const struct prec_profile *p, uint32_t fn, bool callers, bool json,
		     FILE *out)
{
	size_t i;

	for (i = 0; i < p->nedge; i++) {
		const struct prec_pedge *e = &p->edge[i];
		const struct prec_pfunc *o;

		if ((callers ? e->callee : e->caller) != fn || !e->calls ||
		    p->fn[callers ? e->caller : e->callee].hidden)
			continue;
		o = &p->fn[callers ? e->caller : e->callee];
		if (json) {
			fputs("{\"type\":\"edge\",\"caller_object\":", out);
			prec_json_str(out, p->fn[e->caller].dso);
			fputs(",\"caller\":", out);
			prec_json_str(out, p->fn[e->caller].name);
			fputs(",\"callee_object\":", out);
			prec_json_str(out, p->fn[e->callee].dso);
			fputs(",\"callee\":", out);
			prec_json_str(out, p->fn[e->callee].name);
			fprintf(out, ",\"calls\":%" PRIu64 ",\"insns_total\":%" PRIu64 "}\n",
				e->calls, e->total_insns);
			continue;
		}
		fprintf(out, "      %s %10" PRIu64 " calls %14" PRIu64 " insns  %s (%s)\n",
			callers ? "<-" : "->", e->calls, e->total_insns, o->name,
			prec_profile_base(o->dso));
	}
}

int prec_view_report(const struct prec_profile *p, const struct prec_view_opts *o, FILE *out)
{
	size_t n, i;
	uint32_t *ix = sorted_fns(p, o->sort, &n);

	if (!ix)
		return -ENOMEM;
	if (o->json) {
		prec_json_header(out, "report");
		fprintf(out, "{\"type\":\"total\",\"insns\":%" PRIu64 ",\"calls\":%" PRIu64
			     ",\"functions\":%zu,\"timed\":%s}\n",
			p->insns, p->calls, n, p->timed ? "true" : "false");
	} else {
		fprintf(out, "# %" PRIu64 " instructions, %" PRIu64 " calls, %zu functions "
			     "(instruction counts are exact%s)\n",
			p->insns, p->calls, n, p->timed ? "; times in microseconds" : "");
		fprintf(out, "#%s     calls    insns total     insns self   share%s  function (object)\n",
			o->by_thread ? "     tid" : "",
			p->timed ? "   time total    time self" : "");
	}
	for (i = 0; i < n; i++) {
		const struct prec_pfunc *f = &p->fn[ix[i]];

		if (o->json)
			fn_json(p, f, out);
		else
			fn_text(p, f, out);
		if (o->mode != PREC_REPORT_FLAT)
			edges_of(p, ix[i], o->mode == PREC_REPORT_CALLER, o->json, out);
	}
	free(ix);
	return prec_view_status(out);
}

/* ---- windows ---- */

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct summary {
	uint64_t mean_x100, median, p95, max; /* mean in hundredths */
};

/* count, mean, median, p95 (nearest rank) and max of @v[@n] (sorted here). */
static void summarize(uint64_t *v, size_t n, struct summary *s)
{
	uint64_t sum = 0;
	size_t i;

	memset(s, 0, sizeof(*s));
	if (!n)
		return;
	qsort(v, n, sizeof(*v), u64_cmp);
	for (i = 0; i < n; i++)
		sum += v[i];
	s->mean_x100 = (sum * 100 + n / 2) / n;
	s->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	s->p95 = v[(size_t)ceil(0.95 * (double)n) - 1];
	s->max = v[n - 1];
}

static void win_row(const struct prec_profile *p, size_t k, bool json, FILE *out)
{
	const struct prec_pwin *w = &p->win[k];
	const char *op = prec_profile_trig_name(p, w->open_trig, json ? "" : "-");
	const char *cl = prec_profile_trig_name(p, w->close_trig, w->open_at_end ? "end" : "-");
	uint64_t dur = w->end > w->start ? w->end - w->start : 0;
	uint32_t i;

	if (json) {
		fprintf(out, "{\"type\":\"window\",\"index\":%zu,\"tid\":%d,\"opened_by\":", k + 1,
			w->tid);
		prec_json_str(out, op);
		fputs(",\"closed_by\":", out);
		prec_json_str(out, w->open_at_end ? "" : cl);
		fprintf(out, ",\"at_end\":%s", w->open_at_end ? "true" : "false");
		if (p->timed)
			fprintf(out, ",\"start_ns\":%" PRIu64 ",\"duration_ns\":%" PRIu64, w->start,
				dur);
		fprintf(out, ",\"insns\":%" PRIu64 ",\"calls\":%" PRIu64 ",\"top\":[", w->insns,
			w->calls);
		for (i = 0; i < w->ntop; i++) {
			fputs(i ? ",{\"name\":" : "{\"name\":", out);
			prec_json_str(out, p->fn[w->top[i]].name);
			fputs(",\"object\":", out);
			prec_json_str(out, p->fn[w->top[i]].dso);
			fprintf(out, ",\"insns\":%" PRIu64 "}", w->top_insns[i]);
		}
		fputs("]}\n", out);
		return;
	}
	fprintf(out, "%7zu %8d  %-24s %-24s", k + 1, w->tid, op, cl);
	if (p->timed)
		fprintf(out, " %6" PRIu64 ".%09" PRIu64 " %12.3f", w->start / 1000000000,
			w->start % 1000000000, dur / 1000.0);
	fprintf(out, " %12" PRIu64 " %8" PRIu64 "  ", w->insns, w->calls);
	for (i = 0; i < w->ntop; i++)
		fprintf(out, "%s%s %" PRIu64, i ? ", " : "", p->fn[w->top[i]].name,
			w->top_insns[i]);
	fputs("\n", out);
}

static void summary_out(const char *what, const struct summary *s, size_t n, bool json,
			FILE *out)
{
	if (json) {
		fprintf(out, "{\"type\":\"summary\",\"of\":\"%s\",\"count\":%zu,\"mean\":%" PRIu64
			     ".%02" PRIu64 ",\"median\":%" PRIu64 ",\"p95\":%" PRIu64
			     ",\"max\":%" PRIu64 "}\n",
			what, n, s->mean_x100 / 100, s->mean_x100 % 100, s->median, s->p95, s->max);
		return;
	}
	fprintf(out, "# %s: count %zu, mean %" PRIu64 ".%02" PRIu64 ", median %" PRIu64
		     ", p95 %" PRIu64 ", max %" PRIu64 "\n",
		what, n, s->mean_x100 / 100, s->mean_x100 % 100, s->median, s->p95, s->max);
}

int prec_view_windows(const struct prec_profile *p, const struct prec_view_opts *o, FILE *out)
{
	uint64_t *v = malloc((p->nwin + 1) * sizeof(*v));
	struct summary s;
	size_t i;

	if (!v)
		return -ENOMEM;
	if (o->json)
		prec_json_header(out, "windows");
	else
		fprintf(out, "# window      tid  %-24s %-24s%s %12s %8s  top functions (instructions)\n",
			"opened by", "closed by",
			p->timed ? "            start duration(us)" : "", "insns", "calls");
	for (i = 0; i < p->nwin; i++)
		win_row(p, i, o->json, out);
	for (i = 0; i < p->nwin; i++)
		v[i] = p->win[i].insns;
	summarize(v, p->nwin, &s);
	summary_out("insns", &s, p->nwin, o->json, out);
	for (i = 0; i < p->nwin; i++)
		v[i] = p->win[i].calls;
	summarize(v, p->nwin, &s);
	summary_out("calls", &s, p->nwin, o->json, out);
	if (p->timed) {
		for (i = 0; i < p->nwin; i++)
			v[i] = p->win[i].end > p->win[i].start ? p->win[i].end - p->win[i].start : 0;
		summarize(v, p->nwin, &s);
		summary_out("duration_ns", &s, p->nwin, o->json, out);
	}
	free(v);
	return prec_view_status(out);
}
