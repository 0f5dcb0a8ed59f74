/* SPDX-License-Identifier: MIT */
/*
 * Writes CoreSight snapshot directories: the format Arm's debuggers and
 * OpenCSD's trc_pkt_lister read. A directory holds
 *
 *	snapshot.ini   [snapshot] version 1.0, [device_list], [trace] metadata
 *	cpu_N.ini      one core per trace source (class core, type = core name),
 *	               with [dumpK] sections naming the memory images
 *	ETM_N.ini      one ETMv4 trace source (class trace_source, type ETM4)
 *	               with its [regs]: TRCCONFIGR, TRCTRACEIDR, TRCAUTHSTATUS,
 *	               TRCIDR0, TRCIDR1, TRCIDR2, TRCIDR8
 *	trace.ini      [trace_buffers], a [bufferN] per buffer, [source_buffers]
 *	               and [core_trace_sources]
 *	mem_K.bin      the memory images
 *	cstrace.bin    PREC_SNAP_FORMATTED: every source's bytes in 16-byte
 *	               CoreSight formatter frames (format=coresight), one buffer
 *	trace_N.bin    PREC_SNAP_SOURCE_DATA: each source's raw bytes in a buffer
 *	               of its own (format=source_data), buffer N for source N
 *
 * In formatted snapshots the memory images are listed once, in cpu_0.ini
 * (the decoder shares one memory map); in source_data snapshots every core
 * lists them, as each buffer is decoded on its own.
 */
#ifndef PREC_SNAPSHOT_WRITE_H
#define PREC_SNAPSHOT_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "record/etm_emulate.h"

enum prec_snap_format {
	PREC_SNAP_FORMATTED = 0, /* one buffer of formatter frames, all sources */
	PREC_SNAP_SOURCE_DATA,   /* one raw buffer per source */
};

struct prec_snap_source {
	struct prec_etm_regs regs; /* trctraceidr is the source's trace ID */
	const uint8_t *data;       /* borrowed */
	size_t size;
};

struct prec_snap_mem {
	uint64_t addr;
	const uint8_t *data;       /* borrowed */
	size_t size;
};

struct prec_snapshot {
	const char *core;          /* core type; NULL: PREC_ETM_CORE_NAME */
	const char *description;   /* NULL: none */
	enum prec_snap_format format;
	size_t nsrc;               /* 1.. */
	const struct prec_snap_source *src;
	size_t nmem;
	const struct prec_snap_mem *mem;
};

/*
 * Writes @s into directory @dir (created if missing; existing files of the
 * same names are replaced). Trace IDs must be 1..0x6f and distinct.
 * Returns 0, or -EINVAL (bad description), -errno with @diag (may be NULL).
 */
int prec_snapshot_write(const char *dir, const struct prec_snapshot *s, struct prec_diag *diag);

/*
 * Formats the sources' bytes into CoreSight formatter frames (16 bytes each,
 * memory-aligned, no frame syncs): each source's bytes in order under its
 * trace ID, sources interleaved @chunk bytes at a time (0: 256), the last
 * frame padded with trace ID 0. *@out gets a malloc'd buffer of *@size
 * bytes (a multiple of 16). Returns 0, -EINVAL or -ENOMEM.
 */
int prec_cs_frames_encode(const struct prec_snap_source *src, size_t nsrc, size_t chunk,
			  uint8_t **out, size_t *size);

/*
 * Damages a snapshot on purpose, for decoder tests: overwrites @n bytes at
 * @offset of the trace buffer number @buffer (0-based, in the order of
 * trace.ini's "buffers=" list) with @bytes. Returns 0, -ENOENT (no such
 * buffer), -ERANGE (past the end of the buffer file), or -errno.
 */
int prec_snapshot_corrupt(const char *dir, unsigned buffer, uint64_t offset, const void *bytes,
			  size_t n);

/*
 * A snapshot of a whole recording (etm_emulate.h): one source per stream,
 * the recording's memory image. @rec stays borrowed. Returns as
 * prec_snapshot_write().
 */
int prec_snapshot_write_recording(const char *dir, const struct prec_etm_config *cfg,
				  const struct prec_etm_recording *rec, enum prec_snap_format fmt,
				  struct prec_diag *diag);

#endif
