/* SPDX-License-Identifier: MIT */
/* The limits the kernel model applies to mappings (record/kmodel.h). */
#ifndef PREC_KMODEL_LIMITS_H
#define PREC_KMODEL_LIMITS_H

#include <stdbool.h>
#include <stdint.h>

/*
 * What perf_mmap() charges a mapping against, and who asks: the kernel's
 * sysctls and the caller's limit and capability.
 */
struct prec_kmodel_limits {
	uint64_t mlock_kb;         /* kernel.perf_event_mlock_kb (per online CPU) */
	uint64_t memlock_bytes;    /* RLIMIT_MEMLOCK (UINT64_MAX: unlimited) */
	int paranoid;              /* kernel.perf_event_paranoid */
	bool cap_ipc_lock;         /* CAP_IPC_LOCK in the effective set */
	uint64_t max_sample_rate;  /* kernel.perf_event_max_sample_rate */
	unsigned hz;               /* the kernel's CONFIG_HZ (ticks a second); 0: 250 */
};

#endif
