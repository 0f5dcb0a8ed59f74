// SPDX-License-Identifier: MIT
/*
 * The perf.data importer, checked against perf itself: files recorded here by
 * `perf record` (file form, pipe form, zstd-compressed, system-wide with
 * several events) are loaded and compared with what `perf script` and
 * `perf report --header-only` say about the same file. AUXTRACE handling is
 * checked on files assembled from a real recording plus AUXTRACE_INFO and
 * AUXTRACE records carrying Intel PT made by libipt's encoder. Damaged and
 * hostile files (truncations at every offset, corrupted sizes, offsets and
 * counts, random byte flips) must give an error, never a crash.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <intel-pt.h>
#include <zstd.h>

#include "decoders/coresight.h"
#include "session/cs_meta.h"
#include "harness.h"
#include "session/image.h"
#include "session/load.h"
#include "output/output.h"
#include "base/perf_abi.h"
#include "base/perf_format.h"
#include "interop/importer.h"
#include "interop/perfdata.h"
#include "output/perfdata_info.h"
#include "interop/perfexport.h"
#include "session/session.h"
#include "base/symtab.h"
#include "base/util.h"

#define LOOP_CMD "sh -c 'i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done'"

/* ---- helpers ---- */

static const char *action_name(uint32_t a)
{
	return a == PREC_AUX_RESUME ? "resume" : a == PREC_AUX_PAUSE ? "pause" : "start-paused";
}

static void need_perf(void)
{
	static int have = -1;

	if (have < 0)
		have = system("perf version >/dev/null 2>&1") == 0;
	if (!have)
		t_skip("perf is not installed");
}

/*
 * Runs `perf record ARGS` into DIR/NAME; skips the case if perf cannot
 * record here. Tests running beside this one may make tracefs unreadable for
 * a moment: a failure is tried again twice. perf 6.1 once stayed in poll()
 * after its workload had ended (-z, on a loaded machine) for minutes: a
 * recording that takes over two minutes is stopped and counts as a failure.
 */
