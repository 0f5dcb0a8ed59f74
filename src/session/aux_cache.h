// SPDX-License-Identifier: MIT
#ifndef PREC_AUX_CACHE_H
#define PREC_AUX_CACHE_H

#include "session/session.h"
#include "tracefile/tfile.h"

/*
 * The AUX chunks of a trace file, decompressed once for every reader of the
 * session: a source (struct prec_aux_source) over the file's chunks that
 * keeps the last few it decompressed. Readers that want the same chunk (the
 * parts of a parallel decode, which are smaller than a chunk, and the
 * windows of one decode, which overlap chunks) share one copy; a chunk is
 * decompressed by the first reader that asks, while the others wait for it.
 *
 * At most PREC_AUX_CACHE_SLOTS chunks stay, and of those that no reader
 * holds only up to PREC_AUX_CACHE_BYTES of buffers (stored and raw bytes,
 * three of the 1 MiB chunks ptrec writes): memory stays bounded by the
 * chunks in use plus that much. When every slot is in use a reader
 * decompresses into buffers of its own, as without the cache.
 */
#define PREC_AUX_CACHE_SLOTS 8
#define PREC_AUX_CACHE_BYTES (4u << 20)

/*
 * Sets @s's AUX source to the chunks of @r through a new cache. The session
 * frees the cache (prec_session_free()); @r must outlive the session's
 * readers. Returns 0 or -ENOMEM.
 */
int prec_aux_cache_attach(struct prec_session *s, struct prec_tfile_reader *r);

#endif
