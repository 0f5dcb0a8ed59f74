// SPDX-License-Identifier: MIT
/*
 * Each kind of event, resolved against sysfs, tracefs or an ELF file as soon
 * as it is read: PMU lookup, named events, tracepoints, uprobes, breakpoints.
 */
#include <ctype.h>
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spec/attr.h"
#include "spec/evspec.h"
#include "spec/evspec_parse.h"
#include "spec/pmu.h"
#include "spec/uprobe.h"

/* ---- PMU lookup ---- */

static struct prec_pmu *cache_get(struct prec_evlist *el, const char *key)
{
	size_t i;

	for (i = 0; i < el->npmus; i++)
		if (!strcmp(el->pmus[i].key, key))
			return el->pmus[i].pmu;
	return NULL;
}

static int cache_put(struct prec_evlist *el, const char *key, struct prec_pmu *pmu)
{
	struct pmu_ent *n;

	if (PREC_ARRAY_RESERVE(el->pmus, el->npmus, 1))
		return -ENOMEM;
	n = el->pmus;
	n[el->npmus].key = strdup(key);
	if (!n[el->npmus].key)
		return -ENOMEM;
	n[el->npmus++].pmu = pmu;
	return 0;
}

/* Loads a PMU through the cache; returns 0, -PREC_E_NOPMU or another error. */
/* @emulated: the software tracer's PMU of that name (intel_pt or cs_etm), not sysfs's. */
static int get_pmu(struct prec_evlist *el, const char *name, bool emulated, struct prec_pmu **out)
{
	bool etm = emulated && !strcmp(name, "cs_etm");
	const char *key = !emulated ? name : etm ? "#emulated-cs_etm" : "#emulated-intel_pt";
	struct prec_pmu *pmu = cache_get(el, key);
	int err;

	if (pmu) {
		*out = pmu;
		return 0;
	}
	if (!emulated)
		err = prec_pmu_load(name, &pmu);
	else
		err = etm ? prec_pmu_load_emulated_etm(&pmu) : prec_pmu_load_emulated(&pmu);
	if (err)
		return err;
	err = cache_put(el, key, pmu);
	if (err) {
		prec_pmu_free(pmu);
		return err;
	}
	*out = pmu;
	return 0;
}

static void add_pmu_names(struct prec_near *s)
{
	char **names;
	size_t n, i;

	if (prec_pmu_names(&names, &n))
		return;
	for (i = 0; i < n; i++)
		prec_near_add(s, names[i]);
	prec_strv_free(names, n);
}

static void add_generic_names(struct prec_near *s)
{
	const struct prec_generic_event *g;
	size_t n, i;

	g = prec_generic_events(&n);
	for (i = 0; i < n; i++)
		prec_near_add(s, g[i].name);
}

static int no_tracer(struct parser *p, const char *name, long pos)
{
	char aux[256];

	prec_pmu_aux_names(aux, sizeof(aux));
	if (!strcmp(name, "pt"))
		prec_evp_perr(p, -PREC_E_NOPMU, pos,
			      "no hardware tracer PMU (intel_pt or cs_etm) on this machine");
	else
		prec_evp_perr(p, -PREC_E_NOPMU, pos, "no %s PMU on this machine", name);
	prec_diag_hint(p->d, "AUX-capable PMUs here: %s; see 'ptrec check', or record with --emulate",
		       aux);
	return -PREC_E_NOPMU;
}

static int unknown_event(struct parser *p, const char *name, long pos, bool as_pmu);

/* Resolves a PMU name written as pmu/.../ (@as_pmu) or bare; errors set the diag. */
static int resolve_pmu(struct parser *p, const char *name, long pos, bool as_pmu,
		       struct prec_pmu **out)
{
	struct prec_evlist *el = p->el;
	int err;

