// SPDX-License-Identifier: MIT
/* perf_event_attr construction helpers and the attr dump. */
#include <errno.h>
#include <string.h>

#include "spec/attr.h"

static const struct prec_generic_event generic[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, NULL },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "cycles" },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, NULL },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, NULL },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, NULL },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, NULL },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
	  "branch-instructions" },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, NULL },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, NULL },
	{ "stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND,
	  NULL },
	{ "idle-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND,
	  "stalled-cycles-frontend" },
	{ "stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND,
	  NULL },
	{ "idle-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND,
	  "stalled-cycles-backend" },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, NULL },
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, NULL },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, NULL },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, NULL },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "page-faults" },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, NULL },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, "context-switches" },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, NULL },
	{ "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, "cpu-migrations" },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, NULL },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, NULL },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, NULL },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS, NULL },
	{ "dummy", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, NULL },
	{ "bpf-output", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT, NULL },
};

const struct prec_generic_event *prec_generic_event_find(const char *name)
{
	size_t i;

	for (i = 0; i < PREC_ARRAY_SIZE(generic); i++)
		if (!strcmp(generic[i].name, name))
			return &generic[i];
	return NULL;
}

const struct prec_generic_event *prec_generic_events(size_t *n)
{
	*n = PREC_ARRAY_SIZE(generic);
	return generic;
}

int prec_mods_parse(const char *s, size_t n, long pos, struct prec_mods *m,
		    struct prec_diag *d)
{
	size_t i;

	for (i = 0; i < n; i++) {
		long at = pos + (long)i;
		bool *flag = NULL;

		switch (s[i]) {
		case 'u': flag = &m->user; break;
		case 'k': flag = &m->kernel; break;
		case 'h': flag = &m->hv; break;
		case 'G': flag = &m->guest; break;
		case 'H': flag = &m->host; break;
		case 'I': flag = &m->idle; break;
		case 'D': flag = &m->pinned; break;
		case 'e': flag = &m->exclusive; break;
		case 'S': flag = &m->sample_read; break;
		case 'W': flag = &m->weak_group; break;
		case 'P': flag = &m->precise_max; break;
		case 'p':
			if (m->precise >= 3) {
				prec_diag_set(d, -PREC_E_SYNTAX, at,
					      "too many 'p' modifiers: precise_ip goes up to 3");
				prec_diag_hint(d, "use p, pp or ppp");
				return -PREC_E_SYNTAX;
			}
			m->precise++;
			continue;
		default:
			prec_diag_set(d, -PREC_E_SYNTAX, at, "unknown modifier '%c'", s[i]);
			prec_diag_hint(d, "modifiers are u (user), k (kernel), h (hypervisor), "
					  "G (guest), H (host), I (not idle), p/pp/ppp/P (precise), "
					  "D (pinned), e (exclusive), S (sample read), W (weak group)");
			return -PREC_E_SYNTAX;
		}
		if (*flag) {
			prec_diag_set(d, -PREC_E_SYNTAX, at, "modifier '%c' given twice", s[i]);
			return -PREC_E_SYNTAX;
		}
		*flag = true;
	}
	if (m->precise && m->precise_max) {
		prec_diag_set(d, -PREC_E_SYNTAX, pos, "'P' and 'p' modifiers together");
		prec_diag_hint(d, "P already asks for the highest precise level");
		return -PREC_E_SYNTAX;
	}
	return 0;
}

void prec_mods_merge(struct prec_mods *a, const struct prec_mods *b)
{
	a->user |= b->user;
	a->kernel |= b->kernel;
	a->hv |= b->hv;
	a->guest |= b->guest;
	a->host |= b->host;
	a->idle |= b->idle;
	a->pinned |= b->pinned;
	a->exclusive |= b->exclusive;
	a->sample_read |= b->sample_read;
	a->weak_group |= b->weak_group;
	a->precise_max |= b->precise_max;
	if (b->precise > a->precise)
		a->precise = b->precise;
}

