/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the library modules. */
#ifndef PREC_UTIL_H
#define PREC_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "common.h"

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
/* The same in portable code (prec_crc32c uses SSE4.2 where the CPU has it). */
uint32_t prec_crc32c_sw(uint32_t crc, const void *p, size_t n);

#endif