	if (el->opts.emulate) {
		if (!strcmp(name, "intel_pt") || !strcmp(name, "pt") || !strcmp(name, "cs_etm"))
			err = get_pmu(el, name, true, out);
		else if (prec_pmu_name_is_aux(name)) {
			prec_evp_perr(p, -PREC_E_NOPMU, pos,
				      "the software tracers emulate intel_pt and cs_etm, not %s", name);
			prec_diag_hint(p->d, "use intel_pt/.../ (or pt/.../), or cs_etm/.../ for "
				       "aarch64 programs, with --emulate");
			return -PREC_E_NOPMU;
		} else {
			err = get_pmu(el, name, false, out);
		}
	} else if (!strcmp(name, "pt")) {
		err = get_pmu(el, "pt", false, out);
		if (err == -PREC_E_NOPMU)
			err = get_pmu(el, "intel_pt", false, out);
		if (err == -PREC_E_NOPMU)
			err = get_pmu(el, "cs_etm", false, out);
	} else {
		err = get_pmu(el, name, false, out);
	}
	if (!err)
		return 0;
	if (err == -ENOMEM)
		return prec_evp_nomem(p);
	if (err != -PREC_E_NOPMU)
		return prec_evp_perr(p, err, pos, "cannot read PMU '%s' from sysfs: %s", name,
				     prec_strerror(err));
	if (!strcmp(name, "pt") || prec_pmu_name_is_aux(name))
		return no_tracer(p, name, pos);
	return unknown_event(p, name, pos, as_pmu);
}

static int unknown_event(struct parser *p, const char *name, long pos, bool as_pmu)
{
	struct prec_near s;

	if (as_pmu)
		prec_evp_perr(p, -PREC_E_NOPMU, pos, "unknown PMU '%s'", name);
	else
		prec_evp_perr(p, -PREC_E_NOPMU, pos, "unknown event '%s'", name);
	prec_evp_sugg_init(&s, name);
	add_generic_names(&s);
	add_pmu_names(&s);
	prec_near_add(&s, "intel_pt");
	prec_near_add(&s, "cs_etm");
	prec_near_add(&s, "pt");
	prec_near_add(&s, "uprobe");
	prec_near_add(&s, "uretprobe");
	if (!prec_evp_sugg_hint(&s, p->d, NULL))
		prec_diag_hint(p->d, "'ptrec list' shows the PMUs, events and tracepoints here");
	return -PREC_E_NOPMU;
}


/* ---- event kinds ---- */

static int set_pmu_name(struct parser *p, struct ev *e, const char *name)
{
	free(e->pub.pmu);
	e->pub.pmu = strdup(name);
	return e->pub.pmu ? 0 : prec_evp_nomem(p);
}

static int init_generic(struct parser *p, struct ev *e, const char *name)
{
	const struct prec_generic_event *g = prec_generic_event_find(name);
	uint64_t raw;

	if (g) {
		e->pub.kind = g->type == PERF_TYPE_HARDWARE ? PREC_EV_HW : PREC_EV_SW;
		prec_attr_init(&e->pub.attr, g->type, g->config);
		return set_pmu_name(p, e, g->type == PERF_TYPE_HARDWARE ? "hardware" : "software");
	}
	if (prec_parse_u64(name + 1, 16, &raw))
		return prec_evp_perr(p, -PREC_E_SYNTAX, e->pub.pos, "bad raw event '%s'", name);
	e->pub.kind = PREC_EV_RAW;
	prec_attr_init(&e->pub.attr, PERF_TYPE_RAW, raw);
	return set_pmu_name(p, e, "raw");
}

static int init_pmu(struct parser *p, struct ev *e, struct prec_pmu *pmu)
{
	int err;

	e->pmu = pmu;
	e->pub.aux = pmu->aux;
	e->pub.kind = pmu->aux ? PREC_EV_AUX : PREC_EV_PMU;
	prec_attr_init(&e->pub.attr, pmu->type, 0);
	if (pmu->aux) {
		err = prec_pmu_default_config(pmu, &e->pub.attr);
		if (err)
			return prec_evp_perr(p, -PREC_E_INTERNAL, e->pub.pos,
					     "cannot build the default config of %s", pmu->name);
	}
	return set_pmu_name(p, e, pmu->name);
}

/* name, name/terms/mods, or name:mods for generic, raw and PMU events. */
int prec_evp_parse_named(struct parser *p, struct ev *e, const char *name, long npos)
{
	struct prec_pmu *pmu = NULL;
	bool generic = prec_generic_event_find(name) || prec_evp_is_raw_name(name);
	int err;

	if (generic) {
		err = init_generic(p, e, name);
	} else {
		err = resolve_pmu(p, name, npos, prec_evp_peek(p) == '/', &pmu);
		if (!err)
			err = init_pmu(p, e, pmu);
	}
	if (err)
		return err;
	if (e->pub.kind == PREC_EV_AUX && prec_evp_peek(p) != '/' && prec_evp_peek(p) != ':') {
		err = prec_evp_check_intel_pt(p, e, NULL, 0);
		if (!err)
			prec_evp_cs_etm_per_cpu_defaults(p, e, NULL, 0);
		return err;
	}
	return prec_evp_parse_event_tail(p, e);
}

