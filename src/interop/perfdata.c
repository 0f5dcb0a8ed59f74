// SPDX-License-Identifier: MIT
/* The perf.data importer (see perfdata.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "base/array.h"
#include "session/cs_meta.h"
#include "base/perf_abi.h"
#include "base/perf_format.h"
#include "interop/buildid_cache.h"
#include "interop/perfdata.h"
#include "base/symtab.h"
#include "base/util.h"

/* perf's flag on build-id records whose size byte is valid (util/event.h) */
#define BUILD_ID_SIZE_VALID (1u << 15)

#define ATTR_SIZE_VER0 64
#define FILE_HEADER_SIZE 104
#define PIPE_HEADER_SIZE 16
#define AUXTRACE_REC_SIZE 48
#define DEFAULT_MAX_INPUT ((uint64_t)16 << 30)
#define MAX_EVENTS 4096
/*
 * Sample ids in all: one per event and CPU (or traced thread). The session
 * inserts ids one by one, so the bound also bounds its work.
 */
#define MAX_IDS 32768
#define MAX_STREAMS 1024
#define MAX_DIR_PARTS 4096        /* data.N files of a perf.data directory */
#define MAX_PRIV 4096             /* u64s of AUXTRACE_INFO kept */
#define MAX_CACHE_FILE ((uint64_t)1 << 30)
#define ZBUF_SIZE ((size_t)1 << 20)
/*
 * perf's zstd records shrink 5 to 50 times; a stream that expands far more
 * is a decompression bomb, whose records would all land in the session.
 */
#define MAX_ZSTD_RATIO 1024

#define TRAILER_BITS                                                           \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |                 \
	 PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)
/* The sample fields the session reads; what follows PERIOD it never looks at. */
#define SESSION_SAMPLE_BITS                                                    \
	(TRAILER_BITS | PERF_SAMPLE_IP | PERF_SAMPLE_ADDR | PERF_SAMPLE_PERIOD)

_Static_assert(sizeof(struct perf_file_header) == FILE_HEADER_SIZE, "perf file header");
_Static_assert(sizeof(struct perf_record_auxtrace) == AUXTRACE_REC_SIZE, "auxtrace record");

struct pd_event {
	struct prec_attr attr;
	uint32_t attr_bytes;      /* attr size as stored in the file */
	uint64_t *ids;
	size_t nr_ids, cap_ids;
	char *name;
	uint64_t canon_id;        /* id written into re-encoded records */
	int sess;                 /* session index */
};

struct pd_bid {
	char *path;
	size_t seq;
	uint8_t id[PREC_BUILD_ID_MAX];
	uint8_t size;
	int32_t pid;
	uint16_t misc;
	bool exec_mapped;
};

struct pd_name {                  /* a name for the event holding an id */
	uint64_t id;
	size_t seq;               /* later names win */
	char *name;
	bool own;
};

struct pd_id {                    /* the sample id index */
	uint64_t id;
	int ev;
};

struct pd_pmu {
	uint32_t type;
	char *name;
};

struct pd_etm_cpu {
	uint64_t magic;
	int32_t cpu;
	uint32_t nparams;
};

/* An AUXTRACE piece held back until the next one of its stream shows its padding. */
struct pd_pend {
	int cpu, tid;
	uint64_t offset;
	const uint8_t *data;
	uint64_t size;
	uint64_t aux_end;         /* end of the AUX records' data, 0 if none */
	bool live;
};

struct pd_in {
	const uint8_t *p;
	size_t n;
	void *map;
	size_t map_len;
	uint8_t *heap;
	char name[32];            /* data.N of a directory part */
};

struct pd {
	const uint8_t *buf;
	size_t len;
	const struct prec_perfdata_opts *o;
	struct prec_perfdata_report *rep;
	struct prec_diag *d;
	struct prec_session *s;   /* NULL when only describing */
	int pass;                 /* 1: metadata and counts, 2: feed the session */

	struct perf_file_header fh;
	size_t data_off, data_len; /* the record region */
	const struct pd_in *parts; /* data.N files of a directory (raw records) */
	size_t nr_parts;
	const char *part_name;    /* the data.N file being walked, else NULL */

	struct pd_event *ev;
	size_t nr_ev;
	size_t raw_ids;           /* ids added, before duplicates are dropped */
	struct pd_id *idx;        /* sorted by id, after pass 1 */
	size_t nr_idx;
	struct pd_name *names;    /* EVENT_DESC and EVENT_UPDATE names */
	size_t nr_names;
	struct prec_attr *desc_attr; /* EVENT_DESC attrs by position (for id-less files) */
	char **desc_name;
	size_t nr_desc;
	int id_pos, is_pos;       /* where records hold their id (perf's evlist rules) */
	bool sample_id_all;

	char *hostname, *osrelease, *version, *arch, *cpudesc, *cpuid;
	uint32_t cpus_avail, cpus_online;
	uint64_t total_mem;
	char **cmdline;
	uint32_t cmdline_n;
	struct pd_bid *bids;
	size_t nr_bids;
	struct pd_pmu *pmus;
	size_t nr_pmus;
	bool have_comp;
	uint32_t comp_ver, comp_type, comp_level, comp_ratio, comp_mmap_len;
	bool have_stime;
	uint64_t stime_first, stime_last;
	bool have_clockid;
	uint64_t clockid_res;

	bool have_info;
	uint32_t aux_type;
	uint64_t *priv;
	size_t npriv;
	char *pt_filter;
	bool pt_have_evtrace;
	uint64_t pt_evtrace;
	struct pd_etm_cpu *etm;
	size_t nr_etm;
	struct prec_cs_meta *cs;   /* cs_etm: trace unit metadata, until attached */
	bool aux_cpu_known;
	bool aux_per_cpu;          /* the first AUXTRACE record names a CPU */
	unsigned nr_bad_hw_id;
	bool hw_id_changed;

	bool have_tc;
	struct perf_record_time_conv tc;
	size_t tc_size;

	unsigned nr_auxtrace_errors;
	uint64_t nr_aux_records;
	uint64_t first_reference;  /* of the first AUXTRACE record */

	ZSTD_DStream *zs;
	uint8_t *zbuf;
	size_t zlen;
	uint64_t zin, zout;       /* compressed bytes in, decompressed out (this pass) */

	struct pd_pend *pend;
	size_t nr_pend, last_pend;
	bool per_cpu;

	uint8_t *rec;             /* a re-encoded record (PD_REC_SIZE), made at the first */
};

#define PD_REC_SIZE (65536 + 64)

static void wr64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void wr32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void wr16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static void note(struct pd *pd, const char *fmt, ...) prec_printf(2, 3);
static void note(struct pd *pd, const char *fmt, ...)
{
	struct prec_perfdata_report *rep = pd->rep;
	va_list ap;

	/* Notes come from pass 1 only, so each is said once. */
	if (pd->pass == 2 && pd->s)
		return;
	va_start(ap, fmt);
	prec_notes_vadd(&rep->notes, fmt, ap);
	va_end(ap);
}

/* A note in pass 2 (things only feeding the session finds). */
static void note2(struct pd *pd, const char *fmt, ...) prec_printf(2, 3);
static void note2(struct pd *pd, const char *fmt, ...)
{
	struct prec_perfdata_report *rep = pd->rep;
	va_list ap;

	va_start(ap, fmt);
	prec_notes_vadd(&rep->notes, fmt, ap);
	va_end(ap);
}

static const char *const rec_names[] = {
	[PERF_RECORD_MMAP] = "MMAP",
	[PERF_RECORD_LOST] = "LOST",
	[PERF_RECORD_COMM] = "COMM",
	[PERF_RECORD_EXIT] = "EXIT",
	[PERF_RECORD_THROTTLE] = "THROTTLE",
	[PERF_RECORD_UNTHROTTLE] = "UNTHROTTLE",
	[PERF_RECORD_FORK] = "FORK",
	[PERF_RECORD_READ] = "READ",
	[PERF_RECORD_SAMPLE] = "SAMPLE",
	[PERF_RECORD_MMAP2] = "MMAP2",
	[PERF_RECORD_AUX] = "AUX",
	[PERF_RECORD_ITRACE_START] = "ITRACE_START",
	[PERF_RECORD_LOST_SAMPLES] = "LOST_SAMPLES",
	[PERF_RECORD_SWITCH] = "SWITCH",
	[PERF_RECORD_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE",
	[PERF_RECORD_NAMESPACES] = "NAMESPACES",
	[PERF_RECORD_KSYMBOL] = "KSYMBOL",
	[PERF_RECORD_BPF_EVENT] = "BPF_EVENT",
	[PERF_RECORD_CGROUP] = "CGROUP",
	[PERF_RECORD_TEXT_POKE] = "TEXT_POKE",
	[PERF_RECORD_AUX_OUTPUT_HW_ID] = "AUX_OUTPUT_HW_ID",
	[PERF_RECORD_HEADER_ATTR] = "ATTR",
	[PERF_RECORD_HEADER_EVENT_TYPE] = "EVENT_TYPE",
	[PERF_RECORD_HEADER_TRACING_DATA] = "TRACING_DATA",
	[PERF_RECORD_HEADER_BUILD_ID] = "BUILD_ID",
	[PERF_RECORD_FINISHED_ROUND] = "FINISHED_ROUND",
	[PERF_RECORD_ID_INDEX] = "ID_INDEX",
	[PERF_RECORD_AUXTRACE_INFO] = "AUXTRACE_INFO",
	[PERF_RECORD_AUXTRACE] = "AUXTRACE",
	[PERF_RECORD_AUXTRACE_ERROR] = "AUXTRACE_ERROR",
	[PERF_RECORD_THREAD_MAP] = "THREAD_MAP",
	[PERF_RECORD_CPU_MAP] = "CPU_MAP",
	[PERF_RECORD_STAT_CONFIG] = "STAT_CONFIG",
	[PERF_RECORD_STAT] = "STAT",
	[PERF_RECORD_STAT_ROUND] = "STAT_ROUND",
	[PERF_RECORD_EVENT_UPDATE] = "EVENT_UPDATE",
	[PERF_RECORD_TIME_CONV] = "TIME_CONV",
	[PERF_RECORD_HEADER_FEATURE] = "FEATURE",
	[PERF_RECORD_COMPRESSED] = "COMPRESSED",
	[PERF_RECORD_FINISHED_INIT] = "FINISHED_INIT",
	[PERF_RECORD_COMPRESSED2] = "COMPRESSED2",
};

const char *prec_perfdata_record_name(uint32_t type)
{
	if (type < PREC_ARRAY_SIZE(rec_names))
		return rec_names[type];
	return NULL;
}

static const char *const feat_names[] = {
	[PERF_HEADER_TRACING_DATA] = "tracing_data",
	[PERF_HEADER_BUILD_ID] = "build_id",
	[PERF_HEADER_HOSTNAME] = "hostname",
	[PERF_HEADER_OSRELEASE] = "osrelease",
	[PERF_HEADER_VERSION] = "version",
	[PERF_HEADER_ARCH] = "arch",
	[PERF_HEADER_NRCPUS] = "nrcpus",
	[PERF_HEADER_CPUDESC] = "cpudesc",
	[PERF_HEADER_CPUID] = "cpuid",
	[PERF_HEADER_TOTAL_MEM] = "total_mem",
	[PERF_HEADER_CMDLINE] = "cmdline",
	[PERF_HEADER_EVENT_DESC] = "event_desc",
	[PERF_HEADER_CPU_TOPOLOGY] = "cpu_topology",
	[PERF_HEADER_NUMA_TOPOLOGY] = "numa_topology",
	[PERF_HEADER_BRANCH_STACK] = "branch_stack",
	[PERF_HEADER_PMU_MAPPINGS] = "pmu_mappings",
	[PERF_HEADER_GROUP_DESC] = "group_desc",
	[PERF_HEADER_AUXTRACE] = "auxtrace",
	[PERF_HEADER_STAT] = "stat",
	[PERF_HEADER_CACHE] = "cache",
	[PERF_HEADER_SAMPLE_TIME] = "sample_time",
	[PERF_HEADER_MEM_TOPOLOGY] = "mem_topology",
	[PERF_HEADER_CLOCKID] = "clockid",
	[PERF_HEADER_DIR_FORMAT] = "dir_format",
	[PERF_HEADER_BPF_PROG_INFO] = "bpf_prog_info",
	[PERF_HEADER_BPF_BTF] = "bpf_btf",
	[PERF_HEADER_COMPRESSED] = "compressed",
	[PERF_HEADER_CPU_PMU_CAPS] = "cpu_pmu_caps",
	[PERF_HEADER_CLOCK_DATA] = "clock_data",
	[PERF_HEADER_HYBRID_TOPOLOGY] = "hybrid_topology",
	[PERF_HEADER_PMU_CAPS] = "pmu_caps",
};

int prec_perfdata_probe(const void *head, size_t n)
{
	const uint8_t *p = head;

	if (!head || n < 8)
		return 0;
	if (!memcmp(p, PERF_MAGIC2, 8)) {
		if (n >= 16 && prec_rd64(p + 8) == PIPE_HEADER_SIZE)
			return PREC_PERFDATA_PIPE;
		return PREC_PERFDATA_FILE;
	}
	/* byte-swapped (big-endian writer) and the version-1 magic */
	if (!memcmp(p, "2ELIFREP", 8) || !memcmp(p, "PERFFILE", 8))
		return PREC_PERFDATA_FILE;
	return 0;
}

int prec_perfdata_probe_path(const char *path)
{
	uint8_t head[16];
	char sub[4096];
	struct stat st;
	long n;
	int fd, r;

	if (!path || stat(path, &st))
		return 0;
	if (S_ISDIR(st.st_mode)) {
		if (snprintf(sub, sizeof(sub), "%s/data", path) >= (int)sizeof(sub))
			return 0;
		return prec_perfdata_probe_path(sub) == PREC_PERFDATA_FILE ? PREC_PERFDATA_DIR : 0;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = prec_read_full(fd, head, sizeof(head));
	close(fd);
	r = n > 0 ? prec_perfdata_probe(head, (size_t)n) : 0;
	return r;
}

/* ---- the input ---- */

static void input_close(struct pd_in *in)
{
	if (in->map)
		munmap(in->map, in->map_len);
	free(in->heap);
	memset(in, 0, sizeof(*in));
}

static int read_all(int fd, const struct prec_perfdata_opts *o, struct pd_in *in,
		    const char *path, struct prec_diag *d)
{
	uint64_t max = o && o->max_input ? o->max_input : DEFAULT_MAX_INPUT;
	size_t cap = 0, len = 0;
	uint8_t *b = NULL;

	if (o && o->stdin_head_len) {
		cap = PREC_MAX(o->stdin_head_len, (size_t)65536);
		b = malloc(cap);
		if (!b)
			return -ENOMEM;
		memcpy(b, o->stdin_head, o->stdin_head_len);
		len = o->stdin_head_len;
	}
	for (;;) {
		long r;

		if (len == cap) {
			size_t nc = cap ? cap * 2 : 65536;
			uint8_t *nb;

			if (cap >= max) {
				free(b);
				return prec_diag_set(d, -EFBIG, -1, "%s: input larger than %" PRIu64
						     " bytes", path, max);
			}
			if (nc > max)
				nc = (size_t)max;
			nb = realloc(b, nc);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
			cap = nc;
		}
		r = prec_read_full(fd, b + len, cap - len);
		if (r < 0) {
			free(b);
			return prec_diag_set(d, (int)r, -1, "%s: cannot read: %s", path,
					     strerror((int)-r));
		}
		len += (size_t)r;
		if (len < cap)
			break;
	}
	in->heap = b;
	in->p = b;
	in->n = len;
	return 0;
}

static int input_open(const char *path, const struct prec_perfdata_opts *o, struct pd_in *in,
		      struct prec_diag *d)
{
	bool is_stdin = !strcmp(path, "-");
	struct stat st;
	int fd, err;

	memset(in, 0, sizeof(*in));
	fd = is_stdin ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		return prec_diag_set(d, err, -1, "%s: cannot open: %s", path, strerror(errno));
	}
	if (fstat(fd, &st)) {
		err = -errno;
		prec_diag_set(d, err, -1, "%s: cannot stat: %s", path, strerror(errno));
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		err = prec_diag_set(d, -EISDIR, -1,
				    "%s is a directory without a perf.data 'data' file in it", path);
		goto out;
	}
	if (S_ISREG(st.st_mode) && !(is_stdin && o && o->stdin_head_len)) {
		off_t here = is_stdin ? lseek(fd, 0, SEEK_CUR) : 0;

		if (here == 0 && st.st_size > 0) {
			void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);

			if (m != MAP_FAILED) {
				in->map = m;
				in->map_len = (size_t)st.st_size;
				in->p = m;
				in->n = (size_t)st.st_size;
				err = 0;
				goto out;
			}
		}
	}
	err = read_all(fd, o, in, is_stdin ? "standard input" : path, d);
out:
	if (!is_stdin)
		close(fd);
	return err;
}

