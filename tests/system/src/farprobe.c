// SPDX-License-Identifier: MIT
/*
 * farprobe: the whole-system tracer's workload for a uretprobe on a
 * function whose entry is reached through a handler. far() lies on a page
 * of its own, 256 KiB past main()'s, beyond the kernel's fault-around: its
 * first call takes a page fault at its first instruction, after the CALL
 * and before the function runs. Then far()'s page is made PROT_NONE and
 * far() called again: the fault becomes a SIGSEGV whose handler (user code
 * making calls of its own) restores the page and returns through
 * rt_sigreturn to far()'s first instruction. Between, two plain calls.
 * It prints "far ADDR" (where the guest put far()) and "calls N segv M".
 *
 *   cc -O1 -fPIE -pie -fno-toplevel-reorder -o farprobe farprobe.c
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile unsigned sink;
static volatile int segv;
static int calls;

unsigned far(int i);

static void page_back(int sig, siginfo_t *si, void *uc)
{
	uintptr_t pg = (uintptr_t)si->si_addr & ~(uintptr_t)4095;

	(void)sig;
	(void)uc;
	segv++;
	if (mprotect((void *)pg, 4096, PROT_READ | PROT_EXEC))
		_exit(3);
}

static void call_far(int i)
{
	sink += far(i);
	calls++;
}

int main(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = page_back;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(SIGSEGV, &sa, NULL))
		return 2;
	printf("far %p\n", (void *)far);
	fflush(stdout);
	call_far(0); /* the page fault */
	call_far(1);
	call_far(2);
	if (mprotect((void *)((uintptr_t)far & ~(uintptr_t)4095), 4096, PROT_NONE))
		return 2;
	call_far(3); /* the SIGSEGV */
	printf("calls %d segv %d\n", calls, segv);
	return 0;
}

/* 256 KiB of code between main()'s page and far()'s. */
__asm__(".text\n.p2align 12\n.skip 262144, 0xcc\n");

__attribute__((noinline, aligned(4096))) unsigned far(int i)
{
	unsigned a = (unsigned)i;

	for (int k = 0; k < 20; k++)
		a = a * 33 + (unsigned)k;
	return a;
}
