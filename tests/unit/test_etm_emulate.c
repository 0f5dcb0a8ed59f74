// SPDX-License-Identifier: MIT
/*
 * The CoreSight software tracer against an independent peer: OpenCSD's
 * trc_pkt_lister reads the snapshot directories it makes. The encoder's
 * packets must list as what was encoded, formatter frames must carry every
 * source's bytes, and whole programs run under qemu-aarch64 must decode to
 * exactly the instruction runs the plugin's ground truth says ran, with and
 * without pause/resume windows.
 *
 * Driver mode, for tests/cli/etm.sh:
 *	test_etm_emulate snapshot DIR TRUTH [raw] [ts] [cid] -- PROG ARGS...
 * records PROG, writes the snapshot DIR and prints "stream TID CSID SIZE".
 */
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "record/etm_emulate.h"
#include "base/perf_format.h"
#include "snapshot_write.h"
#include "base/util.h"

/* The encoder itself, for packet-level checks. */
#include "../../emulate/etm/etm_enc.c"

static char g_build[PATH_MAX];

/* The build directory: this binary lives in $(B)/tests/. */
static const char *build_dir(void)
{
	char *p;
	ssize_t n;

	if (g_build[0])
		return g_build;
	n = readlink("/proc/self/exe", g_build, sizeof(g_build) - 1);
	if (n <= 0)
		return "build";
	g_build[n] = 0;
	for (int i = 0; i < 2; i++) {
		p = strrchr(g_build, '/');
		if (p)
			*p = 0;
	}
	return g_build;
}

static void path_of(char *out, size_t size, const char *rel)
{
	snprintf(out, size, "%s/%s", build_dir(), rel);
}

static int have_exec(const char *name)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", name);
	return system(cmd) == 0;
}

static void need_tools(void)
{
	char p[PATH_MAX];

	if (!have_exec("trc_pkt_lister"))
		t_skip("no trc_pkt_lister (Debian package libopencsd-bin)");
	if (!have_exec("qemu-aarch64"))
		t_skip("no qemu-aarch64 (Debian package qemu-user)");
	path_of(p, sizeof(p), "ptrec-emu-etm.so");
	if (access(p, R_OK))
		t_skip("the CoreSight tracer plugin is not built");
}

/* Runs the peer on @dir; returns its whole output (malloc'd) or NULL. */
static char *lister(const char *dir, const char *src_name, int decode)
{
	char cmd[PATH_MAX + 256];
	struct prec_buf b = { 0 };
	char chunk[65536];
	size_t n;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "trc_pkt_lister -ss_dir '%s' %s%s%s -logstdout 2>&1", dir,
		 decode ? "-decode " : "", src_name ? "-src_name " : "", src_name ? src_name : "");
	f = popen(cmd, "r");
	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		prec_buf_append(&b, chunk, n);
	pclose(f);
	prec_buf_append(&b, "", 1);
	return b.data;
}

/* ---- instruction runs ---------------------------------------------------- */

struct runs {
	uint64_t (*r)[2];
	size_t n, cap;
};

/* Appends [s, e), merged into the previous run when it follows it. */
static void runs_add(struct runs *rs, uint64_t s, uint64_t e)
{
	if (rs->n && rs->r[rs->n - 1][1] == s) {
		rs->r[rs->n - 1][1] = e;
		return;
	}
	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? 2 * rs->cap : 1024;
		rs->r = realloc(rs->r, rs->cap * sizeof(*rs->r));
		if (!rs->r)
			abort();
	}
	rs->r[rs->n][0] = s;
	rs->r[rs->n][1] = e;
	rs->n++;
}

static uint64_t runs_insns(const struct runs *rs)
{
	uint64_t k = 0;

	for (size_t i = 0; i < rs->n; i++)
		k += (rs->r[i][1] - rs->r[i][0]) / 4;
	return k;
}

/* The blocks of thread @tid the truth says were traced (between R and P). */
static int truth_runs(const char *path, uint32_t tid, struct runs *rs, int *windows)
{
	FILE *f = fopen(path, "r");
	char line[256];
	int on = 0;

	*windows = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, k;
		unsigned t;

		if (line[0] == 'R' && sscanf(line + 1, "%u", &t) == 1 && t == tid) {
			on = 1;
			(*windows)++;
		} else if (line[0] == 'P' && sscanf(line + 1, "%u", &t) == 1 && t == tid) {
			on = 0;
		} else if (line[0] == 'B' && sscanf(line + 1, "%u %llx %llx %llu", &t, &s, &e, &k) == 4 &&
			   t == tid && on) {
			runs_add(rs, s, e);
		}
	}
	fclose(f);
	return 0;
}

/*
 * The instruction ranges trc_pkt_lister decoded for trace ID @csid, and
 * the number of lines that tell of a decode problem.
 */
