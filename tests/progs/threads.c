// SPDX-License-Identifier: MIT
/* Several threads doing calls and loops, for the software tracer's tests. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NT 4

static int iters = 1000;

__attribute__((noinline)) static unsigned mix(unsigned x)
{
	return x * 2654435761u ^ (x >> 7);
}

static void *worker(void *arg)
{
	unsigned acc = (unsigned)(long)arg;
	int i;

	for (i = 0; i < iters; i++)
		acc = mix(acc + (unsigned)i);
	return (void *)(long)acc;
}

int main(int argc, char **argv)
{
	pthread_t t[NT];
	unsigned sum = 0;
	long i;

	if (argc > 1)
		iters = atoi(argv[1]);
	for (i = 0; i < NT; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (i = 0; i < NT; i++) {
		void *r;

		pthread_join(t[i], &r);
		sum += (unsigned)(long)r;
	}
	printf("threads %u\n", sum != 0);
	return 0;
}
