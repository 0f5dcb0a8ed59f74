/* SPDX-License-Identifier: MIT */
/*
 * Address filters for a tracer (--filter), in perf's syntax, turned into the
 * string the kernel's PERF_EVENT_IOC_SET_FILTER takes for an AUX PMU
 * (perf_event_parse_addr_filter() in kernel/events/core.c):
 *
 *	filter START[/SIZE] [@ OBJ]    trace only inside the range
 *	start START [@ OBJ]            start tracing at START
 *	stop START [@ OBJ]             stop tracing at START
 *
 * separated by commas or newlines; spaces around '/' and '@' are allowed.
 * START is an address or, with @OBJ, a function of OBJ; SIZE an address
 * count (default for a function: its size). With @OBJ the address is the
 * ELF virtual address objdump shows, given to the kernel as the file offset
 * it wants ("filter 0xOFF/0xSIZE@/abs/path"); without, a kernel address.
 */
#ifndef PREC_FILTER_H
#define PREC_FILTER_H

#include "base/common.h"
#include "base/util.h"

/*
 * Resolves @text into the kernel's filter string, appended to @out, and the
 * number of filters (each takes one of the PMU's address ranges) in
 * *@nranges. Returns 0 or a negative code with @d (its pos the column in
 * @text where that is known).
 */
int prec_filter_resolve(const char *text, struct prec_buf *out, unsigned *nranges,
			struct prec_diag *d);

/*
 * The PMU's limit: @have address ranges (caps/num_address_ranges; intel_pt
 * takes it from CPUID leaf 0x14), @given filters. Returns 0, or -EOPNOTSUPP
 * with "intel_pt on this CPU has 2 address ranges; 3 given" in @d.
 */
int prec_filter_check_ranges(const char *pmu, unsigned have, unsigned given, struct prec_diag *d);

/* One address filter as the kernel holds it (struct perf_addr_filter). */
enum prec_af_action { PREC_AF_FILTER, PREC_AF_START, PREC_AF_STOP };

struct prec_addr_filter {
	enum prec_af_action action;
	uint64_t offset; /* file offset with @path, else a kernel address */
	uint64_t size;   /* 0: a single address */
	char *path;      /* NULL: a kernel address */
};

/*
 * Parses the kernel's filter string (what PERF_EVENT_IOC_SET_FILTER takes
 * for an AUX PMU) as perf_event_parse_addr_filter() in kernel/events/core.c
 * does: "ACTION SOURCE" pairs separated by spaces, commas or newlines, ACTION
 * filter|start|stop, SOURCE ADDR/SIZE@PATH, ADDR/SIZE, ADDR@PATH or ADDR.
 * @exclude_kernel refuses kernel addresses. Returns the number of filters
 * (*@out, free with prec_addr_filters_free) or -EINVAL / -ENOMEM. Paths are
 * not looked up here.
 */
int prec_addr_filters_parse(const char *text, bool exclude_kernel, struct prec_addr_filter **out);
void prec_addr_filters_free(struct prec_addr_filter *f, int n);

#endif