void prec_mods_apply(const struct prec_mods *m, struct prec_attr *a)
{
	/* perf: naming any of u/k/h excludes the privilege levels not named. */
	if (m->user || m->kernel || m->hv) {
		a->exclude_user = !m->user;
		a->exclude_kernel = !m->kernel;
		a->exclude_hv = !m->hv;
	}
	/* G alone: guest only; H alone: host only; both: both. */
	if (m->guest != m->host) {
		a->exclude_host = m->guest;
		a->exclude_guest = m->host;
	}
	a->exclude_idle = m->idle;
	a->pinned = m->pinned;
	a->exclusive = m->exclusive;
	a->precise_ip = m->precise_max ? 3 : (unsigned)m->precise;
}

void prec_attr_init(struct prec_attr *a, uint32_t type, uint64_t config)
{
	memset(a, 0, sizeof(*a));
	a->type = type;
	a->size = PREC_ATTR_SIZE;
	a->config = config;
}

void prec_attr_sample_defaults(struct prec_attr *a, bool aux_tracer)
{
	a->sample_type |= PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			  PERF_SAMPLE_CPU;
	if (!aux_tracer)
		a->sample_type |= PERF_SAMPLE_IP;
	/*
	 * A counter given neither period nor freq samples at perf record's
	 * default frequency (its opts.freq 4000 applied in evsel__config()),
	 * rather than never. Not a member of a leader-sampling group (read_format
	 * GROUP without PERF_SAMPLE_READ): it only counts.
	 */
	if (!aux_tracer && !a->sample_period && !a->freq &&
	    !((a->read_format & PERF_FORMAT_GROUP) && !(a->sample_type & PERF_SAMPLE_READ))) {
		a->freq = 1;
		a->sample_freq = PREC_DEFAULT_FREQ;
	}
	/*
	 * PERIOD only with freq, as perf's evsel__config() does: a software
	 * event (tracepoints, uprobes and breakpoints are software events too)
	 * whose sample_type has PERIOD and no freq overflows on every event,
	 * whatever its sample_period (perf_swevent_event()).
	 */
	if (a->freq)
		a->sample_type |= PERF_SAMPLE_PERIOD;
	a->sample_id_all = 1;
}

struct flag_name {
	uint64_t bit;
	const char *name;
};

static const struct flag_name sample_flags[] = {
	{ PERF_SAMPLE_IP, "IP" }, { PERF_SAMPLE_TID, "TID" }, { PERF_SAMPLE_TIME, "TIME" },
	{ PERF_SAMPLE_ADDR, "ADDR" }, { PERF_SAMPLE_READ, "READ" },
	{ PERF_SAMPLE_CALLCHAIN, "CALLCHAIN" }, { PERF_SAMPLE_ID, "ID" },
	{ PERF_SAMPLE_CPU, "CPU" }, { PERF_SAMPLE_PERIOD, "PERIOD" },
	{ PERF_SAMPLE_STREAM_ID, "STREAM_ID" }, { PERF_SAMPLE_RAW, "RAW" },
	{ PERF_SAMPLE_BRANCH_STACK, "BRANCH_STACK" }, { PERF_SAMPLE_REGS_USER, "REGS_USER" },
	{ PERF_SAMPLE_STACK_USER, "STACK_USER" }, { PERF_SAMPLE_WEIGHT, "WEIGHT" },
	{ PERF_SAMPLE_DATA_SRC, "DATA_SRC" }, { PERF_SAMPLE_IDENTIFIER, "IDENTIFIER" },
	{ PERF_SAMPLE_TRANSACTION, "TRANSACTION" }, { PERF_SAMPLE_REGS_INTR, "REGS_INTR" },
	{ PERF_SAMPLE_PHYS_ADDR, "PHYS_ADDR" }, { PERF_SAMPLE_AUX, "AUX" },
	{ PERF_SAMPLE_CGROUP, "CGROUP" }, { PERF_SAMPLE_DATA_PAGE_SIZE, "DATA_PAGE_SIZE" },
	{ PERF_SAMPLE_CODE_PAGE_SIZE, "CODE_PAGE_SIZE" },
	{ PERF_SAMPLE_WEIGHT_STRUCT, "WEIGHT_STRUCT" },
};

static const struct flag_name read_flags[] = {
	{ PERF_FORMAT_TOTAL_TIME_ENABLED, "TOTAL_TIME_ENABLED" },
	{ PERF_FORMAT_TOTAL_TIME_RUNNING, "TOTAL_TIME_RUNNING" },
	{ PERF_FORMAT_ID, "ID" }, { PERF_FORMAT_GROUP, "GROUP" }, { PERF_FORMAT_LOST, "LOST" },
};

