// SPDX-License-Identifier: MIT
/*
 * perf.data export and raw PT in/out.
 *
 * The unit cases build ptrec files with the trace-file writer, export them
 * and read the perf.data back with a reader written here from the format
 * description (header, attrs and ids, AUXTRACE_INFO priv[], AUXTRACE
 * records, sideband order, feature sections, the build-id cache), so each
 * field is checked against what went in. The raw import is checked on a
 * packet stream made with libipt's encoder over code bytes written here.
 *
 * The binary also has driver modes for tests/cli/perfexport.sh and
 * rawpt.sh, standing in for ptdump's options until the CLI has them:
 *   test_perfexport --export IN OUT [SYMFS_DIR]
 *   test_perfexport --to-raw IN DIR
 *   test_perfexport --from-raw VIEW [--pt F] [--elf F[@B]] [--image F[:O[:S]]@A]
 *                   [--cpu F/M[/S]] [--mtc-freq N] [--nom-freq N]
 *                   [--cpuid-0x15.eax N] [--cpuid-0x15.ebx N]
 *   (VIEW: call-trace, call-ret-trace, branches, insn-trace)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <intel-pt.h>
#include <linux/perf_event.h>

#include "harness.h"
#include "output/output.h"
#include "base/perf_format.h"
#include "interop/perfexport.h"
#include "interop/rawpt.h"
#include "session/session.h"
#include "tracefile/tfile.h"
#include "base/util.h"

/* ---- driver modes ---- */

static int drv_export(int argc, char **argv)
{
	struct prec_perf_export_opts o = { 0 };
	struct prec_perf_export_report rep;
	struct prec_diag d;
	uint32_t i;
	int err;

	if (argc < 4)
		return 2;
	if (argc > 4)
		o.symfs_dir = argv[4];
	err = prec_perf_export(argv[2], argv[3], &o, &rep, &d);
	if (err) {
		fprintf(stderr, "export: %s\n", d.msg);
		if (d.hint[0])
			fprintf(stderr, "hint: %s\n", d.hint);
		return 1;
	}
	fprintf(stderr,
		"attrs %u streams %u auxtrace %llu bytes %llu sideband %llu dropped %llu "
		"images whole %u code-only %u missing %u no-build-id %u switch %d symfs %s\n",
		rep.attrs, rep.streams, (unsigned long long)rep.aux_records,
		(unsigned long long)rep.aux_bytes, (unsigned long long)rep.sideband_records,
		(unsigned long long)rep.sideband_dropped, rep.images_whole, rep.images_code_only,
		rep.images_missing, rep.images_no_build_id, rep.have_sched_switch, rep.symfs_dir);
	for (i = 0; i < prec_notes_kept(&rep.notes); i++)
		fprintf(stderr, "note: %s\n", rep.notes.text[i]);
	return 0;
}

static int drv_to_raw(int argc, char **argv)
{
	struct prec_diag d;

	if (argc < 4)
		return 2;
	if (prec_rawpt_export(argv[2], argv[3], &d)) {
		fprintf(stderr, "to-raw: %s\n", d.msg);
		return 1;
	}
	return 0;
}

static int drv_from_raw(int argc, char **argv)
{
	static struct prec_rawpt_image imgs[32];
	struct prec_rawpt_opts o;
	struct prec_output_opts oo;
	struct prec_session *s;
	struct prec_diag d;
	size_t ni = 0;
	uint64_t v;
	int i, err = 0;

	if (argc < 3)
		return 2;
	prec_rawpt_opts_init(&o);
	prec_output_opts_init(&oo);
	if (!strcmp(argv[2], "call-trace"))
		oo.fmt = PREC_FMT_CALL_TRACE;
	else if (!strcmp(argv[2], "call-ret-trace"))
		oo.fmt = PREC_FMT_CALL_RET_TRACE;
	else if (!strcmp(argv[2], "branches"))
		oo.fmt = PREC_FMT_BRANCHES;
	else if (!strcmp(argv[2], "insn-trace"))
		oo.fmt = PREC_FMT_INSN_TRACE;
	else
		return 2;
	memset(&d, 0, sizeof(d));
	for (i = 3; i < argc && !err; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!val) {
			fprintf(stderr, "from-raw: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--pt")) {
			o.pt_path = val;
		} else if (!strcmp(a, "--elf") || !strcmp(a, "--image")) {
			if (ni == 32)
				return 2;
			err = prec_rawpt_parse_image(val, !strcmp(a, "--elf"), &imgs[ni++], &d);
		} else if (!strcmp(a, "--cpu")) {
			err = prec_rawpt_parse_cpu(val, &o, &d);
		} else {
			err = prec_parse_u64(val, 0, &v);
			if (err || v > UINT32_MAX) {
				fprintf(stderr, "from-raw: bad number '%s' for %s\n", val, a);
				return 2;
			}
			if (!strcmp(a, "--mtc-freq"))
				o.mtc_freq = (int)v;
			else if (!strcmp(a, "--nom-freq"))
				o.nom_freq = (int)v;
			else if (!strcmp(a, "--cpuid-0x15.eax"))
				o.cpuid_15_eax = (uint32_t)v;
			else if (!strcmp(a, "--cpuid-0x15.ebx"))
				o.cpuid_15_ebx = (uint32_t)v;
			else
				return 2;
		}
	}
	if (err) {
		fprintf(stderr, "from-raw: %s\n", d.msg);
		if (d.hint[0])
			fprintf(stderr, "hint: %s\n", d.hint);
		return 2;
	}
	o.images = imgs;
	o.nimages = ni;
	s = prec_session_new();
	if (!s)
		return 1;
	err = prec_rawpt_load(s, &o, &d);
	if (err) {
		fprintf(stderr, "from-raw: %s\n", d.msg);
		if (d.hint[0])
			fprintf(stderr, "hint: %s\n", d.hint);
		prec_session_free(s);
		return 1;
	}
	err = prec_output_run(s, &oo, stdout);
	for (size_t k = 0; k < prec_session_nr_warnings(s); k++)
		fprintf(stderr, "warning: %s\n", prec_session_warning(s, k));
	prec_session_free(s);
	return err ? 1 : 0;
}

/* ---- a reader for the perf.data written ---- */

struct pdata {
	uint8_t *p;
	size_t n;
	struct perf_file_header h;
};

static bool pd_load(const char *path, struct pdata *pd)
{
	struct stat st;
	int fd = open(path, O_RDONLY);

	memset(pd, 0, sizeof(*pd));
	if (fd < 0 || fstat(fd, &st) || st.st_size < (off_t)sizeof(pd->h)) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	pd->n = (size_t)st.st_size;
	pd->p = malloc(pd->n);
	if (!pd->p || prec_read_full(fd, pd->p, pd->n) != (long)pd->n) {
		close(fd);
		return false;
	}
	close(fd);
	memcpy(&pd->h, pd->p, sizeof(pd->h));
	return true;
}

/* The data record at @off, or NULL past the data section. */
static const struct perf_event_header *pd_rec(const struct pdata *pd, uint64_t off)
{
	const struct perf_event_header *h;

	if (off + sizeof(*h) > pd->h.data.offset + pd->h.data.size)
		return NULL;
	h = (const void *)(pd->p + off);
	if (h->size < sizeof(*h))
		return NULL;
	return h;
}

