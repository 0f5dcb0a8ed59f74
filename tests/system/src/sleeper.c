// SPDX-License-Identifier: MIT
/*
 * sleeper: an endless workload for the whole-system tracer's -d test. It
 * writes "sleeping" to its standard output, then sleeps in nanosleep(2), a
 * second at a time, forever; no C library and no
 * vDSO call (the decoder has the host's vDSO, not the guest kernel's):
 *
 *   cc -static -nostdlib -no-pie -O1 -fno-stack-protector -o sleeper sleeper.c
 */

struct ts {
	long sec, nsec;
};

static long syscall3(long nr, long a, long b, long c)
{
	long r;

	__asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return r;
}

void _start(void)
{
	static const struct ts second = { 1, 0 };
	static const char msg[] = "sleeping\n";

	syscall3(1, 1, (long)msg, sizeof(msg) - 1); /* write */
	for (;;)
		syscall3(35, (long)&second, 0, 0); /* nanosleep */
}