static const char *record(const char *name, const char *args)
{
	static char path[4][512];
	static int k;
	char cmd[2048], why[200] = "";
	char *p = path[k++ % 4];
	FILE *f;

	need_perf();
	snprintf(p, 512, "%s/%s", t_tmpdir(), name);
	snprintf(cmd, sizeof(cmd), "cd %s && timeout -k 10 120 perf record -q -N %s %s 2>%s/record.err",
		 t_tmpdir(), args, strchr(args, '>') ? "" : ">/dev/null", t_tmpdir());
	for (int attempt = 0; attempt < 3; attempt++) {
		if (system(cmd) == 0)
			return p;
		sleep(1);
	}
	snprintf(cmd, sizeof(cmd), "%s/record.err", t_tmpdir());
	f = fopen(cmd, "r");
	if (f) {
		if (!fgets(why, sizeof(why), f))
			why[0] = '\0';
		fclose(f);
	}
	why[strcspn(why, "\n")] = '\0';
	snprintf(cmd, sizeof(cmd), "perf record fails here: %s", why);
	t_skip(cmd);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	long n;

	*len = 0;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc(n > 0 ? (size_t)n : 1);
	if (b && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = n > 0 ? (size_t)n : 0;
	return b;
}

static int spill(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(p, 1, n, f) == n;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* Appends @s to the array @v of @n strings (grown in powers of two). */
static void push(char ***v, size_t *n, char *s)
{
	if (!(*n & (*n - 1)) || !*n)
		*v = realloc(*v, (*n ? 2 * *n : 1) * sizeof(**v));
	(*v)[(*n)++] = s;
}

/* Lines of a command's standard output (malloc'd array of @n strings). */
static char **lines_of(const char *cmd, size_t *n)
{
	FILE *f = popen(cmd, "r");
	char **v = NULL, *line = NULL;
	size_t cap = 0, len = 0;

	*n = 0;
	if (!f)
		return NULL;
	while (getline(&line, &cap, f) > 0) {
		size_t l = strlen(line);

		while (l && (line[l - 1] == '\n' || line[l - 1] == ' '))
			line[--l] = '\0';
		push(&v, &len, strdup(line));
	}
	free(line);
	pclose(f);
	*n = len;
	return v;
}

static void free_lines(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Compares two string lists as multisets; reports the first differences.
 * Returns true if equal.
 */
static bool same_facts(const char *what, char **a, size_t na, char **b, size_t nb)
{
	size_t i = 0, j = 0, shown = 0;
	bool ok = true;

	qsort(a, na, sizeof(*a), str_cmp);
	qsort(b, nb, sizeof(*b), str_cmp);
	while (i < na || j < nb) {
		int c = i == na ? 1 : j == nb ? -1 : strcmp(a[i], b[j]);

		if (!c) {
			i++, j++;
			continue;
		}
		ok = false;
		if (shown++ < 6)
			t_check(false, __FILE__, __LINE__, "%s: only in %s: %s", what,
				c < 0 ? "ptrec" : "perf", c < 0 ? a[i] : b[j]);
		if (c < 0)
			i++;
		else
			j++;
	}
	t_check(na == nb, __FILE__, __LINE__, "%s: %zu facts vs perf's %zu", what, na, nb);
	return ok;
}

static struct prec_session *load(const char *path, struct prec_perfdata_report *rep,
				 const struct prec_perfdata_opts *o)
{
	struct prec_session *s = prec_session_new();
	struct prec_diag d;
	int err = prec_perfdata_load(s, path, o, rep, &d);

	if (err) {
		t_check(false, __FILE__, __LINE__, "load %s: %d %s", path, err, d.msg);
		prec_session_free(s);
		return NULL;
	}
	return s;
}

static char *fmt(const char *f, ...) prec_printf(1, 2);
static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}


/* A damaged file must fail with a message (or, for the pipe form, load what is whole). */
static bool bad_ok(int err, const struct prec_diag *d)
{
	return err < 0 && d->msg[0];
}

/* ---- facts from the session and from perf script ---- */

/* True if a COMM record of @tid precedes time @t (the timeline is sorted). */
static bool comm_before(struct prec_session *s, int tid, uint64_t t)
{
	for (size_t i = 0; i < prec_session_nr_sb(s); i++) {
		const struct prec_sb *sb = prec_session_sb(s, i);

		if (sb->time > t)
			break;
		if (sb->type == PREC_SB_COMM && sb->tid == tid)
			return true;
	}
	return false;
}

static void session_samples(struct prec_session *s, char ***v, size_t *n)
{
	for (size_t i = 0; i < prec_session_nr_sb(s); i++) {
		const struct prec_sb *sb = prec_session_sb(s, i);
		const struct prec_evdesc *ev = prec_session_event(s, sb->event);

		if (sb->type != PREC_SB_SAMPLE)
			continue;
		/* without a COMM before the sample the session guesses (see same_samples) */
		const char *comm = comm_before(s, sb->tid, sb->time) ?
					   prec_session_comm(s, sb->tid, sb->time) : "";

		push(v, n, fmt("%d/%d %" PRIu64 ".%09" PRIu64 " %s %" PRIx64 "|%s", sb->pid,
			       sb->tid, sb->time / 1000000000u, sb->time % 1000000000u,
			       ev ? ev->name : "?", sb->u.sample.ip, *comm ? comm : "?"));
	}
}

/*
 * perf script -F comm,pid,tid,time,event,ip --ns lines:
 *   "  uname 27187/27187  2129.511780031: syscalls:sys_enter_newuname:   7f841e274b07"
 */
static void perf_samples(const char *path, char ***v, size_t *n)
{
	char cmd[1024], **l;
	size_t nl;

	snprintf(cmd, sizeof(cmd),
		 "perf script -i %s -G -F comm,pid,tid,time,event,ip --ns 2>/dev/null", path);
	l = lines_of(cmd, &nl);
	for (size_t i = 0; i < nl; i++) {
		char *p = l[i], *slash = NULL, *tok, comm[64] = "";
		int pid, tid;
		unsigned long sec, nsec;
		char ev[256];
		uint64_t ip;

		/* the pid/tid token ends the comm (which may hold spaces) */
		for (tok = p; (tok = strchr(tok, '/')); tok++) {
			char *b = tok;

			while (b > p && b[-1] >= '0' && b[-1] <= '9')
				b--;
			if (b < tok && (b == p || b[-1] == ' ') &&
			    sscanf(b, "%d/%d", &pid, &tid) == 2) {
				slash = b;
				break;
			}
		}
		if (!slash)
			continue;
		snprintf(comm, sizeof(comm), "%.*s", (int)(slash - p), p);
		for (char *c = comm; *c == ' ';)
			memmove(c, c + 1, strlen(c));
		for (size_t k = strlen(comm); k && comm[k - 1] == ' ';)
			comm[--k] = '\0';
		tok = strchr(slash, ' ');
		if (!tok || sscanf(tok, " %lu.%lu:", &sec, &nsec) != 2)
			continue;
		tok = strchr(tok + 1, ':');
		while (tok && *tok && *tok != ' ')
			tok++;
		if (!tok)
			continue;
		{
			char *last = strrchr(tok, ' ');
			char *colon;

			if (!last || sscanf(last, " %" SCNx64, &ip) != 1)
				continue;
			while (*tok == ' ')
				tok++;
			snprintf(ev, sizeof(ev), "%.*s", (int)(last - tok), tok);
			colon = strrchr(ev, ':');
			if (colon)
				*colon = '\0';
			for (size_t k = strlen(ev); k && ev[k - 1] == ' ';)
				ev[--k] = '\0';
		}
		push(v, n, fmt("%d/%d %lu.%09lu %s %" PRIx64 "|%s", pid, tid, sec, nsec, ev, ip,
			       comm));
	}
	free_lines(l, nl);
}

static void session_sideband(struct prec_session *s, char ***v, size_t *n)
{
	for (size_t i = 0; i < prec_session_nr_sb(s); i++) {
		const struct prec_sb *sb = prec_session_sb(s, i);
		uint64_t t = sb->time;

		switch (sb->type) {
		case PREC_SB_MMAP:
			push(v, n, fmt("MMAP %" PRIu64 " %d/%d %#" PRIx64 " %#" PRIx64 " %#" PRIx64
				       " %s", t, sb->pid, sb->tid, sb->u.mmap.start, sb->u.mmap.len,
				       sb->u.mmap.pgoff, sb->u.mmap.path));
			break;
		case PREC_SB_COMM:
			push(v, n, fmt("COMM %" PRIu64 " %d/%d %s%s", t, sb->pid, sb->tid,
				       sb->u.comm.comm, sb->u.comm.exec ? " exec" : ""));
			break;
		case PREC_SB_FORK:
		case PREC_SB_EXIT:
			push(v, n, fmt("%s %" PRIu64 " %d/%d %d/%d",
				       sb->type == PREC_SB_FORK ? "FORK" : "EXIT", t, sb->pid,
				       sb->tid, sb->u.fork.ppid, sb->u.fork.ptid));
			break;
		default:
			break;
		}
	}
}

static uint64_t ns_of(unsigned long sec, unsigned long nsec)
{
	return (uint64_t)sec * 1000000000u + nsec;
}

/* The MMAP/COMM/FORK/EXIT lines of perf script --show-mmap-events --show-task-events. */
static void perf_sideband(const char *path, char ***v, size_t *n)
{
	char cmd[1024], **l;
	size_t nl;

	snprintf(cmd, sizeof(cmd), "perf script -i %s --show-mmap-events --show-task-events "
		 "-F pid,tid,time,event --ns 2>/dev/null | grep PERF_RECORD_", path);
	l = lines_of(cmd, &nl);
	for (size_t i = 0; i < nl; i++) {
		unsigned long sec, nsec;
		char *r = strstr(l[i], "PERF_RECORD_"), *colon;
		int a, b, c, d;

		colon = strchr(l[i], ':');
		if (!r || !colon || sscanf(l[i], " %*d/%*d %lu.%lu:", &sec, &nsec) != 2)
			continue;
		r += strlen("PERF_RECORD_");
		if (sscanf(r, "FORK(%d:%d):(%d:%d)", &a, &b, &c, &d) == 4) {
			push(v, n, fmt("FORK %" PRIu64 " %d/%d %d/%d", ns_of(sec, nsec), a, b, c,
				       d));
		} else if (sscanf(r, "EXIT(%d:%d):(%d:%d)", &a, &b, &c, &d) == 4) {
			push(v, n, fmt("EXIT %" PRIu64 " %d/%d %d/%d", ns_of(sec, nsec), a, b, c,
				       d));
		} else if (!strncmp(r, "COMM", 4)) {
			bool exec = !strncmp(r, "COMM exec:", 10);
			char *cm = strchr(r, ':') + 2, *end = strrchr(cm, ':');

			if (!end || sscanf(end + 1, "%d/%d", &a, &b) != 2)
				continue;
			push(v, n, fmt("COMM %" PRIu64 " %d/%d %.*s%s", ns_of(sec, nsec), a, b,
				       (int)(end - cm), cm, exec ? " exec" : ""));
		} else if (!strncmp(r, "MMAP", 4)) {
			uint64_t start, len, pgoff;
			char *br = strchr(r, '['), *path2;

			if (sscanf(strchr(r, ' '), " %d/%d:", &a, &b) != 2 || !br ||
			    sscanf(br, "[%" SCNx64 "(%" SCNx64 ") @ %" SCNx64, &start, &len,
				   &pgoff) != 3)
				continue;
			path2 = strstr(br, "]: ");
			if (!path2 || !(path2 = strchr(path2 + 3, ' ')))
				continue;
			push(v, n, fmt("MMAP %" PRIu64 " %d/%d %#" PRIx64 " %#" PRIx64 " %#" PRIx64
				       " %s", ns_of(sec, nsec), a, b, start, len, pgoff,
				       path2 + 1));
		}
	}
	free_lines(l, nl);
}

/*
 * Samples "pid/tid time event ip|comm": all but the comm must match as
 * multisets; the comm must match where the session knows one. (The session
 * takes a thread's comm from COMM records only, where perf also inherits it
 * from the parent at FORK: a forked child that never exec'd has none here.)
 */
static void same_samples(char **a, size_t na, char **b, size_t nb)
{
	size_t i, unknown = 0, bad = 0;
	char **ka = calloc(na + 1, sizeof(*ka)), **kb = calloc(nb + 1, sizeof(*kb));

	qsort(a, na, sizeof(*a), str_cmp);
	qsort(b, nb, sizeof(*b), str_cmp);
	for (i = 0; i < na; i++)
		ka[i] = strndup(a[i], strcspn(a[i], "|"));
	for (i = 0; i < nb; i++)
		kb[i] = strndup(b[i], strcspn(b[i], "|"));
	if (same_facts("samples", ka, na, kb, nb)) {
		/* same keys; sorted keys may tie only on equal keys, so pair in order */
		qsort(a, na, sizeof(*a), str_cmp);
		qsort(b, nb, sizeof(*b), str_cmp);
		for (i = 0; i < na; i++) {
			const char *ca = strchr(a[i], '|') + 1, *cb = strchr(b[i], '|') + 1;

			if (!strcmp(ca, "?"))
				unknown++;
			else if (strcmp(ca, cb) && bad++ < 5)
				t_check(false, __FILE__, __LINE__, "comm: %s vs perf's %s", a[i],
					b[i]);
		}
		T_EQ_INT(bad, 0);
		/* how many are forked children without a COMM depends on the system */
		T_OK(unknown < na);
	}
	free_lines(ka, na);
	free_lines(kb, nb);
}

/* Loads @path and compares samples and sideband with perf script's view. */
static void compare_with_perf(const char *path, const struct prec_perfdata_report *want_rep)
{
	struct prec_perfdata_report rep;
	struct prec_session *s = load(path, &rep, NULL);
	char **a = NULL, **b = NULL;
	size_t na = 0, nb = 0;

	if (!s)
		return;
	(void)want_rep;
	session_samples(s, &a, &na);
	perf_samples(path, &b, &nb);
	T_OK(nb > 0);
	same_samples(a, na, b, nb);
	free_lines(a, na);
	free_lines(b, nb);
	a = b = NULL;
	na = nb = 0;
	session_sideband(s, &a, &na);
	perf_sideband(path, &b, &nb);
	T_OK(nb > 0);
	same_facts("sideband", a, na, b, nb);
	free_lines(a, na);
	free_lines(b, nb);
	T_EQ_INT(rep.unknown_id, 0);
	T_EQ_INT(rep.bad_records, 0);
	T_OK(!rep.cut_short);
	prec_session_free(s);
}

/* ---- recordings compared with perf script ---- */

static void tracepoints_file(void)
{
	const char *p = record("tp.data", "-o tp.data -e syscalls:sys_enter_newuname,"
				"syscalls:sys_exit_newuname -- uname");
	struct prec_perfdata_report rep;
	struct prec_session *s;
	size_t i, enter = 0, exit_ = 0;

	compare_with_perf(p, NULL);
	s = load(p, &rep, NULL);
	if (!s)
		return;
	T_EQ_INT(rep.format, PREC_PERFDATA_FILE);
	T_EQ_INT(prec_session_nr_events(s), 2);
	T_EQ_STR(prec_session_event(s, 0)->name, "syscalls:sys_enter_newuname");
	T_EQ_STR(prec_session_event(s, 1)->name, "syscalls:sys_exit_newuname");
	for (i = 0; i < prec_session_nr_sb(s); i++) {
		const struct prec_sb *sb = prec_session_sb(s, i);

		if (sb->type != PREC_SB_SAMPLE)
			continue;
		if (sb->event == 0)
			enter++;
		if (sb->event == 1)
			exit_++;
		T_EQ_INT(sb->u.sample.period, 1);
		T_OK(sb->cpu >= 0);
	}
	T_EQ_INT(enter, 1);
	T_EQ_INT(exit_, 1);
	T_EQ_INT(rep.nr_records[PERF_RECORD_SAMPLE], 2);
	T_OK(rep.feat_bits[0] & (1ull << PERF_HEADER_EVENT_DESC));
	T_EQ_INT(prec_session_nr_streams(s), 0);
	prec_session_free(s);
}

static void cpu_clock_file(void)
{
	const char *p = record("clk.data", "-o clk.data -e cpu-clock -c 20000 -- " LOOP_CMD);
	struct prec_perfdata_report rep;
	struct prec_session *s;

	compare_with_perf(p, NULL);
	s = load(p, &rep, NULL);
	if (!s)
		return;
	T_EQ_STR(prec_session_event(s, 0)->name, "cpu-clock");
	T_OK(rep.nr_records[PERF_RECORD_SAMPLE] > 100);
	prec_session_free(s);
}

static void pipe_form(void)
{
	const char *p = record("tp.pipe", "-o - -e syscalls:sys_enter_newuname -- uname > tp.pipe");
	const char *f = record("tp2.data", "-o tp2.data -e syscalls:sys_enter_newuname -- uname");
	struct prec_perfdata_report rep;
	struct prec_session *s;
	uint8_t head[16];
	size_t n;
	uint8_t *b = slurp(p, &n);
	uint8_t *fb;

	T_OK(b && n > 16);
	if (!b)
		return;
	T_EQ_INT(prec_perfdata_probe(b, n), PREC_PERFDATA_PIPE);
	memcpy(head, b, 16);
	free(b);
	fb = slurp(f, &n);
	T_EQ_INT(prec_perfdata_probe(fb, n), PREC_PERFDATA_FILE);
	T_EQ_INT(prec_perfdata_probe(fb, 8), PREC_PERFDATA_FILE);
	T_EQ_INT(prec_perfdata_probe(fb, 7), 0);
	T_EQ_INT(prec_perfdata_probe("PTREC\0\0\0\0\0\0\0\0\0\0\0", 16), 0);
	free(fb);
	compare_with_perf(p, NULL);
	s = load(p, &rep, NULL);
	if (!s)
		return;
	T_EQ_INT(rep.format, PREC_PERFDATA_PIPE);
	T_EQ_STR(prec_session_event(s, 0)->name, "syscalls:sys_enter_newuname");
	T_OK(rep.nr_records[PERF_RECORD_HEADER_ATTR] == 1);
	T_OK(rep.nr_records[PERF_RECORD_HEADER_FEATURE] > 5);
	prec_session_free(s);
}

/* Path "-" reads stdin: a regular file, a pipe, and a pipe whose head was read already. */
static void pipe_from_stdin(void)
{
	const char *p = record("tp.pipe", "-o - -e syscalls:sys_enter_newuname -- uname > tp.pipe");
	struct prec_perfdata_report rep;
	struct prec_perfdata_opts o = { 0 };
	size_t n, nsb_file = 0;
	uint8_t *b = slurp(p, &n);
	struct prec_session *s;
	int fds[2], saved = dup(0);
	pid_t w;

	s = load(p, &rep, NULL);
	if (s)
		nsb_file = prec_session_nr_sb(s);
	prec_session_free(s);
	T_OK(nsb_file > 5);
	/* a pipe, with the first 16 bytes consumed by a "probe" */
	T_OK(pipe(fds) == 0);
	w = fork();
	if (w == 0) {
		close(fds[0]);
		(void)!write(fds[1], b + 16, n - 16);
		_exit(0);
	}
	close(fds[1]);
	dup2(fds[0], 0);
	close(fds[0]);
	o.stdin_head = b;
	o.stdin_head_len = 16;
	s = load("-", &rep, &o);
	T_OK(s != NULL);
	if (s)
		T_EQ_INT(prec_session_nr_sb(s), nsb_file);
	prec_session_free(s);
	dup2(saved, 0);
	/* a regular file as stdin */
	T_OK(freopen(p, "rb", stdin) != NULL);
	s = load("-", &rep, NULL);
	if (s)
		T_EQ_INT(prec_session_nr_sb(s), nsb_file);
	prec_session_free(s);
	free(b);
}

static void compressed_file(void)
{
	const char *p = record("z.data", "-z -o z.data -e cpu-clock -c 20000 -- " LOOP_CMD);
	const char *q = record("z.pipe", "-z -o - -e cpu-clock -c 20000 -- " LOOP_CMD " > z.pipe");
	struct prec_perfdata_report rep;
	struct prec_session *s;

	compare_with_perf(p, NULL);
	s = load(p, &rep, NULL);
	if (s) {
		T_OK(rep.nr_compressed > 0);
		T_OK(rep.decompressed_bytes > 0);
		T_OK(rep.nr_records[PERF_RECORD_SAMPLE] > 100);
		T_OK(rep.feat_bits[0] & (1ull << PERF_HEADER_COMPRESSED));
	}
	prec_session_free(s);
	compare_with_perf(q, NULL);
	s = load(q, &rep, NULL);
	if (s)
		T_OK(rep.nr_compressed > 0);
	prec_session_free(s);
}

/* perf record options that change the records' layouts, each compared with perf script. */
static void record_variants(void)
{
	static const char *const rows[] = {
		"-g",                           /* CALLCHAIN */
		"--call-graph dwarf,65528",     /* samples near 64 KiB (REGS_USER, STACK_USER) */
		"-d",                           /* ADDR */
		"--switch-events",              /* SWITCH records */
		"-s",                           /* READ (per-thread counts) */
		"--sample-cpu",
		"--buildid-mmap",               /* MMAP2 with build ids from the kernel */
		"-e page-faults -c 1",
		"-e cpu-clock/name=A/ -e task-clock/name=B,period=30000/", /* two events, names */
		"--no-inherit -T",
	};
	char args[512];

	for (size_t i = 0; i < PREC_ARRAY_SIZE(rows); i++) {
		struct prec_perfdata_report rep;
		struct prec_session *s;
		const char *p;

		snprintf(args, sizeof(args), "-o v%zu.data -e cpu-clock -c 20000 %s -- %s", i, rows[i],
			 LOOP_CMD);
		snprintf(args + 400, 32, "v%zu.data", i);
		p = record(args + 400, args);
		compare_with_perf(p, NULL);
		s = load(p, &rep, NULL);
		if (s)
			T_EQ_INT(rep.bad_records, 0);
		prec_session_free(s);
		t_row(rows[i], !t_row_failed());
	}
}

/* perf record --threads: a directory with the header file and data.N files. */
static void threads_directory(void)
{
	const char *p = record("thr.data", "--threads -o thr.data -e cpu-clock -c 20000 -- "
				LOOP_CMD);
	char *hdr = fmt("%s/data", p), *part = NULL, *cmd;
	struct prec_perfdata_report rep;
	struct prec_session *s;
	struct prec_diag d;
	struct stat st;

	T_EQ_INT(prec_perfdata_probe_path(p), PREC_PERFDATA_DIR);
	T_EQ_INT(prec_perfdata_probe_path(hdr), PREC_PERFDATA_FILE);
	T_EQ_INT(prec_perfdata_probe_path(t_tmpdir()), 0);
	compare_with_perf(p, NULL);
	/* the header file alone: its records, and a note that the rest is elsewhere */
	s = load(hdr, &rep, NULL);
	if (s) {
		bool said = false;

		T_EQ_INT(rep.nr_records[PERF_RECORD_SAMPLE], 0);
		for (unsigned i = 0; i < prec_notes_kept(&rep.notes); i++)
			said |= strstr(rep.notes.text[i], "open the directory") != NULL;
		T_OK(said);
	}
	prec_session_free(s);
	/* a part cut short loads up to there; a zero-size record is an error naming the part */
	for (int k = 0; k < 8 && !part; k++) {
		char *c = fmt("%s/data.%d", p, k);

		if (!stat(c, &st) && st.st_size > 64)
			part = c;
		else
			free(c);
	}
	T_OK(part != NULL);
	if (part) {
		size_t n;
		uint8_t *b = slurp(part, &n);

		T_OK(spill(part, b, n - 5) == 0);
		s = prec_session_new();
		T_EQ_INT(prec_perfdata_load(s, p, NULL, &rep, &d), 0);
		T_OK(rep.cut_short);
		T_CONTAINS(rep.notes.text[0], "data.");
		prec_session_free(s);
		b[6] = b[7] = 0;
		T_OK(spill(part, b, n) == 0);
		s = prec_session_new();
		T_OK(bad_ok(prec_perfdata_load(s, p, NULL, &rep, &d), &d));
		T_CONTAINS(d.msg, "(in data.");
		prec_session_free(s);
		free(b);
	}
	/* a directory without the header file */
	cmd = fmt("rm -f %s", hdr);
	T_OK(system(cmd) == 0);
	s = prec_session_new();
	T_EQ_INT(prec_perfdata_load(s, p, NULL, &rep, &d), -EISDIR);
	T_CONTAINS(d.msg, "'data' file");
	prec_session_free(s);
	free(cmd);
	free(part);
	free(hdr);
}

/* Several events with different sample_types (perf adds IDENTIFIER), system-wide. */
static void mixed_events_system_wide(void)
{
	const char *p = record("all.data", "-a -o all.data -e cpu-clock -c 100000 "
				"-e syscalls:sys_enter_newuname -- uname");
	struct prec_perfdata_report rep;
	struct prec_session *s;
	size_t i, tp = 0;

	compare_with_perf(p, NULL);
	s = load(p, &rep, NULL);
	if (!s)
		return;
	T_OK(prec_session_nr_events(s) >= 2);
	for (i = 0; i < prec_session_nr_sb(s); i++) {
		const struct prec_sb *sb = prec_session_sb(s, i);
		const struct prec_evdesc *ev = prec_session_event(s, sb->event);

		if (sb->type == PREC_SB_SAMPLE && ev &&
		    !strcmp(ev->name, "syscalls:sys_enter_newuname")) {
			tp++;
			T_EQ_STR(prec_session_comm(s, sb->tid, sb->time), "uname");
		}
	}
	T_OK(tp >= 1);
	prec_session_free(s);
}

/* The header features against perf report --header-only. */
static void describe_matches_perf_header(void)
{
	const char *p = record("tp.data", "-o tp.data -e syscalls:sys_enter_newuname,"
				"syscalls:sys_exit_newuname -- uname");
	char cmd[1024], **l;
	struct prec_buf b = { 0 };
	struct prec_diag d;
	size_t nl, i, checked = 0;
	int err;

	err = prec_perfdata_describe(p, NULL, &b, &d);
	T_EQ_INT(err, 0);
	if (err)
		return;
	snprintf(cmd, sizeof(cmd), "perf report -i %s --header-only 2>/dev/null", p);
	l = lines_of(cmd, &nl);
	for (i = 0; i < nl; i++) {
		static const char *const keys[] = { "# hostname : ", "# os release : ",
						    "# perf version : ", "# arch : ",
						    "# cpuid : ", "# cpudesc : " };
		char *v;

		for (size_t k = 0; k < PREC_ARRAY_SIZE(keys); k++) {
			if (strncmp(l[i], keys[k], strlen(keys[k])))
				continue;
			v = l[i] + strlen(keys[k]);
			T_CONTAINS(b.data, v);
			checked++;
		}
		if (!strncmp(l[i], "# nrcpus online : ", 18)) {
			char *want = fmt("%s online", l[i] + 18);

			T_CONTAINS(b.data, want);
			free(want);
			checked++;
		}
		if (!strncmp(l[i], "# cmdline : ", 12)) {
			T_CONTAINS(b.data, l[i] + 12);
			checked++;
		}
		if (!strncmp(l[i], "# event : name = ", 17)) {
			char name[128];

			sscanf(l[i] + 17, "%127[^,]", name);
			T_CONTAINS(b.data, name);
			checked++;
		}
	}
	T_OK(checked >= 8);
	T_CONTAINS(b.data, "SAMPLE");
	T_CONTAINS(b.data, "sample_type IP|TID|TIME|ID|CPU|PERIOD|RAW");
	free_lines(l, nl);
	prec_buf_free(&b);
}

/* ---- assembling perf.data with Intel PT ---- */

/*
 * Rewrites file-form perf.data @in: the attrs plus @xattr (with ids @xids),
 * the data section as @pre + the original records + @post, the features as
 * they were except CPUID, which becomes @cpuid. Returns a malloc'd file.
 */
static uint8_t *splice(const uint8_t *in, size_t inlen, const struct prec_attr *xattr,
		       const uint64_t *xids, size_t nxids, const void *pre, size_t npre,
		       const void *post, size_t npost, const char *cpuid, size_t *outlen)
{
	struct perf_file_header h, nh;
	struct prec_buf o = { 0 };
	size_t nattr, asz, i, nfeat = 0, ftab;
	uint64_t *ids_off;
	unsigned bit;

	memcpy(&h, in, sizeof(h));
	asz = h.attr_size;
	nattr = h.attrs.size / asz;
	ids_off = calloc(nattr + 1, sizeof(*ids_off));
	nh = h;
	prec_buf_append(&o, &nh, sizeof(nh));
	for (i = 0; i < nattr; i++) {
		const uint8_t *a = in + h.attrs.offset + i * asz;
		uint64_t io, is;

		memcpy(&io, a + asz - 16, 8);
		memcpy(&is, a + asz - 8, 8);
		ids_off[i] = o.len;
		prec_buf_append(&o, in + io, is);
	}
	ids_off[nattr] = o.len;
	if (xattr)
		prec_buf_append(&o, xids, nxids * 8);
	nh.attrs.offset = o.len;
	for (i = 0; i <= nattr; i++) {
		uint8_t a[4096] = { 0 };
		uint64_t sec[2];

		if (i == nattr && !xattr)
			break;
		if (i < nattr) {
			memcpy(a, in + h.attrs.offset + i * asz, asz);
			memcpy(&sec[1], a + asz - 8, 8);
		} else {
			memcpy(a, xattr, PREC_MIN(asz - 16, sizeof(*xattr)));
			sec[1] = nxids * 8;
		}
		sec[0] = ids_off[i];
		memcpy(a + asz - 16, sec, 16);
		prec_buf_append(&o, a, asz);
	}
	nh.attrs.size = (nattr + (xattr ? 1 : 0)) * asz;
	nh.data.offset = o.len;
	prec_buf_append(&o, pre, npre);
	prec_buf_append(&o, in + h.data.offset, h.data.size);
	prec_buf_append(&o, post, npost);
	nh.data.size = o.len - nh.data.offset;
	for (bit = 1; bit < 256; bit++)
		if (h.adds_features[bit / 64] & (1ull << (bit % 64)))
			nfeat++;
	ftab = o.len;
	{
		uint8_t zero[16 * 256] = { 0 };

		prec_buf_append(&o, zero, nfeat * 16);
	}
	i = 0;
	for (bit = 1; bit < 256; bit++) {
		const uint8_t *e;
		uint64_t fo, fs, sec[2];

		if (!(h.adds_features[bit / 64] & (1ull << (bit % 64))))
			continue;
		e = in + h.data.offset + h.data.size + 16 * i;
		memcpy(&fo, e, 8);
		memcpy(&fs, e + 8, 8);
		sec[0] = o.len;
		if (bit == PERF_HEADER_CPUID && cpuid) {
			uint8_t s[64] = { 0 };
			uint32_t l = 64;

			snprintf((char *)s, sizeof(s), "%s", cpuid);
			prec_buf_append(&o, &l, 4);
			prec_buf_append(&o, s, 64);
			sec[1] = 68;
		} else {
			prec_buf_append(&o, in + fo, fs);
			sec[1] = fs;
		}
		memcpy(o.data + ftab + 16 * i, sec, 16);
		i++;
	}
	(void)inlen;
	memcpy(o.data, &nh, sizeof(nh));
	free(ids_off);
	*outlen = o.len;
	return (uint8_t *)o.data;
}

/* Intel PT bytes from libipt's encoder: PSB, timing, a few branches, disable. */
static size_t make_pt(uint8_t *buf, size_t cap, uint64_t tsc, int reps)
{
	struct pt_config c;
	struct pt_encoder *e;
	struct pt_packet pk;
	uint64_t off = 0;

	pt_config_init(&c);
	c.begin = buf;
	c.end = buf + cap;
	e = pt_alloc_encoder(&c);
	for (int r = 0; r < reps; r++) {
		memset(&pk, 0, sizeof(pk));
		pk.type = ppt_psb;
		pt_enc_next(e, &pk);
		pk.type = ppt_tsc;
		pk.payload.tsc.tsc = tsc + 1000u * (unsigned)r;
		pt_enc_next(e, &pk);
		memset(&pk, 0, sizeof(pk));
		pk.type = ppt_cbr;
		pk.payload.cbr.ratio = 32;
		pt_enc_next(e, &pk);
		memset(&pk, 0, sizeof(pk));
		pk.type = ppt_psbend;
		pt_enc_next(e, &pk);
		pk.type = ppt_tip_pge;
		pk.payload.ip.ipc = pt_ipc_sext_48;
		pk.payload.ip.ip = 0x401000 + 16u * (unsigned)r;
		pt_enc_next(e, &pk);
		memset(&pk, 0, sizeof(pk));
		pk.type = ppt_tnt_8;
		pk.payload.tnt.bit_size = 5;
		pk.payload.tnt.payload = 0x15u ^ (unsigned)r;
		pt_enc_next(e, &pk);
		pk.type = ppt_tip;
		pk.payload.ip.ipc = pt_ipc_update_16;
		pk.payload.ip.ip = 0x401234;
		pt_enc_next(e, &pk);
		memset(&pk, 0, sizeof(pk));
		pk.type = ppt_tip_pgd;
		pk.payload.ip.ipc = pt_ipc_suppressed;
		pt_enc_next(e, &pk);
	}
	pt_enc_get_offset(e, &off);
	pt_free_encoder(e);
	return (size_t)off;
}

struct piece {
	int cpu, tid;
	uint64_t offset;
	const uint8_t *data;
	size_t len;
};

/* AUXTRACE records (48 bytes + payload padded to 8) for @n pieces. */
static void auxtrace_records(struct prec_buf *o, const struct piece *pc, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct perf_record_auxtrace a = { 0 };
		uint8_t pad[8] = { 0 };
		size_t padded = PREC_ALIGN_UP(pc[i].len, 8);

		a.header.type = PERF_RECORD_AUXTRACE;
		a.header.size = sizeof(a);
		a.size = padded;
		a.offset = pc[i].offset;
		a.reference = 77;
		a.idx = (uint32_t)(pc[i].cpu < 0 ? 0 : pc[i].cpu);
		a.tid = (uint32_t)pc[i].tid;
		a.cpu = (uint32_t)pc[i].cpu;
		prec_buf_append(o, &a, sizeof(a));
		prec_buf_append(o, pc[i].data, pc[i].len);
		prec_buf_append(o, pad, padded - pc[i].len);
	}
}

#define PT_TYPE 42
#define PT_TSC 0x400ull
#define PT_NORETCOMP 0x800ull
#define PT_MTC 0x200ull
#define PT_MTC_FREQ 0x3c000ull
#define PT_CYC 0x2ull

/* An AUXTRACE_INFO record for intel_pt with @nvals priv values (and @extra after them). */
static void pt_info(struct prec_buf *o, size_t nvals, bool per_cpu, const void *extra,
		    size_t nextra)
{
	uint64_t pv[INTEL_PT_AUXTRACE_PRIV_MAX] = {
		[INTEL_PT_PMU_TYPE] = PT_TYPE,
		[INTEL_PT_TIME_SHIFT] = 10,
		[INTEL_PT_TIME_MULT] = 600,
		[INTEL_PT_TIME_ZERO] = 123456,
		[INTEL_PT_CAP_USER_TIME_ZERO] = 1,
		[INTEL_PT_TSC_BIT] = PT_TSC,
		[INTEL_PT_NORETCOMP_BIT] = PT_NORETCOMP,
		[INTEL_PT_HAVE_SCHED_SWITCH] = 0,
		[INTEL_PT_SNAPSHOT_MODE] = 0,
		[INTEL_PT_PER_CPU_MMAPS] = per_cpu,
		[INTEL_PT_MTC_BIT] = PT_MTC,
		[INTEL_PT_MTC_FREQ_BITS] = PT_MTC_FREQ,
		[INTEL_PT_TSC_CTC_N] = 0x16c,
		[INTEL_PT_TSC_CTC_D] = 2,
		[INTEL_PT_CYC_BIT] = PT_CYC,
		[INTEL_PT_MAX_NONTURBO_RATIO] = 0x20,
		[INTEL_PT_FILTER_STR_LEN] = 0,
	};
	struct perf_record_auxtrace_info h = { 0 };

	h.header.type = PERF_RECORD_AUXTRACE_INFO;
	h.header.size = (uint16_t)(sizeof(h) + 8 * nvals + nextra);
	h.type = PERF_AUXTRACE_INTEL_PT;
	prec_buf_append(o, &h, sizeof(h));
	prec_buf_append(o, pv, 8 * PREC_MIN(nvals, (size_t)INTEL_PT_AUXTRACE_PRIV_MAX));
	if (nextra)
		prec_buf_append(o, extra, nextra);
}

static void pt_attr(struct prec_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->type = PT_TYPE;
	a->size = 128;
	a->config = PT_TSC | PT_MTC | (3ull << 14);
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
			 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW;
	a->sample_id_all = 1;
}

static const struct prec_stream *stream_of(struct prec_session *s, int cpu, int tid)
{
	for (size_t i = 0; i < prec_session_nr_streams(s); i++) {
		const struct prec_stream *st = prec_session_stream(s, i);

		if (st->cpu == cpu && st->tid == tid)
			return st;
	}
	return NULL;
}

/*
 * A real recording (same sample_type as the PT attr, so the id positions
 * agree) with a PT event, AUXTRACE_INFO and PT split into odd-sized pieces
 * over two CPUs, with a gap on CPU 1.
 */
static void auxtrace_per_cpu(void)
{
	const char *p = record("tp.data", "-o tp.data -e syscalls:sys_enter_newuname,"
				"syscalls:sys_exit_newuname -- uname");
	static uint8_t pt0[8192], pt1[8192];
	size_t n0 = make_pt(pt0, sizeof(pt0), 1000000, 9);
	size_t n1 = make_pt(pt1, sizeof(pt1), 5000000, 7);
	struct prec_buf pre = { 0 }, post = { 0 };
	struct piece pc[64];
	size_t npc = 0, len, outlen, off0 = 0, off1 = 0, cut, last0 = 0;
	uint64_t xids[2] = { 900001, 900002 };
	struct prec_attr xa;
	uint8_t *in = slurp(p, &len), *out;
	char *path = fmt("%s/pt.data", t_tmpdir());
	struct prec_perfdata_report rep;
	struct prec_session *s;
	const struct prec_machine *m;
	const struct prec_stream *st;
	static const size_t sizes[] = { 13, 29, 41, 3, 64, 101 };
	int tracer = -1;

	T_OK(in != NULL && n0 > 200 && n1 > 150);
	/* CPU 0: consecutive pieces; CPU 1: a 100-byte hole after the first piece */
	for (size_t k = 0; off0 < n0 || off1 < n1; k++) {
		size_t sz = sizes[k % PREC_ARRAY_SIZE(sizes)];

		if (off0 < n0) {
			cut = PREC_MIN(sz, n0 - off0);
			pc[npc++] = (struct piece){ 0, 111, off0, pt0 + off0, cut };
			off0 += cut;
			last0 = cut;
		}
		if (off1 < n1) {
			cut = PREC_MIN(sz + 5, n1 - off1);
			pc[npc++] = (struct piece){ 1, 111, off1 + (off1 ? 100 : 0), pt1 + off1,
						    cut };
			off1 += cut;
		}
		if (npc >= PREC_ARRAY_SIZE(pc) - 2)
			break;
	}
	T_OK(off0 == n0 && off1 == n1);
	pt_info(&pre, INTEL_PT_AUXTRACE_PRIV_MAX, true, (uint64_t[]){ 0x1 }, 8);
	auxtrace_records(&post, pc, npc);
	pt_attr(&xa);
	out = splice(in, len, &xa, xids, 2, pre.data, pre.len, post.data, post.len,
		     "GenuineIntel,6,142,10", &outlen);
	T_OK(spill(path, out, outlen) == 0);
	s = load(path, &rep, NULL);
	if (!s)
		goto out;
	m = prec_session_machine(s);
	T_EQ_STR(m->vendor, "GenuineIntel");
	T_EQ_INT(m->family, 6);
	T_EQ_INT(m->model, 142);
	T_EQ_INT(m->stepping, 10);
	T_EQ_INT(m->time_shift, 10);
	T_EQ_INT(m->time_mult, 600);
	T_EQ_U64(m->time_zero, 123456);
	T_OK(m->cap_user_time_zero);
	T_OK(m->tsc);
	T_OK(m->mtc);
	T_OK(!m->cyc);
	T_OK(!m->noretcomp);
	T_EQ_INT(m->mtc_period, 3);
	T_EQ_INT(m->cpuid_15_eax, 2);
	T_EQ_INT(m->cpuid_15_ebx, 0x16c);
	T_EQ_INT(m->max_nonturbo_ratio, 0x20);
	T_OK(m->per_cpu);
	for (size_t i = 0; i < prec_session_nr_events(s); i++)
		if (prec_session_event(s, (int)i)->kind == PREC_EVK_TRACER)
			tracer = (int)i;
	T_OK(tracer >= 0);
	T_EQ_INT(prec_session_event_by_id(s, 900002), tracer);
	T_EQ_INT(prec_session_nr_streams(s), 2);
	st = stream_of(s, 0, -1);
	T_OK(st != NULL);
	if (st) {
		/* the alignment padding between pieces is gone: the bytes are the encoder's */
		T_EQ_INT(st->len, n0 + PREC_ALIGN_UP(last0, 8) - last0);
		T_OK(st->len >= n0 && !memcmp(st->data, pt0, n0));
		T_EQ_INT(st->nr_gaps, 0);
	}
	st = stream_of(s, 1, -1);
	T_OK(st != NULL);
	if (st) {
		/*
		 * Before a hole the padding cannot be told from trace (the next
		 * offset does not say where the piece ended): it stays, as PAD
		 * bytes, and the hole counts from the padded end.
		 */
		size_t l1 = pc[1].len, p1 = PREC_ALIGN_UP(l1, 8);
		static const uint8_t zeros[8];

		T_OK(st->len >= n1 + p1 - l1);
		T_OK(!memcmp(st->data, pt1, l1));
		T_OK(!memcmp(st->data + l1, zeros, p1 - l1));
		T_OK(!memcmp(st->data + p1, pt1 + l1, n1 - l1));
		T_EQ_INT(st->nr_gaps, 1);
		if (st->nr_gaps == 1) {
			T_EQ_U64(st->gaps[0].pos, p1);
			T_EQ_U64(st->gaps[0].lost, 100 - (p1 - l1));
			T_EQ_U64(prec_stream_offset(st, p1), pc[3].offset);
		}
	}
	T_EQ_U64(rep.auxtrace_type, PERF_AUXTRACE_INTEL_PT);
	T_EQ_INT(rep.nr_records[PERF_RECORD_AUXTRACE], npc);
	prec_session_free(s);
	{
		struct prec_buf b = { 0 };
		struct prec_diag d;

		T_EQ_INT(prec_perfdata_describe(path, NULL, &b, &d), 0);
		T_CONTAINS(b.data, "auxtrace:    intel_pt");
		T_CONTAINS(b.data, "per_cpu_mmaps        0x1");
		T_CONTAINS(b.data, "cap_event_trace      0x1");
		T_CONTAINS(b.data, "GenuineIntel,6,142,10");
		T_CONTAINS(b.data, ", tracer");
		prec_buf_free(&b);
	}
out:
	free(in);
	free(out);
	free(path);
	prec_buf_free(&pre);
	prec_buf_free(&post);
}

/* Per-thread streams, a filter string and an old short AUXTRACE_INFO. */
static void auxtrace_per_thread_and_short_info(void)
{
	const char *p = record("tp.data", "-o tp.data -e syscalls:sys_enter_newuname,"
				"syscalls:sys_exit_newuname -- uname");
	static uint8_t pt[4096];
	size_t n = make_pt(pt, sizeof(pt), 42, 3), len, outlen;
	struct prec_buf pre = { 0 }, post = { 0 };
	uint64_t xids[1] = { 777 };
	struct piece pc[2] = {
		{ -1, 4242, 0, pt, 21 },
		{ -1, 4242, 21, pt + 21, n - 21 },
	};
	struct prec_attr xa;
	uint8_t *in = slurp(p, &len), *out;
	char *path = fmt("%s/ptt.data", t_tmpdir());
	struct prec_perfdata_report rep;
	struct prec_session *s;
	const struct prec_stream *st;
	char filter[16] = "filter a.out";   /* 12 bytes + NUL, in 16 */
	uint64_t extra[3];

	/* filter_str_len = 12: the string, padded to 16, then cap_event_trace */
	memcpy(extra, filter, 16);
	extra[2] = 0;
	{
		struct perf_record_auxtrace_info h = { 0 };
		uint64_t pv[INTEL_PT_AUXTRACE_PRIV_MAX] = { PT_TYPE, 10, 600, 5, 1, PT_TSC,
			PT_NORETCOMP, 0, 0, 0, PT_MTC, PT_MTC_FREQ, 1, 1, PT_CYC, 0, 12 };

		h.header.type = PERF_RECORD_AUXTRACE_INFO;
		h.header.size = sizeof(h) + sizeof(pv) + sizeof(extra);
		h.type = PERF_AUXTRACE_INTEL_PT;
		prec_buf_append(&pre, &h, sizeof(h));
		prec_buf_append(&pre, pv, sizeof(pv));
		prec_buf_append(&pre, extra, sizeof(extra));
	}
	auxtrace_records(&post, pc, 2);
	pt_attr(&xa);
	xa.config = PT_CYC | PT_NORETCOMP;
	out = splice(in, len, &xa, xids, 1, pre.data, pre.len, post.data, post.len,
		     "GenuineIntel,6,85,4", &outlen);
	spill(path, out, outlen);
	s = load(path, &rep, NULL);
	if (s) {
		const struct prec_machine *m = prec_session_machine(s);

		T_OK(!m->per_cpu && !m->tsc && !m->mtc && m->cyc && m->noretcomp);
		T_EQ_INT(m->mtc_period, 0);
		st = stream_of(s, -1, 4242);
		T_OK(st && st->len >= n && !memcmp(st->data, pt, n));
		/* the padding of the first piece (3 bytes) is not in the stream */
		T_OK(st && st->len == PREC_ALIGN_UP(n - 21, 8) + 21);
	}
	prec_session_free(s);
	{
		struct prec_buf b = { 0 };
		struct prec_diag d;

		T_EQ_INT(prec_perfdata_describe(path, NULL, &b, &d), 0);
		T_CONTAINS(b.data, "filter               filter a.out");
		prec_buf_free(&b);
	}
	free(out);
	/* perf before 4.x wrote only up to PER_CPU_MMAPS: loads, the rest off */
	prec_buf_reset(&pre);
	pt_info(&pre, INTEL_PT_PER_CPU_MMAPS + 1, true, NULL, 0);
	out = splice(in, len, &xa, xids, 1, pre.data, pre.len, NULL, 0, "GenuineIntel,6,61,4",
		     &outlen);
	s = prec_session_new();
	{
		struct prec_diag d;

		T_EQ_INT(prec_perfdata_load_buf(s, out, outlen, NULL, &rep, &d), 0);
		T_EQ_INT(prec_session_machine(s)->cpuid_15_eax, 0);
		T_OK(prec_session_machine(s)->per_cpu);
		prec_session_free(s);
		free(out);
		/* one value fewer: a clear error */
		prec_buf_reset(&pre);
		pt_info(&pre, INTEL_PT_PER_CPU_MMAPS, true, NULL, 0);
		out = splice(in, len, &xa, xids, 1, pre.data, pre.len, NULL, 0, NULL, &outlen);
		s = prec_session_new();
		T_EQ_INT(prec_perfdata_load_buf(s, out, outlen, NULL, &rep, &d), -PREC_E_FORMAT);
		T_CONTAINS(d.msg, "AUXTRACE_INFO");
		prec_session_free(s);
	}
	free(out);
	free(in);
	free(path);
	prec_buf_free(&pre);
	prec_buf_free(&post);
}

/* The attr's aux_action (perf 6.14+ writes it) gives the trigger kinds. */
static void aux_action_kinds(void)
{
	const char *p = record("tp.data", "-o tp.data -e syscalls:sys_enter_newuname,"
				"syscalls:sys_exit_newuname -- uname");
	static const struct {
		uint32_t action;
		uint32_t type;
		enum prec_evkind kind;
	} rows[] = {
		{ PREC_AUX_RESUME, PERF_TYPE_HARDWARE, PREC_EVK_RESUME },
		{ PREC_AUX_PAUSE, PERF_TYPE_TRACEPOINT, PREC_EVK_PAUSE },
		{ PREC_AUX_START_PAUSED, PT_TYPE, PREC_EVK_TRACER },
		{ 0, PERF_TYPE_SOFTWARE, PREC_EVK_TRACKING },
	};
	size_t len, outlen;
	uint8_t *in = slurp(p, &len);
	struct prec_buf pre = { 0 };

	pt_info(&pre, INTEL_PT_AUXTRACE_PRIV_MAX, true, NULL, 0);
	for (size_t i = 0; i < PREC_ARRAY_SIZE(rows); i++) {
		struct prec_attr xa;
		uint64_t id = 5550 + i;
		uint8_t *out;
		struct prec_session *s = prec_session_new();
		struct prec_perfdata_report rep;
		struct prec_diag d;

		pt_attr(&xa);
		xa.type = rows[i].type;
		xa.config = rows[i].type == PERF_TYPE_SOFTWARE ? PERF_COUNT_SW_DUMMY : 1;
		xa.aux_action = rows[i].action;
		out = splice(in, len, &xa, &id, 1, pre.data, pre.len, NULL, 0, NULL, &outlen);
		T_EQ_INT(prec_perfdata_load_buf(s, out, outlen, NULL, &rep, &d), 0);
		T_EQ_INT(prec_session_event(s, prec_session_event_by_id(s, id))->kind,
			 rows[i].kind);
		prec_session_free(s);
		free(out);
		t_row(rows[i].action ? action_name(rows[i].action) : "dummy",
		      !t_row_failed());
	}
	prec_buf_free(&pre);
	free(in);
}

/*
 * cs_etm: the header is read and described; loading attaches the trace units
 * to an "ARM" session (decoding is checked in test_perfdata_cs).
 */
static void cs_etm_header(void)
{
	const char *p = record("tp.data", "-o tp.data -e syscalls:sys_enter_newuname -- uname");
	struct prec_buf pre = { 0 }, b = { 0 };
	struct perf_record_auxtrace_info h = { 0 };
	uint64_t pv[3 + 2 * 11] = { 1, (9ull << 32) | 2, 0 };
	size_t len, outlen;
	uint8_t *in = slurp(p, &len), *out;
	struct prec_perfdata_report rep;
	struct prec_session *s = prec_session_new();
	struct prec_diag d;

	for (int c = 0; c < 2; c++) {
		uint64_t *blk = pv + 3 + 11 * c;

		blk[0] = CS_ETMV4_MAGIC;
		blk[1] = (uint64_t)c;
		blk[2] = 8;
	}
	h.header.type = PERF_RECORD_AUXTRACE_INFO;
	h.header.size = sizeof(h) + sizeof(pv);
	h.type = PERF_AUXTRACE_CS_ETM;
	prec_buf_append(&pre, &h, sizeof(h));
	prec_buf_append(&pre, pv, sizeof(pv));
	out = splice(in, len, NULL, NULL, 0, pre.data, pre.len, NULL, 0, NULL, &outlen);
	T_EQ_INT(prec_perfdata_load_buf(s, out, outlen, NULL, &rep, &d), 0);
	T_EQ_STR(prec_session_machine(s)->vendor, "ARM");
	if (T_OK(prec_cs_session_meta(s))) {
		T_EQ_INT(prec_cs_session_meta(s)->n, 2);
		T_OK(prec_cs_meta_cpu(prec_cs_session_meta(s), 1) != NULL);
	}
	T_EQ_INT(prec_perfdata_describe_buf(out, outlen, NULL, &b, &d), 0);
	T_CONTAINS(b.data, "cs_etm (CoreSight), header version 1, pmu type 9, 2 CPUs");
	T_CONTAINS(b.data, "cpu 1: ETMv4, 8 parameters");
	/* ptdump decodes it: nothing says otherwise */
	T_OK(!strstr(b.data, "not supported") && !strstr(b.data, "not decoded"));
	prec_buf_free(&b);
	prec_session_free(s);
	free(out);
	/* a block count past the record */
	pv[1] = (9ull << 32) | 3;
	prec_buf_reset(&pre);
	prec_buf_append(&pre, &h, sizeof(h));
	prec_buf_append(&pre, pv, sizeof(pv));
	out = splice(in, len, NULL, NULL, 0, pre.data, pre.len, NULL, 0, NULL, &outlen);
	s = prec_session_new();
	T_EQ_INT(prec_perfdata_load_buf(s, out, outlen, NULL, &rep, &d), -PREC_E_FORMAT);
	T_CONTAINS(d.msg, "cs_etm");
	prec_session_free(s);
	free(out);
	free(in);
	prec_buf_free(&pre);
}

/* ---- build ids ---- */

static bool copy_file(const char *from, const char *to)
{
	size_t n;
	uint8_t *b = slurp(from, &n);
	bool ok = b && spill(to, b, n) == 0;

	free(b);
	chmod(to, 0755);
	return ok;
}

static void buildid_cache(void)
{
	char *bin = fmt("%s/myuname", t_tmpdir()), *cache = fmt("%s/cache", t_tmpdir());
	char *empty = fmt("%s/symfs", t_tmpdir()), cmd[2048], h[41], *dir, *elf;
	uint8_t bid[20];
	int bsz, found = 0;
	struct prec_perfdata_opts o = { 0 };
	struct prec_perfdata_report rep;
	struct prec_session *s;
	const char *p;
	size_t i;

	need_perf();
	T_OK(copy_file("/usr/bin/uname", bin));
	bsz = prec_elf_build_id(bin, bid, sizeof(bid));
	if (bsz < 4)
		t_skip("uname has no build id here");
	snprintf(cmd, sizeof(cmd), "-o b.data --buildid-all -e syscalls:sys_enter_newuname -- %s",
		 bin);
	p = record("b.data", cmd);
	for (i = 0; i < (size_t)bsz; i++)
		sprintf(h + 2 * i, "%02x", bid[i]);
	dir = fmt("%s/.build-id/%.2s/%s", cache, h, h + 2);
	elf = fmt("%s/elf", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s %s", dir, empty);
	T_OK(system(cmd) == 0);
	/* the recorded path is gone; the cache holds the file */
	T_OK(copy_file(bin, elf));
	unlink(bin);
	o.buildid_dir = cache;
	s = prec_session_new();
	prec_session_set_symfs(s, empty);
	{
		struct prec_diag d;

		T_EQ_INT(prec_perfdata_load(s, p, &o, &rep, &d), 0);
	}
	T_EQ_INT(rep.buildid_cache_used, 1);
	for (i = 0; i < prec_session_nr_sb(s); i++) {
		const struct prec_sb *sb = prec_session_sb(s, i);

		if (sb->type == PREC_SB_MMAP && !strcmp(sb->u.mmap.path, bin)) {
			uint8_t want[64], got[64];
			size_t n;
			FILE *f = fopen(elf, "rb");
			struct prec_aspace *as;

			found++;
			T_EQ_INT(sb->u.mmap.build_id_size, bsz);
			T_OK(!memcmp(sb->u.mmap.build_id, bid, (size_t)bsz));
			/* the image store serves the mapping's bytes from the cached file */
			as = prec_images_aspace(prec_session_images(s), sb->pid, sb->time + 1);
			n = prec_aspace_read(as, sb->u.mmap.start, got, sizeof(got));
			T_EQ_INT(n >= sizeof(got), 1);
			T_OK(f && fseek(f, (long)sb->u.mmap.pgoff, SEEK_SET) == 0 &&
			     fread(want, 1, sizeof(want), f) == sizeof(want));
			T_OK(!memcmp(got, want, sizeof(want)));
			if (f)
				fclose(f);
		}
	}
	T_EQ_INT(found, 1);
	prec_session_free(s);

	/* a cached file with another build id is not used */
	T_OK(copy_file("/bin/true", elf) || copy_file("/usr/bin/true", elf));
	s = prec_session_new();
	prec_session_set_symfs(s, empty);
	T_EQ_INT(prec_perfdata_load(s, p, &o, &rep, NULL), 0);
	T_EQ_INT(rep.buildid_cache_used, 0);
	prec_session_free(s);

	/* older perf linked the file itself at .build-id/xx/rest */
	snprintf(cmd, sizeof(cmd), "rm -rf %s && mkdir -p %s/.build-id/%.2s", dir, cache, h);
	T_OK(system(cmd) == 0);
	copy_file("/usr/bin/uname", dir);
	s = prec_session_new();
	prec_session_set_symfs(s, empty);
	T_EQ_INT(prec_perfdata_load(s, p, &o, &rep, NULL), 0);
	T_EQ_INT(rep.buildid_cache_used, 1);
	prec_session_free(s);

	/* with the file under --symfs the cache is not needed */
	snprintf(cmd, sizeof(cmd), "mkdir -p %s%s && cp /usr/bin/uname %s%s", empty,
		 t_tmpdir(), empty, bin);
	T_OK(system(cmd) == 0);
	s = prec_session_new();
	prec_session_set_symfs(s, empty);
	T_EQ_INT(prec_perfdata_load(s, p, &o, &rep, NULL), 0);
	T_EQ_INT(rep.buildid_cache_used, 0);
	prec_session_free(s);
	free(bin);
	free(cache);
	free(empty);
	free(dir);
	free(elf);
}

/* ---- round trip: ptrec --emulate -> perf.data (perfexport) -> this importer ---- */

static const char *bdir(void)
{
	const char *b = getenv("B");

	return b && *b ? b : "build";
}

/* Records @prog (under $B/progs) with the software tracer into DIR/NAME. */
static const char *emu_record(const char *name, const char *events, const char *prog)
{
	static char path[4][512];
	static int k;
	char cmd[8192], ptrec[1100], plugin[1100], cwd[512], progs[1100];
	const char *e = getenv("PTREC"), *pl = getenv("PTREC_PLUGIN");
	char *p = path[k++ % 4];

	if (!getcwd(cwd, sizeof(cwd)))
		t_skip("no working directory");
	if (e && *e)
		snprintf(ptrec, sizeof(ptrec), "%s", e);
	else
		snprintf(ptrec, sizeof(ptrec), "%s/%s/ptrec", cwd, bdir());
	if (pl && *pl)
		snprintf(plugin, sizeof(plugin), "%s", pl);
	else
		snprintf(plugin, sizeof(plugin), "%s/%s/ptrec-emu.so", cwd, bdir());
	snprintf(progs, sizeof(progs), "%s%s%s/progs", bdir()[0] == '/' ? "" : cwd,
		 bdir()[0] == '/' ? "" : "/", bdir());
	if (system("command -v qemu-x86_64 >/dev/null 2>&1") || access(ptrec, X_OK) ||
	    access(plugin, R_OK))
		t_skip("no ptrec binary, plugin or qemu-x86_64 for the software tracer");
	snprintf(p, 512, "%s/%s", t_tmpdir(), name);
	snprintf(cmd, sizeof(cmd), "PTREC_PLUGIN=%s %s record --emulate -q %s -o %s -- %s/%s "
		 ">/dev/null 2>%s.err", plugin, ptrec, events, p, progs, prog, p);
	if (system(cmd)) {
		char *why = fmt("cat %s.err >&2", p);

		t_check(false, __FILE__, __LINE__, "%s failed", cmd);
		(void)!system(why);
		free(why);
	}
	return p;
}

/* The text of view @fmt of session @s. */
static char *render(struct prec_session *s, enum prec_fmt fmt)
{
	struct prec_output_opts oo;
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);

	prec_output_opts_init(&oo);
	oo.fmt = fmt;
	T_EQ_INT(prec_output_run(s, &oo, f), 0);
	fclose(f);
	return text;
}

static struct prec_session *load_ptrec(const char *path)
{
	struct prec_load_report lr;
	struct prec_tfile_reader *r = NULL;
	struct prec_session *s = prec_session_new();
	struct prec_diag d;

	T_EQ_INT(prec_load_open(path, &lr, &r, &d), 0);
	if (r)
		T_EQ_INT(prec_load_session(s, r, &lr), 0);
	prec_tfile_reader_free(r);
	return s;
}

/*
 * The lines of a view grouped by thread (the tid column), in their order:
 * streams of different threads with equal times may interleave either way.
 */
static char *by_thread(const char *text)
{
	char **l = NULL, *o = NULL, *copy = strdup(text), *save = NULL, *line;
	size_t n = 0, len = 0;
	FILE *f;

	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char comm[64];
		int tid = -1;

		/* the padding after the name grows with the deepest call seen so far */
		for (size_t e = strlen(line); e && (line[e - 1] == ' ' || line[e - 1] == '\t');)
			line[--e] = '\0';
		sscanf(line, "%63s %d", comm, &tid);
		push(&l, &n, fmt("%08d %08zu %s", tid, n, line));
	}
	qsort(l, n, sizeof(*l), str_cmp);
	f = open_memstream(&o, &len);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\n", l[i] + 18);
	fclose(f);
	free_lines(l, n);
	free(copy);
	return o;
}

