/* SPDX-License-Identifier: MIT */
/*
 * The whole-system software tracer, host side (`ptrec record
 * --emulate=system`): boots a small Linux guest under qemu-system-x86_64
 * (TCG, one CPU) with the ptrec-emu-sys.so plugin, which writes Intel PT
 * for the workload's user and kernel code and the perf-format sideband of
 * emulate.h (same ids, sample types and clock), streamed back while it
 * runs.
 *
 * The guest: a Linux kernel image (Debian's linux-image-amd64: the newest
 * /boot/vmlinuz-*, or PTREC_GUEST_KERNEL) booted with nokaslr and
 * mitigations=off, and an initramfs made for the run: ptrec-guest as /init,
 * the workload, its ELF interpreter and the shared libraries it needs
 * (DT_NEEDED, found in the usual library directories) and the uprobes'
 * files, each at its host path. Guest RAM is a file that both the plugin and the host read
 * (emusys_mb.h).
 */
#ifndef PREC_EMUSYS_H
#define PREC_EMUSYS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "record/emulate.h"

/*
 * A window edge: a kernel function's entry or its return (@func), a uprobe
 * (@upath, @uoff) or a counter of the workload's instructions (@period > 0:
 * its user and/or kernel instructions).
 */
struct prec_emusys_trigger {
	int event_index;
	enum prec_emu_action action;
	bool ret;          /* kretprobe: the return to the caller */
	const char *func;  /* the kernel function (borrowed) */
	const char *upath; /* or a uprobe (uretprobe): this file (borrowed)... */
	uint64_t uoff;     /* ...at this offset, in any process that maps it */
	uint64_t period;   /* instructions/period=N: every N instructions */
	bool user, kernel; /* ...of these privilege levels */
};

/*
 * The way to the guest while it runs: the file backing its RAM, open for
 * writing the mailbox's signal (emusys_mb.h). Set up by the caller with
 * prec_emusys_ctl_init(); the run opens and closes @ram_fd.
 */
struct prec_emusys_ctl {
	pthread_mutex_t lock;
	int ram_fd; /* -1 outside the run */
};

struct prec_emusys_config {
	const struct prec_emu_config *pt; /* intel_pt terms, qemu, plugin, truth, argv */
	const char *guest_init;           /* ptrec-guest; required */
	bool user, kernel;                /* the u and k of the intel_pt event */
	/*
	 * Per-CPU recording (no --per-thread): one trace stream per guest CPU,
	 * which each traced task writes while it runs there, with PIP in PSB+;
	 * else one stream per task.
	 */
	bool per_cpu;
	const struct prec_emusys_trigger *triggers;
	size_t ntriggers;
	struct prec_emusys_ctl *ctl;      /* NULL: nothing reaches the guest */
	/*
	 * Filled after the run (if not NULL): a note naming each uprobe's file
	 * that no process of the workload had mapped executable at the
	 * probed offset at its exit ("" if none).
	 */
	char *unmapped;
	size_t unmapped_size;
};

/* What the guest left behind. */
struct prec_emusys_result {
	int wstatus;          /* the workload's wait status in the guest */
	char *ksyms;          /* the guest's /proc/kallsyms text (malloc'd) */
	size_t ksyms_len;
	char *maps;           /* the workload's /proc/PID/maps at its exit (malloc'd) */
	uint8_t *ktext;       /* the kernel's text, _stext.._etext (malloc'd) */
	uint64_t ktext_addr;
	size_t ktext_len;
	uint32_t pid;         /* the workload's pid in the guest */
	uint8_t *vdso;        /* the guest kernel's vDSO image (malloc'd), or NULL */
	size_t vdso_len;
};

/*
 * Boots the guest, runs @cfg->pt->argv in it and delivers the tracer's data
 * to @ops as it arrives; fills @res (free with prec_emusys_result_free).
 * Returns 0, or a negative code with @diag filled (-ENOENT: no kernel,
 * qemu-system-x86_64, plugin, guest init or program; -ENOEXEC; -EPROTO:
 * the plugin or the guest failed; other -errno).
 */
int prec_emusys_run(const struct prec_emusys_config *cfg, const struct prec_emu_ops *ops,
		    struct prec_emusys_result *res, struct prec_diag *diag);

/*
 * Checks a uprobe on file offset @off of the ELF file @path (an executable,
 * PIE or not, or a shared library): the offset must lie in an executable
 * PT_LOAD segment. 0, or -errno with @diag.
 */
int prec_emusys_ucheck(const char *path, uint64_t off, struct prec_diag *diag);

void prec_emusys_ctl_init(struct prec_emusys_ctl *ctl);

/*
 * Asks the guest's first process to send @sig to the workload (it looks
 * every PREC_EMUSYS_MB_POLL_MS of the guest's time; the first signal asked
 * for is the one sent). 0, or -ESRCH when no guest runs.
 */
int prec_emusys_signal(struct prec_emusys_ctl *ctl, int sig);

void prec_emusys_result_free(struct prec_emusys_result *res);

#endif