static void decoded_runs(const char *text, unsigned csid, struct runs *rs, int *problems)
{
	const char *p = text;
	char idtag[32];

	*problems = 0;
	snprintf(idtag, sizeof(idtag), "ID:%x;", csid);
	while (p && *p) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char line[512];
		const char *r;

		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) - 1 ? n : sizeof(line) - 1), p);
		if (strstr(line, "OCSD_ERR_") || strstr(line, "ADDR_NACC") ||
		    strstr(line, "I_BAD_") || strstr(line, "I_RESERVED") ||
		    strstr(line, "INCOMPLETE"))
			(*problems)++;
		if (strstr(line, idtag) && (r = strstr(line, "INSTR_RANGE(exec range=0x"))) {
			unsigned long long s, en;

			if (sscanf(r, "INSTR_RANGE(exec range=0x%llx:[0x%llx]", &s, &en) == 2)
				runs_add(rs, s, en);
		}
		p = e ? e + 1 : NULL;
	}
}

/* ---- recording programs --------------------------------------------------- */

struct job {
	const char *prog;
	const char *args[4];
	struct prec_etm_config cfg;
	struct prec_emu_trigger trig[4];
	size_t ntrig;
	enum prec_snap_format fmt;
	struct prec_etm_ops tee;
	/* results */
	char dir[PATH_MAX], truth[PATH_MAX], exe[PATH_MAX];
	struct prec_etm_recording rec;
};

static int job_record(struct job *j)
{
	char plugin[PATH_MAX], *argv[6];
	struct prec_diag d = { 0 };
	size_t i;
	int r;

	path_of(plugin, sizeof(plugin), "ptrec-emu-etm.so");
	snprintf(j->exe, sizeof(j->exe), "%s/progs-arm64/%s", build_dir(), j->prog);
	snprintf(j->dir, sizeof(j->dir), "%s/snap-%s", t_tmpdir(), j->prog);
	snprintf(j->truth, sizeof(j->truth), "%s/truth-%s", t_tmpdir(), j->prog);
	if (access(j->exe, X_OK)) {
		t_check(0, __FILE__, __LINE__, "test program %s is not built", j->exe);
		return -1;
	}
	argv[0] = j->exe;
	for (i = 0; i < 4 && j->args[i]; i++)
		argv[i + 1] = (char *)j->args[i];
	argv[i + 1] = NULL;
	for (i = 0; i < j->ntrig; i++)
		if (j->trig[i].kind == PREC_EMU_UPROBE || j->trig[i].kind == PREC_EMU_URETPROBE)
			j->trig[i].path = j->exe;
	j->cfg.plugin = plugin;
	j->cfg.truth_path = j->truth;
	j->cfg.argv = argv;
	j->cfg.triggers = j->trig;
	j->cfg.ntriggers = j->ntrig;
	r = prec_etm_record(&j->cfg, 0, j->tee.aux ? &j->tee : NULL, &j->rec, &d);
	if (!t_check(r == 0, __FILE__, __LINE__, "recording %s: %d %s", j->prog, r, d.msg))
		return -1;
	T_EQ_INT(prec_emu_exit_code(j->rec.wstatus), 0);
	r = prec_snapshot_write_recording(j->dir, &j->cfg, &j->rec, j->fmt, &d);
	if (!t_check(r == 0, __FILE__, __LINE__, "snapshot of %s: %d %s", j->prog, r, d.msg))
		return -1;
	j->cfg.argv = NULL;
	j->cfg.plugin = NULL;
	return 0;
}

/*
 * Checks every stream of @j: the peer decodes it without a problem to the
 * runs the truth gives. Returns the total instructions compared.
 */
static uint64_t job_compare(struct job *j, int *min_windows)
{
	char *text = NULL;
	uint64_t total = 0;

	*min_windows = INT_MAX;
	for (size_t i = 0; i < j->rec.nstreams; i++) {
		const struct prec_etm_stream *s = &j->rec.streams[i];
		struct runs want = { 0 }, got = { 0 };
		int problems = 0, windows = 0, same;
		char src[32];

		if (j->fmt == PREC_SNAP_SOURCE_DATA || !text) {
			free(text);
			snprintf(src, sizeof(src), "ETB_%zu", i);
			text = lister(j->dir, j->fmt == PREC_SNAP_SOURCE_DATA ? src : NULL, 1);
		}
		if (!t_check(text != NULL, __FILE__, __LINE__, "running trc_pkt_lister"))
			break;
		T_OK(truth_runs(j->truth, s->tid, &want, &windows) == 0);
		decoded_runs(text, s->csid, &got, &problems);
		same = want.n == got.n && !memcmp(want.r, got.r, want.n * sizeof(*want.r));
		if (!same) {
			size_t k = 0;

			while (k < want.n && k < got.n && !memcmp(want.r[k], got.r[k], sizeof(*want.r)))
				k++;
			t_check(0, __FILE__, __LINE__,
				"%s tid %u id 0x%x: %zu truth runs, %zu decoded; first difference at run %zu: "
				"truth %llx-%llx decoded %llx-%llx", j->prog, s->tid, s->csid, want.n, got.n, k,
				k < want.n ? (unsigned long long)want.r[k][0] : 0ull,
				k < want.n ? (unsigned long long)want.r[k][1] : 0ull,
				k < got.n ? (unsigned long long)got.r[k][0] : 0ull,
				k < got.n ? (unsigned long long)got.r[k][1] : 0ull);
		}
		T_EQ_INT(problems, 0);
		total += runs_insns(&want);
		if (windows < *min_windows)
			*min_windows = windows;
		free(want.r);
		free(got.r);
	}
	free(text);
	return total;
}

static void job_free(struct job *j)
{
	prec_etm_recording_free(&j->rec);
}

