// SPDX-License-Identifier: MIT
/* The recorder's pure parts: CPU lists and the messages for the kernel's refusals. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "evspec.h"
#include "harness.h"
#include "record.h"

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
	char cmd[1024];
	struct prec_diag d;
	const char *ptrec = getenv("PTREC");

	if (!ptrec)
		t_skip("PTREC is not set (run through make check)");
	snprintf(cmd, sizeof(cmd), "PTREC=%s %s/tests/fixtures/mksysroot.sh %s/root >/dev/null",
		 ptrec, getenv("PTREC_TOP") ? getenv("PTREC_TOP") : ".", t_tmpdir());
	if (system(cmd))
		t_skip("cannot build the fixture tree");
	snprintf(cmd, sizeof(cmd), "%s/root", t_tmpdir());
	setenv("PTREC_SYSROOT", cmd, 1);
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

static const struct t_case cases[] = { T(cpu_lists), T(refusals) };

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}
