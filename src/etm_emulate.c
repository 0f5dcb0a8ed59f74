// SPDX-License-Identifier: MIT
/* The CoreSight software tracer, host side: see etm_emulate.h. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
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

#include "etm_emulate.h"
#include "perf_format.h"
#include "util.h"
#include "../emulate/emu_proto.h"

_Static_assert(PREC_ETM_BLOCK_WORDS == CS_ETMV4_PRIV_MAX, "perf's ETMv4 block size");

#ifndef EM_AARCH64
#define EM_AARCH64 183
#endif
#ifndef PERF_RECORD_TEXT_POKE
#define PERF_RECORD_TEXT_POKE 20
#endif

/*
 * The trace unit the plugin's output implies (ETMv4.0 on an Armv8 PE):
 * TRCIDR0: instruction trace only, branch broadcast, cycle counting,
 * return stack and conditional-trace absent from the trace, 64-bit
 * timestamps, COMMOPT 1; TRCIDR1: ETMv4.0, designer Arm; TRCIDR2: 64-bit
 * instruction addresses, 32-bit context ID, 8-bit VMID, 12-bit cycle
 * counter; TRCIDR8: no speculation (MAXSPEC 0). TRCCONFIGR has only the
 * options the encoder uses: CID (bit 6) and TS (bit 11).
 */
#define ETM_TRCIDR0 0x28000ea1u
#define ETM_TRCIDR1 0x4100f403u
#define ETM_TRCIDR2 0x00000488u
#define ETM_TRCIDR8 0x00000000u
#define ETM_TRCAUTHSTATUS 0x000000ccu

void prec_etm_regs_get(const struct prec_etm_config *cfg, uint8_t csid,
		       struct prec_etm_regs *regs)
{
	memset(regs, 0, sizeof(*regs));
	regs->trcconfigr = 0x1;
	if (cfg && cfg->contextid)
		regs->trcconfigr |= 1u << 6;
	if (cfg && cfg->timestamp)
		regs->trcconfigr |= 1u << 11;
	regs->trctraceidr = csid & 0x7f;
	regs->trcidr0 = ETM_TRCIDR0;
	regs->trcidr1 = ETM_TRCIDR1;
	regs->trcidr2 = ETM_TRCIDR2;
	regs->trcidr8 = ETM_TRCIDR8;
	regs->trcauthstatus = ETM_TRCAUTHSTATUS;
	/* Timestamps are values of the sideband's clock, as a virtual one's are. */
	regs->ts_source = 1;
}