/* File offset of function @sym in ELF @path, or 0. */
static uint64_t sym_offset(const char *path, const char *sym)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL;
	uint64_t vaddr = 0, off = 0;
	size_t nph, i;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		data = elf_getdata(scn, NULL);
		for (i = 0; data && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(data, (int)i, &s))
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (name && !strcmp(name, sym))
				vaddr = s.st_value;
		}
	}
	if (e && vaddr && !elf_getphdrnum(e, &nph)) {
		for (i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz)
				off = vaddr - ph.p_vaddr + ph.p_offset;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return off;
}

/* ---- cases: whole programs ----------------------------------------------- */

static void program_row(const char *prog, const char *arg, enum prec_snap_format fmt,
			size_t want_streams, uint64_t min_insns)
{
	struct job j = { .prog = prog, .args = { arg }, .fmt = fmt };
	int windows;
	uint64_t n;
	char row[64];

	if (job_record(&j) == 0) {
		T_OK(j.rec.nstreams >= want_streams);
		n = job_compare(&j, &windows);
		t_check(n >= min_insns, __FILE__, __LINE__, "%s: only %llu instructions traced",
			prog, (unsigned long long)n);
		T_EQ_INT(windows, 1);
	}
	snprintf(row, sizeof(row), "%s%s", prog, fmt == PREC_SNAP_SOURCE_DATA ? " (source_data)" : "");
	t_row(row, true);
	job_free(&j);
}

/*
 * The minimums are sanity bounds. Most of a short program's instructions
 * are the dynamic loader's and libc's start-up, which depend on the
 * environment: with an empty one, longjmp 12 ran about 8,400 and execs
 * about 24,000 (against over 20,000 and 40,000 in a login shell's).
 */
static void programs_decode_to_truth(void)
{
	need_tools();
	program_row("calls", "3", PREC_SNAP_FORMATTED, 1, 20000);
	program_row("longjmp", "12", PREC_SNAP_FORMATTED, 1, 5000);
	program_row("threads", NULL, PREC_SNAP_FORMATTED, 5, 100000);
	program_row("threads", NULL, PREC_SNAP_SOURCE_DATA, 5, 100000);
	program_row("signals", NULL, PREC_SNAP_FORMATTED, 1, 20000);
	program_row("forks", NULL, PREC_SNAP_FORMATTED, 2, 20000);
	program_row("execs", NULL, PREC_SNAP_FORMATTED, 1, 15000);
}

/* What the recorder gets through the callbacks (seen through the tee). */
struct tee_seen {
	uint64_t aux_bytes, aux_rec_bytes;
	unsigned streams, itrace, mmap2, comm, fork, exit_, samples, bad_offsets;
	uint64_t next_off[16];
	uint32_t tid[16];
	int prog_mapped;
	const char *exe;
};

static int tee_stream(void *ctx, uint32_t pid, uint32_t tid, unsigned index, uint8_t csid)
{
	struct tee_seen *t = ctx;

	if (index != t->streams || csid != 0x10 + index || index >= 16)
		t->bad_offsets++;
	else
		t->tid[index] = tid;
	t->streams++;
	return 0;
}

static int tee_aux(void *ctx, uint32_t pid, uint32_t tid, uint64_t offset, const void *data,
		   size_t size)
{
	struct tee_seen *t = ctx;
	unsigned i;

	for (i = 0; i < t->streams && i < 16; i++)
		if (t->tid[i] == tid)
			break;
	if (i == t->streams || i == 16 || offset != t->next_off[i])
		t->bad_offsets++;
	else
		t->next_off[i] += size;
	t->aux_bytes += size;
	return 0;
}

static int tee_sideband(void *ctx, const void *rec, size_t size)
{
	struct tee_seen *t = ctx;
	struct perf_event_header h;

	memcpy(&h, rec, sizeof(h));
	if (h.size != size)
		t->bad_offsets++;
	switch (h.type) {
	case PERF_RECORD_ITRACE_START: t->itrace++; break;
	case PERF_RECORD_COMM: t->comm++; break;
	case PERF_RECORD_FORK: t->fork++; break;
	case PERF_RECORD_EXIT: t->exit_++; break;
	case PERF_RECORD_SAMPLE: t->samples++; break;
	case PERF_RECORD_MMAP2:
		t->mmap2++;
		if (size > 72 && !strcmp((const char *)rec + 72, t->exe))
			t->prog_mapped = 1;
		break;
	case PERF_RECORD_AUX: {
		uint64_t sz;

		memcpy(&sz, (const uint8_t *)rec + 16, 8);
		t->aux_rec_bytes += sz;
		break;
	}
	}
	return 0;
}

