// SPDX-License-Identifier: MIT
/* cs_etm per-CPU metadata read from a fixture sysfs tree. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/etmregs.h"
#include "harness.h"
#include "base/perf_format.h"
#include "tracefile/tfile.h"

static void trcconfigr_bits(void)
{
	/* cycacc (12) -> CCI (4), timestamp (28) -> TS (11), retstack (29) -> RS (12) */
	T_EQ_U64(prec_etm_trcconfigr((1ull << 12) | (1ull << 28) | (1ull << 29)),
		 (1u << 4) | (1u << 11) | (1u << 12));
	T_EQ_U64(prec_etm_trcconfigr(1ull << 14), 1u << 6);
	/* contextid2 (15) -> VMID (7) and VMIDOPT (15): the PID is in the VMID (VHE) */
	T_EQ_U64(prec_etm_trcconfigr(1ull << 15), (1u << 7) | (1u << 15));
	T_EQ_U64(prec_etm_trcconfigr((1ull << 14) | (1ull << 15)), (1u << 6) | (1u << 7) | (1u << 15));
	T_EQ_U64(prec_etm_trcconfigr(1ull << 8), 1u << 3);
	T_EQ_U64(prec_etm_trcconfigr(0), 0);
}

static void reads_both_cpus(void)
{
	struct prec_tfile_etm *b = NULL;
	uint64_t *regs = NULL;
	int n, i, seen = 0;

	t_fixture_sysroot();
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

/* Rewrites one ID register file of the fixture tree. */
static void set_reg(int cpu, const char *file, const char *value)
{
	char p[1024];
	FILE *f;

	snprintf(p, sizeof(p), "%s/sys/bus/event_source/devices/cs_etm/cpu%d/%s",
		 getenv("PTREC_SYSROOT"), cpu, file);
	f = fopen(p, "w");
	T_OK(f != NULL);
	if (f) {
		fprintf(f, "%s\n", value);
		fclose(f);
	}
}

/* The config against each CPU's ID registers, as perf's cs_etm_validate_config(). */
static void check_config(void)
{
	const uint64_t cid1 = 1ull << 14, cid2 = 1ull << 15, ts = 1ull << 28;
	struct prec_diag d = { 0 };

	t_fixture_sysroot();
	/* the fixture's units: 32-bit context ID, VMID option with 32-bit VMID, 64-bit timestamps */
	T_EQ_INT(prec_etm_check_config(cid1 | cid2 | ts | (1ull << 12), &d), 0);
	T_EQ_INT(prec_etm_check_config(0, &d), 0);
	/* TRCIDR0.TSSIZE 0 on cpu1: no timestamps there */
	set_reg(1, "trcidr/trcidr0", "0x20000ea1");
	T_EQ_INT(prec_etm_check_config(ts, &d), -EINVAL);
	T_CONTAINS(d.msg, "CPU 1");
	T_CONTAINS(d.msg, "timestamp");
	T_CONTAINS(d.hint, "cs_etm/timestamp=0/");
	T_EQ_INT(prec_etm_check_config(cid1, &d), 0);
	/* TRCIDR2.VMIDOPT 0 on cpu0: CONTEXTIDR_EL2 cannot go in the VMID */
	set_reg(0, "trcidr/trcidr2", "0x00001088");
	memset(&d, 0, sizeof(d));
	T_EQ_INT(prec_etm_check_config(cid2, &d), -EINVAL);
	T_CONTAINS(d.msg, "CPU 0");
	T_CONTAINS(d.msg, "contextid2");
	T_EQ_INT(prec_etm_check_config(cid1, &d), 0);
	/* TRCIDR2.CIDSIZE 0: no context ID at all */
	set_reg(0, "trcidr/trcidr2", "0x20001008");
	T_EQ_INT(prec_etm_check_config(cid1, &d), -EINVAL);
	T_CONTAINS(d.msg, "contextid1");
	T_EQ_INT(prec_etm_check_config(cid2, &d), 0);
}

static const struct t_case cases[] = { T(trcconfigr_bits), T(reads_both_cpus), T(no_pmu),
				       T(check_config) };

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}