/*
 * perf record --threads writes a directory: "data" holds the header, the
 * attrs, the features and the synthesized records; each "data.N" holds the
 * raw records one reader thread took from its rings.
 */
struct pd_dir {
	struct pd_in main;
	struct pd_in *parts;
	size_t nr_parts;
};

static void dir_close(struct pd_dir *dir)
{
	size_t i;

	input_close(&dir->main);
	for (i = 0; i < dir->nr_parts; i++)
		input_close(&dir->parts[i]);
	free(dir->parts);
	memset(dir, 0, sizeof(*dir));
}

static int part_cmp(const void *a, const void *b)
{
	const struct pd_in *x = a, *y = b;

	return strtoul(x->name + 5, NULL, 10) < strtoul(y->name + 5, NULL, 10) ? -1 : 1;
}

/* A "data.N" name (N decimal, no sign or leading junk). */
static bool part_name(const char *n)
{
	size_t i;

	if (strncmp(n, "data.", 5) || !n[5] || strlen(n) > 15)
		return false;
	for (i = 5; n[i]; i++)
		if (n[i] < '0' || n[i] > '9')
			return false;
	return true;
}

/* Opens @path: a file, "-", or a perf.data directory. */
static int dir_open(const char *path, const struct prec_perfdata_opts *o, struct pd_dir *dir,
		    struct prec_diag *d)
{
	char sub[4096];
	struct stat st;
	struct dirent *e;
	DIR *dh;
	int err;

	memset(dir, 0, sizeof(*dir));
	if (strcmp(path, "-") && !stat(path, &st) && S_ISDIR(st.st_mode)) {
		if (snprintf(sub, sizeof(sub), "%s/data", path) >= (int)sizeof(sub))
			return prec_diag_set(d, -ENAMETOOLONG, -1, "%s: path too long", path);
		if (access(sub, F_OK))
			return prec_diag_set(d, -EISDIR, -1,
					     "%s is a directory without a perf.data 'data' file "
					     "in it", path);
		err = input_open(sub, o, &dir->main, d);
		if (err)
			return err;
		dh = opendir(path);
		if (!dh) {
			err = -errno;
			dir_close(dir);
			return prec_diag_set(d, err, -1, "%s: cannot list: %s", path,
					     strerror(-err));
		}
		while ((e = readdir(dh))) {
			struct pd_in *np;

			if (!part_name(e->d_name))
				continue;
			if (dir->nr_parts >= MAX_DIR_PARTS) {
				err = prec_diag_set(d, -PREC_E_FORMAT, -1,
						    "%s holds more than %d data files", path,
						    MAX_DIR_PARTS);
				break;
			}
			np = realloc(dir->parts, (dir->nr_parts + 1) * sizeof(*np));
			if (!np) {
				err = -ENOMEM;
				break;
			}
			dir->parts = np;
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			err = input_open(sub, o, &np[dir->nr_parts], d);
			if (err)
				break;
			snprintf(np[dir->nr_parts++].name, sizeof(np->name), "%.31s", e->d_name);
		}
		closedir(dh);
		if (err) {
			dir_close(dir);
			return err;
		}
		if (dir->nr_parts > 1)
			qsort(dir->parts, dir->nr_parts, sizeof(*dir->parts), part_cmp);
		return 0;
	}
	return input_open(path, o, &dir->main, d);
}

/* ---- small parsing helpers ---- */

/* A perf header string (u32 len, then len bytes holding a NUL-padded string). */
static int get_string(const uint8_t *p, size_t n, size_t *pos, char **out)
{
	uint32_t len;
	const uint8_t *z;

	if (n - *pos < 4)
		return -PREC_E_FORMAT;
	len = prec_rd32(p + *pos);
	if (len > n - *pos - 4)
		return -PREC_E_FORMAT;
	*pos += 4;
	z = memchr(p + *pos, 0, len);
	*out = strndup((const char *)p + *pos, z ? (size_t)(z - (p + *pos)) : len);
	if (!*out)
		return -ENOMEM;
	*pos += len;
	return 0;
}

static void attr_copy(struct prec_attr *a, const uint8_t *p, size_t n)
{
	memset(a, 0, sizeof(*a));
	memcpy(a, p, PREC_MIN(n, sizeof(*a)));
}

static int event_add_id(struct pd *pd, struct pd_event *e, uint64_t id)
{
	if (pd->raw_ids >= 2 * MAX_IDS)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, -1,
				     "more than %d sample ids (events times CPUs or threads): "
				     "more than this importer takes", MAX_IDS);
	if (e->nr_ids == e->cap_ids) {
		size_t nc = e->cap_ids ? e->cap_ids * 2 : 8;
		uint64_t *n = realloc(e->ids, nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		e->ids = n;
		e->cap_ids = nc;
	}
	e->ids[e->nr_ids++] = id;
	pd->raw_ids++;
	return 0;
}

/* Adds an event from attr bytes and an id array (both already bounds-checked). */
static int add_event(struct pd *pd, const uint8_t *attr, size_t attr_bytes, const uint8_t *ids,
		     size_t nr_ids, long pos)
{
	struct pd_event *e;
	size_t i;
	int err;

	if (pd->nr_ev >= MAX_EVENTS)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
				     "more than %d events: not a plausible recording", MAX_EVENTS);
	if (nr_ids > 2 * MAX_IDS)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
				     "event %zu claims %zu sample ids", pd->nr_ev, nr_ids);
	if (PREC_ARRAY_RESERVE(pd->ev, pd->nr_ev, 1))
		return -ENOMEM;
	e = &pd->ev[pd->nr_ev++];
	memset(e, 0, sizeof(*e));
	attr_copy(&e->attr, attr, attr_bytes);
	e->attr_bytes = (uint32_t)attr_bytes;
	e->sess = -1;
	for (i = 0; i < nr_ids; i++) {
		err = event_add_id(pd, e, prec_rd64(ids + 8 * i));
		if (err)
			return err;
	}
	return 0;
}

/*
 * Names the event holding sample id @id. @name is copied when @copy, else
 * borrowed (an event_desc name the pd owns anyway).
 */
static int add_name(struct pd *pd, uint64_t id, const char *name, bool copy)
{
	struct pd_name *n;

	if (pd->nr_names >= 4 * MAX_IDS)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, -1,
				     "more than %d event names: not a plausible recording",
				     4 * MAX_IDS);
	if (!(pd->nr_names & (pd->nr_names - 1))) {
		n = realloc(pd->names, (pd->nr_names ? 2 * pd->nr_names : 8) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		pd->names = n;
	}
	n = &pd->names[pd->nr_names];
	n->id = id;
	n->seq = pd->nr_names;
	n->own = copy;
	n->name = copy ? strdup(name) : (char *)name;
	if (!n->name)
		return -ENOMEM;
	pd->nr_names++;
	return 0;
}

/* ---- features ---- */

static int feat_build_id(struct pd *pd, const uint8_t *p, size_t n, long pos)
{
	size_t off = 0;

	while (off < n) {
		uint16_t size, misc;
		struct pd_bid *b;
		const uint8_t *z;

		if (n - off < 8)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, pos + (long)off,
					     "build-id list ends inside a record header");
		misc = prec_rd16(p + off + 4);
		size = prec_rd16(p + off + 6);
		if (size < 36 || size > n - off)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, pos + (long)off,
					     "build-id record of size %u (at least 36, at most the "
					     "%zu bytes left)", size, n - off);
		z = memchr(p + off + 36, 0, size - 36u);
		if (!(pd->nr_bids & (pd->nr_bids - 1))) {
			b = realloc(pd->bids, (pd->nr_bids ? 2 * pd->nr_bids : 8) * sizeof(*b));
			if (!b)
				return -ENOMEM;
			pd->bids = b;
		}
		b = &pd->bids[pd->nr_bids];
		memset(b, 0, sizeof(*b));
		b->seq = pd->nr_bids;
		b->pid = (int32_t)prec_rd32(p + off + 8);
		b->misc = misc;
		memcpy(b->id, p + off + 12, PREC_BUILD_ID_MAX);
		b->size = PREC_BUILD_ID_MAX;
		if (misc & BUILD_ID_SIZE_VALID)
			b->size = PREC_MIN(p[off + 32], PREC_BUILD_ID_MAX);
		b->path = strndup((const char *)p + off + 36, z ? (size_t)(z - (p + off + 36)) :
								  size - 36u);
		if (!b->path)
			return -ENOMEM;
		pd->nr_bids++;
		off += size;
	}
	return 0;
}

static int feat_event_desc(struct pd *pd, const uint8_t *p, size_t n, long pos)
{
	uint32_t nre, sz, i, k;
	size_t off = 8;
	int err;

	if (n < 8)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos, "event_desc feature too short");
	nre = prec_rd32(p);
	sz = prec_rd32(p + 4);
	if (sz < ATTR_SIZE_VER0 || sz > 4096 || nre > MAX_EVENTS || (uint64_t)nre * (sz + 8) > n)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
				     "event_desc feature: %u events of %u-byte attrs do not fit "
				     "its %zu bytes", nre, sz, n);
	if (pd->nr_desc)
		return 0; /* the first copy (a pipe may repeat features) */
	pd->desc_attr = calloc(nre ? nre : 1, sizeof(*pd->desc_attr));
	pd->desc_name = calloc(nre ? nre : 1, sizeof(*pd->desc_name));
	if (!pd->desc_attr || !pd->desc_name)
		return -ENOMEM;
	for (i = 0; i < nre; i++) {
		uint32_t nr;
		char *name = NULL;

		if (n - off < (size_t)sz + 4)
			goto bad;
		attr_copy(&pd->desc_attr[i], p + off, sz);
		off += sz;
		nr = prec_rd32(p + off);
		off += 4;
		err = get_string(p, n, &off, &name);
		if (err == -ENOMEM)
			return err;
		if (err)
			goto bad;
		pd->desc_name[i] = name;
		pd->nr_desc = i + 1;
		if (nr > (n - off) / 8)
			goto bad;
		for (k = 0; k < nr; k++) {
			err = add_name(pd, prec_rd64(p + off + 8 * k), name, false);
			if (err)
				return err;
		}
		off += 8 * (size_t)nr;
	}
	return 0;
