// SPDX-License-Identifier: MIT
/* Threads: each has its own stream; they run at the same time. */
#include <pthread.h>
#include <stdlib.h>

#define NT 4

static unsigned results[NT];

__attribute__((noinline)) static unsigned work(unsigned seed, unsigned n)
{
	unsigned i, x = seed;

	for (i = 0; i < n; i++)
		x = (x * 1103515245u + 12345u) ^ (x >> 7);
	return x;
}

static void *run(void *arg)
{
	unsigned k = (unsigned)(unsigned long)arg;

	results[k] = work(k + 1, 2000 * (k + 1));
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[NT];
	unsigned long i;

	for (i = 0; i < NT; i++)
		if (pthread_create(&th[i], NULL, run, (void *)i))
			return 2;
	results[0] ^= work(99, 500);
	for (i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
	return 0;
}
