// SPDX-License-Identifier: MIT
/*
 * Fuzz target: a CoreSight snapshot directory (ptdump --snapshot DIR), every
 * view. The input packs the directory's files (tests/fuzz/pack.sh makes the
 * corpus from real snapshot directories): repeated
 *	NAME '\0' LENGTH(4 bytes, little endian) BYTES
 * with NAME made of [A-Za-z0-9._-] (other names end the input). The loader
 * reads them from the input itself (prec_snapshot_load_files()): no file is
 * written.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "interop/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FILES 64

struct packed {
	const char *name[MAX_FILES];
	const uint8_t *bytes[MAX_FILES];
	uint32_t len[MAX_FILES];
	int n;
};

static int name_ok(const char *n)
{
	if (!*n || !strcmp(n, ".") || !strcmp(n, ".."))
		return 0;
	for (; *n; n++)
		if (!((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') ||
		      (*n >= '0' && *n <= '9') || *n == '.' || *n == '_' || *n == '-'))
			return 0;
	return 1;
}

/* Indexes the packed files of the input; a later file of the same name wins. */
static void unpack(const uint8_t *p, size_t n, struct packed *pk)
{
	size_t i = 0;

	pk->n = 0;
	while (i < n && pk->n < MAX_FILES) {
		const uint8_t *z = memchr(p + i, 0, n - i < 65 ? n - i : 65);
		uint32_t len;

		if (!z || i + (size_t)(z - (p + i)) + 5 > n || !name_ok((const char *)p + i))
			break;
		pk->name[pk->n] = (const char *)p + i;
		i = (size_t)(z - p) + 1;
		len = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 |
		      (uint32_t)p[i + 3] << 24;
		i += 4;
		if (len > n - i)
			len = (uint32_t)(n - i);
		pk->bytes[pk->n] = p + i;
		pk->len[pk->n] = len;
		pk->n++;
		i += len;
	}
}

static long long packed_read(void *ctx, const char *name, uint64_t max, char **out,
			     struct prec_diag *d)
{
	const struct packed *pk = ctx;
	int k;

	for (k = pk->n - 1; k >= 0; k--)
		if (!strcmp(pk->name[k], name))
			break;
	if (k < 0)
		return prec_diag_set(d, -ENOENT, -1, "cannot open %s: no such file", name);
	if (pk->len[k] > max)
		return prec_diag_set(d, -EFBIG, -1, "%s is larger than %llu bytes", name,
				     (unsigned long long)max);
	*out = malloc((size_t)pk->len[k] + 1);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, pk->bytes[k], pk->len[k]);
	(*out)[pk->len[k]] = 0;
	return pk->len[k];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct packed pk;
	struct prec_snapshot_files files = { .read = packed_read, .ctx = &pk };
	struct prec_snapshot_report rep;
	struct prec_session *s;
	struct prec_diag d;

	unpack(data, size, &pk);
	if (!pk.n)
		return 0;
	s = prec_session_new();
	if (s && prec_snapshot_load_files(s, &files, &rep, &d) == 0)
		fuzz_views(s, size, size ? data[size - 1] : 0);
	prec_session_free(s);
	return 0;
}