/* @mounting: the error came from finding (or mounting) tracefs, not from reading it. */
static int tracefs_error(struct parser *p, int err, long pos, const char *sys, const char *name,
			 bool mounting)
{
	if (err == -ENOENT) {
		prec_evp_perr(p, -ENOENT, pos,
			      "tracefs is not mounted, so tracepoint '%s:%s' cannot be "
			      "resolved",
			      sys, name);
		if (prec_sysroot()[0])
			prec_diag_hint(p->d, "PTREC_SYSROOT is set and %s has no "
					     "sys/kernel/tracing/events", prec_sysroot());
		else
			prec_diag_hint(p->d, "as root: mount -t tracefs nodev /sys/kernel/tracing");
		return -ENOENT;
	}
	/* A non-root user never mounts: EACCES means tracefs is there but closed. */
	if ((!mounting || geteuid() != 0) && (err == -EACCES || err == -EPERM)) {
		prec_evp_perr(p, err, pos, "cannot read tracefs: %s", strerror(-err));
		prec_diag_hint(p->d, "run as root, or have root make tracefs readable "
				     "(mount -o remount,mode=755 /sys/kernel/tracing)");
		return err;
	}
	prec_evp_perr(p, err, pos,
		      "tracefs is not mounted and mounting it on /sys/kernel/tracing failed: %s",
		      prec_strerror(err));
	prec_diag_hint(p->d, "have root mount it: mount -t tracefs nodev /sys/kernel/tracing");
	return err;
}

static int resolve_tracepoint(struct parser *p, struct ev *e, long spos, long npos)
{
	const char *sys = e->pub.tp.sys, *name = e->pub.tp.name;
	char dir[4096], **names;
	size_t n, i;
	struct prec_near s;
	bool found = false;
	int err;

	err = prec_tracefs_dir(dir, sizeof(dir));
	if (err)
		return tracefs_error(p, err, spos, sys, name, true);
	err = prec_tracepoint_id(sys, name, &e->pub.tp.id);
	if (!err) {
		e->pub.attr.config = e->pub.tp.id;
		return 0;
	}
	if (err == -EACCES || err == -EPERM)
		return tracefs_error(p, err, spos, sys, name, false);
	if (err == -EIO)
		return prec_evp_perr(p, -EIO, npos, "tracepoint '%s:%s' has no id file in tracefs",
				     sys, name);
	if (err != -ENOENT)
		return prec_evp_perr(p, err, spos, "cannot read tracepoint '%s:%s': %s", sys, name,
				     prec_strerror(err));
	if (prec_tracepoint_names(NULL, &names, &n))
		names = NULL, n = 0;
	prec_evp_sugg_init(&s, sys);
	for (i = 0; i < n; i++) {
		if (!strcmp(names[i], sys))
			found = true;
		prec_near_add(&s, names[i]);
	}
	prec_strv_free(names, n);
	if (!found) {
		const struct prec_generic_event *g;
		size_t ng;

		prec_evp_perr(p, -ENOENT, spos, "unknown tracepoint subsystem '%s'", sys);
		g = prec_generic_events(&ng);
		for (i = 0; i < ng; i++)
			prec_near_add(&s, g[i].name);
		if (!prec_evp_sugg_hint(&s, p->d, NULL))
			prec_diag_hint(p->d, "'ptrec list' shows the tracepoints here");
		return -ENOENT;
	}
	prec_evp_perr(p, -ENOENT, npos, "unknown tracepoint '%s:%s'", sys, name);
	prec_evp_sugg_init(&s, name);
	if (!prec_tracepoint_names(sys, &names, &n)) {
		for (i = 0; i < n; i++)
			prec_near_add(&s, names[i]);
		prec_strv_free(names, n);
	}
	if (!prec_evp_sugg_hint(&s, p->d, NULL))
		prec_diag_hint(p->d, "'ptrec list %s:*' shows that subsystem's tracepoints", sys);
	return -ENOENT;
}

