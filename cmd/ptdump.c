// SPDX-License-Identifier: MIT
/* ptdump: decodes ptrec trace files into call traces and other views. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/array.h"
#include "base/util.h"
#include "cli.h"
#include "decoders/decoder.h"
#include "decoders/jobs.h"
#include "decoders/shard.h"
#include "interop/importer.h"
#include "interop/perfexport.h"
#include "interop/rawpt.h"
#include "output/output.h"
#include "output/packets.h"
#include "output/report.h"
#include "output/views.h"
#include "session/cs_meta.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: ptdump [options] [FILE]\n"
"       ptdump --shard K/N -o PART FILE        decode shard K of N into PART\n"
"       ptdump [view] --merge FILE PART...     the view, from all N parts\n\n"
"Decodes a ptrec trace file (default ./ptrec.data) into a call trace or\n"
"another view. Output goes to standard output.\n\n"
"views (one; --call-trace is the default):\n"
"      --call-trace        calls, indented by depth (perf script --call-trace layout)\n"
"      --call-ret-trace    calls and returns\n"
"      --insn-trace        every instruction, disassembled\n"
"      --branches          every taken branch: from, to, kind\n"
"      --events            raw decoder events (debugging)\n"
"      --packets           every Intel PT packet with its offset and payload\n"
"      --stats             file and decode statistics per stream\n"
"      --info              header, machine, events, sizes\n"
"      --sideband          every sideband record and trigger sample, in time order\n"
"      --ranges            executed instruction ranges (CoreSight traces), in the\n"
"                          layout of OpenCSD's trc_pkt_lister\n"
"      --report[=caller|callee]  per function: calls, instructions and time, self\n"
"                          and total (with the callers or callees of each)\n"
"      --windows           per trace window (resume to pause): triggers, time,\n"
"                          instructions, calls, top functions; and a summary\n"
"      --diff OLD          per function and window: OLD against FILE\n"
"      --folded            folded stacks (a;b;c COUNT) for flame graphs\n"
"      --perfetto OUT      a Chrome/Perfetto trace-event timeline to OUT\n\n"
"view options:\n"
"      --format text|json  JSON lines (call traces, branches, stats, info,\n"
"                          sideband, report, windows, diff)\n"
"      --sort KEY          --report order: insns (total, default), self, calls,\n"
"                          time, self-time, name\n"
"      --by-thread         --report: one row per function and thread\n"
"      --weight W          --folded: insns (default), time or calls\n"
"      --max-events N      --perfetto: keep the N longest calls (default 1000000)\n"
"      --fail-above PCT    --diff: exit 3 when instructions grew by more than PCT %%\n"
"      --durations         --call-trace: each call's duration and instructions\n"
"      --max-depth N       call traces: no lines deeper than N; profiles: calls\n"
"                          deeper than N count in their caller at depth N\n"
"      --hide-dso REGEX    leave out functions of objects whose path matches\n"
"      --no-plt            fold PLT stubs and the lazy-binding resolver into the\n"
"                          call they serve (call traces and profiles)\n\n"
"inputs (recognised by content): a ptrec trace file, a perf.data file (also\n"
"perf's pipe format: - reads standard input), or a CoreSight snapshot directory\n"
"(snapshot.ini; or name it with --snapshot DIR)\n\n"
"raw Intel PT:\n"
"      --pt RAW            decode a raw Intel PT buffer written by another tool, with:\n"
"      --elf FILE[@BASE]   an ELF file's loadable segments (at BASE, else their addresses)\n"
"      --image FILE[:OFFSET[:SIZE]]@ADDR  raw bytes of FILE from OFFSET at ADDR\n"
"                          (SIZE of them, else to the end of the file)\n"
"      --cpu FAMILY/MODEL[/STEPPING]  the CPU that wrote it (errata; always give it)\n"
"      --mtc-freq N, --nom-freq N, --cpuid-0x15.eax N, --cpuid-0x15.ebx N\n"
"      e.g. ptdump --pt trace.pt --cpu 6/94/3 --elf ./prog@0x400000\n\n"
"conversions:\n"
"      --to-perf-data OUT  write perf.data that 'perf script' decodes (with a\n"
"                          build-id cache for --symfs in OUT.debug)\n"
"      --to-raw DIR        one .pt file per stream, the code images and a manifest\n"
"                          with libipt tool options\n\n"
"filters:\n"
"      --pid PID, --tid TID, --cpu CPU\n"
"      --time START,END    perf time in seconds (either side may be empty)\n"
"      --symbol NAME       only what runs under function NAME (or a glob)\n"
"      --snapshot-index K  only the trace of snapshot K (1, 2, ...: see --info)\n\n"
"other:\n"
"      --srcline           add file:line (DWARF) to the instruction trace\n"
"      --symfs DIR         look up binaries under DIR\n"
"      --buildid-dir DIR   perf's build-id cache for perf.data input (default ~/.debug)\n"
"      --buffer SIZE       trace bytes each stream holds in memory while it is decoded\n"
"                          (default 2M; 0: whole streams)\n"
"      --core walk|libipt  Intel PT decoder core: ptdump's walk over libipt's\n"
"                          query decoder (default), or libipt's block decoder\n"
"  -j, --jobs N            decode with N threads (default: the online CPUs; 1: one\n"
"                          pass, no threads); the output is the same\n"
"      --shard K/N         decode the K-th of N slices of the trace (1 <= K <= N) into\n"
"                          a part file, for any view (run all N anywhere, then --merge)\n"
"  -o, --output PART       the part file of --shard (- : standard output)\n"
"      --merge             FILE, then all N part files: the view, the same as\n"
"                          decoding FILE whole (a part is decoded again where needed)\n"
"      --progress          a progress line on standard error, terminal or not\n"
"      --no-progress       none (default: one on a terminal for decodes and\n"
"                          conversions over a second)\n"
"      --follow            a recording still being written: the call traces,\n"
"                          --insn-trace, --branches, --events and --sideband as it\n"
"                          grows, the other views once ptrec has ended it\n"
"  -i, --input FILE        the trace file (same as the FILE argument)\n"
"      --snapshot DIR      decode a CoreSight snapshot directory\n"
"  -q, --quiet             no warnings about damage or missing code\n"
"  -V, --version           ptdump's version\n"
"  -h, --help              this text\n\n"
"Exit status: 0 success (even when parts of the trace could not be decoded:\n"
"those are reported), 1 the file cannot be read, 2 usage error, 3 nothing to\n"
"show (said why) or --fail-above exceeded. See ptdump(1).\n");
}

static int parse_time(const char *s, uint64_t *out)
{
	char *end;
	double v;

	if (!*s) {
		*out = 0;
		return 0;
	}
	errno = 0;
	v = strtod(s, &end);
	if (errno || (*end && *end != ',') || v < 0 || v > 1.8e10)
		return -EINVAL;
	*out = (uint64_t)(v * 1e9 + 0.5);
	return 0;
}

/*
 * The progress line (ptdump(1), PROGRESS): trace bytes done of all, rate and
 * time left, on standard error, rewritten in place and erased at the end.
 */
struct progress {
	bool forced;                     /* --progress: at once, terminal or not */
	bool shown;
	double start, last;
};

static double now_s(void)
{
	return (double)prec_now_ns() / 1e9;
}

static void progress_cb(void *ctx, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;
	double t = now_s(), rate, left;

	if ((!p->forced && t - p->start < 1.0) || (p->shown && t - p->last < 0.25))
		return;
	p->last = t;
	rate = t > p->start ? (double)done / (t - p->start) : 0;
	left = rate > 0 && total > done ? (double)(total - done) / rate : 0;
	fprintf(stderr, "\r[ ptdump: %.1f of %.1f MB (%u%%), %.1f MB/s, %u:%02u left ]\033[K",
		(double)done / 1e6, (double)total / 1e6,
		total ? (unsigned)(done * 100 / total) : 100, rate / 1e6,
		(unsigned)(left / 60), (unsigned)left % 60);
	fflush(stderr);
	p->shown = true;
}

static void progress_end(struct progress *p)
{
	if (p->shown)
		fputs("\r\033[K", stderr);
	p->shown = false;
}

/*
 * --to-perf-data, --to-raw: conversions of a ptrec file. @prog: the progress line's state while the
 * trace is written, or NULL for none.
 */
static int convert(const char *input, const char *to_perf, const char *to_raw, bool quiet,
		   struct progress *prog)
{
	struct prec_diag d = { 0 };
	struct stat st;
	int err;

