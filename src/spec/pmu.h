/* SPDX-License-Identifier: MIT */
/*
 * PMU and tracepoint resolution: what the kernel says about its event sources.
 *
 * A PMU is described by sysfs, /sys/bus/event_source/devices/NAME/:
 *   type             the perf_event_attr.type to use
 *   format/TERM      "config:0", "config:14-17", "config1:0-31", "config:0-7,32-35"
 *   caps/CAP         capability values (intel_pt: "psb_cyc" -> "1", ...)
 *   events/ALIAS     event aliases ("event=0x3c,umask=0x00")
 *   nr_addr_filters  present for PMUs that take address filters (AUX tracers)
 *   sinks/SINK       CoreSight sink ids (cs_etm)
 * Tracepoint ids come from tracefs, EVENTS/SUBSYS/NAME/id. Every path is
 * resolved under prec_sysroot() (the PTREC_SYSROOT environment variable), so
 * tests can point the library at fixture trees.
 *
 * An AUX-capable PMU (one that writes an AUX area: a hardware tracer) is
 * recognised by name (intel_pt, intel_bts, cs_etm, arm_spe, arm_spe_N,
 * hisi_ptt*) or by having an nr_addr_filters file, which only AUX tracers
 * expose. The software tracer's intel_pt (see prec_pmu_load_emulated()) is AUX
 * by definition.
 */
#ifndef PREC_PMU_H
#define PREC_PMU_H

#include "base/common.h"
#include "base/perf_abi.h"

/*
 * The attr.type of the emulated intel_pt (the software tracer has no kernel
 * PMU). Chosen far above the dynamic PMU type range the kernel allocates.
 */
#define PREC_PMU_TYPE_EMULATED 0x7e000001u
/* The attr.type of the emulated cs_etm (the software ETMv4 tracer). */
#define PREC_PMU_TYPE_EMULATED_ETM 0x7e000002u

/* One sysfs format term. */
struct prec_pmu_format {
	char *name;       /* "mtc_period" */
	char *text;       /* "config:14-17" as read */
	int word;         /* 0 = config, 1 = config1, 2 = config2, 3 = config3 */
	uint64_t mask;    /* the bits in that word */
	unsigned width;   /* number of bits (popcount of mask) */
};

/* A name = value pair (caps, event aliases, sinks). */
struct prec_pmu_kv {
	char *name;
	char *value;
};

struct prec_pmu {
	char *name;
	uint32_t type;
	bool aux;               /* AUX-capable (a hardware tracer) */
	bool emulated;          /* the software tracer's built-in intel_pt */
	int nr_addr_filters;    /* -1 if the PMU has no such file */
	struct prec_pmu_format *formats;
	size_t nr_formats;
	struct prec_pmu_kv *caps;
	size_t nr_caps;
	struct prec_pmu_kv *events;
	size_t nr_events;
	struct prec_pmu_kv *sinks;
	size_t nr_sinks;
};

/*
 * Loads PMU @name from sysfs. The caller owns *@out (prec_pmu_free()).
 * Returns 0, -PREC_E_NOPMU if there is no such PMU (or @name is not a plain
 * name), or another negative errno if sysfs could not be read.
 */
int prec_pmu_load(const char *name, struct prec_pmu **out);

/*
 * Builds the software tracer's intel_pt: the kernel's intel_pt format table and
 * the capabilities the emulator implements (built into ptrec, no sysfs).
 * Returns 0 or -ENOMEM; the caller owns *@out.
 */
int prec_pmu_load_emulated(struct prec_pmu **out);

/*
 * The software ETMv4 tracer's cs_etm: the formats it implements (timestamp,
 * contextid, contextid1). 0 or -ENOMEM; the caller owns *@out.
 */
int prec_pmu_load_emulated_etm(struct prec_pmu **out);

/* Frees @p (NULL is fine). */
void prec_pmu_free(struct prec_pmu *p);

/* True if @name is the name of a known AUX tracer PMU. */
bool prec_pmu_name_is_aux(const char *name);

/*
 * Lists the PMU names in sysfs, sorted. The caller owns *@names (free with
 * prec_strv_free()). Returns 0 (an empty list if there is no sysfs
 * directory) or a negative errno.
 */
int prec_pmu_names(char ***names, size_t *n);