/*
 * Without the aux_action bits (the exporter leaves them out for perf before
 * 6.14) the triggers are plain events: drop what the views say about them.
 */
static char *without_triggers(char *text)
{
	char *o = NULL, *save = NULL, *line;
	size_t len = 0;
	FILE *f = open_memstream(&o, &len);

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *by = strstr(line, "  (resumed by ");

		if (!by)
			by = strstr(line, "  (paused by ");
		if (strstr(line, " trigger ") && strstr(line, "-- "))
			continue;
		if (by)
			*by = '\0';
		fprintf(f, "%s\n", line);
	}
	fclose(f);
	free(text);
	return o;
}

/* Exports @ptrec, imports the perf.data, and compares the views of both. */
static void round_trip(const char *ptrec, size_t want_streams)
{
	char *out = fmt("%s.perf.data", ptrec), *sym = fmt("%s.sym", ptrec);
	struct prec_perf_export_opts eo = { .symfs_dir = sym };
	struct prec_perf_export_report er;
	struct prec_perfdata_report rep;
	struct prec_session *a, *b;
	struct prec_diag d;
	static const enum prec_fmt fmts[] = { PREC_FMT_CALL_TRACE, PREC_FMT_CALL_RET_TRACE,
					      PREC_FMT_BRANCHES, PREC_FMT_INSN_TRACE };
	int err = prec_perf_export(ptrec, out, &eo, &er, &d);
	bool no_actions = false;

	T_EQ_INT(err, 0);
	if (err) {
		t_check(false, __FILE__, __LINE__, "export: %s", d.msg);
		goto out;
	}
	for (uint32_t i = 0; i < prec_notes_kept(&er.notes); i++)
		no_actions |= strstr(er.notes.text[i], "aux_action") != NULL;
	a = load_ptrec(ptrec);
	b = load(out, &rep, NULL);
	if (!b) {
		prec_session_free(a);
		goto out;
	}
	T_EQ_INT(prec_session_nr_streams(b), want_streams);
	T_EQ_INT(prec_session_nr_streams(a), prec_session_nr_streams(b));
	for (size_t i = 0; i < prec_session_nr_streams(a) && i < prec_session_nr_streams(b); i++) {
		const struct prec_stream *sa = prec_session_stream(a, i);
		const struct prec_stream *sb = stream_of(b, sa->cpu, sa->tid);

		/* the trace bytes come back exactly (padding removed, AUX end respected) */
		T_OK(sb && sb->len == sa->len && !memcmp(sb->data, sa->data, sa->len));
		T_OK(sb && sb->base == sa->base && sb->nr_gaps == sa->nr_gaps);
	}
	T_EQ_INT(prec_session_nr_events(a), prec_session_nr_events(b));
	for (size_t i = 0; i < prec_session_nr_events(a); i++) {
		T_EQ_STR(prec_session_event(a, (int)i)->name, prec_session_event(b, (int)i)->name);
		enum prec_evkind ka = prec_session_event(a, (int)i)->kind;

		if (no_actions && (ka == PREC_EVK_PAUSE || ka == PREC_EVK_RESUME))
			ka = PREC_EVK_OTHER;
		T_EQ_INT(ka, prec_session_event(b, (int)i)->kind);
	}
	T_EQ_U64(prec_session_tsc_to_time(a, 123456789), prec_session_tsc_to_time(b, 123456789));
	{
		struct prec_buf st = { 0 };
		const struct prec_stream *x = prec_session_stream(b, 0);
		char *want = fmt("%-12s %12zu %8zu", "", x ? x->len : 0, x ? x->nr_gaps : 0);

		/* the stream name column is left out of the match */
		T_EQ_INT(prec_perfdata_file_stats(b, &rep, &st), 0);
		T_CONTAINS(st.data, want + 12);
		T_CONTAINS(st.data, "file: perf.data (file form)");
		T_CONTAINS(st.data, " AUXTRACE records");
		free(want);
		prec_buf_free(&st);
	}
	for (size_t k = 0; k < PREC_ARRAY_SIZE(fmts); k++) {
		char *ra = render(a, fmts[k]), *rb = render(b, fmts[k]);
		char *ta, *tb;

		if (no_actions)
			ra = without_triggers(ra);
		ta = by_thread(ra);
		tb = by_thread(rb);

		free(ra);
		free(rb);

		T_OK(ta && strlen(ta) > 100);
		if (ta && tb && strcmp(ta, tb)) {
			size_t i = 0;

			while (ta[i] && ta[i] == tb[i])
				i++;
			while (i && ta[i - 1] != '\n')
				i--;
			t_check(false, __FILE__, __LINE__, "view %d differs at byte %zu:\n%.300s\n"
				"vs perf.data:\n%.300s", (int)fmts[k], i, ta + i, tb + i);
		}
		free(ta);
		free(tb);
	}
	prec_session_free(a);
	prec_session_free(b);
out:
	free(out);
	free(sym);
}