static int emulated_tracepoint(struct parser *p, struct ev *e, long spos, long npos)
{
	struct prec_near s;
	const char *nm;
	size_t i;
	int nr;

	if (strcmp(e->pub.tp.sys, "syscalls") ||
	    (strncmp(e->pub.tp.name, "sys_enter_", 10) && strncmp(e->pub.tp.name, "sys_exit_", 9))) {
		prec_evp_perr(p, -EINVAL, spos,
			      "tracepoint '%s:%s' is not available under --emulate", e->pub.tp.sys,
			      e->pub.tp.name);
		prec_diag_hint(p->d, "the software tracer triggers on syscalls:sys_enter_NAME and "
				     "syscalls:sys_exit_NAME only");
		return -EINVAL;
	}
	if (e->pub.tp.syscall_nr >= 0)
		return 0;
	prec_evp_perr(p, -ENOENT, npos, "unknown system call tracepoint '%s'", e->pub.tp.name);
	prec_evp_sugg_init(&s, e->pub.tp.name);
	for (i = 0; (nm = prec_syscall_at(i, &nr)); i++) {
		char buf[128];

		snprintf(buf, sizeof(buf), "%s%s", e->pub.tp.syscall_dir == PREC_SYSCALL_ENTER ?
			 "sys_enter_" : "sys_exit_", nm);
		prec_near_add(&s, buf);
	}
	prec_evp_sugg_hint(&s, p->d, NULL);
	return -ENOENT;
}

int prec_evp_parse_tracepoint(struct parser *p, struct ev *e, char *sys, long spos)
{
	char *name;
	long npos;
	int err;

	e->pub.tp.sys = sys;
	p->i++; /* ':' */
	err = prec_evp_read_name(p, &name, &npos);
	if (err)
		return err;
	e->pub.tp.name = name;
	if (!*name || prec_evp_is_glob(prec_evp_peek(p)))
		return prec_evp_unexpected(p, "a tracepoint name after ':'");
	e->pub.kind = PREC_EV_TRACEPOINT;
	e->pub.tp.syscall_nr = -1;
	if (!strcmp(sys, "syscalls")) {
		if (!strncmp(name, "sys_enter_", 10)) {
			e->pub.tp.syscall_dir = PREC_SYSCALL_ENTER;
			e->pub.tp.syscall_nr = prec_syscall_nr(name + 10);
		} else if (!strncmp(name, "sys_exit_", 9)) {
			e->pub.tp.syscall_dir = PREC_SYSCALL_EXIT;
			e->pub.tp.syscall_nr = prec_syscall_nr(name + 9);
		}
		if (e->pub.tp.syscall_nr < 0)
			e->pub.tp.syscall_nr = -1;
	}
	prec_attr_init(&e->pub.attr, PERF_TYPE_TRACEPOINT, 0);
	err = set_pmu_name(p, e, "tracepoint");
	if (err)
		return err;
	if (p->el->opts.emulate)
		err = emulated_tracepoint(p, e, spos, npos);
	else
		err = resolve_tracepoint(p, e, spos, npos);
	if (err)
		return err;
	return prec_evp_parse_event_tail(p, e);
}

/* The PATH of uprobe:PATH:FUNCTION, quoted or with '\:' escapes, into @path. */
static int read_uprobe_path(struct parser *p, bool ret, char *path)
{
	long ppos = (long)p->i;
	size_t st = 0;

	if (prec_evp_peek(p) == '"') {
		p->i++;
		while (p->i < p->n && p->s[p->i] != '"')
			path[st++] = p->s[p->i++];
		if (prec_evp_peek(p) != '"')
			return prec_evp_perr(p, -PREC_E_SYNTAX, ppos,
					     "missing closing '\"' of the path");
		p->i++;
	} else {
		while (p->i < p->n && p->s[p->i] != ':') {
			if (p->s[p->i] == '\\' && p->i + 1 < p->n &&
			    (p->s[p->i + 1] == ':' || p->s[p->i + 1] == '\\'))
				p->i++;
			path[st++] = p->s[p->i++];
		}
	}
	path[st] = '\0';
	if (!st) {
		prec_evp_perr(p, -PREC_E_SYNTAX, ppos, "expected a file path after '%s:'",
			      ret ? "uretprobe" : "uprobe");
		prec_diag_hint(p->d, "%s:PATH:FUNCTION, e.g. %s:/bin/true:main",
			       ret ? "uretprobe" : "uprobe", ret ? "uretprobe" : "uprobe");
		return -PREC_E_SYNTAX;
	}
	if (prec_evp_peek(p) != ':') {
		prec_evp_perr(p, -PREC_E_SYNTAX, (long)p->i, "expected ':FUNCTION' after the path");
		prec_diag_hint(p->d, "%s:PATH:FUNCTION; write a ':' inside PATH as '\\:' or quote "
				     "the path", ret ? "uretprobe" : "uprobe");
		return -PREC_E_SYNTAX;
	}
	p->i++;
	return 0;
}

