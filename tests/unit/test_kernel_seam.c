// SPDX-License-Identifier: MIT
/*
 * The recorder reaches the kernel only through record/kernel.h: a whole
 * prec_record() run over a fake kernel that logs every call and answers
 * with the errors a test asks for. The log shows the order of the calls
 * (open leader, members, the tracking event, mmap of the owner, SET_OUTPUT
 * of the rest, enable, disable, unmap, close); refusals come back as the
 * recorder's explained errors; an AUX area the fake fills with a TRUNCATED
 * record is drained and its tracer re-enabled.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"
#include "record/kernel.h"
#include "record/record.h"
#include "spec/evspec.h"
#include "tracefile/tfile.h"

/* Every recording's first open/close is the PERF_FORMAT_LOST probe (fd 1000). */
#define FAKE_FD0 1000
#define NLOG 64

struct fake_map {
	int fd;
	off_t off;
	size_t len;
	void *p;
};

struct fake {
	char log[NLOG][80];
	int nlog;
	int next_fd;
	int opens, mmaps;
	int fail_open_at, open_err;         /* the Nth open (1-based) fails */
	int fail_mmap_at, mmap_err;         /* the Nth mmap fails */
	unsigned long fail_ioctl;           /* this request fails ... */
	int ioctl_err;                      /* ... with this */
	bool overrun;                       /* first poll: 256 AUX bytes, TRUNCATED */
	uint64_t lost_each;                 /* read(): each event's PERF_FORMAT_LOST count */
	int lost_fmt_opens;                 /* opens with PERF_FORMAT_LOST */
	int polls;
	struct fake_map maps[8];
	int nmaps;
	const char *kallsyms;               /* its /proc/kallsyms, or NULL: none */
	bool kallsyms_late;                 /* none until something was enabled (a model's) */
	int proc_opens;
	int proc_open_at;                   /* 1 + the log lines before the first proc_open */
};

static void logf_(struct fake *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct fake *f, const char *fmt, ...)
{
	va_list ap;

	if (f->nlog >= NLOG)
		return;
	va_start(ap, fmt);
	vsnprintf(f->log[f->nlog++], sizeof(f->log[0]), fmt, ap);
	va_end(ap);
}

static bool fake_fd(int fd)
{
	return fd >= FAKE_FD0 && fd < FAKE_FD0 + 256;
}

static int f_open(void *ctx, struct prec_attr *a, pid_t pid, int cpu, int group, unsigned long fl)
{
	struct fake *f = ctx;

	(void)pid;
	(void)fl;
	f->lost_fmt_opens += !!(a->read_format & PERF_FORMAT_LOST);
	if (++f->opens == f->fail_open_at) {
		logf_(f, "open %u:%llu cpu %d group %d = %d", a->type,
		      (unsigned long long)a->config, cpu, group, f->open_err);
		return f->open_err;
	}
	logf_(f, "open %u:%llu cpu %d group %d = %d", a->type, (unsigned long long)a->config, cpu,
	      group, FAKE_FD0 + f->next_fd);
	return FAKE_FD0 + f->next_fd++;
}

static int f_ioctl(void *ctx, int fd, unsigned long req, uintptr_t arg)
{
	struct fake *f = ctx;

	if (!fake_fd(fd))
		return -EBADF;
	switch (req) {
	case PERF_EVENT_IOC_ENABLE:
		logf_(f, "enable %d", fd);
		break;
	case PERF_EVENT_IOC_DISABLE:
		logf_(f, "disable %d", fd);
		break;
	case PERF_EVENT_IOC_SET_OUTPUT:
		logf_(f, "set_output %d %d", fd, (int)(intptr_t)arg);
		break;
	case PERF_EVENT_IOC_ID:
		*(uint64_t *)arg = (uint64_t)fd * 10;
		break; /* not logged: the recorder asks for every fd */
	case PERF_EVENT_IOC_SET_FILTER:
		logf_(f, "set_filter %d %s", fd, (const char *)arg);
		break;
	default:
		logf_(f, "ioctl %d 0x%lx", fd, req);
		return -ENOTTY;
	}
	return req == f->fail_ioctl ? f->ioctl_err : 0;
}