static void round_trip_calls(void)
{
	round_trip(emu_record("calls.ptrec", "", "calls"), 1);
}

static void round_trip_threads(void)
{
	round_trip(emu_record("threads.ptrec", "", "threads"), 5);
}

/* pause/resume windows: the trigger events keep their kinds, the windows their places */
static void round_trip_windows(void)
{
	const char *p = emu_record("win.ptrec", "-e 'intel_pt/aux-action=start-paused/u' "
				   "-e 'instructions/period=20000,aux-action=resume,name=Resume/u' "
				   "-e 'instructions/period=50000,aux-action=pause,name=Pause/u'",
				   "calls");

	round_trip(p, 1);
}

/* ---- damaged and hostile files ---- */

static int try_load(const void *b, size_t n, struct prec_perfdata_report *rep,
		    struct prec_diag *d)
{
	struct prec_session *s = prec_session_new();
	int err = prec_perfdata_load_buf(s, b, n, NULL, rep, d);

	prec_session_free(s);
	return err;
}


static void truncations_file(void)
{
	const char *p = record("tp.data", "-o tp.data -e syscalls:sys_enter_newuname,"
				"syscalls:sys_exit_newuname -- uname");
	struct prec_perfdata_report rep;
	struct prec_diag d;
	size_t len, cut, bad = 0;
	uint8_t *b = slurp(p, &len);

	T_EQ_INT(try_load(b, len, &rep, &d), 0);
	/* every cut of a file-form perf.data loses a section: each must be an error */
	for (cut = 0; cut < len; cut++) {
		uint8_t *c = malloc(cut ? cut : 1);
		int err;

		memcpy(c, b, cut);
		err = try_load(c, cut, &rep, &d);
		if (!bad_ok(err, &d) && bad++ < 5)
			t_check(false, __FILE__, __LINE__, "cut at %zu: err %d msg '%s'", cut, err,
				d.msg);
		free(c);
	}
	T_EQ_INT(bad, 0);
	free(b);
}