static int dump_flags(struct prec_buf *b, const char *indent, const char *name, uint64_t v,
		      const struct flag_name *t, size_t n)
{
	size_t i;
	int err = prec_buf_printf(b, "%s%-26s ", indent, name);
	const char *sep = "";

	for (i = 0; i < n && !err; i++) {
		if (!(v & t[i].bit))
			continue;
		err = prec_buf_printf(b, "%s%s", sep, t[i].name);
		v &= ~t[i].bit;
		sep = "|";
	}
	if (!err && v)
		err = prec_buf_printf(b, "%s%#llx", sep, (unsigned long long)v);
	if (!err)
		err = prec_buf_printf(b, "\n");
	return err;
}

#define DUMP_U(field)                                                                   \
	do {                                                                            \
		if (!err && a->field)                                                   \
			err = prec_buf_printf(b, "%s%-26s %llu\n", indent, #field,       \
					      (unsigned long long)a->field);            \
	} while (0)
#define DUMP_X(field)                                                                   \
	do {                                                                            \
		if (!err && a->field)                                                   \
			err = prec_buf_printf(b, "%s%-26s %#llx\n", indent, #field,      \
					      (unsigned long long)a->field);            \
	} while (0)

int prec_attr_dump(struct prec_buf *b, const struct prec_attr *a, const char *indent)
{
	int err = 0;
	bool bp = a->type == PERF_TYPE_BREAKPOINT;

	err = prec_buf_printf(b, "%s%-26s %u\n", indent, "type", a->type);
	DUMP_U(size);
	DUMP_X(config);
	if (!err && a->sample_period)
		err = prec_buf_printf(b, "%s%-26s %llu\n", indent,
				      a->freq ? "sample_freq" : "sample_period",
				      (unsigned long long)a->sample_period);
	if (!err && a->sample_type)
		err = dump_flags(b, indent, "sample_type", a->sample_type, sample_flags,
				 PREC_ARRAY_SIZE(sample_flags));
	if (!err && a->read_format)
		err = dump_flags(b, indent, "read_format", a->read_format, read_flags,
				 PREC_ARRAY_SIZE(read_flags));
	DUMP_U(disabled);
	DUMP_U(inherit);
	DUMP_U(pinned);
	DUMP_U(exclusive);
	DUMP_U(exclude_user);
	DUMP_U(exclude_kernel);
	DUMP_U(exclude_hv);
	DUMP_U(exclude_idle);
	DUMP_U(mmap);
	DUMP_U(comm);
	DUMP_U(freq);
	DUMP_U(inherit_stat);
	DUMP_U(enable_on_exec);
	DUMP_U(task);
	DUMP_U(watermark);
	DUMP_U(precise_ip);
	DUMP_U(mmap_data);
	DUMP_U(sample_id_all);
	DUMP_U(exclude_host);
	DUMP_U(exclude_guest);
	DUMP_U(exclude_callchain_kernel);
	DUMP_U(exclude_callchain_user);
	DUMP_U(mmap2);
	DUMP_U(comm_exec);
	DUMP_U(use_clockid);
	DUMP_U(context_switch);
	DUMP_U(write_backward);
	DUMP_U(namespaces);
	DUMP_U(ksymbol);
	DUMP_U(bpf_event);
	DUMP_U(aux_output);
	DUMP_U(cgroup);
	DUMP_U(text_poke);
	DUMP_U(build_id);
	DUMP_U(inherit_thread);
	DUMP_U(remove_on_exec);
	DUMP_U(sigtrap);
	DUMP_U(wakeup_events);
	DUMP_U(bp_type);
	if (bp) {
		DUMP_X(bp_addr);
		DUMP_U(bp_len);
	} else {
		DUMP_X(config1);
		DUMP_X(config2);
	}
	DUMP_X(branch_sample_type);
	DUMP_X(sample_regs_user);
	DUMP_U(sample_stack_user);
	DUMP_U(clockid);
	DUMP_X(sample_regs_intr);
	DUMP_U(aux_watermark);
	DUMP_U(sample_max_stack);
	DUMP_U(aux_sample_size);
	DUMP_U(aux_start_paused);
	DUMP_U(aux_pause);
	DUMP_U(aux_resume);
	DUMP_X(sig_data);
	DUMP_X(config3);
	return err;
}
