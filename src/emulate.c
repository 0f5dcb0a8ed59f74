// SPDX-License-Identifier: MIT
/* The software tracer, host side: see emulate.h. */
#include <elf.h>
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

#include "emulate.h"
#include "util.h"
#include "../emulate/emu_proto.h"

const struct prec_emu_cpu prec_emu_cpu = {
	.vendor = "GenuineIntel",
	.family = 6,
	.model = 0x5e,
	.stepping = 3,
	.cpuid_14_0 = { 1, 0xf, 0x7, 0 },
	.cpuid_14_1 = { 0x02490002, 0x003f3fff, 0, 0 },
	.cpuid_15 = { 1, 40, 25000000 },
	.max_nonturbo_ratio = 10,
	.tsc_hz = 1000000000ull,
};

void prec_emu_set_pt_config(struct prec_emu_config *cfg, uint64_t c)
{
	cfg->cyc = c >> 1 & 1;
	cfg->mtc = c >> 9 & 1;
	cfg->tsc = c >> 10 & 1;
	cfg->noretcomp = c >> 11 & 1;
	cfg->no_branch = !(c >> 13 & 1);
	cfg->mtc_period = c >> 14 & 0xf;
	cfg->cyc_thresh = c >> 19 & 0xf;
	cfg->psb_period = c >> 24 & 0xf;
}

int prec_emu_exit_code(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 255;
}

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