static void truncations_pipe(void)
{
	const char *p = record("tp.pipe", "-o - -e syscalls:sys_enter_newuname -- uname > tp.pipe");
	struct prec_perfdata_report rep;
	struct prec_diag d;
	size_t len, cut, bad = 0, partial = 0, off;
	uint8_t *b = slurp(p, &len);
	bool *boundary = calloc(len + 1, 1);

	/* a pipe has no end marker: a cut between records looks like a short recording */
	for (off = 16; off + 8 <= len;) {
		uint32_t type, tsz;
		uint16_t size;

		boundary[off] = true;
		memcpy(&type, b + off, 4);
		memcpy(&size, b + off + 6, 2);
		if (size < 8)
			break;
		off += size;
		if (type == PERF_RECORD_HEADER_TRACING_DATA) {
			memcpy(&tsz, b + off - size + 8, 4);
			off += PREC_ALIGN_UP(tsz, 8);
		}
	}
	for (cut = 0; cut < len; cut++) {
		uint8_t *c = malloc(cut ? cut : 1);
		int err;

		memcpy(c, b, cut);
		err = try_load(c, cut, &rep, &d);
		if (err == 0) {
			/* loads only when the attrs came before the cut; says it was cut */
			if (!rep.cut_short && !boundary[cut] && bad++ < 5)
				t_check(false, __FILE__, __LINE__, "cut at %zu loaded silently",
					cut);
			partial++;
		} else if (!bad_ok(err, &d) && bad++ < 5) {
			t_check(false, __FILE__, __LINE__, "cut at %zu: err %d no message", cut,
				err);
		}
		free(c);
	}
	T_EQ_INT(bad, 0);
	T_OK(partial > 0);
	free(boundary);
	free(b);
}