	if (to_perf && !stat(to_perf, &st) && S_ISDIR(st.st_mode)) {
		cli_err("--to-perf-data %s: that is a directory; the export is one perf.data file",
			to_perf);
		fprintf(stderr, "  hint: name a file, e.g. --to-perf-data %s/perf.data\n", to_perf);
		return EXIT_FAIL;
	}
	if (to_raw && !stat(to_raw, &st) && !S_ISDIR(st.st_mode)) {
		cli_err("--to-raw %s: that is a file; the export is a directory of files", to_raw);
		fprintf(stderr, "  hint: name a new or existing directory, e.g. --to-raw %s.raw\n",
			to_raw);
		return EXIT_FAIL;
	}
	if (to_perf) {
		struct prec_perf_export_opts eo = { .progress = prog ? progress_cb : NULL,
						    .progress_ctx = prog };
		struct prec_perf_export_report er;
		uint32_t k;

		err = prec_perf_export(input, to_perf, &eo, &er, &d);
		if (prog)
			progress_end(prog);
		if (err) {
			cli_err("%s: %s", input, d.msg[0] ? d.msg : prec_strerror(err));
			if (d.hint[0])
				fprintf(stderr, "  hint: %s\n", d.hint);
			return EXIT_FAIL;
		}
		if (!quiet) {
			for (k = 0; k < prec_notes_kept(&er.notes); k++)
				cli_note("%s", er.notes.text[k]);
			fprintf(stderr, "[ ptdump: wrote %s: %u streams, %llu trace bytes; decode with: "
					"perf script -i %s%s%s%s%s%s --call-trace ]\n", to_perf, er.streams,
				(unsigned long long)er.aux_bytes, to_perf,
				er.symfs_dir[0] ? " --symfs " : "", er.symfs_dir,
				er.kcore_dir[0] ? " --kallsyms " : "", er.kcore_dir,
				er.kcore_dir[0] ? "/kallsyms" : "");
		}
	}
	if (to_raw) {
		if (prog)
			prog->start = now_s(), prog->shown = false;
		err = prec_rawpt_export_progress(input, to_raw, prog ? progress_cb : NULL, prog, &d);
		if (prog)
			progress_end(prog);
		if (err) {
			cli_err("%s: %s", input, d.msg[0] ? d.msg : prec_strerror(err));
			return EXIT_FAIL;
		}
		if (!quiet)
			fprintf(stderr, "[ ptdump: wrote raw streams, images and a manifest to %s ]\n",
				to_raw);
	}
	return EXIT_OK;
}

/* The message for a decode that failed with @err. */
static const char *decode_errstr(int err)
{
#ifdef PREC_NO_LIBIPT
	if (err == -ENOSYS)
		return "this ptdump was built without libipt, so it cannot decode Intel PT; "
		       "decode the file on a machine with libipt";
#endif
	return prec_strerror(err);
}

/*
 * FILE "-": standard input. On a pipe, its first bytes say what it holds:
 * perf.data (file or pipe form) goes to its importer with those bytes
 * handed over; a ptrec file is copied to an unnamed temporary file (in
 * TMPDIR, else /tmp) that takes standard input's place, since the reader
 * seeks, and memory then stays bounded as for a file. Returns 0 or an exit
 * code.
 */
static int stdin_input(struct prec_perfdata_opts *po, uint8_t *head, size_t head_cap)
{
	const char *dir = getenv("TMPDIR");
	char buf[65536];
	struct stat st;
	long n, k;
	int fd;

	if (fstat(0, &st) == 0 && S_ISREG(st.st_mode))
		return 0;
	n = prec_read_full(0, head, head_cap);
	if (n < 0) {
		cli_err("standard input: %s", strerror((int)-n));
		return EXIT_FAIL;
	}
	if (prec_perfdata_probe(head, (size_t)n) > 0) {
		po->stdin_head = head;
		po->stdin_head_len = (size_t)n;
		return 0;
	}
	fd = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		cli_err("standard input: cannot make a temporary file in %s: %s",
			dir && *dir ? dir : "/tmp", strerror(errno));
		return EXIT_FAIL;
	}
	for (k = n; k > 0; k = prec_read_full(0, buf, sizeof(buf))) {
		if (prec_write_full(fd, k == n && head ? (const void *)head : buf, (size_t)k)) {
			cli_err("standard input: cannot copy it to a temporary file: %s",
				strerror(errno));
			close(fd);
			return EXIT_FAIL;
		}
		head = NULL;
	}
	if (k < 0 || lseek(fd, 0, SEEK_SET) || dup2(fd, 0) < 0) {
		cli_err("standard input: %s", strerror(k < 0 ? (int)-k : errno));
		close(fd);
		return EXIT_FAIL;
	}
	close(fd);
	return 0;
}


/* What the options asked for. */
struct args {
	const struct view *view;
	const char *view_opt;            /* the view option as given, for messages */
	struct prec_output_opts oo;
	struct prec_import_opts io;
	struct prec_rawpt_image *imgs;   /* --elf, --image */
	size_t nimgs;
	const char *symfs, *to_perf, *to_raw;
	bool quiet, cpu_ident, raw_param;
	struct prec_view_opts vo;        /* --format, --sort, --report=, --weight */
	struct prec_profile_opts po;     /* --by-thread, --no-plt, --max-events */
	const char *view_arg;            /* --perfetto OUT, --diff OLD */
	const char *hide_dso;
	regex_t hide;
	double fail_above;               /* --fail-above PCT; < 0: none */
	bool format_given, sort_given, weight_given;
	bool durations;                  /* --call-trace --durations */
	struct prec_durations *dur_keep; /* --follow --durations: what the rounds carry */
	int progress;                    /* --progress 1, --no-progress 0, else -1 */
	uint32_t snap_index;             /* --snapshot-index K; 0: all */
	bool follow;                     /* --follow: the file is being recorded */
	FILE *outf;                      /* where the views that --follow streams write */
	uint32_t shard_k, shard_n;       /* --shard K/N; n 0: none */
	const char *out;                 /* -o PART */
	bool merge;                      /* --merge FILE PART... */
	char **parts;                    /* the part files of --merge */
	size_t nparts;
	struct prec_shards *shards;
	struct progress prog;
};

/*
 * A view: what ptdump writes. run() returns 0 or a negative error for
 * main() to report, or EXIT_FAIL (positive) when it has said what is wrong.
 */
struct view {
	const char *opt;
	enum prec_fmt fmt;               /* the decoded views: the format */
	bool header_only;                /* reads only what describes the input */
	unsigned uses;                   /* the filters and options it honours (U_*) */
	int (*run)(struct prec_session *s, const struct prec_import_report *rep, struct args *a);
};

/* Whether any sideband record names process (@pid) or thread (@tid) @id. */
static bool names_task(const struct prec_session *s, int id, bool pid)
{
	size_t i, n = prec_session_nr_sb(s);

	for (i = 0; i < n; i++) {
		const struct prec_sb *sb = prec_session_sb(s, i);

		if ((pid ? sb->pid : sb->tid) == id)
			return true;
	}
	return false;
}

/*
 * Why a decoded view would print nothing, said before decoding: no trace in
 * the input, or a filter that nothing in it can match. Returns EXIT_EMPTY
 * after saying so, or 0.
 */
static int why_empty(const struct prec_session *s, const struct args *a)
{
	size_t i, ns = prec_session_nr_streams(s), nsb = prec_session_nr_sb(s);
	bool per_cpu = false;

	if (!ns) {
		cli_err("no trace data: %s has no tracer stream (%zu sideband records and "
			"samples: see --sideband)", a->io.path ? a->io.path : "the input", nsb);
		return EXIT_EMPTY;
	}
	for (i = 0; i < ns; i++)
		per_cpu |= prec_session_stream(s, i)->cpu >= 0;
	if (a->oo.cpu >= 0 && !per_cpu) {
		cli_err("--cpu %d: this recording has per-thread streams, which name no CPU; "
			"select with --pid or --tid", a->oo.cpu);
		return EXIT_EMPTY;
	}
	if (a->oo.pid >= 0 && !names_task(s, a->oo.pid, true)) {
		cli_err("--pid %d: no such process in this recording (see --sideband)", a->oo.pid);
		return EXIT_EMPTY;
	}
	if (a->oo.tid >= 0 && !names_task(s, a->oo.tid, false)) {
		cli_err("--tid %d: no such thread in this recording (see --sideband)", a->oo.tid);
		return EXIT_EMPTY;
	}
	if (nsb && (a->oo.time_start || a->oo.time_end)) {
		const struct prec_sb *end = prec_session_sb(s, nsb - 1);
		uint64_t first = prec_session_sb(s, 0)->time, last = end->time;
		size_t k = nsb - 1;

		/*
		 * Trace may run past the last sideband record, except when that
		 * record is the end of a task (the recording ended with it), or
		 * the switches out that follow the end of a task.
		 */
		while (k > 0 && prec_session_sb(s, k)->type == PREC_SB_SWITCH)
			k--;
		end = prec_session_sb(s, k);
		if ((a->oo.time_start > last && end->type == PREC_SB_EXIT) ||
		    (a->oo.time_end && a->oo.time_end < first)) {
			cli_err("--time: the range is outside the recording, which spans "
				"%" PRIu64 ".%09" PRIu64 " to %" PRIu64 ".%09" PRIu64 " s",
				first / 1000000000, first % 1000000000, last / 1000000000,
				last % 1000000000);
			return EXIT_EMPTY;
		}
	}
	return 0;
}

