/* SPDX-License-Identifier: MIT */
/*
 * CoreSight trace-unit metadata, the part of a session the CoreSight decoder
 * needs besides the trace bytes.
 *
 * A CoreSight stream cannot be decoded from its bytes alone: OpenCSD needs
 * each trace unit's ID and configuration registers (TRCCONFIGR, TRCIDR0/1/2/8,
 * TRCDEVARCH for ETE), its CoreSight trace ID, and how the bytes were
 * captured (formatter frames from an ETB/ETF/ETR, frames with syncs from a
 * DSTREAM-style capture, or one unit's raw packets from TRBE). That is the
 * metadata below, one struct prec_cs_source per traced CPU. It comes from
 * perf's cs_etm AUXTRACE_INFO (prec_cs_meta_from_auxtrace_info()), from a
 * ptrec file's MACHINE etm blocks (prec_cs_meta_from_etm_blocks(), the same
 * layout) or from a snapshot directory (interop/snapshot.h). It is attached
 * to the session, which owns it:
 *
 *	prec_cs_session_attach(s, meta);          the session owns meta now
 *	ops = prec_decoder_for_session(s);        &prec_coresight_decoder
 */
#ifndef PREC_CS_META_H
#define PREC_CS_META_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "session/session.h"

struct prec_tfile_etm;

enum prec_cs_proto {
	PREC_CS_ETMV4 = 1,        /* ETMv4 instruction trace */
	PREC_CS_ETE,              /* Embedded Trace Extension (Armv9) */
};

/* How the trace bytes of a stream were captured. */
enum prec_cs_format {
	PREC_CS_FMT_FRAMED = 0,   /* 16-byte formatter frames, memory aligned (ETB/ETF/ETR) */
	PREC_CS_FMT_FSYNC,        /* formatter frames with frame syncs (DSTREAM, TPIU) */
	PREC_CS_FMT_RAW,          /* one unit's packets, unformatted (TRBE, "source_data") */
};

/* The architecture of the traced PE, as OpenCSD distinguishes it. */
enum prec_cs_arch {
	PREC_CS_ARCH_DEFAULT = 0, /* v8 for ETMv4, v8.3+ (AA64) for ETE */
	PREC_CS_ARCH_V8,
	PREC_CS_ARCH_V8R3,
	PREC_CS_ARCH_AA64,
};

/* One trace unit. Registers not known are 0 (TRCIDR1 0 means "assume v4.0"). */
struct prec_cs_source {
	int cpu;                  /* the CPU it traces: the stream key; >= 0 */
	enum prec_cs_proto proto;
	enum prec_cs_arch arch;
	enum prec_cs_format format;
	uint8_t trace_id;         /* CoreSight trace ID, 1..0x6f; 0 = unknown */
	uint32_t configr;         /* TRCCONFIGR */
	uint32_t idr0, idr1, idr2, idr8, idr9, idr10, idr11, idr12, idr13;
	uint32_t devarch;         /* TRCDEVARCH (ETE) */
	uint32_t authstatus;      /* TRCAUTHSTATUS (informational) */
	uint64_t ts_source;       /* perf's TS_SOURCE (informational) */
};

struct prec_cs_meta {
	size_t n;
	struct prec_cs_source *src;
};

/* An empty metadata set. Returns NULL on allocation failure. */
struct prec_cs_meta *prec_cs_meta_new(void);
void prec_cs_meta_free(struct prec_cs_meta *m);

/*
 * Adds (a copy of) @src. Returns 0, -EINVAL (cpu < 0, bad proto, trace id
 * outside 0..0x6f), -EEXIST (a source for that CPU exists), -ENOMEM.
 */
int prec_cs_meta_add(struct prec_cs_meta *m, const struct prec_cs_source *src);
/* The source of CPU @cpu, or NULL. */
const struct prec_cs_source *prec_cs_meta_cpu(const struct prec_cs_meta *m, int cpu);
/* The source with trace ID @id, or NULL. */
const struct prec_cs_source *prec_cs_meta_trace_id(const struct prec_cs_meta *m, uint8_t id);

/*
 * Sets the trace ID of @cpu's source (from PERF_RECORD_AUX_OUTPUT_HW_ID).
 * Returns 0, -ENOENT (no source for @cpu), -EINVAL (id not in 1..0x6f).
 */
int prec_cs_meta_set_trace_id(struct prec_cs_meta *m, int cpu, uint8_t id);
/* Sets the capture format of @cpu's source, or of all sources for cpu -1. */
int prec_cs_meta_set_format(struct prec_cs_meta *m, int cpu, enum prec_cs_format fmt);

/*
 * The trace ID in a PERF_RECORD_AUX_OUTPUT_HW_ID hw_id value of cs_etm
 * (bits 7:0; bits 63:60 are the major version, only 0 is known). Returns 0,
 * or -PREC_E_VERSION / -EINVAL (id not in 1..0x6f).
 */
int prec_cs_hw_id_trace_id(uint64_t hw_id, uint8_t *id);
/*
 * Both in one: the trace ID of @hw_id becomes @cpu's. Returns 0 or an
 * error of either call.
 */
int prec_cs_meta_apply_hw_id(struct prec_cs_meta *m, int cpu, uint64_t hw_id);

/*
 * Converts perf's cs_etm AUXTRACE_INFO priv[] (the @n u64 words after the
 * record's type field) to metadata: header versions 0, 1 and 2, ETMv4 and
 * ETE blocks. A version 2 TRCTRACEIDR with bit 31 set leaves trace_id 0 (the
 * IDs come in AUX_OUTPUT_HW_ID records: prec_cs_meta_set_trace_id()).
 * Formats start as PREC_CS_FMT_FRAMED (perf marks raw TRBE data per AUX
 * record; see prec_cs_meta_set_format()). Sets *@out (free with
 * prec_cs_meta_free()). Returns 0, -PREC_E_FORMAT (malformed: message in
 * @d), -PREC_E_VERSION (header version > 2), -EOPNOTSUPP (ETMv3/PTM blocks:
 * 32-bit Arm trace is not supported), -ENOMEM.
 */
int prec_cs_meta_from_auxtrace_info(const uint64_t *priv, size_t n, struct prec_cs_meta **out,
				    struct prec_diag *d);

/*
 * The same from a ptrec MACHINE chunk's etm blocks: each block's regs[] is
 * a perf version 1 per-CPU block (regs[CS_ETM_MAGIC] == kind, regs[CS_ETM_CPU],
 * regs[CS_ETM_NR_TRC_PARAMS], then the parameters).
 */
int prec_cs_meta_from_etm_blocks(const struct prec_tfile_etm *b, uint32_t n,
				 struct prec_cs_meta **out, struct prec_diag *d);

/*
 * Attaches @m to session @s, which takes ownership (also on failure: @m is
 * freed) and frees it with the session. Replaces what was attached before.
 * Returns 0 or -EINVAL.
 */
int prec_cs_session_attach(struct prec_session *s, struct prec_cs_meta *m);
/* The metadata attached to @s, or NULL. Valid as long as the session. */
const struct prec_cs_meta *prec_cs_session_meta(const struct prec_session *s);

#endif