static void wr64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void wr32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* The offset of feature @bit's section entry in the table after the data. */
static size_t feat_entry(const uint8_t *b, unsigned bit)
{
	const struct perf_file_header *h = (const void *)b;
	size_t k = 0;

	for (unsigned i = 1; i < bit; i++)
		if (h->adds_features[i / 64] & (1ull << (i % 64)))
			k++;
	return (size_t)(h->data.offset + h->data.size) + 16 * k;
}

struct corrupt {
	const char *name;
	void (*fn)(uint8_t *b, size_t len);
	const char *msg;          /* expected in the message */
};

#define HDR(b) ((struct perf_file_header *)(b))
static void c_magic(uint8_t *b, size_t n) { memcpy(b, "PERFILE3", 8); }
static void c_swapped(uint8_t *b, size_t n) { memcpy(b, "2ELIFREP", 8); }
static void c_hsize(uint8_t *b, size_t n) { HDR(b)->size = 105; }
static void c_attr_size0(uint8_t *b, size_t n) { HDR(b)->attr_size = 0; }
static void c_attr_size_huge(uint8_t *b, size_t n) { HDR(b)->attr_size = 1ull << 40; }
static void c_attr_size_odd(uint8_t *b, size_t n) { HDR(b)->attr_size = 100; }
static void c_attrs_past(uint8_t *b, size_t n) { HDR(b)->attrs.offset = n - 8; }
static void c_attrs_header(uint8_t *b, size_t n) { HDR(b)->attrs.offset = 16; }
static void c_attrs_huge(uint8_t *b, size_t n) { HDR(b)->attrs.size = HDR(b)->attr_size << 40; }
static void c_data_past(uint8_t *b, size_t n) { HDR(b)->data.offset = n + 4096; }
static void c_data_huge(uint8_t *b, size_t n) { HDR(b)->data.size = UINT64_MAX - 64; }
static void c_data_overlap(uint8_t *b, size_t n) { HDR(b)->attrs.offset = HDR(b)->data.offset; }
static void c_all_features(uint8_t *b, size_t n)
{
	memset(HDR(b)->adds_features, 0xff, sizeof(HDR(b)->adds_features));
}
static void c_feat_past(uint8_t *b, size_t n)
{
	wr64(b + feat_entry(b, PERF_HEADER_HOSTNAME), n + 1);
}
static void c_feat_overlap(uint8_t *b, size_t n)
{
	wr64(b + feat_entry(b, PERF_HEADER_HOSTNAME), HDR(b)->data.offset + 8);
}
static void c_feat_huge(uint8_t *b, size_t n)
{
	wr64(b + feat_entry(b, PERF_HEADER_CMDLINE) + 8, UINT64_MAX);
}
static void c_ids_past(uint8_t *b, size_t n)
{
	wr64(b + HDR(b)->attrs.offset + HDR(b)->attr_size - 16, n);
}
static void c_ids_odd(uint8_t *b, size_t n)
{
	wr64(b + HDR(b)->attrs.offset + HDR(b)->attr_size - 8, 12);
}
static void c_ids_dup(uint8_t *b, size_t n)
{
	/* both attrs point at the same id array */
	const uint8_t *a0 = b + HDR(b)->attrs.offset;

	memcpy(b + HDR(b)->attrs.offset + 2 * HDR(b)->attr_size - 16, a0 + HDR(b)->attr_size - 16,
	       16);
}
static void c_rec_size0(uint8_t *b, size_t n) { memset(b + HDR(b)->data.offset + 6, 0, 2); }
static void c_rec_size4(uint8_t *b, size_t n)
{
	b[HDR(b)->data.offset + 6] = 4;
	b[HDR(b)->data.offset + 7] = 0;
}
static void c_rec_past(uint8_t *b, size_t n)
{
	/* the last record claims more than the data section has */
	b[HDR(b)->data.offset + 6] = 0xff;
	b[HDR(b)->data.offset + 7] = 0xff;
	HDR(b)->data.size = 0x100;
}
static void c_auxtrace_huge(uint8_t *b, size_t n)
{
	uint8_t *r = b + HDR(b)->data.offset;

	wr32(r, PERF_RECORD_AUXTRACE);
	r[6] = 48;
	r[7] = 0;
	wr64(r + 8, UINT64_MAX - 7);
}
static void c_auxtrace_wrap(uint8_t *b, size_t n)
{
	uint8_t *r = b + HDR(b)->data.offset;

	/* 48 + payload wraps around to 0 in 64 bits */
	wr32(r, PERF_RECORD_AUXTRACE);
	r[6] = 48;
	r[7] = 0;
	wr64(r + 8, (uint64_t)0 - 48);
}
static void c_event_desc_count(uint8_t *b, size_t n)
{
	uint8_t *f = b + rd64(b + feat_entry(b, PERF_HEADER_EVENT_DESC));

	wr32(f, 0xffffffff);
}
static void c_event_desc_attr(uint8_t *b, size_t n)
{
	uint8_t *f = b + rd64(b + feat_entry(b, PERF_HEADER_EVENT_DESC));

	wr32(f + 4, 0x7fffffff);
}
static void c_event_desc_ids(uint8_t *b, size_t n)
{
	uint8_t *f = b + rd64(b + feat_entry(b, PERF_HEADER_EVENT_DESC));
	uint32_t sz;

	memcpy(&sz, f + 4, 4);
	wr32(f + 8 + sz, 0x10000000);
}
static void c_cmdline_count(uint8_t *b, size_t n)
{
	wr32(b + rd64(b + feat_entry(b, PERF_HEADER_CMDLINE)), 0x40000000);
}
static void c_string_len(uint8_t *b, size_t n)
{
	wr32(b + rd64(b + feat_entry(b, PERF_HEADER_HOSTNAME)), 0xfffffff0);
}
static void c_buildid_size0(uint8_t *b, size_t n)
{
	uint8_t *f = b + rd64(b + feat_entry(b, PERF_HEADER_BUILD_ID));

	f[6] = f[7] = 0;
}

