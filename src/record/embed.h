/* SPDX-License-Identifier: MIT */
/*
 * Code images for the trace file: the recorder notes every executable
 * mapping the sideband reports (PERF_RECORD_MMAP2 with PROT_EXEC, or MMAP),
 * and embeds each distinct file once, as soon as it is noted (a thread of
 * its own, prec_mapset_start()) or else at the end (deduplicated by build id,
 * else by path): the whole ELF file up to 64 MiB, so its symbols travel
 * too, else the executable range that was mapped. The file then decodes on
 * another machine. With
 * references only (--no-embed) the IMAGE chunks carry the path, build id and
 * size without bytes.
 */
#ifndef PREC_EMBED_H
#define PREC_EMBED_H

#include "base/common.h"

struct prec_tfile_writer;
struct prec_mapset;

struct prec_mapset *prec_mapset_new(void);
void prec_mapset_free(struct prec_mapset *s);

/*
 * Looks at one perf record (header + payload); notes it if it is an
 * executable user-space mapping, or ptrec's record of a signal that killed
 * the workload. Other records are ignored. Returns 0 or
 * -ENOMEM.
 */
int prec_mapset_note(struct prec_mapset *s, const void *rec, size_t size);

/*
 * How the workload's own process died, when a PREC_RECORD_SIGNAL record (tracefile/tfile.h)
 * was noted: "killed by SIGSEGV in crash(), called from mid()". NULL if none.
 */
const char *prec_mapset_death(const struct prec_mapset *s);
/*
 * Likewise for the processes the workload started (PREC_SIGREC_DESCENDANT):
 * how the first one died, and into *@n how many were killed. NULL if none.
 */
const char *prec_mapset_child_death(const struct prec_mapset *s, unsigned *n);

/* The time of the last PERF_RECORD_AUX noted (0 if none): trace was handed over up to then. */
uint64_t prec_mapset_aux_time(const struct prec_mapset *s);

/* Number of distinct mappings noted. */
size_t prec_mapset_count(const struct prec_mapset *s);

struct prec_embed_result {
	unsigned embedded;      /* segments whose bytes went into the file */
	unsigned references;    /* segments recorded by reference only */
	unsigned missing;       /* files that could not be read (deleted, no access) */
	unsigned mismatched;    /* files whose build id differs from the recorded one */
	uint64_t bytes;         /* image bytes embedded */
	char first_problem[256];/* describes the first missing/mismatched file */
};

/*
 * Starts embedding each new distinct mapping into @w as soon as it is noted,
 * in a thread of its own, so that a file cut at any point holds the code
 * its trace needs (the writer holds trace chunks back while an image is
 * pending: prec_tfile_writer_hold()). The bytes come through
 * /proc/PID/map_files while the process lives, else from the path, and
 * only if the build id still matches. Returns 0 or -errno.
 */
int prec_mapset_start(struct prec_mapset *s, struct prec_tfile_writer *w, bool refs_only);
/* Lets the embedder finish what it was given and waits for it (before the writer goes). */
void prec_mapset_stop(struct prec_mapset *s);

/*
 * Where "[vdso]" comes from: @fn gives the traced system's vDSO image
 * (malloc'd bytes), or fails, and this process's own (the host kernel's) is
 * taken. Before prec_mapset_start().
 */
void prec_mapset_vdso_from(struct prec_mapset *s, int (*fn)(void *ctx, void **bytes, size_t *n),
			   void *ctx);

/*
 * Stops the embedder (after what it was given) and writes one IMAGE per
 * distinct noted segment it did not write: its bytes (read from the file
 * at the recorded path; "[vdso]" from this process's own vDSO, which the
 * kernel shares with every process) or, with @refs_only, references.
 * A file whose build id no longer matches the recorded one is not embedded
 * (its bytes would be the wrong code). Returns 0 or the writer's error.
 */
int prec_mapset_embed(struct prec_mapset *s, struct prec_tfile_writer *w, bool refs_only,
		      struct prec_embed_result *res);
/* How many of the noted segments have been handled so far, of how many (any thread). */
void prec_mapset_progress(struct prec_mapset *s, size_t *done, size_t *total);

#endif
