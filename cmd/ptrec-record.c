// SPDX-License-Identifier: MIT
/* ptrec record: options, signals and the end-of-run report around prec_record(). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "spec/evspec.h"
#include "ptrec-cmds.h"
#include "record/record.h"
#include "base/array.h"
#include "base/util.h"

static int stop_pipe[2] = { -1, -1 };
static int snap_pipe[2] = { -1, -1 };
static volatile sig_atomic_t signals_seen;

static void on_signal(int sig)
{
	int saved = errno;

	if (++signals_seen > 1) {
		/* Second signal: leave now; the file is readable to its last whole chunk. */
		static const char msg[] = "ptrec: second signal: exiting at once\n";
		ssize_t unused prec_unused;

		unused = write(2, msg, sizeof(msg) - 1);
		_exit(128 + sig);
	}
	/*
	 * A full pipe already holds a stop request; any other failure leaves the
	 * loop uninformed, so the next signal exits at once.
	 */
	if (write(stop_pipe[1], "s", 1) < 0 && errno != EAGAIN)
		signals_seen++;
	errno = saved;
}

/* SIGUSR2 in snapshot mode: a snapshot, as perf's -S (a full pipe holds requests enough). */
static void on_snapshot(int sig)
{
	int saved = errno;
	ssize_t unused prec_unused;

	(void)sig;
	unused = write(snap_pipe[1], "u", 1);
	errno = saved;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: ptrec record [options] [--] COMMAND [ARGS...]\n"
"       ptrec record [options] -p PID[,PID...] | -t TID[,TID...] | -a | -C LIST\n\n"
"Records a trace of a command, of running processes or threads, or of whole\n"
"CPUs into one self-contained trace file (decode it with ptdump).\n\n"
"  -e, --event SPEC        events to record (repeatable; see ptrec(1), EVENT\n"
"                          SPECIFICATION); default: the tracer, 'pt//'\n"
"      --func NAME[@OBJ]   trace only while function NAME runs (repeatable): found\n"
"                          in COMMAND or the libraries it loads (OBJ: a path or\n"
"                          the start of a library name, e.g. @libc)\n"
"      --syscall LIST      trace the kernel only inside these syscalls (read,write)\n"
"      --syscall-user LIST the same with the tracer on user space\n"
"      --filter FILTERS    the tracer's address filters, as perf's: 'filter\n"
"                          FUNC @ OBJ', 'start ADDR @ OBJ', 'stop ...',\n"
"                          'filter ADDR/SIZE @ OBJ' (comma-separated)\n"
"  -o, --output FILE       trace file (default ptrec.data; created mode 0600);\n"
"                          a previous FILE becomes FILE.old once recording\n"
"                          starts; '-' writes the trace to standard output\n"
"  -p, --pid PID,...       attach to processes (all their threads)\n"
"  -t, --tid TID,...       attach to threads\n"
"  -a, --all-cpus          system-wide on every CPU (or those of -C)\n"
"  -C, --cpu LIST          CPUs to record whole, e.g. 0,2-3 (as -a on those)\n"
"      --per-thread        one ring per thread instead of per CPU (no inherit)\n"
"  -c, --count N           sample every N events: each event whose spec gives\n"
"                          no period= or freq= (not the tracer)\n"
"  -F, --freq N|max        sample N times a second, likewise (default 4000 for\n"
"                          counters; max: the kernel's perf_event_max_sample_rate)\n"
"  -m, --mmap-pages D[,A]  data and AUX ring sizes: pages, or sizes with K/M/G\n"
"                          (rounded up to powers of two; default 512K,4M as root,\n"
"                          256K,128K else)\n"
"  -d, --duration SECS     stop after SECS seconds\n"
"  -S, --snapshot[=SIZE]   flight recorder: trace continuously into the AUX\n"
"                          area in overwrite mode; on SIGUSR2 and at the end,\n"
"                          copy its newest SIZE bytes (K/M/G; default the\n"
"                          whole area) into the file; an event with the term\n"
"                          'snapshot' pauses the tracer when it fires and\n"
"                          takes one (-e 'uprobe:PROG:FN/snapshot/')\n"
"      --snapshot-limit N  end the recording after N snapshots\n"
"      --switch-output[=signal|SIZE|TIME]\n"
"                          a new file on SIGUSR2 (default), after SIZE bytes of\n"
"                          trace and side-band (100M), or every TIME (30s, 5m):\n"
"                          each FILE.YYYYmmddHHMMSSmmm complete on its own\n"
"      --kcore             copy kernel text from /proc/kcore (kernel decoding)\n"
"      --no-embed          record code images by reference (build id) only\n"
"  -z, --compress LEVEL    zstd level 1-19, 0 = off (default 3)\n"
"      --chunk-size SIZE   trace per file chunk, 4K to 16M (default 1M): a file\n"
"                          cut short (SIGKILL, full disk) loses at most one\n"
"                          chunk per stream\n"
"      --emulate           use the software tracer (QEMU user mode) instead of\n"
"                          hardware: user space of COMMAND only (no -p/-t);\n"
"                          see ptrec-emulate(7)\n"
"      --emulate=system    the whole-system software tracer: COMMAND runs in a\n"
"                          Linux guest under qemu-system-x86_64; user and kernel\n"
"                          code (u/k), kernel functions and syscalls as triggers\n"
"      --emulate-truth F   with --emulate: write the executed blocks to F\n"
"      --emulate-cpus N    with --emulate: the emulated machine's CPUs, 1-64\n"
"                          (default 2); threads are given CPUs in turn\n"
"      --emulate-slice N   with --emulate: a thread's time slice on its CPU, in\n"
"                          user instructions (default 2000000)\n"
"      --qemu PATH         with --emulate: the qemu-x86_64 binary to use\n"
"  -n, --dry-run           print the resolved groups and attrs (and the -e spec\n"
"                          that --func and --syscall stand for); open nothing\n"
"      --progress          a line on standard error while the file is finished\n"
"                          (last chunks, code images), terminal or not\n"
"      --no-progress       none (default: one on a terminal when that takes\n"
"                          over a second)\n"
"  -q, --quiet             no end-of-run report (nor progress line)\n"
"  -v, --verbose           more detail\n"
"  -h, --help              this text\n\n"
"Exit status: the command's own exit status; 1 if recording failed, 2 for\n"
"usage errors. The first Ctrl-C (or SIGTERM) stops the command and finishes\n"
"the file; a second one exits at once, leaving the file readable up to its\n"
"last whole chunk. See ptrec-record(1).\n");
}

