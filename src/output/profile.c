// SPDX-License-Identifier: MIT
/* The profile of a decode (profile.h): functions, calls, windows, stacks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "decoders/decoder.h"
#include "output/profile.h"
#include "session/image.h"

#define DEFAULT_MAX_SLICES 1000000

struct frame {
	uint32_t fn, node, edge;  /* edge: UINT32_MAX for none */
	uint64_t ret;             /* return address; 0 for a base frame */
	uint64_t t0, i0;          /* time and the thread's instruction count at entry */
	uint64_t child_ns;
	bool base;                /* the function the thread was in when none was called */
	bool pending;             /* --no-plt: a stub whose target is not known yet */
	bool hidden;              /* --no-plt: called by a stub or the resolver */
	bool deep;                /* --max-depth: deeper; counts in fold_fn's call */
	uint32_t fold_fn;         /* deep: the function of the frame at the limit */
};

struct pthr {
	int tid;
	struct frame *stk;
	size_t n;
	struct prec_aspace *as;   /* the resolve cache: [lo, hi) is function cfn */
	uint64_t lo, hi;
	uint32_t cfn;
	uint64_t insns;           /* decoded so far */
	uint64_t pend_insns;      /* --no-plt: of stubs not yet resolved */
	uint64_t last_time;
	uint32_t cur_node;
	long win;                 /* the open window, -1: none */
	bool closing;             /* a pause ended it, unless tracing begins again
				     at once where it ended (a trap that changed nothing) */
	uint64_t close_ip, close_time;
	int close_trig;
	uint32_t *active;         /* per function: open calls (recursion) */
	size_t nactive;
	uint64_t *wacc;           /* per function: instructions in the open window */
	size_t nwacc;
	uint32_t *touched;        /* functions with wacc set */
	size_t ntouched;
};

struct ptab {                     /* open addressing: index + 1, 0 empty */
	uint32_t *slot;
	size_t cap;
};

/*
 * The function at an address of an address space (and thread, by thread):
 * a direct-mapped cache in front of the symbol lookup and the function table,
 * since most calls go to functions called before.
 */
#define FN_CACHE_BITS 14
struct fn_ent {
	const struct prec_aspace *as;
	uint64_t addr;
	int tid;
	uint32_t fn;
};

struct priv {
	struct prec_profile *p;
	const struct prec_profile_opts *o;
	struct pthr *thr;
	size_t nthr, last;
	struct ptab fns, edges, nodes;
	struct fn_ent *fn_cache;  /* 1 << FN_CACHE_BITS entries, or NULL: uncached */
	struct prec_aspace_cache as_c;
	bool *hidden;             /* per function: --hide-dso */
	bool *stub;               /* per function: a PLT stub */
	bool *fold;               /* per function: a stub or the dynamic linker */
	size_t max_slices;
	int max_depth;            /* calls deeper count in their caller at this depth */
	bool pause_events;        /* the recording has pause triggers */
	int err;
};

const char *prec_profile_base(const char *path)
{
	const char *sl = strrchr(path, '/');

	return sl ? sl + 1 : path;
}

const char *prec_profile_trig_name(const struct prec_profile *p, int idx, const char *none)
{
	const struct prec_evdesc *d = idx >= 0 ? prec_session_event(p->s, idx) : NULL;

	return d && d->name ? d->name : none;
}

/* ---- hash tables ---- */

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t str_hash(uint64_t h, const char *s)
{
	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return mix(h, 0);
}

/*
 * Finds the entry equal to the key (@eq(ctx, index)) with hash @h, or adds
 * one by @add(ctx) (returns the new index, or UINT32_MAX on failure).
 */
static uint32_t tab_get(struct ptab *t, uint64_t h, size_t count, void *ctx,
			bool (*eq)(void *ctx, uint32_t i), uint32_t (*add)(void *ctx),
			uint64_t (*rehash)(void *ctx, uint32_t i))
{
	size_t i;
	uint32_t idx;

	if ((count + 1) * 2 > t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 1024, k;
		uint32_t *ns = calloc(nc, sizeof(*ns));

		if (!ns)
			return UINT32_MAX;
		for (k = 0; k < count; k++) {
			size_t j = rehash(ctx, (uint32_t)k) & (nc - 1);

			while (ns[j])
				j = (j + 1) & (nc - 1);
			ns[j] = (uint32_t)k + 1;
		}
		free(t->slot);
		t->slot = ns;
		t->cap = nc;
	}
	for (i = h & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1))
		if (eq(ctx, t->slot[i] - 1))
			return t->slot[i] - 1;
	idx = add(ctx);
	if (idx != UINT32_MAX)
		t->slot[i] = idx + 1;
	return idx;
}