void prec_etm_regs_block(const struct prec_etm_regs *regs, int cpu,
			 uint64_t block[PREC_ETM_BLOCK_WORDS])
{
	memset(block, 0, PREC_ETM_BLOCK_WORDS * sizeof(*block));
	block[CS_ETM_MAGIC] = CS_ETMV4_MAGIC;
	block[CS_ETM_CPU] = (uint64_t)(int64_t)cpu;
	block[CS_ETM_NR_TRC_PARAMS] = CS_ETMV4_PRIV_MAX - CS_ETM_COMMON_BLK_MAX_V1;
	block[CS_ETMV4_TRCCONFIGR] = regs->trcconfigr;
	block[CS_ETMV4_TRCTRACEIDR] = regs->trctraceidr;
	block[CS_ETMV4_TRCIDR0] = regs->trcidr0;
	block[CS_ETMV4_TRCIDR1] = regs->trcidr1;
	block[CS_ETMV4_TRCIDR2] = regs->trcidr2;
	block[CS_ETMV4_TRCIDR8] = regs->trcidr8;
	block[CS_ETMV4_TRCAUTHSTATUS] = regs->trcauthstatus;
	block[CS_ETMV4_TS_SOURCE] = regs->ts_source;
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

/* 1: aarch64 ELF, 0: anything else, <0: error. */
static int probe_aarch64(const char *path)
{
	unsigned char h[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	uint16_t mach;

	if (fd < 0)
		return -errno;
	n = read(fd, h, sizeof(h));
	close(fd);
	if (n < 0)
		return -errno;
	if (n < 20 || memcmp(h, ELFMAG, SELFMAG))
		return 0;
	memcpy(&mach, h + 18, 2);
	return h[EI_CLASS] == ELFCLASS64 && h[EI_DATA] == ELFDATA2LSB && mach == EM_AARCH64;
}

int prec_etm_check_program(const char *prog, char *path, size_t size, struct prec_diag *diag)
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
	r = probe_aarch64(path);
	if (r < 0)
		return prec_diag_set(diag, r, -1, "cannot read '%s': %s", path, strerror(-r));
	if (!r) {
		prec_diag_set(diag, -ENOEXEC, -1, "'%s' is not an aarch64 Linux program", path);
		prec_diag_hint(diag, "the CoreSight software tracer runs 64-bit Arm ELF executables "
				     "(build them with aarch64-linux-gnu-gcc -static)");
		return -ENOEXEC;
	}
	return 0;
}

static const char *act_name(enum prec_emu_action a)
{
	return a == PREC_EMU_ACT_PAUSE ? "pause" : a == PREC_EMU_ACT_RESUME ? "resume" : "none";
}

static int write_config(const struct prec_etm_config *cfg, const char *qemu, const char *plugin)
{
	struct prec_buf b = { 0 };
	int fd = -1, r = 0;
	size_t i;

	prec_buf_printf(&b, "emu %d\netm 1\nqemu %s\nplugin %s\n", EMU_PROTO_VERSION, qemu, plugin);
	prec_buf_printf(&b, "timestamp %d\ncontextid %d\nsync_period %u\n", cfg->timestamp,
			cfg->contextid, cfg->sync_period ? cfg->sync_period : 12);
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
	fd = memfd_create("ptrec-emu-etm-config", MFD_CLOEXEC);
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

/* The child: becomes qemu-aarch64 -plugin ... PROG ARGS. */
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

/* Streams seen so far: index = position in @tid. */
struct streams {
	uint32_t *tid;
	size_t n, cap;
	unsigned base;
};

static int stream_of(struct streams *st, uint32_t pid, uint32_t tid, const struct prec_etm_ops *ops)
{
	size_t i;

	for (i = 0; i < st->n; i++)
		if (st->tid[i] == tid)
			return 0;
	if (st->base + st->n > 0x6f)
		return -E2BIG;
	if (st->n == st->cap) {
		size_t cap = st->cap ? 2 * st->cap : 16;
		uint32_t *p = realloc(st->tid, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		st->tid = p;
		st->cap = cap;
	}
	st->tid[st->n++] = tid;
	return ops->stream ? ops->stream(ops->ctx, pid, tid, (unsigned)(st->n - 1),
					 (uint8_t)(st->base + st->n - 1)) : 0;
}

static int deliver(const struct emu_msg *m, const uint8_t *payload, const struct prec_etm_ops *ops,
		   struct streams *st, int truth_fd, char *errmsg, size_t errsize, int *hellos,
		   uint64_t *insns)
{
	int r;

	switch (m->type) {
	case EMU_MSG_HELLO:
		(*hellos)++;
		return 0;
	case EMU_MSG_AUX:
		r = stream_of(st, m->pid, m->tid, ops);
		if (r < 0)
			return r;
		return ops->aux ? ops->aux(ops->ctx, m->pid, m->tid, m->arg, payload, m->size) : 0;
	case EMU_MSG_SB: {
		uint16_t sz;
		uint32_t type;

		if (m->size < 8)
			return -EPROTO;
		memcpy(&sz, payload + 6, 2);
		if (sz != m->size)
			return -EPROTO;
		memcpy(&type, payload, 4);
		if (type == PERF_RECORD_ITRACE_START && m->size >= 16) {
			/* Streams are numbered in the order their threads start. */
			uint32_t ids[2];

			memcpy(ids, payload + 8, 8);
			r = stream_of(st, ids[0], ids[1], ops);
			if (r < 0)
				return r;
		}
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

int prec_etm_run(const struct prec_etm_config *cfg, const struct prec_etm_ops *ops,
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
	struct streams st = { .base = cfg && cfg->csid_base ? cfg->csid_base : PREC_ETM_CSID_BASE };

	if (wstatus)
		*wstatus = 0;
	if (!cfg || !ops || !cfg->argv || !cfg->argv[0] || !cfg->plugin)
		return prec_diag_set(diag, -EINVAL, -1, "no program or plugin given");
	if (cfg->sync_period && (cfg->sync_period < 8 || cfg->sync_period > 20))
		return prec_diag_set(diag, -EINVAL, -1, "the sync period must be 8..20 (log2 of bytes)");
	if (cfg->csid_base > 0x6f)
		return prec_diag_set(diag, -EINVAL, -1, "trace IDs go up to 0x6f");
	r = find_exec(cfg->qemu ? cfg->qemu : "qemu-aarch64", qemu, sizeof(qemu));
	if (r < 0 || access(qemu, X_OK)) {
		prec_diag_set(diag, -ENOENT, -1, "cannot find %s",
			      cfg->qemu ? cfg->qemu : "qemu-aarch64");
		prec_diag_hint(diag, "the software tracer needs qemu-user: apt-get install qemu-user");
		return -ENOENT;
	}
	if (access(cfg->plugin, R_OK)) {
		prec_diag_set(diag, -ENOENT, -1, "cannot find the tracer plugin %s", cfg->plugin);
		prec_diag_hint(diag, "set PTREC_PLUGIN to the path of ptrec-emu-etm.so");
		return -ENOENT;
	}
	r = prec_etm_check_program(cfg->argv[0], path, sizeof(path), diag);
	if (r < 0)
		return r;
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
				r = deliver(&m, buf + sizeof(m), ops, &st, truth_fd, errmsg,
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
	free(st.tid);
	return r;
}

/* ---- in-memory recording ---------------------------------------------- */

struct rec_ctx {
	const struct prec_etm_ops *tee;
	struct prec_etm_recording *rec;
	size_t max_stream;
	size_t *caps;
};

static struct prec_etm_stream *rec_stream(struct rec_ctx *c, uint32_t tid)
{
	size_t i;

	for (i = 0; i < c->rec->nstreams; i++)
		if (c->rec->streams[i].tid == tid)
			return &c->rec->streams[i];
	return NULL;
}

static int rec_on_stream(void *ctx, uint32_t pid, uint32_t tid, unsigned index, uint8_t csid)
{
	struct rec_ctx *c = ctx;
	struct prec_etm_recording *rec = c->rec;
	struct prec_etm_stream *s;
	size_t *caps;

	if (c->tee && c->tee->stream) {
		int r = c->tee->stream(c->tee->ctx, pid, tid, index, csid);

		if (r < 0)
			return r;
	}
	if (index != rec->nstreams)
		return -EPROTO;
	s = realloc(rec->streams, (rec->nstreams + 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	rec->streams = s;
	caps = realloc(c->caps, (rec->nstreams + 1) * sizeof(*caps));
	if (!caps)
		return -ENOMEM;
	c->caps = caps;
	caps[rec->nstreams] = 0;
	s = &rec->streams[rec->nstreams++];
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->tid = tid;
	s->csid = csid;
	return 0;
}

static int rec_on_aux(void *ctx, uint32_t pid, uint32_t tid, uint64_t offset, const void *data,
		      size_t size)
{
	struct rec_ctx *c = ctx;
	struct prec_etm_stream *s = rec_stream(c, tid);
	size_t *cap;

	if (c->tee && c->tee->aux) {
		int r = c->tee->aux(c->tee->ctx, pid, tid, offset, data, size);

		if (r < 0)
			return r;
	}
	if (!s)
		return -EPROTO;
	cap = &c->caps[s - c->rec->streams];
	if (offset != s->size)
		return -EPROTO;
	if (size > c->max_stream || s->size > c->max_stream - size)
		return -EFBIG;
	if (s->size + size > *cap) {
		size_t ncap = *cap ? *cap : 65536;
		uint8_t *p;

		while (ncap < s->size + size)
			ncap *= 2;
		p = realloc(s->data, ncap);
		if (!p)
			return -ENOMEM;
		s->data = p;
		*cap = ncap;
	}
	memcpy(s->data + s->size, data, size);
	s->size += size;
	return 0;
}

/*
 * Adds @size bytes at @addr to the memory image; regions that overlap or
 * touch are merged (newer bytes win), so the image never has overlaps.
 */
static int mem_add(struct prec_etm_recording *rec, uint64_t addr, const uint8_t *data, size_t size)
{
	uint64_t lo = addr, hi = addr + size;
	size_t i, j;
	uint8_t *buf;
	struct prec_etm_mem *m;

	if (!size)
		return 0;
	for (i = 0; i < rec->nmem; i++) {
		m = &rec->mem[i];
		if (m->addr <= hi && m->addr + m->size >= lo) {
			if (m->addr < lo)
				lo = m->addr;
			if (m->addr + m->size > hi)
				hi = m->addr + m->size;
		}
	}
	if (hi - lo > (1u << 30))
		return -EFBIG;
	buf = calloc(1, (size_t)(hi - lo));
	if (!buf)
		return -ENOMEM;
	for (i = j = 0; i < rec->nmem; i++) {
		m = &rec->mem[i];
		if (m->addr <= hi && m->addr + m->size >= lo && m->addr >= lo &&
		    m->addr + m->size <= hi) {
			memcpy(buf + (m->addr - lo), m->data, m->size);
			free(m->data);
		} else {
			rec->mem[j++] = *m;
		}
	}
	rec->nmem = j;
	memcpy(buf + (addr - lo), data, size);
	m = realloc(rec->mem, (rec->nmem + 1) * sizeof(*m));
	if (!m) {
		free(buf);
		return -ENOMEM;
	}
	rec->mem = m;
	m[rec->nmem].addr = lo;
	m[rec->nmem].data = buf;
	m[rec->nmem].size = (size_t)(hi - lo);
	rec->nmem++;
	return 0;
}

/* An MMAP2 record: the mapped bytes of the file, as it is now. */
static int rec_mmap2(struct prec_etm_recording *rec, const uint8_t *p, size_t size)
{
	uint64_t addr, len, pgoff;
	const char *path;
	uint8_t *buf;
	int fd, r;
	long n;

	if (size < 73)
		return -EPROTO;
	memcpy(&addr, p + 16, 8);
	memcpy(&len, p + 24, 8);
	memcpy(&pgoff, p + 32, 8);
	path = (const char *)p + 72;
	if (!memchr(path, 0, size - 72))
		return -EPROTO;
	if (!len || len > (1u << 30))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* gone: the trace of that code cannot be decoded */
	buf = malloc((size_t)len);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	n = -1;
	if (lseek(fd, (off_t)pgoff, SEEK_SET) >= 0)
		n = prec_read_full(fd, buf, (size_t)len);
	close(fd);
	r = n > 0 ? mem_add(rec, addr, buf, (size_t)n) : 0;
	free(buf);
	return r;
}

static int rec_on_sideband(void *ctx, const void *rec_p, size_t size)
{
	struct rec_ctx *c = ctx;
	const uint8_t *p = rec_p;
	struct perf_event_header h;

	if (c->tee && c->tee->sideband) {
		int r = c->tee->sideband(c->tee->ctx, rec_p, size);

		if (r < 0)
			return r;
	}
	memcpy(&h, p, sizeof(h));
	switch (h.type) {
	case PERF_RECORD_MMAP2:
		return rec_mmap2(c->rec, p, size);
	case PERF_RECORD_TEXT_POKE: {
		uint64_t addr;
		uint16_t old_len, new_len;

		if (size < 20)
			return -EPROTO;
		memcpy(&addr, p + 8, 8);
		memcpy(&old_len, p + 16, 2);
		memcpy(&new_len, p + 18, 2);
		if (20 + (size_t)old_len + new_len > size)
			return -EPROTO;
		return mem_add(c->rec, addr, p + 20 + old_len, new_len);
	}
	case PERF_RECORD_SAMPLE:
		c->rec->nsamples++;
		return 0;
	}
	return 0;
}

void prec_etm_recording_free(struct prec_etm_recording *rec)
{
	size_t i;

	if (!rec)
		return;
	for (i = 0; i < rec->nstreams; i++)
		free(rec->streams[i].data);
	for (i = 0; i < rec->nmem; i++)
		free(rec->mem[i].data);
	free(rec->streams);
	free(rec->mem);
	memset(rec, 0, sizeof(*rec));
}

int prec_etm_record(const struct prec_etm_config *cfg, size_t max_stream,
		    const struct prec_etm_ops *tee, struct prec_etm_recording *rec,
		    struct prec_diag *diag)
{
	struct rec_ctx c = { .tee = tee, .rec = rec, .max_stream = max_stream ? max_stream : (256u << 20) };
	struct prec_etm_ops ops = { .ctx = &c, .stream = rec_on_stream, .aux = rec_on_aux,
				    .sideband = rec_on_sideband };
	int r;

	memset(rec, 0, sizeof(*rec));
	r = prec_etm_run(cfg, &ops, &rec->wstatus, diag);
	free(c.caps);
	if (r < 0)
		prec_etm_recording_free(rec);
	return r;
}