static void sideband_tee(void)
{
	struct job j = { .prog = "threads" };
	struct tee_seen seen = { 0 };
	int windows;

	need_tools();
	j.tee = (struct prec_etm_ops){ .ctx = &seen, .stream = tee_stream, .aux = tee_aux,
				       .sideband = tee_sideband };
	snprintf(j.exe, sizeof(j.exe), "%s/progs-arm64/threads", build_dir());
	seen.exe = j.exe;
	j.trig[0] = (struct prec_emu_trigger){ .kind = PREC_EMU_SYS_ENTER, .action = PREC_EMU_ACT_NONE,
					       .event_index = 1, .nr = -1 };
	j.ntrig = 1;
	if (job_record(&j) == 0) {
		uint64_t total = 0;

		for (size_t i = 0; i < j.rec.nstreams; i++)
			total += j.rec.streams[i].size;
		T_EQ_INT(seen.streams, 5);
		T_EQ_INT(seen.streams, j.rec.nstreams);
		T_EQ_INT(seen.itrace, 5);
		T_EQ_INT(seen.fork, 4);
		T_EQ_INT(seen.exit_, 5);
		T_OK(seen.comm >= 1);
		T_OK(seen.prog_mapped);
		T_EQ_INT(seen.bad_offsets, 0);
		T_EQ_U64(seen.aux_bytes, total);
		T_EQ_U64(seen.aux_rec_bytes, total);
		T_EQ_INT(seen.samples, j.rec.nsamples);
		T_OK(seen.samples > 20); /* every system call */
		T_OK(job_compare(&j, &windows) > 100000);
	}
	job_free(&j);
}

/* Start paused; a uprobe on window_fn resumes, its uretprobe pauses. */
static void uprobe_window(void)
{
	struct job j = { .prog = "window", .args = { "7" } };
	uint64_t off, n;
	int windows;

	need_tools();
	snprintf(j.exe, sizeof(j.exe), "%s/progs-arm64/window", build_dir());
	off = sym_offset(j.exe, "window_fn");
	if (!t_check(off != 0, __FILE__, __LINE__, "window_fn in %s", j.exe))
		return;
	j.cfg.start_paused = true;
	j.trig[0] = (struct prec_emu_trigger){ .kind = PREC_EMU_UPROBE, .action = PREC_EMU_ACT_RESUME,
					       .event_index = 1, .offset = off };
	j.trig[1] = (struct prec_emu_trigger){ .kind = PREC_EMU_URETPROBE, .action = PREC_EMU_ACT_PAUSE,
					       .event_index = 2, .offset = off };
	j.ntrig = 2;
	if (job_record(&j) == 0) {
		n = job_compare(&j, &windows);
		/* 7 calls, the same instructions each time */
		T_EQ_INT(windows, 7);
		T_OK(n > 0 && n % 7 == 0);
		T_OK(n < 1000);
		T_EQ_INT(j.rec.nsamples, 14);
	}
	job_free(&j);
}

/* A window from a system call's entry to the next one's exit. */
static void syscall_window(void)
{
	struct job j = { .prog = "signals" };
	int windows;

	need_tools();
	j.cfg.start_paused = true;
	/* resume when rt_sigaction (134) returns, pause when setitimer (103) is entered */
	j.trig[0] = (struct prec_emu_trigger){ .kind = PREC_EMU_SYS_EXIT, .action = PREC_EMU_ACT_RESUME,
					       .event_index = 1, .nr = 134 };
	j.trig[1] = (struct prec_emu_trigger){ .kind = PREC_EMU_SYS_ENTER, .action = PREC_EMU_ACT_PAUSE,
					       .event_index = 2, .nr = 103 };
	j.ntrig = 2;
	if (job_record(&j) == 0) {
		uint64_t n = job_compare(&j, &windows);

		T_EQ_INT(windows, 1);
		/* the window holds two raise() calls and their handlers */
		T_OK(n > 200);
	}
	job_free(&j);
}

/* Interrupts every 997 instructions, syncs every 256 bytes, timestamps, context IDs. */
static void options_and_interrupts(void)
{
	struct job j = { .prog = "calls", .args = { "2" } };
	char *text;
	int windows;

	need_tools();
	j.cfg.timestamp = true;
	j.cfg.contextid = true;
	j.cfg.sync_period = 8;
	j.cfg.csid_base = 0x20;
	j.trig[0] = (struct prec_emu_trigger){ .kind = PREC_EMU_INSNS, .action = PREC_EMU_ACT_NONE,
					       .event_index = 1, .period = 997 };
	j.ntrig = 1;
	if (job_record(&j) == 0) {
		T_OK(job_compare(&j, &windows) > 10000);
		T_EQ_U64(j.rec.streams[0].csid, 0x20);
		T_OK(j.rec.nsamples > 10);
		text = lister(j.dir, NULL, 1);
		if (text) {
			char cid[64];

			T_CONTAINS(text, "OCSD_GEN_TRC_ELEM_TIMESTAMP");
			T_CONTAINS(text, "excep num (0x0e)");
			snprintf(cid, sizeof(cid), "CID=0x%08x", j.rec.streams[0].tid);
			T_CONTAINS(text, cid);
		}
		free(text);
		/* periodic syncs: many A-syncs in the packet listing */
		text = lister(j.dir, NULL, 0);
		if (text) {
			int n = 0;

			for (const char *p = text; (p = strstr(p, "I_ASYNC")); p++)
				n++;
			T_OK(n > 10);
		}
		free(text);
	}
	job_free(&j);
}

/* ---- cases: packets and frames ------------------------------------------- */

