// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/common.h"
#include "base/util.h"
#include "record/workload.h"

int prec_workload_prepare(struct prec_workload *w, char *const argv[])
{
	int go[2], errp[2];
	pid_t pid;

	memset(w, 0, sizeof(*w));
	w->go_fd = w->err_fd = -1;
	w->pid = -1;
	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(errp, O_CLOEXEC)) {
		int err = -errno;

		close(go[0]);
		close(go[1]);
		return err;
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(go[0]);
		close(go[1]);
		close(errp[0]);
		close(errp[1]);
		return err;
	}
	if (pid == 0) {
		char c;
		int e;
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		close(go[1]);
		close(errp[0]);
		/* Wait for the recorder; EOF without a byte means it gave up. */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], argv);
		e = errno;
		if (write(errp[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(errp[1]);
	w->pid = pid;
	w->go_fd = go[1];
	w->err_fd = errp[0];
	return 0;
}

int prec_workload_start(struct prec_workload *w)
{
	int e = 0;
	long n;

	if (w->go_fd < 0)
		return -EINVAL;
	if (prec_write_full(w->go_fd, "g", 1)) {
		close(w->go_fd);
		w->go_fd = -1;
		return -ECHILD;
	}
	close(w->go_fd);
	w->go_fd = -1;
	/* The error pipe closes on a successful exec (O_CLOEXEC). */
	n = prec_read_full(w->err_fd, &e, sizeof(e));
	close(w->err_fd);
	w->err_fd = -1;
	if (n == (long)sizeof(e))
		return -e;
	return 0;
}

int prec_workload_wait(struct prec_workload *w, bool block)
{
	pid_t r;

	if (w->reaped)
		return 1;
	if (w->pid <= 0)
		return 1;
	do
		r = waitpid(w->pid, &w->status, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == w->pid) {
		w->reaped = true;
		return 1;
	}
	if (r < 0) {
		/* Not our child any more (reaped elsewhere): treat as gone. */
		w->reaped = true;
		w->status = 0;
		return 1;
	}
	return 0;
}

void prec_workload_kill(struct prec_workload *w, int sig)
{
	if (w->pid > 0 && !w->reaped)
		kill(w->pid, sig);
}

int prec_workload_exit_code(const struct prec_workload *w)
{
	if (!w->reaped)
		return 1;
	if (WIFEXITED(w->status))
		return WEXITSTATUS(w->status);
	if (WIFSIGNALED(w->status))
		return 128 + WTERMSIG(w->status);
	return 1;
}

void prec_workload_fini(struct prec_workload *w)
{
	if (w->go_fd >= 0)
		close(w->go_fd);
	if (w->err_fd >= 0)
		close(w->err_fd);
	w->go_fd = w->err_fd = -1;
}
