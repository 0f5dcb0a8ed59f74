// SPDX-License-Identifier: MIT
/*
 * sleeper: an endless workload for the whole-system tracer's -d test. It
 * sleeps in nanosleep(2), a second at a time, forever; no C library and no
 * vDSO call (the decoder has the host's vDSO, not the guest kernel's):
 *
 *   cc -static -nostdlib -no-pie -O1 -fno-stack-protector -o sleeper sleeper.c
 */

struct ts {
	long sec, nsec;
};

static long sys_nanosleep(const struct ts *t)
{
	long r;

	__asm__ volatile("syscall" : "=a"(r) : "a"(35L), "D"(t), "S"(0L) : "rcx", "r11", "memory");
	return r;
}

void _start(void)
{
	static const struct ts second = { 1, 0 };

	for (;;)
		sys_nanosleep(&second);
}
