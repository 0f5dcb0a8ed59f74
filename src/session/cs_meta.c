// SPDX-License-Identifier: MIT
/* CoreSight trace-unit metadata: see cs_meta.h. No OpenCSD call here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/perf_format.h"
#include "base/util.h"
#include "session/cs_meta.h"
#include "tracefile/tfile.h"

/* ---- metadata ---- */

#define CS_MAX_ID 0x6f
#define CS_MAX_PARAMS 64          /* more per-CPU parameters than any perf writes */
#define CS_TRACE_ID_UNUSED 0x80000000ull

struct prec_cs_meta *prec_cs_meta_new(void)
{
	return calloc(1, sizeof(struct prec_cs_meta));
}

void prec_cs_meta_free(struct prec_cs_meta *m)
{
	if (!m)
		return;
	free(m->src);
	free(m);
}

int prec_cs_meta_add(struct prec_cs_meta *m, const struct prec_cs_source *src)
{
	struct prec_cs_source *n;

	if (!m || !src || src->cpu < 0 || src->trace_id > CS_MAX_ID ||
	    (src->proto != PREC_CS_ETMV4 && src->proto != PREC_CS_ETE) ||
	    src->format > PREC_CS_FMT_RAW || src->arch > PREC_CS_ARCH_AA64)
		return -EINVAL;
	if (prec_cs_meta_cpu(m, src->cpu))
		return -EEXIST;
	if (PREC_ARRAY_RESERVE(m->src, m->n, 1))
		return -ENOMEM;
	n = m->src;
	n[m->n++] = *src;
	return 0;
}

const struct prec_cs_source *prec_cs_meta_cpu(const struct prec_cs_meta *m, int cpu)
{
	size_t i;

	for (i = 0; m && i < m->n; i++)
		if (m->src[i].cpu == cpu)
			return &m->src[i];
	return NULL;
}

const struct prec_cs_source *prec_cs_meta_trace_id(const struct prec_cs_meta *m, uint8_t id)
{
	size_t i;

	for (i = 0; m && id && i < m->n; i++)
		if (m->src[i].trace_id == id)
			return &m->src[i];
	return NULL;
}

int prec_cs_meta_set_trace_id(struct prec_cs_meta *m, int cpu, uint8_t id)
{
	struct prec_cs_source *s = (struct prec_cs_source *)prec_cs_meta_cpu(m, cpu);

	if (!id || id > CS_MAX_ID)
		return -EINVAL;
	if (!s)
		return -ENOENT;
	s->trace_id = id;
	return 0;
}

int prec_cs_meta_set_format(struct prec_cs_meta *m, int cpu, enum prec_cs_format fmt)
{
	size_t i;
	int found = 0;

	if (!m || fmt > PREC_CS_FMT_RAW)
		return -EINVAL;
	for (i = 0; i < m->n; i++) {
		if (cpu >= 0 && m->src[i].cpu != cpu)
			continue;
		m->src[i].format = fmt;
		found = 1;
	}
	return found || cpu < 0 ? 0 : -ENOENT;
}

int prec_cs_hw_id_trace_id(uint64_t hw_id, uint8_t *id)
{
	uint8_t v = hw_id & 0xff;

	if (hw_id >> 60)
		return -PREC_E_VERSION;
	if (!v || v > CS_MAX_ID)
		return -EINVAL;
	*id = v;
	return 0;
}

int prec_cs_meta_apply_hw_id(struct prec_cs_meta *m, int cpu, uint64_t hw_id)
{
	uint8_t id;
	int err = prec_cs_hw_id_trace_id(hw_id, &id);

	return err ? err : prec_cs_meta_set_trace_id(m, cpu, id);
}

/*
 * One per-CPU block of perf's layout at @blk (@avail words): header version
 * 0 has MAGIC, CPU and the parameters; later versions put the parameter
 * count after CPU. Fills @src and *@used (words consumed).
 */
static int parse_block(const uint64_t *blk, size_t avail, unsigned version, size_t index,
		       struct prec_cs_source *src, size_t *used, struct prec_diag *d)
{
	uint64_t magic, nparams;
	size_t first;
	const uint64_t *p;
	uint64_t traceidr;

