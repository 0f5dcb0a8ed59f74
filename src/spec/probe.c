// SPDX-License-Identifier: MIT
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/syscall.h>

#include "spec/probe.h"
#include "base/util.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif

static int try_open(struct prec_attr *a)
{
	int fd = prec_perf_event_open(a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return fd;
}

int prec_probe_aux_action_kernel(int *errno_out)
{
	struct prec_attr a;
	int err;

	memset(&a, 0, sizeof(a));
	a.size = PREC_ATTR_SIZE;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	err = try_open(&a);
	if (errno_out)
		*errno_out = -err;
	if (err)
		return err;
	a.aux_start_paused = 1;
	err = try_open(&a);
	if (errno_out)
		*errno_out = -err;
	if (err == -EOPNOTSUPP)
		return PREC_AUXACT_KERNEL;
	if (err == -EINVAL || err == -E2BIG)
		return PREC_AUXACT_OLD_KERNEL;
	/* A software event accepting the bit would be a new kernel behaviour. */
	return err ? PREC_AUXACT_UNKNOWN : PREC_AUXACT_KERNEL;
}

int prec_probe_aux_pause(const struct prec_attr *aux_attr)
{
	struct prec_attr a = *aux_attr;
	int err;

	a.size = PREC_ATTR_SIZE;
	a.disabled = 1;
	a.aux_action = PREC_AUX_START_PAUSED;
	err = try_open(&a);
	if (err && err != -EOPNOTSUPP && err != -EINVAL) {
		a.exclude_kernel = 1;
		err = try_open(&a);
	}
	if (err && err != -EOPNOTSUPP && err != -EINVAL) {
		a.exclude_hv = 1;
		err = try_open(&a);
	}
	if (err == -EINVAL) {
		/* Tell an old kernel from a bad attr: does it open without the bit? */
		int plain;

		a.aux_action = 0;
		plain = try_open(&a);
		/* The attr is bad without the bit too: not the kernel's age. */
		if (plain)
			return plain == -EINVAL ? -EPROTO : plain;
		return -EINVAL;
	}
	return err;
}

int prec_probe_paranoid(int *level)
{
	char p[256];
	char *s;
	long n;
	int err;

	err = prec_sys_path(p, sizeof(p), "/proc/sys/kernel/perf_event_paranoid");
	if (err)
		return err;
	n = prec_read_text(p, &s);
	if (n < 0)
		return (int)n;
	*level = atoi(s);
	free(s);
	return 0;
}

bool prec_probe_privileged(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (geteuid() == 0)
		return true;
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return false;
	return (d[CAP_PERFMON / 32].effective & (1u << (CAP_PERFMON % 32))) ||
	       (d[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32)));
}

#if defined(__x86_64__) || defined(__i386__)
bool prec_cpuid_pt(uint32_t leaf14[2][4])
{
	unsigned a, b, c, d, max = __get_cpuid_max(0, NULL);

	memset(leaf14, 0, sizeof(uint32_t) * 8);
	if (max < 0x14)
		return false;
	__cpuid_count(7, 0, a, b, c, d);
	if (!(b & (1u << 25))) /* CPUID.7.0:EBX[25] = Intel PT */
		return false;
	__cpuid_count(0x14, 0, leaf14[0][0], leaf14[0][1], leaf14[0][2], leaf14[0][3]);
	__cpuid_count(0x14, 1, leaf14[1][0], leaf14[1][1], leaf14[1][2], leaf14[1][3]);
	return true;
}

bool prec_cpuid_tsc(uint32_t leaf15[3])
{
	unsigned a, b, c, d;

	memset(leaf15, 0, sizeof(uint32_t) * 3);
	if (__get_cpuid_max(0, NULL) < 0x15)
		return false;
	__cpuid_count(0x15, 0, a, b, c, d);
	leaf15[0] = a;
	leaf15[1] = b;
	leaf15[2] = c;
	return a && b;
}

void prec_cpuid_ident(char vendor[13], unsigned *family, unsigned *model, unsigned *stepping)
{
	unsigned a, b, c, d, fam, mod;

	__cpuid(0, a, b, c, d);
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = '\0';
	__cpuid(1, a, b, c, d);
	fam = (a >> 8) & 0xf;
	mod = (a >> 4) & 0xf;
	if (fam == 0xf)
		fam += (a >> 20) & 0xff;
	if (fam == 0x6 || fam >= 0xf)
		mod += ((a >> 16) & 0xf) << 4;
	*family = fam;
	*model = mod;
	*stepping = a & 0xf;
}
#else
/* No CPUID off x86: no Intel PT leaves, and the identity says only the architecture. */
bool prec_cpuid_pt(uint32_t leaf14[2][4])
{
	memset(leaf14, 0, sizeof(uint32_t) * 8);
	return false;
}

bool prec_cpuid_tsc(uint32_t leaf15[3])
{
	memset(leaf15, 0, sizeof(uint32_t) * 3);
	return false;
}

void prec_cpuid_ident(char vendor[13], unsigned *family, unsigned *model, unsigned *stepping)
{
#if defined(__aarch64__) || defined(__arm__)
	snprintf(vendor, 13, "ARM");
#else
	vendor[0] = '\0';
#endif
	*family = *model = *stepping = 0;
}
#endif