bad:
	return prec_diag_set(pd->d, -PREC_E_FORMAT, pos + (long)off,
			     "event_desc feature: event %u runs past the section", i);
}

static int feat_pmu_mappings(struct pd *pd, const uint8_t *p, size_t n, long pos)
{
	uint32_t nr, i;
	size_t off = 4;
	int err;

	if (n < 4)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos, "pmu_mappings feature too short");
	nr = prec_rd32(p);
	if (nr > n / 8)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
				     "pmu_mappings feature: %u entries in %zu bytes", nr, n);
	if (pd->nr_pmus)
		return 0;
	pd->pmus = calloc(nr ? nr : 1, sizeof(*pd->pmus));
	if (!pd->pmus)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		if (n - off < 4)
			goto bad;
		pd->pmus[i].type = prec_rd32(p + off);
		off += 4;
		err = get_string(p, n, &off, &pd->pmus[i].name);
		if (err == -ENOMEM)
			return err;
		if (err)
			goto bad;
		pd->nr_pmus = i + 1;
	}
	return 0;
bad:
	return prec_diag_set(pd->d, -PREC_E_FORMAT, pos + (long)off,
			     "pmu_mappings feature: entry %u runs past the section", i);
}

static int feat_string(struct pd *pd, const uint8_t *p, size_t n, long pos, const char *what,
		       char **out)
{
	size_t off = 0;
	int err;

	if (*out)
		return 0;
	err = get_string(p, n, &off, out);
	if (err == -PREC_E_FORMAT)
		return prec_diag_set(pd->d, err, pos, "%s feature: string runs past the section",
				     what);
	return err;
}

/* Parses feature @feat from its section bytes (file) or HEADER_FEATURE payload (pipe). */
static int feature(struct pd *pd, unsigned feat, const uint8_t *p, size_t n, long pos)
{
	size_t off;
	uint32_t i;
	int err;

	switch (feat) {
	case PERF_HEADER_HOSTNAME:
		return feat_string(pd, p, n, pos, "hostname", &pd->hostname);
	case PERF_HEADER_OSRELEASE:
		return feat_string(pd, p, n, pos, "osrelease", &pd->osrelease);
	case PERF_HEADER_VERSION:
		return feat_string(pd, p, n, pos, "version", &pd->version);
	case PERF_HEADER_ARCH:
		return feat_string(pd, p, n, pos, "arch", &pd->arch);
	case PERF_HEADER_CPUDESC:
		return feat_string(pd, p, n, pos, "cpudesc", &pd->cpudesc);
	case PERF_HEADER_CPUID:
		return feat_string(pd, p, n, pos, "cpuid", &pd->cpuid);
	case PERF_HEADER_NRCPUS:
		if (n < 8)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
					     "nrcpus feature too short");
		pd->cpus_avail = prec_rd32(p);
		pd->cpus_online = prec_rd32(p + 4);
		return 0;
	case PERF_HEADER_TOTAL_MEM:
		if (n < 8)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
					     "total_mem feature too short");
		pd->total_mem = prec_rd64(p);
		return 0;
	case PERF_HEADER_CMDLINE:
		if (pd->cmdline)
			return 0;
		if (n < 4 || prec_rd32(p) > (n - 4) / 4)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
					     "cmdline feature: bad argument count");
		pd->cmdline = calloc(prec_rd32(p) + 1, sizeof(char *));
		if (!pd->cmdline)
			return -ENOMEM;
		off = 4;
		for (i = 0; i < prec_rd32(p); i++) {
			err = get_string(p, n, &off, &pd->cmdline[i]);
			if (err == -PREC_E_FORMAT)
				return prec_diag_set(pd->d, err, pos + (long)off,
						     "cmdline feature: argument %u runs past "
						     "the section", i);
			if (err)
				return err;
			pd->cmdline_n = i + 1;
		}
		return 0;
	case PERF_HEADER_EVENT_DESC:
		return feat_event_desc(pd, p, n, pos);
	case PERF_HEADER_BUILD_ID:
		return feat_build_id(pd, p, n, pos);
	case PERF_HEADER_PMU_MAPPINGS:
		return feat_pmu_mappings(pd, p, n, pos);
	case PERF_HEADER_COMPRESSED:
		if (n < 20)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
					     "compressed feature too short");
		pd->have_comp = true;
		pd->comp_ver = prec_rd32(p);
		pd->comp_type = prec_rd32(p + 4);
		pd->comp_level = prec_rd32(p + 8);
		pd->comp_ratio = prec_rd32(p + 12);
		pd->comp_mmap_len = prec_rd32(p + 16);
		return 0;
	case PERF_HEADER_SAMPLE_TIME:
		if (n < 16)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
					     "sample_time feature too short");
		pd->have_stime = true;
		pd->stime_first = prec_rd64(p);
		pd->stime_last = prec_rd64(p + 8);
		return 0;
	case PERF_HEADER_CLOCKID:
		if (n >= 8) {
			pd->have_clockid = true;
			pd->clockid_res = prec_rd64(p);
		}
		return 0;
	default:
		/* everything else (topologies, caches, BPF, vendor additions) is not needed */
		return 0;
	}
}

/* ---- the file header, attrs and sections ---- */

struct sect {
	uint64_t off, size;
	char what[48];
};

static int sect_cmp(const void *a, const void *b)
{
	const struct sect *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->size < y->size ? -1 : x->size > y->size;
}

static int check_sect(struct pd *pd, uint64_t off, uint64_t size, const char *what)
{
	if (off < FILE_HEADER_SIZE && size)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, -1,
				     "the %s section at offset %" PRIu64
				     " overlaps the file header", what, off);
	if (off > pd->len || size > pd->len - off)
		return prec_diag_set(pd->d, -PREC_E_TRUNCATED, -1,
				     "the %s section (offset %" PRIu64 ", %" PRIu64 " bytes) ends "
				     "past the end of the file (%zu bytes): the file is cut short "
				     "or damaged", what, off, size, pd->len);
	return 0;
}

static int push_sect(struct sect **v, size_t *n, uint64_t off, uint64_t size, const char *what)
{
	struct sect *nv;

	if (!size)
		return 0;
	nv = realloc(*v, (*n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n].off = off;
	nv[*n].size = size;
	snprintf(nv[*n].what, sizeof(nv[*n].what), "%s", what);
	(*n)++;
	return 0;
}

static bool feat_set(const struct perf_file_header *fh, unsigned bit)
{
	return fh->adds_features[bit / 64] & (1ull << (bit % 64));
}

static const char *feat_name(unsigned bit)
{
	return bit < PREC_ARRAY_SIZE(feat_names) && feat_names[bit] ? feat_names[bit] : "unknown";
}

/*
 * Every section the header names (attrs, their id arrays, data, the feature
 * table and the features) must lie inside the file and apart from each
 * other; that is checked before any of them is interpreted.
 */
static int check_layout(struct pd *pd, size_t nattr, size_t nfeat, bool data_open)
{
	const struct perf_file_header *fh = &pd->fh;
	uint64_t asz = fh->attr_size, feat_off = (uint64_t)pd->data_off + pd->data_len;
	struct sect *secs = NULL;
	size_t nsec = 0, i;
	unsigned bit;
	char what[48];
	int err;

	/* the attrs are read to find the id arrays: they must not be records */
	if (fh->attrs.size && pd->data_len && fh->attrs.offset < pd->data_off + pd->data_len &&
	    pd->data_off < fh->attrs.offset + fh->attrs.size)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, (long)fh->attrs.offset,
				     "the attr section (offset %" PRIu64 ") overlaps the data "
				     "section (offset %zu, %zu bytes)", fh->attrs.offset,
				     pd->data_off, pd->data_len);
	err = push_sect(&secs, &nsec, fh->attrs.offset, fh->attrs.size, "attr");
	if (!err)
		err = push_sect(&secs, &nsec, pd->data_off, pd->data_len, "data");
	for (i = 0; !err && i < nattr; i++) {
		const uint8_t *a = pd->buf + fh->attrs.offset + i * asz;
		uint64_t ioff = prec_rd64(a + asz - 16), isize = prec_rd64(a + asz - 8);

		snprintf(what, sizeof(what), "ids of attr %zu", i);
		if (isize % 8)
			err = prec_diag_set(pd->d, -PREC_E_FORMAT,
					    (long)(fh->attrs.offset + i * asz),
					    "attr %zu: its id array of %" PRIu64 " bytes is not "
					    "a whole number of u64s", i, isize);
		if (!err)
			err = check_sect(pd, ioff, isize, what);
		if (!err)
			err = push_sect(&secs, &nsec, ioff, isize, what);
	}
	if (err)
		goto out;
	if (nfeat && !data_open) {
		if (feat_off > pd->len || nfeat * 16 > pd->len - feat_off) {
			err = prec_diag_set(pd->d, -PREC_E_TRUNCATED, (long)feat_off,
					    "the table of %zu feature sections after the data "
					    "runs past the end of the file: the file is cut short "
					    "or damaged", nfeat);
			goto out;
		}
		err = push_sect(&secs, &nsec, feat_off, nfeat * 16, "feature table");
		i = 0;
		for (bit = 1; !err && bit < PERF_HEADER_FEAT_BITS; bit++) {
			const uint8_t *e;

			if (!feat_set(fh, bit))
				continue;
			e = pd->buf + feat_off + 16 * i++;
			snprintf(what, sizeof(what), "%s feature", feat_name(bit));
			err = check_sect(pd, prec_rd64(e), prec_rd64(e + 8), what);
			if (!err)
				err = push_sect(&secs, &nsec, prec_rd64(e), prec_rd64(e + 8), what);
		}
		if (err)
			goto out;
	}
	if (nsec > 1)
		qsort(secs, nsec, sizeof(*secs), sect_cmp);
	for (i = 1; i < nsec; i++) {
		if (secs[i - 1].off + secs[i - 1].size > secs[i].off) {
			err = prec_diag_set(pd->d, -PREC_E_FORMAT, (long)secs[i].off,
					    "the %s section (offset %" PRIu64 ") overlaps the %s "
					    "section (offset %" PRIu64 ", %" PRIu64 " bytes)",
					    secs[i].what, secs[i].off, secs[i - 1].what,
					    secs[i - 1].off, secs[i - 1].size);
			goto out;
		}
	}
out:
	free(secs);
	return err;
}

static int read_file_header(struct pd *pd)
{
	struct perf_file_header *fh = &pd->fh;
	size_t nattr, i, nfeat = 0;
	uint64_t attr_size, feat_off;
	bool data_open = false;
	unsigned bit;
	int err;

	if (pd->len < FILE_HEADER_SIZE)
		return prec_diag_set(pd->d, -PREC_E_TRUNCATED, -1,
				     "perf.data header cut short: %zu of %d bytes", pd->len,
				     FILE_HEADER_SIZE);
	memcpy(fh, pd->buf, sizeof(*fh));
	if (fh->size != FILE_HEADER_SIZE)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, 8,
				     "perf.data header size is %" PRIu64 ", expected %d",
				     fh->size, FILE_HEADER_SIZE);
	attr_size = fh->attr_size;
	if (attr_size < ATTR_SIZE_VER0 + sizeof(struct perf_file_section) || attr_size > 4096)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, 16,
				     "attr size %" PRIu64 " in the header is impossible",
				     attr_size);
	if (fh->attrs.size % attr_size)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, 24,
				     "attr section of %" PRIu64 " bytes is not a whole number of "
				     "%" PRIu64 "-byte attrs", fh->attrs.size, attr_size);
	err = check_sect(pd, fh->attrs.offset, fh->attrs.size, "attr");
	if (err)
		return err;
	memcpy(pd->rep->feat_bits, fh->adds_features, sizeof(pd->rep->feat_bits));
	pd->rep->data_offset = fh->data.offset;
	pd->rep->data_size = fh->data.size;
	if (fh->data.size == 0 && fh->data.offset >= FILE_HEADER_SIZE &&
	    fh->data.offset <= pd->len) {
		/* perf died before it wrote the final header: the data runs to EOF */
		data_open = true;
		pd->data_off = (size_t)fh->data.offset;
		pd->data_len = pd->len - pd->data_off;
		pd->rep->cut_short = true;
		note(pd, "the header's data size is 0 (perf record did not finish): reading "
		     "records to the end of the file, without the header features");
	} else {
		err = check_sect(pd, fh->data.offset, fh->data.size, "data");
		if (err)
			return err;
		pd->data_off = (size_t)fh->data.offset;
		pd->data_len = (size_t)fh->data.size;
	}
	nattr = (size_t)(fh->attrs.size / attr_size);
	if (nattr > MAX_EVENTS)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, 24,
				     "the attr section holds %zu events: not a plausible recording",
				     nattr);
	for (bit = 1; bit < PERF_HEADER_FEAT_BITS; bit++)
		if (feat_set(fh, bit))
			nfeat++;
	err = check_layout(pd, nattr, nfeat, data_open);
	if (err)
		return err;
	for (i = 0; i < nattr; i++) {
		const uint8_t *a = pd->buf + fh->attrs.offset + i * attr_size;
		uint64_t ioff = prec_rd64(a + attr_size - 16), isize = prec_rd64(a + attr_size - 8);

		err = add_event(pd, a, (size_t)attr_size - 16, pd->buf + ioff, (size_t)(isize / 8),
				(long)(fh->attrs.offset + i * attr_size));
		if (err)
			return err;
	}
	if (data_open)
		return 0;
	feat_off = (uint64_t)pd->data_off + pd->data_len;
	i = 0;
	for (bit = 1; bit < PERF_HEADER_FEAT_BITS; bit++) {
		const uint8_t *e;

		if (!feat_set(fh, bit))
			continue;
		e = pd->buf + feat_off + 16 * i++;
		err = feature(pd, bit, pd->buf + prec_rd64(e), (size_t)prec_rd64(e + 8), (long)prec_rd64(e));
		if (err)
			return err;
	}
	return 0;
}

