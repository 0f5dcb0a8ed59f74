// SPDX-License-Identifier: MIT
/* The decompressed AUX chunks shared by a session's readers: see aux_cache.h. */
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "session/aux_cache.h"

enum slot_state { SLOT_EMPTY, SLOT_LOADING, SLOT_READY };

struct slot {
	enum slot_state st;
	uint64_t src;             /* the chunk's file offset */
	struct prec_tfile_pbuf pb;
	const void *p;
	size_t n;
	unsigned refs;            /* readers holding it */
	uint64_t used;            /* when it was last handed out */
};

struct aux_cache {
	struct prec_tfile_reader *r;
	pthread_mutex_t mu;
	pthread_cond_t loaded;
	struct slot slot[PREC_AUX_CACHE_SLOTS];
	uint64_t clock;
};

/* A reader's scratch: the slot it holds, or buffers of its own. */
struct aux_scratch {
	struct aux_cache *c;
	struct slot *held;
	struct prec_tfile_pbuf own;
};

static void slot_empty(struct slot *s)
{
	prec_tfile_pbuf_fini(&s->pb);
	memset(s, 0, sizeof(*s));
}

/*
 * Under the lock: keeps the chunks no reader holds within the byte budget.
 * A decode in one pass reads ahead to find where its window ends and comes
 * back (chunks k + 2, k, k + 1, k + 2 ...): with room for one idle chunk
 * each came out twice.
 */
static void trim_locked(struct aux_cache *c)
{
	for (;;) {
		struct slot *lru = NULL;
		size_t idle = 0, i;

		for (i = 0; i < PREC_AUX_CACHE_SLOTS; i++) {
			struct slot *s = &c->slot[i];

			if (s->st != SLOT_READY || s->refs)
				continue;
			idle += s->pb.scap + s->pb.rcap;
			if (!lru || s->used < lru->used)
				lru = s;
		}
		if (idle <= PREC_AUX_CACHE_BYTES || !lru)
			return;
		slot_empty(lru);
	}
}

static void drop(struct aux_scratch *sc)
{
	struct aux_cache *c = sc->c;

	if (!sc->held)
		return;
	pthread_mutex_lock(&c->mu);
	sc->held->refs--;
	trim_locked(c);
	pthread_mutex_unlock(&c->mu);
	sc->held = NULL;
}

/*
 * Under the lock: the slot of chunk @src once it is READY (waiting while
 * another reader decompresses it), or NULL when no slot holds it.
 */
static struct slot *find_locked(struct aux_cache *c, uint64_t src)
{
	for (;;) {
		struct slot *hit = NULL;

		for (size_t i = 0; i < PREC_AUX_CACHE_SLOTS && !hit; i++)
			if (c->slot[i].st != SLOT_EMPTY && c->slot[i].src == src)
				hit = &c->slot[i];
		if (!hit || hit->st == SLOT_READY)
			return hit;
		pthread_cond_wait(&c->loaded, &c->mu);
	}
}

/* Under the lock: a slot no reader holds (an empty one first, else the least recent). */
static struct slot *victim_locked(struct aux_cache *c)
{
	struct slot *v = NULL;

	for (size_t i = 0; i < PREC_AUX_CACHE_SLOTS; i++) {
		struct slot *s = &c->slot[i];

		if (s->st == SLOT_LOADING || s->refs)
			continue;
		if (s->st == SLOT_EMPTY)
			return s;
		if (!v || s->used < v->used)
			v = s;
	}
	return v;
}

static int cache_fetch(void *ctx, uint64_t src, void **scratch, const void **p, size_t *n)
{
	struct aux_cache *c = ctx;
	struct aux_scratch *sc = *scratch;
	struct slot *s;
	int err;

	if (!sc) {
		sc = calloc(1, sizeof(*sc));
		if (!sc)
			return -ENOMEM;
		sc->c = c;
		*scratch = sc;
	}
	drop(sc);
	pthread_mutex_lock(&c->mu);
	s = find_locked(c, src);
	if (s) {
		s->refs++;
		s->used = ++c->clock;
		pthread_mutex_unlock(&c->mu);
		goto held;
	}
	s = victim_locked(c);
	if (!s) {
		/* Every slot in use: this reader's own buffers, as without the cache. */
		pthread_mutex_unlock(&c->mu);
		return prec_tfile_payload_at(c->r, src, &sc->own, p, n);
	}
	s->st = SLOT_LOADING;
	s->src = src;
	s->refs = 1;
	pthread_mutex_unlock(&c->mu);
	/* Decompressed outside the lock: others read other chunks meanwhile. */
	err = prec_tfile_payload_at(c->r, src, &s->pb, &s->p, &s->n);
	pthread_mutex_lock(&c->mu);
	if (err) {
		s->st = SLOT_EMPTY;
		s->refs = 0;
	} else {
		s->st = SLOT_READY;
		s->used = ++c->clock;
	}
	pthread_cond_broadcast(&c->loaded);
	pthread_mutex_unlock(&c->mu);
	if (err)
		return err;
held:
	sc->held = s;
	*p = s->p;
	*n = s->n;
	return 0;
}

static void cache_release(void *scratch)
{
	struct aux_scratch *sc = scratch;

	drop(sc);
	prec_tfile_pbuf_fini(&sc->own);
	free(sc);
}

static void cache_fini(void *ctx)
{
	struct aux_cache *c = ctx;

	for (size_t i = 0; i < PREC_AUX_CACHE_SLOTS; i++)
		prec_tfile_pbuf_fini(&c->slot[i].pb);
	pthread_cond_destroy(&c->loaded);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

int prec_aux_cache_attach(struct prec_session *s, struct prec_tfile_reader *r)
{
	struct aux_cache *c = calloc(1, sizeof(*c));
	struct prec_aux_source src = { cache_fetch, cache_release, NULL, cache_fini };

	if (!c)
		return -ENOMEM;
	c->r = r;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->loaded, NULL);
	src.ctx = c;
	prec_session_set_aux_source(s, &src);
	return 0;
}
