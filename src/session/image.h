/* SPDX-License-Identifier: MIT */
/*
 * The image store: the code of every traced address space over time.
 *
 * Built from a finalized session's sideband timeline. Each process has a
 * series of address spaces ("generations"): an mmap adds a mapping from its
 * time on, an exec (COMM with the exec flag) starts from an empty space, a
 * fork (new pid) starts from a copy of the parent's space, threads share
 * their process's space. Kernel text is part of every space.
 *
 * The bytes of a mapping come from, in order: code images embedded in the
 * session (matched by build id, else by path), the file on disk under the
 * session's symfs root when its build id matches the recording's (a
 * mismatching file is never used: a warning is added to the session), and for
 * kernel addresses the session's kernel text. The source of every mapping of
 * a traced process (one with a thread that has a stream; all of them with
 * per-CPU streams) is found when the store is built, so the warnings about
 * missing and mismatching files (one per file) are in the session before
 * anything is decoded; other mappings warn when they are first used.
 *
 * libipt sees an address space as a pt_image whose sections live in one
 * shared image section cache (so the block decoder can use its block cache).
 * Embedded bytes are written once into a memfd and added to the cache as
 * file sections of /proc/self/fd/N: libipt 2.0's cache only holds file
 * sections, and a read-memory callback would bypass the block cache and cost
 * a call per instruction fetch.
 */
#ifndef PREC_IMAGE_H
#define PREC_IMAGE_H

#include <stdint.h>
#include <stddef.h>

#include "session/session.h"
#include "base/symtab.h"

struct prec_images;
struct prec_aspace;
struct prec_dso;
struct pt_image;
struct pt_image_section_cache;

struct prec_map {
	uint64_t start, end;      /* [start, end) */
	uint64_t pgoff;           /* file offset of start */
	struct prec_dso *dso;
};

/* What an address resolves to; fields are NULL/0 where unknown. */
struct prec_loc {
	const struct prec_map *map;
	const char *dso;          /* the mapped path, "[kernel.kallsyms]", or NULL */
	const struct prec_sym *sym;
	uint64_t symoff;          /* offset of the address into sym */
	uint64_t vaddr;           /* the address in the file's own (ELF) space */
	struct prec_symtab *symtab;
};

/*
 * Builds the store for session @s once its model is built (called by
 * prec_session_finalize(); the session owns the result). Returns 0 or a
 * negative error.
 */
int prec_images_new(struct prec_session *s, struct prec_images **out);
void prec_images_free(struct prec_images *im);

/*
 * The address space of process @pid at perf time @time: the generation in
 * effect then, or the first one when @time precedes them all. At the very
 * time of an exec, the space of that instant: the new program's mappings
 * over the old program's, since timestamps are lower bounds and both the
 * last instructions before execve and the first ones after it can carry
 * the exec's time (its end is @time + 1). An unknown pid (or -1) gives the
 * kernel-only space. Never NULL; owned by the store.
 */
struct prec_aspace *prec_images_aspace(struct prec_images *im, int pid, uint64_t time);
/*
 * The same, and the times [*@from, *@until) over which prec_images_aspace()
 * gives that same space for @pid (callers cache it).
 */
struct prec_aspace *prec_images_aspace_span(struct prec_images *im, int pid, uint64_t time,
					    uint64_t *from, uint64_t *until);
/* The last answer of prec_images_aspace_span(), for prec_images_aspace_cached(). */
struct prec_aspace_cache {
	struct prec_aspace *as;   /* NULL: none (so a zeroed cache is empty) */
	int pid;
	uint64_t from, until;
};
/* prec_images_aspace() through @c: the span's answer while @pid and @time stay in it. */
struct prec_aspace *prec_images_aspace_cached(struct prec_images *im,
					      struct prec_aspace_cache *c, int pid,
					      uint64_t time);
/*
 * A number for space @as that names it in any store built from the same
 * trace (part files of ptdump --shard carry it); UINT64_MAX when @as is
 * not of @im. prec_images_aspace_by_id() is the way back (*@ok false for
 * an id that names nothing; 0 names NULL).
 */
uint64_t prec_images_aspace_id(const struct prec_images *im, const struct prec_aspace *as);
struct prec_aspace *prec_images_aspace_by_id(struct prec_images *im, uint64_t id, bool *ok);
int prec_aspace_pid(const struct prec_aspace *as);
/* The time this generation ends (the next one's start), or UINT64_MAX. */
uint64_t prec_aspace_end(const struct prec_aspace *as);

/* The mapping holding @addr (user or kernel), or NULL. */
const struct prec_map *prec_aspace_find(const struct prec_aspace *as, uint64_t addr);
/* The mapped path of a dso ("[kernel.kallsyms]" for the kernel). */
const char *prec_dso_path(const struct prec_dso *dso);

/*
 * Copies up to @len code bytes at @addr into @buf. Returns the number of
 * bytes available contiguously from @addr (0 when none).
 */
size_t prec_aspace_read(struct prec_aspace *as, uint64_t addr, void *buf, size_t len);

/* Resolves @addr to mapping, dso, symbol (symbol tables load lazily). */
void prec_aspace_resolve(struct prec_aspace *as, uint64_t addr, struct prec_loc *loc);

/*
 * The name of an address no symbol covers (@loc from prec_aspace_resolve()
 * with loc->sym NULL): the object's file name and the offset in it,
 * "gzip+0x3f10", the offset being the address in the file's own ELF space
 * (what objdump and addr2line take) or, where the file is not at hand, the
 * file offset. Writes it to @buf (NUL-terminated, cut to @size) and returns
 * its length; 0 and an empty @buf for kernel or unmapped addresses.
 */
size_t prec_loc_objoff(const struct prec_loc *loc, char *buf, size_t size);

/*
 * The libipt image of @as (built on first use, owned by the store), or NULL
 * on allocation failure.
 */
struct pt_image *prec_aspace_pt_image(struct prec_aspace *as);
/*
 * A new libipt image of @as (the caller frees it) whose sections are in
 * @isc, an image section cache from prec_iscache_new() (the caller frees
 * it with pt_iscache_free() after the images): a decoder thread with a
 * cache of its own shares no section, and so no section lock, with the
 * others. NULL on allocation failure.
 */
struct pt_image *prec_aspace_pt_image_in(struct prec_aspace *as,
					 struct pt_image_section_cache *isc);
struct pt_image_section_cache *prec_iscache_new(void);
struct pt_image_section_cache *prec_images_iscache(struct prec_images *im);

/* The symbol table of the kernel (from kallsyms), or NULL. */
struct prec_symtab *prec_images_kernel_symtab(struct prec_images *im);

/* True for addresses in the upper (kernel) half of the x86-64 space. */
static inline int prec_is_kernel_addr(uint64_t addr)
{
	return addr >= 0xffff800000000000ull;
}

#endif
