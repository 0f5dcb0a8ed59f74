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
#include "perfdata.h"
#include "perfexport.h"
#include "rawpt.h"
#include "snapshot.h"
#include "output.h"
#include "packets.h"
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
"      --packets           every Intel PT packet with its offset and payload\n"
"      --stats             file and decode statistics per stream\n"
"      --info              header, machine, events, sizes\n"
"      --sideband          every sideband record and trigger sample, in time order\n"
"      --ranges            executed instruction ranges (CoreSight traces), in the\n"
"                          layout of OpenCSD's trc_pkt_lister\n\n"
"inputs (recognised by content): a ptrec trace file, a perf.data file (also\n"
"perf's pipe format: - reads standard input), or a CoreSight snapshot directory\n"
"(snapshot.ini; or name it with --snapshot DIR)\n\n"
"raw Intel PT:\n"
"      --pt RAW            decode a raw Intel PT buffer written by another tool, with:\n"
"      --elf FILE[@BASE]   an ELF file's loadable segments (at BASE, else their addresses)\n"
"      --image FILE[:OFFSET]@ADDR  raw bytes of FILE from OFFSET at ADDR\n"
"      --cpu FAMILY/MODEL[/STEPPING]  the CPU that wrote it (errata)\n"
"      --mtc-freq N, --nom-freq N, --cpuid-0x15.eax N, --cpuid-0x15.ebx N\n\n"
"conversions:\n"
"      --to-perf-data OUT  write perf.data that 'perf script' decodes (with a\n"
"                          build-id cache for --symfs in OUT.debug)\n"
"      --to-raw DIR        one .pt file per stream, the code images and a manifest\n"
"                          with libipt tool options\n\n"
"filters:\n"
"      --pid PID, --tid TID, --cpu CPU\n"
"      --time START,END    perf time in seconds (either side may be empty)\n"
"      --symbol NAME       only what runs under function NAME\n\n"
"other:\n"
"      --srcline           add file:line (DWARF) to the instruction trace\n"
"      --symfs DIR         look up binaries under DIR\n"
"      --buildid-dir DIR   perf's build-id cache for perf.data input (default ~/.debug)\n"
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

