// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/etmregs.h"
#include "base/perf_format.h"
#include "tracefile/tfile.h"
#include "base/util.h"

/*
 * cs_etm config bits (the PMU's format) and the TRCCONFIGR bits they set, as
 * perf records them (tools/perf/arch/arm/util/cs-etm.c, cs_etmv4_get_config()).
 * contextid2 traces CONTEXTIDR_EL2 in the VMID field: VMID with VMIDOPT, and
 * decoders read the PID from the VMID only when VMIDOPT says so.
 */
static const struct {
	unsigned config_bit;
	uint64_t trcconfigr;
} cfgmap[] = {
	{ 8, 1u << 3 },                  /* branch_broadcast -> BB */
	{ 12, 1u << 4 },                 /* cycacc -> CCI */
	{ 14, 1u << 6 },                 /* contextid1 (CONTEXTIDR_EL1) -> CID */
	{ 15, (1u << 7) | (1u << 15) },  /* contextid2 (CONTEXTIDR_EL2) -> VMID, VMIDOPT */
	{ 28, 1u << 11 },                /* timestamp -> TS */
	{ 29, 1u << 12 },                /* retstack -> RS */
};

uint64_t prec_etm_trcconfigr(uint64_t config)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < PREC_ARRAY_SIZE(cfgmap); i++)
		if (config & (1ull << cfgmap[i].config_bit))
			v |= cfgmap[i].trcconfigr;
	return v;
}

static int rd(const char *dir, const char *name, uint64_t *v)
{
	char p[4096];

	if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, name) >= sizeof(p))
		return -ENAMETOOLONG;
	return prec_read_u64(p, v);
}

int prec_etm_read_sysfs(uint64_t config, struct prec_tfile_etm **blocks, uint64_t **regs)
{
	char base[4096], dir[4096];
	struct prec_tfile_etm *b = NULL;
	uint64_t *r = NULL;
	struct dirent *de;
	size_t n = 0, i;
	DIR *d;
	int err;

	*blocks = NULL;
	*regs = NULL;
	err = prec_sys_path(base, sizeof(base), "/sys/bus/event_source/devices/cs_etm");
	if (err)
		return err;
	d = opendir(base);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		uint64_t idr0, idr1, idr2, idr8, auth, devarch = 0, ts = 0;
		struct prec_tfile_etm *nb;
		uint64_t *nr, *v;
		bool ete;
		int cpu;
		char extra;

		if (sscanf(de->d_name, "cpu%d%c", &cpu, &extra) != 1 || cpu < 0)
			continue;
		if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", base, de->d_name) >= sizeof(dir))
			continue;
		if (rd(dir, "trcidr/trcidr0", &idr0) || rd(dir, "trcidr/trcidr1", &idr1) ||
		    rd(dir, "trcidr/trcidr2", &idr2) || rd(dir, "trcidr/trcidr8", &idr8) ||
		    rd(dir, "mgmt/trcauthstatus", &auth))
			continue;
		rd(dir, "mgmt/trcdevarch", &devarch);
		rd(dir, "ts_source", &ts);
		/* TRCDEVARCH.ARCHVER (bits 15:12) is 5 for ETE. */
		ete = ((devarch >> 12) & 0xf) >= 5;
		nb = realloc(b, (n + 1) * sizeof(*b));
		if (!nb) {
			err = -ENOMEM;
			break;
		}
		b = nb;
		nr = realloc(r, (n + 1) * CS_ETE_PRIV_MAX * sizeof(*r));
		if (!nr) {
			err = -ENOMEM;
			break;
		}
		r = nr;
		v = r + n * CS_ETE_PRIV_MAX;
		memset(v, 0, CS_ETE_PRIV_MAX * sizeof(*v));
		v[CS_ETM_MAGIC] = ete ? CS_ETE_MAGIC : CS_ETMV4_MAGIC;
		v[CS_ETM_CPU] = (uint64_t)cpu;
		v[CS_ETM_NR_TRC_PARAMS] = (ete ? CS_ETE_PRIV_MAX : CS_ETMV4_PRIV_MAX) - CS_ETM_COMMON_BLK_MAX_V1;
		v[CS_ETMV4_TRCCONFIGR] = prec_etm_trcconfigr(config);
		v[CS_ETMV4_TRCTRACEIDR] = PREC_CS_TRACE_ID_UNUSED;
		v[CS_ETMV4_TRCIDR0] = idr0;
		v[CS_ETMV4_TRCIDR1] = idr1;
		v[CS_ETMV4_TRCIDR2] = idr2;
		v[CS_ETMV4_TRCIDR8] = idr8;
		v[CS_ETMV4_TRCAUTHSTATUS] = auth;
		if (ete) {
			v[CS_ETE_TRCDEVARCH] = devarch;
			v[CS_ETE_TS_SOURCE] = ts;
		} else {
			v[CS_ETMV4_TS_SOURCE] = ts;
		}
		b[n].cpu = cpu;
		b[n].kind = (uint32_t)(ete ? CS_ETE_MAGIC : CS_ETMV4_MAGIC);
		b[n].nregs = ete ? CS_ETE_PRIV_MAX : CS_ETMV4_PRIV_MAX;
		b[n].regs = NULL;
		n++;
	}
	closedir(d);
	if (err) {
		free(b);
		free(r);
		return err;
	}
	/* Point the blocks into the register array now that it stopped moving. */
	for (i = 0; i < n; i++)
		b[i].regs = r + i * CS_ETE_PRIV_MAX;
	*blocks = b;
	*regs = r;
	return (int)n;
}

/* One unmet need of @config on the trace unit whose registers are @v, or NULL. */
static const char *etm_lacks(uint64_t config, const uint64_t *v)
{
	uint64_t idr0 = v[CS_ETMV4_TRCIDR0], idr2 = v[CS_ETMV4_TRCIDR2];

	/* TRCIDR2.CIDSIZE (bits 9:5) 4: a 32-bit context ID */
	if ((config & (1ull << 14)) && ((idr2 >> 5) & 0x1f) != 4)
		return "contextid1";
	/* TRCIDR2.VMIDOPT (bits 30:29) set and VMIDSIZE (bits 14:10) at least 32 bits */
	if ((config & (1ull << 15)) && (!((idr2 >> 29) & 3) || ((idr2 >> 10) & 0x1f) < 4))
		return "contextid2";
	/* TRCIDR0.TSSIZE (bits 28:24): 0 means no global timestamps */
	if ((config & (1ull << 28)) && !((idr0 >> 24) & 0x1f))
		return "timestamp";
	return NULL;
}

int prec_etm_check_config(uint64_t config, struct prec_diag *d)
{
	struct prec_tfile_etm *b = NULL;
	uint64_t *regs = NULL;
	int n = prec_etm_read_sysfs(config, &b, &regs), i, err = 0;

	for (i = 0; i < n; i++) {
		const char *term = etm_lacks(config, b[i].regs);

		if (term) {
			err = prec_diag_set(d, -EINVAL, -1, "the trace unit of CPU %d cannot do cs_etm's %s",
					    b[i].cpu, term);
			prec_diag_hint(d, "drop it: cs_etm/%s=0/", term);
			break;
		}
	}
	if (n < 0)
		err = prec_diag_set(d, n, -1, "cannot read the cs_etm trace units in sysfs: %s",
				    prec_strerror(n));
	free(b);
	free(regs);
	return err;
}
