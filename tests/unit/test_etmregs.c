// SPDX-License-Identifier: MIT
/* cs_etm per-CPU metadata read from a fixture sysfs tree. */
#include <stdio.h>
#include <stdlib.h>

#include "etmregs.h"
#include "harness.h"
#include "perf_format.h"
#include "tfile.h"

static void fixture(void)
{
	char cmd[1024];
	const char *ptrec = getenv("PTREC");

	if (!ptrec)
		t_skip("PTREC is not set (run through make check)");
	snprintf(cmd, sizeof(cmd), "PTREC=%s %s/tests/fixtures/mksysroot.sh %s/root >/dev/null",
		 ptrec, getenv("PTREC_TOP") ? getenv("PTREC_TOP") : ".", t_tmpdir());
	if (system(cmd))
		t_skip("cannot build the fixture tree");
	snprintf(cmd, sizeof(cmd), "%s/root", t_tmpdir());
	setenv("PTREC_SYSROOT", cmd, 1);
}

static void trcconfigr_bits(void)
{
	/* cycacc (12) -> CCI (4), timestamp (28) -> TS (11), retstack (29) -> RS (12) */
	T_EQ_U64(prec_etm_trcconfigr((1ull << 12) | (1ull << 28) | (1ull << 29)),
		 (1u << 4) | (1u << 11) | (1u << 12));
	T_EQ_U64(prec_etm_trcconfigr(1ull << 14), 1u << 6);
	T_EQ_U64(prec_etm_trcconfigr(1ull << 8), 1u << 3);
	T_EQ_U64(prec_etm_trcconfigr(0), 0);
}

static void reads_both_cpus(void)
{
	struct prec_tfile_etm *b = NULL;
	uint64_t *regs = NULL;
	int n, i, seen = 0;

	fixture();
	n = prec_etm_read_sysfs(1ull << 28, &b, &regs);
	T_EQ_INT(n, 2);
	for (i = 0; i < n; i++) {
		const uint64_t *v = b[i].regs;

		T_EQ_U64(v[CS_ETM_CPU], (uint64_t)b[i].cpu);
		T_EQ_U64(v[CS_ETMV4_TRCCONFIGR], 1u << 11);
		T_EQ_U64(v[CS_ETMV4_TRCIDR0], 0x28000ea1);
		T_EQ_U64(v[CS_ETMV4_TRCIDR2], 0x20001088);
		T_EQ_U64(v[CS_ETMV4_TRCAUTHSTATUS], 0xcc);
		T_EQ_U64(v[CS_ETMV4_TRCTRACEIDR], PREC_CS_TRACE_ID_UNUSED);
		if (b[i].cpu == 0) {
			/* TRCDEVARCH.ARCHVER 4: ETMv4, no DEVARCH slot */
			T_EQ_U64(v[CS_ETM_MAGIC], CS_ETMV4_MAGIC);
			T_EQ_INT(b[i].nregs, CS_ETMV4_PRIV_MAX);
			T_EQ_U64(v[CS_ETMV4_TRCIDR1], 0x4100f423);
			T_EQ_U64(v[CS_ETMV4_TS_SOURCE], 1);
			seen |= 1;
		} else {
			T_EQ_U64(v[CS_ETM_MAGIC], CS_ETE_MAGIC);
			T_EQ_INT(b[i].nregs, CS_ETE_PRIV_MAX);
			T_EQ_U64(v[CS_ETE_TRCDEVARCH], 0x47725a13);
			T_EQ_U64(v[CS_ETE_TS_SOURCE], 1);
			seen |= 2;
		}
		T_EQ_U64(v[CS_ETM_NR_TRC_PARAMS], b[i].nregs - CS_ETM_COMMON_BLK_MAX_V1);
	}
	T_EQ_INT(seen, 3);
	free(b);
	free(regs);
}

static void no_pmu(void)
{
	struct prec_tfile_etm *b = NULL;
	uint64_t *regs = NULL;
	char dir[256];

	snprintf(dir, sizeof(dir), "%s/empty", t_tmpdir());
	setenv("PTREC_SYSROOT", dir, 1);
	T_EQ_INT(prec_etm_read_sysfs(0, &b, &regs), 0);
	T_OK(b == NULL);
}

static const struct t_case cases[] = { T(trcconfigr_bits), T(reads_both_cpus), T(no_pmu) };

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}
