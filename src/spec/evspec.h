/* SPDX-License-Identifier: MIT */
/*
 * The event specification front end: perf's -e syntax, parsed by hand,
 * resolved against sysfs/tracefs/ELF files, regrouped and validated, and
 * turned into one struct prec_attr per event. The grammar is in ptrec(1),
 * EVENT SPECIFICATION.
 *
 * Use:
 *	struct prec_evspec_opts o = { .emulate = false };
 *	struct prec_evlist *el = prec_evlist_new(&o);
 *	struct prec_diag d;
 *	for each -e argument:
 *		if (prec_evlist_add(el, arg, &d) < 0) report d against arg
 *	if (prec_evlist_finish(el, &d) < 0)
 *		report d against prec_evlist_diag_text(el)
 *	then read the events and groups; prec_evlist_free(el).
 *
 * Errors fill a struct prec_diag: msg says what is wrong, pos is the byte
 * offset into the spec text of the bad character (for cli_diag()'s caret),
 * hint says what to do ("did you mean", valid values, how to get a tracer).
 */
#ifndef PREC_EVSPEC_H
#define PREC_EVSPEC_H

#include "base/common.h"
#include "base/perf_abi.h"
#include "base/util.h"

enum prec_ev_kind {
	PREC_EV_HW,          /* generic hardware event: cycles, instructions, ... */
	PREC_EV_SW,          /* generic software event: cpu-clock, dummy, ... */
	PREC_EV_RAW,         /* rNNNN */
	PREC_EV_TRACEPOINT,  /* subsys:name */
	PREC_EV_UPROBE,      /* uprobe:PATH:SYMBOL[+OFF] */
	PREC_EV_URETPROBE,   /* uretprobe:PATH:SYMBOL */
	PREC_EV_BREAKPOINT,  /* mem:ADDR[/LEN][:rwx] */
	PREC_EV_PMU,         /* pmu/terms/ of a PMU that is not an AUX tracer */
	PREC_EV_AUX,         /* the AUX area tracer: intel_pt, cs_etm, ... */
	PREC_EV_KPROBE,      /* kprobe:FUNCTION[+OFF] */
	PREC_EV_KRETPROBE,   /* kretprobe:FUNCTION */
};

/* "hardware", "software", "raw", "tracepoint", "uprobe", ... */
const char *prec_ev_kind_name(enum prec_ev_kind k);

struct prec_evspec_opts {
	/*
	 * Record with the software tracer: intel_pt and pt name the emulated
	 * intel_pt (whatever the machine has), the tracer traces user space
	 * only, and the only other events allowed are its triggers (uprobe:,
	 * uretprobe:, syscalls:sys_enter_* / sys_exit_*, instructions with a
	 * period). Syscall tracepoints resolve without tracefs.
	 */
	bool emulate;
	/* ...the whole-system one (--emulate=system): the tracer may trace the kernel too. */
	bool emulate_kernel;
	/*
	 * The recorder uses per-CPU rings (not --per-thread, -t or --emulate):
	 * cs_etm then gets perf's per-CPU defaults, timestamp and contextid,
	 * for each of them the user's terms do not set.
	 */
	bool per_cpu;
	/*
	 * perf record's -c and -F: the sample period (period, non-zero) or
	 * frequency (freq) of every event but the AUX tracer whose spec gives
	 * neither period= nor freq=. period wins over freq, as in perf.
	 */
	uint64_t period;
	uint64_t freq;
};

/* syscall direction of a syscalls:sys_enter_* / sys_exit_* tracepoint */
enum { PREC_SYSCALL_NONE = 0, PREC_SYSCALL_ENTER = 1, PREC_SYSCALL_EXIT = 2 };

/*
 * One event. Everything here is owned by the evlist and read-only for
 * users; pointers live as long as the evlist.
 */