static struct fake_map *map_of(struct fake *f, int fd, bool aux)
{
	int i;

	for (i = 0; i < f->nmaps; i++)
		if (f->maps[i].fd == fd && (f->maps[i].off != 0) == aux)
			return &f->maps[i];
	return NULL;
}

static int f_mmap(void *ctx, int fd, size_t len, off_t off, int prot, void **addr)
{
	struct fake *f = ctx;
	long page = sysconf(_SC_PAGESIZE);
	struct fake_map *m;
	void *p;

	(void)prot;
	logf_(f, "mmap %d +%s", fd, off ? "aux" : "0");
	if (++f->mmaps == f->fail_mmap_at)
		return f->mmap_err;
	if (off) {
		/* The AUX area is where the control page says, after the data ring. */
		struct fake_map *d = map_of(f, fd, false);
		struct perf_event_mmap_page *pg = d ? d->p : NULL;

		if (!pg || pg->aux_offset != (uint64_t)off || pg->aux_size != len)
			return -EINVAL;
	}
	if (f->nmaps == 8 || posix_memalign(&p, (size_t)page, len))
		return -ENOMEM;
	memset(p, 0, len);
	if (!off) {
		struct perf_event_mmap_page *pg = p;

		pg->data_offset = (uint64_t)page;
		pg->data_size = len - (size_t)page;
	}
	m = &f->maps[f->nmaps++];
	*m = (struct fake_map){ fd, off, len, p };
	*addr = p;
	return 0;
}

static int f_munmap(void *ctx, void *addr, size_t len)
{
	struct fake *f = ctx;
	int i;

	for (i = 0; i < f->nmaps; i++)
		if (f->maps[i].p == addr && f->maps[i].len == len) {
			logf_(f, "munmap %d +%s", f->maps[i].fd, f->maps[i].off ? "aux" : "0");
			free(addr);
			f->maps[i].p = NULL;
			return 0;
		}
	return -EINVAL;
}

/* What an AUX PMU does when its area fills: the bytes, then PERF_RECORD_AUX flagged TRUNCATED. */
static void produce_overrun(struct fake *f)
{
	int i;

	for (i = 0; i < f->nmaps; i++) {
		struct fake_map *aux = &f->maps[i], *d;
		struct perf_event_mmap_page *pg;
		uint64_t rec[4];

		if (!aux->off || !aux->p || !(d = map_of(f, aux->fd, false)))
			continue;
		pg = d->p;
		memset(aux->p, 0xaa, 256);
		__atomic_store_n(&pg->aux_head, 256, __ATOMIC_RELEASE);
		rec[0] = PERF_RECORD_AUX | (uint64_t)sizeof(rec) << 48;
		rec[1] = 0;   /* aux_offset */
		rec[2] = 256; /* aux_size */
		rec[3] = PERF_AUX_FLAG_TRUNCATED;
		memcpy((uint8_t *)pg + pg->data_offset, rec, sizeof(rec));
		__atomic_store_n(&pg->data_head, sizeof(rec), __ATOMIC_RELEASE);
		logf_(f, "overrun %d", aux->fd);
	}
}

static int f_poll(void *ctx, struct pollfd *fds, size_t n, int timeout)
{
	struct fake *f = ctx;
	int saved[16], r;
	size_t i;

	if (++f->polls == 1 && f->overrun)
		produce_overrun(f);
	if (n > 16)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		saved[i] = fds[i].fd;
		if (fake_fd(fds[i].fd))
			fds[i].fd = -1; /* poll(2) skips it and clears revents */
	}
	r = poll(fds, (nfds_t)n, timeout);
	for (i = 0; i < n; i++)
		fds[i].fd = saved[i];
	return r < 0 ? -errno : r;
}

