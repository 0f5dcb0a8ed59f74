// SPDX-License-Identifier: MIT
/* The recorder's pure parts: CPU lists and the messages for the kernel's refusals. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "spec/evspec.h"
#include "harness.h"
#include "record/record.h"

static void cpu_lists(void)
{
	int *c = NULL;
	size_t n = 0;

	T_EQ_INT(prec_parse_cpu_list("0,2-3", &c, &n), 0);
	T_EQ_INT(n, 3);
	T_OK(c && c[0] == 0 && c[1] == 2 && c[2] == 3);
	free(c);
	T_EQ_INT(prec_parse_cpu_list("1,1,0-1", &c, &n), 0);
	T_EQ_INT(n, 2);
	free(c);
	T_EQ_INT(prec_parse_cpu_list("", &c, &n), -EINVAL);
	T_EQ_INT(prec_parse_cpu_list("3-1", &c, &n), -EINVAL);
	T_EQ_INT(prec_parse_cpu_list("1,,2", &c, &n), -EINVAL);
	T_EQ_INT(prec_parse_cpu_list("a", &c, &n), -EINVAL);
	T_EQ_INT(prec_parse_cpu_list("70000", &c, &n), -EINVAL);
}

/* An event from the fixture tree's intel_pt with the given spec. */
static const struct prec_event *event(const char *spec, int idx, struct prec_evlist **el)
{
	struct prec_diag d;

	t_fixture_sysroot();
	if (prec_evspec_parse(spec, NULL, el, &d)) {
		t_check(false, __FILE__, __LINE__, "parse %s: %s", spec, d.msg);
		return NULL;
	}
	return prec_evlist_event(*el, (size_t)idx);
}

static void refusals(void)
{
	struct prec_evlist *el = NULL;
	const struct prec_event *pt = event("{intel_pt/aux-action=start-paused/k,syscalls:sys_enter_newuname/aux-action=resume/}", 0, &el);
	const struct prec_event *tp;
	struct prec_diag d;

	if (!pt)
		return;
	tp = prec_evlist_event(el, 1);
	T_EQ_INT(prec_explain_open_error(-EACCES, pt, &d), -EACCES);
	T_CONTAINS(d.msg, "refused to open");
	T_CONTAINS(d.hint, "perf_event_paranoid is");
	T_CONTAINS(d.hint, "the u modifier");
	T_EQ_INT(prec_explain_open_error(-EOPNOTSUPP, pt, &d), -EOPNOTSUPP);
	T_CONTAINS(d.msg, "cannot pause/resume");
	T_CONTAINS(d.hint, "--emulate");
	prec_explain_open_error(-EOPNOTSUPP, tp, &d);
	T_CONTAINS(d.msg, "refused aux-action resume");
	prec_explain_open_error(-EBUSY, pt, &d);
	T_CONTAINS(d.msg, "in use");
	prec_explain_open_error(-ENOENT, tp, &d);
	T_CONTAINS(d.hint, "ptrec list");
	prec_explain_open_error(-EMFILE, NULL, &d);
	T_CONTAINS(d.hint, "ulimit -n");
	/* EINVAL for an aux_action on this kernel (which knows the field): not "too old". */
	prec_explain_open_error(-EINVAL, pt, &d);
	T_OK(!strstr(d.msg, "predates"));
	T_CONTAINS(d.msg, "aux-action");
	prec_evlist_free(el);
}

/* Default ring sizes against perf's rules and the per-CPU mlock budget. */
static void ring_defaults(void)
{
	uint64_t d, a;

	/* The stock 516 KiB limit: 512 KiB data (perf_event_mlock_kb_in_pages). */
	d = a = 0;
	prec_record_ring_defaults(true, false, 516, 4096, &d, &a);
	T_EQ_U64(d, 512 << 10);
	/* Unprivileged with a tracer: 256 KiB + 128 KiB, within 516 KiB with the control page. */
	d = a = 0;
	prec_record_ring_defaults(false, true, 516, 4096, &d, &a);
	T_EQ_U64(d, 256 << 10);
	T_EQ_U64(a, 128 << 10);
	T_OK(d + a + 4096 <= 516 << 10);
	/* Privileged with a tracer: 512 KiB + 4 MiB. */
	d = a = 0;
	prec_record_ring_defaults(true, true, 516, 4096, &d, &a);
	T_EQ_U64(d, 512 << 10);
	T_EQ_U64(a, 4 << 20);
	/* A lowered limit: the largest power of two below it, less a page. */
	d = a = 0;
	prec_record_ring_defaults(false, false, 132, 4096, &d, &a);
	T_EQ_U64(d, 128 << 10);
	d = a = 0;
	prec_record_ring_defaults(false, false, 100, 4096, &d, &a);
	T_EQ_U64(d, 64 << 10);
	/* Unknown limit: perf's 512 KiB fallback, without subtracting a page. */
	d = a = 0;
	prec_record_ring_defaults(false, false, -1, 4096, &d, &a);
	T_EQ_U64(d, 512 << 10);
	/* Tiny limit: still one page. Sizes given are kept. */
	d = a = 0;
	prec_record_ring_defaults(false, false, 4, 4096, &d, &a);
	T_EQ_U64(d, 4096);
	d = 1 << 20;
	a = 1 << 16;
	prec_record_ring_defaults(false, true, 516, 4096, &d, &a);
	T_EQ_U64(d, 1 << 20);
	T_EQ_U64(a, 1 << 16);
}

/* Refusals caused by the CPU or the ring, not by the event. */
static void cpu_and_mmap_errors(void)
{
	struct prec_diag d;

	memset(&d, 0, sizeof(d));
	T_EQ_INT(prec_explain_cpu_error(-EINVAL, 7, "0-3", "0-3", &d), -EINVAL);
	T_CONTAINS(d.msg, "CPU 7 does not exist here (CPUs 0-3)");
	T_EQ_INT(prec_explain_cpu_error(-ENODEV, 2, "0-3", "0-1,3", &d), -ENODEV);
	T_CONTAINS(d.msg, "CPU 2 is offline");
	T_OK(!strstr(d.msg, "no such event"));
	/* A CPU that is there: the event is to blame, not the CPU. */
	T_EQ_INT(prec_explain_cpu_error(-EINVAL, 1, "0-3", "0-3", &d), 0);
	T_EQ_INT(prec_explain_cpu_error(-ENODEV, -1, "0-3", "0", &d), 0);
	T_EQ_INT(prec_explain_cpu_error(-EACCES, 9, "0-3", "0-3", &d), 0);
	T_EQ_INT(prec_explain_mmap_error(-EPERM, true, 4 << 20, "516", &d), -EPERM);
	T_CONTAINS(d.msg, "locked-memory limit");
	T_CONTAINS(d.msg, "perf_event_mlock_kb is 516");
	T_EQ_INT(prec_explain_mmap_error(-ENOMEM, true, 4 << 20, "516", &d), -ENOMEM);
	T_CONTAINS(d.msg, "could not set up a 4096 KiB AUX area");
	T_OK(!strstr(d.msg, "mlock") && !strstr(d.hint, "mlock"));
	T_EQ_INT(prec_explain_mmap_error(-ENOMEM, false, 512 << 10, "516", &d), -ENOMEM);
	T_CONTAINS(d.msg, "512 KiB data ring");
}

static const struct t_case cases[] = { T(cpu_lists), T(refusals), T(ring_defaults),
				       T(cpu_and_mmap_errors) };

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}
