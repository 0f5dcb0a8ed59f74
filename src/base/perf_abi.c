// SPDX-License-Identifier: MIT
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/perf_abi.h"

int prec_perf_event_open(struct prec_attr *attr, int pid, int cpu, int group_fd,
			 unsigned long flags)
{
	long fd;

	if (!attr->size)
		attr->size = PREC_ATTR_SIZE;
	fd = syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
	return fd < 0 ? -errno : (int)fd;
}

const char *prec_aux_action_str(uint32_t a)
{
	static const char *const names[] = {
		"none", "start-paused", "pause", "start-paused+pause",
		"resume", "start-paused+resume", "pause+resume", "start-paused+pause+resume",
	};

	return names[a & 7];
}