/* ---- metadata records ---- */

static int rec_attr(struct pd *pd, const uint8_t *p, uint16_t size, long pos)
{
	uint32_t asz;

	if (size < 8 + ATTR_SIZE_VER0)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos, "ATTR record of %u bytes", size);
	asz = prec_rd32(p + 8 + 4);
	if (!asz)
		asz = ATTR_SIZE_VER0;
	if (asz < ATTR_SIZE_VER0 || asz > size - 8u || (size - 8u - asz) % 8)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
				     "ATTR record: attr size %u does not fit its %u bytes", asz,
				     size);
	return add_event(pd, p + 8, asz, p + 8 + asz, (size - 8u - asz) / 8, pos);
}

/*
 * ID_INDEX maps sample ids (already known from the attrs) to the mmap index,
 * CPU and thread they were read from; the session needs none of that, so
 * the record is only checked.
 */
static int rec_id_index(struct pd *pd, const uint8_t *p, uint16_t size, long pos)
{
	uint64_t nr;

	if (size < 16)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos, "ID_INDEX record too short");
	nr = prec_rd64(p + 8);
	if (nr > (size - 16u) / 32)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
				     "ID_INDEX record: %" PRIu64 " entries do not fit %u bytes",
				     nr, size);
	return 0;
}

static int rec_event_update(struct pd *pd, const uint8_t *p, uint16_t size, long pos)
{
	const uint8_t *z;

	if (size < 24)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos, "EVENT_UPDATE record too short");
	if (prec_rd64(p + 8) != 2 /* PERF_EVENT_UPDATE__NAME */ || size == 24)
		return 0;
	z = memchr(p + 24, 0, size - 24u);
	if (!z)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
				     "EVENT_UPDATE name is not terminated");
	return add_name(pd, prec_rd64(p + 16), (const char *)p + 24, true);
}

static int intel_pt_info(struct pd *pd, long pos)
{
	size_t off;
	uint64_t len;

	if (pd->npriv <= INTEL_PT_PER_CPU_MMAPS)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
				     "intel_pt AUXTRACE_INFO holds %zu values, at least %d needed",
				     pd->npriv, INTEL_PT_PER_CPU_MMAPS + 1);
	if (pd->npriv <= INTEL_PT_FILTER_STR_LEN)
		return 0;
	len = pd->priv[INTEL_PT_FILTER_STR_LEN];
	off = INTEL_PT_AUXTRACE_PRIV_MAX;
	if (len) {
		uint64_t words = (len + 1 + 7) / 8;

		if (len > 65536 || words > pd->npriv - off)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
					     "intel_pt AUXTRACE_INFO: filter string of %" PRIu64
					     " bytes does not fit the record", len);
		pd->pt_filter = strndup((const char *)&pd->priv[off], (size_t)len);
		if (!pd->pt_filter)
			return -ENOMEM;
		off += (size_t)words;
	}
	if (pd->npriv > off) {
		pd->pt_have_evtrace = true;
		pd->pt_evtrace = pd->priv[off];
	}
	return 0;
}

static int cs_etm_info(struct pd *pd, long pos)
{
	uint64_t ver, ncpu, i;
	size_t off;

	if (pd->npriv < CS_HEADER_VERSION_MAX)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos, "cs_etm AUXTRACE_INFO too short");
	ver = pd->priv[CS_HEADER_VERSION];
	if (ver > 2)
		return prec_diag_set(pd->d, -PREC_E_VERSION, pos,
				     "cs_etm AUXTRACE_INFO header version %" PRIu64
				     " (this build knows 0 to 2)", ver);
	ncpu = pd->priv[CS_PMU_TYPE_CPUS] & 0xffffffffu;
	if (ncpu > 65536 || ncpu > pd->npriv)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
				     "cs_etm AUXTRACE_INFO claims %" PRIu64 " CPUs", ncpu);
	pd->etm = calloc(ncpu ? ncpu : 1, sizeof(*pd->etm));
	if (!pd->etm)
		return -ENOMEM;
	off = CS_HEADER_VERSION_MAX;
	for (i = 0; i < ncpu; i++) {
		uint64_t magic, n;
		size_t start = off;

		if (pd->npriv - off < 3)
			goto bad;
		magic = pd->priv[off + CS_ETM_MAGIC];
		if (magic != CS_ETMV3_MAGIC && magic != CS_ETMV4_MAGIC && magic != CS_ETE_MAGIC)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
					     "cs_etm AUXTRACE_INFO: CPU block %" PRIu64
					     " has an unknown magic %#" PRIx64, i, magic);
		if (ver == 0) {
			/* v0 blocks have no parameter count: fixed lengths by kind */
			n = magic == CS_ETMV3_MAGIC ? 4 : 7;
			if (pd->npriv - off < 2 + n)
				goto bad;
			pd->etm[i].nparams = (uint32_t)n;
			off += 2 + (size_t)n;
		} else {
			n = pd->priv[off + CS_ETM_NR_TRC_PARAMS];
			if (n > pd->npriv - off - 3)
				goto bad;
			pd->etm[i].nparams = (uint32_t)n;
			off += 3 + (size_t)n;
		}
		pd->etm[i].magic = magic;
		pd->etm[i].cpu = (int32_t)pd->priv[start + CS_ETM_CPU];
		pd->nr_etm = (size_t)i + 1;
	}
	return 0;
bad:
	return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
			     "cs_etm AUXTRACE_INFO: CPU block %zu runs past the record",
			     pd->nr_etm);
}

static int rec_auxtrace_info(struct pd *pd, const uint8_t *p, uint16_t size, long pos)
{
	size_t n;

	if (size < 16 || size % 8)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
				     "AUXTRACE_INFO record of %u bytes", size);
	if (pd->have_info) {
		note(pd, "a second AUXTRACE_INFO record was ignored");
		return 0;
	}
	n = (size - 16u) / 8;
	if (n > MAX_PRIV)
		n = MAX_PRIV;
	pd->priv = calloc(n ? n : 1, 8);
	if (!pd->priv)
		return -ENOMEM;
	memcpy(pd->priv, p + 16, n * 8);
	pd->npriv = n;
	pd->have_info = true;
	pd->aux_type = prec_rd32(p + 8);
	pd->rep->auxtrace_type = pd->aux_type;
	switch (pd->aux_type) {
	case PERF_AUXTRACE_INTEL_PT:
		return intel_pt_info(pd, pos);
	case PERF_AUXTRACE_CS_ETM:
		return cs_etm_info(pd, pos);
	default:
		return 0;
	}
}

static void rec_auxtrace_error(struct pd *pd, const uint8_t *p, uint16_t size)
{
	char msg[65];

	pd->nr_auxtrace_errors++;
	if (size < 112 || pd->nr_auxtrace_errors > 4)
		return;
	memcpy(msg, p + 48, 64);
	msg[64] = '\0';
	note(pd, "the file holds a decoder error perf recorded: cpu %d pid %d tid %d ip %#" PRIx64
	     ": %s", (int32_t)prec_rd32(p + 16), (int32_t)prec_rd32(p + 20), (int32_t)prec_rd32(p + 24),
	     prec_rd64(p + 32), msg);
}

/* ---- feeding the session ---- */