static const struct corrupt corruptions[] = {
	{ "magic", c_magic, "not perf.data" },
	{ "byte-swapped", c_swapped, "big-endian" },
	{ "header size", c_hsize, "header size" },
	{ "attr_size 0", c_attr_size0, "attr size" },
	{ "attr_size huge", c_attr_size_huge, "attr size" },
	{ "attr_size not dividing", c_attr_size_odd, "" },
	{ "attrs past EOF", c_attrs_past, "attr section" },
	{ "attrs over header", c_attrs_header, "header" },
	{ "attrs huge", c_attrs_huge, "attr section" },
	{ "data past EOF", c_data_past, "data section" },
	{ "data size huge", c_data_huge, "data section" },
	{ "attrs inside data", c_data_overlap, "overlaps" },
	{ "all feature bits", c_all_features, "feature" },
	{ "feature past EOF", c_feat_past, "hostname feature" },
	{ "feature over data", c_feat_overlap, "overlaps" },
	{ "feature size huge", c_feat_huge, "cmdline feature" },
	{ "ids past EOF", c_ids_past, "ids of attr" },
	{ "ids not u64s", c_ids_odd, "id array" },
	{ "ids shared", c_ids_dup, "" },
	{ "record size 0", c_rec_size0, "size 0" },
	{ "record size 4", c_rec_size4, "size 4" },
	{ "record past data", c_rec_past, "" },
	{ "auxtrace size huge", c_auxtrace_huge, "past the end of the data" },
	{ "auxtrace size wraps", c_auxtrace_wrap, "past the end of the data" },
	{ "event_desc count", c_event_desc_count, "event_desc" },
	{ "event_desc attr size", c_event_desc_attr, "event_desc" },
	{ "event_desc ids", c_event_desc_ids, "event_desc" },
	{ "cmdline count", c_cmdline_count, "cmdline" },
	{ "string length", c_string_len, "hostname" },
	{ "build-id record size 0", c_buildid_size0, "build-id" },
};

static void corrupted_headers(void)
{
	const char *p = record("tp.data", "-o tp.data --buildid-all -e syscalls:sys_enter_newuname,"
				"syscalls:sys_exit_newuname -- uname");
	size_t len;
	uint8_t *b = slurp(p, &len);

	for (size_t i = 0; i < PREC_ARRAY_SIZE(corruptions); i++) {
		uint8_t *c = malloc(len);
		struct prec_perfdata_report rep;
		struct prec_diag d;
		struct prec_buf txt = { 0 };
		int err, err2;

		memcpy(c, b, len);
		corruptions[i].fn(c, len);
		err = try_load(c, len, &rep, &d);
		T_OK(bad_ok(err, &d));
		if (corruptions[i].msg[0])
			T_CONTAINS(d.msg, corruptions[i].msg);
		err2 = prec_perfdata_describe_buf(c, len, NULL, &txt, &d);
		T_OK(err2 < 0 && d.msg[0]);
		prec_buf_free(&txt);
		free(c);
		t_row(corruptions[i].name, !t_row_failed());
	}
	free(b);
}

/* Pipe-form records with bad contents. */
static void corrupted_pipe_records(void)
{
	const char *p = record("tp.pipe", "-o - -e syscalls:sys_enter_newuname -- uname > tp.pipe");
	size_t len, off;
	uint8_t *b = slurp(p, &len);
	int seen_attr = 0, seen_feat = 0, seen_tracing = 0;

	for (off = 16; off + 8 <= len;) {
		uint32_t type;
		uint16_t size;
		uint8_t *c;
		struct prec_perfdata_report rep;
		struct prec_diag d;

		memcpy(&type, b + off, 4);
		memcpy(&size, b + off + 6, 2);
		if (size < 8)
			break;
		c = malloc(len);
		memcpy(c, b, len);
		if (type == PERF_RECORD_HEADER_ATTR && !seen_attr++) {
			wr32(c + off + 12, 0xfff0);  /* attr.size past the record */
			T_OK(bad_ok(try_load(c, len, &rep, &d), &d));
			T_CONTAINS(d.msg, "ATTR");
		} else if (type == PERF_RECORD_HEADER_FEATURE && !seen_feat++) {
			/* a hostile string length inside a feature record */
			wr32(c + off + 16, 0xffffff00);
			T_OK(bad_ok(try_load(c, len, &rep, &d), &d));
		} else if (type == PERF_RECORD_HEADER_TRACING_DATA && !seen_tracing++) {
			wr32(c + off + 8, 0x7ffffff0);  /* more tracing data than the input has */
			T_EQ_INT(try_load(c, len, &rep, &d), 0);
			T_OK(rep.cut_short);
		}
		free(c);
		if (type == PERF_RECORD_HEADER_TRACING_DATA) {
			uint32_t tsz;

			memcpy(&tsz, b + off + 8, 4);
			off += PREC_ALIGN_UP(tsz, 8);
		}
		off += size;
	}
	T_OK(seen_attr && seen_feat && seen_tracing);
	{
		/* an AUXTRACE at the end claiming more than there is (or wrapping) */
		static const uint64_t claims[] = { UINT64_MAX - 40, (uint64_t)0 - 48, 4096 };

		for (size_t k = 0; k < PREC_ARRAY_SIZE(claims); k++) {
			uint8_t *c = malloc(len + 48 + 16);
			struct perf_record_auxtrace a = { 0 };
			struct prec_perfdata_report rep;
			struct prec_diag d;

			a.header.type = PERF_RECORD_AUXTRACE;
			a.header.size = sizeof(a);
			a.size = claims[k];
			a.cpu = 0;
			memcpy(c, b, len);
			memcpy(c + len, &a, sizeof(a));
			memset(c + len + 48, 0, 16);
			T_EQ_INT(try_load(c, len + 48 + 16, &rep, &d), 0);
			T_OK(rep.cut_short);
			free(c);
		}
	}
	free(b);
}

