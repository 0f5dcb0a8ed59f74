/* SPDX-License-Identifier: MIT */
/*
 * Code images for the trace file: the recorder notes every executable
 * mapping the sideband reports (PERF_RECORD_MMAP2 with PROT_EXEC, or MMAP),
 * and at the end embeds each distinct file once (deduplicated by build id,
 * else by path): the whole ELF file up to 64 MiB, so its symbols travel
 * too, else the executable range that was mapped. The file then decodes on
 * another machine. With
 * references only (--no-embed) the IMAGE chunks carry the path, build id and
 * size without bytes.
 */
#ifndef PREC_EMBED_H
#define PREC_EMBED_H

#include "common.h"

struct prec_tfile_writer;
struct prec_mapset;

struct prec_mapset *prec_mapset_new(void);
void prec_mapset_free(struct prec_mapset *s);

/*
 * Looks at one perf record (header + payload); notes it if it is an
 * executable user-space mapping. Other records are ignored. Returns 0 or
 * -ENOMEM.
 */
int prec_mapset_note(struct prec_mapset *s, const void *rec, size_t size);

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
 * Writes one IMAGE per distinct noted segment: its bytes (read from the file
 * at the recorded path; "[vdso]" from this process's own vDSO, which the
 * kernel shares with every process) or, with @refs_only, references.
 * A file whose build id no longer matches the recorded one is not embedded
 * (its bytes would be the wrong code). Returns 0 or the writer's error.
 */
int prec_mapset_embed(struct prec_mapset *s, struct prec_tfile_writer *w, bool refs_only,
		      struct prec_embed_result *res);

#endif
