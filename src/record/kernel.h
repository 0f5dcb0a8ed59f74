/* SPDX-License-Identifier: MIT */
/*
 * The recorder's one way into the kernel's perf interface: opening events,
 * the ioctls it issues on them, mapping their data ring and AUX area,
 * waiting on them, reading and closing them. Everything above (groups,
 * attrs, per-CPU or per-thread opens, SET_OUTPUT, mmap, enable/disable, the
 * drain loop) is written against this table, so the same recorder can run
 * over another implementation: prec_kernel_sys() is the real kernel (plain
 * system calls); tests put a fake in its place (tests/unit/test_kernel_seam.c),
 * and record/kmodel.h is a user-space model of kernel/events/ that backs
 * the software tracers (see docs/DESIGN.md, "One recorder, two kernels").
 *
 * Contract, the same for every implementation:
 *   - every operation returns 0 (or a count, or an fd) on success and a
 *     negative errno on failure, never -1 with errno;
 *   - an fd from open() is an int the implementation understands; the
 *     recorder passes it back unchanged and never gives it to another
 *     system call except through poll() here;
 *   - poll() takes a mixed set: event fds from open() and ordinary fds
 *     (a stop pipe, a pidfd); an implementation answers for its own fds and
 *     hands the others to the real poll(2);
 *   - mapped memory belongs to the implementation until munmap().
 */
#ifndef PREC_KERNEL_H
#define PREC_KERNEL_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>

#include "base/common.h"
#include "base/perf_abi.h"

struct prec_kernel {
	const char *name; /* "kernel" for the real one */
	void *ctx;        /* the implementation's state, passed to every call */
	/* perf_event_open(2): the fd, or -errno. A zero attr->size means the full size. */
	int (*open)(void *ctx, struct prec_attr *attr, pid_t pid, int cpu, int group_fd,
		    unsigned long flags);
	/*
	 * ioctl(2) on an event: PERF_EVENT_IOC_ENABLE/DISABLE (arg 0),
	 * SET_OUTPUT (arg: the target fd, or -1), ID (arg: a uint64_t *),
	 * PAUSE_OUTPUT (arg 0 or 1), SET_FILTER (arg: the filter string).
	 * 0 or -errno.
	 */
	int (*ioctl)(void *ctx, int fd, unsigned long request, uintptr_t arg);
	/*
	 * A shared mapping of @len bytes at @offset of event @fd with @prot
	 * (PROT_READ | PROT_WRITE, or PROT_READ alone): offset 0 is the control
	 * page and the data ring, the AUX area is at the control page's
	 * aux_offset. An AUX area mapped without PROT_WRITE is in overwrite
	 * (snapshot) mode: the kernel ignores aux_tail and wraps (perf_mmap()
	 * passes no RING_BUFFER_WRITABLE to rb_alloc_aux()). *@addr on success;
	 * 0 or -errno.
	 */
	int (*mmap)(void *ctx, int fd, size_t len, off_t offset, int prot, void **addr);
	int (*munmap)(void *ctx, void *addr, size_t len);
	/* poll(2) over event fds and ordinary fds: the number ready, or -errno. */
	int (*poll)(void *ctx, struct pollfd *fds, size_t n, int timeout_ms);
	/* read(2) of an event (its count, by attr.read_format): bytes read, or -errno. */
	ssize_t (*read)(void *ctx, int fd, void *buf, size_t size);
	int (*close)(void *ctx, int fd);
	/*
	 * NULL for the real kernel. A model whose tasks are not this host's
	 * processes runs the workload itself; the recorder then leaves /proc,
	 * tracefs and its own fork/exec out of the recording.
	 */
	const struct prec_kernel_tasks *tasks;
	/*
	 * 0 for the real kernel (the online CPUs are in sysfs). A model's CPUs:
	 * 0 .. ncpus-1, all of them online and possible.
	 */
	int ncpus;
	/*
	 * The kernel's own files the recorder copies into the trace so that
	 * kernel code decodes elsewhere: /proc/@name for "kallsyms", "modules"
	 * and "kcore" (an ELF core file whose PT_LOAD segments map kernel
	 * virtual addresses); and "vdso", the image of a model's own vDSO
	 * (the guest kernel's, where the host's would be the wrong code). Opens
	 * it for reading: an fd the caller closes
	 * with close(2), or -errno (-ENOENT: this kernel has no such file).
	 * NULL: none of them.
	 */
	int (*proc_open)(void *ctx, const char *name);
};

/* The workload of a kernel that runs its own tasks (a model). */
struct prec_kernel_tasks {
	/*
	 * Makes the task that will run @argv, held until start(): its pid (the
	 * one to open events on) in *@pid. 0 or -errno with @d filled.
	 */
	int (*prepare)(void *ctx, char *const argv[], pid_t *pid, struct prec_diag *d);
	/*
	 * Lets it run, as exec: events with enable_on_exec start now
	 * (perf_event_enable_on_exec()). 0 or -errno with @d filled.
	 */
	int (*start)(void *ctx, struct prec_diag *d);
	/*
	 * 1 once the workload and everything it produced has been delivered
	 * (its wait status in *@wstatus), 0 while it runs (@block: wait for
	 * the end), or a negative code with @d filled when the run failed.
	 */
	int (*wait)(void *ctx, bool block, int *wstatus, struct prec_diag *d);
	/* Sends @sig to the workload if it still runs. */
	void (*kill)(void *ctx, int sig);
	/*
	 * Optional: when the workload began to run (prec_now_ns()), 0 while
	 * it has not yet: a model whose start takes long (the whole-system
	 * tracer boots a guest first) counts -d from there. NULL: from start().
	 */
	uint64_t (*started_at)(void *ctx);
};

/* The real kernel. */
const struct prec_kernel *prec_kernel_sys(void);

/* The ioctls by name, each 0 or -errno. */
static inline int prec_kernel_enable(const struct prec_kernel *k, int fd)
{
	return k->ioctl(k->ctx, fd, PERF_EVENT_IOC_ENABLE, 0);
}

static inline int prec_kernel_disable(const struct prec_kernel *k, int fd)
{
	return k->ioctl(k->ctx, fd, PERF_EVENT_IOC_DISABLE, 0);
}

static inline int prec_kernel_set_output(const struct prec_kernel *k, int fd, int to)
{
	return k->ioctl(k->ctx, fd, PERF_EVENT_IOC_SET_OUTPUT, (uintptr_t)(intptr_t)to);
}

static inline int prec_kernel_id(const struct prec_kernel *k, int fd, uint64_t *id)
{
	return k->ioctl(k->ctx, fd, PERF_EVENT_IOC_ID, (uintptr_t)id);
}

static inline int prec_kernel_pause_output(const struct prec_kernel *k, int fd, bool pause)
{
	return k->ioctl(k->ctx, fd, PERF_EVENT_IOC_PAUSE_OUTPUT, pause);
}

/*
 * PERF_EVENT_IOC_SET_FILTER with an AUX PMU's address filters (the kernel's
 * perf_event_set_addr_filter(): "filter 0xOFF/0xSIZE@/path", ...). 0 or -errno.
 */
static inline int prec_kernel_set_filter(const struct prec_kernel *k, int fd, const char *filter)
{
	return k->ioctl(k->ctx, fd, PERF_EVENT_IOC_SET_FILTER, (uintptr_t)filter);
}

#endif
