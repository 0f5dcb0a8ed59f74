// SPDX-License-Identifier: MIT
/*
 * CPU-bound threads, for the scheduler's time slice: "spin N CALLS" starts
 * N threads (default 3) that wait at a barrier until all are there, then
 * each calls work() CALLS times (default 200) without waiting again, about
 * 5000 instructions a call in long blocks, so that the ground truth stays
 * small.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXT 16
#define STEP                                                                 \
	do {                                                                 \
		x = x * 6364136223846793005ull + 1442695040888963407ull;     \
		__asm__ volatile("" : "+r"(x));                              \
	} while (0)
#define STEP8                                                                \
	do {                                                                 \
		STEP; STEP; STEP; STEP; STEP; STEP; STEP; STEP;              \
	} while (0)

static int calls = 200;
static pthread_barrier_t start;

__attribute__((noinline)) static uint64_t work(uint64_t x)
{
	int i;

	for (i = 0; i < 40; i++) {
		STEP8; STEP8; STEP8; STEP8; STEP8; STEP8; STEP8; STEP8;
	}
	return x;
}

static void *worker(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg;
	int i;

	pthread_barrier_wait(&start);
	for (i = 0; i < calls; i++)
		x = work(x + (uint64_t)i);
	return (void *)(uintptr_t)x;
}

int main(int argc, char **argv)
{
	pthread_t t[MAXT];
	uint64_t sum = 0;
	long i, n = argc > 1 ? atol(argv[1]) : 3;

	if (argc > 2)
		calls = atoi(argv[2]);
	if (n < 1 || n > MAXT || calls < 0) {
		fprintf(stderr, "usage: spin [THREADS 1-%d] [CALLS]\n", MAXT);
		return 2;
	}
	pthread_barrier_init(&start, NULL, (unsigned)n + 1);
	for (i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	pthread_barrier_wait(&start);
	for (i = 0; i < n; i++) {
		void *r;

		pthread_join(t[i], &r);
		sum += (uint64_t)(uintptr_t)r;
	}
	printf("spin %d\n", sum != 0);
	return 0;
}