/* read() of an event opened with read_format PERF_FORMAT_LOST alone. */
static ssize_t f_read(void *ctx, int fd, void *buf, size_t size)
{
	struct fake *f = ctx;
	uint64_t v[2] = { 0, f->lost_each };

	if (!fake_fd(fd))
		return -EBADF;
	if (!f->lost_each || size < sizeof(v))
		return -EINVAL;
	memcpy(buf, v, sizeof(v));
	return (ssize_t)sizeof(v);
}

static int f_close(void *ctx, int fd)
{
	logf_(ctx, "close %d", fd);
	return fake_fd(fd) ? 0 : -EBADF;
}

static const char *joined(const struct fake *f);

/* Its kallsyms, if it has one; no modules, no kcore. */
static int f_proc_open(void *ctx, const char *name)
{
	struct fake *f = ctx;
	int fd;

	f->proc_opens++;
	if (!f->proc_open_at)
		f->proc_open_at = f->nlog + 1;
	if (strcmp(name, "kallsyms") || !f->kallsyms ||
	    (f->kallsyms_late && !strstr(joined(f), "enable ")))
		return -ENOENT;
	fd = memfd_create(name, MFD_CLOEXEC);
	if (fd >= 0 && write(fd, f->kallsyms, strlen(f->kallsyms)) != (ssize_t)strlen(f->kallsyms))
		return -EIO;
	if (fd >= 0)
		lseek(fd, 0, SEEK_SET);
	return fd < 0 ? -errno : fd;
}

static struct prec_kernel fake_kernel(struct fake *f)
{
	return (struct prec_kernel){ "fake", f, f_open, f_ioctl, f_mmap, f_munmap, f_poll,
				     f_read, f_close, NULL, 0, f_proc_open };
}

/* The log as one string, lines joined with "; ". */
static const char *joined(const struct fake *f)
{
	static char s[NLOG * 82];
	int i;

	s[0] = '\0';
	for (i = 0; i < f->nlog; i++) {
		strcat(s, f->log[i]);
		if (i + 1 < f->nlog)
			strcat(s, "; ");
	}
	return s;
}

struct run {
	struct prec_evlist *el;
	struct prec_record_opts o;
	struct prec_record_result res;
	struct prec_diag d;
	struct prec_kernel k;
	pid_t tid;
	char out[512];
	int stop[2];
};

/*
 * Sets up a per-thread recording of this thread (-t, so no workload is
 * forked) that stops at its first poll: the stop pipe is already written.
 */
static bool setup(struct run *r, struct fake *f, const char *spec)
{
	memset(r, 0, sizeof(*r));
	if (prec_evspec_parse(spec, NULL, &r->el, &r->d)) {
		t_check(false, __FILE__, __LINE__, "parse %s: %s", spec, r->d.msg);
		return false;
	}
	f->next_fd = 0;
	r->k = fake_kernel(f);
	r->tid = (pid_t)syscall(SYS_gettid);
	snprintf(r->out, sizeof(r->out), "%s/seam.ptrec", t_tmpdir());
	if (pipe(r->stop) || write(r->stop[1], "x", 1) != 1)
		return false;
	r->o.el = r->el;
	r->o.output = r->out;
	r->o.tids = &r->tid;
	r->o.ntids = 1;
	r->o.per_thread = true;
	r->o.data_bytes = 4 * (uint64_t)sysconf(_SC_PAGESIZE);
	r->o.aux_bytes = 16 * (uint64_t)sysconf(_SC_PAGESIZE);
	r->o.no_embed = true;
	r->o.stop_fd = r->stop[0];
	r->o.kernel = &r->k;
	return true;
}

static void teardown(struct run *r)
{
	close(r->stop[0]);
	close(r->stop[1]);
	prec_evlist_free(r->el);
}