/* The optional "+OFFSET" after the function; @opos is its column, else -1. */
static int read_uprobe_offset(struct parser *p, bool ret, uint64_t *off, long *opos)
{
	char num[32];

	*off = 0;
	*opos = -1;
	if (prec_evp_peek(p) != '+')
		return 0;
	p->i++;
	*opos = (long)p->i;
	while (p->i < p->n && prec_evp_name_char(p->s[p->i]) && p->s[p->i] != '-' &&
	       p->s[p->i] != '.')
		p->i++;
	if (p->i - (size_t)*opos >= sizeof(num) || (long)p->i == *opos)
		return prec_evp_perr(p, -PREC_E_SYNTAX, *opos, "expected an offset after '+'");
	memcpy(num, p->s + *opos, p->i - (size_t)*opos);
	num[p->i - (size_t)*opos] = '\0';
	if (prec_evp_parse_num(num, off))
		return prec_evp_perr(p, -PREC_E_SYNTAX, *opos, "bad offset '%s'", num);
	if (ret) {
		prec_evp_perr(p, -PREC_E_SYNTAX, *opos - 1, "a uretprobe takes no offset");
		prec_diag_hint(p->d, "a return probe fires when the function returns; give the "
				     "function itself");
		return -PREC_E_SYNTAX;
	}
	return 0;
}

/* The attr of a resolved uprobe: the uprobe PMU (none when emulated), retprobe bit. */
static int uprobe_attr(struct parser *p, struct ev *e, bool ret)
{
	struct prec_pmu *pmu = NULL;
	int err = get_pmu(p->el, "uprobe", false, &pmu);

	if (err && (err != -PREC_E_NOPMU || !p->el->opts.emulate)) {
		if (err != -PREC_E_NOPMU)
			return prec_evp_perr(p, err, e->pub.pos, "cannot read the uprobe PMU: %s",
					     prec_strerror(err));
		prec_evp_perr(p, -PREC_E_NOPMU, e->pub.pos, "no uprobe PMU on this machine");
		prec_diag_hint(p->d, "the kernel needs CONFIG_UPROBE_EVENTS; or record with "
				     "--emulate");
		return -PREC_E_NOPMU;
	}
	prec_attr_init(&e->pub.attr, pmu ? pmu->type : 0, 0);
	if (ret && pmu) {
		const struct prec_pmu_format *f = prec_pmu_format(pmu, "retprobe");
		uint64_t bits;

		if (!f || prec_pmu_format_encode(f, 1, &bits))
			return prec_evp_perr(p, -PREC_E_FORMAT, e->pub.pos,
					     "the uprobe PMU has no usable format/retprobe");
		*prec_attr_word(&e->pub.attr, f->word) |= bits;
	}
	e->pub.attr.uprobe_path = (uint64_t)(uintptr_t)e->pub.uprobe.path;
	e->pub.attr.probe_offset = e->pub.uprobe.file_offset;
	return set_pmu_name(p, e, "uprobe");
}