static int find_event_of_id(const struct pd *pd, uint64_t id)
{
	size_t lo = 0, hi = pd->nr_idx;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pd->idx[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < pd->nr_idx && pd->idx[lo].id == id ? pd->idx[lo].ev : -1;
}

/* perf's evsel id_pos: u64 index of the id in a sample body, -1 without one. */
static int calc_id_pos(uint64_t st)
{
	int idx = 0;

	if (st & PERF_SAMPLE_IDENTIFIER)
		return 0;
	if (!(st & PERF_SAMPLE_ID))
		return -1;
	if (st & PERF_SAMPLE_IP)
		idx++;
	if (st & PERF_SAMPLE_TID)
		idx++;
	if (st & PERF_SAMPLE_TIME)
		idx++;
	if (st & PERF_SAMPLE_ADDR)
		idx++;
	return idx;
}

/* perf's evsel is_pos: u64 index of the id counted back from a trailer's end. */
static int calc_is_pos(uint64_t st)
{
	int idx = 1;

	if (st & PERF_SAMPLE_IDENTIFIER)
		return 1;
	if (!(st & PERF_SAMPLE_ID))
		return -1;
	if (st & PERF_SAMPLE_CPU)
		idx++;
	if (st & PERF_SAMPLE_STREAM_ID)
		idx++;
	return idx;
}

static size_t trailer_len(const struct pd_event *e)
{
	if (!e->attr.sample_id_all)
		return 0;
	return 8 * (size_t)__builtin_popcountll(e->attr.sample_type & TRAILER_BITS);
}

/*
 * The event of a record, as perf finds it: with one event, that one; else by
 * the id at the position all events agree on. An id of 0 (perf's synthesized
 * records carry zeroed trailers) means the first event. Returns the index,
 * or -1 when the id names no event.
 */
static int record_event(struct pd *pd, uint32_t type, const uint8_t *p, uint16_t size,
			uint64_t *idp)
{
	uint64_t id = 0;
	size_t at;

	*idp = 0;
	if (type == PERF_RECORD_SAMPLE) {
		if (pd->id_pos < 0)
			return 0;
		at = 8 + 8 * (size_t)pd->id_pos;
	} else {
		if (pd->is_pos < 0 || !pd->sample_id_all)
			return 0;
		if (size < 8 + 8 * (size_t)pd->is_pos)
			return pd->nr_ev == 1 ? 0 : -1;
		at = size - 8 * (size_t)pd->is_pos;
	}
	if (at + 8 > size)
		return pd->nr_ev == 1 ? 0 : -1;
	id = prec_rd64(p + at);
	*idp = id;
	if (pd->nr_ev == 1 || !id)
		return 0;
	return find_event_of_id(pd, id);
}

/* The first build id recorded for @path (bids are sorted by path, then order). */
static struct pd_bid *bid_for_path(struct pd *pd, const char *path)
{
	size_t lo = 0, hi = pd->nr_bids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(pd->bids[mid].path, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < pd->nr_bids && !strcmp(pd->bids[lo].path, path); lo++)
		if (pd->bids[lo].size)
			return &pd->bids[lo];
	return NULL;
}

/*
 * Re-encodes record @p for the session into pd->rec: an IDENTIFIER at the
 * front of a sample or at the end of another record's trailer, and the build
 * id of the mapped file in an MMAP2. Returns the new size, 0 to skip the
 * record, or a negative error.
 */
static long reencode(struct pd *pd, const uint8_t *p, uint16_t size, const struct pd_event *e,
		     uint64_t id)
{
	uint32_t type = prec_rd32(p);
	uint16_t misc = prec_rd16(p + 4);
	uint64_t st = e->attr.sample_type;
	uint8_t *q = pd->rec;
	size_t tl = trailer_len(e), body, n = 0;
	struct pd_bid *b = NULL;

	if (!id)
		id = e->canon_id;
	if (type == PERF_RECORD_SAMPLE) {
		/*
		 * The fields the session reads are a prefix of the sample
		 * (IDENTIFIER to PERIOD); the rest (raw data, call chains,
		 * stacks) is left out, so a sample never outgrows 64 KiB.
		 */
		size_t pre = 8 * (size_t)__builtin_popcountll(st & SESSION_SAMPLE_BITS);

		if (size - 8u < pre)
			return -PREC_E_FORMAT;
		memcpy(q, p, 8);
		if (!(st & PERF_SAMPLE_IDENTIFIER)) {
			wr64(q + n + 8, id);
			n += 8;
		}
		memcpy(q + 8 + n, p + 8, pre);
		n += 8 + pre;
		wr16(q + 6, (uint16_t)n);
		return (long)n;
	}
	if (size < 8 + tl)
		return -PREC_E_FORMAT;
	body = size - tl;
	if ((type == PERF_RECORD_MMAP || type == PERF_RECORD_MMAP2) &&
	    !(misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) {
		size_t fn = type == PERF_RECORD_MMAP ? 40 : 72;
		const uint8_t *z = body > fn ? memchr(p + fn, 0, body - fn) : NULL;
		uint16_t mode = misc & PERF_RECORD_MISC_CPUMODE_MASK;

		if (z && mode != PERF_RECORD_MISC_KERNEL && mode != PERF_RECORD_MISC_GUEST_KERNEL)
			b = bid_for_path(pd, (const char *)p + fn);
		if (b) {
			size_t name = (size_t)(z - (p + fn)) + 1;

			if (type == PERF_RECORD_MMAP2 ? prec_rd32(p + 64) & PROT_EXEC :
							!(misc & PERF_RECORD_MISC_MMAP_DATA))
				b->exec_mapped = true;
			n = PREC_ALIGN_UP(72 + name, 8);
			if (n + tl + 16 > 0xffff)
				b = NULL;
		}
		if (b) {
			uint32_t prot = PROT_READ | PROT_EXEC;

			memset(q, 0, n);
			memcpy(q, p, 40);
			wr32(q, PERF_RECORD_MMAP2);
			q[40] = b->size;
			memcpy(q + 44, b->id, b->size);
			if (type == PERF_RECORD_MMAP2) {
				prot = prec_rd32(p + 64);
				wr32(q + 68, prec_rd32(p + 68));
			} else if (misc & PERF_RECORD_MISC_MMAP_DATA) {
				prot = PROT_READ;
			}
			wr32(q + 64, prot);
			memcpy(q + 72, p + fn, (size_t)(z - (p + fn)));
			wr16(q + 4, misc | PERF_RECORD_MISC_MMAP_BUILD_ID);
		}
	}
	if (!b) {
		memcpy(q, p, body);
		n = body;
	}
	if (tl) {
		memcpy(q + n, p + body, tl);
		n += tl;
	} else {
		uint64_t t = TRAILER_BITS & st;

		/* no sample_id_all: make up the trailer the session expects */
		if (t & PERF_SAMPLE_TID) {
			wr64(q + n, UINT64_MAX);
			n += 8;
		}
		if (t & PERF_SAMPLE_TIME) {
			uint64_t tm = 0;

			if ((type == PERF_RECORD_FORK || type == PERF_RECORD_EXIT) && body >= 32)
				tm = prec_rd64(p + 24);
			wr64(q + n, tm);
			n += 8;
		}
		if (t & PERF_SAMPLE_ID) {
			wr64(q + n, id);
			n += 8;
		}
		if (t & PERF_SAMPLE_STREAM_ID) {
			wr64(q + n, 0);
			n += 8;
		}
		if (t & PERF_SAMPLE_CPU) {
			wr64(q + n, UINT32_MAX);
			n += 8;
		}
		if (t & PERF_SAMPLE_IDENTIFIER) {
			wr64(q + n, id);
			n += 8;
		}
	}
	if (!(st & PERF_SAMPLE_IDENTIFIER)) {
		wr64(q + n, id);
		n += 8;
	}
	if (n > 0xffff)
		return 0;
	wr16(q + 6, (uint16_t)n);
	return (long)n;
}

static int feed_sideband(struct pd *pd, const uint8_t *p, uint16_t size, long pos)
{
	uint32_t type = prec_rd32(p);
	uint64_t id;
	long n;
	int ev, err;

	if (!prec_session_models_record(type))
		return 0;
	ev = record_event(pd, type, p, size, &id);
	if (ev < 0) {
		if (!pd->rep->unknown_id++)
			note2(pd, "records with sample ids of no event were skipped (the first, "
			      "%s at offset %ld, has id %" PRIu64 ")",
			      prec_perfdata_record_name(type), pos, id);
		return 0;
	}
	if (id && find_event_of_id(pd, id) != ev)
		id = 0;
	if (!pd->rec && !(pd->rec = malloc(PD_REC_SIZE)))
		return -ENOMEM;
	n = reencode(pd, p, size, &pd->ev[ev], id);
	if (n <= 0) {
		if (!pd->rep->bad_records++)
			note2(pd, "malformed %s record at offset %ld skipped",
			      prec_perfdata_record_name(type), pos);
		return 0;
	}
	err = prec_session_add_sideband(pd->s, pd->rec, (size_t)n, -1);
	if (err == -PREC_E_FORMAT || err == -PREC_E_TRUNCATED) {
		if (!pd->rep->bad_records++)
			note2(pd, "malformed %s record at offset %ld skipped",
			      prec_perfdata_record_name(type), pos);
		return 0;
	}
	return err < 0 ? err : 0;
}

static int aux_add(struct pd *pd, int cpu, int tid, uint64_t offset, const uint8_t *data,
		   uint64_t size, long pos)
{
	int err;

	if (size > SIZE_MAX)
		return -EFBIG;
	err = prec_session_add_aux(pd->s, cpu, tid, offset, data, (size_t)size);
	if (err == -EINVAL) {
		/* a piece behind the start of its stream (wrapped or reordered) */
		note2(pd, "AUXTRACE at offset %ld lies before its stream's start; skipped", pos);
		return 0;
	}
	if (err == -EFBIG)
		return prec_diag_set(pd->d, err, pos,
				     "a trace stream grows past the 4 GiB the decoder takes");
	return err;
}

static struct pd_pend *pend_get(struct pd *pd, int cpu, int tid)
{
	struct pd_pend *n;
	size_t i;

	/* pieces mostly come in runs of one stream */
	if (pd->last_pend < pd->nr_pend && pd->pend[pd->last_pend].cpu == cpu &&
	    pd->pend[pd->last_pend].tid == tid)
		return &pd->pend[pd->last_pend];
	for (i = 0; i < pd->nr_pend; i++)
		if (pd->pend[i].cpu == cpu && pd->pend[i].tid == tid) {
			pd->last_pend = i;
			return &pd->pend[i];
		}
	if (pd->nr_pend >= MAX_STREAMS)
		return NULL;
	if (PREC_ARRAY_RESERVE(pd->pend, pd->nr_pend, 1))
		return NULL;
	n = &pd->pend[pd->nr_pend++];
	memset(n, 0, sizeof(*n));
	n->cpu = cpu;
	n->tid = tid;
	pd->last_pend = pd->nr_pend - 1;
	return n;
}

static int pend_flush(struct pd *pd, struct pd_pend *pp, uint64_t next_offset, bool have_next,
		      long pos)
{
	uint64_t size = pp->size;

	if (!pp->live)
		return 0;
	pp->live = false;
	/*
	 * perf pads each AUXTRACE payload to 8 bytes but steps the next one's
	 * offset by the unpadded size: where the next piece starts inside this
	 * one's last 7 bytes, those bytes are padding, not trace.
	 */
	if (have_next && next_offset > pp->offset && next_offset - pp->offset < size &&
	    size - (next_offset - pp->offset) < 8)
		size = next_offset - pp->offset;
	return aux_add(pd, pp->cpu, pp->tid, pp->offset, pp->data, size, pos);
}

static int pend_cmp(const void *a, const void *b)
{
	const struct pd_pend *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/*
 * The last piece of each stream has no successor to show its padding; the
 * kernel's AUX records of the stream (offset + size of the data it wrote)
 * say where the trace ends. Called after pass 2, before the last flush.
 */
static void find_aux_ends(struct pd *pd)
{
	size_t i, n = prec_session_nr_sb(pd->s);

	if (pd->nr_pend > 1)
		qsort(pd->pend, pd->nr_pend, sizeof(*pd->pend), pend_cmp);
	for (i = 0; i < n && pd->nr_pend; i++) {
		const struct prec_sb *sb = prec_session_sb(pd->s, i);
		struct pd_pend key = { 0 }, *pp;
		const struct prec_evdesc *ev;
		uint64_t end;

		if (sb->type != PREC_SB_AUX)
			continue;
		ev = prec_session_event(pd->s, sb->event);
		if (ev && ev->kind != PREC_EVK_TRACER)
			continue;
		key.cpu = pd->per_cpu ? sb->cpu : -1;
		key.tid = pd->per_cpu ? -1 : sb->tid;
		pp = bsearch(&key, pd->pend, pd->nr_pend, sizeof(*pd->pend), pend_cmp);
		end = sb->u.aux.offset + sb->u.aux.size;
		if (pp && end > pp->aux_end)
			pp->aux_end = end;
	}
}

static int feed_auxtrace(struct pd *pd, const uint8_t *p, bool transient, long pos)
{
	uint64_t size = prec_rd64(p + 8), offset = prec_rd64(p + 16);
	int32_t tid = (int32_t)prec_rd32(p + 36), cpu = (int32_t)prec_rd32(p + 40);
	struct pd_pend *pp;
	int err;

	if (pd->aux_type != PERF_AUXTRACE_INTEL_PT && pd->aux_type != PERF_AUXTRACE_CS_ETM &&
	    pd->have_info)
		return 0;
	/* without AUXTRACE_INFO the record itself says how it was read */
	if (pd->have_info ? pd->per_cpu : cpu >= 0)
		tid = -1;
	else
		cpu = -1;
	if (cpu < 0 && tid < 0) {
		if (!pd->rep->bad_records++)
			note2(pd, "AUXTRACE at offset %ld names neither a CPU nor a thread; "
			      "skipped", pos);
		return 0;
	}
	pp = pend_get(pd, cpu, tid);
	if (!pp)
		return pd->nr_pend >= MAX_STREAMS ?
			       prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
					     "more than %d trace streams (CPUs or threads): more "
					     "than this importer takes", MAX_STREAMS) :
			       -ENOMEM;
	err = pend_flush(pd, pp, offset, true, pos);
	if (err)
		return err;
	if (transient)
		return aux_add(pd, cpu, tid, offset, p + AUXTRACE_REC_SIZE, size, pos);
	pp->offset = offset;
	pp->data = p + AUXTRACE_REC_SIZE;
	pp->size = size;
	pp->live = true;
	return 0;
}

/*
 * The CPU in the sample_id trailer of non-sample record @p, or -1 when its
 * event's trailer holds none.
 */
static int trailer_cpu(const struct pd_event *e, const uint8_t *p, uint16_t size)
{
	uint64_t st = e->attr.sample_type;
	size_t tl = trailer_len(e), at;

	if (!tl || !(st & PERF_SAMPLE_CPU) || size < 8 + tl)
		return -1;
	at = size - tl + 8 * (size_t)__builtin_popcountll(st & (PERF_SAMPLE_TID |
			PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID));
	return (int32_t)prec_rd32(p + at);
}

/*
 * AUX_OUTPUT_HW_ID: the CoreSight trace ID a CPU's trace unit got when its
 * event was scheduled (header version 2 leaves TRCTRACEIDR unused). The CPU
 * is the one of the record's sample_id; with one trace unit, that one. A
 * record that cannot be applied is noted and skipped: the decoder then says
 * which CPU's trace it cannot tell apart.
 */
static int feed_hw_id(struct pd *pd, const uint8_t *p, uint16_t size, long pos)
{
	const struct prec_cs_source *src;
	uint64_t id, hw_id;
	uint8_t trace_id;
	int ev, cpu = -1, err;

	if (size < 16) {
		if (!pd->nr_bad_hw_id++)
			note2(pd, "AUX_OUTPUT_HW_ID record at offset %ld is too short; skipped", pos);
		return 0;
	}
	hw_id = prec_rd64(p + 8);
	ev = record_event(pd, PERF_RECORD_AUX_OUTPUT_HW_ID, p, size, &id);
	if (ev >= 0)
		cpu = trailer_cpu(&pd->ev[ev], p, size);
	if (cpu < 0 && pd->cs->n == 1)
		cpu = pd->cs->src[0].cpu;
	if (cpu < 0) {
		if (!pd->nr_bad_hw_id++)
			note2(pd, "AUX_OUTPUT_HW_ID record at offset %ld names no CPU (no sample_id "
			      "CPU): its trace ID is not used", pos);
		return 0;
	}
	src = prec_cs_meta_cpu(pd->cs, cpu);
	err = prec_cs_hw_id_trace_id(hw_id, &trace_id);
	if (!err && src && src->trace_id && src->trace_id != trace_id && !pd->hw_id_changed) {
		pd->hw_id_changed = true;
		note2(pd, "the trace ID of CPU %d changes from %#x to %#x during the recording: "
		      "the last one is used for all its trace", cpu, src->trace_id, trace_id);
	}
	err = prec_cs_meta_apply_hw_id(pd->cs, cpu, hw_id);
	if (err == -ENOMEM)
		return err;
	if (err && !pd->nr_bad_hw_id++)
		note2(pd, "AUX_OUTPUT_HW_ID record at offset %ld (CPU %d, value %#" PRIx64 ") %s; "
		      "skipped", pos, cpu, hw_id,
		      err == -ENOENT ? "names a CPU without cs_etm metadata" :
		      err == -PREC_E_VERSION ? "has an unknown version" :
					       "holds a trace ID outside 1..0x6f");
	return 0;
}

/*
 * perf marks the AUX records of a TRBE (or other unformatted) sink with
 * PERF_AUX_FLAG_CORESIGHT_FORMAT_RAW; without it the data is in formatter
 * frames. Per-thread streams move between CPUs, so there one raw record
 * makes all raw (the decoder takes a per-thread stream's format from the
 * first trace unit).
 */
static void cs_formats(struct pd *pd)
{
	size_t i, n = prec_session_nr_sb(pd->s);

	for (i = 0; i < n; i++) {
		const struct prec_sb *sb = prec_session_sb(pd->s, i);
		const struct prec_evdesc *ev;

		if (sb->type != PREC_SB_AUX || !(sb->u.aux.flags & PERF_AUX_FLAG_CORESIGHT_FORMAT_RAW))
			continue;
		ev = prec_session_event(pd->s, sb->event);
		if (ev && ev->kind != PREC_EVK_TRACER)
			continue;
		prec_cs_meta_set_format(pd->cs, pd->per_cpu && sb->cpu >= 0 ? sb->cpu : -1,
					PREC_CS_FMT_RAW);
	}
}

/* ---- walking the records ---- */

static int walk(struct pd *pd, const uint8_t *p, size_t len, long base, bool inner);

/*
 * The bytes record @p occupies: its header size, plus the payload that
 * follows AUXTRACE and TRACING_DATA records. Returns 0 and sets *@ext, or an
 * error (with @d set) for a bad size.
 */
static int extent(struct pd *pd, const uint8_t *p, size_t avail, long pos, uint64_t *ext,
		  bool inner)
{
	uint32_t type = prec_rd32(p);
	uint16_t size = prec_rd16(p + 6);
	uint64_t extra = 0;

	if (size < 8)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
				     "record at offset %ld has size %u (less than its 8-byte "
				     "header): the data is damaged", pos, size);
	if (type == PERF_RECORD_AUXTRACE || type == PERF_RECORD_HEADER_TRACING_DATA) {
		if (inner)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
					     "%s record inside compressed data",
					     prec_perfdata_record_name(type));
		if (type == PERF_RECORD_AUXTRACE) {
			if (size < AUXTRACE_REC_SIZE)
				return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
						     "AUXTRACE record at offset %ld has size %u "
						     "(48 expected)", pos, size);
			if (size <= avail)
				extra = prec_rd64(p + 8);
		} else {
			if (size < 16)
				return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
						     "TRACING_DATA record too short");
			if (size <= avail)
				extra = PREC_ALIGN_UP((uint64_t)prec_rd32(p + 8), 8);
		}
	}
	/* a payload past the input (however large the claim) reads as "cut short" */
	*ext = size <= avail && extra <= avail - size ? size + extra : UINT64_MAX;
	return 0;
}