/* zstd garbage and a COMPRESSED2 whose data_size lies. */
static void corrupted_compressed(void)
{
	const char *p = record("z.data", "-z -o z.data -e cpu-clock -c 20000 -- " LOOP_CMD);
	size_t len, off, end;
	uint8_t *b = slurp(p, &len);
	struct perf_file_header *h = (void *)b;
	int done = 0;

	off = (size_t)h->data.offset;
	end = off + (size_t)h->data.size;
	while (off + 8 <= end) {
		uint32_t type;
		uint16_t size;

		memcpy(&type, b + off, 4);
		memcpy(&size, b + off + 6, 2);
		if (size < 8)
			break;
		if ((type == PERF_RECORD_COMPRESSED || type == PERF_RECORD_COMPRESSED2) &&
		    !done++) {
			uint8_t *c = malloc(len);
			struct prec_perfdata_report rep;
			struct prec_diag d;
			size_t hdr = type == PERF_RECORD_COMPRESSED2 ? 16 : 8;

			memcpy(c, b, len);
			memset(c + off + hdr, 0xa5, size - hdr);
			T_OK(bad_ok(try_load(c, len, &rep, &d), &d));
			T_CONTAINS(d.msg, "compressed");
			/* the zstd stream cut short: the record's tail replaced by zeros */
			memcpy(c, b, len);
			memset(c + off + hdr + (size - hdr) / 2, 0, size - hdr - (size - hdr) / 2);
			T_OK(try_load(c, len, &rep, &d) < 0 ? d.msg[0] != 0 : rep.cut_short);
			free(c);
		}
		if (type == PERF_RECORD_AUXTRACE) {
			uint64_t sz;

			memcpy(&sz, b + off + 8, 8);
			off += sz;
		}
		off += size;
	}
	T_OK(done > 0);
	free(b);
}

/* A small COMPRESSED record that expands to 32 MiB of records: refused, not loaded. */
static void decompression_bomb(void)
{
	const char *p = record("tp.pipe", "-o - -e syscalls:sys_enter_newuname -- uname > tp.pipe");
	size_t len, big = (size_t)32 << 20, cap = ZSTD_compressBound(big), zn;
	uint8_t *b = slurp(p, &len), *plain = malloc(big), *z = malloc(cap), *c;
	struct prec_perfdata_report rep;
	struct prec_diag d;
	struct perf_event_header h = { PERF_RECORD_FINISHED_ROUND, 0, 8 };

	for (size_t i = 0; i < big; i += 8)
		memcpy(plain + i, &h, 8);
	zn = ZSTD_compress(z, cap, plain, big, 19);
	T_OK(!ZSTD_isError(zn) && zn + 8 < 0xfff8);
	c = malloc(len + 8 + zn + 8);
	memcpy(c, b, len);
	h.type = PERF_RECORD_COMPRESSED;
	h.size = (uint16_t)PREC_ALIGN_UP(8 + zn, 8);
	memcpy(c + len, &h, 8);
	memcpy(c + len + 8, z, zn);
	memset(c + len + 8 + zn, 0, h.size - 8 - zn);
	T_OK(bad_ok(try_load(c, len + h.size, &rep, &d), &d));
	T_CONTAINS(d.msg, "expands more than");
	free(c);
	free(z);
	free(plain);
	free(b);
}

/* Random byte flips: anything may happen but a crash, hang or leak. */
static void random_flips(void)
{
	const char *p = record("tp.data", "-o tp.data -e syscalls:sys_enter_newuname,"
				"syscalls:sys_exit_newuname -- uname");
	const char *q = record("z.pipe",
			       "-z -o - -e syscalls:sys_enter_newuname -- uname > z.pipe");
	const char *files[2] = { p, q };
	unsigned seed = 12345;
	int ok = 0, failed = 0;

	for (int f = 0; f < 2; f++) {
		size_t len;
		uint8_t *b = slurp(files[f], &len);

		T_OK(b && len > 1024);
		if (!b || len <= 1024) {
			free(b);
			continue;
		}
		for (int it = 0; it < 1500; it++) {
			uint8_t *c = malloc(len);
			struct prec_perfdata_report rep;
			struct prec_diag d;
			struct prec_buf txt = { 0 };
			int flips = 1 + (int)(rand_r(&seed) % 4), err;

			memcpy(c, b, len);
			for (int k = 0; k < flips; k++) {
				/* most flips in the header, attrs and first records */
				size_t at = rand_r(&seed) % 3 ?
						    rand_r(&seed) % PREC_MIN(len, (size_t)1024) :
						    rand_r(&seed) % len;

				c[at] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
			}
			err = try_load(c, len, &rep, &d);
			if (err)
				T_OK(d.msg[0]);
			err ? failed++ : ok++;
			prec_perfdata_describe_buf(c, len, NULL, &txt, &d);
			prec_buf_free(&txt);
			free(c);
		}
		free(b);
	}
	T_OK(ok > 0 && failed > 0);
}

static void not_perfdata_inputs(void)
{
	struct prec_perfdata_report rep;
	struct prec_diag d;
	struct prec_session *s = prec_session_new();
	char *dir = fmt("%s/perf.data.dir", t_tmpdir());
	char *empty = fmt("%s/empty", t_tmpdir());

	T_EQ_INT(prec_perfdata_load(s, "/nonexistent/perf.data", NULL, &rep, &d), -ENOENT);
	T_CONTAINS(d.msg, "cannot open");
	mkdir(dir, 0755);
	T_EQ_INT(prec_perfdata_load(s, dir, NULL, &rep, &d), -EISDIR);
	T_CONTAINS(d.msg, "directory without");
	spill(empty, "", 0);
	T_OK(bad_ok(prec_perfdata_load(s, empty, NULL, &rep, &d), &d));
	T_OK(bad_ok(prec_perfdata_load_buf(s, "PERFILE2", 8, NULL, &rep, &d), &d));
	T_OK(bad_ok(prec_perfdata_load_buf(s, "PERFFILE\x68\0\0\0\0\0\0\0", 16, NULL, &rep, &d),
		    &d));
	T_CONTAINS(d.msg, "version 1");
	/* a pipe header alone: no events */
	T_OK(bad_ok(prec_perfdata_load_buf(s, "PERFILE2\x10\0\0\0\0\0\0\0", 16, NULL, &rep, &d),
		    &d));
	T_CONTAINS(d.msg, "no events");
	T_EQ_INT(prec_perfdata_load(NULL, "x", NULL, &rep, &d), -EINVAL);
	T_EQ_INT(prec_perfdata_load(s, "x", NULL, NULL, &d), -EINVAL);
	T_EQ_STR(prec_perfdata_record_name(PERF_RECORD_AUXTRACE), "AUXTRACE");
	T_OK(prec_perfdata_record_name(200) == NULL);
	prec_session_free(s);
	free(dir);
	free(empty);
}

/* perf died before finishing the header (data size 0): the records up to EOF load. */
static void unfinished_header(void)
{
	const char *p = record("clk.data", "-o clk.data -e cpu-clock -c 20000 -- " LOOP_CMD);
	size_t len, n_full = 0, n_cut = 0;
	uint8_t *b = slurp(p, &len);
	struct perf_file_header *h = (void *)b;
	struct prec_perfdata_report rep;
	struct prec_session *s = prec_session_new();
	struct prec_diag d;
	size_t end = (size_t)(h->data.offset + h->data.size);

	T_EQ_INT(prec_perfdata_load_buf(s, b, len, NULL, &rep, &d), 0);
	n_full = rep.nr_records[PERF_RECORD_SAMPLE];
	prec_session_free(s);
	h->data.size = 0;
	memset(h->adds_features, 0, sizeof(h->adds_features));
	s = prec_session_new();
	T_EQ_INT(prec_perfdata_load_buf(s, b, end - 20, NULL, &rep, &d), 0);
	n_cut = rep.nr_records[PERF_RECORD_SAMPLE];
	T_OK(rep.cut_short);
	T_OK(n_cut > 0 && n_cut <= n_full && n_full - n_cut <= 1);
	T_OK(rep.notes.n > 0);
	T_CONTAINS(rep.notes.text[0], "data size is 0");
	prec_session_free(s);
	free(b);
}

/*
 * Under AddressSanitizer each case ends with a leak check: the harness ends
 * its forked children with _exit(), which skips LeakSanitizer's own.
 */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
static void leak_check(void)
{
	T_EQ_INT(__lsan_do_recoverable_leak_check(), 0);
}
#else
static void leak_check(void)
{
}
#endif

#define LC(fn)                                                                 \
	static void fn##_lc(void)                                              \
	{                                                                      \
		fn();                                                          \
		leak_check();                                                  \
	}
LC(tracepoints_file)
LC(cpu_clock_file)
LC(pipe_form)
LC(pipe_from_stdin)
LC(compressed_file)
LC(record_variants)
LC(threads_directory)
LC(mixed_events_system_wide)
LC(describe_matches_perf_header)
LC(auxtrace_per_cpu)
LC(auxtrace_per_thread_and_short_info)
LC(aux_action_kinds)
LC(cs_etm_header)
LC(round_trip_calls)
LC(round_trip_threads)
LC(round_trip_windows)
LC(buildid_cache)
LC(truncations_file)
LC(truncations_pipe)
LC(corrupted_headers)
LC(corrupted_pipe_records)
LC(corrupted_compressed)
LC(decompression_bomb)
LC(random_flips)
LC(not_perfdata_inputs)
LC(unfinished_header)

#define C(fn) { #fn, fn##_lc }

/* The importer interface: which importer takes which input, and its messages. */
static void importer_choice(void)
{
	char dir[] = "/tmp/ptrec-imp.XXXXXX", path[64];
	struct prec_import_opts o;
	struct prec_import_report rep;
	struct prec_diag d = { 0 };
	struct prec_session *s;
	FILE *f;

	T_OK(mkdtemp(dir) != NULL);
	prec_import_opts_init(&o);
	/* A directory that is neither a snapshot nor perf.data: no importer. */
	o.path = dir;
	T_OK(prec_importer_find(&o, &d) == NULL);
	T_EQ_INT(d.code, -EISDIR);
	T_CONTAINS(d.msg, "neither a CoreSight snapshot");
	/* With a snapshot.ini it is a snapshot... */
	snprintf(path, sizeof(path), "%s/snapshot.ini", dir);
	f = fopen(path, "w");
	T_OK(f != NULL);
	fputs("[snapshot]\nversion=1.0\n", f);
	fclose(f);
	T_EQ_STR(prec_importer_find(&o, &d)->name, "snapshot");
	/* ...unless asked for another kind. */
	o.kind = PREC_INPUT_RAWPT;
	T_EQ_STR(prec_importer_find(&o, &d)->name, "raw PT");
	o.kind = PREC_INPUT_AUTO;
	/* Standard input is perf.data; a file that is not there is a ptrec file. */
	o.path = "-";
	T_EQ_STR(prec_importer_find(&o, &d)->name, "perf.data");
	snprintf(path, sizeof(path), "%s/none.data", dir);
	o.path = path;
	T_EQ_STR(prec_importer_find(&o, &d)->name, "ptrec");
	s = prec_session_new();
	T_EQ_INT(prec_import(s, &o, &rep, &d), -ENOENT);
	T_OK(rep.importer != NULL);
	T_CONTAINS(d.msg, "No such file");
	prec_import_report_fini(&rep);
	prec_session_free(s);
	snprintf(path, sizeof(path), "%s/snapshot.ini", dir);
	unlink(path);
	rmdir(dir);
}

static const struct t_case cases[] = {
	T(importer_choice),
	C(tracepoints_file),
	C(cpu_clock_file),
	C(pipe_form),
	C(pipe_from_stdin),
	C(compressed_file),
	C(record_variants),
	C(threads_directory),
	C(mixed_events_system_wide),
	C(describe_matches_perf_header),
	C(auxtrace_per_cpu),
	C(auxtrace_per_thread_and_short_info),
	C(aux_action_kinds),
	C(cs_etm_header),
	C(round_trip_calls),
	C(round_trip_threads),
	C(round_trip_windows),
	C(buildid_cache),
	C(truncations_file),
	C(truncations_pipe),
	C(corrupted_headers),
	C(corrupted_pipe_records),
	C(corrupted_compressed),
	C(decompression_bomb),
	C(random_flips),
	C(not_perfdata_inputs),
	C(unfinished_header),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}