static int parse_ids(const char *s, pid_t **v, size_t *n)
{
	char *copy = strdup(s), *tok, *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t x;

		if (prec_parse_u64(tok, 10, &x) || x == 0 || x > INT_MAX) {
			free(copy);
			return -EINVAL;
		}
		if (prec_array_reserve(v, *n, 1, sizeof(**v))) {
			free(copy);
			return -ENOMEM;
		}
		(*v)[(*n)++] = (pid_t)x;
	}
	free(copy);
	return *n ? 0 : -EINVAL;
}

/* perf's -m: a page count, or a size with a unit; both a power of two. */
static int parse_ring_size(const char *s, uint64_t *bytes)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t v;
	size_t n = strlen(s);

	if (!n)
		return 0; /* keep the default */
	if (strchr("kKmMgGbB", s[n - 1])) {
		if (cli_parse_size(s, &v))
			return -EINVAL;
		v = (v + (uint64_t)page - 1) / (uint64_t)page * (uint64_t)page;
	} else {
		if (prec_parse_u64(s, 10, &v) || v > (1ull << 40) / (uint64_t)page)
			return -EINVAL;
		v *= (uint64_t)page;
	}
	if (!v || v > (1ull << 40))
		return -ERANGE;
	if (v & (v - 1)) {
		/* As perf's __evlist__parse_mmap_pages(): up to a power of two, with a note. */
		uint64_t up = 1;

		while (up < v)
			up <<= 1;
		cli_warn("-m %s: ring sizes are powers of two; rounding up to %llu KiB (%llu pages)",
			 s, (unsigned long long)(up >> 10), (unsigned long long)(up / (uint64_t)page));
		v = up;
	}
	*bytes = v;
	return 0;
}

static const char *find_plugin(char *buf, size_t size)
{
	const char *env = getenv("PTREC_PLUGIN");
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (env && *env)
		return env;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			if (snprintf(buf, size, "%s/ptrec-emu.so", exe) < (int)size &&
			    !access(buf, R_OK))
				return buf;
			if (snprintf(buf, size, "%s/../lib/ptrec/ptrec-emu.so", exe) < (int)size &&
			    !access(buf, R_OK))
				return buf;
		}
	}
	snprintf(buf, size, "%s/ptrec-emu.so", PTREC_LIBDIR);
	return buf;
}

static void human(char *buf, size_t size, uint64_t v)
{
	if (v >= (1ull << 30))
		snprintf(buf, size, "%.1f GiB", (double)v / (1ull << 30));
	else if (v >= (1ull << 20))
		snprintf(buf, size, "%.1f MiB", (double)v / (1ull << 20));
	else if (v >= (1ull << 10))
		snprintf(buf, size, "%.1f KiB", (double)v / (1ull << 10));
	else
		snprintf(buf, size, "%llu bytes", (unsigned long long)v);
}