struct prec_event {
	int idx;                /* index in the evlist (final after finish) */
	int arg;                /* which prec_evlist_add() call it came from (0-based) */
	const char *spec;       /* that call's text */
	long pos;               /* byte offset of the event in @spec */
	char *text;             /* the event as written (group modifiers excluded) */
	char *name;             /* the name= term, else @text */
	enum prec_ev_kind kind;
	char *pmu;              /* "intel_pt", "software", "tracepoint", "uprobe", ... */
	uint32_t pmu_type;      /* == attr.type */
	bool aux;               /* this is the AUX area tracer */
	bool emulated;          /* made for the software tracer (--emulate) */
	uint32_t aux_action;    /* PREC_AUX_START_PAUSED | PREC_AUX_PAUSE | PREC_AUX_RESUME */
	bool snapshot;          /* the snapshot term: a pause trigger whose firing takes a
				 * snapshot of the AUX area (ptrec record -S) */
	int group;              /* group index (final after finish) */
	int leader;             /* event index of its group's leader (final after finish) */
	bool in_braces;         /* written inside { } */
	bool sample_read;       /* S modifier: the recorder should add PERF_SAMPLE_READ */
	bool weak_group;        /* W modifier */
	/*
	 * The attr. sample_type, read_format, disabled, inherit, enable_on_exec,
	 * mmap*, comm*, sample_id_all and the like are left 0 for the recorder
	 * (see prec_attr_sample_defaults()). sample_period is 1 for the AUX
	 * tracer, tracepoints, probes and breakpoints unless given. For uprobes
	 * config1 (uprobe_path) points at @uprobe.path, valid while the evlist
	 * lives: re-point it in copies.
	 */
	struct prec_attr attr;
	/* PREC_EV_UPROBE / PREC_EV_URETPROBE */
	struct {
		char *path;             /* absolute path of the ELF file */
		char *symbol;           /* function name or "0x..." */
		uint64_t sym_offset;    /* +OFFSET */
		uint64_t vaddr;         /* link-time virtual address of the probe */
		uint64_t file_offset;   /* == attr.probe_offset */
	} uprobe;
	/*
	 * PREC_EV_KPROBE / PREC_EV_KRETPROBE: a kernel function's entry (+OFF)
	 * or return. attr is a tracepoint's whose id (config) the recorder fills
	 * when it creates the probe in tracefs.
	 */
	struct {
		char *func;
		uint64_t offset;
	} kprobe;
	/* PREC_EV_TRACEPOINT */
	struct {
		char *sys, *name;
		uint64_t id;            /* tracefs id (0 when emulated) */
		int syscall_nr;         /* x86-64 number for syscalls:sys_*, else -1 */
		int syscall_dir;        /* PREC_SYSCALL_* */
	} tp;
	/* PREC_EV_BREAKPOINT */
	struct {
		uint64_t addr;
		uint32_t len;           /* 1, 2, 4 or 8 */
		uint32_t type;          /* HW_BREAKPOINT_R|W or X */
	} bp;
	/* counters: the period (0 if none given) or frequency */
	uint64_t period;
	uint64_t freq;
};

struct prec_evlist;

/* A new, empty list; @opts may be NULL. Returns NULL without memory. */
struct prec_evlist *prec_evlist_new(const struct prec_evspec_opts *opts);
/* Frees @el (NULL is fine). */
void prec_evlist_free(struct prec_evlist *el);

/*
 * Parses and resolves one -e argument, appending its events (and groups).
 * On error nothing of @spec is kept, @d->pos is an offset into @spec, and a
 * negative code is returned (-PREC_E_SYNTAX, -PREC_E_NOPMU, -PREC_E_NOSYM,
 * -ENOENT, -ERANGE, -EINVAL, -ENOMEM, ...). Not allowed after finish.
 */
int prec_evlist_add(struct prec_evlist *el, const char *spec, struct prec_diag *d);

/*
 * Regroups and validates (ptrec(1): "Regrouping", "Validation"):
 * events with aux pause/resume, aux-output or aux-sample-size that are not
 * in braces join the group of the latest AUX event before them; groups are
 * then laid out contiguously (leader first) and the AUX rules are checked.
 * On error @d->pos is an offset into prec_evlist_diag_text(el), and the list
 * can only be freed. Returns 0 (also when already finished) or a negative
 * code. An empty list is an error.
 */
int prec_evlist_finish(struct prec_evlist *el, struct prec_diag *d);

/* The spec text the last error's position refers to (NULL if none). */
const char *prec_evlist_diag_text(const struct prec_evlist *el);

size_t prec_evlist_nr_events(const struct prec_evlist *el);
const struct prec_event *prec_evlist_event(const struct prec_evlist *el, size_t i);
/* After finish: number of groups; group @g has events [*first, *first + *n). */
size_t prec_evlist_nr_groups(const struct prec_evlist *el);
int prec_evlist_group(const struct prec_evlist *el, size_t g, size_t *first, size_t *n);
/* Index of the AUX tracer event, or -1. */
int prec_evlist_aux_index(const struct prec_evlist *el);
bool prec_evlist_emulated(const struct prec_evlist *el);

/*
 * Appends a description of the resolved groups and every attr field that is
 * set (perf -vv style), for `ptrec record --dry-run` and `ptrec list -e`.
 * Returns 0 or -ENOMEM.
 */
int prec_evlist_dump(const struct prec_evlist *el, struct prec_buf *b);

/*
 * Convenience: one spec, parsed, finished. On success *@out is the list
 * (caller frees); on error *@out is NULL and @d describes the problem.
 */
int prec_evspec_parse(const char *spec, const struct prec_evspec_opts *opts,
		      struct prec_evlist **out, struct prec_diag *d);


#endif