int prec_evp_parse_uprobe(struct parser *p, struct ev *e, bool ret)
{
	struct prec_uprobe_target tg;
	struct prec_diag ud = { 0 };
	char *path = NULL, *sym = NULL;
	long ppos, spos, opos = -1;
	uint64_t off = 0;
	int err = 0;

	p->i++; /* ':' after uprobe */
	ppos = (long)p->i;
	path = malloc(p->n - p->i + 1);
	if (!path)
		return prec_evp_nomem(p);
	err = read_uprobe_path(p, ret, path);
	if (err)
		goto out;
	spos = (long)p->i;
	while (p->i < p->n && (prec_evp_name_char(p->s[p->i]) || p->s[p->i] == '$') &&
	       p->s[p->i] != '-')
		p->i++;
	if ((long)p->i == spos) {
		err = prec_evp_unexpected(p, "a function name or 0xADDRESS");
		goto out;
	}
	sym = prec_evp_xstrndup(p->s + spos, p->i - (size_t)spos);
	if (!sym) {
		err = prec_evp_nomem(p);
		goto out;
	}
	err = read_uprobe_offset(p, ret, &off, &opos);
	if (err)
		goto out;
	err = prec_uprobe_resolve(path, sym, off, &tg, &ud);
	if (err) {
		long at = ppos;

		if (err == -PREC_E_NOSYM || err == -EINVAL || err == -EFAULT)
			at = spos;
		if (err == -ERANGE)
			at = opos >= 0 ? opos : spos;
		*p->d = ud;
		p->d->pos = at;
		goto out;
	}
	e->pub.kind = ret ? PREC_EV_URETPROBE : PREC_EV_UPROBE;
	e->pub.uprobe.path = tg.path;
	e->pub.uprobe.symbol = tg.symbol;
	e->pub.uprobe.sym_offset = tg.sym_offset;
	e->pub.uprobe.vaddr = tg.vaddr;
	e->pub.uprobe.file_offset = tg.file_offset;
	err = uprobe_attr(p, e, ret);
	if (!err)
		err = prec_evp_parse_event_tail(p, e);
out:
	free(path);
	free(sym);
	return err;
}

/*
 * Whether /proc/kallsyms lists @func as a text symbol (t or T). -ENOENT when
 * kallsyms cannot be read: the kernel then says whether the probe can be made.
 */
static int kernel_function_known(const char *func)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512], type, name[256];
	int found = 0;

	if (!f)
		return -ENOENT;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%*s %c %255s", &type, name) == 2 &&
			(type == 't' || type == 'T') && !strcmp(name, func);
	fclose(f);
	return found;
}

/*
 * kprobe:FUNCTION[+OFFSET] and kretprobe:FUNCTION: a window edge at a
 * kernel function's entry (or an offset into it) or at its return. Recorded
 * as tracefs kprobe events, whose tracepoint ids are inherited safely (the
 * kprobe PMU, like the uprobe PMU, names its function by a pointer in the
 * opening process: see record/uprobe_events.h). Under --emulate=system the
 * guest's tracer places them; the user-mode tracer has no kernel.
 */
int prec_evp_parse_kprobe(struct parser *p, struct ev *e, bool ret)
{
	const char *kind = ret ? "kretprobe" : "kprobe";
	long fpos, opos = -1;
	uint64_t off = 0;
	size_t st;

	p->i++; /* ':' */
	fpos = (long)p->i;
	while (p->i < p->n && (isalnum((unsigned char)p->s[p->i]) || p->s[p->i] == '_' ||
			       p->s[p->i] == '.'))
		p->i++;
	if ((long)p->i == fpos || isdigit((unsigned char)p->s[fpos]))
		return prec_evp_unexpected(p, "a kernel function name");
	if (p->i < p->n && p->s[p->i] == '+') {
		char *end;

		opos = (long)++p->i;
		st = p->i;
		errno = 0;
		off = strtoull(p->s + st, &end, 0);
		if (end == p->s + st || errno || !isdigit((unsigned char)p->s[st]))
			return prec_evp_unexpected(p, "an offset after '+'");
		p->i = (size_t)(end - p->s);
		if (ret)
			return prec_evp_perr(p, -EINVAL, opos,
					     "a kretprobe takes no offset: it fires at the return");
	}
	e->pub.kind = ret ? PREC_EV_KRETPROBE : PREC_EV_KPROBE;
	e->pub.kprobe.func = prec_evp_xstrndup(p->s + fpos, (size_t)(opos < 0 ? (long)p->i - fpos :
								       opos - 1 - fpos));
	if (!e->pub.kprobe.func)
		return prec_evp_nomem(p);
	e->pub.kprobe.offset = off;
	if (p->el->opts.emulate && !p->el->opts.emulate_kernel) {
		prec_evp_perr(p, -EINVAL, e->pub.pos, "%s: the user-mode software tracer runs no "
			      "kernel", kind);
		prec_diag_hint(p->d, "record kernel functions with --emulate=system");
		return -EINVAL;
	}
	if (!p->el->opts.emulate && kernel_function_known(e->pub.kprobe.func) == 0) {
		prec_evp_perr(p, -PREC_E_NOSYM, fpos, "no kernel function %s in /proc/kallsyms",
			      e->pub.kprobe.func);
		prec_diag_hint(p->d, "list them with: grep -i ' t NAME' /proc/kallsyms");
		return -PREC_E_NOSYM;
	}
	prec_attr_init(&e->pub.attr, PERF_TYPE_TRACEPOINT, 0);
	if (set_pmu_name(p, e, "tracepoint"))
		return -ENOMEM;
	return prec_evp_parse_event_tail(p, e);
}