/* Functions: (dso, name, tid). */
struct fkey {
	struct priv *v;
	const char *dso, *name;
	int tid;
};

static uint64_t fn_hash(const char *dso, const char *name, int tid)
{
	return mix(str_hash(str_hash(0xcbf29ce484222325ull, dso), name), (uint64_t)(uint32_t)tid);
}

static uint64_t fn_rehash(void *ctx, uint32_t i)
{
	const struct prec_pfunc *f = &((struct fkey *)ctx)->v->p->fn[i];

	return fn_hash(f->dso, f->name, f->tid);
}

static bool fn_eq(void *ctx, uint32_t i)
{
	const struct fkey *k = ctx;
	const struct prec_pfunc *f = &k->v->p->fn[i];

	return f->tid == k->tid && !strcmp(f->name, k->name) && !strcmp(f->dso, k->dso);
}

static uint32_t fn_add(void *ctx)
{
	const struct fkey *k = ctx;
	struct priv *v = k->v;
	struct prec_profile *p = v->p;
	size_t n = p->nfn;
	if (PREC_ARRAY_RESERVE(p->fn, n, 1) || PREC_ARRAY_RESERVE(v->hidden, n, 1) ||
	    PREC_ARRAY_RESERVE(v->fold, n, 1) || PREC_ARRAY_RESERVE(v->stub, n, 1))
		return UINT32_MAX;
	memset(&p->fn[n], 0, sizeof(p->fn[n]));
	p->fn[n].dso = strdup(k->dso);
	p->fn[n].name = strdup(k->name);
	p->fn[n].tid = k->tid;
	if (!p->fn[n].dso || !p->fn[n].name) {
		free((char *)p->fn[n].dso);
		free((char *)p->fn[n].name);
		return UINT32_MAX;
	}
	p->fn[n].hidden = v->hidden[n] = v->o->hide && !regexec(v->o->hide, k->dso, 0, NULL, 0);
	v->stub[n] = prec_plt_stub(k->name);
	v->fold[n] = prec_plt_fold(k->dso, k->name);
	p->nfn++;
	return (uint32_t)n;
}

static uint32_t fn_get(struct priv *v, const char *dso, const char *name, int tid)
{
	struct fkey k = { v, dso, name, v->o->by_thread ? tid : -1 };

	return tab_get(&v->fns, fn_hash(dso, name, k.tid), v->p->nfn, &k, fn_eq, fn_add,
		       fn_rehash);
}

/* Edges (caller, callee) and call-tree nodes (parent, fn): pairs of indices. */
struct pkey {
	struct priv *v;
	uint32_t a, b;
	bool node;
};

static uint64_t pair_hash(uint32_t a, uint32_t b)
{
	return mix(mix(0x12345, a), b);
}

static uint64_t pair_rehash(void *ctx, uint32_t i)
{
	const struct pkey *k = ctx;
	const struct prec_profile *p = k->v->p;

	return k->node ? pair_hash(p->node[i].parent, p->node[i].fn) :
			 pair_hash(p->edge[i].caller, p->edge[i].callee);
}

static bool pair_eq(void *ctx, uint32_t i)
{
	const struct pkey *k = ctx;
	const struct prec_profile *p = k->v->p;

	return k->node ? p->node[i].parent == k->a && p->node[i].fn == k->b :
			 p->edge[i].caller == k->a && p->edge[i].callee == k->b;
}

static uint32_t pair_add(void *ctx)
{
	const struct pkey *k = ctx;
	struct prec_profile *p = k->v->p;

	if (k->node) {
		if (PREC_ARRAY_RESERVE(p->node, p->nnode, 1))
			return UINT32_MAX;
		p->node[p->nnode] = (struct prec_pnode){ .parent = k->a, .fn = k->b };
		return (uint32_t)p->nnode++;
	}
	if (PREC_ARRAY_RESERVE(p->edge, p->nedge, 1))
		return UINT32_MAX;
	p->edge[p->nedge] = (struct prec_pedge){ .caller = k->a, .callee = k->b };
	return (uint32_t)p->nedge++;
}

