// SPDX-License-Identifier: MIT
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "decoders/jobs.h"

#define JOBS_MAX 256

struct prec_jobs {
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	struct prec_job *head, *tail;
	bool stop;
	int refs, n;
	pthread_t th[JOBS_MAX];
};

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static struct prec_jobs *pool;

static void *worker(void *arg)
{
	struct prec_jobs *j = arg;

	pthread_mutex_lock(&j->mu);
	for (;;) {
		struct prec_job *t = j->head;

		if (!t) {
			if (j->stop)
				break;
			pthread_cond_wait(&j->work, &j->mu);
			continue;
		}
		j->head = t->next;
		if (!j->head)
			j->tail = NULL;
		t->queued = false;
		pthread_mutex_unlock(&j->mu);
		t->run(t->arg);
		pthread_mutex_lock(&j->mu);
		t->done = true;
		pthread_cond_broadcast(&j->done);
	}
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

static struct prec_jobs *pool_new(int n)
{
	struct prec_jobs *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->work, NULL);
	pthread_cond_init(&j->done, NULL);
	if (n > JOBS_MAX)
		n = JOBS_MAX;
	for (; j->n < n; j->n++)
		if (pthread_create(&j->th[j->n], NULL, worker, j))
			break;
	if (!j->n) {
		free(j);
		return NULL;
	}
	return j;
}

static void pool_free(struct prec_jobs *j)
{
	pthread_mutex_lock(&j->mu);
	j->stop = true;
	pthread_cond_broadcast(&j->work);
	pthread_mutex_unlock(&j->mu);
	for (int i = 0; i < j->n; i++)
		pthread_join(j->th[i], NULL);
	pthread_cond_destroy(&j->work);
	pthread_cond_destroy(&j->done);
	pthread_mutex_destroy(&j->mu);
	free(j);
}

struct prec_jobs *prec_jobs_get(int n)
{
	struct prec_jobs *j;

	if (n < 1)
		return NULL;
	pthread_mutex_lock(&pool_mu);
	if (!pool)
		pool = pool_new(n);
	if (pool)
		pool->refs++;
	j = pool;
	pthread_mutex_unlock(&pool_mu);
	return j;
}

void prec_jobs_put(struct prec_jobs *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&pool_mu);
	if (--j->refs == 0) {
		pool = NULL;
		pool_free(j);
	}
	pthread_mutex_unlock(&pool_mu);
}

void prec_jobs_submit(struct prec_jobs *j, struct prec_job *t)
{
	pthread_mutex_lock(&j->mu);
	t->next = NULL;
	t->queued = true;
	t->done = false;
	t->submitted = true;
	if (j->tail)
		j->tail->next = t;
	else
		j->head = t;
	j->tail = t;
	pthread_cond_signal(&j->work);
	pthread_mutex_unlock(&j->mu);
}

/* Takes @t off the queue; whether it was there. Under j->mu. */
static bool unqueue(struct prec_jobs *j, struct prec_job *t)
{
	struct prec_job **pp, *prev = NULL;

	for (pp = &j->head; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp != t)
			continue;
		*pp = t->next;
		if (j->tail == t)
			j->tail = prev;
		t->queued = false;
		return true;
	}
	return false;
}

void prec_jobs_wait(struct prec_jobs *j, struct prec_job *t)
{
	bool mine;

	if (!t->submitted)
		return;
	pthread_mutex_lock(&j->mu);
	mine = t->queued && unqueue(j, t);
	while (!mine && !t->done)
		pthread_cond_wait(&j->done, &j->mu);
	pthread_mutex_unlock(&j->mu);
	if (mine)
		t->run(t->arg);
	t->submitted = false;
}
