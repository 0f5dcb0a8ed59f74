// SPDX-License-Identifier: MIT
/* The software tracers' shared runner: see emurun.h. */
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
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/emurun.h"
#include "base/array.h"
#include "base/util.h"
#include "record/emu_proto.h"
#include "tracefile/tfile.h"

int prec_emurun_find_program(const char *prog, char *path, size_t size, struct prec_diag *diag)
{
	struct stat st;
	int r;

	if (!prog || !*prog)
		return prec_diag_set(diag, -EINVAL, -1, "no program to run");
	r = prec_find_exec(prog, path, size);
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
	return a == PREC_EMU_ACT_PAUSE    ? "pause" :
	       a == PREC_EMU_ACT_RESUME   ? "resume" :
	       a == PREC_EMU_ACT_SNAPSHOT ? "snapshot" : "none";
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
	for (i = 0; i < (size_t)run->nfilters; i++) {
		const struct prec_addr_filter *f = &run->filters[i];

		if (f->action != PREC_AF_FILTER || !f->size || !f->path || strchr(f->path, '\n')) {
			r = -EINVAL;
			goto out;
		}
		prec_buf_printf(&b, "filter %" PRIu64 " %" PRIu64 " %s\n", f->offset, f->size,
				f->path);
	}
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

/* ptrec's own pid, for the child to check that it still has its parent. */
static pid_t parent;

/* Descriptors the child gets: the socket, the configuration, the shared area. */
struct child_fds {
	int sock, cfg, shm;          /* ours */
	int fd_sock, fd_cfg, fd_shm; /* the numbers they get in the child */
	/*
	 * Room for QEMU's argument vector, allocated before fork(): the
	 * recorder may run this from a thread, and a forked child must not
	 * call malloc (another thread may have held its lock at the fork).
	 */
	char **args;
};

/* The child: becomes QEMU -plugin ... PROG ARGS (or the tracer's command). */
static void child_exec(const struct prec_emurun *run, const char *qemu, const char *popt,
		       const char *interp, const char *path, char *const *argv,
		       const struct child_fds *f)
{
	int fd_sock = f->fd_sock;
	size_t n = 0, i, k = 0;
	char **args;
	sigset_t none;
	char msg[512];
	struct emu_msg m = { .type = EMU_MSG_ERROR };

	while (argv[n])
		n++;
	args = f->args;
	if (dup2(f->sock, fd_sock) < 0 || dup2(f->cfg, f->fd_cfg) < 0 ||
	    dup2(f->shm, f->fd_shm) < 0 || !args)
		_exit(127);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	/*
	 * Nothing of the recording runs on when ptrec dies: QEMU gets SIGKILL
	 * then (the setting survives execve). Processes the workload forks end
	 * when their next message finds the socket closed (emulate/common).
	 */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127); /* ptrec died before the prctl */
	if (run->tracer->command) {
		if (run->tracer->command(run->cfg, qemu, popt, path, args, n + 63) < 0)
			_exit(127);
		goto run;
	}
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
run:
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

/* Where the messages left a stream: what a dead process left is not sent twice. */
struct sent {
	uint32_t tid;
	uint64_t end;
};

/* A process of the workload that ended, as its parent or ptrec reaped it. */
struct ended {
	uint32_t pid;
	int status; /* waitpid(2)'s form */
};

/* What the plugins said so far. */
struct heard {
	int truth_fd;
	char errmsg[512]; /* the first error a plugin reported */
	int hellos;       /* plugin instances that started */
	uint64_t insns;   /* instructions the ended instances saw retire */
	struct sent *sent;
	size_t nsent;
	struct ended *ended;
	size_t nended;
	uint32_t *pids;   /* the processes plugin instances ran in (HELLO) */
	size_t npids;
	uint64_t *truth_end; /* per slot: where its sent truth ends (t_off) */
	size_t ntruth_end;
};

static struct sent *sent_of(struct heard *h, uint32_t tid, bool add)
{
	size_t i;

	for (i = h->nsent; i-- > 0;)
		if (h->sent[i].tid == tid)
			return &h->sent[i];
	if (!add || PREC_ARRAY_RESERVE(h->sent, h->nsent, 1))
		return NULL;
	h->sent[h->nsent] = (struct sent){ tid, 0 };
	return &h->sent[h->nsent++];
}

static void heard_free(struct heard *h)
{
	free(h->sent);
	free(h->ended);
	free(h->pids);
	free(h->truth_end);
	if (h->truth_fd >= 0)
		close(h->truth_fd);
}

static int note_ended(struct heard *h, uint32_t pid, int status)
{
	if (PREC_ARRAY_RESERVE(h->ended, h->nended, 1))
		return -ENOMEM;
	h->ended[h->nended++] = (struct ended){ pid, status };
	return 0;
}

static int deliver(const struct emu_msg *m, const uint8_t *payload, const struct prec_emu_ops *ops,
		   struct heard *h)
{
	switch (m->type) {
	case EMU_MSG_HELLO:
		h->hellos++;
		if (PREC_ARRAY_RESERVE(h->pids, h->npids, 1))
			return -ENOMEM;
		h->pids[h->npids++] = (uint32_t)m->arg;
		return 0;
	case EMU_MSG_AUX: {
		struct sent *st = sent_of(h, m->tid, true);

		if (!st)
			return -ENOMEM;
		if (m->arg + m->size > st->end)
			st->end = m->arg + m->size;
		return ops->aux ? ops->aux(ops->ctx, m->pid, m->tid, m->arg, payload, m->size) : 0;
	}
	case EMU_MSG_SB: {
		uint16_t sz;

		if (m->size < 8)
			return -EPROTO;
		memcpy(&sz, payload + 6, 2);
		if (sz != m->size)
			return -EPROTO;
		return ops->sideband ? ops->sideband(ops->ctx, payload, m->size) : 0;
	}
	case EMU_MSG_TRUTH: {
		uint64_t slot = m->arg >> EMU_TRUTH_SHIFT;
		uint64_t end = (m->arg & ((1ull << EMU_TRUTH_SHIFT) - 1)) + m->size;

		if (slot && slot <= (uint64_t)EMU_SHM_MAX_CHUNKS * EMU_SHM_CHUNK_SLOTS) {
			size_t k = h->ntruth_end;

			if (slot > k && PREC_ARRAY_RESERVE(h->truth_end, h->ntruth_end, slot - k))
				return -ENOMEM;
			for (; k < slot; k++)
				h->truth_end[h->ntruth_end++] = 0;
			if (end > h->truth_end[slot - 1])
				h->truth_end[slot - 1] = end;
		}
		return h->truth_fd >= 0 ? prec_write_full(h->truth_fd, payload, m->size) : 0;
	}
	case EMU_MSG_ERROR:
		if (!h->errmsg[0])
			snprintf(h->errmsg, sizeof(h->errmsg), "%.*s", (int)m->size,
				 (const char *)payload);
		return 0;
	case EMU_MSG_BYE:
		h->insns += m->arg;
		return 0;
	case EMU_MSG_REAPED:
		return note_ended(h, (uint32_t)(m->arg >> 32), (int)(uint32_t)m->arg);
	case EMU_MSG_WAIT:
	case EMU_MSG_WOKEN:
	case EMU_MSG_READY:
	case EMU_MSG_SLICE:
	case EMU_MSG_TICK: {
		uint32_t slot = EMU_SLOT_PRIVATE;
		int what = m->type == EMU_MSG_WAIT ? PREC_EMU_SLEEP :
			   m->type == EMU_MSG_WOKEN ? PREC_EMU_WOKEN :
			   m->type == EMU_MSG_READY ? PREC_EMU_READY :
			   m->type == EMU_MSG_SLICE ? PREC_EMU_SLICE : PREC_EMU_TICK;

		if (m->size >= sizeof(slot))
			memcpy(&slot, payload, sizeof(slot));
		return ops->sched ? ops->sched(ops->ctx, m->pid, m->tid, m->arg, what, slot) : 0;
	}
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

	r = prec_find_exec(want, qemu, qsize);
	if (r < 0 || access(qemu, X_OK)) {
		prec_diag_set(diag, -ENOENT, -1, "cannot find %s", want);
		prec_diag_hint(diag, "%s", tr->qemu_hint ? tr->qemu_hint :
				   "the software tracer needs qemu-user: apt-get install qemu-user");
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

/* The -plugin argument: the path (commas doubled) and the descriptor numbers. */
static int plugin_option(const char *plugin, char **out, struct child_fds *f,
			 struct prec_diag *diag)
{
	size_t plen = 2 * strlen(plugin) + 64, j = 0;
	struct rlimit rl;
	char *popt = malloc(plen);

	if (!popt)
		return prec_diag_set(diag, -ENOMEM, -1, "out of memory");
	*out = popt;
	/* QEMU's option syntax: a comma inside a value is written twice. */
	for (const char *s = plugin; *s; s++) {
		popt[j++] = *s;
		if (*s == ',')
			popt[j++] = ',';
	}
	/*
	 * High descriptor numbers, out of the workload's way; lower
	 * ones if the descriptor limit does not reach that far.
	 */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur <= EMU_FD_CFG) {
		if (rl.rlim_cur < 16)
			return prec_diag_set(diag, -EMFILE, -1, "the descriptor limit (%llu) is too low",
					     (unsigned long long)rl.rlim_cur);
		f->fd_sock = (int)rl.rlim_cur - 3;
		f->fd_cfg = (int)rl.rlim_cur - 2;
		f->fd_shm = (int)rl.rlim_cur - 4;
	}
	snprintf(popt + j, plen - j, ",fd=%d,cfgfd=%d,shmfd=%d", f->fd_sock, f->fd_cfg, f->fd_shm);
	return 0;
}

/* The ground-truth file, with its header line (@path NULL: none). */
static int open_truth(const char *path, int *fd, struct prec_diag *diag)
{
	if (!path)
		return 0;
	*fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (*fd < 0)
		return prec_diag_set(diag, -errno, -1, "cannot create %s: %s", path, strerror(errno));
	return prec_write_full(*fd, "# ptrec-emulate truth 1\n", 24);
}

/*
 * A process of the workload whose parent ended before it comes to ptrec,
 * a child subreaper while the workload runs (prctl(2)
 * PR_SET_CHILD_SUBREAPER): how it ends is known only here. Reaps every
 * such process that ended; the workload itself (@workload) is left to the
 * caller. Returns 0 or -ENOMEM.
 */
static int reap_adopted(pid_t workload, struct heard *h)
{
	for (;;) {
		siginfo_t si;
		int st;

		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid <= 0 ||
		    si.si_pid == workload)
			return 0;
		if (waitpid(si.si_pid, &st, WNOHANG) != si.si_pid)
			return 0;
		if (note_ended(h, (uint32_t)si.si_pid, st) < 0)
			return -ENOMEM;
	}
}

static bool has_ended(const struct heard *h, uint32_t pid)
{
	size_t i;

	for (i = 0; i < h->nended; i++)
		if (h->ended[i].pid == pid)
			return true;
	return false;
}

/*
 * After the last plugin instance closed the socket: the processes of the
 * workload that came to ptrec are ending, but may not be waitable yet (a
 * process closes its files before it becomes a zombie). Waits for them a
 * little. Returns 0 or -ENOMEM.
 */
static int reap_adopted_last(pid_t workload, struct heard *h)
{
	size_t i;
	int st, waits = 0;

	for (i = 0; i < h->npids; i++) {
		pid_t p = (pid_t)h->pids[i], w;

		if (p == workload || has_ended(h, h->pids[i]))
			continue;
		/* A second in all: one that still runs was cut off. */
		while ((w = waitpid(p, &st, WNOHANG)) == 0 && waits++ < 100)
			usleep(10000);
		if (w == p && note_ended(h, (uint32_t)p, st) < 0)
			return -ENOMEM;
	}
	return reap_adopted(0, h);
}

static int read_messages(const struct prec_emurun *run, int sock, uint8_t *buf, pid_t pid,
			 int *status, int *exitedp, struct heard *h)
{
	uint64_t quiet_since = 0, exit_ns = 0;
	int r = 0, eof = 0, exited = 0;

	/*
	 * Read until every plugin instance (the workload and any children it
	 * forked) has closed the socket. Once the workload itself has exited,
	 * stop after a quiet second, as perf stops when its workload ends.
	 */
	while (!eof) {
		struct pollfd pfd = { .fd = sock, .events = POLLIN };
		int pr = poll(&pfd, 1, 100);

		if (pr < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		if (pr > 0) {
			struct emu_msg m;
			ssize_t n = recv(sock, buf, sizeof(m) + EMU_MSG_MAX + 1, MSG_DONTWAIT);

			if (n == 0) {
				eof = 1;
			} else if (n > 0) {
				memcpy(&m, buf, sizeof(m) <= (size_t)n ? sizeof(m) : (size_t)n);
				if ((size_t)n < sizeof(m) || m.size != (size_t)n - sizeof(m)) {
					r = -EPROTO;
					break;
				}
				r = deliver(&m, buf + sizeof(m), run->ops, h);
				if (r < 0)
					break;
				quiet_since = prec_now_ns();
				continue;
			} else if (errno != EAGAIN && errno != EINTR) {
				r = -errno;
				break;
			}
		}
		r = reap_adopted(exited ? 0 : pid, h);
		if (r < 0)
			break;
		if (!exited) {
			pid_t w = waitpid(pid, status, WNOHANG);

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
	*exitedp = exited;
	return r;
}

/* What the plugins' messages say about the run as a whole: 0, or what went wrong. */
static int plugin_outcome(const struct prec_emurun *run, const char *qemu, const struct heard *h,
			  int status, struct prec_diag *diag)
{
	int r;

	if (h->errmsg[0])
		return prec_diag_set(diag, -EPROTO, -1, "software tracer: %s", h->errmsg);
	if (h->hellos)
		return 0;
	r = prec_diag_set(diag, -ENOEXEC, -1, "%s could not load the tracer plugin %s", qemu,
			  run->plugin);
	if (WIFEXITED(status) || WIFSIGNALED(status))
		prec_diag_hint(diag, "%s ended (%s %d) without loading it: the software "
			       "tracer needs QEMU 7.2's user-mode emulator (plugin API 1); "
			       "any message of its own is above", qemu,
			       WIFEXITED(status) ? "exit status" : "signal",
			       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	else
		prec_diag_hint(diag, "the software tracer needs QEMU 7.2 (plugin API 1)");
	return r;
}

/* The area the plugin keeps what must survive a crash in (emu_proto.h): its header and first chunk. */
static int shm_create(struct emu_shm **out, size_t *size)
{
	size_t sz = EMU_SHM_HDR + EMU_SHM_CHUNK_BYTES;
	void *p = NULL;
	struct emu_shm *m;
	int fd = prec_memfd_shared("ptrec-emu-slots", sz, &p);

	if (fd < 0)
		return fd;
	m = p;
	m->magic = EMU_SHM_MAGIC;
	m->version = EMU_PROTO_VERSION;
	m->nchunks = 1;
	m->slot_size = sizeof(struct emu_slot);
	m->chunk_slots = EMU_SHM_CHUNK_SLOTS;
	m->max_chunks = EMU_SHM_MAX_CHUNKS;
	m->chunk_bytes = EMU_SHM_CHUNK_BYTES;
	*out = m;
	*size = sz;
	return fd;
}

/* The slots of the area as the plugins left it: all its chunks, mapped to read. */
struct slots {
	const uint8_t *base;
	size_t size;
	uint32_t n;
};

static int slots_map(int fd, const struct emu_shm *m, struct slots *v)
{
	struct stat st;
	uint64_t chunks = __atomic_load_n(&m->nchunks, __ATOMIC_ACQUIRE);
	const void *p;
	int r;

	/* A chunk counted but never added to the file (its claimer died first) holds nothing. */
	if (fstat(fd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size < EMU_SHM_CHUNK_OFF(chunks))
		chunks = ((uint64_t)st.st_size - EMU_SHM_HDR) / EMU_SHM_CHUNK_BYTES;
	if (chunks > EMU_SHM_MAX_CHUNKS)
		chunks = EMU_SHM_MAX_CHUNKS;
	v->size = (size_t)EMU_SHM_CHUNK_OFF(chunks);
	r = prec_memfd_map_read(fd, v->size, &p);
	if (r < 0)
		return r;
	v->base = p;
	v->n = (uint32_t)chunks * EMU_SHM_CHUNK_SLOTS;
	return 0;
}

static const struct emu_slot *slot_at(const struct slots *v, uint32_t i)
{
	return (const struct emu_slot *)(v->base + EMU_SHM_CHUNK_OFF(i / EMU_SHM_CHUNK_SLOTS)) +
	       i % EMU_SHM_CHUNK_SLOTS;
}

/* The sample_id_all trailer of the tracer's event (emulate.h): pid, tid, time, cpu 0, id 1. */
static size_t put_trailer(uint8_t *p, uint32_t pid, uint32_t tid, uint64_t time)
{
	uint64_t id = 1, zero = 0;

	memcpy(p, &pid, 4);
	memcpy(p + 4, &tid, 4);
	memcpy(p + 8, &time, 8);
	memcpy(p + 16, &zero, 8);
	memcpy(p + 24, &id, 8);
	return 32;
}

static void put_header(uint8_t *p, uint32_t type, size_t size)
{
	struct perf_event_header hd = { .type = type, .misc = PERF_RECORD_MISC_USER,
					.size = (uint16_t)size };

	memcpy(p, &hd, sizeof(hd));
}

/* Where a dead thread stopped. */
struct stop {
	uint64_t ip;  /* no instruction from here on is in the trace */
	uint32_t ran; /* instructions of its block from the committed position up to ip */
	bool insn;    /* ip is the instruction that began last (emu_slot.at) */
};

/* Whether the instruction of slot @s that began last (at) lies in the block of its committed position. */
static bool at_known(const struct emu_slot *s)
{
	uint64_t va = EMU_AT_VA(s->at);
	uint32_t idx = EMU_AT_IDX(s->at);

	return (s->c_state & EMU_SLOT_USER) && s->ip && va >= s->ip && va < s->c_end &&
	       idx >= s->c_done && idx < s->c_ninsn && (va > s->ip) == (idx > s->c_done);
}

/*
 * Where the thread of slot @s stopped: the instruction of its block that
 * began last, when known; else its committed position. A tracer that ends
 * a stream without a final packet (no close_stream) stops at the committed
 * position, as its decoders do.
 */
static struct stop stop_of(const struct prec_emurun *run, const struct emu_slot *s)
{
	struct stop p = { s->ip, 0, false };

	if (!run->tracer->close_stream || !at_known(s))
		return p;
	p.ip = EMU_AT_VA(s->at);
	p.ran = EMU_AT_IDX(s->at) - s->c_done;
	p.insn = true;
	return p;
}

/* Signals an instruction raises (as opposed to those sent by someone). */
static bool fault_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP ||
	       sig == SIGSYS;
}

/* The trace a dead thread left in its slot @s, ended by the tracer's packets. */
static int collect_trace(const struct prec_emurun *run, const struct emu_slot *s,
			 struct heard *h)
{
	const struct sent *st = sent_of(h, s->tid, false);
	uint64_t from = st && st->end > s->aux_off ? st->end : s->aux_off;
	uint64_t upto = s->c_pos;
	uint8_t buf[EMU_ENC_CAP + 64], rec[8 + 24 + 32];
	size_t n = 0;
	int r;

	/*
	 * Bytes past the last commit were sent already (the process died
	 * while its buffer went out): the stream just ends there.
	 */
	if (from > upto || upto - s->aux_off > EMU_ENC_CAP)
		return 0;
	n = (size_t)(upto - from);
	memcpy(buf, s->buf + (from - s->aux_off), n);
	/* A stream that never got going has nothing to end. */
	if (run->tracer->close_stream && (n || (st && st->end)))
		n += run->tracer->close_stream(s->c_held, s->c_nheld,
					       (s->c_state & (EMU_SLOT_USER | EMU_SLOT_FILTERED)) ==
						       EMU_SLOT_USER,
					       stop_of(run, s).ip, buf + n, sizeof(buf) - n);
	if (!n)
		return 0;
	r = run->ops->aux ? run->ops->aux(run->ops->ctx, s->owner, s->tid, from, buf, n) : 0;
	if (r < 0 || !run->ops->sideband)
		return r;
	put_header(rec, PERF_RECORD_AUX, sizeof(rec));
	memcpy(rec + 8, &from, 8);
	memcpy(rec + 16, &(uint64_t){ n }, 8);
	memcpy(rec + 24, &(uint64_t){ 0 }, 8);
	put_trailer(rec + 32, s->owner, s->tid, s->now);
	return run->ops->sideband(run->ops->ctx, rec, sizeof(rec));
}

/* PREC_RECORD_SIGNAL for the thread of slot @s: its process died of @status. */
static int signal_record(const struct prec_emurun *run, const struct emu_slot *s, int status,
			 uint32_t flags)
{
	uint8_t rec[PREC_RECORD_SIGNAL_SIZE + 32];
	uint32_t sig = (uint32_t)WTERMSIG(status);
	struct stop at = stop_of(run, s);
	uint64_t caller = 0;

	if (WCOREDUMP(status))
		flags |= PREC_SIGREC_CORE;
	if (s->c_sh_n && s->c_sh_n <= EMU_SHADOW_DEPTH)
		caller = s->shadow[s->c_sh_n - 1].ret;
	put_header(rec, PREC_RECORD_SIGNAL, sizeof(rec));
	memcpy(rec + 8, &s->owner, 4);
	memcpy(rec + 12, &s->tid, 4);
	memcpy(rec + 16, &sig, 4);
	memcpy(rec + 20, &flags, 4);
	memcpy(rec + 24, &at.ip, 8);
	memcpy(rec + 32, &caller, 8);
	put_trailer(rec + PREC_RECORD_SIGNAL_SIZE, s->owner, s->tid, s->now);
	return run->ops->sideband ? run->ops->sideband(run->ops->ctx, rec, sizeof(rec)) : 0;
}

/* A thread whose process a signal killed. */
struct dead {
	const struct emu_slot *s;
	int status;     /* its process's, waitpid(2)'s form */
	bool workload;  /* the process is the workload's own */
};

/* The workload's threads last, each process's threads together, in the order they ran last. */
static int dead_cmp(const void *a, const void *b)
{
	const struct dead *x = a, *y = b;

	if (x->workload != y->workload)
		return x->workload ? 1 : -1;
	if (x->s->owner != y->s->owner)
		return x->s->owner < y->s->owner ? -1 : 1;
	return x->s->now < y->s->now ? -1 : x->s->now > y->s->now;
}

/* How process @owner ended if a signal killed it (its wait status), else 0. */
static int killed_status(const struct heard *h, uint32_t owner, pid_t workload, int status)
{
	size_t i;

	if (owner != (uint32_t)workload) {
		status = 0;
		for (i = h->nended; i-- > 0 && !status;)
			if (h->ended[i].pid == owner)
				status = h->ended[i].status;
	}
	return WIFSIGNALED(status) ? status : 0;
}

/*
 * Which of the @n threads @d of a process a fault killed raised it, or -1
 * if that cannot be told. QEMU stops the process's other threads between
 * blocks before it dies of a fault (stop_all_tasks() on its core-dump
 * path), so the thread that raised it is the one stopped inside a block;
 * failing that, the only one stopped in user code at all.
 */
static long fault_culprit(const struct dead *d, size_t n)
{
	long inside = -1, at_end = -1;
	size_t i, ninside = 0, nend = 0;

	for (i = 0; i < n; i++) {
		const struct emu_slot *s = d[i].s;

		if (!at_known(s))
			continue;
		if (EMU_AT_IDX(s->at) + 1 < s->c_ninsn) {
			inside = (long)i;
			ninside++;
		} else {
			at_end = (long)i;
			nend++;
		}
	}
	return ninside == 1 ? inside : !ninside && nend == 1 ? at_end : -1;
}

/*
 * The records of the @n threads @d of one process (in the order they ran
 * last). The likely culprit comes last, flagged: the thread that raised a
 * fault (its instruction is known: EXACT), else the one that ran last.
 */
static int process_records(const struct prec_emurun *run, const struct dead *d, size_t n)
{
	uint32_t flags = d[0].workload ? 0 : PREC_SIGREC_DESCENDANT;
	long c = fault_signal(WTERMSIG(d[0].status)) ? fault_culprit(d, n) : -1;
	size_t i, last = c >= 0 ? (size_t)c : n - 1;
	int r = 0;

	for (i = 0; i < n && !r; i++)
		if (i != last)
			r = signal_record(run, d[i].s, d[i].status, flags);
	/* EXACT: the stream and the record end at the faulting instruction itself. */
	if (c >= 0 && stop_of(run, d[last].s).insn)
		flags |= PREC_SIGREC_EXACT;
	if (!r)
		r = signal_record(run, d[last].s, d[last].status, flags | PREC_SIGREC_LAST);
	return r;
}

/*
 * The PREC_RECORD_SIGNAL records of the threads of every process a signal
 * killed: the workload (@pid, wait status @status) and those it started
 * whose end its processes or ptrec reaped.
 */
static int signal_records(const struct prec_emurun *run, const struct slots *v, pid_t pid,
			  int status, const struct heard *h)
{
	struct dead *d = NULL;
	size_t n = 0, i, a;
	int r = 0;

	for (i = 0; i < v->n && !r; i++) {
		const struct emu_slot *s = slot_at(v, (uint32_t)i);
		int st = s->owner && s->tid ? killed_status(h, s->owner, pid, status) : 0;

		if (!st)
			continue;
		if (PREC_ARRAY_RESERVE(d, n, 1))
			r = -ENOMEM;
		else
			d[n++] = (struct dead){ s, st, s->owner == (uint32_t)pid };
	}
	if (n)
		qsort(d, n, sizeof(*d), dead_cmp);
	for (a = 0, i = 1; i <= n && !r; i++)
		if (i == n || d[i].s->owner != d[a].s->owner) {
			r = process_records(run, d + a, i - a);
			a = i;
		}
	free(d);
	return r;
}

/*
 * The committed truth of slot @s (index @i) that no message brought: truth
 * past the commit is not in the trace; a process killed right after it sent
 * its truth may not have had the time to forget it (emu_proto.h, t_off).
 */
static int collect_truth(const struct heard *h, const struct emu_slot *s, uint32_t i)
{
	uint64_t upto = s->t_off + s->c_tlen;
	uint64_t from = i < h->ntruth_end && h->truth_end[i] > s->t_off ? h->truth_end[i] : s->t_off;

	if (s->c_tlen > s->tlen || s->tlen > EMU_TRUTH_CAP || from >= upto)
		return 0;
	return prec_write_full(h->truth_fd, s->tbuf + (from - s->t_off), (size_t)(upto - from));
}

/*
 * The truth lines of a thread killed in user code: the instructions of its
 * block that ran since the commit ("B tid ip stop count"), then "K tid
 * stop": it stood at stop.
 */
static int truth_killed(const struct prec_emurun *run, int fd, const struct emu_slot *s)
{
	struct stop at = stop_of(run, s);
	char line[128];
	int n = 0;

	if (at.ran)
		n = snprintf(line, sizeof(line), "B %u %" PRIx64 " %" PRIx64 " %u\n", s->tid, s->ip,
			     at.ip, at.ran);
	n += snprintf(line + n, sizeof(line) - (size_t)n, "K %u %" PRIx64 "\n", s->tid, at.ip);
	return prec_write_full(fd, line, (size_t)n);
}

/*
 * After the run: the slots still claimed belong to threads whose process
 * died without ending them (a signal, SIGKILL), or that were cut off. Their
 * truth, their unsent trace, and for each process a signal killed a record
 * of it per thread.
 */
static int collect_slots(const struct prec_emurun *run, int fd, const struct emu_shm *m,
			 pid_t pid, int status, struct heard *h)
{
	struct slots v = { 0 };
	uint32_t i;
	int r;

	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	r = slots_map(fd, m, &v);
	for (i = 0; !r && i < v.n; i++) {
		const struct emu_slot *s = slot_at(&v, i);

		if (!s->owner || !s->tid)
			continue;
		if (h->truth_fd >= 0)
			r = collect_truth(h, s, i);
		if (!r && h->truth_fd >= 0 && (s->c_state & EMU_SLOT_USER) && s->ip)
			r = truth_killed(run, h->truth_fd, s);
		if (!r)
			r = collect_trace(run, s, h);
	}
	if (!r)
		r = signal_records(run, &v, pid, status, h);
	prec_memfd_unmap(v.base, v.size);
	return r;
}

/* The plugin's message channel, with room for bursts on our side: 0 or -errno. */
static int open_channel(int sv[2], struct prec_diag *diag)
{
	int sz = 4 << 20;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return prec_diag_set(diag, -errno, -1, "socketpair: %s", strerror(errno));
	setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	return 0;
}

/* Room for QEMU's arguments around @argv (see struct child_fds), or NULL. */
static char **args_room(char *const *argv)
{
	size_t n = 0;

	while (argv[n])
		n++;
	return calloc(n + 64, sizeof(char *));
}

/* What the run changes in ptrec's process, and gives back at its end. */
struct run_guard {
	struct sigaction old_int, old_term;
	int subreaper;
};

/*
 * SIGINT and SIGTERM go to the workload while it runs (and on to ptrec's
 * own handlers); processes of the workload that outlive their parent come
 * to ptrec (reap_adopted()).
 */
static void run_guard_begin(struct run_guard *g)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, &g->old_int);
	sigaction(SIGTERM, &sa, &g->old_term);
	chained_int = g->old_int;
	chained_term = g->old_term;
	g->subreaper = 0;
	prctl(PR_GET_CHILD_SUBREAPER, &g->subreaper);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
}

static void run_guard_end(const struct run_guard *g)
{
	sigaction(SIGINT, &g->old_int, NULL);
	sigaction(SIGTERM, &g->old_term, NULL);
	prctl(PR_SET_CHILD_SUBREAPER, g->subreaper);
}

int prec_emurun_run(const struct prec_emurun *run, int *wstatus, struct prec_diag *diag)
{
	char qemu[PATH_MAX], path[PATH_MAX], interp[PATH_MAX] = "", *popt = NULL;
	int sv[2] = { -1, -1 }, cfgfd = -1, shmfd = -1, r, status = 0;
	struct emu_shm *shm = NULL;
	size_t shm_size = 0;
	int exited = 0;
	pid_t pid = -1;
	uint8_t *buf = NULL;
	struct run_guard guard;
	struct child_fds cf = { .fd_sock = EMU_FD_SOCK, .fd_cfg = EMU_FD_CFG, .fd_shm = EMU_FD_SHM };
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
	buf = malloc(sizeof(struct emu_msg) + EMU_MSG_MAX + 1);
	if (!buf) {
		r = prec_diag_set(diag, -ENOMEM, -1, "out of memory");
		goto out;
	}
	shmfd = shm_create(&shm, &shm_size);
	if (shmfd < 0) {
		r = prec_diag_set(diag, shmfd, -1, "cannot set up the tracer's shared area: %s",
				  prec_strerror(shmfd));
		goto out;
	}
	if (run->ops->trig_off)
		run->ops->trig_off(run->ops->ctx, shm->trig_off);
	r = plugin_option(run->plugin, &popt, &cf, diag);
	if (r < 0)
		goto out;
	r = open_truth(run->truth_path, &h.truth_fd, diag);
	if (r < 0)
		goto out;
	r = open_channel(sv, diag);
	if (r < 0)
		goto out;
	cf.args = args_room(run->argv);
	if (!cf.args) {
		r = prec_diag_set(diag, -ENOMEM, -1, "out of memory");
		goto out;
	}
	run_guard_begin(&guard);
	parent = getpid();
	pid = fork();
	if (pid < 0) {
		r = prec_diag_set(diag, -errno, -1, "fork: %s", strerror(errno));
		goto out_sig;
	}
	if (pid == 0) {
		cf.sock = sv[1];
		cf.cfg = cfgfd;
		cf.shm = shmfd;
		child_exec(run, qemu, popt, interp, path, run->argv, &cf);
	}
	fwd_pid = pid;
	close(sv[1]);
	sv[1] = -1;
	close(cfgfd);
	cfgfd = -1;

	r = read_messages(run, sv[0], buf, pid, &status, &exited, &h);
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
	if (r == 0)
		r = reap_adopted_last(pid, &h);
	if (r == 0)
		r = collect_slots(run, shmfd, shm, pid, status, &h);
	if (wstatus)
		*wstatus = status;
	if (run->insns)
		*run->insns = h.insns;
	if (r == 0)
		r = plugin_outcome(run, qemu, &h, status, diag);
out_sig:
	run_guard_end(&guard);
out:
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	if (cfgfd >= 0)
		close(cfgfd);
	if (shmfd >= 0)
		close(shmfd);
	if (shm && run->ops && run->ops->trig_off)
		run->ops->trig_off(run->ops->ctx, NULL);
	prec_memfd_unmap(shm, shm_size);
	free(cf.args);
	heard_free(&h);
	prec_buf_free(&lines);
	free(popt);
	free(buf);
	return r;
}
