// SPDX-License-Identifier: MIT
/* ptdump: decodes ptrec trace files into call traces and other views. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "cli.h"
#include "coresight.h"
#include "load.h"
#include "snapshot.h"
#include "output.h"
#include "ptdump-cmds.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: ptdump [options] [FILE]\n\n"
"Decodes a ptrec trace file (default ./ptrec.data) into a call trace or\n"
"another view. Output goes to standard output.\n\n"
"views (one; --call-trace is the default):\n"
"      --call-trace        calls, indented by depth (perf script --call-trace layout)\n"
"      --call-ret-trace    calls and returns\n"
"      --insn-trace        every instruction, disassembled\n"
"      --branches          every taken branch: from, to, kind\n"
"      --events            raw decoder events (debugging)\n"
"      --stats             file and decode statistics per stream\n"
"      --info              header, machine, events, sizes\n"
"      --sideband          every sideband record and trigger sample, in time order\n"
"      --ranges            executed instruction ranges (CoreSight traces), in the\n"
"                          layout of OpenCSD's trc_pkt_lister\n\n"
"inputs (recognised by content): a ptrec trace file, or a CoreSight snapshot\n"
"directory (snapshot.ini; or name it with --snapshot DIR)\n\n"
"filters:\n"
"      --pid PID, --tid TID, --cpu CPU\n"
"      --time START,END    perf time in seconds (either side may be empty)\n"
"      --symbol NAME       only what runs under function NAME\n\n"
"other:\n"
"      --srcline           add file:line (DWARF) to the instruction trace\n"
"      --symfs DIR         look up binaries under DIR\n"
"  -i, --input FILE        the trace file (same as the FILE argument)\n"
"      --snapshot DIR      decode a CoreSight snapshot directory\n"
"  -q, --quiet             no warnings about damage or missing code\n"
"  -h, --help              this text\n\n"
"Exit status: 0 success (even when parts of the trace could not be decoded:\n"
"those are reported), 1 the file cannot be read, 2 usage error. See ptdump(1).\n");
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

static void print_warnings(struct prec_session *s, const struct prec_load_report *rep, bool quiet)
{
	size_t i;
	char buf[256];

	if (quiet)
		return;
	for (i = 0; i < rep->ndamage && i < PREC_ARRAY_SIZE(rep->damage); i++)
		cli_warn("%s", rep->damage[i]);
	if (rep->ndamage > PREC_ARRAY_SIZE(rep->damage))
		cli_warn("%u more damaged places", rep->ndamage - (unsigned)PREC_ARRAY_SIZE(rep->damage));
	if (rep->status.cut_short)
		cli_warn("%s", prec_tfile_status_str(&rep->status, buf, sizeof(buf)));
	if (rep->bad_sideband)
		cli_warn("%u sideband chunk%s held malformed records (skipped from there)",
			 rep->bad_sideband, rep->bad_sideband == 1 ? "" : "s");
	for (i = 0; s && i < prec_session_nr_warnings(s); i++)
		cli_warn("%s", prec_session_warning(s, i));
}

int main(int argc, char **argv)
{
	enum {
		O_CALL = 256, O_CALLRET, O_INSN, O_BRANCHES, O_EVENTS, O_STATS, O_INFO,
		O_SIDEBAND, O_RANGES, O_PID, O_TID, O_CPU, O_TIME, O_SYMBOL, O_SRCLINE, O_SYMFS,
		O_SNAPSHOT,
	};
	static const struct option opts[] = {
		{ "call-trace", no_argument, NULL, O_CALL },
		{ "call-ret-trace", no_argument, NULL, O_CALLRET },
		{ "insn-trace", no_argument, NULL, O_INSN },
		{ "branches", no_argument, NULL, O_BRANCHES },
		{ "events", no_argument, NULL, O_EVENTS },
		{ "stats", no_argument, NULL, O_STATS },
		{ "info", no_argument, NULL, O_INFO },
		{ "sideband", no_argument, NULL, O_SIDEBAND },
		{ "ranges", no_argument, NULL, O_RANGES },
		{ "pid", required_argument, NULL, O_PID },
		{ "tid", required_argument, NULL, O_TID },
		{ "cpu", required_argument, NULL, O_CPU },
		{ "time", required_argument, NULL, O_TIME },
		{ "symbol", required_argument, NULL, O_SYMBOL },
		{ "srcline", no_argument, NULL, O_SRCLINE },
		{ "symfs", required_argument, NULL, O_SYMFS },
		{ "snapshot", required_argument, NULL, O_SNAPSHOT },
		{ "input", required_argument, NULL, 'i' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct prec_output_opts oo;
	struct prec_load_report rep;
	struct prec_tfile_reader *r = NULL;
	struct prec_session *s = NULL;
	struct prec_diag d = { 0 };
	const char *input = NULL, *symfs = NULL, *view = NULL;
	int mode = O_CALL, c, err, ret = EXIT_FAIL;
	bool quiet = false, snapshot = false;
	struct stat st;

	cli_prog = "ptdump";
	signal(SIGPIPE, SIG_IGN);
	prec_output_opts_init(&oo);
	while ((c = getopt_long(argc, argv, "i:qvh", opts, NULL)) != -1) {
		uint64_t v;

		switch (c) {
		case O_CALL: case O_CALLRET: case O_INSN: case O_BRANCHES: case O_EVENTS:
		case O_STATS: case O_INFO: case O_SIDEBAND: case O_RANGES:
			if (view && mode != c)
				return cli_usage_error(NULL, "choose one view: %s and %s both given",
						       view, argv[optind - 1]);
			mode = c;
			view = argv[optind - 1];
			break;
		case O_PID: case O_TID: case O_CPU:
			if (prec_parse_u64(optarg, 10, &v) || v > INT32_MAX)
				return cli_usage_error(NULL, "%s takes a number; got '%s'",
						       argv[optind - 2], optarg);
			if (c == O_PID)
				oo.pid = (int)v;
			else if (c == O_TID)
				oo.tid = (int)v;
			else
				oo.cpu = (int)v;
			break;
		case O_TIME: {
			const char *comma = strchr(optarg, ',');

			if (!comma || parse_time(optarg, &oo.time_start) ||
			    parse_time(comma + 1, &oo.time_end) ||
			    (oo.time_end && oo.time_end < oo.time_start))
				return cli_usage_error(NULL, "--time takes START,END in seconds "
						       "(e.g. 12.5,13 or ,13); got '%s'", optarg);
			break;
		}
		case O_SYMBOL:
			oo.symbol = optarg;
			break;
		case O_SRCLINE:
			oo.srcline = true;
			break;
		case O_SYMFS:
			symfs = optarg;
			break;
		case O_SNAPSHOT:
			if (input)
				return cli_usage_error(NULL, "one input at a time");
			input = optarg;
			snapshot = true;
			break;
		case 'i':
			input = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'v':
			cli_verbose++;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			return cli_usage_error(NULL, "bad option");
		}
	}
	if (optind < argc) {
		if (input || optind + 1 < argc)
			return cli_usage_error(NULL, "one trace file at a time");
		input = argv[optind];
	}
	if (!input)
		input = "ptrec.data";

	memset(&rep, 0, sizeof(rep));
	if (!snapshot && stat(input, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (!prec_snapshot_probe(input)) {
			cli_err("%s is a directory without snapshot.ini: not a CoreSight snapshot", input);
			return EXIT_FAIL;
		}
		snapshot = true;
	}
	s = prec_session_new();
	if (!s)
		goto oom;
	if (symfs && prec_session_set_symfs(s, symfs))
		goto oom;
	if (snapshot) {
		struct prec_snapshot_report srep;

		err = prec_snapshot_load(s, input, &srep, &d);
		if (err) {
			cli_err("%s: %s", input, d.msg[0] ? d.msg : prec_strerror(err));
			goto out;
		}
		if (mode == O_INFO) {
			ptdump_snapshot_info(&srep, input, stdout);
			ret = EXIT_OK;
			goto out;
		}
		if (!quiet)
			for (unsigned k = 0; k < srep.nnotes && k < PREC_SNAPSHOT_MAX_NOTES; k++)
				cli_note("%s", srep.notes[k]);
	} else {
		err = prec_load_open(input, &rep, &r, &d);
		if (err) {
			if (err == -ENOENT && !d.msg[0])
				cli_err("%s: no such file (record one with 'ptrec record')", input);
			else
				cli_err("%s: %s", input, d.msg[0] ? d.msg : prec_strerror(err));
			goto out;
		}
		if (mode == O_INFO) {
			ret = ptdump_info(r, input, stdout) ? EXIT_FAIL : EXIT_OK;
			goto out;
		}
		err = prec_load_session(s, r, &rep);
		if (err) {
			cli_err("%s: cannot load the trace: %s", input, prec_strerror(err));
			goto out;
		}
	}
	print_warnings(s, &rep, quiet);
	switch (mode) {
	case O_RANGES:
		if (!prec_cs_session_meta(s)) {
			cli_err("--ranges lists CoreSight instruction ranges; %s holds no CoreSight trace "
				"(use --branches or --insn-trace)", input);
			goto out;
		}
		err = prec_cs_print_ranges(s, &oo, stdout);
		break;
	case O_SIDEBAND:
		err = ptdump_sideband(s, &oo, stdout);
		break;
	case O_STATS:
		err = r ? ptdump_file_stats(r, stdout) : 0;
		if (!err) {
			oo.fmt = PREC_FMT_STATS;
			err = prec_output_run(s, &oo, stdout);
		}
		break;
	default:
		oo.fmt = mode == O_CALLRET ? PREC_FMT_CALL_RET_TRACE :
			 mode == O_INSN ? PREC_FMT_INSN_TRACE :
			 mode == O_BRANCHES ? PREC_FMT_BRANCHES :
			 mode == O_EVENTS ? PREC_FMT_EVENTS : PREC_FMT_CALL_TRACE;
		err = prec_output_run(s, &oo, stdout);
		break;
	}
	if (!err && fflush(stdout) == EOF)
		err = errno == EPIPE ? -EPIPE : -EIO;
	if (err == -EPIPE) {
		ret = EXIT_OK; /* the reader went away (ptdump | head): quietly done */
		goto out;
	}
	if (err == -PREC_E_NOSYM) {
		cli_err("--symbol %s: no function of that name in the traced code", oo.symbol);
		goto out;
	}
	if (err) {
		cli_err("%s", prec_strerror(err));
		goto out;
	}
	ret = EXIT_OK;
	goto out;
oom:
	cli_err("out of memory");
out:
	prec_session_free(s);
	prec_tfile_reader_free(r);
	return ret;
}