/* The next record: AUXTRACE records are followed by their trace bytes. */
static uint64_t pd_next(const struct pdata *pd, uint64_t off)
{
	const struct perf_event_header *h = (const void *)(pd->p + off);

	if (h->type == PERF_RECORD_AUXTRACE)
		return off + h->size + ((const struct perf_record_auxtrace *)h)->size;
	return off + h->size;
}

static const struct perf_file_section *pd_feat(const struct pdata *pd, unsigned bit)
{
	const struct perf_file_section *sec =
		(const void *)(pd->p + pd->h.data.offset + pd->h.data.size);
	unsigned i, k = 0;

	if (!(pd->h.adds_features[bit / 64] & (1ull << (bit % 64))))
		return NULL;
	for (i = 0; i < bit; i++)
		if (pd->h.adds_features[i / 64] & (1ull << (i % 64)))
			k++;
	return &sec[k];
}

/* A feature string: u32 length (padded), then the NUL-terminated text. */
static const char *pd_feat_str(const struct pdata *pd, unsigned bit)
{
	const struct perf_file_section *s = pd_feat(pd, bit);
	uint32_t len;

	if (!s || s->size < 4)
		return NULL;
	memcpy(&len, pd->p + s->offset, 4);
	if (len + 4 != s->size || len % 64)
		return NULL;
	return (const char *)pd->p + s->offset + 4;
}

/* ---- making ptrec files ---- */

#define T_PMU 0x7e000001u
#define T_TSC_MASK 0x400ull
#define T_MTC_MASK 0x200ull
#define T_CYC_MASK 0x2ull
#define T_NORET_MASK 0x800ull
#define T_MTC_PERIOD_MASK 0x3c000ull
#define T_ST 0x10086ull /* IDENTIFIER|TID|TIME|CPU */
#define T_ST_SAMPLE 0x10187ull

static const uint64_t T_ETM_REGS[8] = { 0x1, 0x10, 0x28000ea1, 0x4100f403, 0x488000c8,
					  0x0, 0xcc, 0x0 };
static const struct prec_tfile_etm T_ETM[2] = {
	{ .cpu = 0, .kind = 0x40404040u, .nregs = 8, .regs = T_ETM_REGS },
	{ .cpu = 1, .kind = 0x40404040u, .nregs = 8, .regs = T_ETM_REGS },
};

static void fill_machine(struct prec_tfile_machine *m, const char *vendor, uint32_t n_etm)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->arch, sizeof(m->arch), "x86_64");
	snprintf(m->vendor, sizeof(m->vendor), "%s", vendor);
	m->flags = PREC_TFILE_M_CAP_USER_TIME | PREC_TFILE_M_CAP_USER_TIME_ZERO;
	m->family = 6;
	m->model = 94;
	m->stepping = 3;
	m->cpuid_15[0] = 1;
	m->cpuid_15[1] = 40;
	m->cpuid_15[2] = 25000000;
	m->max_nonturbo_ratio = 10;
	m->nominal_freq_hz = 1000000000;
	m->nr_cpus = 2;
	m->page_size = 4096;
	m->time_mult = 1;
	m->pt_pmu_type = T_PMU;
	m->pt_tsc_mask = T_TSC_MASK;
	m->pt_mtc_mask = T_MTC_MASK;
	m->pt_cyc_mask = T_CYC_MASK;
	m->pt_noretcomp_mask = T_NORET_MASK;
	m->pt_mtc_period_mask = T_MTC_PERIOD_MASK;
	m->n_etm = n_etm;
	m->etm = n_etm ? T_ETM : NULL;
}

/* Appends one record with the T_ST trailer (pid, tid, time, cpu, id). */
static void rec(struct prec_buf *b, uint32_t type, uint16_t misc, const void *body, size_t n,
		uint32_t pid, uint32_t tid, uint64_t time, uint64_t id)
{
	struct perf_event_header h = { .type = type, .misc = misc };
	uint32_t pt[2] = { pid, tid }, cpu[2] = { 0, 0 };
	static const uint8_t z[8];
	size_t pad = (8 - n % 8) % 8;

	h.size = (uint16_t)(sizeof(h) + n + pad + 32);
	prec_buf_append(b, &h, sizeof(h));
	prec_buf_append(b, body, n);
	prec_buf_append(b, z, pad);
	prec_buf_append(b, pt, 8);
	prec_buf_append(b, &time, 8);
	prec_buf_append(b, cpu, 8);
	prec_buf_append(b, &id, 8);
}

static void rec_fork(struct prec_buf *b, uint32_t pid, uint32_t tid, uint64_t time)
{
	uint32_t body[4] = { pid, pid, tid, pid };
	uint8_t full[24];

	memcpy(full, body, 16);
	memcpy(full + 16, &time, 8);
	rec(b, PERF_RECORD_FORK, 0, full, sizeof(full), pid, tid, time, 1);
}

static void rec_itrace(struct prec_buf *b, uint32_t pid, uint32_t tid, uint64_t time)
{
	uint32_t body[2] = { pid, tid };

	rec(b, PERF_RECORD_ITRACE_START, 0, body, sizeof(body), pid, tid, time, 1);
}