/* The recorder's handling of full AUX areas (each overrun, each re-enable). */
static void report_overruns(const struct prec_record_result *r)
{
	if (!r->aux_overruns)
		return;
	fprintf(stderr, "ptrec: warning: the AUX area filled %llu time%s; the kernel stopped the "
			"tracer each time and ptrec re-enabled it after reading (%llu enable%s): the "
			"trace has gaps there\n",
		(unsigned long long)r->aux_overruns, r->aux_overruns == 1 ? "" : "s",
		(unsigned long long)r->aux_reenables, r->aux_reenables == 1 ? "" : "s");
}

static void report(const struct prec_record_opts *o, const struct prec_record_result *r)
{
	char a[32], f[32], s[32], l[32];
	int i;

	human(a, sizeof(a), r->aux_bytes);
	human(f, sizeof(f), r->file_bytes);
	if (!strcmp(o->output, "-"))
		snprintf(f, sizeof(f), "the trace"); /* a pipe has no size to tell */
	human(s, sizeof(s), r->sideband_bytes);
	fprintf(stderr, "[ ptrec record: wrote %s to %s: trace %s in %d stream%s, sideband %s, "
			"%u image%s embedded%s ]\n",
		f, r->files ? r->last_file : strcmp(o->output, "-") ? o->output : "standard output", a, r->nstreams, r->nstreams == 1 ? "" : "s", s, r->embed.embedded,
		r->embed.embedded == 1 ? "" : "s", o->emulate ? " (software tracer)" : "");
	if (r->counts.truncated || r->dropped_bytes) {
		human(l, sizeof(l), r->dropped_bytes);
		fprintf(stderr, "ptrec: warning: AUX data truncated %llu time%s, %s lost: raise -m "
				"(AUX size) or trace less\n",
			(unsigned long long)r->counts.truncated, r->counts.truncated == 1 ? "" : "s", l);
	}
	if (r->counts.partial || r->counts.collision)
		fprintf(stderr, "ptrec: warning: AUX records flagged partial %llu, collision %llu times\n",
			(unsigned long long)r->counts.partial, (unsigned long long)r->counts.collision);
	if (r->counts.lost && r->lost_unwritten)
		fprintf(stderr, "ptrec: warning: %llu sideband record%s lost (%llu at the end, "
				"after the last LOST record): raise -m (data size)\n",
			(unsigned long long)r->counts.lost, r->counts.lost == 1 ? "" : "s",
			(unsigned long long)r->lost_unwritten);
	else if (r->counts.lost)
		fprintf(stderr, "ptrec: warning: %llu sideband record%s lost: raise -m (data size)\n",
			(unsigned long long)r->counts.lost, r->counts.lost == 1 ? "" : "s");
	if (r->embed.missing || r->embed.mismatched)
		fprintf(stderr, "ptrec: warning: %u code image%s not embedded (%s)\n",
			r->embed.missing + r->embed.mismatched,
			r->embed.missing + r->embed.mismatched == 1 ? "" : "s", r->embed.first_problem);
	report_overruns(r);
	if (r->files)
		fprintf(stderr, "ptrec: %u file%s (--switch-output), the last %s\n", r->files,
			r->files == 1 ? "" : "s", r->last_file);
	if (o->snapshot || r->snapshots) {
		human(l, sizeof(l), r->snapshot_bytes);
		fprintf(stderr, "ptrec: %llu snapshot%s, %s of trace\n",
			(unsigned long long)r->snapshots, r->snapshots == 1 ? "" : "s", l);
	}
	for (i = 0; i < r->nnotes; i++)
		fprintf(stderr, "ptrec: %s\n", r->notes[i]);
}

/* What the command line asked for; the arrays are the caller's to free. */
struct rec_cli {
	struct prec_record_opts o;
	const char **specs;
	size_t nspecs;
	pid_t *pids, *tids;
	int *cpus;
	uint64_t period, freq;           /* -c, -F */
	bool dry, quiet;
	struct rec_windows win;          /* --func, --syscall */
	char *win_spec;                  /* the spec they stand for */
	const char **filters;            /* --filter */
	size_t nfilters;
	char *filter;                    /* the kernel's filter string */
};

/* A size with an optional K or M, 4 KiB to 16 MiB. Returns 0 or -1. */
static int parse_chunk_size(const char *arg, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg)
		return -1;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end || v < 4096 || v > (16ull << 20))
		return -1;
	*out = (size_t)v;
	return 0;
}

enum { O_PER_THREAD = 256, O_KCORE, O_NO_EMBED, O_EMULATE, O_TRUTH, O_QEMU, O_CHUNK, O_FUNC, O_SYSCALL,
       O_SYSCALL_USER, O_FILTER, O_SNAP_LIMIT, O_SWITCH, O_EMULATE_CPUS,
       O_EMULATE_SLICE, O_PROGRESS, O_NO_PROGRESS };

