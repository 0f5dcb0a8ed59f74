// SPDX-License-Identifier: MIT
/* The real kernel behind the recorder's seam (record/kernel.h): plain system calls. */
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/util.h"
#include "record/kernel.h"

static int sys_open(void *ctx, struct prec_attr *attr, pid_t pid, int cpu, int group_fd,
		    unsigned long flags)
{
	(void)ctx;
	return prec_perf_event_open(attr, pid, cpu, group_fd, flags);
}

static int sys_ioctl(void *ctx, int fd, unsigned long request, uintptr_t arg)
{
	(void)ctx;
	return ioctl(fd, request, arg) < 0 ? -errno : 0;
}

static int sys_mmap(void *ctx, int fd, size_t len, off_t offset, int prot, void **addr)
{
	void *p;

	(void)ctx;
	p = mmap(NULL, len, prot, MAP_SHARED, fd, offset);
	if (p == MAP_FAILED)
		return -errno;
	*addr = p;
	return 0;
}

static int sys_munmap(void *ctx, void *addr, size_t len)
{
	(void)ctx;
	return munmap(addr, len) ? -errno : 0;
}

static int sys_poll(void *ctx, struct pollfd *fds, size_t n, int timeout_ms)
{
	int r;

	(void)ctx;
	r = poll(fds, (nfds_t)n, timeout_ms);
	return r < 0 ? -errno : r;
}

static ssize_t sys_read(void *ctx, int fd, void *buf, size_t size)
{
	ssize_t r;

	(void)ctx;
	r = read(fd, buf, size);
	return r < 0 ? -errno : r;
}

static int sys_close(void *ctx, int fd)
{
	(void)ctx;
	return close(fd) ? -errno : 0;
}

/* /proc/@name of this host (of PTREC_SYSROOT's tree when set). */
static int sys_proc_open(void *ctx, const char *name)
{
	char path[4096];
	int fd;

	(void)ctx;
	if (prec_sys_path(path, sizeof(path), "/proc/%s", name))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static const struct prec_kernel sys_kernel = {
	.name = "kernel",
	.open = sys_open,
	.ioctl = sys_ioctl,
	.mmap = sys_mmap,
	.munmap = sys_munmap,
	.poll = sys_poll,
	.read = sys_read,
	.close = sys_close,
	.proc_open = sys_proc_open,
};

const struct prec_kernel *prec_kernel_sys(void)
{
	return &sys_kernel;
}