static int run_decoded(struct prec_session *s, const struct prec_import_report *rep,
		       struct args *a)
{
	int empty = why_empty(s, a);

	(void)rep;
	if (empty)
		return empty;
	a->oo.fmt = a->view->fmt;
	if (a->vo.json)
		return prec_view_json_decoded(s, &a->oo, a->outf);
	if (a->durations)
		return prec_view_durations(s, &a->oo, a->outf, a->dur_keep);
	return prec_output_run(s, &a->oo, a->outf);
}

static int run_stats(struct prec_session *s, const struct prec_import_report *rep, struct args *a)
{
	int err = a->vo.json ? 0 : prec_view_file_stats(s, rep, &a->oo, stdout);

	if (err)
		return err;
	a->oo.fmt = a->view->fmt;
	a->oo.json = a->vo.json;
	return prec_output_run(s, &a->oo, stdout);
}

static int run_info(struct prec_session *s, const struct prec_import_report *rep, struct args *a)
{
	struct prec_diag d = { 0 };
	int err;

	(void)s;
	err = prec_view_info(rep, &a->io, cli_verbose > 0, a->vo.json, stdout, &d);
	if (err == -EOPNOTSUPP && a->vo.json) {
		cli_err("--info --format=json: no JSON description of %s, a %s input "
			"(use --info)",
			a->io.path, rep->importer ? rep->importer->name : "another input");
		return EXIT_FAIL;
	}
	if (err && d.msg[0]) {
		cli_err("%s: %s", a->io.path, d.msg);
		return EXIT_FAIL;
	}
	return err;
}

static int run_sideband(struct prec_session *s, const struct prec_import_report *rep,
			struct args *a)
{
	(void)rep;
	if (a->vo.json)
		return prec_view_sideband_json(s, &a->oo, a->outf);
	return prec_view_sideband(s, &a->oo, a->outf);
}

static int run_ranges(struct prec_session *s, const struct prec_import_report *rep,
		      struct args *a)
{
	(void)rep;
	if (!prec_cs_session_meta(s)) {
		cli_err("--ranges lists CoreSight instruction ranges; %s holds no CoreSight trace "
			"(use --branches or --insn-trace)", a->io.path);
		return EXIT_FAIL;
	}
	return prec_cs_print_ranges(s, &a->oo, stdout);
}

static int run_packets(struct prec_session *s, const struct prec_import_report *rep,
		       struct args *a)
{
	int err = prec_pt_dump_packets(s, &a->oo, stdout);

	(void)rep;
	if (err == -EOPNOTSUPP) {
		cli_err("--packets lists Intel PT packets; for CoreSight use --ranges, or "
			"trc_pkt_lister on a snapshot");
		return EXIT_FAIL;
	}
	return err;
}

/* The profile views (output/report.h) over @s. */
static int profile_view(struct prec_session *s, struct args *a, struct prec_profile **pp)
{
	int err = why_empty(s, a);

	if (err)
		return err;
	a->po.by_thread = a->vo.by_thread;
	a->po.slices = !strcmp(a->view->opt, "perfetto");
	a->po.folded = !strcmp(a->view->opt, "folded");
	a->po.hide = a->hide_dso ? &a->hide : NULL;
	return prec_profile_run(s, &a->oo, &a->po, pp);
}

static int run_profile(struct prec_session *s, const struct prec_import_report *rep,
		       struct args *a)
{
	struct prec_profile *p = NULL;
	int err = profile_view(s, a, &p);
	const char *v = a->view->opt;
	FILE *f;

	(void)rep;
	if (err)
		return err;
	if (!strcmp(v, "report"))
		err = prec_view_report(p, &a->vo, stdout);
	else if (!strcmp(v, "windows"))
		err = prec_view_windows(p, &a->vo, stdout);
	else if (!strcmp(v, "folded"))
		err = prec_view_folded(p, &a->vo, stdout);
	else if (!(f = fopen(a->view_arg, "w"))) {
		cli_err("--perfetto %s: %s", a->view_arg, strerror(errno));
		err = EXIT_FAIL;
	} else {
		err = prec_view_perfetto(p, a->po.max_slices, f);
		if (fclose(f) && !err)
			err = -EIO;
		if (err == -EIO || err == -EPIPE) {
			cli_err("--perfetto %s: write failed", a->view_arg);
			err = EXIT_FAIL;
		} else if (!err && !a->quiet) {
			fprintf(stderr, "[ ptdump: wrote %s: %zu calls%s, %zu instants ]\n",
				a->view_arg, p->nslice, p->slices_dropped ? " (the longest)" : "",
				p->ninst);
		}
		if (!err && p->slices_dropped)
			cli_note("--perfetto: %" PRIu64 " shorter calls left out to keep %zu "
				 "(--max-events)", p->slices_dropped, p->nslice);
	}
	prec_profile_free(p);
	return err;
}

/*
 * Streams left in the file (--buffer) are decoded in windows by the Intel
 * PT decoder; for the other views and decoders they are read whole.
 */
static int prepare_streams(struct prec_session *s, const struct args *a)
{
	if (!a->io.aux_by_ref || a->view->header_only)
		return 0;
	if (a->view->run == run_packets || a->view->run == run_ranges ||
	    prec_decoder_for_session(s) != &prec_intel_pt_decoder)
		return prec_session_load_aux(s);
	return 0;
}

/* --diff OLD: OLD's profile against the input's. */
static int run_diff(struct prec_session *s, const struct prec_import_report *rep, struct args *a)
{
	struct prec_import_opts io = a->io;
	struct prec_import_report orep;
	struct prec_diag d = { 0 };
	struct prec_session *os = prec_session_new();
	struct prec_profile *po = NULL, *pn = NULL;
	double worst = 0;
	char what[256];
	int err;

	(void)rep;
	if (!os || (a->symfs && prec_session_set_symfs(os, a->symfs))) {
		prec_session_free(os);
		return -ENOMEM;
	}
	io.path = a->view_arg;
	err = prec_import(os, &io, &orep, &d);
	if (!err)
		err = prepare_streams(os, a);
	if (err) {
		cli_err("%s: %s", io.path, d.msg[0] ? d.msg : prec_strerror(err));
		prec_import_report_fini(&orep);
		prec_session_free(os);
		return EXIT_FAIL;
	}
	/* the old file's reader stays open while its streams are decoded */
	err = profile_view(os, a, &po);
	prec_import_report_fini(&orep);
	if (!err)
		err = profile_view(s, a, &pn);
	if (!err)
		err = prec_view_diff(po, pn, &a->vo, stdout, &worst, what, sizeof(what));
	if (!err && a->fail_above >= 0 && worst > a->fail_above) {
		cli_err("--fail-above %g: the instructions of %s grew by %.2f %%%s", a->fail_above,
			what, worst, worst == 100 ? " (or it is new)" : "");
		err = EXIT_EMPTY;
	}
	prec_profile_free(po);
	prec_profile_free(pn);
	prec_session_free(os);
	return err;
}

/* What a view honours: the filters, --srcline. */
enum {
	U_PID = 1, U_TID = 2, U_CPU = 4, U_TIME = 8, U_SYMBOL = 16, U_SRCLINE = 32,
	U_DECODED = U_PID | U_TID | U_CPU | U_TIME | U_SYMBOL,
	U_PROFILE = U_PID | U_TID | U_CPU | U_TIME,
};

/* The views, in the order of the option table below (O_VIEW + index). */
static const struct view views[] = {
	{ "call-trace", PREC_FMT_CALL_TRACE, false, U_DECODED, run_decoded },
	{ "call-ret-trace", PREC_FMT_CALL_RET_TRACE, false, U_DECODED, run_decoded },
	{ "insn-trace", PREC_FMT_INSN_TRACE, false, U_DECODED | U_SRCLINE, run_decoded },
	{ "branches", PREC_FMT_BRANCHES, false, U_DECODED, run_decoded },
	{ "events", PREC_FMT_EVENTS, false, U_DECODED, run_decoded },
	{ "stats", PREC_FMT_STATS, false, U_DECODED, run_stats },
	{ "info", 0, true, 0, run_info },
	{ "sideband", 0, false, U_PID | U_TID | U_CPU | U_TIME, run_sideband },
	{ "ranges", 0, false, U_TID | U_CPU, run_ranges },
	{ "packets", 0, false, U_TID | U_CPU, run_packets },
	{ "report", 0, false, U_PROFILE, run_profile },
	{ "windows", 0, false, U_PROFILE, run_profile },
	{ "folded", 0, false, U_PROFILE, run_profile },
	{ "perfetto", 0, false, U_PROFILE, run_profile },
	{ "diff", 0, false, U_PROFILE, run_diff },
};

