// SPDX-License-Identifier: MIT
/*
 * Control flow for the software tracer's ground-truth tests: direct and
 * indirect calls, deep recursion, a switch jump table, tail calls and calls
 * into libc through the PLT. argv[1] scales the work (default 1). With
 * PTREC_TEST_COUNTS=FILE it appends how often it called sw and rec to FILE
 * ("NAME COUNT" lines), for checks that have no ground truth.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int sink;
static unsigned n_sw, n_rec;

__attribute__((noinline)) static int leaf(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) static int rec(int n)
{
	n_rec++;
	if (n <= 0)
		return 0;
	return 1 + rec(n - 1) + (n & 1);
}

__attribute__((noinline)) static int sw(int k)
{
	n_sw++;
	switch (k & 7) {
	case 0: return leaf(k) + 11;
	case 1: return k * 7;
	case 2: return k ^ 0x55;
	case 3: return rec(k & 3);
	case 4: return k - 100;
	case 5: return (k << 3) | 1;
	case 6: return k / 3;
	default: return -k;
	}
}

__attribute__((noinline)) static int tail_b(int x)
{
	return leaf(x + 1);
}

__attribute__((noinline)) int tail_a(int x)
{
	/* With -O1 this becomes a jump into tail_b. */
	if (x & 1)
		return tail_b(x);
	return tail_b(x + 2);
}

typedef int (*fn_t)(int);
static fn_t table[] = { leaf, sw, tail_a, rec };

static int cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1, i, acc = 0;
	int arr[64];
	char buf[64];

	for (i = 0; i < n * 16; i++) {
		acc += table[i & 3](i & 15);
		acc += sw(i);
	}
	acc += rec(200);
	for (i = 0; i < 64; i++)
		arr[i] = (i * 37) % 64;
	qsort(arr, 64, sizeof(arr[0]), cmp);
	snprintf(buf, sizeof(buf), "%d", acc);
	sink = (int)strlen(buf) + arr[5];
	printf("calls %d\n", acc);
	if (getenv("PTREC_TEST_COUNTS")) {
		FILE *f = fopen(getenv("PTREC_TEST_COUNTS"), "a");

		if (f) {
			fprintf(f, "sw %u\nrec %u\n", n_sw, n_rec);
			fclose(f);
		}
	}
	return 0;
}