static int decompress(struct pd *pd, const uint8_t *src, size_t n, long pos)
{
	ZSTD_inBuffer in = { src, n, 0 };
	int err;

	pd->zin += n;
	if (!pd->zs) {
		pd->zs = ZSTD_createDStream();
		pd->zbuf = malloc(ZBUF_SIZE);
		if (!pd->zs || !pd->zbuf)
			return -ENOMEM;
		ZSTD_initDStream(pd->zs);
	}
	for (;;) {
		ZSTD_outBuffer out = { pd->zbuf, ZBUF_SIZE, pd->zlen };
		size_t r = ZSTD_decompressStream(pd->zs, &out, &in), done = 0;

		if (ZSTD_isError(r))
			return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
					     "compressed record at offset %ld: %s", pos,
					     ZSTD_getErrorName(r));
		if (pd->pass == 1)
			pd->rep->decompressed_bytes += out.pos - pd->zlen;
		pd->zout += out.pos - pd->zlen;
		if (pd->zout > MAX_ZSTD_RATIO * pd->zin + ZBUF_SIZE)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
					     "compressed data at offset %ld expands more than %d "
					     "times: not a perf recording", pos, MAX_ZSTD_RATIO);
		pd->zlen = out.pos;
		/* whole records go on; a record cut between two compressed records waits */
		while (pd->zlen - done >= 8) {
			uint64_t ext;

			err = extent(pd, pd->zbuf + done, pd->zlen - done, pos, &ext, true);
			if (err)
				return err;
			if (ext > pd->zlen - done)
				break;
			err = walk(pd, pd->zbuf + done, (size_t)ext, pos, true);
			if (err)
				return err;
			done += (size_t)ext;
		}
		memmove(pd->zbuf, pd->zbuf + done, pd->zlen - done);
		pd->zlen -= done;
		if (pd->zlen == ZBUF_SIZE)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
					     "compressed data holds a record larger than %zu bytes",
					     ZBUF_SIZE);
		/* all input taken and zstd held nothing back (it had room to spare) */
		if (in.pos == in.size && out.pos < out.size)
			break;
	}
	return 0;
}

static int rec_compressed(struct pd *pd, const uint8_t *p, uint16_t size, long pos)
{
	uint32_t type = prec_rd32(p);
	size_t hdr = type == PERF_RECORD_COMPRESSED2 ? 16 : 8, n;

	if (size < hdr)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, pos, "COMPRESSED record too short");
	n = size - hdr;
	if (type == PERF_RECORD_COMPRESSED2) {
		uint64_t ds = prec_rd64(p + 8);

		if (ds > n)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
					     "COMPRESSED2 record claims %" PRIu64 " bytes of %zu",
					     ds, n);
		n = (size_t)ds;
	}
	if (pd->pass == 1)
		pd->rep->nr_compressed++;
	return decompress(pd, p + hdr, n, pos);
}

/* One record (its header checked, @ext bytes available). */
static int record(struct pd *pd, const uint8_t *p, uint64_t ext, long pos, bool inner)
{
	uint32_t type = prec_rd32(p);
	uint16_t size = prec_rd16(p + 6);

	if (pd->pass == 1) {
		if (type < PREC_PERFDATA_NR_TYPES)
			pd->rep->nr_records[type]++;
		else
			pd->rep->nr_other_type++;
	}
	if (type == PERF_RECORD_COMPRESSED || type == PERF_RECORD_COMPRESSED2) {
		if (inner)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
					     "compressed record inside compressed data");
		return rec_compressed(pd, p, size, pos);
	}
	if (pd->pass == 2) {
		if (type == PERF_RECORD_AUXTRACE)
			return feed_auxtrace(pd, p, inner, pos);
		if (type == PERF_RECORD_AUX_OUTPUT_HW_ID && pd->cs)
			return feed_hw_id(pd, p, size, pos);
		if (type < PERF_RECORD_HEADER_ATTR)
			return feed_sideband(pd, p, size, pos);
		return 0;
	}
	switch (type) {
	case PERF_RECORD_HEADER_ATTR:
		return rec_attr(pd, p, size, pos);
	case PERF_RECORD_HEADER_BUILD_ID:
		return feat_build_id(pd, p, size, pos);
	case PERF_RECORD_ID_INDEX:
		return rec_id_index(pd, p, size, pos);
	case PERF_RECORD_AUXTRACE_INFO:
		return rec_auxtrace_info(pd, p, size, pos);
	case PERF_RECORD_AUXTRACE:
		if (!pd->nr_aux_records++) {
			pd->first_reference = prec_rd64(p + 24);
			pd->aux_cpu_known = true;
			pd->aux_per_cpu = (int32_t)prec_rd32(p + 40) >= 0;
		}
		pd->rep->aux_bytes += ext - size;
		return 0;
	case PERF_RECORD_AUXTRACE_ERROR:
		rec_auxtrace_error(pd, p, size);
		return 0;
	case PERF_RECORD_EVENT_UPDATE:
		return rec_event_update(pd, p, size, pos);
	case PERF_RECORD_TIME_CONV:
		if (!pd->have_tc) {
			pd->have_tc = true;
			pd->tc_size = PREC_MIN((size_t)size, sizeof(pd->tc));
			memcpy(&pd->tc, p, pd->tc_size);
		}
		return 0;
	case PERF_RECORD_HEADER_FEATURE:
		if (size < 16)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, pos,
					     "FEATURE record too short");
		/* perf ends its pipe features with an empty HEADER_LAST_FEATURE marker */
		if (prec_rd64(p + 8) < PERF_HEADER_FEAT_BITS && size > 16) {
			unsigned f = (unsigned)prec_rd64(p + 8);

			pd->rep->feat_bits[f / 64] |= 1ull << (f % 64);
			return feature(pd, f, p + 16, size - 16u, pos + 16);
		}
		return 0;
	default:
		return 0;
	}
}

static int walk(struct pd *pd, const uint8_t *p, size_t len, long base, bool inner)
{
	size_t pos = 0;
	int err;

	while (pos < len) {
		long at = inner ? base : base + (long)pos;
		uint64_t ext;

		if (len - pos < 8)
			goto cut;
		err = extent(pd, p + pos, len - pos, at, &ext, inner);
		if (err)
			return err;
		if (ext > len - pos)
			goto cut;
		err = record(pd, p + pos, ext, at, inner);
		if (err)
			return err;
		pos += (size_t)ext;
	}
	return 0;
cut:
	if (inner)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, base,
				     "compressed data ends inside a record");
	if (pd->fh.data.size && pd->rep->format == PREC_PERFDATA_FILE && !pd->part_name)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, base + (long)pos,
				     "the record at offset %ld runs past the end of the data "
				     "section", base + (long)pos);
	pd->rep->cut_short = true;
	if (pd->pass == 1)
		note(pd, "the input%s%s ends inside a record at offset %ld: loaded up to there",
		     pd->part_name ? " file " : "", pd->part_name ? pd->part_name : "",
		     base + (long)pos);
	return 0;
}

static int walk_region(struct pd *pd, const uint8_t *p, size_t n, long base)
{
	int err;

	pd->zlen = 0;
	pd->zin = pd->zout = 0;
	if (pd->zs)
		ZSTD_initDStream(pd->zs);
	err = walk(pd, p, n, base, false);
	if (err)
		return err;
	if (pd->zlen && pd->pass == 1) {
		pd->rep->cut_short = true;
		note(pd, "the compressed data ends inside a record: %zu bytes dropped", pd->zlen);
	}
	return 0;
}

/* The data section, then the data.N files of a directory. */
static int walk_data(struct pd *pd)
{
	size_t i;
	int err;

	err = walk_region(pd, pd->buf + pd->data_off, pd->data_len, (long)pd->data_off);
	for (i = 0; !err && i < pd->nr_parts; i++) {
		size_t l;

		pd->part_name = pd->parts[i].name;
		err = walk_region(pd, pd->parts[i].p, pd->parts[i].n, 0);
		l = strlen(pd->d->msg);
		if (err && l + 16 < sizeof(pd->d->msg))
			snprintf(pd->d->msg + l, sizeof(pd->d->msg) - l, " (in %s)", pd->part_name);
	}
	pd->part_name = NULL;
	return err;
}

/* ---- from metadata to the session ---- */

static const char *pmu_name(const struct pd *pd, uint32_t type)
{
	size_t i;

	for (i = 0; i < pd->nr_pmus; i++)
		if (pd->pmus[i].type == type)
			return pd->pmus[i].name;
	return NULL;
}

static char *default_name(const struct pd *pd, const struct prec_attr *a)
{
	static const char *const hw[] = {
		"cycles", "instructions", "cache-references", "cache-misses", "branches",
		"branch-misses", "bus-cycles", "stalled-cycles-frontend",
		"stalled-cycles-backend", "ref-cycles",
	};
	static const char *const sw[] = {
		"cpu-clock", "task-clock", "page-faults", "context-switches", "cpu-migrations",
		"minor-faults", "major-faults", "alignment-faults", "emulation-faults", "dummy",
		"bpf-output", "cgroup-switches",
	};
	const char *pmu = pmu_name(pd, a->type);
	char buf[128];

	if (a->type == PERF_TYPE_HARDWARE && a->config < PREC_ARRAY_SIZE(hw))
		return strdup(hw[a->config]);
	if (a->type == PERF_TYPE_SOFTWARE && a->config < PREC_ARRAY_SIZE(sw))
		return strdup(sw[a->config]);
	if (a->type == PERF_TYPE_TRACEPOINT)
		snprintf(buf, sizeof(buf), "tracepoint:%llu", (unsigned long long)a->config);
	else if (pd->have_info && pd->aux_type == PERF_AUXTRACE_INTEL_PT &&
		 a->type == pd->priv[INTEL_PT_PMU_TYPE])
		snprintf(buf, sizeof(buf), "intel_pt/config=%#llx/", (unsigned long long)a->config);
	else if (pmu)
		snprintf(buf, sizeof(buf), "%s/config=%#llx/", pmu, (unsigned long long)a->config);
	else
		snprintf(buf, sizeof(buf), "type%u/config=%#llx/", a->type,
			 (unsigned long long)a->config);
	return strdup(buf);
}

static bool is_tracer(const struct pd *pd, const struct prec_attr *a)
{
	const char *pmu = pmu_name(pd, a->type);

	if (pd->have_info && pd->aux_type == PERF_AUXTRACE_INTEL_PT)
		return a->type == pd->priv[INTEL_PT_PMU_TYPE];
	if (pd->have_info && pd->aux_type == PERF_AUXTRACE_CS_ETM)
		return a->type == pd->priv[CS_PMU_TYPE_CPUS] >> 32;
	return pmu && (!strcmp(pmu, "intel_pt") || !strcmp(pmu, "cs_etm"));
}

