/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the library modules. */
#ifndef PREC_UTIL_H
#define PREC_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "base/common.h"

/* A growable byte/string buffer. Zero-initialise before use. */
struct prec_buf {
	char *data;
	size_t len;
	size_t cap;
};

int prec_buf_reserve(struct prec_buf *b, size_t extra);
int prec_buf_append(struct prec_buf *b, const void *p, size_t n);
int prec_buf_printf(struct prec_buf *b, const char *fmt, ...) prec_printf(2, 3);
int prec_buf_vprintf(struct prec_buf *b, const char *fmt, va_list ap);
void prec_buf_reset(struct prec_buf *b);
void prec_buf_free(struct prec_buf *b);

/*
 * Reads a whole (small) file into a NUL-terminated malloc'd string, trailing
 * newline stripped. Returns its length, or a negative errno.
 */
long prec_read_text(const char *path, char **out);
/* Reads a file holding one integer (decimal, or 0x hex). */
int prec_read_u64(const char *path, uint64_t *out);
/* Writes @s to the file at @path (for sysfs/tracefs control files). */
int prec_write_text(const char *path, const char *s);

/*
 * Parses an unsigned integer, decimal or 0x-hex (or 0-octal when @base is 0),
 * the whole string. Returns 0 or -EINVAL / -ERANGE.
 */
int prec_parse_u64(const char *s, int base, uint64_t *out);

/* Levenshtein distance, capped at @max+1 (for "did you mean"). */
unsigned prec_edit_distance(const char *a, const char *b, unsigned max);

/*
 * "Did you mean": keeps the @keep (at most PREC_NEAR_KEEP) candidates nearest
 * to @want among those within edit distance @max. Nearer is better; at equal
 * distance a swap of letters (same letters, same length) beats other edits,
 * then the nearer length wins, then the first one offered. Candidates equal to
 * @want, offered twice, or longer than the slots are ignored.
 *
 *	struct prec_near n;
 *	prec_near_init(&n, "cylces", 2, 1);
 *	for (...) prec_near_add(&n, name);
 *	if (prec_near_get(&n, 0)) hint("did you mean '%s'?", prec_near_get(&n, 0));
 */
#define PREC_NEAR_KEEP 3
struct prec_near {
	const char *want;
	unsigned max;
	size_t keep;
	struct {
		char name[128];
		unsigned score;
	} best[PREC_NEAR_KEEP];
};

void prec_near_init(struct prec_near *n, const char *want, unsigned max, size_t keep);
void prec_near_add(struct prec_near *n, const char *cand);
/* The @i-th nearest candidate (0 = nearest), or NULL if there are fewer. */
const char *prec_near_get(const struct prec_near *n, size_t i);

/*
 * Lower-case hex of @n bytes into @dst, which holds 2 * @n + 1 chars (build
 * ids as perf and the build-id cache spell them).
 */
void prec_hex(char *dst, const void *p, size_t n);

/*
 * Finds the program @name as execvp(3) does: a name with a slash is taken as
 * is (it must exist; whether it may run is the caller's check); a bare name is
 * looked up in each $PATH entry in turn, an empty entry meaning the current
 * directory, and the first regular executable file wins. An unset PATH means
 * /usr/local/bin:/usr/bin:/bin. Writes the path to @out. Returns 0, -ENOENT,
 * -ENAMETOOLONG (a slashed name too long for @out) or the errno of access(2).
 */
int prec_find_exec(const char *name, char *out, size_t size);

/*
 * The root that sysfs, tracefs and procfs paths are resolved under: the
 * PTREC_SYSROOT environment variable, or "" for the real system. Tests point it
 * at fixture trees. prec_sys_path() formats "<root><path>" into @buf.
 */
const char *prec_sysroot(void);
int prec_sys_path(char *buf, size_t size, const char *fmt, ...) prec_printf(3, 4);

/*
 * Native-endian loads from possibly unaligned memory (perf records as the
 * kernel wrote them). The trace file's own little-endian fields have theirs
 * in tfile_read.c.
 */
static inline uint16_t prec_rd16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t prec_rd32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t prec_rd64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Monotonic clock in nanoseconds. */
uint64_t prec_now_ns(void);

/* write(2) the whole buffer, retrying on EINTR and short writes. */
int prec_write_full(int fd, const void *p, size_t n);
/* read(2) exactly n bytes; returns bytes read (short at EOF) or -errno. */
long prec_read_full(int fd, void *p, size_t n);

/* CRC-32C (Castagnoli) of @n bytes, continuing from @crc (start with 0). */
uint32_t prec_crc32c(uint32_t crc, const void *p, size_t n);
/*
 * The same in portable code. prec_crc32c uses the CPU's CRC-32C instructions
 * where it has them (SSE4.2 on x86-64, the ARMv8 CRC32 extension on aarch64).
 */
uint32_t prec_crc32c_sw(uint32_t crc, const void *p, size_t n);
/* True when prec_crc32c runs on the CPU's CRC-32C instructions. */
bool prec_crc32c_has_hw(void);

/* The name of signal @sig into @buf: "SIGSEGV", or "signal N" for one without a name. */
const char *prec_signal_name(int sig, char *buf, size_t size);

/*
 * A memory file (memfd) of @size bytes named @name, mapped shared into *@map
 * (sparse: only pages touched take memory). Returns its descriptor
 * (close-on-exec) or -errno. prec_memfd_unmap() undoes the mapping.
 */
int prec_memfd_shared(const char *name, size_t size, void **map);
/* Maps the first @size bytes of memory file @fd (which others may have grown) to read. 0 or -errno. */
int prec_memfd_map_read(int fd, size_t size, const void **map);
void prec_memfd_unmap(const void *map, size_t size);

#endif
