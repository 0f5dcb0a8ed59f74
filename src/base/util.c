// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "base/array.h"
#include "base/util.h"

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

/*
 * A rank for a candidate at edit distance @dist: four steps per edit, two
 * more unless it is the same letters in another order, one more unless the
 * length is the same.
 */
static unsigned near_score(const char *want, const char *cand, unsigned dist)
{
	size_t lw = strlen(want), lc = strlen(cand), i;
	unsigned cw[256] = { 0 };
	bool anagram = lw == lc;

	for (i = 0; anagram && i < lw; i++) {
		cw[(unsigned char)want[i]]++;
		cw[(unsigned char)cand[i]]--;
	}
	for (i = 0; anagram && i < 256; i++)
		anagram = cw[i] == 0;
	return dist * 4 + (anagram ? 0 : 2) + (lw == lc ? 0 : 1);
}

void prec_near_init(struct prec_near *n, const char *want, unsigned max, size_t keep)
{
	memset(n, 0, sizeof(*n));
	n->want = want;
	n->max = max;
	n->keep = PREC_MIN(keep, (size_t)PREC_NEAR_KEEP);
}

void prec_near_add(struct prec_near *n, const char *cand)
{
	unsigned dist;
	size_t i;

	if (!cand || !strcmp(cand, n->want) || strlen(cand) >= sizeof(n->best[0].name))
		return;
	dist = prec_edit_distance(n->want, cand, n->max);
	if (dist > n->max)
		return;
	dist = near_score(n->want, cand, dist);
	for (i = 0; i < n->keep; i++) {
		if (n->best[i].name[0] && !strcmp(n->best[i].name, cand))
			return;
	}
	for (i = 0; i < n->keep; i++) {
		if (!n->best[i].name[0] || dist < n->best[i].score) {
			memmove(&n->best[i + 1], &n->best[i], (n->keep - 1 - i) * sizeof(n->best[0]));
			snprintf(n->best[i].name, sizeof(n->best[i].name), "%s", cand);
			n->best[i].score = dist;
			return;
		}
	}
}

const char *prec_near_get(const struct prec_near *n, size_t i)
{
	return i < n->keep && n->best[i].name[0] ? n->best[i].name : NULL;
}

void prec_hex(char *dst, const void *p, size_t n)
{
	static const char digit[] = "0123456789abcdef";
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		dst[2 * i] = digit[b[i] >> 4];
		dst[2 * i + 1] = digit[b[i] & 15];
	}
	dst[2 * n] = '\0';
}

/* Is @path a regular file this process may execute? */
static bool runnable(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode) && !access(path, X_OK);
}

/* The search of execvp(3) (glibc's __execvpe): empty PATH entries are ".". */
int prec_find_exec(const char *name, char *out, size_t size)
{
	const char *path = getenv("PATH"), *p, *e;

	if (!*name)
		return -ENOENT;
	if (strchr(name, '/')) {
		if ((size_t)snprintf(out, size, "%s", name) >= size)
			return -ENAMETOOLONG;
		return access(out, F_OK) ? -errno : 0;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p = e + 1) {
		e = strchrnul(p, ':');
		int n = e > p ? snprintf(out, size, "%.*s/%s", (int)(e - p), p, name)
			      : snprintf(out, size, "./%s", name);

		if ((size_t)n < size && runnable(out))
			return 0;
		if (!*e)
			break;
	}
	return -ENOENT;
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

#if defined(__x86_64__)
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

static bool crc32c_hw_present(void)
{
	return __builtin_cpu_supports("sse4.2");
}
#elif defined(__aarch64__)
/* ARMv8's optional CRC32 instructions: CRC32CX takes 8 bytes, CRC32CB one. */
__attribute__((target("+crc"))) static uint32_t crc32c_hw(uint32_t crc, const unsigned char *c,
							  size_t n)
{
	uint32_t v = ~crc;

	while (n >= 8) {
		uint64_t w;

		memcpy(&w, c, 8);
		v = __builtin_aarch64_crc32cx(v, w);
		c += 8;
		n -= 8;
	}
	while (n--)
		v = __builtin_aarch64_crc32cb(v, *c++);
	return ~v;
}

static bool crc32c_hw_present(void)
{
	return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
}
#endif

bool prec_crc32c_has_hw(void)
{
#if defined(__x86_64__) || defined(__aarch64__)
	static int hw = -1;

	if (hw < 0)
		hw = crc32c_hw_present();
	return hw;
#else
	return false;
#endif
}

uint32_t prec_crc32c(uint32_t crc, const void *p, size_t n)
{
#if defined(__x86_64__) || defined(__aarch64__)
	if (prec_crc32c_has_hw())
		return crc32c_hw(crc, p, n);
#endif
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

/* ---- growable arrays (array.h) ---- */

static size_t array_cap(size_t n)
{
	size_t c = 8;

	while (c < n && c <= SIZE_MAX / 2)
		c *= 2;
	return c < n ? n : c;
}

int prec_array_reserve(void *arr, size_t n, size_t more, size_t elem)
{
	void **pp = arr;
	size_t want, cap;
	void *p;

	if (more > SIZE_MAX - n)
		return -ENOMEM;
	want = n + more;
	if (*pp && want <= array_cap(n))
		return 0;
	cap = array_cap(want);
	if (!elem || cap > SIZE_MAX / elem)
		return -ENOMEM;
	p = realloc(*pp, cap * elem);
	if (!p)
		return -ENOMEM;
	*pp = p;
	return 0;
}

const char *prec_signal_name(int sig, char *buf, size_t size)
{
	const char *abbrev = sig > 0 && sig < 128 ? sigabbrev_np(sig) : NULL;

	if (abbrev)
		snprintf(buf, size, "SIG%s", abbrev);
	else
		snprintf(buf, size, "signal %d", sig);
	return buf;
}

int prec_memfd_shared(const char *name, size_t size, void **map)
{
	int fd = memfd_create(name, MFD_CLOEXEC), err;
	void *m;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0)
		goto fail;
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		goto fail;
	*map = m;
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

int prec_memfd_map_read(int fd, size_t size, const void **map)
{
	void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);

	if (m == MAP_FAILED)
		return -errno;
	*map = m;
	return 0;
}

void prec_memfd_unmap(const void *map, size_t size)
{
	if (map)
		munmap((void *)map, size);
}