int prec_evp_parse_breakpoint(struct parser *p, struct ev *e)
{
	size_t st;
	long apos, lpos = -1, xpos = -1;
	uint64_t addr, len = 0;
	uint32_t type = 0;
	char num[32];
	int err = 0;

	p->i++; /* ':' after mem */
	apos = st = p->i;
	while (p->i < p->n && ((p->s[p->i] >= '0' && p->s[p->i] <= '9') ||
			       (p->s[p->i] >= 'a' && p->s[p->i] <= 'f') ||
			       (p->s[p->i] >= 'A' && p->s[p->i] <= 'F') || p->s[p->i] == 'x' ||
			       p->s[p->i] == 'X'))
		p->i++;
	if (p->i == st)
		return prec_evp_unexpected(p, "a breakpoint address (mem:0xADDR)");
	if (p->i - st >= sizeof(num) || (memcpy(num, p->s + st, p->i - st), num[p->i - st] = '\0',
					 prec_evp_parse_num(num, &addr)))
		return prec_evp_perr(p, -PREC_E_SYNTAX, apos, "bad breakpoint address '%.*s'",
			    (int)(p->i - st), p->s + st);
	if (prec_evp_peek(p) == '/' && p->i + 1 < p->n && p->s[p->i + 1] >= '0' &&
	    p->s[p->i + 1] <= '9') {
		p->i++;
		lpos = st = p->i;
		while (p->i < p->n && prec_evp_name_char(p->s[p->i]) && p->s[p->i] != '-')
			p->i++;
		if (p->i - st >= sizeof(num) ||
		    (memcpy(num, p->s + st, p->i - st), num[p->i - st] = '\0',
		     prec_evp_parse_num(num, &len)))
			return prec_evp_perr(p, -PREC_E_SYNTAX, lpos, "bad breakpoint length '%.*s'",
				    (int)(p->i - st), p->s + st);
	}
	if (prec_evp_peek(p) == ':') {
		size_t j = p->i + 1;
		bool any = false, other = false;

		while (j < p->n && ((p->s[j] >= 'a' && p->s[j] <= 'z') ||
				    (p->s[j] >= 'A' && p->s[j] <= 'Z'))) {
			if (p->s[j] == 'r' || p->s[j] == 'w' || p->s[j] == 'x')
				any = true;
			else
				other = true;
			j++;
		}
		if (any && other)
			return prec_evp_perr(p, -PREC_E_SYNTAX, (long)p->i + 1,
					     "bad breakpoint access '%.*s'", (int)(j - p->i - 1),
					     p->s + p->i + 1);
		if (any) {
			for (st = p->i + 1; st < j; st++) {
				uint32_t bit = p->s[st] == 'r' ? HW_BREAKPOINT_R :
					       p->s[st] == 'w' ? HW_BREAKPOINT_W : HW_BREAKPOINT_X;

				if (type & bit)
					return prec_evp_perr(p, -PREC_E_SYNTAX, (long)st,
							     "access '%c' given twice", p->s[st]);
				if (bit == HW_BREAKPOINT_X)
					xpos = (long)st;
				type |= bit;
			}
			p->i = j;
		}
	}
	if ((type & HW_BREAKPOINT_X) && (type & HW_BREAKPOINT_RW)) {
		prec_evp_perr(p, -EINVAL, xpos,
			      "an execute breakpoint cannot also watch reads or writes");
		prec_diag_hint(p->d, "use two events: mem:ADDR:x and mem:ADDR:rw");
		return -EINVAL;
	}
	if (!type)
		type = HW_BREAKPOINT_RW;
	if (!len)
		len = type == HW_BREAKPOINT_X ? sizeof(long) : HW_BREAKPOINT_LEN_4;
	if (len != 1 && len != 2 && len != 4 && len != 8) {
		prec_evp_perr(p, -EINVAL, lpos, "breakpoint length %llu is not 1, 2, 4 or 8",
			      (unsigned long long)len);
		return -EINVAL;
	}
	if (type == HW_BREAKPOINT_X && len != sizeof(long)) {
		prec_evp_perr(p, -EINVAL, lpos, "an execute breakpoint has length %zu here",
			      sizeof(long));
		return -EINVAL;
	}
	if (type != HW_BREAKPOINT_X && (addr & (len - 1))) {
		prec_evp_perr(p, -EINVAL, apos, "address %#llx is not aligned to the length %llu",
			      (unsigned long long)addr, (unsigned long long)len);
		return -EINVAL;
	}
	e->pub.kind = PREC_EV_BREAKPOINT;
	prec_attr_init(&e->pub.attr, PERF_TYPE_BREAKPOINT, 0);
	e->pub.attr.bp_type = type;
	e->pub.attr.bp_addr = addr;
	e->pub.attr.bp_len = len;
	e->pub.bp.addr = addr;
	e->pub.bp.len = (uint32_t)len;
	e->pub.bp.type = type;
	err = set_pmu_name(p, e, "breakpoint");
	if (err)
		return err;
	return prec_evp_parse_event_tail(p, e);
}