/*
 * Lists the AUX-capable PMUs in sysfs as one string, "intel_pt, cs_etm", or
 * "none". Writes at most @size bytes into @buf (always terminated).
 */
void prec_pmu_aux_names(char *buf, size_t size);

/* Frees a NULL-terminated or @n-long string vector. */
void prec_strv_free(char **v, size_t n);

/*
 * Parses a format file's text ("config1:0-31", "config:0-7,32-35",
 * "config:5"); @f->name and @f->text are left alone. Returns 0 or -EINVAL.
 */
int prec_pmu_format_parse(const char *text, struct prec_pmu_format *f);

/*
 * Scatters @value into the bits of @f (lowest value bit into the lowest mask
 * bit, as perf does) and returns them in *@bits. Returns 0, or -ERANGE if
 * @value does not fit in @f->width bits.
 */
int prec_pmu_format_encode(const struct prec_pmu_format *f, uint64_t value, uint64_t *bits);

/* Gathers the value of @f back out of @word. */
uint64_t prec_pmu_format_decode(const struct prec_pmu_format *f, uint64_t word);

/* Looks up a term, cap, event alias or sink by name; NULL if absent. */
const struct prec_pmu_format *prec_pmu_format(const struct prec_pmu *p, const char *name);
const char *prec_pmu_cap(const struct prec_pmu *p, const char *name);
const char *prec_pmu_event(const struct prec_pmu *p, const char *name);
const char *prec_pmu_sink(const struct prec_pmu *p, const char *name);

/* attr config word @word (0..3) of @a. */
__u64 *prec_attr_word(struct prec_attr *a, int word);
uint64_t prec_attr_word_get(const struct prec_attr *a, int word);

/*
 * The config perf uses for intel_pt when the user names no term:
 * "tsc,mtc,mtc_period=M,psb_period=P,pt,branch", with mtc/mtc_period only if
 * caps/mtc and caps/mtc_periods allow, psb_period only if caps/psb_cyc and
 * caps/psb_periods allow, M and P the supported values nearest to 3 (from
 * below), and pt,branch only if the format has both. For other PMUs the
 * default is 0. Stores the config words into @a. Returns 0 or -EINVAL.
 */
int prec_pmu_default_config(const struct prec_pmu *p, struct prec_attr *a);

/*
 * Writes @a's config words as this PMU's terms ("pt,tsc,mtc_period=3") into
 * @buf, with raw leftovers as "config=0x..". Returns 0 or -ENOSPC.
 */
int prec_pmu_config_str(const struct prec_pmu *p, const struct prec_attr *a, char *buf,
			size_t size);

/*
 * Finds tracefs: <root>/sys/kernel/tracing, else <root>/sys/kernel/debug/tracing
 * (either must have an events/ directory). When neither is mounted, the
 * process is root and no PTREC_SYSROOT is set, mounts tracefs on
 * /sys/kernel/tracing first. Writes the directory into @buf.
 * Returns 0, -ENOENT when tracefs is not available (with no mount attempt
 * possible), -EPERM/-EACCES, or the mount's errno.
 */
int prec_tracefs_dir(char *buf, size_t size);

/*
 * Reads the id of tracepoint @sys:@name. Returns 0, -EINVAL for names that
 * are not plain (globs, '/', ".."), -ENOENT if there is no such tracepoint,
 * or another negative errno (tracefs missing: see prec_tracefs_dir()).
 */
int prec_tracepoint_id(const char *sys, const char *name, uint64_t *id);

/*
 * Lists tracepoint subsystems (@sys NULL) or the events of subsystem @sys
 * that have an id (perf can open them), sorted. The caller owns *@names (prec_strv_free()). Returns 0 or a negative
 * errno (as prec_tracefs_dir(); -ENOENT if @sys does not exist).
 */
int prec_tracepoint_names(const char *sys, char ***names, size_t *n);

/*
 * The x86-64 system call table, by the names the kernel's syscall tracepoints
 * use (sys_enter_NAME): "newuname" for uname(2), "newstat" for stat(2),
 * "newfstat", "newlstat", "sendfile64", "umount" for umount2(2).
 * prec_syscall_nr() returns the number or -ENOENT; prec_syscall_name()
 * returns the name of @nr or NULL; prec_syscall_at() iterates (NULL at end).
 */
int prec_syscall_nr(const char *name);
const char *prec_syscall_name(int nr);
const char *prec_syscall_at(size_t i, int *nr);

#endif
