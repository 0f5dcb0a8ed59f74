/* SPDX-License-Identifier: MIT */
/*
 * The workload: a child process forked and held on a pipe until the recorder
 * has opened its events (enable_on_exec then starts counting at exec).
 */
#ifndef PREC_WORKLOAD_H
#define PREC_WORKLOAD_H

#include <stdbool.h>
#include <sys/types.h>

struct prec_workload {
	pid_t pid;
	int go_fd;     /* write end of the ready pipe; -1 once released */
	int err_fd;    /* read end of the exec-error pipe */
	int status;    /* wait status once reaped */
	bool reaped;
};

/*
 * Forks @argv[0] (searched in PATH), held before exec. Returns 0 or -errno.
 * The child gets default signal dispositions and its own process group is
 * NOT created, so a terminal's Ctrl-C reaches it as it reaches perf's workload.
 */
int prec_workload_prepare(struct prec_workload *w, char *const argv[]);

/*
 * Lets the child exec. Returns 0 once exec succeeded, or the negative errno
 * of the failed exec (the child then exits with 127).
 */
int prec_workload_start(struct prec_workload *w);

/* Waits for the child (blocking if @block). Returns 1 when reaped, 0 if still running. */
int prec_workload_wait(struct prec_workload *w, bool block);

/* Sends @sig to the child if it is still running. */
void prec_workload_kill(struct prec_workload *w, int sig);

/* Maps the wait status to a shell-style exit code (128+signal for signals). */
int prec_workload_exit_code(const struct prec_workload *w);

/* Closes descriptors; does not wait. */
void prec_workload_fini(struct prec_workload *w);

#endif