/* The rules that hold per event once its terms are known. */
int prec_evp_check_event(struct parser *p, struct ev *e)
{
	struct prec_event *pe = &e->pub;
	bool counter = pe->kind == PREC_EV_HW || pe->kind == PREC_EV_SW ||
		       pe->kind == PREC_EV_RAW || pe->kind == PREC_EV_PMU;

	if (p->el->opts.emulate) {
		bool ok = pe->kind == PREC_EV_AUX || pe->kind == PREC_EV_UPROBE ||
			  pe->kind == PREC_EV_URETPROBE || pe->kind == PREC_EV_TRACEPOINT ||
			  pe->kind == PREC_EV_KPROBE || pe->kind == PREC_EV_KRETPROBE ||
			  (pe->kind == PREC_EV_HW &&
			   pe->attr.config == PERF_COUNT_HW_INSTRUCTIONS);

		pe->emulated = true;
		if (!ok) {
			prec_evp_perr(p, -EINVAL, pe->pos,
				      "'%.*s' is not available under --emulate",
				      (int)(p->i - (size_t)pe->pos), p->s + pe->pos);
			prec_diag_hint(p->d, "the software tracer takes intel_pt (or pt), uprobe:, "
					     "uretprobe:, syscalls:sys_enter_*/sys_exit_* and "
					     "instructions/period=N/ events");
			return -EINVAL;
		}
		if (pe->kind == PREC_EV_HW && !pe->period) {
			prec_evp_perr(p, -EINVAL, pe->pos,
				      "instructions needs period=N under --emulate");
			prec_diag_hint(p->d, "the software tracer counts instructions exactly; e.g. "
					     "instructions/period=100000,aux-action=pause/u");
			return -EINVAL;
		}
	}
	/* -c / -F: every event given no period or freq of its own (perf's evsel__config()). */
	if (!pe->period && !pe->freq && pe->kind != PREC_EV_AUX) {
		if (p->el->opts.period) {
			pe->attr.sample_period = p->el->opts.period;
		} else if (p->el->opts.freq) {
			pe->attr.freq = 1;
			pe->attr.sample_freq = p->el->opts.freq;
		}
	}
	if (counter && (pe->aux_action & (PREC_AUX_PAUSE | PREC_AUX_RESUME)) &&
	    !pe->attr.sample_period && !pe->attr.freq) {
		prec_evp_perr(p, -EINVAL, e->action_pos,
			      "a counter that pauses or resumes tracing needs "
			      "period=N or freq=N");
		prec_diag_hint(p->d, "the action runs when the counter overflows, e.g. "
				     "instructions/period=100000,aux-action=pause/");
		return -EINVAL;
	}
	if (!pe->attr.sample_period && !pe->attr.freq &&
	    (pe->kind == PREC_EV_AUX || pe->kind == PREC_EV_TRACEPOINT ||
	     pe->kind == PREC_EV_UPROBE || pe->kind == PREC_EV_URETPROBE ||
	     pe->kind == PREC_EV_KPROBE || pe->kind == PREC_EV_KRETPROBE ||
	     pe->kind == PREC_EV_BREAKPOINT))
		pe->attr.sample_period = 1;
	pe->attr.aux_action = pe->aux_action;
	return 0;
}

/* Modifiers are applied last: group modifiers arrive after the members. */
