// SPDX-License-Identifier: MIT
/* --diff: two profiles, function by function and window by window (report.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/report.h"

struct drow {
	const struct prec_pfunc *o, *n; /* either may be NULL */
	int64_t delta;                  /* instructions, total */
};

static uint64_t insns_of(const struct prec_pfunc *f)
{
	if (!f)
		return 0;
	return f->total_insns > f->self_insns ? f->total_insns : f->self_insns;
}

static bool same_fn(const struct prec_pfunc *a, const struct prec_pfunc *b)
{
	return !strcmp(a->name, b->name) &&
	       !strcmp(prec_profile_base(a->dso), prec_profile_base(b->dso));
}

static int64_t abs64(int64_t v)
{
	return v < 0 ? -v : v;
}

static int drow_cmp(const void *a, const void *b)
{
	const struct drow *x = a, *y = b;
	const struct prec_pfunc *fx = x->n ? x->n : x->o, *fy = y->n ? y->n : y->o;

	if (abs64(x->delta) != abs64(y->delta))
		return abs64(x->delta) > abs64(y->delta) ? -1 : 1;
	return strcmp(fx->name, fy->name);
}

/* Growth of @n over @o in per cent; 100 for something new. */
static double growth(uint64_t o, uint64_t n)
{
	if (n <= o)
		return 0;
	return o ? 100.0 * (double)(n - o) / (double)o : 100.0;
}

/* Pairs the functions of @old and @new by object file name and symbol. */
static struct drow *pair_fns(const struct prec_profile *old, const struct prec_profile *new,
			     size_t *nrows)
{
	struct drow *r = calloc(old->nfn + new->nfn + 1, sizeof(*r));
	bool *used = calloc(new->nfn + 1, sizeof(*used));
	size_t i, j, n = 0;

	if (!r || !used) {
		free(r);
		free(used);
		return NULL;
	}
	/* Quadratic in functions, which number in the thousands at most. */
	for (i = 0; i < old->nfn; i++) {
		if (old->fn[i].hidden)
			continue;
		r[n].o = &old->fn[i];
		for (j = 0; j < new->nfn; j++)
			if (!used[j] && same_fn(&old->fn[i], &new->fn[j])) {
				used[j] = true;
				r[n].n = &new->fn[j];
				break;
			}
		n++;
	}
	for (j = 0; j < new->nfn; j++)
		if (!used[j] && !new->fn[j].hidden)
			r[n++].n = &new->fn[j];
	free(used);
	for (i = 0; i < n; i++)
		r[i].delta = (int64_t)insns_of(r[i].n) - (int64_t)insns_of(r[i].o);
	qsort(r, n, sizeof(*r), drow_cmp);
	*nrows = n;
	return r;
}

static void fn_row(const struct drow *r, bool json, FILE *out)
{
	const struct prec_pfunc *f = r->n ? r->n : r->o;
	uint64_t oc = r->o ? r->o->calls : 0, nc = r->n ? r->n->calls : 0;
	uint64_t oi = insns_of(r->o), ni = insns_of(r->n);

	if (json) {
		fputs("{\"type\":\"function\",\"object\":", out);
		prec_json_str(out, prec_profile_base(f->dso));
		fputs(",\"name\":", out);
		prec_json_str(out, f->name);
		fprintf(out, ",\"old_calls\":%" PRIu64 ",\"new_calls\":%" PRIu64
			     ",\"old_insns\":%" PRIu64 ",\"new_insns\":%" PRIu64
			     ",\"delta_insns\":%" PRId64 ",\"growth_pct\":%.2f}\n",
			oc, nc, oi, ni, r->delta, growth(oi, ni));
		return;
	}
	fprintf(out, "%10" PRIu64 " %10" PRIu64 " %14" PRIu64 " %14" PRIu64 " %+14" PRId64, oc,
		nc, oi, ni, r->delta);
	if (oi)
		fprintf(out, " %+8.2f%%", 100.0 * (double)r->delta / (double)oi);
	else
		fprintf(out, " %9s", ni ? "new" : "");
	fprintf(out, "  %s (%s)%s\n", f->name, prec_profile_base(f->dso), r->n ? "" : " [gone]");
}

static void win_rows(const struct prec_profile *old, const struct prec_profile *new, bool json,
		     FILE *out)
{
	size_t i, n = old->nwin > new->nwin ? old->nwin : new->nwin;

	if (!json && n)
		fprintf(out, "# window  old insns  new insns  change  old calls  new calls\n");
	for (i = 0; i < n; i++) {
		uint64_t oi = i < old->nwin ? old->win[i].insns : 0;
		uint64_t ni = i < new->nwin ? new->win[i].insns : 0;
		uint64_t oc = i < old->nwin ? old->win[i].calls : 0;
		uint64_t nc = i < new->nwin ? new->win[i].calls : 0;

		if (json)
			fprintf(out, "{\"type\":\"window\",\"index\":%zu,\"old_insns\":%" PRIu64
				     ",\"new_insns\":%" PRIu64 ",\"delta_insns\":%" PRId64
				     ",\"old_calls\":%" PRIu64 ",\"new_calls\":%" PRIu64 "}\n",
				i + 1, oi, ni, (int64_t)ni - (int64_t)oi, oc, nc);
		else
			fprintf(out, "%8zu %10" PRIu64 " %10" PRIu64 " %+7" PRId64 " %10" PRIu64
				     " %10" PRIu64 "\n",
				i + 1, oi, ni, (int64_t)ni - (int64_t)oi, oc, nc);
	}
}

int prec_view_diff(const struct prec_profile *old, const struct prec_profile *new,
		   const struct prec_view_opts *o, FILE *out, double *worst, char *what,
		   size_t len)
{
	size_t n, i;
	struct drow *r = pair_fns(old, new, &n);

	if (!r)
		return -ENOMEM;
	*worst = growth(old->insns, new->insns);
	snprintf(what, len, "total");
	if (o->json) {
		prec_json_header(out, "diff");
		fprintf(out, "{\"type\":\"total\",\"old_insns\":%" PRIu64 ",\"new_insns\":%" PRIu64
			     ",\"delta_insns\":%" PRId64 ",\"old_calls\":%" PRIu64
			     ",\"new_calls\":%" PRIu64 ",\"growth_pct\":%.2f}\n",
			old->insns, new->insns, (int64_t)new->insns - (int64_t)old->insns, old->calls,
			new->calls, *worst);
	} else {
		fprintf(out, "# instructions %" PRIu64 " -> %" PRIu64 " (%+" PRId64 "), calls %" PRIu64
			     " -> %" PRIu64 "\n",
			old->insns, new->insns, (int64_t)new->insns - (int64_t)old->insns, old->calls,
			new->calls);
		fprintf(out, "# old calls  new calls      old insns      new insns         change"
			     "   change  function (object)\n");
	}
	for (i = 0; i < n; i++) {
		double g = growth(insns_of(r[i].o), insns_of(r[i].n));

		if (!r[i].delta && (r[i].o ? r[i].o->calls : 0) == (r[i].n ? r[i].n->calls : 0) &&
		    !o->json)
			continue;
		if (g > *worst) {
			const struct prec_pfunc *f = r[i].n ? r[i].n : r[i].o;

			*worst = g;
			snprintf(what, len, "%s (%s)", f->name, prec_profile_base(f->dso));
		}
		fn_row(&r[i], o->json, out);
	}
	free(r);
	win_rows(old, new, o->json, out);
	return prec_view_status(out);
}