static void call_order(void)
{
	struct fake f = { 0 };
	struct run r;
	char want[1024];

	if (!setup(&r, &f, "{cpu-clock,task-clock}"))
		return;
	T_EQ_INT(prec_record(&r.o, &r.res, &r.d), 0);
	/*
	 * software 1: cpu-clock 0, task-clock 1; the tracking event is dummy (9).
	 * First a dummy event asks whether the kernel takes PERF_FORMAT_LOST.
	 */
	snprintf(want, sizeof(want),
		 "open 1:9 cpu -1 group -1 = 1000; close 1000; "
		 "open 1:0 cpu -1 group -1 = 1001; open 1:1 cpu -1 group 1001 = 1002; "
		 "open 1:9 cpu -1 group -1 = 1003; mmap 1003 +0; "
		 "set_output 1001 1003; set_output 1002 1003; "
		 "enable 1001; enable 1003; "
		 "disable 1001; disable 1002; disable 1003; munmap 1003 +0; "
		 "close 1001; close 1002; close 1003");
	T_EQ_STR(joined(&f), want);
	T_OK(f.polls >= 1);
	teardown(&r);
}

/*
 * Records lost after the last LOST record (nothing fitted after them) are
 * counted from every event's PERF_FORMAT_LOST count after the last drain.
 */
static void lost_at_the_end(void)
{
	struct fake f = { .lost_each = 3 };
	struct run r;

	if (!setup(&r, &f, "{cpu-clock,task-clock}"))
		return;
	T_EQ_INT(prec_record(&r.o, &r.res, &r.d), 0);
	T_EQ_INT(f.lost_fmt_opens, 4); /* the probe, both events, the tracking event */
	T_EQ_U64(r.res.lost_unwritten, 9);
	T_EQ_U64(r.res.counts.lost, 9);
	teardown(&r);
}

static void refused_open(void)
{
	struct fake f = { .fail_open_at = 3, .open_err = -EACCES }; /* after the probe */
	struct run r;

	if (!setup(&r, &f, "{cpu-clock,task-clock}"))
		return;
	T_EQ_INT(prec_record(&r.o, &r.res, &r.d), -EACCES);
	T_CONTAINS(r.d.msg, "task-clock");
	T_CONTAINS(r.d.hint, "perf_event_paranoid");
	/* The member's refusal stops the opening; what was opened is closed, nothing mapped. */
	T_EQ_STR(joined(&f), "open 1:9 cpu -1 group -1 = 1000; close 1000; "
			     "open 1:0 cpu -1 group -1 = 1001; "
			     "open 1:1 cpu -1 group 1001 = -13; close 1001");
	T_OK(access(r.out, F_OK) != 0);
	teardown(&r);
}

static void refused_mmap(void)
{
	struct fake f = { .fail_mmap_at = 1, .mmap_err = -EPERM };
	struct run r;
	char want[64];

	if (!setup(&r, &f, "cpu-clock"))
		return;
	T_EQ_INT(prec_record(&r.o, &r.res, &r.d), -EPERM);
	T_CONTAINS(r.d.msg, "over the locked-memory limit");
	snprintf(want, sizeof(want), "%llu KiB data ring", (unsigned long long)r.o.data_bytes >> 10);
	T_CONTAINS(r.d.msg, want);
	T_OK(!strstr(joined(&f), "set_output"));
	T_OK(!strstr(joined(&f), "enable"));
	teardown(&r);
}

static void refused_set_output(void)
{
	struct fake f = { .fail_ioctl = PERF_EVENT_IOC_SET_OUTPUT, .ioctl_err = -EINVAL };
	struct run r;

	if (!setup(&r, &f, "cpu-clock"))
		return;
	T_EQ_INT(prec_record(&r.o, &r.res, &r.d), -EINVAL);
	T_CONTAINS(r.d.msg, "cannot redirect event output");
	T_OK(!strstr(joined(&f), "enable"));
	teardown(&r);
}