static enum prec_evkind kind_of(const struct pd *pd, const struct prec_attr *a)
{
	if (is_tracer(pd, a))
		return PREC_EVK_TRACER;
	if (a->aux_action & PREC_AUX_PAUSE)
		return PREC_EVK_PAUSE;
	if (a->aux_action & PREC_AUX_RESUME)
		return PREC_EVK_RESUME;
	if (a->type == PERF_TYPE_SOFTWARE && a->config == PERF_COUNT_SW_DUMMY)
		return PREC_EVK_TRACKING;
	return PREC_EVK_OTHER;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int id_cmp(const void *a, const void *b)
{
	const struct pd_id *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->ev - y->ev;
}

static int name_cmp(const void *a, const void *b)
{
	const struct pd_name *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int bid_cmp(const void *a, const void *b)
{
	const struct pd_bid *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The last name given to @id, or NULL. */
static const char *name_of_id(const struct pd *pd, uint64_t id)
{
	size_t lo = 0, hi = pd->nr_names;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pd->names[mid].id <= id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && pd->names[lo - 1].id == id ? pd->names[lo - 1].name : NULL;
}

static int build_id_index(struct pd *pd)
{
	size_t i, k, n = 0;

	free(pd->idx);
	pd->nr_idx = 0;
	for (i = 0; i < pd->nr_ev; i++)
		n += pd->ev[i].nr_ids;
	pd->idx = malloc((n ? n : 1) * sizeof(*pd->idx));
	if (!pd->idx)
		return -ENOMEM;
	for (i = 0; i < pd->nr_ev; i++)
		for (k = 0; k < pd->ev[i].nr_ids; k++)
			pd->idx[pd->nr_idx++] = (struct pd_id){ pd->ev[i].ids[k], (int)i };
	qsort(pd->idx, pd->nr_idx, sizeof(*pd->idx), id_cmp);
	for (i = 1; i < pd->nr_idx; i++)
		if (pd->idx[i].id == pd->idx[i - 1].id)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, -1,
					     "sample id %" PRIu64 " belongs to two events (%d "
					     "and %d)", pd->idx[i].id, pd->idx[i - 1].ev,
					     pd->idx[i].ev);
	return 0;
}

/* Ids, names, the id layout and canonical ids; called between the passes. */
static int settle_events(struct pd *pd)
{
	size_t i, k, total = 0;
	int err;

	pd->rep->nr_events = (unsigned)pd->nr_ev;
	if (!pd->nr_ev)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, -1,
				     "the file describes no events (no attrs)");
	for (i = 0; i < pd->nr_ev; i++) {
		struct pd_event *e = &pd->ev[i];
		size_t n = 0;

		if (e->nr_ids > 1)
			qsort(e->ids, e->nr_ids, sizeof(*e->ids), u64_cmp);
		for (k = 0; k < e->nr_ids; k++)
			if (!n || e->ids[n - 1] != e->ids[k])
				e->ids[n++] = e->ids[k];
		e->nr_ids = n;
		total += n;
	}
	if (total > MAX_IDS)
		return prec_diag_set(pd->d, -PREC_E_FORMAT, -1,
				     "%zu sample ids (events times CPUs or threads): more than "
				     "the %d this importer takes", total, MAX_IDS);
	err = build_id_index(pd);
	if (err)
		return err;
	if (pd->nr_names > 1)
		qsort(pd->names, pd->nr_names, sizeof(*pd->names), name_cmp);
	if (pd->nr_bids > 1)
		qsort(pd->bids, pd->nr_bids, sizeof(*pd->bids), bid_cmp);
	for (i = 0; i < pd->nr_ev; i++) {
		struct pd_event *e = &pd->ev[i];

		for (k = 0; k < e->nr_ids && !e->name; k++) {
			const char *n = name_of_id(pd, e->ids[k]);

			if (n) {
				e->name = strdup(n);
				if (!e->name)
					return -ENOMEM;
			}
		}
		/* event_desc of a file without ids: by position, if the attr agrees */
		if (!e->name && i < pd->nr_desc && pd->desc_name[i] &&
		    pd->desc_attr[i].type == e->attr.type &&
		    pd->desc_attr[i].config == e->attr.config) {
			e->name = strdup(pd->desc_name[i]);
			if (!e->name)
				return -ENOMEM;
		}
		if (!e->name) {
			e->name = default_name(pd, &e->attr);
			if (!e->name)
				return -ENOMEM;
		}
	}
	pd->id_pos = calc_id_pos(pd->ev[0].attr.sample_type);
	pd->is_pos = calc_is_pos(pd->ev[0].attr.sample_type);
	pd->sample_id_all = pd->ev[0].attr.sample_id_all;
	for (i = 1; i < pd->nr_ev; i++) {
		const struct prec_attr *a = &pd->ev[i].attr;

		if (calc_id_pos(a->sample_type) != pd->id_pos ||
		    calc_is_pos(a->sample_type) != pd->is_pos || pd->id_pos < 0 || pd->is_pos < 0)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, -1,
					     "events %s and %s keep their sample ids in different "
					     "places (or none): records cannot be told apart",
					     pd->ev[0].name, pd->ev[i].name);
		if (a->sample_id_all != pd->sample_id_all)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, -1,
					     "events %s and %s disagree on sample_id_all",
					     pd->ev[0].name, pd->ev[i].name);
	}
	/* every event gets an id of its own for records that carried none */
	for (i = 0; i < pd->nr_ev; i++) {
		struct pd_event *e = &pd->ev[i];

		if (e->nr_ids) {
			e->canon_id = e->ids[0];
			continue;
		}
		e->canon_id = UINT64_MAX - i;
		while (find_event_of_id(pd, e->canon_id) >= 0)
			e->canon_id -= pd->nr_ev;
		err = event_add_id(pd, e, e->canon_id);
		if (err)
			return err;
	}
	return build_id_index(pd);
}

static int register_events(struct pd *pd)
{
	size_t i;

	for (i = 0; i < pd->nr_ev; i++) {
		struct pd_event *e = &pd->ev[i];
		struct prec_evdesc d = {
			.name = e->name,
			.kind = kind_of(pd, &e->attr),
			.sample_type = (e->attr.sample_type & SESSION_SAMPLE_BITS) |
				       PERF_SAMPLE_IDENTIFIER,
		};
		int idx = prec_session_add_event(pd->s, &d, e->ids, e->nr_ids);

		if (idx < 0)
			return idx;
		e->sess = idx;
	}
	return 0;
}

/* The value of the bits @mask of @config, shifted down (perf's intel_pt_mtc_period). */
static unsigned field(uint64_t config, uint64_t mask)
{
	if (!mask)
		return 0;
	return (unsigned)((config & mask) >> __builtin_ctzll(mask));
}

static void parse_cpuid(const char *s, struct prec_machine *m)
{
	const char *c = strchr(s, ',');
	unsigned f = 0, mo = 0, st = 0;

	if (!c)
		return;
	snprintf(m->vendor, sizeof(m->vendor), "%.*s",
		 (int)PREC_MIN((size_t)(c - s), sizeof(m->vendor) - 1), s);
	if (sscanf(c + 1, "%u,%u,%u", &f, &mo, &st) >= 2) {
		m->family = (uint16_t)f;
		m->model = (uint8_t)mo;
		m->stepping = (uint8_t)st;
	}
}

/*
 * cs_etm: the trace units from priv[] (kept in pd->cs until the session
 * takes them), timestamps through TIME_CONV, and streams per CPU or per
 * thread as the AUXTRACE records were read (perf decides so too).
 */
static int cs_machine(struct pd *pd, struct prec_machine *m)
{
	uint64_t type = pd->priv[CS_PMU_TYPE_CPUS] >> 32;
	size_t i;
	int err;

	/* the decoders and the A64 disassembler key on this vendor */
	snprintf(m->vendor, sizeof(m->vendor), "ARM");
	m->family = 0;
	m->model = 0;
	m->stepping = 0;
	m->per_cpu = pd->aux_cpu_known ? pd->aux_per_cpu : true;
	err = prec_cs_meta_from_auxtrace_info(pd->priv, pd->npriv, &pd->cs, pd->d);
	if (err == -EOPNOTSUPP) {
		char why[sizeof(pd->d->msg)];

		snprintf(why, sizeof(why), "%s", pd->d->msg);
		return prec_diag_set(pd->d, err, -1, "%s; only ETMv4 and ETE trace in perf.data "
				     "can be decoded", why);
	}
	if (err)
		return err;
	for (i = 0; i < pd->nr_ev; i++)
		if (pd->ev[i].attr.type == type)
			break;
	if (i == pd->nr_ev)
		note(pd, "no event of the cs_etm PMU type %" PRIu64 " that AUXTRACE_INFO names",
		     type);
	if (!pd->have_tc && pd->nr_aux_records)
		note(pd, "no TIME_CONV record: CoreSight timestamps are shown as they were "
		     "recorded, not converted to perf time");
	return 0;
}

static int make_machine(struct pd *pd, struct prec_machine *m)
{
	const uint64_t *pv = pd->priv;
	uint64_t config = 0, upper;
	size_t i;

	memset(m, 0, sizeof(*m));
	if (pd->cpuid)
		parse_cpuid(pd->cpuid, m);
	if (pd->have_tc && pd->tc_size >= offsetof(struct perf_record_time_conv, time_cycles)) {
		m->time_shift = (uint16_t)pd->tc.time_shift;
		m->time_mult = (uint32_t)pd->tc.time_mult;
		m->time_zero = pd->tc.time_zero;
		/* old TIME_CONV records lack the cap bits: perf then trusts the conversion */
		m->cap_user_time_zero = pd->tc_size > offsetof(struct perf_record_time_conv,
							      cap_user_time_zero) ?
						pd->tc.cap_user_time_zero : true;
	}
	if (!pd->have_info) {
		m->per_cpu = true;
		return 0;
	}
	if (pd->aux_type == PERF_AUXTRACE_CS_ETM)
		return cs_machine(pd, m);
	if (pd->aux_type != PERF_AUXTRACE_INTEL_PT)
		return prec_diag_set(pd->d, -EOPNOTSUPP, -1,
				     "AUX area trace of type %u in perf.data is not supported "
				     "(only intel_pt and cs_etm)", pd->aux_type);
	for (i = 0; i < pd->nr_ev; i++)
		if (pd->ev[i].attr.type == pv[INTEL_PT_PMU_TYPE]) {
			config = pd->ev[i].attr.config;
			break;
		}
	if (i == pd->nr_ev)
		note(pd, "no event of the intel_pt PMU type %" PRIu64 " that AUXTRACE_INFO names",
		     pv[INTEL_PT_PMU_TYPE]);
	m->time_shift = (uint16_t)pv[INTEL_PT_TIME_SHIFT];
	m->time_mult = (uint32_t)pv[INTEL_PT_TIME_MULT];
	m->time_zero = pv[INTEL_PT_TIME_ZERO];
	m->cap_user_time_zero = pv[INTEL_PT_CAP_USER_TIME_ZERO];
	m->tsc = config & pv[INTEL_PT_TSC_BIT];
	m->noretcomp = config & pv[INTEL_PT_NORETCOMP_BIT];
	m->per_cpu = pv[INTEL_PT_PER_CPU_MMAPS];
	if (pd->npriv > INTEL_PT_MTC_FREQ_BITS) {
		m->mtc = config & pv[INTEL_PT_MTC_BIT];
		m->mtc_period = (uint8_t)field(config, pv[INTEL_PT_MTC_FREQ_BITS]);
	}
	if (pd->npriv > INTEL_PT_TSC_CTC_D) {
		m->cpuid_15_ebx = (uint32_t)pv[INTEL_PT_TSC_CTC_N];
		m->cpuid_15_eax = (uint32_t)pv[INTEL_PT_TSC_CTC_D];
	}
	if (pd->npriv > INTEL_PT_CYC_BIT)
		m->cyc = config & pv[INTEL_PT_CYC_BIT];
	if (pd->npriv > INTEL_PT_MAX_NONTURBO_RATIO)
		m->max_nonturbo_ratio = (uint32_t)pv[INTEL_PT_MAX_NONTURBO_RATIO];
	/*
	 * TSC packets carry bits 0-55; perf takes bits 56-63 from the AUXTRACE
	 * records' reference (a TSC read). The decoder here sees 56-bit TSCs,
	 * so those upper bits go into time_zero: the same perf times result.
	 */
	upper = pd->first_reference & (0xffull << 56);
	if (upper && m->time_shift < 56)
		m->time_zero += (upper >> m->time_shift) * m->time_mult;
	if (m->max_nonturbo_ratio)
		m->nominal_mhz = m->max_nonturbo_ratio * 100;
	return 0;
}

/* ---- perf's build-id cache ---- */

static bool file_has_bid(const char *path, const struct pd_bid *b)
{
	uint8_t id[PREC_BUILD_ID_MAX];
	int r = prec_elf_build_id(path, id, sizeof(id));

	return r == (int)b->size && !memcmp(id, b->id, b->size);
}

static int add_cached(struct pd *pd, const struct pd_bid *b, const char *path)
{
	struct prec_image_desc img = { 0 };
	struct pd_in in;
	int err;

	err = input_open(path, NULL, &in, NULL);
	if (err)
		return 0;
	if (in.n > MAX_CACHE_FILE) {
		input_close(&in);
		return 0;
	}
	img.path = b->path;
	img.build_id = b->id;
	img.build_id_size = b->size;
	img.file_offset = 0;
	img.bytes = in.p;
	img.size = in.n;
	err = prec_session_add_image(pd->s, &img);
	input_close(&in);
	if (!err)
		pd->rep->buildid_cache_used++;
	return err;
}

