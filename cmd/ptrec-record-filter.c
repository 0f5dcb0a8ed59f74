// SPDX-License-Identifier: MIT
/* ptrec record --filter: the tracer's address filters, resolved and checked up front. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ptrec-cmds.h"
#include "spec/evspec.h"
#include "spec/filter.h"
#include "spec/pmu.h"
#include "base/util.h"

/*
 * The tracer's address ranges: intel_pt's caps/num_address_ranges, else the
 * PMU's nr_addr_filters (cs_etm: the comparators the driver offers); 0 when
 * it has none or they cannot be read. Under --emulate, the software tracer's.
 */
static unsigned address_ranges(const char *pmu, bool emulate)
{
	struct prec_pmu *p = NULL;
	const char *v;
	uint64_t n = 0;
	int err;

	if (emulate)
		err = strcmp(pmu, "intel_pt") ? prec_pmu_load_emulated_etm(&p)
					      : prec_pmu_load_emulated(&p);
	else
		err = prec_pmu_load(pmu, &p);
	if (err)
		return 0;
	v = prec_pmu_cap(p, "num_address_ranges");
	if (v) {
		if (prec_parse_u64(v, 0, &n) || n > 64)
			n = 0;
	} else if (p->nr_addr_filters > 0) {
		n = p->nr_addr_filters > 64 ? 64 : (uint64_t)p->nr_addr_filters;
	}
	prec_pmu_free(p);
	return (unsigned)n;
}

/* The whole-system software tracer applies no filters: 0, or EXIT_USAGE having said so. */
static int system_tracer_refuses(bool emulate_system)
{
	if (!emulate_system)
		return 0;
	cli_err("--filter: the whole-system software tracer does not apply address filters");
	fprintf(stderr, "  hint: trace a function's window instead: "
			"-e 'kprobe:FUNCTION/aux-action=resume/' -e 'kretprobe:FUNCTION/aux-action=pause/'\n");
	return EXIT_USAGE;
}

int rec_filter_resolve(const char *const *texts, size_t n, const struct prec_evlist *el,
		       bool emulate, bool emulate_system, bool dry, char **out)
{
	struct prec_buf b = { 0 };
	struct prec_diag d = { 0 };
	const struct prec_event *aux;
	unsigned ranges = 0, have;
	size_t i;

	*out = NULL;
	if (!n)
		return -1;
	if (prec_evlist_aux_index(el) < 0)
		return cli_usage_error("record", "--filter applies to a tracer (intel_pt, cs_etm); "
				       "the events given have none");
	aux = prec_evlist_event(el, (size_t)prec_evlist_aux_index(el));
	if (system_tracer_refuses(emulate_system))
		return EXIT_USAGE;
	for (i = 0; i < n; i++) {
		unsigned k;

		if (prec_filter_resolve(texts[i], &b, &k, &d) < 0) {
			cli_diag("bad --filter", texts[i], &d);
			prec_buf_free(&b);
			return EXIT_USAGE;
		}
		ranges += k;
	}
	have = address_ranges(aux->pmu, emulate);
	if (prec_filter_check_ranges(aux->pmu, have, ranges, &d) < 0) {
		cli_diag(NULL, NULL, &d);
		prec_buf_free(&b);
		return EXIT_FAIL;
	}
	if (dry)
		printf("# --filter: %s gets the address filters '%s' (%u of %u address ranges)\n",
		       aux->pmu, b.data, ranges, have);
	*out = b.data;
	return -1;
}