	memset(src, 0, sizeof(*src));
	if (avail < 2)
		return prec_diag_set(d, -PREC_E_FORMAT, -1,
				     "cs_etm metadata ends inside the block of CPU #%zu", index);
	magic = blk[CS_ETM_MAGIC];
	if (magic == CS_ETMV3_MAGIC)
		return prec_diag_set(d, -EOPNOTSUPP, -1,
				     "ETMv3/PTM trace (32-bit Arm cores) is not supported");
	if (magic != CS_ETMV4_MAGIC && magic != CS_ETE_MAGIC)
		return prec_diag_set(d, -PREC_E_FORMAT, -1,
				     "cs_etm metadata block #%zu has an unknown magic 0x%llx",
				     index, (unsigned long long)magic);
	if (blk[CS_ETM_CPU] > 0xffff)
		return prec_diag_set(d, -PREC_E_FORMAT, -1,
				     "cs_etm metadata block #%zu names CPU %llu", index,
				     (unsigned long long)blk[CS_ETM_CPU]);
	if (version == 0) {
		if (magic != CS_ETMV4_MAGIC)
			return prec_diag_set(d, -PREC_E_FORMAT, -1,
					     "ETE metadata in a version 0 cs_etm header");
		first = 2;
		nparams = CS_ETMV4_TRCAUTHSTATUS - CS_ETMV4_TRCCONFIGR + 1;
	} else {
		if (avail < 3)
			return prec_diag_set(d, -PREC_E_FORMAT, -1,
					     "cs_etm metadata ends inside the block of CPU #%zu",
					     index);
		first = CS_ETM_COMMON_BLK_MAX_V1;
		nparams = blk[CS_ETM_NR_TRC_PARAMS];
	}
	if (nparams > CS_MAX_PARAMS || nparams > avail - first)
		return prec_diag_set(d, -PREC_E_FORMAT, -1,
				     "cs_etm metadata block #%zu claims %llu parameters, %zu words left",
				     index, (unsigned long long)nparams, avail - first);
	/* Everything up to TRCIDR2 is needed to configure a decoder. */
	if (nparams < CS_ETMV4_TRCIDR2 - CS_ETMV4_TRCCONFIGR + 1)
		return prec_diag_set(d, -PREC_E_FORMAT, -1,
				     "cs_etm metadata block #%zu has only %llu parameters", index,
				     (unsigned long long)nparams);
	p = blk + first - CS_ETMV4_TRCCONFIGR; /* p[CS_ETMV4_*] is the parameter */
#define PARAM(i) ((size_t)(i) - CS_ETMV4_TRCCONFIGR < nparams ? p[i] : 0)
	src->cpu = (int)blk[CS_ETM_CPU];
	src->proto = magic == CS_ETE_MAGIC ? PREC_CS_ETE : PREC_CS_ETMV4;
	src->configr = (uint32_t)PARAM(CS_ETMV4_TRCCONFIGR);
	traceidr = PARAM(CS_ETMV4_TRCTRACEIDR);
	src->idr0 = (uint32_t)PARAM(CS_ETMV4_TRCIDR0);
	src->idr1 = (uint32_t)PARAM(CS_ETMV4_TRCIDR1);
	src->idr2 = (uint32_t)PARAM(CS_ETMV4_TRCIDR2);
	src->idr8 = (uint32_t)PARAM(CS_ETMV4_TRCIDR8);
	src->authstatus = (uint32_t)PARAM(CS_ETMV4_TRCAUTHSTATUS);
	if (src->proto == PREC_CS_ETE) {
		src->devarch = (uint32_t)PARAM(CS_ETE_TRCDEVARCH);
		src->ts_source = PARAM(CS_ETE_TS_SOURCE);
	} else {
		src->ts_source = PARAM(CS_ETMV4_TS_SOURCE);
	}
#undef PARAM
	/* From version 2 the real IDs come in AUX_OUTPUT_HW_ID records. */
	if (!(version >= 2 && (traceidr & CS_TRACE_ID_UNUSED)) && (traceidr & 0x7f) &&
	    (traceidr & 0x7f) <= CS_MAX_ID)
		src->trace_id = traceidr & 0x7f;
	*used = first + (size_t)nparams;
	return 0;
}

