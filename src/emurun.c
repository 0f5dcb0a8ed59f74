// SPDX-License-Identifier: MIT
/* The software tracers' shared runner: see emurun.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emurun.h"
#include "util.h"
#include "../emulate/emu_proto.h"

/* Finds @name in PATH (or takes it as is if it has a slash). */
static int find_exec(const char *name, char *out, size_t size)
{
	const char *path, *p;

	if (strchr(name, '/')) {
		if ((size_t)snprintf(out, size, "%s", name) >= size)
			return -ENAMETOOLONG;
		return access(out, F_OK) ? -errno : 0;
	}
	path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; p; ) {
		const char *e = strchr(p, ':');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		struct stat st;

		if ((size_t)snprintf(out, size, "%.*s/%s", (int)n, n ? p : ".", name) < size &&
		    !stat(out, &st) && S_ISREG(st.st_mode) && !access(out, X_OK))
			return 0;
		p = e ? e + 1 : NULL;
	}
	return -ENOENT;
}

int prec_emurun_find_program(const char *prog, char *path, size_t size, struct prec_diag *diag)
{
	struct stat st;
	int r;

	if (!prog || !*prog)
		return prec_diag_set(diag, -EINVAL, -1, "no program to run");
	r = find_exec(prog, path, size);
	if (r < 0) {
		prec_diag_set(diag, r, -1, "cannot find the program '%s'", prog);
		prec_diag_hint(diag, "check the name, or give its path");
		return r;
	}
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || access(path, X_OK)) {
		prec_diag_set(diag, -EACCES, -1, "'%s' is not an executable file", path);
		return -EACCES;
	}
	return 0;
}

static const char *act_name(enum prec_emu_action a)
{
	return a == PREC_EMU_ACT_PAUSE ? "pause" : a == PREC_EMU_ACT_RESUME ? "resume" : "none";
}

