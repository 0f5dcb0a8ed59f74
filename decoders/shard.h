/* SPDX-License-Identifier: MIT */
/*
 * Part files: decoding a trace in shards (ptdump --shard K/N, --merge).
 *
 * The Intel PT decoder cuts every stream at PSBs into parts as for -j
 * (intel_pt.c, "parallel decoding"); shard K of N decodes its share of
 * those parts (whole parts, balanced by trace bytes over all streams) and
 * writes, for each, the decoder state it started from and ended with and
 * its events. --merge hands the decoders the parts back (decoder option
 * shards): a stream's decoder takes a part's events only when the state
 * the part started from is the one the part before ended with, and decodes
 * the part again from the trace otherwise, so the output is that of one
 * pass whatever the parts hold.
 *
 * The file (native byte order, checked): a header (struct shard_head in
 * shard.c), the parts, and a trailer with their count and the CRC-32C of
 * all bytes before it. A part holds what struct prec_shard_part does, its
 * events compressed with zstd (they take tens of bytes per trace byte, and
 * compress about twentyfold).
 */
#ifndef PREC_SHARD_H
#define PREC_SHARD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/common.h"

/* The words of a decoder state (intel_pt.c, struct carry) in a part file. */
#define PREC_CARRY_WORDS 32

/* What a part file is of: the same for all shards of one decode. */
struct prec_shard_plan {
	uint64_t trace_size;      /* the trace file's size and CRC-32C */
	uint32_t trace_crc;
	uint32_t n;               /* shards in all */
	uint64_t window;          /* --buffer (decoder option window; 0: default) */
	uint32_t streams_crc;     /* the session's streams (prec_shard_streams_id()) */
};

struct prec_shard_part {
	uint32_t stream, index;   /* the stream (session order) and its part */
	uint32_t kind;            /* intel_pt.c enum part_kind */
	bool decoded;             /* events from state entry (else: none, decode it) */
	int32_t err;              /* the part's decode ended with this error */
	uint64_t seg, lo, hi;     /* the cut, as intel_pt.c plans it */
	uint64_t entry[PREC_CARRY_WORDS], exit[PREC_CARRY_WORDS];
	const uint8_t *ev;        /* the serialized events (intel_pt.c part_put) */
	uint64_t nev;
	const void *full;         /* nfull whole struct prec_tev */
	uint64_t nfull;
	/* loaded: ev and full, compressed (prec_shard_part_read()); written: NULL */
	const void *z;
	uint64_t zlen;
};

/* Writing one shard's file. */
struct prec_shard_out {
	FILE *f;
	uint32_t crc;
	uint64_t nparts;
	int err;                  /* the first write error (-errno) */
};

/* The CRC-32C and size of the file @path: 0 or a negative error (said in @d). */
int prec_shard_file_id(const char *path, struct prec_shard_plan *plan, struct prec_diag *d);

/*
 * A CRC of the streams of @s as the decoders see them (count, sizes,
 * segments, CPU, thread): the same streams in shard and merge, whatever
 * else (--snapshot-index) chose them.
 */
struct prec_session;
uint32_t prec_shard_streams_id(const struct prec_session *s);

void prec_shard_out_begin(struct prec_shard_out *o, FILE *f, const struct prec_shard_plan *plan,
			  uint32_t k);
void prec_shard_out_part(struct prec_shard_out *o, const struct prec_shard_part *p);
/* The trailer, and flushes: 0 or the first write error. */
int prec_shard_out_end(struct prec_shard_out *o);

/* The parts of all shards, for --merge. */
struct prec_shards;

/*
 * Loads part files @paths (@n of them), which must be all N shards of the
 * plan @want (trace_size, trace_crc, window; n is taken from the files),
 * each once. Returns 0 or a negative error, said in @d.
 */
int prec_shards_load(const char *const *paths, size_t n, const struct prec_shard_plan *want,
		     struct prec_shards **out, struct prec_diag *d);
void prec_shards_free(struct prec_shards *sh);
/* N: the shards the parts were cut for. */
uint32_t prec_shards_n(const struct prec_shards *sh);
/*
 * Counts a part of a merge: taken from a shard, or decoded again (@taken
 * false); prec_shards_counts() gives the counts (ptdump -v says them).
 */
void prec_shards_count(struct prec_shards *sh, bool taken);
void prec_shards_counts(const struct prec_shards *sh, uint64_t *taken, uint64_t *redone);
/*
 * The events of loaded part @p: its event bytes (nev) into @ev, its whole
 * events (nfull) into @full. Returns 0, or -EINVAL when they do not
 * decompress to those sizes.
 */
int prec_shard_part_read(const struct prec_shard_part *p, uint8_t *ev, void *full);
/* Part @index of stream @stream, or NULL when no shard has it. */
const struct prec_shard_part *prec_shards_find(const struct prec_shards *sh, uint32_t stream,
					       uint32_t index);

/*
 * Decodes parts of Intel PT session @s as shard @k (1-based) of plan->n,
 * into @o (intel_pt.c). Returns 0 or a negative error.
 */
struct prec_session;
struct prec_decoder_opts;
int prec_ipt_shard(struct prec_session *s, const struct prec_decoder_opts *opts,
		   const struct prec_shard_plan *plan, uint32_t k, struct prec_shard_out *o);

/*
 * The parts that -j decodes of this process's Intel PT streams so far
 * (intel_pt.c): taken as a worker decoded them, and decoded again in order
 * (their warm-up did not reach the state one pass has at their cut, as
 * for every segment's first part after a gap). A stream's first part,
 * decoded from the start, is neither.
 */
void prec_ipt_par_counts(uint64_t *taken, uint64_t *redone);

#endif
