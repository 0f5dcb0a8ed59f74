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
#include "evspec.h"
#include "ptrec-cmds.h"
#include "record.h"
#include "util.h"

static int stop_pipe[2] = { -1, -1 };
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

static void usage(FILE *f)
{
	fprintf(f,
"usage: ptrec record [options] [--] COMMAND [ARGS...]\n"
"       ptrec record [options] -p PID[,PID...] | -t TID[,TID...] | -a\n\n"
"Records a trace of a command, of running processes or threads, or of whole\n"
"CPUs into one self-contained trace file (decode it with ptdump).\n\n"
"  -e, --event SPEC        events to record (repeatable; see ptrec(1), EVENT\n"
"                          SPECIFICATION); default: the tracer, 'pt//'\n"
"  -o, --output FILE       trace file (default ptrec.data; created mode 0600)\n"
"  -p, --pid PID,...       attach to processes (all their threads)\n"
"  -t, --tid TID,...       attach to threads\n"
"  -a, --all-cpus          system-wide on every CPU (or those of -C)\n"
"  -C, --cpu LIST          CPUs to record, e.g. 0,2-3\n"
"      --per-thread        one ring per thread instead of per CPU (no inherit)\n"
"  -m, --mmap-pages D[,A]  data and AUX ring sizes: pages, or sizes with K/M/G\n"
"                          (powers of two; default 512K,4M as root, 512K,128K else)\n"
"  -d, --duration SECS     stop after SECS seconds\n"
"      --kcore             copy kernel text from /proc/kcore (kernel decoding)\n"
"      --no-embed          record code images by reference (build id) only\n"
"  -z, --compress LEVEL    zstd level 1-19, 0 = off (default 3)\n"
"      --emulate           use the software tracer (QEMU user mode) instead of\n"
"                          hardware: user space of COMMAND only; see ptrec-emulate(7)\n"
"      --emulate-truth F   with --emulate: write the executed blocks to F\n"
"      --qemu PATH         with --emulate: the qemu-x86_64 binary to use\n"
"  -n, --dry-run           print the resolved groups and attrs; open nothing\n"
"  -q, --quiet             no end-of-run report\n"
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
		pid_t *nv;

		if (prec_parse_u64(tok, 10, &x) || x == 0 || x > INT_MAX) {
			free(copy);
			return -EINVAL;
		}
		nv = realloc(*v, (*n + 1) * sizeof(**v));
		if (!nv) {
			free(copy);
			return -ENOMEM;
		}
		*v = nv;
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
		v = v / (uint64_t)page * (uint64_t)page;
	} else {
		if (prec_parse_u64(s, 10, &v) || v > (1ull << 40) / (uint64_t)page)
			return -EINVAL;
		v *= (uint64_t)page;
	}
	if (!v || (v & (v - 1)))
		return -ERANGE;
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

static void report(const struct prec_record_opts *o, const struct prec_record_result *r)
{
	char a[32], f[32], s[32], l[32];
	int i;

	human(a, sizeof(a), r->aux_bytes);
	human(f, sizeof(f), r->file_bytes);
	human(s, sizeof(s), r->sideband_bytes);
	fprintf(stderr, "[ ptrec record: wrote %s to %s: trace %s in %d stream%s, sideband %s, "
			"%u image%s embedded%s ]\n",
		f, o->output, a, r->nstreams, r->nstreams == 1 ? "" : "s", s, r->embed.embedded,
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
	if (r->counts.lost)
		fprintf(stderr, "ptrec: warning: %llu sideband record%s lost: raise -m (data size)\n",
			(unsigned long long)r->counts.lost, r->counts.lost == 1 ? "" : "s");
	if (r->embed.missing || r->embed.mismatched)
		fprintf(stderr, "ptrec: warning: %u code image%s not embedded (%s)\n",
			r->embed.missing + r->embed.mismatched,
			r->embed.missing + r->embed.mismatched == 1 ? "" : "s", r->embed.first_problem);
	for (i = 0; i < r->nnotes; i++)
		fprintf(stderr, "ptrec: %s\n", r->notes[i]);
}

int cmd_record(int argc, char **argv)
{
	enum { O_PER_THREAD = 256, O_KCORE, O_NO_EMBED, O_EMULATE, O_TRUTH, O_QEMU };
	static const struct option opts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "output", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "per-thread", no_argument, NULL, O_PER_THREAD },
		{ "mmap-pages", required_argument, NULL, 'm' },
		{ "duration", required_argument, NULL, 'd' },
		{ "kcore", no_argument, NULL, O_KCORE },
		{ "no-embed", no_argument, NULL, O_NO_EMBED },
		{ "compress", required_argument, NULL, 'z' },
		{ "emulate", no_argument, NULL, O_EMULATE },
		{ "emulate-truth", required_argument, NULL, O_TRUTH },
		{ "qemu", required_argument, NULL, O_QEMU },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct prec_record_opts o = { .output = "ptrec.data", .compress = 3, .stop_fd = -1 };
	struct prec_record_result res;
	struct prec_evspec_opts eo = { 0 };
	struct prec_evlist *el = NULL;
	struct prec_diag d = { 0 };
	const char **specs = NULL;
	size_t nspecs = 0, i;
	pid_t *pids = NULL, *tids = NULL;
	int *cpus = NULL;
	bool dry = false, quiet = false;
	char plugin[PATH_MAX], plugin_etm[PATH_MAX];
	int c, err, ret = EXIT_FAIL;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+e:o:p:t:aC:m:d:z:nqvh", opts, NULL)) != -1) {
		switch (c) {
		case 'e': {
			const char **n = realloc(specs, (nspecs + 1) * sizeof(*specs));

			if (!n)
				goto oom;
			specs = n;
			specs[nspecs++] = optarg;
			break;
		}
		case 'o':
			o.output = optarg;
			break;
		case 'p':
			if (parse_ids(optarg, &pids, &o.npids)) {
				ret = cli_usage_error("record", "-p takes process ids: -p 1234[,5678]; got '%s'", optarg);
				goto out;
			}
			break;
		case 't':
			if (parse_ids(optarg, &tids, &o.ntids)) {
				ret = cli_usage_error("record", "-t takes thread ids: -t 1234[,5678]; got '%s'", optarg);
				goto out;
			}
			break;
		case 'a':
			o.system_wide = true;
			break;
		case 'C':
			free(cpus);
			if (prec_parse_cpu_list(optarg, &cpus, &o.ncpus)) {
				ret = cli_usage_error("record", "-C takes a CPU list like 0,2-3; got '%s'", optarg);
				goto out;
			}
			break;
		case O_PER_THREAD:
			o.per_thread = true;
			break;
		case 'm': {
			char *copy = strdup(optarg), *comma;

			if (!copy)
				goto oom;
			comma = strchr(copy, ',');
			if (comma)
				*comma++ = '\0';
			if (parse_ring_size(copy, &o.data_bytes) ||
			    (comma && parse_ring_size(comma, &o.aux_bytes))) {
				free(copy);
				ret = cli_usage_error("record", "-m takes DATA[,AUX] as page counts or sizes "
						      "(K/M/G), powers of two, e.g. -m 128,4M; got '%s'", optarg);
				goto out;
			}
			free(copy);
			break;
		}
		case 'd': {
			char *end;

			errno = 0;
			o.duration = strtod(optarg, &end);
			if (errno || *end || !(o.duration > 0) || o.duration > 1e7) {
				ret = cli_usage_error("record", "-d takes a positive number of seconds; got '%s'", optarg);
				goto out;
			}
			break;
		}
		case O_KCORE:
			o.kcore = true;
			break;
		case O_NO_EMBED:
			o.no_embed = true;
			break;
		case 'z': {
			uint64_t v;

			if (prec_parse_u64(optarg, 10, &v) || v > 19) {
				ret = cli_usage_error("record", "--compress takes a level from 0 (off) to 19; got '%s'", optarg);
				goto out;
			}
			o.compress = (int)v;
			break;
		}
		case O_EMULATE:
			o.emulate = true;
			break;
		case O_TRUTH:
			o.truth = optarg;
			break;
		case O_QEMU:
			o.qemu = optarg;
			break;
		case 'n':
			dry = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'v':
			cli_verbose++;
			break;
		case 'h':
			usage(stdout);
			ret = EXIT_OK;
			goto out;
		default:
			ret = cli_usage_error("record", "bad option");
			goto out;
		}
	}
	if (optind < argc)
		o.argv = argv + optind;
	o.pids = pids;
	o.tids = tids;
	o.cpus = cpus;
	if ((o.truth || o.qemu) && !o.emulate) {
		ret = cli_usage_error("record", "--emulate-truth and --qemu go with --emulate");
		goto out;
	}
	if (o.argv && (o.npids || o.ntids)) {
		ret = cli_usage_error("record", "give either a command or -p/-t, not both");
		goto out;
	}
	if (o.system_wide && (o.npids || o.ntids)) {
		ret = cli_usage_error("record", "-a records every process; it does not take -p/-t");
		goto out;
	}
	if (o.system_wide && o.per_thread) {
		ret = cli_usage_error("record", "--per-thread needs threads to follow: a command, -p or -t, not -a");
		goto out;
	}
	if (!dry && !o.argv && !o.npids && !o.ntids && !o.system_wide) {
		ret = cli_usage_error("record", "nothing to record: give a command (ptrec record -- CMD), -p PID, -t TID or -a");
		goto out;
	}
	/* -t means those threads only: a ring each, no inheritance to new threads. */
	if (o.ntids)
		o.per_thread = true;

	eo.emulate = o.emulate;
	el = prec_evlist_new(&eo);
	if (!el)
		goto oom;
	if (!nspecs) {
		static const char *def_hw = "pt//", *def_emu = "pt//u";

		specs = malloc(sizeof(*specs));
		if (!specs)
			goto oom;
		specs[nspecs++] = o.emulate ? def_emu : def_hw;
	}
	for (i = 0; i < nspecs; i++) {
		err = prec_evlist_add(el, specs[i], &d);
		if (err < 0) {
			cli_diag("bad event spec", specs[i], &d);
			ret = EXIT_USAGE;
			goto out;
		}
	}
	err = prec_evlist_finish(el, &d);
	if (err < 0) {
		cli_diag("bad event spec", prec_evlist_diag_text(el), &d);
		ret = EXIT_USAGE;
		goto out;
	}
	o.el = el;
	if (dry) {
		struct prec_buf b = { 0 };

		if (prec_evlist_dump(el, &b))
			goto oom;
		fputs(b.data ? b.data : "", stdout);
		prec_buf_free(&b);
		ret = EXIT_OK;
		goto out;
	}
	if (o.emulate) {
		char *slash;

		o.plugin = find_plugin(plugin, sizeof(plugin));
		/* The CoreSight tracer's plugin sits next to the Intel PT one. */
		snprintf(plugin_etm, sizeof(plugin_etm), "%s", o.plugin);
		slash = strrchr(plugin_etm, '/');
		snprintf(slash ? slash + 1 : plugin_etm,
			 sizeof(plugin_etm) - (size_t)(slash ? slash + 1 - plugin_etm : 0),
			 "ptrec-emu-etm.so");
		o.plugin_etm = getenv("PTREC_PLUGIN_ETM") ? getenv("PTREC_PLUGIN_ETM") : plugin_etm;
	}

	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK)) {
		cli_err("pipe: %s", strerror(errno));
		goto out;
	}
	{
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		signal(SIGPIPE, SIG_IGN);
	}
	o.stop_fd = stop_pipe[0];
	o.stop_signal = SIGTERM;
	o.cmd_argc = argc + 1;
	o.cmd_argv = argv - 1;
	err = prec_record(&o, &res, &d);
	if (err < 0) {
		cli_diag(NULL, NULL, &d);
		ret = EXIT_FAIL;
		goto out;
	}
	if (!quiet)
		report(&o, &res);
	ret = res.workload ? res.exit_code : EXIT_OK;
	goto out;
oom:
	cli_err("out of memory");
	ret = EXIT_FAIL;
out:
	prec_evlist_free(el);
	free(specs);
	free(pids);
	free(tids);
	free(cpus);
	return ret;
}