/* Warns about each option given that the chosen view (or conversion) does nothing with. */
static void warn_unused(const struct args *a)
{
	static const struct {
		unsigned bit;
		const char *opt;
	} os[] = {
		{ U_PID, "--pid" },   { U_TID, "--tid" },       { U_CPU, "--cpu" },
		{ U_TIME, "--time" }, { U_SYMBOL, "--symbol" }, { U_SRCLINE, "--srcline" },
	};
	const struct prec_output_opts *o = &a->oo;
	unsigned given = 0, uses = a->to_perf || a->to_raw ? 0 : a->view->uses;
	const char *in = a->to_perf ? "--to-perf-data" : a->to_raw ? "--to-raw" : NULL;
	char view[40];
	size_t i;

	given |= o->pid >= 0 ? U_PID : 0;
	given |= o->tid >= 0 ? U_TID : 0;
	given |= o->cpu >= 0 ? U_CPU : 0;
	given |= o->time_start || o->time_end ? U_TIME : 0;
	given |= o->symbol ? U_SYMBOL : 0;
	given |= o->srcline ? U_SRCLINE : 0;
	snprintf(view, sizeof(view), "--%s", a->view->opt);
	for (i = 0; i < PREC_ARRAY_SIZE(os); i++) {
		if (!(given & os[i].bit) || (uses & os[i].bit))
			continue;
		if (os[i].bit == U_SRCLINE && !in)
			cli_warn("--srcline does nothing with %s: it adds source lines to "
				 "--insn-trace", view);
		else
			cli_warn("%s does nothing with %s", os[i].opt, in ? in : view);
	}
}

enum {
	O_VIEW = 256, /* ... + PREC_ARRAY_SIZE(views) - 1 */
	O_PID = O_VIEW + PREC_ARRAY_SIZE(views), O_TID, O_CPU, O_TIME, O_SYMBOL, O_SRCLINE,
	O_SYMFS, O_SNAPSHOT, O_PT, O_ELF, O_IMAGE, O_MTC, O_NOM, O_C15A, O_C15B, O_TOPERF,
	O_TORAW, O_BUILDID, O_FORMAT, O_SORT, O_BYTHREAD, O_WEIGHT, O_MAXEV, O_FAIL, O_HIDE,
	O_NOPLT, O_DURATIONS, O_SNAPIDX, O_MAXDEPTH, O_BUFFER, O_PROGRESS, O_NOPROGRESS,
	O_FOLLOW, O_JOBS, O_SHARD, O_MERGE, O_CORE,
};

