/* SPDX-License-Identifier: MIT */
/*
 * perf's build-id cache, the one layout both sides use: the perf.data
 * importer looks files up in it, the perf.data exporter fills one.
 *
 *	<cache>/<path>/<hex id>/elf        the file (vdso for "[vdso]")
 *	<cache>/.build-id/<xx>/<rest>      link to ../../<path>/<hex id>
 *
 * Older perf linked .build-id/<xx>/<rest> to the file itself; lookups take
 * that too.
 */
#ifndef PREC_BUILDID_CACHE_H
#define PREC_BUILDID_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Creates the directory @path and its parents (@path is restored). Returns 0 or -errno. */
int prec_bidcache_mkdir(char *path);

/*
 * The cached file of build id @id (@n bytes, at least 2) under @cache, into
 * @out. Returns true if a regular file is there (not checked for its id).
 */
bool prec_bidcache_find(const char *cache, const uint8_t *id, size_t n, char *out, size_t size);

/*
 * Makes the entry of @path (as recorded; a leading '/' is dropped) with
 * build id @id under @cache: creates its directories and the .build-id link
 * and writes the name the file is to be written to into @file. The caller
 * checks that @path does not climb out of the cache. Returns 0,
 * -ENAMETOOLONG or a negative errno.
 */
int prec_bidcache_add(const char *cache, const char *path, const uint8_t *id, size_t n,
		      char *file, size_t size);

#endif
