// SPDX-License-Identifier: MIT
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perf_abi.h"

int prec_perf_event_open(struct prec_attr *attr, int pid, int cpu, int group_fd,
			 unsigned long flags)
{
	long fd;

	if (!attr->size)
		attr->size = PREC_ATTR_SIZE;
	fd = syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
	return fd < 0 ? -errno : (int)fd;
}
