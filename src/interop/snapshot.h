/* SPDX-License-Identifier: MIT */
/*
 * The CoreSight snapshot directory reader: the format that Arm's debuggers
 * and OpenCSD's trc_pkt_lister read (a snapshot.ini naming device .ini files
 * and a trace.ini), loaded into a decode session.
 *
 *	snapshot.ini   [snapshot] version=1.0; [device_list] devN=<file>.ini;
 *	               [trace] metadata=trace.ini
 *	<device>.ini   [device] name=, class=core|trace_source|..., type=
 *	               (a core: Cortex-A53, ARMv8.2-A, ...; a source: ETM4, ETE);
 *	               [regs] NAME(...)=value; [dump*] file=, address=, length=, offset=
 *	trace.ini      [trace_buffers] buffers=buffer0,...; [bufferN] name=, file=,
 *	               format=coresight|source_data|dstream_coresight;
 *	               [source_buffers] <source>=<buffer name>;
 *	               [core_trace_sources] <core>=<source>
 *
 * What the session gets:
 *   - one stream per ETMv4/ETE trace source, keyed (cpu, tid): cpu is the
 *     number at the end of its core's name (cpu_2 -> 2; else the core's
 *     position), tid is cpu + 1, a thread of the one process (pid 1) that
 *     holds all memory dumps. A formatted buffer shared by several sources
 *     is given whole to each of their streams; the decoder picks its ID.
 *   - the memory dumps as code images mapped into that process (kernel
 *     addresses as kernel text), so decoders read code through the image
 *     store as for any recording;
 *   - a machine with vendor "ARM", per-CPU streams, no timing;
 *   - the CoreSight metadata (coresight.h), attached to the session: call
 *     prec_cs_session_release(s) before prec_session_free(s).
 * Sources of other protocols (ETMv3, PTM, STM, ITM) are skipped with a note.
 *
 * File names in the .ini files must be relative and stay inside the
 * directory. Every file is size-checked before it is read; nothing in the
 * snapshot can make the reader allocate much more than the files hold: a file
 * named by several [dump] sections is read and held once.
 */
#ifndef PREC_SNAPSHOT_H
#define PREC_SNAPSHOT_H

#include <stdint.h>

#include "base/common.h"
#include "base/notes.h"
#include "session/session.h"

struct prec_snapshot_report {
	char description[128];    /* [snapshot] description, may be empty */
	unsigned nr_devices;      /* device .ini files read */
	unsigned nr_buffers;      /* trace buffers loaded */
	unsigned nr_sources;      /* trace sources turned into streams */
	unsigned nr_dumps;        /* memory dump regions loaded */
	uint64_t trace_bytes;     /* bytes of the buffers loaded */
	uint64_t dump_bytes;
	struct prec_notes notes;  /* things skipped or assumed */
};

/*
 * Loads the snapshot in directory @dir into the empty session @s, attaches
 * its CoreSight metadata and finalizes the session. @rep (may be NULL) is
 * zeroed and filled. @d gets a one-line message on failure.
 * Returns 0 or a negative error: -ENOENT/-EACCES/... (a file cannot be
 * read; the message names it), -PREC_E_FORMAT (malformed .ini, missing key,
 * bad value, unsafe file name), -EOPNOTSUPP (no ETMv4/ETE source to
 * decode), -EFBIG (a file over the size limits), -ENOMEM.
 */
int prec_snapshot_load(struct prec_session *s, const char *dir, struct prec_snapshot_report *rep,
		       struct prec_diag *d);

/*
 * Where a snapshot's files come from. read() reads file @name (a relative
 * name already checked to stay inside the snapshot) whole into a malloc'd,
 * NUL-terminated buffer of at most @max bytes (else -EFBIG, before
 * allocating), sets *@out and returns the length, or returns a negative
 * error with a message naming the file in @d.
 */
struct prec_snapshot_files {
	long long (*read)(void *ctx, const char *name, uint64_t max, char **out,
			  struct prec_diag *d);
	void *ctx;
};

/* prec_snapshot_load() with the files read through @files (tests, fuzzing). */
int prec_snapshot_load_files(struct prec_session *s, const struct prec_snapshot_files *files,
			     struct prec_snapshot_report *rep, struct prec_diag *d);

/* True if @dir looks like a snapshot directory (has a snapshot.ini). */
int prec_snapshot_probe(const char *dir);

#endif