static void refused_enable(void)
{
	struct fake f = { .fail_ioctl = PERF_EVENT_IOC_ENABLE, .ioctl_err = -EBUSY };
	struct run r;

	if (!setup(&r, &f, "cpu-clock"))
		return;
	T_EQ_INT(prec_record(&r.o, &r.res, &r.d), -EBUSY);
	T_CONTAINS(r.d.msg, "cannot enable the events");
	T_OK(f.polls == 0);
	teardown(&r);
}

static void aux_overrun_reenabled(void)
{
	struct fake f = { .overrun = true };
	struct run r;
	const char *log;

	t_fixture_sysroot();
	if (!setup(&r, &f, "intel_pt//u"))
		return;
	T_EQ_INT(prec_record(&r.o, &r.res, &r.d), 0);
	log = joined(&f);
	/*
	 * The tracer owns the ring: data first, then the AUX area; the tracking
	 * event follows it. (Fd 1000 was the PERF_FORMAT_LOST probe.)
	 */
	T_CONTAINS(log, "= 1001; open 1:9 cpu -1 group -1 = 1002; mmap 1001 +0; mmap 1001 +aux; "
			"set_output 1002 1001; enable 1001; enable 1002; overrun 1001; enable 1001; "
			"disable 1001; disable 1002; munmap 1001 +0; munmap 1001 +aux");
	T_EQ_U64(r.res.aux_bytes, 256);
	T_EQ_U64(r.res.counts.truncated, 1);
	T_EQ_U64(r.res.aux_overruns, 1);
	T_EQ_U64(r.res.aux_reenables, 1);
	T_EQ_INT(r.res.nstreams, 1);
	teardown(&r);
}

/* --filter: SET_FILTER on the tracer only, once everything is open and mapped, before the enables. */
static void address_filter(void)
{
	struct fake f = { 0 };
	struct run r;

	t_fixture_sysroot();
	if (!setup(&r, &f, "intel_pt//u"))
		return;
	r.o.filter = "filter 0x1139/0x40@/bin/true";
	T_EQ_INT(prec_record(&r.o, &r.res, &r.d), 0);
	/* Fd 1000 was the PERF_FORMAT_LOST probe; 1001 is the tracer, 1002 the tracking event. */
	T_CONTAINS(joined(&f), "set_output 1002 1001; set_filter 1001 filter 0x1139/0x40@/bin/true; "
			       "enable 1001; enable 1002");
	T_OK(!strstr(joined(&f), "set_filter 1002"));
	teardown(&r);
}

/*
 * A refused filter stops the recording before it starts: an existing output
 * file is left as it was, and no other file is left behind.
 */
