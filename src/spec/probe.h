/* SPDX-License-Identifier: MIT */
/*
 * Probes of what this machine's kernel and CPU allow, for `ptrec check` and
 * for the recorder's error messages. Each probe asks the kernel itself
 * (perf_event_open answers) rather than guessing from version numbers.
 */
#ifndef PREC_PROBE_H
#define PREC_PROBE_H

#include "base/common.h"
#include "base/perf_abi.h"

enum prec_aux_action_support {
	PREC_AUXACT_UNKNOWN = 0,
	PREC_AUXACT_KERNEL,     /* the kernel knows aux_action (6.13+) */
	PREC_AUXACT_OLD_KERNEL, /* EINVAL for the reserved word: kernel < 6.13 */
};

/*
 * Asks the kernel whether it knows aux_action, without an AUX PMU: a software
 * event opened with aux_start_paused answers EOPNOTSUPP on 6.13+ (the field
 * is known, the PMU lacks PERF_PMU_CAP_AUX_PAUSE) and EINVAL before (the word
 * is reserved). The same attr without the bit is opened first, so an EINVAL
 * for another reason is not mistaken for an old kernel. Returns the verdict,
 * or a negative errno if even the plain event cannot be opened (@errno_out
 * gets the kernel's answer to the probe in any case).
 */
int prec_probe_aux_action_kernel(int *errno_out);

/*
 * perf's probe for one AUX PMU: its attr with disabled=1, aux_start_paused=1,
 * opened alone for the current process; retried with exclude_kernel, then
 * exclude_hv. Returns 0 when the PMU can pause/resume, -EOPNOTSUPP when the
 * kernel has the feature but the PMU does not, -EINVAL for an old kernel,
 * other -errno as the kernel answered.
 */
int prec_probe_aux_pause(const struct prec_attr *aux_attr);

/* kernel.perf_event_paranoid, or -ENOENT. */
int prec_probe_paranoid(int *level);
/* True when the process may trace the kernel and other users' tasks. */
bool prec_probe_privileged(void);

/* Intel PT CPUID leaf 0x14 subleaves 0 and 1 (eax..edx); false if absent. */
bool prec_cpuid_pt(uint32_t leaf14[2][4]);
/* CPUID leaf 0x15 (eax, ebx, ecx); false if absent. */
bool prec_cpuid_tsc(uint32_t leaf15[3]);
/*
 * Vendor string (13 bytes incl. NUL) and family/model/stepping (display values).
 * CPUID is x86's: elsewhere the leaves are absent (false, zeros) and the
 * vendor is "ARM" on Arm (what picks the CoreSight decoder), else "".
 */
void prec_cpuid_ident(char vendor[13], unsigned *family, unsigned *model, unsigned *stepping);

#endif