static uint32_t pair_get(struct priv *v, bool node, uint32_t a, uint32_t b)
{
	struct pkey k = { v, a, b, node };

	return tab_get(node ? &v->nodes : &v->edges, pair_hash(a, b),
		       node ? v->p->nnode : v->p->nedge, &k, pair_eq, pair_add, pair_rehash);
}

/* The call-tree node of @fn under @parent (0 without --folded). */
static uint32_t node_of(struct priv *v, uint32_t parent, uint32_t fn)
{
	uint32_t n;

	if (!v->o->folded)
		return 0;
	n = pair_get(v, true, parent, fn);
	if (n == UINT32_MAX) {
		v->err = -ENOMEM;
		return 0;
	}
	return n;
}

/* ---- threads ---- */

static struct pthr *thr_get(struct priv *v, int tid)
{
	size_t i;

	if (v->last < v->nthr && v->thr[v->last].tid == tid)
		return &v->thr[v->last];
	for (i = 0; i < v->nthr; i++)
		if (v->thr[i].tid == tid) {
			v->last = i;
			return &v->thr[i];
		}
	if (PREC_ARRAY_RESERVE(v->thr, v->nthr, 1))
		return NULL;
	memset(&v->thr[v->nthr], 0, sizeof(v->thr[0]));
	v->thr[v->nthr].tid = tid;
	v->thr[v->nthr].win = -1;
	v->last = v->nthr;
	return &v->thr[v->nthr++];
}

/* The function @addr lies in, for thread @t of process @pid at @time. */
static uint32_t fn_at(struct priv *v, struct pthr *t, int pid, uint64_t time, uint64_t addr)
{
	struct prec_images *im = prec_session_images(v->p->s);
	struct prec_aspace *as = prec_images_aspace_cached(im, &v->as_c, pid,
							   time || v->p->timed ? time : UINT64_MAX);
	int tid = v->o->by_thread ? t->tid : -1;
	struct fn_ent *e = NULL;
	struct prec_loc loc;
	uint32_t fn;

	if (as == t->as && addr >= t->lo && addr < t->hi)
		return t->cfn;
	if (v->fn_cache) {
		e = &v->fn_cache[(((addr ^ (addr >> 21)) ^ (uintptr_t)as) + (uint64_t)(uint32_t)tid) *
				 0x9e3779b97f4a7c15ull >> (64 - FN_CACHE_BITS)];
		if (e->as == as && e->addr == addr && e->tid == tid)
			return e->fn;
	}
	prec_aspace_resolve(as, addr, &loc);
	fn = fn_get(v, loc.dso ? loc.dso : "[unknown]", loc.sym ? loc.sym->name : "[unknown]",
		    t->tid);
	if (fn == UINT32_MAX) {
		v->err = -ENOMEM;
		return 0;
	}
	if (e)
		*e = (struct fn_ent){ as, addr, tid, fn };
	t->as = as;
	t->lo = t->hi = 0;
	if (loc.sym && loc.sym->size) {
		t->lo = addr - loc.symoff;
		t->hi = t->lo + loc.sym->size;
		t->cfn = fn;
	}
	return fn;
}

/* Per-function arrays of a thread grow with the function table. */
static int thr_fit(struct pthr *t, size_t nfn)
{
	if (t->nactive < nfn) {
		if (PREC_ARRAY_RESERVE(t->active, t->nactive, nfn - t->nactive) ||
		    PREC_ARRAY_RESERVE(t->wacc, t->nwacc, nfn - t->nwacc))
			return -ENOMEM;
		memset(t->active + t->nactive, 0, (nfn - t->nactive) * sizeof(*t->active));
		memset(t->wacc + t->nwacc, 0, (nfn - t->nwacc) * sizeof(*t->wacc));
		t->nactive = t->nwacc = nfn;
	}
	return 0;
}

/* ---- slices (--perfetto): a min-heap on duration keeps the longest ---- */

static bool slice_less(const struct prec_pslice *a, const struct prec_pslice *b)
{
	return a->dur < b->dur;
}