static const uint8_t T_BID[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6,
				   7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

/*
 * A small recording: two threads of process 100 (the second one's FORK
 * stamped late, as the software tracer does), a sample of a trigger event,
 * an event-less record that perf could not attribute, AUX bytes in three
 * pieces with a gap, and one embedded image with a build id.
 */
static void make_ptrec(const char *path, const char *vendor, uint32_t n_etm, bool emulated)
{
	struct prec_tfile_wopts wo;
	struct prec_tfile_writer *w = NULL;
	struct prec_tfile_machine m;
	struct prec_tfile_event ev[3];
	uint64_t id_pt = 1, id_trig = 2;
	struct prec_buf sb = { 0 };
	uint8_t aux[300], code[64];
	const char *argv[] = { "ptrec", "record", "--emulate", "x" };
	struct prec_tfile_info info = { .hostname = "testhost", .kernel_release = "6.18.0-test",
					.cmdline_argc = 4, .cmdline_argv = argv };
	struct prec_tfile_image img = { .path = "/nonexistent/libtest.so", .build_id_size = 20,
					.file_offset = 0x1000, .size = sizeof(code),
					.vaddr = 0x7f0000001000 };
	size_t i;

	prec_tfile_wopts_init(&wo);
	wo.file_flags = emulated ? PREC_TFILE_F_EMULATED : 0;
	T_EQ_INT(prec_tfile_writer_new(path, &wo, &w), 0);
	if (!w)
		return;
	fill_machine(&m, vendor, n_etm);
	memset(ev, 0, sizeof(ev));
	ev[0].name = "pt//u";
	ev[0].pmu = "intel_pt";
	ev[0].attr.type = T_PMU;
	ev[0].attr.size = PREC_ATTR_SIZE;
	ev[0].attr.config = 0x300e601;
	ev[0].attr.sample_type = T_ST;
	ev[0].attr.sample_id_all = 1;
	ev[0].attr.config3 = 5; /* dropped in the 128-byte attr, with a note */
	ev[0].leader = 0;
	ev[0].flags = PREC_TFILE_EV_AUX;
	ev[0].n_ids = 1;
	ev[0].ids = &id_pt;
	ev[1].name = "trig";
	ev[1].pmu = "software";
	ev[1].attr.type = PERF_TYPE_SOFTWARE;
	ev[1].attr.size = PREC_ATTR_SIZE;
	ev[1].attr.sample_type = T_ST_SAMPLE;
	ev[1].attr.sample_id_all = 1;
	ev[1].attr.aux_action = PREC_AUX_RESUME;
	ev[1].leader = 0;
	ev[1].flags = PREC_TFILE_EV_TRIGGER;
	ev[1].n_ids = 1;
	ev[1].ids = &id_trig;
	ev[2].name = "ptrec:tracking";
	ev[2].pmu = "software";
	ev[2].attr.type = PERF_TYPE_SOFTWARE;
	ev[2].attr.config = PERF_COUNT_SW_DUMMY;
	ev[2].attr.size = PREC_ATTR_SIZE;
	ev[2].attr.sample_type = T_ST;
	ev[2].attr.sample_id_all = 1;
	ev[2].attr.mmap2 = 1;
	ev[2].leader = 2;
	ev[2].flags = PREC_TFILE_EV_TRACKING;
	prec_tfile_write_info(w, &info);
	prec_tfile_write_machine(w, &m);
	prec_tfile_write_events(w, ev, 3);

	/* records out of time order on purpose; the exporter sorts them */
	rec_itrace(&sb, 100, 100, 50);
	{
		uint8_t body[8 + 16] = { 0 };
		uint32_t pt[2] = { 100, 100 };

		memcpy(body, pt, 8);
		memcpy(body + 8, "prog", 4);
		rec(&sb, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, body, sizeof(body), 100,
		    100, 10, 1);
	}
	rec_itrace(&sb, 100, 101, 300);
	rec_fork(&sb, 100, 101, 400); /* stamped after the thread's ITRACE_START */
	rec_itrace(&sb, 100, 102, 500);
	rec_fork(&sb, 100, 102, 500); /* same time, but after it */
	{
		/* a trigger sample: id, ip, pid tid, time, cpu, period */
		uint64_t body[5] = { 0x7f0000001010, 0, 250, 0, 1 };
		uint32_t pt[2] = { 100, 100 };
		struct perf_event_header h = { .type = PERF_RECORD_SAMPLE,
					       .misc = PERF_RECORD_MISC_USER, .size = 56 };

		memcpy(&body[1], pt, 8);
		prec_buf_append(&sb, &h, sizeof(h));
		prec_buf_append(&sb, &id_trig, 8);
		prec_buf_append(&sb, body, sizeof(body));
	}
	/* an id no event owns: perf could not parse it */
	rec_itrace(&sb, 100, 100, 60);
	memcpy(sb.data + sb.len - 8, &(uint64_t){ 99 }, 8);
	T_EQ_INT(prec_tfile_write_sideband(w, -1, sb.data, sb.len), 0);

	for (i = 0; i < sizeof(aux); i++)
		aux[i] = (uint8_t)(i * 7 + 1);
	T_EQ_INT(prec_tfile_write_aux(w, -1, 100, 0, aux, 100), 0);
	T_EQ_INT(prec_tfile_write_aux(w, -1, 100, 100, aux + 100, 50), 0);
	T_EQ_INT(prec_tfile_write_aux(w, -1, 100, 200, aux + 200, 13), 0); /* 50 bytes lost */
	T_EQ_INT(prec_tfile_write_aux(w, -1, 101, 0, aux, 16), 0);
	for (i = 0; i < sizeof(code); i++)
		code[i] = (uint8_t)(0x90 + i);
	memcpy(img.build_id, T_BID, 20);
	T_EQ_INT(prec_tfile_write_image(w, &img, code), 1);
	T_EQ_INT(prec_tfile_writer_close(w, NULL), 0);
	prec_tfile_writer_free(w);
	prec_buf_free(&sb);
}

/* ---- cases ---- */

static void export_layout(void)
{
	char in[600], out[600], cache[700];
	struct prec_perf_export_report rep;
	struct prec_diag d;
	struct pdata pd;
	const struct perf_event_header *h;
	const struct perf_file_section *fs;
	uint64_t off, last_time = 0, aux_bytes = 0, stream100 = 0;
	unsigned n_aux = 0, n_sb = 0, i, pos = 0;
	unsigned fork_pos[2] = { 0, 0 }, itrace_pos[2] = { 0, 0 };
	bool sorted = true;

	snprintf(in, sizeof(in), "%s/in.ptrec", t_tmpdir());
	snprintf(out, sizeof(out), "%s/out.data", t_tmpdir());
	make_ptrec(in, "GenuineIntel", 0, true);
	T_EQ_INT(prec_perf_export(in, out, NULL, &rep, &d), 0);
	T_EQ_INT(rep.attrs, 3);
	T_EQ_INT(rep.streams, 2);
	T_EQ_U64(rep.aux_bytes, 100 + 50 + 13 + 16);
	T_EQ_U64(rep.aux_missing, 50);
	T_EQ_U64(rep.sideband_dropped, 1);
	T_EQ_U64(rep.sideband_records, 7);
	T_EQ_INT(rep.images_code_only, 1);
	T_EQ_INT(rep.have_sched_switch, 0);
	T_OK(pd_load(out, &pd));
	if (!pd.p)
		return;
	T_OK(!memcmp(pd.h.magic, "PERFILE2", 8));
	T_EQ_U64(pd.h.size, sizeof(struct perf_file_header));
	T_EQ_U64(pd.h.attr_size, 128 + 16);
	T_EQ_U64(pd.h.attrs.size, 3 * (128 + 16));
	T_OK(pd.h.data.offset + pd.h.data.size <= pd.n);
	/* attrs: size 128, the recorded type, ids in their sections */
	for (i = 0; i < 3; i++) {
		const uint8_t *a = pd.p + pd.h.attrs.offset + i * 144;
		struct perf_file_section ids;
		uint32_t type, size;
		uint64_t st, id;

		memcpy(&type, a, 4);
		memcpy(&size, a + 4, 4);
		memcpy(&st, a + 24, 8);
		memcpy(&ids, a + 128, sizeof(ids));
		T_EQ_INT(size, 128);
		T_EQ_U64(type, i == 0 ? T_PMU : PERF_TYPE_SOFTWARE);
		/* IP added where the event never samples; the sampling one keeps its own */
		T_EQ_U64(st, i == 1 ? T_ST_SAMPLE : T_ST | PERF_SAMPLE_IP);
		T_EQ_U64(ids.size, i == 2 ? 0 : 8);
		if (ids.size == 8) {
			memcpy(&id, pd.p + ids.offset, 8);
			T_EQ_U64(id, i + 1);
		}
	}
	/* the records */
	off = pd.h.data.offset;
	h = pd_rec(&pd, off);
	T_OK(h && h->type == PERF_RECORD_AUXTRACE_INFO);
	if (h && h->type == PERF_RECORD_AUXTRACE_INFO) {
		const struct perf_record_auxtrace_info *ai = (const void *)h;

		T_EQ_INT(h->size, 16 + 17 * 8);
		T_EQ_INT(ai->type, PERF_AUXTRACE_INTEL_PT);
		T_EQ_U64(ai->priv[INTEL_PT_PMU_TYPE], T_PMU);
		T_EQ_U64(ai->priv[INTEL_PT_TIME_MULT], 1);
		T_EQ_U64(ai->priv[INTEL_PT_TIME_SHIFT], 0);
		/* emulated: TSC bits 56+ come from the reference, time_zero takes them away */
		T_EQ_U64(ai->priv[INTEL_PT_TIME_ZERO], (uint64_t)0 - (1ull << 56));
		T_EQ_U64(ai->priv[INTEL_PT_CAP_USER_TIME_ZERO], 1);
		T_EQ_U64(ai->priv[INTEL_PT_TSC_BIT], T_TSC_MASK);
		T_EQ_U64(ai->priv[INTEL_PT_NORETCOMP_BIT], T_NORET_MASK);
		T_EQ_U64(ai->priv[INTEL_PT_MTC_BIT], T_MTC_MASK);
		T_EQ_U64(ai->priv[INTEL_PT_MTC_FREQ_BITS], T_MTC_PERIOD_MASK);
		T_EQ_U64(ai->priv[INTEL_PT_CYC_BIT], T_CYC_MASK);
		T_EQ_U64(ai->priv[INTEL_PT_TSC_CTC_N], 40);
		T_EQ_U64(ai->priv[INTEL_PT_TSC_CTC_D], 1);
		T_EQ_U64(ai->priv[INTEL_PT_MAX_NONTURBO_RATIO], 10);
		T_EQ_U64(ai->priv[INTEL_PT_PER_CPU_MMAPS], 0);
		T_EQ_U64(ai->priv[INTEL_PT_HAVE_SCHED_SWITCH], 0);
		T_EQ_U64(ai->priv[INTEL_PT_FILTER_STR_LEN], 0);
	}
	for (; (h = pd_rec(&pd, off)) != NULL; off = pd_next(&pd, off)) {
		if (h->type == PERF_RECORD_AUXTRACE) {
			const struct perf_record_auxtrace *ar = (const void *)h;
			const uint8_t *bytes = (const uint8_t *)h + h->size;
			uint64_t k, real;
			bool same = true;

			n_aux++;
			T_EQ_INT(ar->size % 8, 0);
			T_EQ_U64(ar->reference, 1ull << 56);
			T_EQ_INT((int32_t)ar->cpu, -1);
			T_OK(ar->tid == 100 || ar->tid == 101);
			/* the bytes are the stream's, at their stream offsets, then zeros */
			real = ar->tid == 101 ? 16 : ar->offset == 0 ? 150 : 13;
			for (k = 0; k < ar->size; k++)
				same &= bytes[k] == (k < real ? (uint8_t)((ar->offset + k) * 7 + 1) : 0);
			T_OK(same);
			if (ar->tid == 100)
				stream100 += ar->size;
			aux_bytes += ar->size;
		} else if (h->type < 64) {
			struct perf_event_header hh = *h;
			uint64_t t;

			n_sb++;
			pos++;
			memcpy(&t, (const uint8_t *)h + (hh.type == PERF_RECORD_SAMPLE ? 32 : hh.size - 24),
			       8);
			if (t < last_time)
				sorted = false;
			last_time = t;
			if (hh.type == PERF_RECORD_FORK) {
				uint32_t tid = ((const uint32_t *)(h + 1))[2];

				if (tid == 101 || tid == 102)
					fork_pos[tid - 101] = pos;
			}
			if (hh.type == PERF_RECORD_ITRACE_START) {
				uint32_t tid = ((const uint32_t *)(h + 1))[1];

				if (tid == 101 || tid == 102)
					itrace_pos[tid - 101] = pos;
			}
		}
	}
	T_EQ_INT(n_sb, 7);
	T_OK(sorted);
	/* the late FORKs now come right before the new threads' first records */
	for (i = 0; i < 2; i++)
		T_OK(fork_pos[i] && itrace_pos[i] && fork_pos[i] + 1 == itrace_pos[i]);
	T_EQ_U64(n_aux, rep.aux_records);
	T_EQ_U64(stream100, 152 + 16); /* 150 (multiple of 8 after padding: 152), 13 -> 16 */
	/* features */
	T_EQ_STR(pd_feat_str(&pd, PERF_HEADER_HOSTNAME), "testhost");
	T_EQ_STR(pd_feat_str(&pd, PERF_HEADER_OSRELEASE), "6.18.0-test");
	T_EQ_STR(pd_feat_str(&pd, PERF_HEADER_ARCH), "x86_64");
	T_EQ_STR(pd_feat_str(&pd, PERF_HEADER_CPUID), "GenuineIntel,6,94,3");
	fs = pd_feat(&pd, PERF_HEADER_NRCPUS);
	T_OK(fs && fs->size == 8);
	fs = pd_feat(&pd, PERF_HEADER_BUILD_ID);
	T_OK(fs && fs->size > 36);
	if (fs && fs->size > 36) {
		const uint8_t *b = pd.p + fs->offset;
		struct perf_event_header bh;

		memcpy(&bh, b, sizeof(bh));
		T_EQ_INT(bh.type, PERF_RECORD_HEADER_BUILD_ID);
		T_EQ_U64(bh.size, fs->size);
		T_OK(!memcmp(b + 12, T_BID, 20));
		T_EQ_INT(b[32], 20);
		T_EQ_STR((const char *)b + 36, "/nonexistent/libtest.so");
	}
	fs = pd_feat(&pd, PERF_HEADER_AUXTRACE);
	T_OK(fs && fs->size == 8 + 16ull * n_aux);
	if (fs && fs->size >= 24) {
		uint64_t ent[3];

		memcpy(ent, pd.p + fs->offset, 24);
		T_EQ_U64(ent[0], n_aux);
		h = pd_rec(&pd, ent[1]);
		T_OK(h && h->type == PERF_RECORD_AUXTRACE);
		T_EQ_U64(ent[2], 48);
	}
	fs = pd_feat(&pd, PERF_HEADER_EVENT_DESC);
	T_OK(fs && fs->size > 8);
	if (fs && fs->size > 8) {
		uint32_t hd[2];

		memcpy(hd, pd.p + fs->offset, 8);
		T_EQ_INT(hd[0], 3);
		T_EQ_INT(hd[1], 128);
	}
	/* the cache: .build-id link to <path>/<id>/elf holding the code at its offset */
	snprintf(cache, sizeof(cache),
		 "%s.debug/.debug/.build-id/de/adbeef0102030405060708090a0b0c0d0e0f10/elf", out);
	{
		uint8_t buf[64];
		int fd = open(cache, O_RDONLY);

		T_OK(fd >= 0);
		if (fd >= 0) {
			T_EQ_INT(pread(fd, buf, sizeof(buf), 0x1000), 64);
			T_EQ_INT(buf[0], 0x90);
			T_EQ_INT(buf[63], 0x90 + 63);
			close(fd);
		}
	}
	/* notes: config3 dropped, gap, code-only image */
	T_OK(rep.notes.n >= 3);
	free(pd.p);
}

static void export_hardware_time(void)
{
	char in[600], out[600];
	struct prec_perf_export_report rep;
	struct pdata pd;

	snprintf(in, sizeof(in), "%s/hw.ptrec", t_tmpdir());
	snprintf(out, sizeof(out), "%s/hw.data", t_tmpdir());
	make_ptrec(in, "GenuineIntel", 0, false);
	T_EQ_INT(prec_perf_export(in, out, NULL, &rep, NULL), 0);
	T_OK(pd_load(out, &pd));
	if (!pd.p)
		return;
	{
		const struct perf_record_auxtrace_info *ai = (const void *)(pd.p + pd.h.data.offset);

		/* a hardware file keeps its conversion as recorded */
		T_EQ_U64(ai->priv[INTEL_PT_TIME_ZERO], 0);
	}
	free(pd.p);
}

static void export_errors(void)
{
	char in[600], out[600], bad[600];
	struct prec_diag d;
	struct prec_perf_export_opts o = { .no_buildid_cache = true };
	int fd;

	snprintf(in, sizeof(in), "%s/cs.ptrec", t_tmpdir());
	snprintf(out, sizeof(out), "%s/o.data", t_tmpdir());
	make_ptrec(in, "ARM", 2, false);
	T_EQ_INT(prec_perf_export(in, out, &o, NULL, &d), -ENOTSUP);
	T_CONTAINS(d.msg, "not an Intel PT recording");
	T_OK(access(out, F_OK) != 0);

	T_EQ_INT(prec_perf_export("/nonexistent/x.ptrec", out, &o, NULL, &d), -ENOENT);
	T_OK(d.msg[0] != 0);

	snprintf(bad, sizeof(bad), "%s/bad.ptrec", t_tmpdir());
	fd = open(bad, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	T_OK(fd >= 0);
	T_EQ_INT(write(fd, "this is not a trace file at all\n", 32), 32);
	close(fd);
	T_EQ_INT(prec_perf_export(bad, out, &o, NULL, &d), -PREC_E_FORMAT);
	T_OK(access(out, F_OK) != 0);

	make_ptrec(in, "GenuineIntel", 0, true);
	T_OK(prec_perf_export(in, "/nonexistent/dir/o.data", &o, NULL, &d) < 0);
	T_CONTAINS(d.msg, "/nonexistent/dir/o.data");
	T_EQ_INT(prec_perf_export(NULL, out, &o, NULL, &d), -EINVAL);
}

/* Every truncation of a valid file either exports or fails cleanly. */
static void export_truncated(void)
{
	char in[600], cut[600], out[600];
	struct prec_perf_export_opts o = { .no_buildid_cache = true };
	struct stat st;
	uint8_t *buf;
	long n;
	int fd, ok = 0, failed = 0;

	snprintf(in, sizeof(in), "%s/t.ptrec", t_tmpdir());
	snprintf(cut, sizeof(cut), "%s/cut.ptrec", t_tmpdir());
	snprintf(out, sizeof(out), "%s/cut.data", t_tmpdir());
	make_ptrec(in, "GenuineIntel", 0, true);
	T_OK(stat(in, &st) == 0);
	buf = malloc((size_t)st.st_size);
	fd = open(in, O_RDONLY);
	n = prec_read_full(fd, buf, (size_t)st.st_size);
	close(fd);
	T_EQ_INT(n, st.st_size);
	for (long len = 0; len < n; len += 37) {
		int err;

		fd = open(cut, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		T_EQ_INT(write(fd, buf, (size_t)len), len);
		close(fd);
		err = prec_perf_export(cut, out, &o, NULL, NULL);
		if (err)
			failed++;
		else
			ok++;
		T_OK(err == 0 || err == -PREC_E_FORMAT || err == -PREC_E_TRUNCATED);
	}
	T_OK(ok > 0 && failed > 0);
	free(buf);
}

static void parse_image_rows(void)
{
	static const struct {
		const char *arg;
		bool elf;
		int err;
		const char *path;
		bool has_addr;
		uint64_t addr, offset, size;
	} rows[] = {
		{ "a.out", true, 0, "a.out", false, 0, 0, 0 },
		{ "a.out@0x400000", true, 0, "a.out", true, 0x400000, 0, 0 },
		{ "lib@v2.so", true, 0, "lib@v2.so", false, 0, 0, 0 },
		{ "lib@v2.so@4096", true, 0, "lib@v2.so", true, 4096, 0, 0 },
		{ "code.bin@0x1000", false, 0, "code.bin", true, 0x1000, 0, 0 },
		{ "code.bin:0x20@0x1000", false, 0, "code.bin", true, 0x1000, 0x20, 0 },
		{ "c:d.bin:16@0x1000", false, 0, "c:d.bin", true, 0x1000, 16, 0 },
		{ "c:d.bin@0x1000", false, 0, "c:d.bin", true, 0x1000, 0, 0 },
		{ "code.bin", false, -PREC_E_SYNTAX, NULL, false, 0, 0, 0 },
		{ "code.bin@zz", false, -PREC_E_SYNTAX, NULL, false, 0, 0, 0 },
		{ "@0x1000", false, -PREC_E_SYNTAX, NULL, false, 0, 0, 0 },
		{ "", true, -PREC_E_SYNTAX, NULL, false, 0, 0, 0 },
		{ "x@0x1000000000000000000", false, -PREC_E_SYNTAX, NULL, false, 0, 0, 0 },
		{ "dump:0x1000:0x200@0x400000", false, 0, "dump", true, 0x400000, 0x1000, 0x200 },
		{ "dump:0:16@0x10", false, 0, "dump", true, 0x10, 0, 16 },
		{ "c:d:8:4@0x10", false, 0, "c:d", true, 0x10, 8, 4 },
		{ "dump:0x10:0@0x10", false, -PREC_E_SYNTAX, NULL, false, 0, 0, 0 },
	};
	size_t i;

	for (i = 0; i < T_N(rows); i++) {
		struct prec_rawpt_image img;
		struct prec_diag d;
		int err = prec_rawpt_parse_image(rows[i].arg, rows[i].elf, &img, &d);

		T_EQ_INT(err, rows[i].err);
		if (!err) {
			T_EQ_STR(img.path, rows[i].path);
			T_EQ_INT(img.has_addr, rows[i].has_addr);
			T_EQ_U64(img.addr, rows[i].addr);
			T_EQ_U64(img.offset, rows[i].offset);
			T_EQ_U64(img.size, rows[i].size);
			T_EQ_INT(img.elf, rows[i].elf);
		} else {
			T_OK(d.msg[0] != 0);
		}
		t_row(rows[i].arg, true);
	}
}

static void parse_cpu_rows(void)
{
	static const struct {
		const char *arg;
		int err;
		unsigned f, m, s;
	} rows[] = {
		{ "6/94/3", 0, 6, 94, 3 }, { "6/94", 0, 6, 94, 0 }, { "0x6/0x5e/0", 0, 6, 94, 0 },
		{ "6", -PREC_E_SYNTAX, 0, 0, 0 }, { "6/94/3/1", -PREC_E_SYNTAX, 0, 0, 0 },
		{ "6/x", -PREC_E_SYNTAX, 0, 0, 0 }, { "6/300", -PREC_E_SYNTAX, 0, 0, 0 },
		{ "", -PREC_E_SYNTAX, 0, 0, 0 }, { "6//3", -PREC_E_SYNTAX, 0, 0, 0 },
	};
	size_t i;

	for (i = 0; i < T_N(rows); i++) {
		struct prec_rawpt_opts o;
		struct prec_diag d;
		int err;

		prec_rawpt_opts_init(&o);
		err = prec_rawpt_parse_cpu(rows[i].arg, &o, &d);
		T_EQ_INT(err, rows[i].err);
		if (!err) {
			T_EQ_INT(o.family, rows[i].f);
			T_EQ_INT(o.model, rows[i].m);
			T_EQ_INT(o.stepping, rows[i].s);
		}
		t_row(rows[i].arg, true);
	}
}

/*
 * Code at 0x400000:  call 0x400007 ; (0x400005) syscall ; (0x400007) ret
 * Trace: PSB, PSBEND, MODE.Exec 64, TIP.PGE 0x400000, TNT(1) for the
 * compressed ret, TIP.PGD (suppressed) at the syscall.
 */
static const uint8_t T_CODE[] = { 0xe8, 0x02, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xc3 };

static size_t make_pt_at(uint8_t *buf, size_t size, uint64_t addr)
{
	struct pt_config cfg;
	struct pt_encoder *e;
	struct pt_packet p[6];
	size_t i;
	int n;

	memset(&cfg, 0, sizeof(cfg));
	cfg.size = sizeof(cfg);
	cfg.begin = buf;
	cfg.end = buf + size;
	e = pt_alloc_encoder(&cfg);
	if (!e)
		return 0;
	memset(p, 0, sizeof(p));
	p[0].type = ppt_psb;
	p[1].type = ppt_psbend;
	p[2].type = ppt_mode;
	p[2].payload.mode.leaf = pt_mol_exec;
	p[2].payload.mode.bits.exec.csl = 1;
	p[3].type = ppt_tip_pge;
	p[3].payload.ip.ipc = pt_ipc_sext_48;
	p[3].payload.ip.ip = addr;
	p[4].type = ppt_tnt_8;
	p[4].payload.tnt.bit_size = 1;
	p[4].payload.tnt.payload = 1;
	p[5].type = ppt_tip_pgd;
	p[5].payload.ip.ipc = pt_ipc_suppressed;
	for (i = 0; i < T_N(p); i++) {
		n = pt_enc_next(e, &p[i]);
		if (n < 0) {
			pt_free_encoder(e);
			return 0;
		}
	}
	{
		uint64_t off = 0;

		n = pt_enc_get_offset(e, &off);
		pt_free_encoder(e);
		return n < 0 ? 0 : (size_t)off;
	}
}

static size_t make_pt(uint8_t *buf, size_t size)
{
	return make_pt_at(buf, size, 0x400000);
}

static void write_bytes(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	T_OK(fd >= 0);
	T_EQ_INT(write(fd, p, n), (long)n);
	close(fd);
}

/* Runs one view into a string with every run of blanks squeezed to one space. */
static char *run_view(struct prec_session *s, enum prec_fmt fmt)
{
	struct prec_output_opts oo;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	prec_output_opts_init(&oo);
	oo.fmt = fmt;
	T_EQ_INT(prec_output_run(s, &oo, f), 0);
	fclose(f);
	if (text) {
		char *r = text, *w = text;

		for (; *r; r++)
			if (!((*r == ' ' || *r == '\t') && w > text && (w[-1] == ' ')))
				*w++ = *r == '\t' ? ' ' : *r;
		*w = 0;
	}
	return text;
}

static void raw_load_image(void)
{
	char ptf[600], code[600];
	uint8_t pt[256];
	size_t n = make_pt(pt, sizeof(pt));
	struct prec_rawpt_image img;
	struct prec_rawpt_opts o;
	struct prec_session *s = prec_session_new();
	struct prec_diag d;
	const struct prec_stream *st;
	char *text;
	uint8_t padded[16 + sizeof(T_CODE)];

	T_OK(n > 16);
	snprintf(ptf, sizeof(ptf), "%s/t.pt", t_tmpdir());
	snprintf(code, sizeof(code), "%s/code.bin", t_tmpdir());
	write_bytes(ptf, pt, n);
	/* the code starts 16 bytes into the file: --image code.bin:16@0x400000 */
	memset(padded, 0xcc, 16);
	memcpy(padded + 16, T_CODE, sizeof(T_CODE));
	write_bytes(code, padded, sizeof(padded));
	prec_rawpt_opts_init(&o);
	o.pt_path = ptf;
	T_EQ_INT(prec_rawpt_parse_cpu("6/94/3", &o, &d), 0);
	{
		char arg[700];

		snprintf(arg, sizeof(arg), "%s:16@0x400000", code);
		T_EQ_INT(prec_rawpt_parse_image(arg, false, &img, &d), 0);
	}
	o.images = &img;
	o.nimages = 1;
	T_EQ_INT(prec_rawpt_load(s, &o, &d), 0);
	T_EQ_INT(prec_session_nr_streams(s), 1);
	st = prec_session_stream(s, 0);
	T_EQ_INT(st->cpu, -1);
	T_EQ_INT(st->tid, 1);
	T_EQ_U64(st->len, n);
	T_EQ_INT(prec_session_pid_of(s, 1, 0), 1);
	text = run_view(s, PREC_FMT_BRANCHES);
	T_OK(text != NULL);
	if (text) {
		T_CONTAINS(text, "tr strt");
		T_CONTAINS(text, ": tr strt 400000 [unknown] (");
		T_CONTAINS(text, ": call 400000 [unknown] (");
		T_CONTAINS(text, "=> 400007 [unknown]");
		T_CONTAINS(text, ": return 400007 [unknown] (");
		T_CONTAINS(text, "=> 400005 [unknown]");
		T_CONTAINS(text, ": syscall 400005 [unknown] (");
		T_CONTAINS(text, ": tr end 400005 [unknown] (");
		T_CONTAINS(text, " rawpt 1 ");
		T_OK(!strstr(text, "error"));
	}
	free(text);
	prec_session_free(s);
}

/*
 * Loads the trace of make_pt_at(@addr) from a raw trace file, with @code as
 * --image at @addr and the CPU @cpu (NULL: none), and returns view @fmt
 * (caller frees).
 */
static char *raw_view_at(uint64_t addr, const uint8_t *code, size_t ncode, const char *cpu,
			 enum prec_fmt fmt)
{
	char ptf[600], codef[600], arg[800];
	uint8_t pt[256];
	size_t n = make_pt_at(pt, sizeof(pt), addr);
	struct prec_rawpt_image img;
	struct prec_rawpt_opts o;
	struct prec_session *s = prec_session_new();
	struct prec_diag d;
	char *text = NULL;
	int err;

	T_OK(n > 16);
	snprintf(ptf, sizeof(ptf), "%s/k.pt", t_tmpdir());
	snprintf(codef, sizeof(codef), "%s/k.bin", t_tmpdir());
	write_bytes(ptf, pt, n);
	write_bytes(codef, code, ncode);
	prec_rawpt_opts_init(&o);
	o.pt_path = ptf;
	if (cpu)
		T_EQ_INT(prec_rawpt_parse_cpu(cpu, &o, &d), 0);
	snprintf(arg, sizeof(arg), "%s@0x%llx", codef, (unsigned long long)addr);
	T_EQ_INT(prec_rawpt_parse_image(arg, false, &img, &d), 0);
	o.images = &img;
	o.nimages = 1;
	err = prec_rawpt_load(s, &o, &d);
	T_EQ_INT(err, 0);
	if (!err)
		text = run_view(s, fmt);
	prec_session_free(s);
	return text ? text : strdup("");
}

/* A raw trace has no privilege split: --image at a kernel address is code like any other. */
static void raw_kernel_image(void)
{
	char *text = raw_view_at(0xffffffff81000000ull, T_CODE, sizeof(T_CODE), "6/94/3",
				 PREC_FMT_BRANCHES);

	T_CONTAINS(text, ": call ffffffff81000000 [unknown] (");
	T_CONTAINS(text, "=> ffffffff81000007 [unknown]");
	T_CONTAINS(text, ": return ffffffff81000007 [unknown] (");
	T_CONTAINS(text, ": syscall ffffffff81000005 [unknown] (");
	T_OK(!strstr(text, "error"));
	free(text);
	text = raw_view_at(0xffffffff81000000ull, T_CODE, sizeof(T_CODE), "6/94/3",
			   PREC_FMT_INSN_TRACE);
	T_OK(!strstr(text, "no code"));
	T_CONTAINS(text, "call");
	T_CONTAINS(text, "syscall");
	free(text);
}

/*
 * --image FILE:OFFSET:SIZE@ADDR maps SIZE bytes: two pieces of one dump
 * side by side, the code in the second, do not overlap.
 */
static void raw_image_pieces(void)
{
	char ptf[600], dump[600], a0[700], a1[700];
	uint8_t pt[256], bytes[0x20 + sizeof(T_CODE)];
	size_t n = make_pt(pt, sizeof(pt));
	struct prec_rawpt_image img[2];
	struct prec_rawpt_opts o;
	struct prec_session *s;
	struct prec_diag d;
	char *text;

	snprintf(ptf, sizeof(ptf), "%s/p.pt", t_tmpdir());
	snprintf(dump, sizeof(dump), "%s/dump.bin", t_tmpdir());
	write_bytes(ptf, pt, n);
	memset(bytes, 0x90, 0x20);
	memcpy(bytes + 0x20, T_CODE, sizeof(T_CODE));
	write_bytes(dump, bytes, sizeof(bytes));
	prec_rawpt_opts_init(&o);
	o.pt_path = ptf;
	/* 0x20 bytes of the dump at 0x3fffe0, right below the code from its offset 0x20 */
	snprintf(a0, sizeof(a0), "%s:0:0x20@0x3fffe0", dump);
	snprintf(a1, sizeof(a1), "%s:0x20:%zu@0x400000", dump, sizeof(T_CODE));
	T_EQ_INT(prec_rawpt_parse_image(a0, false, &img[0], &d), 0);
	T_EQ_INT(prec_rawpt_parse_image(a1, false, &img[1], &d), 0);
	o.images = img;
	o.nimages = 2;
	s = prec_session_new();
	T_EQ_INT(prec_rawpt_load(s, &o, &d), 0);
	text = run_view(s, PREC_FMT_BRANCHES);
	T_OK(text != NULL);
	if (text) {
		T_CONTAINS(text, ": call 400000 [unknown] (");
		T_CONTAINS(text, ": syscall 400005 [unknown] (");
		T_OK(!strstr(text, "error"));
	}
	free(text);
	prec_session_free(s);

	/* a size past the end of the file is refused, naming both */
	snprintf(a1, sizeof(a1), "%s:0x20:0x100@0x400000", dump);
	T_EQ_INT(prec_rawpt_parse_image(a1, false, &img[1], &d), 0);
	s = prec_session_new();
	T_EQ_INT(prec_rawpt_load(s, &o, &d), -EINVAL);
	T_CONTAINS(d.msg, "past the end");
	T_CONTAINS(d.msg, "dump.bin");
	prec_session_free(s);
}

/*
 * A trace that does not fit the code (a TNT where the code has an indirect
 * jump) without --cpu: the error says no CPU was given and which option to
 * add; with --cpu it does not.
 */
static void raw_no_cpu_hint(void)
{
	static const uint8_t jmp[] = { 0xff, 0xe0, 0xc3 }; /* jmp *%rax; ret */
	char *text = raw_view_at(0x400000, jmp, sizeof(jmp), NULL, PREC_FMT_EVENTS);

	T_CONTAINS(text, "trace does not match the code");
	T_CONTAINS(text, "no CPU given");
	T_CONTAINS(text, "--cpu FAMILY/MODEL");
	free(text);
	text = raw_view_at(0x400000, jmp, sizeof(jmp), "6/94/3", PREC_FMT_EVENTS);
	T_CONTAINS(text, "trace does not match the code");
	T_OK(!strstr(text, "--cpu"));
	free(text);
}

static void raw_load_errors(void)
{
	char ptf[600], code[600], arg[700];
	uint8_t pt[256];
	size_t n = make_pt(pt, sizeof(pt));
	struct prec_rawpt_image img[2];
	struct prec_rawpt_opts o;
	struct prec_session *s;
	struct prec_diag d;

	snprintf(ptf, sizeof(ptf), "%s/t.pt", t_tmpdir());
	snprintf(code, sizeof(code), "%s/code.bin", t_tmpdir());
	write_bytes(ptf, pt, n);
	write_bytes(code, T_CODE, sizeof(T_CODE));
	prec_rawpt_opts_init(&o);

	/* no trace file named, and a missing one */
	s = prec_session_new();
	T_EQ_INT(prec_rawpt_load(s, &o, &d), -EINVAL);
	prec_session_free(s);
	s = prec_session_new();
	o.pt_path = "/nonexistent/t.pt";
	T_EQ_INT(prec_rawpt_load(s, &o, &d), -ENOENT);
	T_CONTAINS(d.msg, "/nonexistent/t.pt");
	prec_session_free(s);

	/* --elf on a file that is no ELF file */
	o.pt_path = ptf;
	T_EQ_INT(prec_rawpt_parse_image(code, true, &img[0], &d), 0);
	o.images = img;
	o.nimages = 1;
	s = prec_session_new();
	T_EQ_INT(prec_rawpt_load(s, &o, &d), -PREC_E_FORMAT);
	T_CONTAINS(d.msg, "not an ELF file");
	T_CONTAINS(d.hint, "--image");
	prec_session_free(s);

	/* an offset past the end of the image */
	snprintf(arg, sizeof(arg), "%s:100@0x1000", code);
	T_EQ_INT(prec_rawpt_parse_image(arg, false, &img[0], &d), 0);
	s = prec_session_new();
	T_EQ_INT(prec_rawpt_load(s, &o, &d), -EINVAL);
	T_CONTAINS(d.msg, "past the end");
	prec_session_free(s);

	/* two images over the same addresses */
	snprintf(arg, sizeof(arg), "%s@0x1000", code);
	T_EQ_INT(prec_rawpt_parse_image(arg, false, &img[0], &d), 0);
	snprintf(arg, sizeof(arg), "%s@0x1004", code);
	T_EQ_INT(prec_rawpt_parse_image(arg, false, &img[1], &d), 0);
	o.nimages = 2;
	s = prec_session_new();
	T_EQ_INT(prec_rawpt_load(s, &o, &d), -EINVAL);
	T_CONTAINS(d.msg, "overlaps");
	prec_session_free(s);

	/* an empty trace file */
	write_bytes(ptf, "", 0);
	o.nimages = 1;
	s = prec_session_new();
	T_EQ_INT(prec_rawpt_load(s, &o, &d), -EINVAL);
	T_CONTAINS(d.msg, "empty");
	prec_session_free(s);

	/* garbage as trace: loads, and decoding reports errors without crashing */
	{
		uint8_t junk[4096];
		char *text;

		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)(i * 131 + 7);
		write_bytes(ptf, junk, sizeof(junk));
		s = prec_session_new();
		T_EQ_INT(prec_rawpt_load(s, &o, &d), 0);
		text = run_view(s, PREC_FMT_BRANCHES);
		free(text);
		prec_session_free(s);
	}
}

/* The raw export of a recording, read back with prec_rawpt_load, decodes the same. */
static void raw_roundtrip(void)
{
	char in[600], dir[600], path[700], args[4096];
	struct prec_diag d;
	struct prec_rawpt_image imgs[8];
	struct prec_rawpt_opts o;
	struct prec_session *s;
	FILE *f;
	char *tok, *save = NULL, *text;
	size_t ni = 0;
	uint8_t pt[256], code[600];
	size_t n = make_pt(pt, sizeof(pt));

	/* a recording of the small program: one thread, the code embedded */
	{
		struct prec_tfile_wopts wo;
		struct prec_tfile_writer *w = NULL;
		struct prec_tfile_machine m;
		struct prec_tfile_event ev;
		struct prec_buf sb = { 0 };
		uint64_t id = 1;
		struct prec_tfile_image img = { .path = "/nonexistent/prog", .file_offset = 0x1000,
						.size = sizeof(T_CODE) };
		uint8_t body[72 + 24] = { 0 };
		uint32_t pt2[2] = { 7, 7 };
		uint64_t v[3] = { 0x400000, sizeof(T_CODE), 0x1000 };
		uint32_t prot[2] = { 5, 2 };

		snprintf(in, sizeof(in), "%s/rt.ptrec", t_tmpdir());
		prec_tfile_wopts_init(&wo);
		T_EQ_INT(prec_tfile_writer_new(in, &wo, &w), 0);
		if (!w)
			return;
		fill_machine(&m, "GenuineIntel", 0);
		memset(&ev, 0, sizeof(ev));
		ev.name = "pt//u";
		ev.pmu = "intel_pt";
		ev.attr.type = T_PMU;
		ev.attr.sample_type = T_ST;
		ev.attr.sample_id_all = 1;
		ev.flags = PREC_TFILE_EV_AUX;
		ev.n_ids = 1;
		ev.ids = &id;
		prec_tfile_write_machine(w, &m);
		prec_tfile_write_events(w, &ev, 1);
		memcpy(body, pt2, 8);
		memcpy(body + 8, v, 24);
		memcpy(body + 56, prot, 8);
		memcpy(body + 64, "/nonexistent/prog", 18);
		rec(&sb, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, body, 64 + 24, 7, 7, 1, 1);
		rec_itrace(&sb, 7, 7, 2);
		prec_tfile_write_sideband(w, -1, sb.data, sb.len);
		prec_tfile_write_aux(w, -1, 7, 0, pt, n);
		T_EQ_INT(prec_tfile_write_image(w, &img, T_CODE), 1);
		prec_tfile_writer_close(w, NULL);
		prec_tfile_writer_free(w);
		prec_buf_free(&sb);
	}
	snprintf(dir, sizeof(dir), "%s/raw", t_tmpdir());
	T_EQ_INT(prec_rawpt_export(in, dir, &d), 0);
	snprintf(path, sizeof(path), "%s/tid-7.pt", dir);
	f = fopen(path, "r");
	T_OK(f != NULL);
	if (f) {
		T_EQ_U64(fread(code, 1, sizeof(code), f), n);
		T_OK(!memcmp(code, pt, n));
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/tid-7.ptxed.args", dir);
	f = fopen(path, "r");
	T_OK(f && fgets(args, sizeof(args), f));
	if (f)
		fclose(f);
	T_CONTAINS(args, "--cpu 6/94/3");
	T_CONTAINS(args, "--nom-freq 10");
	T_CONTAINS(args, "--cpuid-0x15.eax 1 --cpuid-0x15.ebx 40");
	T_CONTAINS(args, "--raw images/00-prog:0x0-0x8:0x400000");
	T_CONTAINS(args, "--pt tid-7.pt");
	snprintf(path, sizeof(path), "%s/tid-7.ptdump.args", dir);
	f = fopen(path, "r");
	T_OK(f && fgets(args, sizeof(args), f));
	if (f)
		fclose(f);
	T_CONTAINS(args, "--image images/00-prog:0x0:0x8@0x400000");
	/* feed the args back through the import, from the directory */
	T_EQ_INT(chdir(dir), 0);
	prec_rawpt_opts_init(&o);
	for (tok = strtok_r(args, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		char *val = strtok_r(NULL, " \n", &save);

		if (!val)
			break;
		if (!strcmp(tok, "--pt"))
			o.pt_path = val;
		else if (!strcmp(tok, "--image") || !strcmp(tok, "--elf"))
			T_EQ_INT(prec_rawpt_parse_image(val, tok[2] == 'e', &imgs[ni++], &d), 0);
		else if (!strcmp(tok, "--cpu"))
			T_EQ_INT(prec_rawpt_parse_cpu(val, &o, &d), 0);
	}
	o.images = imgs;
	o.nimages = ni;
	s = prec_session_new();
	T_EQ_INT(prec_rawpt_load(s, &o, &d), 0);
	text = run_view(s, PREC_FMT_BRANCHES);
	T_CONTAINS(text, ": return 400007 [unknown] (");
	free(text);
	prec_session_free(s);
	snprintf(path, sizeof(path), "%s/manifest.txt", dir);
	T_OK(access(path, R_OK) == 0);
}

static void raw_export_errors(void)
{
	struct prec_diag d;
	char in[600];

	T_OK(prec_rawpt_export("/nonexistent/x.ptrec", "/tmp", &d) < 0);
	T_OK(d.msg[0] != 0);
	snprintf(in, sizeof(in), "%s/e.ptrec", t_tmpdir());
	make_ptrec(in, "GenuineIntel", 0, true);
	T_OK(prec_rawpt_export(in, "/nonexistent/dir/raw", &d) < 0);
	T_CONTAINS(d.msg, "/nonexistent/dir/raw");
	T_EQ_INT(prec_rawpt_export(in, NULL, &d), -EINVAL);
}

static const struct t_case cases[] = {
	T(export_layout),    T(export_hardware_time), T(export_errors),   T(export_truncated),
	T(parse_image_rows), T(parse_cpu_rows),       T(raw_load_image),  T(raw_load_errors),
	T(raw_roundtrip),    T(raw_export_errors),    T(raw_kernel_image), T(raw_image_pieces),
	T(raw_no_cpu_hint),
};

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--export"))
		return drv_export(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "--to-raw"))
		return drv_to_raw(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "--from-raw"))
		return drv_from_raw(argc, argv);
	return t_main(argc, argv, cases, T_N(cases));
}
