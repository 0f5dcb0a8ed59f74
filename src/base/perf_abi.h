/* SPDX-License-Identifier: MIT */
/*
 * The parts of the perf_event ABI that the distribution's kernel headers may
 * lack. Debian 12's linux-libc-dev (6.1) predates aux_action (Linux 6.13) and
 * config3 (6.3), so ptrec carries its own copy of struct perf_event_attr in
 * the mainline layout, checked against the documented offsets below. All
 * PERF_* constants still come from <linux/perf_event.h>.
 */
#ifndef PREC_PERF_ABI_H
#define PREC_PERF_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>
#include <linux/types.h>

struct prec_attr {
	__u32 type;
	__u32 size;
	__u64 config;
	union {
		__u64 sample_period;
		__u64 sample_freq;
	};
	__u64 sample_type;
	__u64 read_format;
	__u64 disabled : 1, inherit : 1, pinned : 1, exclusive : 1,
		exclude_user : 1, exclude_kernel : 1, exclude_hv : 1,
		exclude_idle : 1, mmap : 1, comm : 1, freq : 1,
		inherit_stat : 1, enable_on_exec : 1, task : 1, watermark : 1,
		precise_ip : 2, mmap_data : 1, sample_id_all : 1,
		exclude_host : 1, exclude_guest : 1, exclude_callchain_kernel : 1,
		exclude_callchain_user : 1, mmap2 : 1, comm_exec : 1,
		use_clockid : 1, context_switch : 1, write_backward : 1,
		namespaces : 1, ksymbol : 1, bpf_event : 1, aux_output : 1,
		cgroup : 1, text_poke : 1, build_id : 1, inherit_thread : 1,
		remove_on_exec : 1, sigtrap : 1, __reserved_1 : 26;
	union {
		__u32 wakeup_events;
		__u32 wakeup_watermark;
	};
	__u32 bp_type;
	union {
		__u64 bp_addr;
		__u64 kprobe_func;
		__u64 uprobe_path;
		__u64 config1;
	};
	union {
		__u64 bp_len;
		__u64 kprobe_addr;
		__u64 probe_offset;
		__u64 config2;
	};
	__u64 branch_sample_type;
	__u64 sample_regs_user;
	__u32 sample_stack_user;
	__s32 clockid;
	__u64 sample_regs_intr;
	__u32 aux_watermark;
	__u16 sample_max_stack;
	__u16 __reserved_2;
	__u32 aux_sample_size;
	union {
		__u32 aux_action;
		struct {
			__u32 aux_start_paused : 1, aux_pause : 1, aux_resume : 1,
				__reserved_3 : 29;
		};
	};
	__u64 sig_data;
	__u64 config3;
};

#define PREC_ATTR_SIZE 136 /* PERF_ATTR_SIZE_VER8 */

/* aux_action bits (LSB first) */
#define PREC_AUX_START_PAUSED 0x1u
#define PREC_AUX_PAUSE 0x2u
#define PREC_AUX_RESUME 0x4u

_Static_assert(offsetof(struct prec_attr, config1) == 56, "config1 offset");
_Static_assert(offsetof(struct prec_attr, sample_regs_intr) == 96, "regs_intr");
_Static_assert(offsetof(struct prec_attr, aux_watermark) == 104, "aux_watermark");
_Static_assert(offsetof(struct prec_attr, aux_sample_size) == 112, "aux_sample_size");
_Static_assert(offsetof(struct prec_attr, aux_action) == 116, "aux_action offset");
_Static_assert(offsetof(struct prec_attr, sig_data) == 120, "sig_data offset");
_Static_assert(offsetof(struct prec_attr, config3) == 128, "config3 offset");
_Static_assert(sizeof(struct prec_attr) == PREC_ATTR_SIZE, "attr size");

/* Record types and flags newer than the 6.1 headers. */
#ifndef PERF_RECORD_AUX_OUTPUT_HW_ID
#define PERF_RECORD_AUX_OUTPUT_HW_ID 21
#endif
#ifndef PERF_AUX_FLAG_CORESIGHT_FORMAT_RAW
#define PERF_AUX_FLAG_CORESIGHT_FORMAT_RAW 0x0100
#endif
#ifndef PERF_AUX_FLAG_COLLISION
#define PERF_AUX_FLAG_COLLISION 0x08
#endif
#ifndef PERF_AUX_FLAG_PMU_FORMAT_TYPE_MASK
#define PERF_AUX_FLAG_PMU_FORMAT_TYPE_MASK 0xff00
#endif

/* perf_event_open(2); returns the fd or -errno. */
int prec_perf_event_open(struct prec_attr *attr, int pid, int cpu, int group_fd,
			 unsigned long flags);

/* "start-paused", "pause", "resume" joined by '+', or "none". */
const char *prec_aux_action_str(uint32_t aux_action);

#endif