/* A source_data snapshot of one raw stream, no memory. */
static int raw_snapshot(const char *dir, const uint8_t *data, size_t n)
{
	struct prec_snap_source src = { .data = data, .size = n };
	struct prec_snapshot s = { .nsrc = 1, .src = &src, .format = PREC_SNAP_SOURCE_DATA };

	prec_etm_regs_get(NULL, 0x10, &src.regs);
	return prec_snapshot_write(dir, &s, NULL);
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Atom sequences of every shape list back as the same E/N string. */
static void atoms_peer(void)
{
	static uint8_t buf[1 << 20];
	struct etm_enc e;
	struct prec_buf want = { 0 }, got = { 0 };
	char dir[PATH_MAX], *text;
	int i;

	need_tools();
	etm_enc_init(&e, buf, sizeof(buf));
	etm_enc_sync(&e);
	etm_enc_trace_on(&e);
	etm_enc_addr_ctxt(&e, 0x400000);
	for (i = 0; i < 20000; i++) {
		/* runs of E of random length, single N, and random mixes */
		int taken = (i / 37) % 3 == 0 ? (int)(rnd() & 1) : (rnd() % 29) != 0;

		etm_enc_atom(&e, taken);
		prec_buf_append(&want, taken ? "E" : "N", 1);
		if (rnd() % 97 == 0)
			etm_enc_flush_atoms(&e);
	}
	etm_enc_flush_atoms(&e);
	snprintf(dir, sizeof(dir), "%s/atoms", t_tmpdir());
	T_EQ_INT(raw_snapshot(dir, buf, e.len), 0);
	text = lister(dir, NULL, 0);
	if (!t_check(text != NULL, __FILE__, __LINE__, "trc_pkt_lister"))
		return;
	for (const char *p = text; (p = strstr(p, "I_ATOM_F")); p++) {
		const char *a = strstr(p, "; ");
		const char *nl = strchr(p, '\n');

		if (!a || (nl && a > nl))
			continue;
		a += 2;
		while (*a == 'E' || *a == 'N')
			prec_buf_append(&got, a++, 1);
	}
	prec_buf_append(&want, "", 1);
	prec_buf_append(&got, "", 1);
	T_EQ_INT(got.len, want.len);
	T_OK(got.data && want.data && !strcmp(got.data, want.data));
	T_OK(!strstr(text, "I_BAD") && !strstr(text, "I_RESERVED"));
	/* the packing is dense: fewer atom packets than a third of the atoms */
	{
		int np = 0;

		for (const char *p = text; (p = strstr(p, "I_ATOM_F")); p++)
			np++;
		T_OK(np < 20000 / 3);
	}
	free(text);
	prec_buf_free(&want);
	prec_buf_free(&got);
}

/*
 * Addresses (exact matches, short, 32-bit and 64-bit forms), exceptions and
 * timestamps list back as the values encoded.
 */
static void addresses_peer(void)
{
	static uint8_t buf[1 << 20];
	static uint64_t want[6000];
	struct etm_enc e;
	char dir[PATH_MAX], *text;
	size_t n = 0, k = 0, forms[4] = { 0 };
	uint64_t a = 0x400000, ts = 5;

	need_tools();
	etm_enc_init(&e, buf, sizeof(buf));
	etm_enc_sync(&e);
	etm_enc_timestamp(&e, ts);
	etm_enc_trace_on(&e);
	etm_enc_addr_ctxt(&e, a);
	want[n++] = a;
	while (n < 5000) {
		unsigned kind = rnd() % 8;
		uint64_t prev[3] = { e.hist[0], e.hist[1], e.hist[2] };

		if (kind < 2)
			a = prev[rnd() % 3];                          /* exact match */
		else if (kind < 4)
			a = (a & ~0x1ffull) | (rnd() & 0x1fc);       /* 1-byte short */
		else if (kind < 5)
			a = (a & ~0x1ffffull) | (rnd() & 0x1fffc);   /* 2-byte short */
		else if (kind < 6)
			a = (a & ~0xffffffffull) | (rnd() & 0xfffffffc); /* 32-bit */
		else if (kind < 7)
			a = (rnd() & 0x0000fffffffffffcull);         /* 64-bit */
		else
			a = 0xffff000000000000ull | (rnd() & 0xfffffffffffcull);
		if (rnd() % 16 == 0) {
			etm_enc_exception(&e, ETM_EXC_IRQ, a);
		} else if (rnd() % 16 == 0) {
			ts += rnd() % 100000;
			etm_enc_timestamp(&e, ts);
			etm_enc_addr(&e, a);
		} else {
			etm_enc_addr(&e, a);
		}
		want[n++] = a;
	}
	snprintf(dir, sizeof(dir), "%s/addrs", t_tmpdir());
	T_EQ_INT(raw_snapshot(dir, buf, e.len), 0);
	text = lister(dir, NULL, 0);
	if (!t_check(text != NULL, __FILE__, __LINE__, "trc_pkt_lister"))
		return;
	for (const char *p = text; (p = strstr(p, "I_ADDR")); p++) {
		const char *v = strstr(p, "Addr=0x"), *nl = strchr(p, '\n');
		unsigned long long x;

		if (!v || (nl && v > nl) || sscanf(v, "Addr=0x%llx", &x) != 1)
			continue;
		if (!strncmp(p, "I_ADDR_MATCH", 12))
			forms[0]++;
		else if (!strncmp(p, "I_ADDR_S_", 9))
			forms[1]++;
		else if (!strncmp(p, "I_ADDR_L_32", 11))
			forms[2]++;
		else if (!strncmp(p, "I_ADDR_L_64", 11) || !strncmp(p, "I_ADDR_CTXT_L_64", 16))
			forms[3]++;
		if (k < n && !t_check(x == want[k], __FILE__, __LINE__,
				      "address %zu: encoded 0x%llx, listed 0x%llx", k,
				      (unsigned long long)want[k], x))
			break;
		k++;
	}
	T_EQ_INT(k, n);
	for (int i = 0; i < 4; i++)
		t_check(forms[i] > 100, __FILE__, __LINE__, "address form %d used %zu times", i, forms[i]);
	{
		/* the last timestamp lists as its value */
		char tsv[64];

		snprintf(tsv, sizeof(tsv), "Updated val = 0x%llx", (unsigned long long)ts);
		T_CONTAINS(text, tsv);
	}
	T_CONTAINS(text, "I_EXCEPT : Exception.;  IRQ; Ret Addr Follows;");
	T_OK(!strstr(text, "I_BAD") && !strstr(text, "I_RESERVED"));
	free(text);
}

/* An independent deformatter, for the frame encoder's self-check. */
static void deframe(const uint8_t *f, size_t n, struct prec_buf *per_id /* [128] */)
{
	int cur = -1;

	for (size_t off = 0; off + 16 <= n; off += 16) {
		const uint8_t *fr = f + off;
		int pending = -1;

		for (int i = 0; i < 15; i++) {
			uint8_t b = fr[i];

			if (!(i & 1)) {
				int auxb = fr[15] >> (i / 2) & 1;

				if (b & 1) {
					if (auxb && i < 14)
						pending = b >> 1; /* after the next byte */
					else
						cur = b >> 1;
					continue;
				}
				b = (uint8_t)((b & 0xfe) | auxb);
			}
			if (cur > 0)
				prec_buf_append(&per_id[cur], &b, 1);
			if (pending >= 0) {
				cur = pending;
				pending = -1;
			}
		}
	}
}

static void frames_roundtrip(void)
{
	struct prec_snap_source src[3];
	static uint8_t data[3][5000];
	size_t sizes[3] = { 5000, 1, 3777 };

	for (int k = 0; k < 3; k++) {
		for (size_t i = 0; i < sizes[k]; i++)
			data[k][i] = (uint8_t)rnd();
		memset(&src[k], 0, sizeof(src[k]));
		src[k].regs.trctraceidr = (uint32_t)(0x10 + 7 * k);
		src[k].data = data[k];
		src[k].size = sizes[k];
	}
	for (size_t chunk = 1; chunk <= 17; chunk++) {
		struct prec_buf per[128] = { { 0 } };
		uint8_t *out = NULL;
		size_t n = 0;
		int ok = 1;

		T_EQ_INT(prec_cs_frames_encode(src, 3, chunk, &out, &n), 0);
		T_EQ_INT(n % 16, 0);
		deframe(out, n, per);
		for (int k = 0; k < 3; k++) {
			struct prec_buf *b = &per[0x10 + 7 * k];

			ok &= b->len == sizes[k] && !memcmp(b->data, data[k], sizes[k]);
		}
		t_check(ok, __FILE__, __LINE__, "frames with chunk %zu", chunk);
		for (int k = 0; k < 128; k++)
			prec_buf_free(&per[k]);
		free(out);
	}
	/* bad IDs */
	src[1].regs.trctraceidr = 0x70;
	{
		uint8_t *out;
		size_t n;

		T_EQ_INT(prec_cs_frames_encode(src, 3, 0, &out, &n), -EINVAL);
	}
}

/* Formatted and raw snapshots of the same streams list the same packets. */
static void frames_peer(void)
{
	static uint8_t buf[3][1 << 16];
	struct prec_snap_source src[3];
	struct prec_snapshot s = { .nsrc = 3, .src = src };
	char dir[PATH_MAX], *fmt_text, *raw_text;

	need_tools();
	for (int k = 0; k < 3; k++) {
		struct etm_enc e;

		etm_enc_init(&e, buf[k], sizeof(buf[k]));
		etm_enc_sync(&e);
		etm_enc_trace_on(&e);
		etm_enc_addr_ctxt(&e, 0x400000 + 0x1000 * (uint64_t)k);
		for (int i = 0; i < 3000 * (k + 1); i++) {
			if (rnd() % 5 == 0)
				etm_enc_addr(&e, 0x400000 + (rnd() & 0xfffc));
			else
				etm_enc_atom(&e, (int)(rnd() & 1));
		}
		etm_enc_flush_atoms(&e);
		prec_etm_regs_get(NULL, (uint8_t)(0x10 + k), &src[k].regs);
		src[k].data = buf[k];
		src[k].size = e.len;
	}
	snprintf(dir, sizeof(dir), "%s/fmt", t_tmpdir());
	T_EQ_INT(prec_snapshot_write(dir, &s, NULL), 0);
	fmt_text = lister(dir, NULL, 0);
	s.format = PREC_SNAP_SOURCE_DATA;
	snprintf(dir, sizeof(dir), "%s/raw", t_tmpdir());
	T_EQ_INT(prec_snapshot_write(dir, &s, NULL), 0);
	for (int k = 0; k < 3 && fmt_text; k++) {
		char name[16], tag[16];
		struct prec_buf a = { 0 }, b = { 0 };

		snprintf(name, sizeof(name), "ETB_%d", k);
		raw_text = lister(dir, name, 0);
		if (!raw_text)
			break;
		/* the packet names and values of this ID, without indexes */
		for (int w = 0; w < 2; w++) {
			const char *p = w ? raw_text : fmt_text;
			struct prec_buf *o = w ? &b : &a;

			/* a raw buffer's packets list under ID 0 */
			snprintf(tag, sizeof(tag), "ID:%x;", w ? 0 : 0x10 + k);
			while (p && *p) {
				const char *e = strchr(p, '\n'), *q;
				size_t len = e ? (size_t)(e - p) : strlen(p);

				if ((q = strstr(p, tag)) && q < p + len &&
				    (q = strchr(q + strlen(tag), 'I')) && q < p + len && q[1] == '_')
					prec_buf_append(o, q, (size_t)(p + len - q) + 0);
				p = e ? e + 1 : NULL;
			}
		}
		t_check(a.len > 1000 && a.len == b.len && !memcmp(a.data, b.data, a.len), __FILE__,
			__LINE__, "ID 0x%x: formatted %zu bytes of listing, raw %zu", 0x10 + k, a.len,
			b.len);
		prec_buf_free(&a);
		prec_buf_free(&b);
		free(raw_text);
	}
	free(fmt_text);
}

/* ---- cases: damage, errors, registers ------------------------------------ */

static void corrupt_snapshot(void)
{
	struct job j = { .prog = "calls", .args = { "1" } };
	char *before = NULL, *after = NULL;
	uint8_t junk[8] = { 0x9d, 0xff, 0x00, 0x07, 0x71, 0x6a, 0x00, 0x00 };

	need_tools();
	if (job_record(&j))
		goto out;
	before = lister(j.dir, NULL, 1);
	T_EQ_INT(prec_snapshot_corrupt(j.dir, 0, 2000, junk, sizeof(junk)), 0);
	after = lister(j.dir, NULL, 1);
	T_OK(before && after && strcmp(before, after));
	/* the file holds the bytes now */
	{
		char p[PATH_MAX + 32];
		uint8_t got[8];
		int fd;

		snprintf(p, sizeof(p), "%s/cstrace.bin", j.dir);
		fd = open(p, O_RDONLY);
		T_OK(fd >= 0 && pread(fd, got, 8, 2000) == 8 && !memcmp(got, junk, 8));
		if (fd >= 0)
			close(fd);
	}
	T_EQ_INT(prec_snapshot_corrupt(j.dir, 1, 0, junk, 1), -ENOENT);
	T_EQ_INT(prec_snapshot_corrupt(j.dir, 0, 1ull << 40, junk, 1), -ERANGE);
	T_EQ_INT(prec_snapshot_corrupt("/nonexistent-dir", 0, 0, junk, 1), -ENOENT);
out:
	free(before);
	free(after);
	job_free(&j);
}

static void errors(void)
{
	struct prec_etm_config cfg = { 0 };
	struct prec_diag d = { 0 };
	char plugin[PATH_MAX], *argv[] = { "/bin/true", NULL }, path[PATH_MAX];
	struct prec_snap_source src[2] = { { .size = 0 }, { .size = 0 } };
	struct prec_snapshot s = { .nsrc = 2, .src = src };
	char dir[PATH_MAX];
	int ws;

	path_of(plugin, sizeof(plugin), "ptrec-emu-etm.so");
	cfg.plugin = plugin;
	cfg.argv = argv;
	/* an x86-64 program */
	T_EQ_INT(prec_etm_check_program("/bin/true", path, sizeof(path), &d), -ENOEXEC);
	T_CONTAINS(d.msg, "not an aarch64");
	memset(&d, 0, sizeof(d));
	/* The arm64 build (make check-arm64) has no plugin: these checks need one. */
	if (access(plugin, R_OK)) {
		printf("    no %s: the checks that run qemu-aarch64 are left out\n", plugin);
	} else if (have_exec("qemu-aarch64")) {
		T_EQ_INT(prec_etm_run(&cfg, &(struct prec_etm_ops){ 0 }, &ws, &d), -ENOEXEC);
		memset(&d, 0, sizeof(d));
		cfg.plugin = "/nonexistent/ptrec-emu-etm.so";
		T_EQ_INT(prec_etm_run(&cfg, &(struct prec_etm_ops){ 0 }, &ws, &d), -ENOENT);
		T_CONTAINS(d.msg, "plugin");
		cfg.plugin = plugin;
		memset(&d, 0, sizeof(d));
		cfg.sync_period = 30;
		T_EQ_INT(prec_etm_run(&cfg, &(struct prec_etm_ops){ 0 }, &ws, &d), -EINVAL);
		cfg.sync_period = 0;
	}
	memset(&d, 0, sizeof(d));
	T_EQ_INT(prec_etm_check_program("no-such-program-here", path, sizeof(path), &d), -ENOENT);
	/* qemu missing */
	cfg.qemu = "/nonexistent/qemu-aarch64";
	memset(&d, 0, sizeof(d));
	T_EQ_INT(prec_etm_run(&cfg, &(struct prec_etm_ops){ 0 }, &ws, &d), -ENOENT);
	T_CONTAINS(d.msg, "qemu-aarch64");
	/* snapshots: duplicate and bad trace IDs, nothing at all */
	snprintf(dir, sizeof(dir), "%s/bad", t_tmpdir());
	src[0].regs.trctraceidr = 0x10;
	src[1].regs.trctraceidr = 0x10;
	T_EQ_INT(prec_snapshot_write(dir, &s, NULL), -EINVAL);
	src[1].regs.trctraceidr = 0;
	T_EQ_INT(prec_snapshot_write(dir, &s, NULL), -EINVAL);
	s.nsrc = 0;
	T_EQ_INT(prec_snapshot_write(dir, &s, NULL), -EINVAL);
	s.nsrc = 1;
	s.core = "bad\n[core]";
	T_EQ_INT(prec_snapshot_write(dir, &s, NULL), -EINVAL);
	s.core = NULL;
	T_EQ_INT(prec_snapshot_write("/nonexistent-dir/x/y", &s, NULL), -ENOENT);
}

static void registers(void)
{
	struct prec_etm_config cfg = { .timestamp = true, .contextid = true };
	struct prec_etm_regs r;
	uint64_t b[PREC_ETM_BLOCK_WORDS];

	prec_etm_regs_get(NULL, 0x13, &r);
	T_EQ_U64(r.trctraceidr, 0x13);
	T_EQ_U64(r.trcconfigr & ((1u << 6) | (1u << 11)), 0);
	T_EQ_U64(r.trcidr8, 0);            /* no speculation */
	T_EQ_U64(r.trcidr2 & 0x1f, 8);     /* 64-bit addresses */
	T_EQ_U64(r.trcidr2 >> 5 & 0x1f, 4); /* 32-bit context ID */
	T_EQ_U64(r.trcidr1 >> 8 & 0xf, 4); /* ETMv4 */
	prec_etm_regs_get(&cfg, 0x6f, &r);
	T_EQ_U64(r.trcconfigr & ((1u << 6) | (1u << 11)), (1u << 6) | (1u << 11));
	prec_etm_regs_block(&r, 3, b);
	T_EQ_U64(b[CS_ETM_MAGIC], CS_ETMV4_MAGIC);
	T_EQ_U64(b[CS_ETM_CPU], 3);
	T_EQ_U64(b[CS_ETM_NR_TRC_PARAMS], CS_ETMV4_PRIV_MAX - CS_ETM_COMMON_BLK_MAX_V1);
	T_EQ_U64(b[CS_ETMV4_TRCTRACEIDR], 0x6f);
	T_EQ_U64(b[CS_ETMV4_TRCCONFIGR], r.trcconfigr);
	T_EQ_U64(b[CS_ETMV4_TRCIDR0], r.trcidr0);
	T_EQ_U64(b[CS_ETMV4_TRCAUTHSTATUS], r.trcauthstatus);
}

/* ---- driver mode ------------------------------------------------------------ */

static int driver(int argc, char **argv)
{
	struct prec_etm_config cfg = { 0 };
	struct prec_etm_recording rec;
	struct prec_diag d = { 0 };
	enum prec_snap_format fmt = PREC_SNAP_FORMATTED;
	char plugin[PATH_MAX];
	int i, r;

	if (argc < 6)
		return 2;
	for (i = 4; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "raw"))
			fmt = PREC_SNAP_SOURCE_DATA;
		else if (!strcmp(argv[i], "ts"))
			cfg.timestamp = true;
		else if (!strcmp(argv[i], "cid"))
			cfg.contextid = true;
		else
			return 2;
	}
	if (i + 1 >= argc)
		return 2;
	path_of(plugin, sizeof(plugin), "ptrec-emu-etm.so");
	cfg.plugin = getenv("PTREC_ETM_PLUGIN") ? getenv("PTREC_ETM_PLUGIN") : plugin;
	cfg.truth_path = argv[3];
	cfg.argv = argv + i + 1;
	r = prec_etm_record(&cfg, 0, NULL, &rec, &d);
	if (r) {
		fprintf(stderr, "%s\n", d.msg);
		if (d.hint[0])
			fprintf(stderr, "hint: %s\n", d.hint);
		return 1;
	}
	for (size_t k = 0; k < rec.nstreams; k++)
		printf("stream %u 0x%x %zu\n", rec.streams[k].tid, rec.streams[k].csid,
		       rec.streams[k].size);
	r = prec_snapshot_write_recording(argv[2], &cfg, &rec, fmt, &d);
	if (r)
		fprintf(stderr, "%s\n", d.msg);
	i = prec_emu_exit_code(rec.wstatus);
	prec_etm_recording_free(&rec);
	return r ? 1 : i ? 3 : 0;
}

int main(int argc, char **argv)
{
	static const struct t_case cases[] = {
		T(registers),
		T(errors),
		T(frames_roundtrip),
		T(atoms_peer),
		T(addresses_peer),
		T(frames_peer),
		T(programs_decode_to_truth),
		T(sideband_tee),
		T(uprobe_window),
		T(syscall_window),
		T(options_and_interrupts),
		T(corrupt_snapshot),
	};

	if (argc > 1 && !strcmp(argv[1], "snapshot"))
		return driver(argc, argv);
	return t_main(argc, argv, cases, T_N(cases));
}