static int use_buildid_cache(struct pd *pd)
{
	const char *dir = pd->o ? pd->o->buildid_dir : NULL;
	const char *root = prec_session_symfs(pd->s);
	char defdir[4096], path[4096 + 128];
	size_t i;
	int err;

	if (!dir) {
		dir = getenv("PERF_BUILDID_DIR");
		if (!dir || !*dir) {
			const char *home = getenv("HOME");

			if (!home || !*home)
				return 0;
			snprintf(defdir, sizeof(defdir), "%s/.debug", home);
			dir = defdir;
		}
	}
	if (!*dir)
		return 0;
	for (i = 0; i < pd->nr_bids; i++) {
		const struct pd_bid *b = &pd->bids[i];

		if (!b->exec_mapped || !b->size)
			continue;
		if (b->path[0] == '/') {
			snprintf(path, sizeof(path), "%s%s", root, b->path);
			if (file_has_bid(path, b))
				continue; /* the session takes the file itself */
		} else if (strcmp(b->path, "[vdso]")) {
			continue;
		}
		if (!prec_bidcache_find(dir, b->id, b->size, path, sizeof(path)) || !file_has_bid(path, b))
			continue;
		err = add_cached(pd, b, path);
		if (err)
			return err;
	}
	return 0;
}

/* ---- driving ---- */

static void pd_free(struct pd *pd)
{
	size_t i;

	for (i = 0; i < pd->nr_ev; i++) {
		free(pd->ev[i].ids);
		free(pd->ev[i].name);
	}
	free(pd->ev);
	for (i = 0; i < pd->nr_names; i++)
		if (pd->names[i].own)
			free(pd->names[i].name);
	free(pd->names);
	free(pd->idx);
	for (i = 0; i < pd->nr_desc; i++)
		free(pd->desc_name[i]);
	free(pd->desc_name);
	free(pd->desc_attr);
	free(pd->hostname);
	free(pd->osrelease);
	free(pd->version);
	free(pd->arch);
	free(pd->cpudesc);
	free(pd->cpuid);
	for (i = 0; pd->cmdline && i < pd->cmdline_n; i++)
		free(pd->cmdline[i]);
	free(pd->cmdline);
	for (i = 0; i < pd->nr_bids; i++)
		free(pd->bids[i].path);
	free(pd->bids);
	for (i = 0; i < pd->nr_pmus; i++)
		free(pd->pmus[i].name);
	free(pd->pmus);
	free(pd->priv);
	free(pd->pt_filter);
	free(pd->etm);
	prec_cs_meta_free(pd->cs);
	if (pd->zs)
		ZSTD_freeDStream(pd->zs);
	free(pd->zbuf);
	free(pd->pend);
	free(pd->rec);
	free(pd);
}

/* Pass 1: the header (file form) and every record's metadata. */
static int scan(struct pd *pd)
{
	int form = prec_perfdata_probe(pd->buf, pd->len);
	int err;

	pd->rep->input_size = pd->len;
	if (!form) {
		if (pd->len < 8)
			return prec_diag_set(pd->d, -PREC_E_FORMAT, 0,
					     "not perf.data: only %zu bytes", pd->len);
		return prec_diag_set(pd->d, -PREC_E_FORMAT, 0, "not perf.data (no PERFILE2 magic)");
	}
	if (!memcmp(pd->buf, "2ELIFREP", 8))
		return prec_diag_set(pd->d, -PREC_E_VERSION, 0,
				     "perf.data written on a big-endian machine: not supported");
	if (!memcmp(pd->buf, "PERFFILE", 8))
		return prec_diag_set(pd->d, -PREC_E_VERSION, 0,
				     "perf.data version 1 (perf before 2.6.38): not supported");
	pd->rep->format = form;
	pd->pass = 1;
	if (form == PREC_PERFDATA_PIPE) {
		pd->data_off = PIPE_HEADER_SIZE;
		pd->data_len = pd->len - PIPE_HEADER_SIZE;
	} else {
		err = read_file_header(pd);
		if (err)
			return err;
	}
	return walk_data(pd);
}

static struct pd *pd_new(const void *buf, size_t len, const struct prec_perfdata_opts *o,
			 struct prec_perfdata_report *rep, struct prec_diag *d)
{
	struct pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return NULL;
	pd->buf = buf;
	pd->len = len;
	pd->o = o;
	pd->rep = rep;
	pd->d = d;
	memset(rep, 0, sizeof(*rep));
	return pd;
}

static int load_common(struct prec_session *s, const void *buf, size_t len,
		       const struct pd_dir *dir, const struct prec_perfdata_opts *o,
		       struct prec_perfdata_report *rep, struct prec_diag *d)
{
	struct prec_machine m;
	struct pd *pd;
	size_t i;
	int err;

	pd = pd_new(buf, len, o, rep, d);
	if (!pd)
		return -ENOMEM;
	pd->s = s;
	if (dir) {
		pd->parts = dir->parts;
		pd->nr_parts = dir->nr_parts;
	}
	err = scan(pd);
	if (!err)
		err = settle_events(pd);
	if (!err)
		err = make_machine(pd, &m);
	if (err)
		goto out;
	if (feat_set(&pd->fh, PERF_HEADER_DIR_FORMAT) && !pd->nr_parts)
		note(pd, "this is the header file of a perf.data directory (perf record "
		     "--threads): open the directory to read the records of its data.N files");
	if (!pd->nr_aux_records)
		note(pd, "the file holds no AUX area trace (no AUXTRACE records): there are "
		     "only samples and sideband to show");
	else if (!pd->have_info)
		note(pd, "AUXTRACE records without AUXTRACE_INFO: decoded as Intel PT without "
		     "the recording's timing parameters");
	pd->per_cpu = m.per_cpu;
	prec_session_set_machine(s, &m);
	err = register_events(pd);
	if (err)
		goto out;
	pd->pass = 2;
	err = walk_data(pd);
	if (!err)
		find_aux_ends(pd);
	if (!err && pd->cs)
		cs_formats(pd);
	for (i = 0; !err && i < pd->nr_pend; i++)
		err = pend_flush(pd, &pd->pend[i], pd->pend[i].aux_end, !!pd->pend[i].aux_end, -1);
	if (!err)
		err = use_buildid_cache(pd);
	if (!err && pd->cs) {
		err = prec_cs_session_attach(s, pd->cs);
		pd->cs = NULL;
	}
	if (!err)
		err = prec_session_finalize(s);
out:
	if (err && !d->msg[0])
		prec_diag_set(d, err, -1, "%s", prec_strerror(err));
	pd_free(pd);
	return err;
}

int prec_perfdata_load_buf(struct prec_session *s, const void *buf, size_t len,
			   const struct prec_perfdata_opts *o, struct prec_perfdata_report *rep,
			   struct prec_diag *d)
{
	struct prec_diag dummy;

	if (!d)
		d = &dummy;
	memset(d, 0, sizeof(*d));
	d->pos = -1;
	if (!s || !rep || (!buf && len))
		return -EINVAL;
	return load_common(s, buf, len, NULL, o, rep, d);
}

int prec_perfdata_load(struct prec_session *s, const char *path,
		       const struct prec_perfdata_opts *o, struct prec_perfdata_report *rep,
		       struct prec_diag *d)
{
	struct prec_diag dummy;
	struct pd_dir dir;
	int err;

	if (!d)
		d = &dummy;
	memset(d, 0, sizeof(*d));
	d->pos = -1;
	if (rep)
		memset(rep, 0, sizeof(*rep));
	if (!s || !path || !rep)
		return -EINVAL;
	err = dir_open(path, o, &dir, d);
	if (err)
		return err;
	err = load_common(s, dir.main.p, dir.main.n, &dir, o, rep, d);
	dir_close(&dir);
	return err;
}

/* ---- the description (ptdump --info) ---- */

const char *prec_perfdata_feature_name(unsigned bit)
{
	return bit < PREC_ARRAY_SIZE(feat_names) ? feat_names[bit] : NULL;
}

void prec_perfdata_header_free(struct prec_perfdata_header *h)
{
	if (!h)
		return;
	free((void *)h->ev);
	free((void *)h->bids);
	free((void *)h->etm);
	pd_free(h->owner);
	free(h);
}

/* Points @h at what @pd read; copies the parts whose types are internal. */
static int fill_header(struct pd *pd, struct prec_perfdata_header *h)
{
	struct prec_perfdata_event_info *ev = calloc(pd->nr_ev + 1, sizeof(*ev));
	struct prec_perfdata_bid_info *bids = calloc(pd->nr_bids + 1, sizeof(*bids));
	struct prec_perfdata_etm_info *etm = calloc(pd->nr_etm + 1, sizeof(*etm));
	size_t i;

	h->ev = ev;
	h->bids = bids;
	h->etm = etm;
	if (!ev || !bids || !etm)
		return -ENOMEM;
	for (i = 0; i < pd->nr_ev; i++) {
		ev[i].name = pd->ev[i].name ? pd->ev[i].name : "?";
		ev[i].attr = pd->ev[i].attr;
		ev[i].nr_ids = pd->ev[i].nr_ids;
		ev[i].tracer = is_tracer(pd, &pd->ev[i].attr);
	}
	for (i = 0; i < pd->nr_bids; i++) {
		bids[i].path = pd->bids[i].path;
		memcpy(bids[i].id, pd->bids[i].id, sizeof(bids[i].id));
		bids[i].size = pd->bids[i].size;
	}
	for (i = 0; i < pd->nr_etm; i++) {
		etm[i].magic = pd->etm[i].magic;
		etm[i].cpu = pd->etm[i].cpu;
		etm[i].nparams = pd->etm[i].nparams;
	}
	h->nr_ev = pd->nr_ev;
	h->nr_bids = pd->nr_bids;
	h->nr_etm = pd->nr_etm;
	h->attr_size = pd->fh.attr_size;
	h->nr_parts = pd->nr_parts;
	h->hostname = pd->hostname;
	h->osrelease = pd->osrelease;
	h->version = pd->version;
	h->arch = pd->arch;
	h->cpudesc = pd->cpudesc;
	h->cpuid = pd->cpuid;
	h->cpus_online = pd->cpus_online;
	h->cpus_avail = pd->cpus_avail;
	h->total_mem = pd->total_mem;
	h->cmdline = (const char *const *)pd->cmdline;
	h->cmdline_n = pd->cmdline_n;
	h->have_comp = pd->have_comp;
	h->comp_type = pd->comp_type;
	h->comp_level = pd->comp_level;
	h->comp_ratio = pd->comp_ratio;
	h->comp_mmap_len = pd->comp_mmap_len;
	h->have_stime = pd->have_stime;
	h->stime_first = pd->stime_first;
	h->stime_last = pd->stime_last;
	h->have_info = pd->have_info;
	h->aux_type = pd->aux_type;
	h->priv = pd->priv;
	h->npriv = pd->npriv;
	h->pt_filter = pd->pt_filter;
	h->pt_have_evtrace = pd->pt_have_evtrace;
	h->pt_evtrace = pd->pt_evtrace;
	h->have_tc = pd->have_tc;
	h->tc_shift = pd->tc.time_shift;
	h->tc_mult = pd->tc.time_mult;
	h->tc_zero = pd->tc.time_zero;
	h->nr_aux_records = pd->nr_aux_records;
	return 0;
}

static int read_header(const void *buf, size_t len, const struct pd_dir *dir,
		       const struct prec_perfdata_opts *o, struct prec_perfdata_header **out,
		       struct prec_diag *d)
{
	struct prec_perfdata_header *h = calloc(1, sizeof(*h));
	struct pd *pd;
	int err;

	if (!h)
		return -ENOMEM;
	pd = pd_new(buf, len, o, &h->rep, d);
	if (!pd) {
		free(h);
		return -ENOMEM;
	}
	h->owner = pd;
	if (dir) {
		pd->parts = dir->parts;
		pd->nr_parts = dir->nr_parts;
	}
	err = scan(pd);
	if (!err)
		err = settle_events(pd);
	if (!err)
		err = fill_header(pd, h);
	if (err) {
		if (!d->msg[0])
			prec_diag_set(d, err, -1, "%s", prec_strerror(err));
		prec_perfdata_header_free(h);
		return err;
	}
	/* The directory's parts are not needed once scanned. */
	pd->parts = NULL;
	*out = h;
	return 0;
}

int prec_perfdata_read_header_buf(const void *buf, size_t len, const struct prec_perfdata_opts *o,
				  struct prec_perfdata_header **out, struct prec_diag *d)
{
	struct prec_diag dummy;

	*out = NULL;
	if (!d)
		d = &dummy;
	memset(d, 0, sizeof(*d));
	d->pos = -1;
	if (!buf && len)
		return -EINVAL;
	return read_header(buf, len, NULL, o, out, d);
}

int prec_perfdata_read_header(const char *path, const struct prec_perfdata_opts *o,
			      struct prec_perfdata_header **out, struct prec_diag *d)
{
	struct prec_diag dummy;
	struct pd_dir dir;
	int err;

	*out = NULL;
	if (!d)
		d = &dummy;
	memset(d, 0, sizeof(*d));
	d->pos = -1;
	if (!path)
		return -EINVAL;
	err = dir_open(path, o, &dir, d);
	if (err)
		return err;
	err = read_header(dir.main.p, dir.main.n, &dir, o, out, d);
	dir_close(&dir);
	return err;
}
