/* SPDX-License-Identifier: MIT */
/*
 * Growable arrays kept as a plain (pointer, count) pair. The capacity is not
 * stored: it is the count rounded up to a power of two (at least 8), which
 * holds as long as the array only ever grows through prec_array_reserve()
 * (shrinking the count is fine: the allocation is then larger than that).
 * Growth is geometric, so n appends cost O(n).
 *
 *	struct foo *v = NULL; size_t n = 0;
 *	if (PREC_ARRAY_RESERVE(v, n, 1))
 *		return -ENOMEM;
 *	v[n++] = x;
 */
#ifndef PREC_ARRAY_H
#define PREC_ARRAY_H

#include <stddef.h>

/*
 * Makes room for @more elements of @elem bytes after the first @n of the
 * array *@arr (a pointer to the array pointer). On failure the array is left
 * as it was. Returns 0 or -ENOMEM (also when the size would overflow).
 */
int prec_array_reserve(void *arr, size_t n, size_t more, size_t elem);

#define PREC_ARRAY_RESERVE(arr, n, more) prec_array_reserve(&(arr), (n), (more), sizeof(*(arr)))

#endif
