// SPDX-License-Identifier: MIT
/*
 * Threads that wait on each other, for the model's scheduler: NT threads
 * pass a token round a ring of pipes (each blocks in read() until its turn),
 * doing some calls with it; the first thread then sleeps a little
 * (nanosleep) and the main thread waits for them all in pthread_join()
 * (futex). Argument: the rounds (default 20).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NT 3

static int rounds = 20;
static int ring[NT][2];

__attribute__((noinline)) static unsigned mix(unsigned x)
{
	return x * 2654435761u ^ (x >> 7);
}

static void *worker(void *arg)
{
	long me = (long)arg;
	unsigned acc = (unsigned)me;
	int r, i;

	for (r = 0; r < rounds; r++) {
		unsigned tok;

		if (read(ring[me][0], &tok, sizeof(tok)) != sizeof(tok))
			return NULL;
		for (i = 0; i < 50; i++)
			acc = mix(acc + tok + (unsigned)i);
		tok++;
		if (write(ring[(me + 1) % NT][1], &tok, sizeof(tok)) != sizeof(tok))
			return NULL;
	}
	if (me == 0) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	return (void *)(long)acc;
}

int main(int argc, char **argv)
{
	pthread_t t[NT];
	unsigned tok = 0, sum = 0;
	long i;

	if (argc > 1)
		rounds = atoi(argv[1]);
	for (i = 0; i < NT; i++)
		if (pipe(ring[i]))
			return 1;
	for (i = 0; i < NT; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	if (write(ring[0][1], &tok, sizeof(tok)) != sizeof(tok))
		return 1;
	for (i = 0; i < NT; i++) {
		void *r;

		pthread_join(t[i], &r);
		sum += (unsigned)(long)r;
	}
	if (read(ring[0][0], &tok, sizeof(tok)) != sizeof(tok))
		return 1;
	printf("pingpong %u %u\n", tok, sum != 0);
	return 0;
}