static void refused_filter_keeps_file(void)
{
	struct fake f = { .fail_ioctl = PERF_EVENT_IOC_SET_FILTER, .ioctl_err = -EOPNOTSUPP };
	struct run r;
	char dir[600], *slash;
	struct dirent *de;
	DIR *dp;
	int fd, n = 0;

	t_fixture_sysroot();
	if (!setup(&r, &f, "intel_pt//u"))
		return;
	fd = open(r.out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	T_OK(fd >= 0 && write(fd, "previous", 8) == 8);
	close(fd);
	r.o.filter = "filter 0x1139/0x40@/bin/true";
	T_EQ_INT(prec_record(&r.o, &r.res, &r.d), -EOPNOTSUPP);
	T_CONTAINS(r.d.msg, "refused the address filters");
	T_OK(!strstr(joined(&f), "enable"));
	{
		struct stat sb;

		T_OK(stat(r.out, &sb) == 0 && sb.st_size == 8);
	}
	snprintf(dir, sizeof(dir), "%s", r.out);
	slash = strrchr(dir, '/');
	*slash = '\0';
	dp = opendir(dir);
	while (dp && (de = readdir(dp)))
		if (strstr(de->d_name, "seam.ptrec"))
			n++;
	if (dp)
		closedir(dp);
	T_EQ_INT(n, 1); /* no temporary file, no .old */
	unlink(r.out);
	teardown(&r);
}

/*
 * A tracer that traces the kernel gets a CPU-wide dummy event for ksymbol and
 * text_poke on every online CPU (its own ring, enabled with the recording,
 * since exec enables no CPU's events); one that traces user space only does not.
 */
static void kernel_sideband_cpu_wide(void)
{
	struct fake f = { 0 };
	struct run r;
	const char *log;

	t_fixture_sysroot();
	if (!setup(&r, &f, "intel_pt//k"))
		return;
	T_EQ_INT(prec_record(&r.o, &r.res, &r.d), 0);
	log = joined(&f);
	/* After the PERF_FORMAT_LOST probe (1000), the tracer (1001), the tracking event (1002). */
	T_CONTAINS(log, "open 1:9 cpu 0 group -1 = 1003; mmap 1003 +0; ");
	T_CONTAINS(log, "enable 1003");
	T_OK(!strstr(log, "set_output 1003"));
	teardown(&r);

	memset(&f, 0, sizeof(f));
	if (!setup(&r, &f, "intel_pt//u"))
		return;
	T_EQ_INT(prec_record(&r.o, &r.res, &r.d), 0);
	T_OK(!strstr(joined(&f), "cpu 0"));
	teardown(&r);
}

/* The KSYMS chunk of the file @path, or "" (malloc'd). */
static char *file_ksyms(const char *path)
{
	struct prec_tfile_reader *rd;
	struct prec_tfile_chunk c;
	char *t = calloc(1, 1);

	if (!t || prec_tfile_reader_new(path, NULL, &rd, NULL))
		return t;
	while (prec_tfile_next(rd, &c) > 0)
		if (c.type == PREC_TFILE_KSYMS) {
			free(t);
			t = strndup(c.data, c.len);
			break;
		}
	prec_tfile_reader_free(rd);
	return t;
}

/*
 * The kernel's own files come through the seam (proc_open), never from this
 * host's /proc: the kernel's kallsyms in KSYMS (also when its first symbols
 * are at zero, as Linux 6.1's per-CPU ones are); all addresses zero is
 * kptr_restrict's, not written; --kcore without a kcore is noted.
 */
static void kernel_files_through_seam(void)
{
	static const char *const ks[] = {
		"0000000000000000 A fixed_percpu_data\nffffffff81000000 T _stext\n"
		"ffffffff81001000 T _etext\n",
		"0000000000000000 T _stext\n0000000000000000 T _etext\n",
	};
	struct fake f;
	struct run r;
	char *got;

	t_fixture_sysroot();
	for (int i = 0; i < 2; i++) {
		memset(&f, 0, sizeof(f));
		f.kallsyms = ks[i];
		if (!setup(&r, &f, "intel_pt//k"))
			return;
		r.o.kcore = true;
		T_EQ_INT(prec_record(&r.o, &r.res, &r.d), 0);
		T_EQ_INT(f.proc_opens, 3); /* kallsyms, modules, kcore */
		got = file_ksyms(r.out);
		T_EQ_STR(got, i ? "" : ks[0]);
		T_EQ_INT(r.res.kallsyms_hidden, i == 1);
		T_EQ_INT(r.res.kcore_missing, 1);
		free(got);
		teardown(&r);
	}
}

/* The index of the first chunk of @type in the file @path, or -1. */
static int first_chunk(const char *path, unsigned type)
{
	struct prec_tfile_reader *rd;
	struct prec_tfile_chunk c;
	int i = 0, at = -1;

	if (prec_tfile_reader_new(path, NULL, &rd, NULL))
		return -1;
	for (; at < 0 && prec_tfile_next(rd, &c) > 0; i++)
		if (c.type == type)
			at = i;
	prec_tfile_reader_free(rd);
	return at;
}

/*
 * The kernel's files are asked for once the events are open and before
 * any is enabled (as perf's __cmd_record() copies kcore after
 * record__open()), and KSYMS comes before the first AUX chunk: a file cut
 * short holds them. A kernel without kallsyms then (a model's guest has
 * one only after its run) is asked again at the end, and its KSYMS is
 * written there.
 */
static void kernel_files_before_trace(void)
{
	static const char ks[] = "ffffffff81000000 T _stext\nffffffff81001000 T _etext\n";
	struct fake f = { .kallsyms = ks, .overrun = true };
	struct run r;
	char *got;
	int i;

	t_fixture_sysroot();
	if (!setup(&r, &f, "intel_pt//k"))
		return;
	T_EQ_INT(prec_record(&r.o, &r.res, &r.d), 0);
	T_EQ_INT(f.proc_opens, 2); /* kallsyms, modules; once */
	T_OK(f.proc_open_at > 1);
	for (i = 0; i < f.nlog; i++)
		if (!strncmp(f.log[i], "enable ", 7))
			break;
	T_OK(i < f.nlog && i >= f.proc_open_at - 1);
	T_OK(first_chunk(r.out, PREC_TFILE_AUX) >= 0);
	T_OK(first_chunk(r.out, PREC_TFILE_KSYMS) >= 0);
	T_OK(first_chunk(r.out, PREC_TFILE_KSYMS) < first_chunk(r.out, PREC_TFILE_AUX));
	teardown(&r);

	memset(&f, 0, sizeof(f));
	f.kallsyms = ks;
	f.kallsyms_late = true;
	f.overrun = true;
	if (!setup(&r, &f, "intel_pt//k"))
		return;
	T_EQ_INT(prec_record(&r.o, &r.res, &r.d), 0);
	T_EQ_INT(f.proc_opens, 3); /* kallsyms at the start; kallsyms and modules at the end */
	got = file_ksyms(r.out);
	T_EQ_STR(got, ks);
	T_OK(first_chunk(r.out, PREC_TFILE_KSYMS) > first_chunk(r.out, PREC_TFILE_AUX));
	free(got);
	teardown(&r);
}

/* aux-sample-size: refused before anything is opened (no snapshot mode). */
static void aux_sampling_refused(void)
{
	struct fake f = { 0 };
	struct run r;

	t_fixture_sysroot();
	if (!setup(&r, &f, "{intel_pt//u,cpu-clock/aux-sample-size=64,period=10000/}"))
		return;
	T_EQ_INT(prec_record(&r.o, &r.res, &r.d), -EOPNOTSUPP);
	T_CONTAINS(r.d.msg, "aux-sample-size (AUX area samples) is not recorded by ptrec");
	T_EQ_STR(joined(&f), "");
	teardown(&r);
}

static void refused_aux_mmap(void)
{
	struct fake f = { .fail_mmap_at = 2, .mmap_err = -ENOMEM };
	struct run r;
	char want[64];

	t_fixture_sysroot();
	if (!setup(&r, &f, "intel_pt//u"))
		return;
	T_EQ_INT(prec_record(&r.o, &r.res, &r.d), -ENOMEM);
	snprintf(want, sizeof(want), "could not set up a %llu KiB AUX area",
		 (unsigned long long)r.o.aux_bytes >> 10);
	T_CONTAINS(r.d.msg, want);
	teardown(&r);
}

static const struct t_case cases[] = {
	T(call_order),	 T(lost_at_the_end),	 T(refused_open),	   T(refused_mmap),	T(refused_set_output),
	T(refused_enable), T(aux_overrun_reenabled), T(refused_aux_mmap), T(kernel_sideband_cpu_wide), T(aux_sampling_refused), T(kernel_files_before_trace),
	T(address_filter), T(refused_filter_keeps_file), T(kernel_files_through_seam),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}