/* -S SIZE: bytes, or with K, M or G; at least 1. Returns 0 or -1. */
static int parse_snapshot_size(const char *arg, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno || end == arg || arg[0] == '-')
		return -1;
	if (*end == 'K' || *end == 'k')
		shift = 10, end++;
	else if (*end == 'M' || *end == 'm')
		shift = 20, end++;
	else if (*end == 'G' || *end == 'g')
		shift = 30, end++;
	if (*end || !v || v > (1ull << 40) >> shift)
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/*
 * --switch-output[=signal|SIZE|TIME], as perf's: SIZE with B, K, M or G,
 * TIME with s, m, h or d. Returns 0 or -1.
 */
static int parse_switch_output(const char *arg, struct prec_record_opts *o)
{
	static const struct { char c; double mul; } times[] = {
		{ 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 } };
	size_t n = arg ? strlen(arg) : 0, i;
	uint64_t v;

	if (!arg || !strcmp(arg, "signal")) {
		o->switch_signal = true;
		return 0;
	}
	for (i = 0; n > 1 && i < sizeof(times) / sizeof(times[0]); i++) {
		char num[32];

		if (arg[n - 1] != times[i].c || n > sizeof(num))
			continue;
		memcpy(num, arg, n - 1);
		num[n - 1] = '\0';
		if (prec_parse_u64(num, 10, &v) || !v || v > 1000000)
			return -1;
		o->switch_secs = (double)v * times[i].mul;
		return 0;
	}
	if (n > 1 && (arg[n - 1] == 'B' || arg[n - 1] == 'b')) {
		char num[32];

		if (n > sizeof(num))
			return -1;
		memcpy(num, arg, n - 1);
		num[n - 1] = '\0';
		return parse_snapshot_size(num, &o->switch_size);
	}
	return parse_snapshot_size(arg, &o->switch_size);
}

