// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

int prec_buf_reserve(struct prec_buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (extra > SIZE_MAX - b->len - 1)
		return -ENOMEM;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int prec_buf_append(struct prec_buf *b, const void *p, size_t n)
{
	int err = prec_buf_reserve(b, n);

	if (err)
		return err;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int prec_buf_vprintf(struct prec_buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	int n, err;

	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return -EINVAL;
	err = prec_buf_reserve(b, (size_t)n);
	if (err)
		return err;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int prec_buf_printf(struct prec_buf *b, const char *fmt, ...)
{
	va_list ap;
	int err;

	va_start(ap, fmt);
	err = prec_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return err;
}

void prec_buf_reset(struct prec_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void prec_buf_free(struct prec_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

long prec_read_text(const char *path, char **out)
{
	struct prec_buf b = { 0 };
	char tmp[4096];
	long n;
	int fd, err = 0;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		n = read(fd, tmp, sizeof(tmp));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		err = prec_buf_append(&b, tmp, (size_t)n);
		if (err)
			break;
		if (b.len > (64u << 20)) {
			err = -EFBIG;
			break;
		}
	}
	close(fd);
	if (!err && !b.data)
		err = prec_buf_append(&b, "", 0);
	if (err) {
		prec_buf_free(&b);
		return err;
	}
	while (b.len && (b.data[b.len - 1] == '\n'))
		b.data[--b.len] = '\0';
	*out = b.data;
	return (long)b.len;
}

int prec_read_u64(const char *path, uint64_t *out)
{
	char *s;
	long n = prec_read_text(path, &s);
	int err;

	if (n < 0)
		return (int)n;
	err = prec_parse_u64(s, 0, out);
	free(s);
	return err;
}

int prec_write_text(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_APPEND);
	int err;

	if (fd < 0)
		return -errno;
	err = prec_write_full(fd, s, strlen(s));
	if (close(fd) && !err)
		err = -errno;
	return err;
}

int prec_parse_u64(const char *s, int base, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

unsigned prec_edit_distance(const char *a, const char *b, unsigned max)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	unsigned row[64], prev, cur, best;

	if (la >= PREC_ARRAY_SIZE(row) || lb >= PREC_ARRAY_SIZE(row))
		return max + 1;
	if ((la > lb ? la - lb : lb - la) > max)
		return max + 1;
	for (j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (unsigned)i;
		best = row[0];
		for (j = 1; j <= lb; j++) {
			cur = row[j];
			row[j] = PREC_MIN(PREC_MIN(row[j] + 1, row[j - 1] + 1),
					  prev + (a[i - 1] != b[j - 1]));
			prev = cur;
			best = PREC_MIN(best, row[j]);
		}
		if (best > max)
			return max + 1;
	}
	return PREC_MIN(row[lb], max + 1);
}

const char *prec_sysroot(void)
{
	const char *r = getenv("PTREC_SYSROOT");

	return r ? r : "";
}

int prec_sys_path(char *buf, size_t size, const char *fmt, ...)
{
	const char *root = prec_sysroot();
	size_t rl = strlen(root);
	va_list ap;
	int n;

	if (rl >= size)
		return -ENAMETOOLONG;
	memcpy(buf, root, rl);
	va_start(ap, fmt);
	n = vsnprintf(buf + rl, size - rl, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size - rl)
		return -ENAMETOOLONG;
	return 0;
}

uint64_t prec_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int prec_write_full(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -ENOSPC;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

long prec_read_full(int fd, void *p, size_t n)
{
	char *c = p;
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, c + got, n - got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (long)got;
}

static uint32_t crc_table[8][256];
static int crc_ready;

static void crc_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
		crc_table[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			crc_table[j][i] = (crc_table[j - 1][i] >> 8) ^
					  crc_table[0][crc_table[j - 1][i] & 0xff];
	__atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

/* The SSE4.2 crc32 instruction computes CRC-32C directly, 8 bytes at a time. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const unsigned char *c,
							     size_t n)
{
	uint64_t v = ~crc & 0xffffffffu;

	while (n >= 8) {
		uint64_t w;

		memcpy(&w, c, 8);
		v = __builtin_ia32_crc32di(v, w);
		c += 8;
		n -= 8;
	}
	while (n--)
		v = __builtin_ia32_crc32qi((uint32_t)v, *c++);
	return ~(uint32_t)v;
}

uint32_t prec_crc32c(uint32_t crc, const void *p, size_t n)
{
	static int hw = -1;

	if (hw < 0)
		hw = __builtin_cpu_supports("sse4.2");
	if (hw)
		return crc32c_hw(crc, p, n);
	return prec_crc32c_sw(crc, p, n);
}

uint32_t prec_crc32c_sw(uint32_t crc, const void *p, size_t n)
{
	const unsigned char *c = p;

	if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE))
		crc_init();
	crc = ~crc;
	/* Slicing-by-8: the trace file checksums every chunk, so this is hot. */
	while (n >= 8) {
		uint32_t lo = crc ^ ((uint32_t)c[0] | (uint32_t)c[1] << 8 |
				     (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24);
		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][c[4]] ^ crc_table[2][c[5]] ^
		      crc_table[1][c[6]] ^ crc_table[0][c[7]];
		c += 8;
		n -= 8;
	}
	while (n--)
		crc = (crc >> 8) ^ crc_table[0][(crc ^ *c++) & 0xff];
	return ~crc;
}