int prec_cs_meta_from_auxtrace_info(const uint64_t *priv, size_t n, struct prec_cs_meta **out,
				    struct prec_diag *d)
{
	struct prec_cs_meta *m = NULL;
	struct prec_cs_source src;
	uint64_t version, ncpus;
	size_t pos, used, i;
	int err;

	*out = NULL;
	if (!priv || n < CS_HEADER_VERSION_MAX)
		return prec_diag_set(d, -PREC_E_FORMAT, -1,
				     "cs_etm AUXTRACE_INFO has %zu words, fewer than its header", n);
	version = priv[CS_HEADER_VERSION];
	if (version > 2)
		return prec_diag_set(d, -PREC_E_VERSION, -1,
				     "cs_etm AUXTRACE_INFO header version %llu is newer than this "
				     "ptdump reads (0 to 2)", (unsigned long long)version);
	ncpus = priv[CS_PMU_TYPE_CPUS] & 0xffffffffu;
	if (!ncpus || ncpus > (n - CS_HEADER_VERSION_MAX) / 2)
		return prec_diag_set(d, -PREC_E_FORMAT, -1,
				     "cs_etm AUXTRACE_INFO claims %llu CPUs in %zu words",
				     (unsigned long long)ncpus, n);
	m = prec_cs_meta_new();
	if (!m)
		return -ENOMEM;
	pos = CS_HEADER_VERSION_MAX;
	for (i = 0; i < ncpus; i++) {
		err = parse_block(priv + pos, n - pos, (unsigned)version, i, &src, &used, d);
		if (err)
			goto out;
		pos += used;
		err = prec_cs_meta_add(m, &src);
		if (err == -EEXIST) {
			err = prec_diag_set(d, -PREC_E_FORMAT, -1,
					    "cs_etm metadata lists CPU %d twice", src.cpu);
			goto out;
		}
		if (err)
			goto out;
	}
	*out = m;
	m = NULL;
	err = 0;
out:
	prec_cs_meta_free(m);
	return err;
}

int prec_cs_meta_from_etm_blocks(const struct prec_tfile_etm *b, uint32_t n,
				 struct prec_cs_meta **out, struct prec_diag *d)
{
	struct prec_cs_meta *m = NULL;
	struct prec_cs_source src;
	size_t used;
	uint32_t i;
	int err;

	*out = NULL;
	if (!b && n)
		return -EINVAL;
	m = prec_cs_meta_new();
	if (!m)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		/* kind is the low 32 bits of the block's magic. */
		if (!b[i].regs || !b[i].nregs || (uint32_t)b[i].regs[CS_ETM_MAGIC] != b[i].kind) {
			err = prec_diag_set(d, -PREC_E_FORMAT, -1,
					    "etm block #%u does not start with its kind 0x%x", i,
					    b[i].kind);
			goto out;
		}
		err = parse_block(b[i].regs, b[i].nregs, 1, i, &src, &used, d);
		if (err)
			goto out;
		if (b[i].cpu >= 0)
			src.cpu = b[i].cpu;
		err = prec_cs_meta_add(m, &src);
		if (err == -EEXIST) {
			err = prec_diag_set(d, -PREC_E_FORMAT, -1,
					    "the etm blocks list CPU %d twice", src.cpu);
			goto out;
		}
		if (err)
			goto out;
	}
	*out = m;
	m = NULL;
	err = 0;
out:
	prec_cs_meta_free(m);
	return err;
}

/* ---- the metadata lives in the session ---- */

static void meta_free(void *p)
{
	prec_cs_meta_free(p);
}

int prec_cs_session_attach(struct prec_session *s, struct prec_cs_meta *m)
{
	if (!s || !m) {
		prec_cs_meta_free(m);
		return -EINVAL;
	}
	prec_session_set_trace_meta(s, m, meta_free);
	return 0;
}

const struct prec_cs_meta *prec_cs_session_meta(const struct prec_session *s)
{
	return prec_session_trace_meta(s);
}