static const struct option rec_opts[] = {
	{ "event", required_argument, NULL, 'e' },
	{ "output", required_argument, NULL, 'o' },
	{ "pid", required_argument, NULL, 'p' },
	{ "tid", required_argument, NULL, 't' },
	{ "all-cpus", no_argument, NULL, 'a' },
	{ "cpu", required_argument, NULL, 'C' },
	{ "per-thread", no_argument, NULL, 256 },
	{ "count", required_argument, NULL, 'c' },
	{ "freq", required_argument, NULL, 'F' },
	{ "mmap-pages", required_argument, NULL, 'm' },
	{ "duration", required_argument, NULL, 'd' },
	{ "snapshot", optional_argument, NULL, 'S' },
	{ "snapshot-limit", required_argument, NULL, O_SNAP_LIMIT },
	{ "switch-output", optional_argument, NULL, O_SWITCH },
	{ "kcore", no_argument, NULL, 257 },
	{ "no-embed", no_argument, NULL, 258 },
	{ "compress", required_argument, NULL, 'z' },
	{ "emulate", optional_argument, NULL, 259 },
	{ "emulate-truth", required_argument, NULL, 260 },
	{ "qemu", required_argument, NULL, 261 },
	{ "emulate-cpus", required_argument, NULL, O_EMULATE_CPUS },
	{ "emulate-slice", required_argument, NULL, O_EMULATE_SLICE },
	{ "chunk-size", required_argument, NULL, O_CHUNK },
	{ "filter", required_argument, NULL, O_FILTER },
	{ "func", required_argument, NULL, O_FUNC },
	{ "syscall", required_argument, NULL, O_SYSCALL },
	{ "syscall-user", required_argument, NULL, O_SYSCALL_USER },
	{ "dry-run", no_argument, NULL, 'n' },
	{ "progress", no_argument, NULL, O_PROGRESS },
	{ "no-progress", no_argument, NULL, O_NO_PROGRESS },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* --func, --syscall, --syscall-user: collected, expanded once the command is known. */
static int add_window(struct rec_cli *c, int opt, const char *arg)
{
	struct rec_windows *w = &c->win;

	if (opt == O_FUNC) {
		if (PREC_ARRAY_RESERVE(w->funcs, w->nfuncs, 1))
			return -ENOMEM;
		w->funcs[w->nfuncs++] = arg;
		return 0;
	}
	if (PREC_ARRAY_RESERVE(w->syscalls, w->nsyscalls, 1))
		return -ENOMEM;
	w->syscalls[w->nsyscalls++] = arg;
	if (opt == O_SYSCALL_USER)
		w->user = true;
	return 0;
}

/* -m DATA[,AUX] */
static int parse_mmap_pages(struct rec_cli *c, const char *arg)
{
	char *copy = strdup(arg), *comma;
	int bad;

	if (!copy) {
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	comma = strchr(copy, ',');
	if (comma)
		*comma++ = '\0';
	bad = parse_ring_size(copy, &c->o.data_bytes) ||
	      (comma && parse_ring_size(comma, &c->o.aux_bytes));
	free(copy);
	if (bad)
		return cli_usage_error("record", "-m takes DATA[,AUX] as page counts or sizes "
				       "(K/M/G), e.g. -m 128,4M; got '%s'", arg);
	return -1;
}

/* The kernel's perf_event_max_sample_rate, or 0 if unknown. */
static uint64_t max_sample_rate(void)
{
	char buf[32];
	uint64_t v;
	ssize_t n;
	int fd = open("/proc/sys/kernel/perf_event_max_sample_rate", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return prec_parse_u64(buf, 10, &v) ? 0 : v;
}

/*
 * -F N|max. Above the kernel's limit (which perf_event_open() refuses with
 * EINVAL) it is lowered to the limit with a warning, as perf's
 * record_opts__config_freq() (tools/perf/util/record.c) does.
 */
static int parse_freq(struct rec_cli *c, const char *arg)
{
	uint64_t v, max = max_sample_rate();

	if (!strcmp(arg, "max")) {
		if (!max)
			return cli_usage_error("record", "-F max: cannot read "
					       "/proc/sys/kernel/perf_event_max_sample_rate");
		c->freq = max;
		return -1;
	}
	if (prec_parse_u64(arg, 0, &v) || !v || v > UINT32_MAX)
		return cli_usage_error("record", "-F takes a positive frequency in Hz or 'max'; "
				       "got '%s'", arg);
	if (max && v > max) {
		cli_warn("-F %llu is above the kernel's limit of %llu Hz "
			 "(/proc/sys/kernel/perf_event_max_sample_rate): sampling at %llu Hz",
			 (unsigned long long)v, (unsigned long long)max, (unsigned long long)max);
		v = max;
	}
	c->freq = v;
	return -1;
}

/* Options with a value to check. Returns -1 to go on, else the exit status. */
static int parse_valued(struct rec_cli *c, int opt, const char *arg)
{
	struct prec_record_opts *o = &c->o;
	uint64_t v;
	char *end;

	switch (opt) {
	case 'p':
		if (parse_ids(arg, &c->pids, &o->npids))
			return cli_usage_error("record", "-p takes process ids: -p 1234[,5678]; got '%s'", arg);
		return -1;
	case 't':
		if (parse_ids(arg, &c->tids, &o->ntids))
			return cli_usage_error("record", "-t takes thread ids: -t 1234[,5678]; got '%s'", arg);
		return -1;
	case 'C':
		free(c->cpus);
		if (prec_parse_cpu_list(arg, &c->cpus, &o->ncpus))
			return cli_usage_error("record", "-C takes a CPU list like 0,2-3; got '%s'", arg);
		return -1;
	case 'm':
		return parse_mmap_pages(c, arg);
	case 'c':
		if (prec_parse_u64(arg, 0, &v) || !v || v >> 63)
			return cli_usage_error("record", "-c takes a positive count of events; got '%s'", arg);
		c->period = v;
		return -1;
	case 'F':
		return parse_freq(c, arg);
	case 'd':
		errno = 0;
		o->duration = strtod(arg, &end);
		if (errno || *end || !(o->duration > 0) || o->duration > 1e7)
			return cli_usage_error("record", "-d takes a positive number of seconds; got '%s'", arg);
		return -1;
	case 'S':
		o->snapshot = true;
		if (arg && parse_snapshot_size(arg, &o->snapshot_size))
			return cli_usage_error("record", "-S takes a snapshot size in bytes (or with K, "
					       "M or G), attached: -S64K or --snapshot=64K; got '%s'", arg);
		return -1;
	case O_SWITCH:
		if (parse_switch_output(arg, o))
			return cli_usage_error("record", "--switch-output takes signal, a size (100M) "
					       "or a time (30s, 5m, 1h, 1d): --switch-output=30s; got '%s'",
					       arg);
		return -1;
	case O_SNAP_LIMIT:
		if (prec_parse_u64(arg, 10, &v) || !v)
			return cli_usage_error("record", "--snapshot-limit takes a positive number of "
					       "snapshots; got '%s'", arg);
		o->snapshot_limit = v;
		return -1;
	case 'z':
		if (prec_parse_u64(arg, 10, &v) || v > 19)
			return cli_usage_error("record", "--compress takes a level from 0 (off) to 19; got '%s'", arg);
		o->compress = (int)v;
		return -1;
	}
	return cli_usage_error("record", "bad option");
}

/* The getopt loop. Returns -1 to go on, else the exit status. */
static int parse_options(struct rec_cli *c, int argc, char **argv)
{
	struct prec_record_opts *o = &c->o;
	int opt, ret;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "+e:o:p:t:aC:c:F:m:d:S::z:nqvh", rec_opts, NULL)) != -1) {
		switch (opt) {
		case 'e':
			if (PREC_ARRAY_RESERVE(c->specs, c->nspecs, 1)) {
				cli_err("out of memory");
				return EXIT_FAIL;
			}
			c->specs[c->nspecs++] = optarg;
			break;
		case 'o':
			/* "-o --" would write a file named "--": an option taken as the name */
			if (optarg[0] == '-' && optarg[1])
				return cli_usage_error("record", "-o takes a file name; '%s' looks like "
						       "an option (write ./%s for a file of that name)",
						       optarg, optarg);
			o->output = optarg;
			break;
		case 'a': o->system_wide = true; break;
		case O_PER_THREAD: o->per_thread = true; break;
		case O_KCORE: o->kcore = true; break;
		case O_NO_EMBED: o->no_embed = true; break;
		case O_EMULATE:
			o->emulate = true;
			if (optarg && strcmp(optarg, "system"))
				return cli_usage_error("record", "--emulate=%s: the software tracers are "
						       "--emulate (user mode) and --emulate=system",
						       optarg);
			o->emulate_system = optarg != NULL;
			break;
		case O_TRUTH: o->truth = optarg; break;
		case O_QEMU: o->qemu = optarg; break;
		case O_EMULATE_CPUS: {
			uint64_t v;

			if (prec_parse_u64(optarg, 10, &v) || !v || v > PREC_EMULATE_CPUS_MAX)
				return cli_usage_error("record", "--emulate-cpus takes a number of CPUs "
						       "from 1 to %d; got '%s'",
						       PREC_EMULATE_CPUS_MAX, optarg);
			o->emulate_cpus = (int)v;
			break;
		}
		case O_EMULATE_SLICE:
			if (prec_parse_u64(optarg, 10, &o->emulate_slice) ||
			    o->emulate_slice < PREC_EMULATE_SLICE_MIN ||
			    o->emulate_slice > PREC_EMULATE_SLICE_MAX)
				return cli_usage_error("record", "--emulate-slice takes a number of "
						       "instructions from %llu to %llu; got '%s'",
						       PREC_EMULATE_SLICE_MIN, PREC_EMULATE_SLICE_MAX,
						       optarg);
			break;
		case O_CHUNK:
			if (parse_chunk_size(optarg, &o->chunk_size))
				return cli_usage_error("record", "--chunk-size takes a size from 4K to "
						       "16M (bytes, or with K or M); got '%s'", optarg);
			break;
		case O_FUNC:
		case O_SYSCALL:
		case O_SYSCALL_USER:
			if (add_window(c, opt, optarg)) {
				cli_err("out of memory");
				return EXIT_FAIL;
			}
			break;
		case O_FILTER:
			if (PREC_ARRAY_RESERVE(c->filters, c->nfilters, 1)) {
				cli_err("out of memory");
				return EXIT_FAIL;
			}
			c->filters[c->nfilters++] = optarg;
			break;
		case 'n': c->dry = true; break;
		case 'q': c->quiet = true; break;
		case O_PROGRESS: c->o.progress = 1; break;
		case O_NO_PROGRESS: c->o.progress = 0; break;
		case 'v': cli_verbose++; break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			ret = parse_valued(c, opt, optarg);
			if (ret >= 0)
				return ret;
		}
	}
	if (optind < argc)
		o->argv = argv + optind;
	o->pids = c->pids;
	o->tids = c->tids;
	o->cpus = c->cpus;
	return -1;
}