/* --to-perf-data / --to-raw: conversions of a ptrec file. */
static int convert(const char *input, const char *to_perf, const char *to_raw, bool quiet)
{
	struct prec_diag d = { 0 };
	int err;

	if (to_perf) {
		struct prec_perf_export_opts eo = { 0 };
		struct prec_perf_export_report er;
		uint32_t k;

		err = prec_perf_export(input, to_perf, &eo, &er, &d);
		if (err) {
			cli_err("%s: %s", input, d.msg[0] ? d.msg : prec_strerror(err));
			if (d.hint[0])
				fprintf(stderr, "  hint: %s\n", d.hint);
			return EXIT_FAIL;
		}
		if (!quiet) {
			for (k = 0; k < er.nnotes && k < PREC_PERF_EXPORT_NOTES; k++)
				cli_note("%s", er.notes[k]);
			fprintf(stderr, "[ ptdump: wrote %s: %u streams, %llu trace bytes; decode with: "
					"perf script -i %s%s%s --call-trace ]\n", to_perf, er.streams,
				(unsigned long long)er.aux_bytes, to_perf,
				er.symfs_dir[0] ? " --symfs " : "", er.symfs_dir);
		}
	}
	if (to_raw) {
		err = prec_rawpt_export(input, to_raw, &d);
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

int main(int argc, char **argv)
{
	enum {
		O_CALL = 256, O_CALLRET, O_INSN, O_BRANCHES, O_EVENTS, O_STATS, O_INFO,
		O_SIDEBAND, O_RANGES, O_PACKETS, O_PID, O_TID, O_CPU, O_TIME, O_SYMBOL, O_SRCLINE, O_SYMFS,
		O_SNAPSHOT, O_PT, O_ELF, O_IMAGE, O_MTC, O_NOM, O_C15A, O_C15B, O_TOPERF, O_TORAW,
		O_BUILDID,
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
		{ "packets", no_argument, NULL, O_PACKETS },
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
	bool quiet = false, snapshot = false, cpu_ident = false, raw_param = false, perfdata = false;
	struct prec_perfdata_report prep;
	struct prec_rawpt_opts ro;
	struct prec_rawpt_image *imgs = NULL;
	size_t nimgs = 0;
	struct prec_perfdata_opts po = { 0 };
	const char *to_perf = NULL, *to_raw = NULL;
	struct stat st;

	cli_prog = "ptdump";
	signal(SIGPIPE, SIG_IGN);
	prec_output_opts_init(&oo);
	prec_rawpt_opts_init(&ro);
	while ((c = getopt_long(argc, argv, "i:qvh", opts, NULL)) != -1) {
		uint64_t v;

		switch (c) {
		case O_CALL: case O_CALLRET: case O_INSN: case O_BRANCHES: case O_EVENTS:
		case O_STATS: case O_INFO: case O_SIDEBAND: case O_RANGES: case O_PACKETS:
			if (view && mode != c)
				return cli_usage_error(NULL, "choose one view: %s and %s both given",
						       view, argv[optind - 1]);
			mode = c;
			view = argv[optind - 1];
			break;
		case O_CPU:
			if (strchr(optarg, '/')) {
				if (prec_rawpt_parse_cpu(optarg, &ro, &d)) {
					cli_diag("--cpu", optarg, &d);
					return EXIT_USAGE;
				}
				cpu_ident = true;
				break;
			}
			/* fall through */
		case O_PID: case O_TID:
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
		case O_PT:
			if (input)
				return cli_usage_error(NULL, "one input at a time");
			input = optarg;
			ro.pt_path = optarg;
			break;
		case O_ELF: case O_IMAGE: {
			struct prec_rawpt_image *n = realloc(imgs, (nimgs + 1) * sizeof(*imgs));

			if (!n)
				goto oom;
			imgs = n;
			if (prec_rawpt_parse_image(optarg, c == O_ELF, &imgs[nimgs], &d)) {
				cli_diag(c == O_ELF ? "--elf" : "--image", optarg, &d);
				ret = EXIT_USAGE;
				goto out;
			}
			nimgs++;
			break;
		}
		case O_MTC: case O_NOM: case O_C15A: case O_C15B:
			if (prec_parse_u64(optarg, 0, &v) || v > UINT32_MAX ||
			    ((c == O_MTC || c == O_NOM) && v > 255))
				return cli_usage_error(NULL, "%s takes a number; got '%s'",
						       argv[optind - 2], optarg);
			if (c == O_MTC)
				ro.mtc_freq = (int)v;
			else if (c == O_NOM)
				ro.nom_freq = (int)v;
			else if (c == O_C15A)
				ro.cpuid_15_eax = (uint32_t)v;
			else
				ro.cpuid_15_ebx = (uint32_t)v;
			raw_param = true;
			break;
		case O_TOPERF:
			to_perf = optarg;
			break;
		case O_TORAW:
			to_raw = optarg;
			break;
		case O_BUILDID:
			po.buildid_dir = optarg;
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
	if (!ro.pt_path && (nimgs || cpu_ident || raw_param)) {
		ret = cli_usage_error(NULL, "--elf, --image, --cpu F/M, --mtc-freq, --nom-freq and "
				      "--cpuid-0x15.* describe a raw trace: give it with --pt RAW");
		goto out;
	}
	if (to_perf || to_raw) {
		ret = convert(input, to_perf, to_raw, quiet);
		goto out;
	}

	memset(&rep, 0, sizeof(rep));
	if (!snapshot && !ro.pt_path && stat(input, &st) == 0 && S_ISDIR(st.st_mode) &&
	    prec_perfdata_probe_path(input) != PREC_PERFDATA_DIR) {
		if (!prec_snapshot_probe(input)) {
			cli_err("%s is a directory, but neither a CoreSight snapshot (no snapshot.ini) "
				"nor a perf.data directory", input);
			ret = EXIT_FAIL;
			goto out;
		}
		snapshot = true;
	}
	s = prec_session_new();
	if (!s)
		goto oom;
	if (symfs && prec_session_set_symfs(s, symfs))
		goto oom;
	if (ro.pt_path) {
		ro.images = imgs;
		ro.nimages = nimgs;
		if (mode == O_INFO) {
			ret = cli_usage_error(NULL, "--info describes trace files; a raw trace has no metadata");
			goto out;
		}
		err = prec_rawpt_load(s, &ro, &d);
		if (err) {
			cli_err("%s: %s", input, d.msg[0] ? d.msg : prec_strerror(err));
			if (d.hint[0])
				fprintf(stderr, "  hint: %s\n", d.hint);
			goto out;
		}
	} else if (!snapshot && (!strcmp(input, "-") || prec_perfdata_probe_path(input) > 0)) {

		if (mode == O_INFO) {
			struct prec_buf b = { 0 };

			err = prec_perfdata_describe(input, &po, &b, &d);
			if (!err)
				fputs(b.data ? b.data : "", stdout);
			prec_buf_free(&b);
			if (err) {
				cli_err("%s: %s", input, d.msg[0] ? d.msg : prec_strerror(err));
				goto out;
			}
			ret = EXIT_OK;
			goto out;
		}
		perfdata = true;
		err = prec_perfdata_load(s, input, &po, &prep, &d);
		if (err) {
			cli_err("%s: %s", input, d.msg[0] ? d.msg : prec_strerror(err));
			if (d.hint[0])
				fprintf(stderr, "  hint: %s\n", d.hint);
			goto out;
		}
		if (!quiet) {
			for (unsigned k = 0; k < prep.nnotes && k < PREC_PERFDATA_MAX_NOTES; k++)
				cli_note("%s", prep.notes[k]);
			if (prep.cut_short)
				cli_warn("%s ends early (cut short); decoded what is there", input);
		}
	} else if (snapshot) {
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
	case O_PACKETS:
		err = prec_pt_dump_packets(s, &oo, stdout);
		if (err == -EOPNOTSUPP) {
			cli_err("--packets lists Intel PT packets; for CoreSight use --ranges, or "
				"trc_pkt_lister on a snapshot");
			goto out;
		}
		break;
	case O_STATS:
		if (r) {
			err = ptdump_file_stats(r, stdout);
		} else if (perfdata) {
			struct prec_buf b = { 0 };

			err = prec_perfdata_file_stats(s, &prep, &b);
			if (!err && b.data)
				fputs(b.data, stdout);
			prec_buf_free(&b);
		}
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
	free(imgs);
	return ret;
}