/* The configuration memfd: common lines, the tracer's @lines, triggers. */
static int write_config(const struct prec_emurun *run, const struct prec_buf *lines,
			const char *qemu)
{
	struct prec_buf b = { 0 };
	int fd = -1, r = 0;
	size_t i;

	prec_buf_printf(&b, "emu %d\nqemu %s\nplugin %s\n", EMU_PROTO_VERSION, qemu, run->plugin);
	if (lines->len)
		prec_buf_append(&b, lines->data, lines->len);
	prec_buf_printf(&b, "start_paused %d\ntruth %d\n", run->start_paused, !!run->truth_path);
	for (i = 0; i < run->ntriggers; i++) {
		const struct prec_emu_trigger *t = &run->triggers[i];

		switch (t->kind) {
		case PREC_EMU_UPROBE:
		case PREC_EMU_URETPROBE:
			if (!t->path || strchr(t->path, '\n')) {
				r = -EINVAL;
				goto out;
			}
			prec_buf_printf(&b, "trigger %d %s %s %" PRIu64 " %s\n", t->event_index,
					act_name(t->action),
					t->kind == PREC_EMU_UPROBE ? "uprobe" : "uretprobe",
					t->offset, t->path);
			break;
		case PREC_EMU_SYS_ENTER:
		case PREC_EMU_SYS_EXIT:
			prec_buf_printf(&b, "trigger %d %s %s %" PRId64 "\n", t->event_index,
					act_name(t->action),
					t->kind == PREC_EMU_SYS_ENTER ? "sys_enter" : "sys_exit", t->nr);
			break;
		case PREC_EMU_INSNS:
			if (!t->period) {
				r = -EINVAL;
				goto out;
			}
			prec_buf_printf(&b, "trigger %d %s insns %" PRIu64 "\n", t->event_index,
					act_name(t->action), t->period);
			break;
		default:
			r = -EINVAL;
			goto out;
		}
	}
	if (!b.data) {
		r = -ENOMEM;
		goto out;
	}
	fd = memfd_create(run->tracer->config_name, MFD_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = prec_write_full(fd, b.data, b.len);
	if (r < 0) {
		close(fd);
		fd = -1;
	}
out:
	prec_buf_free(&b);
	return r < 0 ? r : fd;
}

static volatile sig_atomic_t fwd_pid;
static struct sigaction chained_int, chained_term;

/*
 * Forwards to the workload, then runs the handler the caller had installed
 * (ptrec's: a second signal exits at once).
 */
static void forward_signal(int sig)
{
	const struct sigaction *old = sig == SIGINT ? &chained_int : &chained_term;

	if (fwd_pid > 0)
		kill(fwd_pid, sig);
	if (!(old->sa_flags & SA_SIGINFO) && old->sa_handler != SIG_DFL &&
	    old->sa_handler != SIG_IGN)
		old->sa_handler(sig);
}

/* The child: becomes QEMU -plugin ... PROG ARGS. */
static void child_exec(const char *qemu, const char *popt, const char *interp,
		       const char *path, char *const *argv, int sock, int cfgfd, int fd_sock,
		       int fd_cfg)
{
	size_t n = 0, i, k = 0;
	char **args;
	sigset_t none;
	char msg[512];
	struct emu_msg m = { .type = EMU_MSG_ERROR };

	while (argv[n])
		n++;
	args = calloc(n + 10, sizeof(*args));
	if (dup2(sock, fd_sock) < 0 || dup2(cfgfd, fd_cfg) < 0 || !args)
		_exit(127);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	args[k++] = (char *)qemu;
	args[k++] = "-0";
	args[k++] = argv[0];
	args[k++] = "-plugin";
	args[k++] = (char *)popt;
	if (interp[0])
		args[k++] = (char *)interp;
	args[k++] = (char *)path;
	for (i = 1; i < n; i++)
		args[k++] = argv[i];
	args[k] = NULL;
	execv(qemu, args);
	snprintf(msg, sizeof(msg), "cannot run %.400s: %s", qemu, strerror(errno));
	m.size = (uint32_t)strlen(msg) + 1;
	{
		struct iovec iov[2] = { { &m, sizeof(m) }, { msg, m.size } };
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

		sendmsg(fd_sock, &mh, MSG_NOSIGNAL);
	}
	_exit(127);
}

/* What the plugins said so far. */
struct heard {
	int truth_fd;
	char errmsg[512]; /* the first error a plugin reported */
	int hellos;       /* plugin instances that started */
	uint64_t insns;   /* instructions the ended instances saw retire */
};

static int deliver(const struct emu_msg *m, const uint8_t *payload, const struct prec_emu_ops *ops,
		   struct heard *h)
{
	switch (m->type) {
	case EMU_MSG_HELLO:
		h->hellos++;
		return 0;
	case EMU_MSG_AUX:
		return ops->aux ? ops->aux(ops->ctx, m->pid, m->tid, m->arg, payload, m->size) : 0;
	case EMU_MSG_SB: {
		uint16_t sz;

		if (m->size < 8)
			return -EPROTO;
		memcpy(&sz, payload + 6, 2);
		if (sz != m->size)
			return -EPROTO;
		return ops->sideband ? ops->sideband(ops->ctx, payload, m->size) : 0;
	}
	case EMU_MSG_TRUTH:
		return h->truth_fd >= 0 ? prec_write_full(h->truth_fd, payload, m->size) : 0;
	case EMU_MSG_ERROR:
		if (!h->errmsg[0])
			snprintf(h->errmsg, sizeof(h->errmsg), "%.*s", (int)m->size,
				 (const char *)payload);
		return 0;
	case EMU_MSG_BYE:
		h->insns += m->arg;
		return 0;
	}
	return -EPROTO;
}

/* Checks what can be checked before anything runs. */
static int check_run(const struct prec_emurun *run, char *qemu, size_t qsize, char *path,
		     size_t psize, char *interp, size_t isize, struct prec_diag *diag)
{
	const struct prec_emurun_tracer *tr = run->tracer;
	const char *want = run->qemu ? run->qemu : tr->qemu_default;
	int r;

	r = find_exec(want, qemu, qsize);
	if (r < 0 || access(qemu, X_OK)) {
		prec_diag_set(diag, -ENOENT, -1, "cannot find %s", want);
		prec_diag_hint(diag, "the software tracer needs qemu-user: apt-get install qemu-user");
		return -ENOENT;
	}
	if (access(run->plugin, R_OK)) {
		prec_diag_set(diag, -ENOENT, -1, "cannot find the tracer plugin %s", run->plugin);
		prec_diag_hint(diag, "set PTREC_PLUGIN to the path of %s", tr->plugin_file);
		return -ENOENT;
	}
	r = tr->check_program(run->argv[0], path, psize, interp, isize, diag);
	if (r < 0)
		return r;
	for (size_t i = 0; i < run->ntriggers; i++) {
		const struct prec_emu_trigger *t = &run->triggers[i];

		if ((t->kind == PREC_EMU_UPROBE || t->kind == PREC_EMU_URETPROBE) &&
		    (!t->path || access(t->path, R_OK)))
			return prec_diag_set(diag, -ENOENT, -1, "cannot read the probed file %s",
					     t->path ? t->path : "(none)");
		if (t->kind == PREC_EMU_INSNS && !t->period)
			return prec_diag_set(diag, -EINVAL, -1,
					     "an instruction counter needs a period > 0");
	}
	return 0;
}

int prec_emurun_run(const struct prec_emurun *run, int *wstatus, struct prec_diag *diag)
{
	char qemu[PATH_MAX], path[PATH_MAX], interp[PATH_MAX] = "", *popt = NULL;
	int sv[2] = { -1, -1 }, cfgfd = -1, r, status = 0;
	int exited = 0, eof = 0;
	pid_t pid = -1;
	uint8_t *buf = NULL;
	struct sigaction sa, old_int, old_term;
	uint64_t quiet_since = 0, exit_ns = 0;
	size_t plen;
	struct rlimit rl;
	int fd_sock = EMU_FD_SOCK, fd_cfg = EMU_FD_CFG;
	struct prec_buf lines = { 0 };
	struct heard h = { .truth_fd = -1 };

	if (wstatus)
		*wstatus = 0;
	if (!run->cfg || !run->ops || !run->argv || !run->argv[0] || !run->plugin)
		return prec_diag_set(diag, -EINVAL, -1, "no program or plugin given");
	r = run->tracer->prepare(run->cfg, &lines, diag);
	if (r < 0)
		goto out;
	r = check_run(run, qemu, sizeof(qemu), path, sizeof(path), interp, sizeof(interp), diag);
	if (r < 0)
		goto out;
	cfgfd = write_config(run, &lines, qemu);
	if (cfgfd < 0) {
		r = prec_diag_set(diag, cfgfd, -1, "cannot write the tracer configuration: %s",
				  prec_strerror(cfgfd));
		goto out;
	}
	plen = 2 * strlen(run->plugin) + 64;
	popt = malloc(plen);
	buf = malloc(sizeof(struct emu_msg) + EMU_MSG_MAX + 1);
	if (!popt || !buf) {
		r = prec_diag_set(diag, -ENOMEM, -1, "out of memory");
		goto out;
	}
	{
		/* QEMU's option syntax: a comma inside a value is written twice. */
		size_t j = 0;

		for (const char *s = run->plugin; *s; s++) {
			popt[j++] = *s;
			if (*s == ',')
				popt[j++] = ',';
		}
		/*
		 * High descriptor numbers, out of the workload's way; lower
		 * ones if the descriptor limit does not reach that far.
		 */
		if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur <= EMU_FD_CFG) {
			if (rl.rlim_cur < 16) {
				r = prec_diag_set(diag, -EMFILE, -1, "the descriptor limit (%llu) is too low",
						  (unsigned long long)rl.rlim_cur);
				goto out;
			}
			fd_sock = (int)rl.rlim_cur - 3;
			fd_cfg = (int)rl.rlim_cur - 2;
		}
		snprintf(popt + j, plen - j, ",fd=%d,cfgfd=%d", fd_sock, fd_cfg);
	}
	if (run->truth_path) {
		h.truth_fd = open(run->truth_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (h.truth_fd < 0) {
			r = prec_diag_set(diag, -errno, -1, "cannot create %s: %s", run->truth_path,
					  strerror(errno));
			goto out;
		}
		r = prec_write_full(h.truth_fd, "# ptrec-emulate truth 1\n", 24);
		if (r < 0)
			goto out;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		r = prec_diag_set(diag, -errno, -1, "socketpair: %s", strerror(errno));
		goto out;
	}
	{
		int sz = 4 << 20;

		setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	chained_int = old_int;
	chained_term = old_term;
	pid = fork();
	if (pid < 0) {
		r = prec_diag_set(diag, -errno, -1, "fork: %s", strerror(errno));
		goto out_sig;
	}
	if (pid == 0)
		child_exec(qemu, popt, interp, path, run->argv, sv[1], cfgfd, fd_sock, fd_cfg);
	fwd_pid = pid;
	close(sv[1]);
	sv[1] = -1;
	close(cfgfd);
	cfgfd = -1;

	/*
	 * Read until every plugin instance (the workload and any children it
	 * forked) has closed the socket. Once the workload itself has exited,
	 * stop after a quiet second, as perf stops when its workload ends.
	 */
	r = 0;
	while (!eof) {
		struct pollfd pfd = { .fd = sv[0], .events = POLLIN };
		int pr = poll(&pfd, 1, 100);

		if (pr < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		if (pr > 0) {
			struct emu_msg m;
			ssize_t n = recv(sv[0], buf, sizeof(m) + EMU_MSG_MAX + 1, MSG_DONTWAIT);

			if (n == 0) {
				eof = 1;
			} else if (n > 0) {
				memcpy(&m, buf, sizeof(m) <= (size_t)n ? sizeof(m) : (size_t)n);
				if ((size_t)n < sizeof(m) || m.size != (size_t)n - sizeof(m)) {
					r = -EPROTO;
					break;
				}
				r = deliver(&m, buf + sizeof(m), run->ops, &h);
				if (r < 0)
					break;
				quiet_since = prec_now_ns();
				continue;
			} else if (errno != EAGAIN && errno != EINTR) {
				r = -errno;
				break;
			}
		}
		if (!exited) {
			pid_t w = waitpid(pid, &status, WNOHANG);

			if (w == pid) {
				exited = 1;
				fwd_pid = 0;
				quiet_since = exit_ns = prec_now_ns();
			}
		} else if (prec_now_ns() - quiet_since > 1000000000ull ||
			   prec_now_ns() - exit_ns > 10000000000ull) {
			/* Children that outlive the workload are cut off. */
			break;
		}
	}
	if (r < 0) {
		if (!exited)
			kill(pid, SIGKILL);
		if (!diag || !diag->code)
			prec_diag_set(diag, r, -1, "recording stopped: %s", prec_strerror(r));
	}
	if (!exited) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		fwd_pid = 0;
	}
	if (wstatus)
		*wstatus = status;
	if (run->insns)
		*run->insns = h.insns;
	if (r == 0 && h.errmsg[0]) {
		r = prec_diag_set(diag, -EPROTO, -1, "software tracer: %s", h.errmsg);
	} else if (r == 0 && !h.hellos) {
		r = prec_diag_set(diag, -ENOEXEC, -1, "%s could not load the tracer plugin %s", qemu,
				  run->plugin);
		prec_diag_hint(diag, "see QEMU's message above; the plugin needs QEMU 7.2 (plugin API 1)");
	}
out_sig:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
out:
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	if (cfgfd >= 0)
		close(cfgfd);
	if (h.truth_fd >= 0)
		close(h.truth_fd);
	prec_buf_free(&lines);
	free(popt);
	free(buf);
	return r;
}