/*
 * -C and --per-thread, as perf's target__validate() (util/target.c) settles
 * them: a CPU list without -p/-t records those CPUs whole, as -a does, and
 * overrides --per-thread; with -p/-t and per-thread rings, -C has no effect.
 */
static void resolve_cpu_targets(struct prec_record_opts *o)
{
	bool threads = o->npids || o->ntids;

	if (o->cpus && !threads)
		o->system_wide = true;
	if (o->system_wide && o->per_thread) {
		cli_warn("--per-thread is ignored: %s records whole CPUs, every thread on them "
			 "(as perf: SYSTEM/CPU switch overriding PER-THREAD)", o->cpus ? "-C" : "-a");
		o->per_thread = false;
	}
	if (threads && o->per_thread && o->cpus) {
		cli_warn("-C is ignored: per-thread rings (--per-thread or -t) follow their threads "
			 "on every CPU");
		o->cpus = NULL;
		o->ncpus = 0;
	}
}

/* Which combinations of targets make sense. Returns -1 to go on, else the exit status. */
static int check_targets(struct rec_cli *c)
{
	struct prec_record_opts *o = &c->o;

	if ((o->truth || o->qemu || o->emulate_cpus || o->emulate_slice) && !o->emulate)
		return cli_usage_error("record", "--emulate-truth, --emulate-cpus, --emulate-slice "
				       "and --qemu go with --emulate");
	if (o->emulate_cpus && o->emulate_system)
		return cli_usage_error("record", "--emulate-cpus goes with --emulate: the "
				       "whole-system guest has one CPU");
	if (o->emulate_slice && o->emulate_system)
		return cli_usage_error("record", "--emulate-slice goes with --emulate: the "
				       "whole-system guest's kernel schedules its own threads");
	if ((c->period || c->freq) && o->emulate)
		return cli_usage_error("record", "-c and -F do not go with --emulate: the software "
				       "tracer's triggers take period=N in their spec");
	if (o->emulate && (o->npids || o->ntids || ((o->system_wide || o->cpus) && !o->argv))) {
		cli_err("--emulate runs a workload; -p and -t, and -a or -C without one, need trace "
			"hardware");
		fprintf(stderr, "  hint: give the program after --: ptrec record --emulate -- prog\n");
		return EXIT_FAIL; /* as the recorder's own refusal */
	}
	if (o->argv && (o->npids || o->ntids))
		return cli_usage_error("record", "give either a command or -p/-t, not both");
	if (o->system_wide && (o->npids || o->ntids))
		return cli_usage_error("record", "-a records every process; it does not take -p/-t");
	if (!c->dry && !o->argv && !o->npids && !o->ntids && !o->system_wide && !o->cpus)
		return cli_usage_error("record", "nothing to record: give a command (ptrec record -- CMD), -p PID, -t TID, -a or -C LIST");
	/* -t means those threads only: a ring each, no inheritance to new threads. */
	if (o->ntids)
		o->per_thread = true;
	resolve_cpu_targets(o);
	return -1;
}