static const struct option opts[] = {
	{ "call-trace", no_argument, NULL, O_VIEW + 0 },
	{ "call-ret-trace", no_argument, NULL, O_VIEW + 1 },
	{ "insn-trace", no_argument, NULL, O_VIEW + 2 },
	{ "branches", no_argument, NULL, O_VIEW + 3 },
	{ "events", no_argument, NULL, O_VIEW + 4 },
	{ "stats", no_argument, NULL, O_VIEW + 5 },
	{ "info", no_argument, NULL, O_VIEW + 6 },
	{ "sideband", no_argument, NULL, O_VIEW + 7 },
	{ "ranges", no_argument, NULL, O_VIEW + 8 },
	{ "packets", no_argument, NULL, O_VIEW + 9 },
	{ "report", optional_argument, NULL, O_VIEW + 10 },
	{ "windows", no_argument, NULL, O_VIEW + 11 },
	{ "folded", no_argument, NULL, O_VIEW + 12 },
	{ "perfetto", required_argument, NULL, O_VIEW + 13 },
	{ "diff", required_argument, NULL, O_VIEW + 14 },
	{ "format", required_argument, NULL, O_FORMAT },
	{ "sort", required_argument, NULL, O_SORT },
	{ "by-thread", no_argument, NULL, O_BYTHREAD },
	{ "weight", required_argument, NULL, O_WEIGHT },
	{ "max-events", required_argument, NULL, O_MAXEV },
	{ "fail-above", required_argument, NULL, O_FAIL },
	{ "hide-dso", required_argument, NULL, O_HIDE },
	{ "no-plt", no_argument, NULL, O_NOPLT },
	{ "core", required_argument, NULL, O_CORE },
	{ "durations", no_argument, NULL, O_DURATIONS },
	{ "max-depth", required_argument, NULL, O_MAXDEPTH },
	{ "snapshot-index", required_argument, NULL, O_SNAPIDX },
	{ "pid", required_argument, NULL, O_PID },
	{ "tid", required_argument, NULL, O_TID },
	{ "cpu", required_argument, NULL, O_CPU },
	{ "time", required_argument, NULL, O_TIME },
	{ "symbol", required_argument, NULL, O_SYMBOL },
	{ "srcline", no_argument, NULL, O_SRCLINE },
	{ "symfs", required_argument, NULL, O_SYMFS },
	{ "snapshot", required_argument, NULL, O_SNAPSHOT },
	{ "pt", required_argument, NULL, O_PT },
	{ "elf", required_argument, NULL, O_ELF },
	{ "image", required_argument, NULL, O_IMAGE },
	{ "mtc-freq", required_argument, NULL, O_MTC },
	{ "nom-freq", required_argument, NULL, O_NOM },
	{ "cpuid-0x15.eax", required_argument, NULL, O_C15A },
	{ "cpuid-0x15.ebx", required_argument, NULL, O_C15B },
	{ "to-perf-data", required_argument, NULL, O_TOPERF },
	{ "to-raw", required_argument, NULL, O_TORAW },
	{ "buildid-dir", required_argument, NULL, O_BUILDID },
	{ "buffer", required_argument, NULL, O_BUFFER },
	{ "progress", no_argument, NULL, O_PROGRESS },
	{ "no-progress", no_argument, NULL, O_NOPROGRESS },
	{ "follow", no_argument, NULL, O_FOLLOW },
	{ "jobs", required_argument, NULL, 'j' },
	{ "shard", required_argument, NULL, O_SHARD },
	{ "merge", no_argument, NULL, O_MERGE },
	{ "output", required_argument, NULL, 'o' },
	{ "input", required_argument, NULL, 'i' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, 'V' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* --pid, --tid, --cpu N, --time, --symbol, --srcline. Returns 0 or an exit code. */
static int parse_filter(int c, const char *opt, const char *arg, struct args *a)
{
	uint64_t v;

	switch (c) {
	case O_TIME: {
		const char *comma = strchr(arg, ',');

		if (!comma || parse_time(arg, &a->oo.time_start) ||
		    parse_time(comma + 1, &a->oo.time_end) ||
		    (a->oo.time_end && a->oo.time_end < a->oo.time_start))
			return cli_usage_error(NULL, "--time takes START,END in seconds "
					       "(e.g. 12.5,13 or ,13); got '%s'", arg);
		return 0;
	}
	case O_SYMBOL:
		a->oo.symbol = arg;
		return 0;
	case O_SRCLINE:
		a->oo.srcline = true;
		return 0;
	}
	if (prec_parse_u64(arg, 10, &v) || v > INT32_MAX)
		return cli_usage_error(NULL, "%s takes a number; got '%s'", opt, arg);
	if (c == O_PID)
		a->oo.pid = (int)v;
	else if (c == O_TID)
		a->oo.tid = (int)v;
	else
		a->oo.cpu = (int)v;
	return 0;
}

/* --elf, --image, --cpu F/M[/S], --mtc-freq, ...: a raw trace's parameters. */
static int parse_raw(int c, const char *opt, const char *arg, struct args *a)
{
	struct prec_rawpt_opts *ro = &a->io.rawpt;
	struct prec_diag d = { 0 };
	uint64_t v;

	switch (c) {
	case O_CPU:
		if (prec_rawpt_parse_cpu(arg, ro, &d)) {
			cli_diag("--cpu", arg, &d);
			return EXIT_USAGE;
		}
		a->cpu_ident = true;
		return 0;
	case O_ELF: case O_IMAGE:
		if (PREC_ARRAY_RESERVE(a->imgs, a->nimgs, 1)) {
			cli_err("out of memory");
			return EXIT_FAIL;
		}
		if (prec_rawpt_parse_image(arg, c == O_ELF, &a->imgs[a->nimgs], &d)) {
			cli_diag(c == O_ELF ? "--elf" : "--image", arg, &d);
			return EXIT_USAGE;
		}
		a->nimgs++;
		return 0;
	}
	if (prec_parse_u64(arg, 0, &v) || v > UINT32_MAX || ((c == O_MTC || c == O_NOM) && v > 255))
		return cli_usage_error(NULL, "%s takes a number; got '%s'", opt, arg);
	if (c == O_MTC)
		ro->mtc_freq = (int)v;
	else if (c == O_NOM)
		ro->nom_freq = (int)v;
	else if (c == O_C15A)
		ro->cpuid_15_eax = (uint32_t)v;
	else
		ro->cpuid_15_ebx = (uint32_t)v;
	a->raw_param = true;
	return 0;
}

/* The input options: --pt, --snapshot, -i. */
static int parse_input(int c, const char *arg, struct args *a)
{
	if (c != 'i' && a->io.path)
		return cli_usage_error(NULL, "one input at a time");
	a->io.path = arg;
	if (c == O_PT) {
		a->io.kind = PREC_INPUT_RAWPT;
		a->io.rawpt.pt_path = arg;
	} else if (c == O_SNAPSHOT) {
		a->io.kind = PREC_INPUT_SNAPSHOT;
	}
	return 0;
}

/* The options of the profile views (output/report.h). Returns 0 or an exit code. */
static int parse_view_opt(int c, const char *opt, const char *arg, struct args *a)
{
	uint64_t v;
	char *end;

	switch (c) {
	case O_FORMAT:
		if (strcmp(arg, "text") && strcmp(arg, "json"))
			return cli_usage_error(NULL, "--format takes text or json; got '%s'", arg);
		a->vo.json = !strcmp(arg, "json");
		a->format_given = true;
		return 0;
	case O_SORT:
		a->sort_given = true;
		if (prec_parse_sort(arg, &a->vo.sort))
			return cli_usage_error(NULL, "--sort takes insns, self, calls, time, "
					       "self-time or name; got '%s'", arg);
		return 0;
	case O_WEIGHT:
		a->weight_given = true;
		if (prec_parse_weight(arg, &a->vo.weight))
			return cli_usage_error(NULL, "--weight takes insns, time or calls; got '%s'",
					       arg);
		return 0;
	case O_BYTHREAD:
		a->vo.by_thread = true;
		return 0;
	case O_NOPLT:
		a->po.no_plt = true;
		return 0;
	case O_DURATIONS:
		a->durations = true;
		return 0;
	case O_HIDE: {
		int rc = a->hide_dso ? 0 : regcomp(&a->hide, arg, REG_EXTENDED | REG_NOSUB);

		if (a->hide_dso)
			return cli_usage_error(NULL, "--hide-dso once; join patterns with |");
		if (rc)
			return cli_usage_error(NULL, "--hide-dso: '%s' is not a regular expression",
					       arg);
		a->hide_dso = arg;
		return 0;
	}
	case O_FAIL:
		errno = 0;
		a->fail_above = strtod(arg, &end);
		if (errno || *end || end == arg || a->fail_above < 0)
			return cli_usage_error(NULL, "--fail-above takes a percentage, e.g. 2.5; "
					       "got '%s'", arg);
		return 0;
	}
	if (prec_parse_u64(arg, 10, &v) || !v || v > 100000000)
		return cli_usage_error(NULL, "%s takes a number from 1 to 100000000; got '%s'",
				       opt, arg);
	if (c == O_MAXDEPTH)
		a->oo.max_depth = (int)v;
	else if (c == O_SNAPIDX)
		a->snap_index = (uint32_t)v;
	else
		a->po.max_slices = (size_t)v;
	return 0;
}

/* --buffer SIZE: bytes with an optional K, M or G; 0: whole streams in memory. */
static int parse_buffer(const char *arg, struct args *a)
{
	uint64_t v = 0, unit = 1;
	size_t n = strlen(arg);
	char num[32];

	if (n && strchr("kKmMgG", arg[n - 1])) {
		unit = strchr("kK", arg[n - 1]) ? 1u << 10 : strchr("mM", arg[n - 1]) ? 1u << 20 :
									     1u << 30;
		n--;
	}
	if (!n || n >= sizeof(num))
		goto bad;
	memcpy(num, arg, n);
	num[n] = 0;
	if (prec_parse_u64(num, 10, &v) || v > (4ull << 30) / unit ||
	    (v && v * unit < 4096))
		goto bad;
	a->io.aux_by_ref = v != 0;
	a->oo.window = (size_t)(v * unit);
	return 0;
bad:
	return cli_usage_error(NULL, "--buffer takes a size from 4K to 4G (e.g. 2M), or 0 "
			       "for whole streams; got '%s'", arg);
}

/* -j's default: the online CPUs (1 to 256). */
static int default_jobs(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

/* -j N: decoding threads. */
static int parse_jobs(const char *arg, struct args *a)
{
	uint64_t v;

	if (prec_parse_u64(arg, 10, &v) || v < 1 || v > 256)
		return cli_usage_error(NULL, "-j takes a number of threads from 1 to 256; got '%s'",
				       arg);
	a->oo.jobs = (int)v;
	return 0;
}

/* --shard K/N: shard K (1-based, as the K-th of a scheduler's N tasks) of N. */
static int parse_shard(const char *arg, struct args *a)
{
	const char *slash = strchr(arg, '/');
	char k[24];
	uint64_t vk, vn;

	if (!slash || (size_t)(slash - arg) >= sizeof(k))
		goto bad;
	memcpy(k, arg, (size_t)(slash - arg));
	k[slash - arg] = 0;
	if (prec_parse_u64(k, 10, &vk) || prec_parse_u64(slash + 1, 10, &vn))
		goto bad;
	if (vn < 1 || vn > 65536)
		return cli_usage_error(NULL, "--shard K/N: N is from 1 to 65536; got '%s'", arg);
	if (vk < 1 || vk > vn)
		return cli_usage_error(NULL, "--shard K/N: K is from 1 to N (%" PRIu64 "); got '%s'",
				       vn, arg);
	a->shard_k = (uint32_t)vk;
	a->shard_n = (uint32_t)vn;
	return 0;
bad:
	return cli_usage_error(NULL, "--shard takes K/N, the K-th of N shards (e.g. 2/8); got '%s'",
			       arg);
}

/* One option. Returns 0, or the exit code to stop with (-1: --help, done). */
static int parse_opt(int c, const char *opt, const char *arg, struct args *a)
{
	if (c >= O_VIEW && c < O_VIEW + (int)PREC_ARRAY_SIZE(views)) {
		if (a->view_opt && a->view != &views[c - O_VIEW])
			return cli_usage_error(NULL, "choose one view: %s and %s both given",
					       a->view_opt, opt);
		a->view = &views[c - O_VIEW];
		a->view_opt = opt;
		if (!strcmp(a->view->opt, "report") && arg &&
		    prec_parse_report_mode(arg, &a->vo.mode))
			return cli_usage_error(NULL, "--report takes caller or callee; got '%s'", arg);
		if (arg && strcmp(a->view->opt, "report"))
			a->view_arg = arg;
		return 0;
	}
	if (c >= O_FORMAT && c <= O_MAXDEPTH)
		return parse_view_opt(c, opt, arg, a);
	switch (c) {
	case O_CPU:
		return strchr(arg, '/') ? parse_raw(c, opt, arg, a) : parse_filter(c, opt, arg, a);
	case O_PID: case O_TID: case O_TIME: case O_SYMBOL: case O_SRCLINE:
		return parse_filter(c, opt, arg, a);
	case O_ELF: case O_IMAGE: case O_MTC: case O_NOM: case O_C15A: case O_C15B:
		return parse_raw(c, opt, arg, a);
	case O_PT: case O_SNAPSHOT: case 'i':
		return parse_input(c, arg, a);
	case O_SYMFS:
		a->symfs = arg;
		return 0;
	case O_TOPERF:
		a->to_perf = arg;
		return 0;
	case O_TORAW:
		a->to_raw = arg;
		return 0;
	case O_BUILDID:
		a->io.perfdata.buildid_dir = arg;
		return 0;
	case O_BUFFER:
		return parse_buffer(arg, a);
	case O_FOLLOW:
		a->follow = true;
		return 0;
	case 'j':
		return parse_jobs(arg, a);
	case O_SHARD:
		return parse_shard(arg, a);
	case O_MERGE:
		a->merge = true;
		return 0;
	case O_CORE:
		if (strcmp(arg, "walk") && strcmp(arg, "libipt"))
			return cli_usage_error(NULL, "--core takes walk or libipt; got '%s'", arg);
		a->oo.libipt_core = !strcmp(arg, "libipt");
		return 0;
	case 'o':
		a->out = arg;
		return 0;
	case O_PROGRESS: case O_NOPROGRESS:
		a->progress = c == O_PROGRESS;
		return 0;
	case 'q':
		a->quiet = true;
		return 0;
	case 'v':
		cli_verbose++;
		return 0;
	case 'h':
		usage(stdout);
		return -1;
	case 'V':
		printf("ptdump %s\n", PTREC_VERSION);
		return -1;
	default:
		return cli_usage_error(NULL, "bad option");
	}
}

/* The view options that the chosen view takes. Returns 0 or EXIT_USAGE. */
static int check_view_opts(const struct args *a)
{
	const char *v = a->view->opt;
	bool prof = a->view->run == run_profile || a->view->run == run_diff;
	bool calls = !strcmp(v, "call-trace") || !strcmp(v, "call-ret-trace");

	if (a->vo.json && (!strcmp(v, "folded") || !strcmp(v, "perfetto") ||
			   !strcmp(v, "insn-trace") || !strcmp(v, "events") ||
			   !strcmp(v, "ranges") || !strcmp(v, "packets")))
		return cli_usage_error(NULL, "--format=json is for --call-trace, --call-ret-trace, "
				       "--branches, --stats, --info, --sideband, --report, --windows "
				       "and --diff; not %s", a->view_opt);
	if (a->durations && strcmp(v, "call-trace"))
		return cli_usage_error(NULL, "--durations is for --call-trace");
	if (a->oo.max_depth && !calls && !prof)
		return cli_usage_error(NULL, "--max-depth is for --call-trace, --call-ret-trace, "
				       "--report, --windows, --diff, --folded and --perfetto");
	if (a->durations && a->vo.json)
		return cli_usage_error(NULL, "--durations: not with --format=json");
	if (a->snap_index && a->view->header_only)
		return cli_usage_error(NULL, "--snapshot-index is for the views that decode; "
				       "--info lists the snapshots");
	if (a->sort_given && strcmp(v, "report") && strcmp(v, "diff"))
		return cli_usage_error(NULL, "--sort orders --report or --diff");
	if (a->vo.by_thread && strcmp(v, "report"))
		return cli_usage_error(NULL, "--by-thread is for --report");
	if (a->weight_given && strcmp(v, "folded"))
		return cli_usage_error(NULL, "--weight is for --folded");
	if (a->po.max_slices && strcmp(v, "perfetto"))
		return cli_usage_error(NULL, "--max-events is for --perfetto");
	if (a->fail_above >= 0 && strcmp(v, "diff"))
		return cli_usage_error(NULL, "--fail-above is for --diff OLD NEW");
	if ((a->hide_dso || a->po.no_plt) && !prof && !calls)
		return cli_usage_error(NULL, "--hide-dso and --no-plt are for --call-trace, "
				       "--call-ret-trace, --report, --windows, --diff, --folded and "
				       "--perfetto");
	return 0;
}

/* --shard and --merge against the rest. Returns 0 or EXIT_USAGE. */
static int check_shard_opts(const struct args *a)
{
	const struct view *v = a->view;

	if (a->out && !a->shard_n)
		return cli_usage_error(NULL, "-o names the part file of --shard K/N");
	if (!a->shard_n && !a->merge)
		return 0;
	if (a->shard_n && a->merge)
		return cli_usage_error(NULL, "--shard decodes a part, --merge puts the parts "
				       "together: one at a time");
	if (a->follow || a->to_perf || a->to_raw || a->io.kind == PREC_INPUT_SNAPSHOT)
		return cli_usage_error(NULL, "%s: not with %s", a->merge ? "--merge" : "--shard",
				       a->follow ? "--follow" : a->to_perf ? "--to-perf-data" :
				       a->to_raw ? "--to-raw" : "--snapshot (a trace file only)");
	if (a->shard_n && !a->out)
		return cli_usage_error(NULL, "--shard %u/%u writes a part file: name it with -o PART",
				       a->shard_k, a->shard_n);
	if (a->shard_n && a->view_opt)
		return cli_usage_error(NULL, "--shard: the parts serve every view; give %s to "
				       "--merge", a->view_opt);
	if (a->merge && !strcmp(v->opt, "events"))
		return cli_usage_error(NULL, "--merge: not --events, whose blocks end where "
				       "libipt's block cache says, which parts warm in another "
				       "order; decode it whole");
	if (a->merge && v->run != run_decoded && v->run != run_stats && v->run != run_profile)
		return cli_usage_error(NULL, "--merge renders the decoded views (call traces, "
				       "--insn-trace, --branches, --stats, the profiles); run %s on "
				       "the trace file itself", a->view_opt);
	return 0;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	int c, ret;

	a->view = &views[0];
	a->fail_above = -1;
	a->progress = -1;
	prec_output_opts_init(&a->oo);
	prec_import_opts_init(&a->io);
	a->io.aux_by_ref = true;
	a->oo.jobs = default_jobs();
	while ((c = getopt_long(argc, argv, "i:j:o:qvVh", opts, NULL)) != -1) {
		/* The option as written: argv[optind - 1], or the one before with its argument. */
		const char *opt = argv[optind - 1];

		if (optarg && optarg == argv[optind - 1] && optind >= 2)
			opt = argv[optind - 2];
		ret = parse_opt(c, opt, optarg, a);
		if (ret)
			return ret;
	}
	if (a->merge && !a->shard_n) {
		if (!a->io.path && optind < argc)
			a->io.path = argv[optind++];
		a->parts = argv + optind;
		a->nparts = (size_t)(argc - optind);
		optind = argc;
		if (!a->io.path || !a->nparts)
			return cli_usage_error(NULL, "--merge takes the trace file, then its part "
					       "files: ptdump [view] --merge FILE PART...");
	}
	if (optind < argc) {
		if (a->io.path || optind + 1 < argc)
			return cli_usage_error(NULL, "one trace file at a time");
		a->io.path = argv[optind];
	}
	ret = check_shard_opts(a);
	if (ret)
		return ret;
	if (!a->io.path)
		a->io.path = "ptrec.data";
	if (!a->io.rawpt.pt_path && (a->nimgs || a->cpu_ident || a->raw_param))
		return cli_usage_error(NULL, "--elf, --image, --cpu F/M, --mtc-freq, --nom-freq and "
				       "--cpuid-0x15.* describe a raw trace: give it with --pt RAW");
	ret = check_view_opts(a);
	if (ret)
		return ret;
	if (!a->quiet)
		warn_unused(a);
	a->io.rawpt.images = a->imgs;
	a->io.rawpt.nimages = a->nimgs;
	a->io.header_only = a->view->header_only;
	a->oo.hide = a->hide_dso ? &a->hide : NULL;
	a->oo.no_plt = a->po.no_plt;
	return 0;
}

static void print_messages(const struct prec_session *s, const struct prec_import_report *rep)
{
	unsigned i;

	for (i = 0; i < prec_notes_kept(&rep->notes); i++)
		cli_note("%s", rep->notes.text[i]);
	for (i = 0; i < prec_notes_kept(&rep->warnings); i++)
		cli_warn("%s", rep->warnings.text[i]);
	for (i = 0; i < prec_session_nr_warnings(s); i++)
		cli_warn("%s", prec_session_warning(s, i));
}

/* --snapshot-index K: only what snapshot K copied. Returns 0 or EXIT_FAIL (said why). */
static int keep_snapshot(struct prec_session *s, const struct args *a)
{
	uint32_t n = prec_session_nr_snapshots(s);

	if (!n) {
		cli_err("--snapshot-index: %s has no snapshots (a recording made with -S/--snapshot "
			"has; see --info)", a->io.path);
		return EXIT_FAIL;
	}
	if (prec_session_keep_snapshot(s, a->snap_index)) {
		cli_err("--snapshot-index %u: %s has %u snapshot%s (see --info)", a->snap_index,
			a->io.path, n, n == 1 ? "" : "s");
		return EXIT_FAIL;
	}
	return 0;
}

/* The plan that shards of @s and their merge share; 0 or EXIT_FAIL (said why). */
static int shard_plan(struct prec_session *s, const struct args *a, struct prec_shard_plan *p)
{
	struct prec_diag d = { 0 };
	const char *opt = a->merge ? "--merge" : "--shard";

	if (prec_decoder_for_session(s) != &prec_intel_pt_decoder) {
		cli_err("%s: %s holds no Intel PT trace; decode CoreSight traces whole (without "
			"%s)", opt, a->io.path, opt);
		return EXIT_FAIL;
	}
	memset(p, 0, sizeof(*p));
	if (prec_shard_file_id(a->io.path, p, &d)) {
		cli_err("%s: %s", opt, d.msg);
		return EXIT_FAIL;
	}
	p->n = a->shard_n;
	p->window = a->oo.window;
	p->streams_crc = prec_shard_streams_id(s);
	return 0;
}

/* --shard K/N -o PART. Returns the exit code. */
static int run_shard(struct prec_session *s, struct args *a)
{
	struct prec_decoder_opts dopts = { .window = a->oo.window };
	struct prec_shard_plan plan;
	struct prec_shard_out o;
	bool out_std = !strcmp(a->out, "-");
	FILE *f;
	int err = shard_plan(s, a, &plan);

	if (err)
		return err;
	if (out_std && isatty(1)) {
		cli_err("--shard: -o -: standard output is a terminal; a part file is binary");
		return EXIT_FAIL;
	}
	f = out_std ? stdout : fopen(a->out, "wb");
	if (!f) {
		cli_err("--shard: -o %s: %s", a->out, strerror(errno));
		return EXIT_FAIL;
	}
	prec_shard_out_begin(&o, f, &plan, a->shard_k);
	err = prec_ipt_shard(s, &dopts, &plan, a->shard_k, &o);
	if (!err)
		err = prec_shard_out_end(&o);
	if (!out_std && fclose(f) && !err)
		err = errno ? -errno : -EIO;
	if (!err)
		return EXIT_OK;
	cli_err("--shard %u/%u: %s%s%s", a->shard_k, a->shard_n, out_std ? "" : a->out,
		out_std ? "" : ": ", prec_strerror(err));
	if (!out_std)
		unlink(a->out); /* no part file that looks whole */
	return EXIT_FAIL;
}

/* --merge FILE PART...: the parts, checked, for the decoders. Returns 0 or EXIT_FAIL. */
static int load_parts(struct prec_session *s, struct args *a)
{
	struct prec_shard_plan plan;
	struct prec_diag d = { 0 };
	int err = shard_plan(s, a, &plan);

	if (err)
		return err;
	if (prec_shards_load((const char *const *)a->parts, a->nparts, &plan, &a->shards, &d)) {
		cli_err("--merge: %s", d.msg);
		return EXIT_FAIL;
	}
	a->oo.shards = a->shards;
	return 0;
}

/* Reads the input into @s and runs the view. Returns the exit code. */
static int decode(struct prec_session *s, struct args *a)
{
	struct prec_import_report rep;
	struct prec_diag d = { 0 };
	size_t nwarn;
	int err;

	if (a->io.kind == PREC_INPUT_RAWPT && a->view->header_only)
		return cli_usage_error(NULL, "--info describes trace files; a raw trace has no metadata");
	err = prec_import(s, &a->io, &rep, &d);
	if (!err && a->snap_index && (err = keep_snapshot(s, a))) {
		prec_import_report_fini(&rep);
		return err;
	}
	if (!err && (err = prepare_streams(s, a)))
		prec_diag_set(&d, err, -1, "cannot read the trace: %s", prec_strerror(err));
	if (err) {
		if (!rep.importer)
			cli_err("%s", d.msg);
		else
			cli_err("%s: %s", a->io.path, d.msg[0] ? d.msg : prec_strerror(err));
		if (rep.importer && d.hint[0])
			fprintf(stderr, "  hint: %s\n", d.hint);
		prec_import_report_fini(&rep);
		return EXIT_FAIL;
	}
	if (a->shard_n || a->merge) {
		err = a->shard_n ? run_shard(s, a) : load_parts(s, a);
		if (err || a->shard_n) {
			prec_import_report_fini(&rep);
			return err;
		}
	}
	if (!a->quiet && !a->view->header_only)
		print_messages(s, &rep);
	nwarn = prec_session_nr_warnings(s);
	/*
	 * The progress line: on a terminal (standard error one, standard
	 * output not the same: the output would scroll through it), not with
	 * -q; --progress forces it, --no-progress keeps it off.
	 */
	if (a->progress == 1 || (a->progress < 0 && !a->quiet && isatty(2) && !isatty(1))) {
		a->prog.forced = a->progress == 1;
		a->prog.start = now_s();
		a->oo.progress = progress_cb;
		a->oo.progress_ctx = &a->prog;
	}
	err = a->view->run(s, &rep, a);
	progress_end(&a->prog);
	if (a->shards && cli_verbose > 0) {
		uint64_t taken, redone;

		prec_shards_counts(a->shards, &taken, &redone);
		cli_note("--merge: %" PRIu64 " parts taken from the shards, %" PRIu64
			 " decoded again", taken, redone);
	} else if (cli_verbose > 0 && a->oo.jobs > 1) {
		uint64_t taken, redone;

		prec_ipt_par_counts(&taken, &redone);
		if (taken + redone)
			cli_note("-j%d: %" PRIu64 " parts taken from the workers, %" PRIu64
				 " decoded again in order", a->oo.jobs, taken, redone);
	}
	/* What the decode found on its way (symbols loaded as they were needed) */
	for (; !a->quiet && nwarn < prec_session_nr_warnings(s); nwarn++)
		cli_warn("%s", prec_session_warning(s, nwarn));
	prec_import_report_fini(&rep);
	if (err > 0)
		return err;
	if (!err && (fflush(a->outf) == EOF || fflush(stdout) == EOF))
		err = errno == EPIPE ? -EPIPE : -EIO;
	if (err == -EPIPE)
		return EXIT_OK; /* the reader went away (ptdump | head): quietly done */
	if (err == -PREC_E_NOSYM) {
		cli_err("--symbol %s: no function of that name in the traced code", a->oo.symbol);
		return EXIT_FAIL;
	}
	if (err == -PREC_E_NOMATCH) {
		cli_err("--symbol %s: the function never ran in the decoded trace (selected: "
			"entered by a call or a jump, or where tracing began in it)", a->oo.symbol);
		return EXIT_EMPTY;
	}
	if (err) {
		cli_err("%s", decode_errstr(err));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/*
 * --follow: a trace file that ptrec is still writing. ptrec holds an
 * exclusive flock(2) on its output file until it closes it (ptrec-file(5)),
 * so a shared lock is granted once the recording has ended, however it
 * ended. Meanwhile the views that stream (follow_streams()) are decoded in
 * rounds from the file as it is, each writing what is settled
 * (prec_output_opts.follow): a prefix of what a decode of the whole file
 * writes. All output goes through a struct follow_out, which passes on only
 * what earlier rounds did not write, and checks that a round wrote again the
 * same bytes as before. The decode after the end is the last round.
 */
struct follow_out {
	uint64_t emitted;                /* bytes written to standard output */
	uint32_t crc;                    /* their CRC-32C */
	uint64_t pos;                    /* this round: bytes written to us */
	uint32_t pcrc;                   /* the CRC-32C of the first min(pos, emitted) */
	uint64_t differs;                /* 1 + where a round wrote other bytes; 0: none */
	struct prec_follow *rounds;      /* the rounds go on from each other; NULL: each
					    writes again all that is settled */
	unsigned nr;                     /* rounds so far */
	size_t sb_done;                  /* --sideband: the records the rounds wrote (settled) */
	uint64_t before_last;            /* rounds done before the last (the decode after the end) */
};

static ssize_t follow_write(void *cookie, const char *buf, size_t size)
{
	struct follow_out *fo = cookie;
	size_t k = 0;

	if (fo->pos < fo->emitted) {
		k = (size_t)PREC_MIN((uint64_t)size, fo->emitted - fo->pos);
		fo->pcrc = prec_crc32c(fo->pcrc, buf, k);
		fo->pos += k;
		if (fo->pos == fo->emitted && fo->pcrc != fo->crc && !fo->differs)
			fo->differs = 1 + fo->pos - k;
	}
	if (k < size) {
		if (fwrite(buf + k, 1, size - k, stdout) != size - k)
			return -1;
		fo->crc = prec_crc32c(fo->crc, buf + k, size - k);
		fo->emitted += size - k;
		fo->pos = fo->emitted;
		fo->pcrc = fo->crc;
	}
	return (ssize_t)size;
}

/* The views that --follow writes while the file grows (ptdump(1), --follow). */
static bool follow_streams(const struct args *a)
{
	return a->view->run == run_decoded || a->view->run == run_sideband;
}

/*
 * The decode window of the rounds (prec_output_opts.window): a stream's
 * decode starts again at a window's start, so smaller windows decode less
 * again; the events are the same for any.
 */
#define FOLLOW_WINDOW ((size_t)256 << 10)

/*
 * After a round: with -v, what it decoded (when it got so far: @before is
 * the count of rounds before it). A decode that failed may have left its
 * work half done: the next rounds write all that is settled again.
 */
static void follow_said(struct follow_out *fo, uint64_t before, bool last)
{
	const struct prec_follow_stats *st;

	if (!fo->rounds)
		return;
	st = prec_follow_stats(fo->rounds);
	if (cli_verbose > 0 && st->rounds > before)
		fprintf(stderr, "ptdump: --follow: round %u: decoded %" PRIu64 " of %" PRIu64
			" trace bytes, %" PRIu64 " events again%s\n", fo->nr, st->decoded, st->bytes,
			st->dropped, last ? "; the recording has ended" : "");
	if (st->broken) {
		prec_follow_free(fo->rounds);
		fo->rounds = NULL;
	}
}

/*
 * After a --sideband round over @s: the records settled go on from those
 * the rounds before wrote, unless it failed (the next round then writes
 * all that is settled again, and the output filter drops what was written).
 */
static void follow_sb_said(struct follow_out *fo, const struct prec_session *s, int err)
{
	size_t upto = prec_session_sb_lower_bound(s, prec_session_sb_settled(s));

	if (cli_verbose > 0)
		fprintf(stderr, "ptdump: --follow: round %u: %zu sideband records settled, %zu "
			"written before%s\n", fo->nr, upto, PREC_MIN(fo->sb_done, upto),
			err ? "; it failed" : "");
	fo->sb_done = !err && upto >= fo->sb_done ? upto : 0;
}

/* One round: what the file as it is now settles. Returns 0 or -EPIPE/-EIO. */
static int follow_round(struct args *a, FILE *outf, struct follow_out *fo)
{
	struct prec_session *s = prec_session_new();
	struct prec_output_opts oo = a->oo;
	struct prec_import_report rep;
	struct prec_diag d = { 0 };
	int err = -ENOMEM;
	uint64_t before = fo->rounds ? prec_follow_stats(fo->rounds)->rounds : 0;

	/* Rounds that go on from the last write only what is new. */
	fo->pos = fo->rounds || fo->sb_done ? fo->emitted : 0;
	fo->pcrc = fo->rounds || fo->sb_done ? fo->crc : 0;
	fo->nr++;
	if (s && !(a->symfs && prec_session_set_symfs(s, a->symfs))) {
		err = prec_import(s, &a->io, &rep, &d);
		if (!err && a->view->run != run_sideband)
			err = prepare_streams(s, a);
		oo.follow = true;
		oo.fmt = a->view->fmt;
		oo.jobs = 1;
		oo.progress = NULL;
		oo.window = FOLLOW_WINDOW;
		oo.rounds = fo->rounds;
		oo.sb_from = fo->sb_done;
		if (!err && a->view->run == run_sideband) {
			err = a->vo.json ? prec_view_sideband_json(s, &oo, outf) :
					   prec_view_sideband(s, &oo, outf);
			follow_sb_said(fo, s, err);
		} else if (!err && prec_session_nr_streams(s) && prec_decoder_for_session(s))
			err = a->vo.json     ? prec_view_json_decoded(s, &oo, outf) :
			      a->durations ? prec_view_durations(s, &oo, outf, a->dur_keep) :
					     prec_output_run(s, &oo, outf);
		prec_import_report_fini(&rep);
	}
	prec_session_free(s);
	follow_said(fo, before, false);
	if (fflush(outf) == EOF || fflush(stdout) == EOF)
		return errno == EPIPE ? -EPIPE : -EIO;
	/* Damage, missing code, no stream yet: the decode after the end says so. */
	return err == -EPIPE || err == -EIO ? err : 0;
}

/* The lock is free (the recording ended): true. Sets *@err on a real error. */
static bool follow_ended(int fd, int *err)
{
	*err = 0;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0)
		return true;
	if (errno != EWOULDBLOCK && errno != EINTR)
		*err = errno;
	return *err != 0;
}

/*
 * Until the recording ends: rounds while the file grows, at most one per
 * 0.2 s and none sooner than twice the last one took after it (so rounds
 * take at most a third of the time); for the other views, a line on a
 * terminal. Returns 0 or -EPIPE/-EIO.
 */
static int follow_loop(struct args *a, int fd, FILE *outf, struct follow_out *fo)
{
	double due = 0;
	off_t seen = -1;
	bool shown = false;
	struct stat st;
	int err = 0, lerr;

	while (!err && !follow_ended(fd, &lerr)) {
		if (fstat(fd, &st) < 0)
			st.st_size = 0;
		if (outf && st.st_size != seen && now_s() >= due) {
			double t0 = now_s();

			seen = st.st_size;
			err = follow_round(a, outf, fo);
			due = now_s() + PREC_MAX(0.2, 2 * (now_s() - t0));
		} else if (!outf && !a->quiet && isatty(2)) {
			fprintf(stderr, "\rptdump: %s: %.1f MiB so far; waiting for the recording to end",
				a->io.path, (double)st.st_size / (1 << 20));
			shown = true;
		}
		poll(NULL, 0, 100);
	}
	if (shown)
		fputs("\r\033[K", stderr);
	return err;
}

/*
 * The decode after the end is the last round. When the rounds went on from
 * each other up to the end, it goes on from them too (each stream's decode
 * from its last place, the same formatter) and writes what is left;
 * otherwise it decodes the whole file, and what the rounds wrote must be
 * the beginning of its output. So it does too when the last round decoded
 * its streams from their beginning (--events, --insn-trace, per-CPU
 * streams): a decode of the whole file in parts (-j) is then faster.
 */
static void follow_last(struct args *a, struct follow_out *fo, int err)
{
	const struct prec_follow_stats *st = fo->rounds ? prec_follow_stats(fo->rounds) : NULL;

	if (!err && st && prec_follow_started(fo->rounds) && st->decoded < st->bytes) {
		a->oo.rounds = fo->rounds;
		a->oo.last_round = true;
		a->oo.window = FOLLOW_WINDOW; /* where the rounds' decodes start again */
		fo->pos = fo->emitted;
		fo->pcrc = fo->crc;
		fo->nr++;
		fo->before_last = st->rounds;
		return;
	}
	fo->pos = 0;
	fo->pcrc = 0;
	prec_follow_free(fo->rounds);
	fo->rounds = NULL;
	prec_durations_free(a->dur_keep);
	a->dur_keep = NULL;
}

/*
 * --follow, before the decode: until the recording ends. Returns 0 to go on
 * (the decode after the end then writes to a->outf), else the exit status
 * (the error said), or -1 when the reader of the output went away.
 */
static int follow_wait(struct args *a, struct follow_out *fo)
{
	static const cookie_io_functions_t io = { .write = follow_write };
	FILE *outf = NULL;
	struct stat st;
	int fd, err;

	if (!strcmp(a->io.path, "-")) {
		cli_err("--follow waits for a trace file; standard input is read to its end anyway");
		return EXIT_USAGE;
	}
	fd = open(a->io.path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		cli_err("--follow: %s: %s", a->io.path, fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return EXIT_FAIL;
	}
	if (follow_ended(fd, &err) || !follow_streams(a)) {
		err = err ? -err : follow_loop(a, fd, NULL, fo);
	} else {
		outf = fopencookie(fo, "w", io);
		if (a->view->run == run_decoded) {
			fo->rounds = prec_follow_new();
			if (fo->rounds && a->durations && !(a->dur_keep = prec_durations_new())) {
				prec_follow_free(fo->rounds);
				fo->rounds = NULL;
			}
		}
		err = outf ? follow_loop(a, fd, outf, fo) : -errno;
		a->outf = outf ? outf : stdout;
		follow_last(a, fo, err);
	}
	close(fd);
	if (err == -EPIPE)
		return -1;
	if (err) {
		cli_err("--follow: %s: %s", a->io.path, strerror(-err));
		return EXIT_FAIL;
	}
	return 0;
}

/* --follow, after the decode: the rounds must have written what it did. */
static int follow_check(struct args *a, struct follow_out *fo, int ret)
{
	if (a->outf == stdout)
		return ret;
	if (fclose(a->outf) == EOF && !ret)
		ret = errno == EPIPE ? EXIT_OK : EXIT_FAIL;
	a->outf = stdout;
	if (!ret && fo->pos < fo->emitted && !fo->differs)
		fo->differs = 1 + fo->pos; /* the decode wrote less than the rounds */
	if (fo->differs) {
		cli_err("--follow: the output written while the recording ran differs from the "
			"decode of the whole file from byte %" PRIu64 " on (a bug: please report it)",
			fo->differs - 1);
		return EXIT_FAIL;
	}
	return ret;
}

int main(int argc, char **argv)
{
	struct args a = { 0 };
	struct follow_out fo = { 0 };
	struct prec_session *s = NULL;
	uint8_t head[16];
	int ret;

	cli_prog = "ptdump";
	signal(SIGPIPE, SIG_IGN);
	a.outf = stdout;
	ret = parse_args(argc, argv, &a);
	if (!ret && a.follow)
		ret = follow_wait(&a, &fo);
	if (!ret && !strcmp(a.io.path, "-") && a.io.kind == PREC_INPUT_AUTO)
		ret = stdin_input(&a.io.perfdata, head, sizeof(head));
	if (ret) {
		ret = ret < 0 ? EXIT_OK : ret;
	} else if (a.to_perf || a.to_raw) {
		/* A progress line on a terminal, as for a decode (the output is a file). */
		bool prog = a.progress == 1 || (a.progress < 0 && !a.quiet && isatty(2));

		a.prog.forced = a.progress == 1;
		a.prog.start = now_s();
		ret = convert(a.io.path, a.to_perf, a.to_raw, a.quiet, prog ? &a.prog : NULL);
	} else {
		s = prec_session_new();
		if (!s || (a.symfs && prec_session_set_symfs(s, a.symfs))) {
			cli_err("out of memory");
			ret = EXIT_FAIL;
		} else {
			ret = decode(s, &a);
		}
	}
	if (fo.rounds && !ret)
		follow_said(&fo, fo.before_last, true);
	ret = follow_check(&a, &fo, ret);
	prec_follow_free(fo.rounds);
	prec_durations_free(a.dur_keep);
	prec_session_free(s);
	prec_shards_free(a.shards);
	free(a.imgs);
	if (a.hide_dso)
		regfree(&a.hide);
	return ret;
}