static void heap_down(struct prec_pslice *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct prec_pslice tmp;

		if (l < n && slice_less(&h[l], &h[m]))
			m = l;
		if (r < n && slice_less(&h[r], &h[m]))
			m = r;
		if (m == i)
			return;
		tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

static void add_slice(struct priv *v, const struct prec_pslice *sl)
{
	struct prec_profile *p = v->p;
	size_t i;

	if (p->nslice == v->max_slices) {
		p->slices_dropped++;
		if (!slice_less(&p->slice[0], sl))
			return;
		p->slice[0] = *sl;
		heap_down(p->slice, p->nslice, 0);
		return;
	}
	if (PREC_ARRAY_RESERVE(p->slice, p->nslice, 1)) {
		v->err = -ENOMEM;
		return;
	}
	i = p->nslice++;
	p->slice[i] = *sl;
	while (i && slice_less(&p->slice[i], &p->slice[(i - 1) / 2])) {
		struct prec_pslice tmp = p->slice[i];

		p->slice[i] = p->slice[(i - 1) / 2];
		p->slice[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
}

static void add_instant(struct priv *v, int tid, uint64_t time, const char *what,
			const char *detail)
{
	struct prec_profile *p = v->p;

	if (PREC_ARRAY_RESERVE(p->inst, p->ninst, 1)) {
		v->err = -ENOMEM;
		return;
	}
	p->inst[p->ninst].tid = tid;
	p->inst[p->ninst].time = time;
	p->inst[p->ninst].what = what;
	snprintf(p->inst[p->ninst].detail, sizeof(p->inst[0].detail), "%s", detail);
	p->ninst++;
}

/* ---- frames ---- */

/*
 * Pushes a frame of @fn, called from @caller at call depth @depth (as the
 * call trace counts it), or the base frame.
 */
static void push(struct priv *v, struct pthr *t, uint32_t fn, uint64_t ret, uint64_t time,
		 uint32_t caller, bool base, bool counted, int depth)
{
	struct frame f = { .fn = fn, .ret = ret, .t0 = time, .i0 = t->insns, .base = base,
			   .edge = UINT32_MAX };
	struct frame *top;
	uint32_t parent;

	if (PREC_ARRAY_RESERVE(t->stk, t->n, 1) || thr_fit(t, v->p->nfn)) {
		v->err = -ENOMEM;
		return;
	}
	top = t->n ? &t->stk[t->n - 1] : NULL;
	parent = top ? top->node : 0;
	if (v->o->no_plt && top && (top->pending || top->hidden)) {
		f.hidden = true;
	} else if (top && (top->deep || (v->max_depth && depth > v->max_depth && !base))) {
		f.deep = true;
		f.fold_fn = top->deep ? top->fold_fn : top->fn;
	} else if (v->o->no_plt && v->stub[fn] && !base) {
		f.pending = true;
	} else if (counted) {
		v->p->fn[fn].calls++;
		f.edge = pair_get(v, false, caller, fn);
		if (f.edge != UINT32_MAX)
			v->p->edge[f.edge].calls++;
	}
	if (!f.hidden && !f.pending && !f.deep && !v->hidden[fn]) {
		if (v->o->folded && (!top || top->fn != caller) && !base)
			parent = node_of(v, parent, caller);
		f.node = node_of(v, parent, fn);
		if (counted && v->o->folded)
			v->p->node[f.node].calls++;
	} else {
		f.node = parent;
	}
	t->active[fn]++;
	t->stk[t->n++] = f;
}

/* --no-plt: the stub on top of the stack reached @fn, the function it serves. */
static void resolve_pending(struct priv *v, struct pthr *t, uint32_t fn)
{
	struct frame *f = &t->stk[t->n - 1];
	uint32_t caller = t->n > 1 ? t->stk[t->n - 2].fn : fn;

	t->active[f->fn]--;
	f->fn = fn;
	f->pending = false;
	t->active[fn]++;
	v->p->fn[fn].calls++;
	v->p->fn[fn].self_insns += t->pend_insns;
	t->pend_insns = 0;
	f->edge = pair_get(v, false, caller, fn);
	if (f->edge != UINT32_MAX)
		v->p->edge[f->edge].calls++;
	if (!v->hidden[fn]) {
		f->node = node_of(v, f->node, fn);
		if (v->o->folded)
			v->p->node[f->node].calls++;
	}
}

static void pop_one(struct priv *v, struct pthr *t, uint64_t time)
{
	struct frame *f = &t->stk[--t->n];
	uint64_t ns = time > f->t0 && f->t0 ? time - f->t0 : 0;
	uint64_t insns = t->insns - f->i0;
	struct prec_pfunc *fn = &v->p->fn[f->fn];

	t->active[f->fn]--;
	if (f->hidden || f->deep)
		return;
	if (f->pending) { /* never reached its target: a call of the stub, its own insns */
		fn->self_insns += t->pend_insns;
		t->pend_insns = 0;
		fn->calls++;
		f->edge = pair_get(v, false, t->n ? t->stk[t->n - 1].fn : f->fn, f->fn);
		if (f->edge != UINT32_MAX)
			v->p->edge[f->edge].calls++;
	}
	if (!t->active[f->fn]) {
		fn->total_insns += insns;
		fn->total_ns += ns;
	}
	fn->self_ns += ns > f->child_ns ? ns - f->child_ns : 0;
	if (t->n)
		t->stk[t->n - 1].child_ns += ns;
	if (f->edge != UINT32_MAX && !t->active[f->fn]) {
		v->p->edge[f->edge].total_insns += insns;
		v->p->edge[f->edge].total_ns += ns;
	}
	if (v->o->slices && !v->hidden[f->fn]) {
		struct prec_pslice sl = { t->tid, f->fn, (uint32_t)t->n,
					  v->p->timed ? f->t0 : f->i0, v->p->timed ? ns : insns };

		add_slice(v, &sl);
	}
}

/* Pops down to the frame returning to @to; false when none does. */
static bool pop_to(struct priv *v, struct pthr *t, uint64_t to, uint64_t time)
{
	size_t i;

	if (!to)
		return false;
	for (i = t->n; i > 0; i--)
		if (t->stk[i - 1].ret == to) {
			while (t->n >= i)
				pop_one(v, t, time);
			return true;
		}
	return false;
}

/* ---- windows ---- */

static void win_open(struct priv *v, struct pthr *t, const struct prec_tev *ev, int trig)
{
	struct prec_profile *p = v->p;

	if (PREC_ARRAY_RESERVE(p->win, p->nwin, 1)) {
		v->err = -ENOMEM;
		return;
	}
	memset(&p->win[p->nwin], 0, sizeof(p->win[0]));
	p->win[p->nwin].tid = t->tid;
	p->win[p->nwin].open_trig = trig;
	p->win[p->nwin].close_trig = -1;
	p->win[p->nwin].start = ev->time;
	t->win = (long)p->nwin++;
}

static void win_close(struct priv *v, struct pthr *t, uint64_t time, int trig, bool at_end)
{
	struct prec_pwin *w = &v->p->win[t->win];
	size_t i, k;

	w->end = time;
	w->close_trig = trig;
	w->open_at_end = at_end;
	for (i = 0; i < t->ntouched; i++) {
		uint32_t fn = t->touched[i];
		uint64_t n = t->wacc[fn];

		t->wacc[fn] = 0;
		for (k = w->ntop; k > 0 && w->top_insns[k - 1] < n; k--)
			if (k < PREC_WIN_TOP) {
				w->top[k] = w->top[k - 1];
				w->top_insns[k] = w->top_insns[k - 1];
			}
		if (k < PREC_WIN_TOP) {
			w->top[k] = fn;
			w->top_insns[k] = n;
			if (w->ntop < PREC_WIN_TOP)
				w->ntop++;
		}
	}
	t->ntouched = 0;
	t->win = -1;
}

/* ---- events ---- */

static void on_block(struct priv *v, struct pthr *t, const struct prec_tev *ev, bool vis)
{
	uint32_t fn = fn_at(v, t, ev->pid, ev->time, ev->u.block.ip), node = 0;
	uint64_t n = ev->u.block.ninsn;
	struct frame *top;

	if (thr_fit(t, v->p->nfn)) {
		v->err = -ENOMEM;
		return;
	}
	if (!t->n)
		push(v, t, fn, 0, ev->time, fn, true, false, 0);
	top = &t->stk[t->n - 1];
	if (v->o->no_plt && top->pending && !v->fold[fn])
		resolve_pending(v, t, fn);
	if (!vis)
		return;
	t->insns += n;
	v->p->insns += n;
	if (v->o->no_plt && (top->pending || top->hidden)) {
		t->pend_insns += n;
		return;
	}
	if (top->deep)
		fn = top->fold_fn;
	v->p->fn[fn].self_insns += n;
	if (v->o->folded) {
		node = top->deep || v->hidden[fn] || top->fn == fn ? top->node :
								      node_of(v, top->node, fn);
		v->p->node[node].insns += n;
		t->cur_node = node;
	}
	if (t->win >= 0) {
		v->p->win[t->win].insns += n;
		if (!t->wacc[fn] && !PREC_ARRAY_RESERVE(t->touched, t->ntouched, 1))
			t->touched[t->ntouched++] = fn;
		t->wacc[fn] += n;
	}
}

static void on_branch(struct priv *v, struct pthr *t, const struct prec_tev *ev,
		      const struct prec_tap_info *info)
{
	bool vis = info->visible;
	enum prec_br_kind k = ev->u.branch.kind;
	uint64_t from = ev->u.branch.from, to = ev->u.branch.to;

	if (k == PREC_BR_CALL || ((k == PREC_BR_SYSCALL || k == PREC_BR_INTERRUPT) && to)) {
		uint32_t caller = fn_at(v, t, ev->pid, ev->time, from);
		uint32_t callee = to ? fn_at(v, t, ev->pid, ev->time, to) : caller;

		if (!to)
			return;
		push(v, t, callee, k == PREC_BR_INTERRUPT ? from : from + ev->u.branch.insn_len,
		     ev->time, caller, false, vis && k == PREC_BR_CALL, info->depth);
		if (vis && k == PREC_BR_CALL) {
			v->p->calls++;
			if (t->win >= 0)
				v->p->win[t->win].calls++;
		}
	} else if (k == PREC_BR_RETURN || k == PREC_BR_SYSRET) {
		/* A return past the first function seen ends it (e.g. main). */
		if (!pop_to(v, t, to, ev->time) && t->n == 1 && t->stk[0].base)
			pop_one(v, t, ev->time);
	}
}

static void on_trace(struct priv *v, struct pthr *t, const struct prec_tev *ev,
		     const struct prec_tap_info *info)
{
	if (ev->type == PREC_TEV_TRACE_BEGIN) {
		pop_to(v, t, ev->u.trace.ip, ev->time);
		if (t->closing && ev->u.trace.ip == t->close_ip && ev->time == t->close_time)
			t->closing = false;
		if (info->visible && t->win < 0)
			win_open(v, t, ev, info->trigger);
		return;
	}
	if (t->win >= 0 && (info->trigger >= 0 ||
			    (!v->pause_events && ev->u.trace.reason != PREC_END_SYSCALL))) {
		t->closing = true;
		t->close_ip = ev->u.trace.ip;
		t->close_time = ev->time;
		t->close_trig = info->trigger;
	}
}

/*
 * A visible event of thread @t at @time: the trace's span, and the time up
 * to it to the current frame.
 */
static void at_time(struct priv *v, struct pthr *t, uint64_t time)
{
	struct prec_profile *p = v->p;

	if (!p->first_time || time < p->first_time)
		p->first_time = time;
	if (time > p->last_time)
		p->last_time = time;
	if (v->o->folded && t->last_time && time > t->last_time && p->nnode)
		p->node[t->cur_node].ns += time - t->last_time;
	t->last_time = time;
}

static int tap_event(void *arg, size_t stream, const struct prec_tev *ev,
		     const struct prec_tap_info *info)
{
	struct priv *v = arg;
	struct pthr *t = thr_get(v, ev->tid);

	(void)stream;
	if (!t)
		return -ENOMEM;
	if (ev->time && info->visible)
		at_time(v, t, ev->time);
	/* An exec: the old program's frames end there, and never return. */
	if (info->restart)
		while (t->n)
			pop_one(v, t, ev->time);
	if (t->closing && ev->type != PREC_TEV_TIME &&
	    !(ev->type == PREC_TEV_TRACE_BEGIN && ev->u.trace.ip == t->close_ip &&
	      ev->time == t->close_time)) {
		t->closing = false;
		win_close(v, t, t->close_time, t->close_trig, false);
	}
	switch (ev->type) {
	case PREC_TEV_BLOCK:
		on_block(v, t, ev, info->visible);
		/* blocks summed across time (fn_span): as if the last one came now */
		if (ev->u.block.end_time && info->visible)
			at_time(v, t, ev->u.block.end_time);
		break;
	case PREC_TEV_BRANCH:
		on_branch(v, t, ev, info);
		break;
	case PREC_TEV_TRACE_BEGIN:
	case PREC_TEV_TRACE_END:
		on_trace(v, t, ev, info);
		break;
	case PREC_TEV_ERROR:
	case PREC_TEV_GAP:
	case PREC_TEV_OVERFLOW:
		if (info->visible && v->o->slices)
			add_instant(v, ev->tid, ev->time,
				    ev->type == PREC_TEV_ERROR ? "error" :
				    ev->type == PREC_TEV_GAP ? "gap" : "overflow",
				    ev->type == PREC_TEV_ERROR ? ev->u.err.msg : "");
		break;
	default:
		break;
	}
	return v->err;
}

static int tap_trigger(void *arg, const struct prec_sb *sb)
{
	struct priv *v = arg;
	const struct prec_evdesc *d = prec_session_event(v->p->s, sb->event);

	if (v->o->slices && d)
		add_instant(v, sb->tid, sb->time, d->kind == PREC_EVK_PAUSE ? "pause" : "resume",
			    d->name ? d->name : "?");
	return v->err;
}

/* The end of the trace closes every call and window still open. */
static void finish(struct priv *v)
{
	size_t i;

	for (i = 0; i < v->nthr; i++) {
		struct pthr *t = &v->thr[i];
		uint64_t end = t->last_time ? t->last_time : v->p->last_time;

		while (t->n)
			pop_one(v, t, end);
		if (t->closing)
			win_close(v, t, t->close_time, t->close_trig, false);
		else if (t->win >= 0)
			win_close(v, t, end, -1, true);
		free(t->stk);
		free(t->active);
		free(t->wacc);
		free(t->touched);
	}
}

int prec_profile_run(struct prec_session *s, const struct prec_output_opts *o,
		     const struct prec_profile_opts *po, struct prec_profile **out)
{
	struct prec_output_opts oo = *o;
	struct prec_tap tap = { tap_event, tap_trigger, NULL, NULL, PREC_BR_NO_JUMPS, false, true };
	struct priv v = { 0 };
	struct prec_profile *p = calloc(1, sizeof(*p));
	int err;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->s = s;
	p->timed = prec_session_machine(s)->tsc;
	v.p = p;
	v.o = po;
	v.max_slices = po->max_slices ? po->max_slices : DEFAULT_MAX_SLICES;
	v.max_depth = o->max_depth;
	for (size_t i = 0; i < prec_session_nr_events(s); i++)
		v.pause_events |= prec_session_event(s, (int)i)->kind == PREC_EVK_PAUSE;
	tap.arg = &v;
	if (po->folded) {
		/* node 0: the root of the call tree */
		if (PREC_ARRAY_RESERVE(p->node, 0, 1)) {
			free(p);
			return -ENOMEM;
		}
		p->node[0] = (struct prec_pnode){ .fn = UINT32_MAX };
		p->nnode = 1;
	}
	oo.fmt = PREC_FMT_TAP;
	oo.tap = &tap;
	v.fn_cache = calloc((size_t)1 << FN_CACHE_BITS, sizeof(*v.fn_cache));
	err = prec_output_run(s, &oo, stdout);
	finish(&v);
	free(v.fn_cache);
	free(v.thr);
	free(v.fns.slot);
	free(v.edges.slot);
	free(v.nodes.slot);
	free(v.hidden);
	free(v.fold);
	free(v.stub);
	if (!err)
		err = v.err;
	if (err) {
		prec_profile_free(p);
		return err;
	}
	*out = p;
	return 0;
}

void prec_profile_free(struct prec_profile *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nfn; i++) {
		free((char *)p->fn[i].dso);
		free((char *)p->fn[i].name);
	}
	free(p->fn);
	free(p->edge);
	free(p->win);
	free(p->slice);
	free(p->inst);
	free(p->node);
	free(p);
}