/* --func and --syscall: their spec goes first. Returns -1 or the exit status. */
static int window_spec(struct rec_cli *c)
{
	const struct prec_record_opts *o = &c->o;
	char prog[32];
	const char *p = o->argv ? o->argv[0] : NULL;
	int ret;

	if (!p && o->npids) {
		snprintf(prog, sizeof(prog), "/proc/%d/exe", (int)o->pids[0]);
		p = prog;
	}
	ret = rec_windows_expand(&c->win, p, o->emulate, &c->win_spec);
	if (ret >= 0 || !c->win_spec)
		return ret;
	if (PREC_ARRAY_RESERVE(c->specs, c->nspecs, 1)) {
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	memmove(c->specs + 1, c->specs, c->nspecs * sizeof(*c->specs));
	c->specs[0] = c->win_spec;
	c->nspecs++;
	if (c->dry)
		printf("# --func/--syscall stand for: -e '%s'\n", c->win_spec);
	return -1;
}

/* The event list from the -e specs (or the default tracer). Returns -1 or the exit status. */
static int build_evlist(struct rec_cli *c, struct prec_evlist **elp, struct prec_diag *d)
{
	static const char *def_hw = "pt//", *def_emu = "pt//u";
	struct prec_evspec_opts eo = { 0 };
	struct prec_evlist *el;
	size_t i;
	int ret;

	eo.emulate = c->o.emulate;
	eo.emulate_kernel = c->o.emulate_system;
	/* cs_etm's per-CPU defaults (the software cs_etm records per CPU too) */
	eo.per_cpu = !c->o.per_thread;
	eo.period = c->period;
	eo.freq = c->period ? 0 : c->freq;
	el = *elp = prec_evlist_new(&eo);
	if (!el || (!c->nspecs && PREC_ARRAY_RESERVE(c->specs, c->nspecs, 1))) {
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	ret = window_spec(c);
	if (ret >= 0)
		return ret;
	if (!c->nspecs) {
		c->specs[c->nspecs++] = c->o.emulate ? def_emu : def_hw;
		if (prec_evlist_add(el, c->specs[0], d) < 0) {
			/* Not the user's text: no caret under it. */
			cli_err("no -e given, and the default event, the tracer (%s), cannot be "
				"used here: %s", c->specs[0], d->msg);
			fprintf(stderr, "  hint: %s\n", d->hint[0] ? d->hint :
				"name events with -e (see 'ptrec list'), or record with --emulate");
			return EXIT_USAGE;
		}
	} else {
		for (i = 0; i < c->nspecs; i++) {
			if (prec_evlist_add(el, c->specs[i], d) < 0) {
				cli_diag("bad event spec", c->specs[i], d);
				return EXIT_USAGE;
			}
		}
	}
	if (prec_evlist_finish(el, d) < 0) {
		cli_diag("bad event spec", prec_evlist_diag_text(el), d);
		return EXIT_USAGE;
	}
	c->o.el = el;
	ret = rec_filter_resolve(c->filters, c->nfilters, el, c->o.emulate, c->o.emulate_system,
				 c->dry, &c->filter);
	c->o.filter = c->filter;
	return ret;
}

/* --emulate: the Intel PT plugin and the CoreSight one next to it. */
static void find_plugins(struct prec_record_opts *o, char *plugin, char *plugin_etm, size_t size)
{
	char *slash;

	o->plugin = find_plugin(plugin, size);
	snprintf(plugin_etm, size, "%s", o->plugin);
	slash = strrchr(plugin_etm, '/');
	snprintf(slash ? slash + 1 : plugin_etm, size - (size_t)(slash ? slash + 1 - plugin_etm : 0),
		 "ptrec-emu-etm.so");
	o->plugin_etm = getenv("PTREC_PLUGIN_ETM") ? getenv("PTREC_PLUGIN_ETM") : plugin_etm;
}

static int install_signals(struct prec_record_opts *o)
{
	struct sigaction sa;

	bool usr2 = o->snapshot || o->switch_signal;

	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) ||
	    (usr2 && pipe2(snap_pipe, O_CLOEXEC | O_NONBLOCK))) {
		cli_err("pipe: %s", strerror(errno));
		return -1;
	}
	o->snapshot_fd = snap_pipe[0];
	if (usr2) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_snapshot;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR2, &sa, NULL);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static int dry_run(struct prec_evlist *el)
{
	struct prec_buf b = { 0 };

	if (prec_evlist_dump(el, &b)) {
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	fputs(b.data ? b.data : "", stdout);
	prec_buf_free(&b);
	return EXIT_OK;
}

/*
 * -o -: the trace goes to what standard output was, and standard output
 * becomes standard error for everything else, the workload included (as
 * perf's evlist__prepare_workload() does for pipe output), so that nothing
 * else lands in the trace.
 */
static int stdout_trace(struct prec_record_opts *o)
{
	int fd;

	if (strcmp(o->output, "-"))
		return 0;
	if (isatty(STDOUT_FILENO)) {
		cli_err("-o -: standard output is a terminal; the trace is binary");
		fprintf(stderr, "  hint: redirect it: ptrec record -o - ... > FILE, or | ptdump -\n");
		return -1;
	}
	fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		cli_err("-o -: %s", strerror(errno));
		return -1;
	}
	o->output_fd = fd;
	return 0;
}