/* 1: x86-64 ELF, 2: "#!" script (interpreter in @interp), 0: other, <0: error. */
static int probe_file(const char *path, char *interp, size_t isize)
{
	unsigned char h[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, h, sizeof(h) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	h[n] = 0;
	if (n >= 20 && !memcmp(h, ELFMAG, SELFMAG)) {
		uint16_t mach;

		memcpy(&mach, h + 18, 2);
		return h[EI_CLASS] == ELFCLASS64 && mach == EM_X86_64 ? 1 : 0;
	}
	if (n > 2 && h[0] == '#' && h[1] == '!') {
		char *p = (char *)h + 2, *e;

		while (*p == ' ' || *p == '\t')
			p++;
		e = p + strcspn(p, " \t\n");
		*e = 0;
		if ((size_t)snprintf(interp, isize, "%s", p) >= isize || !*p)
			return 0;
		return 2;
	}
	return 0;
}

int prec_emu_check_program(const char *prog, char *path, size_t size, struct prec_diag *diag)
{
	char interp[PATH_MAX];
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
	r = probe_file(path, interp, sizeof(interp));
	if (r == 2)
		r = probe_file(interp, interp, sizeof(interp)) == 1 ? 1 : 0;
	if (r < 0)
		return prec_diag_set(diag, r, -1, "cannot read '%s': %s", path, strerror(-r));
	if (r != 1) {
		prec_diag_set(diag, -ENOEXEC, -1, "'%s' is not an x86-64 Linux program", path);
		prec_diag_hint(diag, "the software tracer (--emulate) runs x86-64 ELF executables "
				     "and scripts whose interpreter is one");
		return -ENOEXEC;
	}
	return 0;
}

static const char *act_name(enum prec_emu_action a)
{
	return a == PREC_EMU_ACT_PAUSE ? "pause" : a == PREC_EMU_ACT_RESUME ? "resume" : "none";
}

static int write_config(const struct prec_emu_config *cfg, const char *qemu, const char *plugin)
{
	struct prec_buf b = { 0 };
	int fd = -1, r = 0;
	size_t i;

	prec_buf_printf(&b, "emu %d\nqemu %s\nplugin %s\n", EMU_PROTO_VERSION, qemu, plugin);
	prec_buf_printf(&b, "tsc %d\nmtc %d\ncyc %d\nnoretcomp %d\nbranch %d\n", cfg->tsc,
			cfg->mtc, cfg->cyc, cfg->noretcomp, !cfg->no_branch);
	prec_buf_printf(&b, "mtc_period %u\ncyc_thresh %u\npsb_period %u\n", cfg->mtc_period,
			cfg->cyc_thresh, cfg->psb_period);
	prec_buf_printf(&b, "start_paused %d\ntruth %d\n", cfg->start_paused, !!cfg->truth_path);
	for (i = 0; i < cfg->ntriggers; i++) {
		const struct prec_emu_trigger *t = &cfg->triggers[i];

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
	fd = memfd_create("ptrec-emu-config", MFD_CLOEXEC);
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

/* The child: becomes qemu-x86_64 -plugin ... PROG ARGS. */
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

static int deliver(const struct emu_msg *m, const uint8_t *payload, const struct prec_emu_ops *ops,
		   int truth_fd, char *errmsg, size_t errsize, int *hellos, uint64_t *insns)
{
	switch (m->type) {
	case EMU_MSG_HELLO:
		(*hellos)++;
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
		return truth_fd >= 0 ? prec_write_full(truth_fd, payload, m->size) : 0;
	case EMU_MSG_ERROR:
		if (!errmsg[0])
			snprintf(errmsg, errsize, "%.*s", (int)m->size, (const char *)payload);
		return 0;
	case EMU_MSG_BYE:
		*insns += m->arg;
		return 0;
	}
	return -EPROTO;
}

int prec_emu_run(const struct prec_emu_config *cfg, const struct prec_emu_ops *ops,
		 int *wstatus, struct prec_diag *diag)
{
	char qemu[PATH_MAX], path[PATH_MAX], interp[PATH_MAX] = "", *popt = NULL;
	int sv[2] = { -1, -1 }, cfgfd = -1, truth_fd = -1, r, hellos = 0, status = 0;
	int exited = 0, eof = 0;
	pid_t pid = -1;
	uint8_t *buf = NULL;
	char errmsg[512] = "";
	struct sigaction sa, old_int, old_term;
	uint64_t quiet_since = 0, insns = 0, exit_ns = 0;
	size_t plen;
	struct rlimit rl;
	int fd_sock = EMU_FD_SOCK, fd_cfg = EMU_FD_CFG;

	if (wstatus)
		*wstatus = 0;
	if (!cfg || !ops || !cfg->argv || !cfg->argv[0] || !cfg->plugin)
		return prec_diag_set(diag, -EINVAL, -1, "no program or plugin given");
	r = find_exec(cfg->qemu ? cfg->qemu : "qemu-x86_64", qemu, sizeof(qemu));
	if (r < 0 || access(qemu, X_OK)) {
		prec_diag_set(diag, -ENOENT, -1, "cannot find %s",
			      cfg->qemu ? cfg->qemu : "qemu-x86_64");
		prec_diag_hint(diag, "the software tracer needs qemu-user: apt-get install qemu-user");
		return -ENOENT;
	}
	if (access(cfg->plugin, R_OK)) {
		prec_diag_set(diag, -ENOENT, -1, "cannot find the tracer plugin %s", cfg->plugin);
		prec_diag_hint(diag, "set PTREC_PLUGIN to the path of ptrec-emu.so");
		return -ENOENT;
	}
	r = prec_emu_check_program(cfg->argv[0], path, sizeof(path), diag);
	if (r < 0)
		return r;
	if (probe_file(path, interp, sizeof(interp)) != 2)
		interp[0] = 0;
	for (size_t i = 0; i < cfg->ntriggers; i++) {
		const struct prec_emu_trigger *t = &cfg->triggers[i];

		if ((t->kind == PREC_EMU_UPROBE || t->kind == PREC_EMU_URETPROBE) &&
		    (!t->path || access(t->path, R_OK)))
			return prec_diag_set(diag, -ENOENT, -1, "cannot read the probed file %s",
					     t->path ? t->path : "(none)");
		if (t->kind == PREC_EMU_INSNS && !t->period)
			return prec_diag_set(diag, -EINVAL, -1,
					     "an instruction counter needs a period > 0");
	}
	cfgfd = write_config(cfg, qemu, cfg->plugin);
	if (cfgfd < 0) {
		r = prec_diag_set(diag, cfgfd, -1, "cannot write the tracer configuration: %s",
				  prec_strerror(cfgfd));
		goto out;
	}
	plen = 2 * strlen(cfg->plugin) + 64;
	popt = malloc(plen);
	buf = malloc(sizeof(struct emu_msg) + EMU_MSG_MAX + 1);
	if (!popt || !buf) {
		r = prec_diag_set(diag, -ENOMEM, -1, "out of memory");
		goto out;
	}
	{
		/* QEMU's option syntax: a comma inside a value is written twice. */
		size_t j = 0;

		for (const char *s = cfg->plugin; *s; s++) {
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
	if (cfg->truth_path) {
		truth_fd = open(cfg->truth_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (truth_fd < 0) {
			r = prec_diag_set(diag, -errno, -1, "cannot create %s: %s", cfg->truth_path,
					  strerror(errno));
			goto out;
		}
		r = prec_write_full(truth_fd, "# ptrec-emulate truth 1\n", 24);
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
		child_exec(qemu, popt, interp, path, cfg->argv, sv[1], cfgfd, fd_sock, fd_cfg);
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
				r = deliver(&m, buf + sizeof(m), ops, truth_fd, errmsg,
					    sizeof(errmsg), &hellos, &insns);
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
	if (cfg->insns)
		*cfg->insns = insns;
	if (r == 0 && errmsg[0]) {
		r = prec_diag_set(diag, -EPROTO, -1, "software tracer: %s", errmsg);
	} else if (r == 0 && !hellos) {
		r = prec_diag_set(diag, -ENOEXEC, -1, "%s could not load the tracer plugin %s", qemu,
				  cfg->plugin);
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
	if (truth_fd >= 0)
		close(truth_fd);
	free(popt);
	free(buf);
	return r;
}