static int run_record(struct rec_cli *c, int argc, char **argv, struct prec_diag *d)
{
	struct prec_record_opts *o = &c->o;
	struct prec_record_result res;

	if (stdout_trace(o) || install_signals(o))
		return EXIT_FAIL;
	o->stop_fd = stop_pipe[0];
	o->stop_signal = SIGTERM;
	if (c->quiet && o->progress < 0)
		o->progress = 0;
	o->cmd_argc = argc + 1;
	o->cmd_argv = argv - 1;
	if (prec_record(o, &res, d) < 0) {
		cli_diag(NULL, NULL, d);
		return EXIT_FAIL;
	}
	if (!c->quiet)
		report(o, &res);
	return res.workload ? res.exit_code : EXIT_OK;
}

int cmd_record(int argc, char **argv)
{
	static char prog[] = "ptrec record";
	char *name = argv[0];
	struct rec_cli c = { .o = { .output = "ptrec.data", .compress = 3, .stop_fd = -1,
				    .snapshot_fd = -1, .progress = -1 } };
	struct prec_evlist *el = NULL;
	struct prec_diag d = { 0 };
	char plugin[PATH_MAX], plugin_etm[PATH_MAX];
	int ret;

	/* getopt names argv[0] in its messages: "ptrec record: unrecognized option" */
	argv[0] = prog;
	ret = parse_options(&c, argc, argv);
	argv[0] = name;
	if (ret < 0)
		ret = check_targets(&c);
	if (ret < 0)
		ret = build_evlist(&c, &el, &d);
	if (ret < 0 && c.dry)
		ret = dry_run(el);
	if (ret < 0) {
		if (c.o.emulate)
			find_plugins(&c.o, plugin, plugin_etm, sizeof(plugin));
		ret = run_record(&c, argc, argv, &d);
	}
	prec_evlist_free(el);
	free(c.specs);
	free(c.win.funcs);
	free(c.win.syscalls);
	free(c.win_spec);
	free(c.filters);
	free(c.filter);
	free(c.pids);
	free(c.tids);
	free(c.cpus);
	return ret;
}
