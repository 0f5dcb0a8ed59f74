// SPDX-License-Identifier: MIT
/* CoreSight snapshot directories into decode sessions. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "session/cs_meta.h"
#include "session/image.h"
#include "interop/snapshot.h"
#include "base/array.h"
#include "base/util.h"

#define INI_MAX (1u << 20)          /* an .ini file larger than this is not one */
#define DATA_MAX (1ull << 30)       /* per trace buffer and per memory dump */
#define DUMPS_MAX (4ull << 30)      /* all memory dumps together */
#define MAX_DEVICES 1024
#define SNAP_PID 1

/* ---- a small .ini reader ---- */

struct ini_kv {
	char *k, *v;
};

struct ini_sec {
	char *name;
	struct ini_kv *kv;
	size_t n;
};

struct ini {
	char *text;               /* the file, cut into the strings below */
	char *file;               /* its name, for messages */
	struct ini_sec *sec;
	size_t n;
};

static void ini_free(struct ini *ini)
{
	size_t i;

	if (!ini)
		return;
	for (i = 0; i < ini->n; i++)
		free(ini->sec[i].kv);
	free(ini->sec);
	free(ini->text);
	free(ini->file);
	free(ini);
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = 0;
	return s;
}

/* Strips one pair of matching quotes. */
static char *unquote(char *s)
{
	size_t n = strlen(s);

	if (n >= 2 && (s[0] == '"' || s[0] == '\'') && s[n - 1] == s[0]) {
		s[n - 1] = 0;
		return s + 1;
	}
	return s;
}

/* A relative name that stays inside the snapshot directory. */
static bool safe_name(const char *name)
{
	const char *p = name;

	if (!*name || *name == '/')
		return false;
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.')
			return false;
		p += n;
		while (*p == '/')
			p++;
	}
	return true;
}

/*
 * The directory source: reads @dir/@name whole, at most @max bytes (else
 * -EFBIG). Returns the length or a negative error; the message in @d names
 * the file.
 */
static long long dir_read(void *ctx, const char *name, uint64_t max, char **out,
			  struct prec_diag *d)
{
	const char *dir = ctx;
	char path[4096];
	struct stat sb;
	char *buf = NULL;
	long long n;
	int fd, err;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return prec_diag_set(d, -ENAMETOOLONG, -1, "path of %s is too long", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		return prec_diag_set(d, err, -1, "cannot open %s: %s", path, strerror(-err));
	}
	if (fstat(fd, &sb)) {
		err = -errno;
		close(fd);
		return prec_diag_set(d, err, -1, "cannot read %s: %s", path, strerror(-err));
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		return prec_diag_set(d, -PREC_E_FORMAT, -1, "%s is not a regular file", path);
	}
	if ((uint64_t)sb.st_size > max) {
		close(fd);
		return prec_diag_set(d, -EFBIG, -1, "%s is larger than %llu bytes", path,
				     (unsigned long long)max);
	}
	buf = malloc((size_t)sb.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	n = prec_read_full(fd, buf, (size_t)sb.st_size);
	close(fd);
	if (n < 0) {
		free(buf);
		return prec_diag_set(d, (int)n, -1, "cannot read %s: %s", path, strerror((int)-n));
	}
	buf[n] = 0;
	*out = buf;
	return n;
}

/*
 * Reads the snapshot's file @name whole through @f, at most @max bytes.
 * Every source gets the same name check, and its buffer is NUL-terminated.
 */
static long long read_file(const struct prec_snapshot_files *f, const char *name, uint64_t max,
			   char **out, struct prec_diag *d)
{
	long long n;

	*out = NULL;
	if (!safe_name(name))
		return prec_diag_set(d, -PREC_E_FORMAT, -1,
				     "file name \"%s\" leaves the snapshot directory", name);
	n = f->read(f->ctx, name, max, out, d);
	if (n >= 0 && (uint64_t)n > max) { /* a source that ignored the limit */
		free(*out);
		*out = NULL;
		return prec_diag_set(d, -EFBIG, -1, "%s is larger than %llu bytes", name,
				     (unsigned long long)max);
	}
	if (n < 0)
		*out = NULL;
	return n;
}

static int ini_load(const struct prec_snapshot_files *f, const char *name, struct ini **out,
		    struct prec_diag *d)
{
	struct ini *ini = calloc(1, sizeof(*ini));
	struct ini_sec *cur = NULL;
	char *line, *next;
	long long len;
	unsigned lineno = 0;
	int err;

	*out = NULL;
	if (!ini)
		return -ENOMEM;
	ini->file = strdup(name);
	if (!ini->file) {
		err = -ENOMEM;
		goto out;
	}
	len = read_file(f, name, INI_MAX, &ini->text, d);
	if (len < 0) {
		err = (int)len;
		goto out;
	}
	if (memchr(ini->text, 0, (size_t)len)) {
		err = prec_diag_set(d, -PREC_E_FORMAT, -1, "%s is not a text file", name);
		goto out;
	}
	for (line = ini->text; line; line = next) {
		char *eq, *s;

		lineno++;
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		line[strcspn(line, "\r;#")] = 0;
		s = trim(line);
		if (!*s)
			continue;
		if (*s == '[') {
			char *close = strchr(s, ']');
			struct ini_sec *ns;

			if (!close) {
				err = prec_diag_set(d, -PREC_E_FORMAT, -1,
						    "%s line %u: section header without ']'", name,
						    lineno);
				goto out;
			}
			*close = 0;
			ns = realloc(ini->sec, (ini->n + 1) * sizeof(*ns));
			if (!ns) {
				err = -ENOMEM;
				goto out;
			}
			ini->sec = ns;
			cur = &ns[ini->n++];
			memset(cur, 0, sizeof(*cur));
			cur->name = trim(s + 1);
			continue;
		}
		eq = strchr(s, '=');
		if (!eq) {
			err = prec_diag_set(d, -PREC_E_FORMAT, -1,
					    "%s line %u: \"%.40s\" is not key=value", name, lineno, s);
			goto out;
		}
		if (!cur) {
			err = prec_diag_set(d, -PREC_E_FORMAT, -1,
					    "%s line %u: key=value before any [section]", name,
					    lineno);
			goto out;
		}
		*eq = 0;
		{
			struct ini_kv *nk = realloc(cur->kv, (cur->n + 1) * sizeof(*nk));

			if (!nk) {
				err = -ENOMEM;
				goto out;
			}
			cur->kv = nk;
			nk[cur->n].k = trim(s);
			nk[cur->n].v = unquote(trim(eq + 1));
			cur->n++;
		}
	}
	*out = ini;
	ini = NULL;
	err = 0;
out:
	ini_free(ini);
	return err;
}

static const struct ini_sec *ini_sec(const struct ini *ini, const char *name)
{
	size_t i;

	for (i = 0; ini && i < ini->n; i++)
		if (!strcasecmp(ini->sec[i].name, name))
			return &ini->sec[i];
	return NULL;
}

static const char *sec_get(const struct ini_sec *sec, const char *key)
{
	size_t i;

	for (i = 0; sec && i < sec->n; i++)
		if (!strcasecmp(sec->kv[i].k, key))
			return sec->kv[i].v;
	return NULL;
}

static const char *ini_get(const struct ini *ini, const char *sec, const char *key)
{
	return sec_get(ini_sec(ini, sec), key);
}

/* A register "NAME" of a [regs] section, whose keys may read "NAME(size:64)". */
static const char *reg_get(const struct ini_sec *regs, const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; regs && i < regs->n; i++) {
		const char *k = regs->kv[i].k;

		if (!strncasecmp(k, name, n) && (k[n] == 0 || k[n] == '(' || k[n] == ' '))
			return regs->kv[i].v;
	}
	return NULL;
}

/* ---- the snapshot ---- */

struct dev {
	struct ini *ini;
	const char *name, *class, *type;
};

struct snap {
	const struct prec_snapshot_files *src;
	struct prec_session *s;
	struct prec_snapshot_report *rep;
	struct prec_diag *d;
	struct ini *top, *trace;
	struct dev *dev;
	size_t ndev;
	struct prec_cs_meta *meta;
	struct prec_buf sb;       /* synthetic sideband records */
	struct dump_file *files;  /* the files dumps name, each read once */
	size_t nfiles;
	uint64_t dump_total;      /* bytes of the distinct files read */
};

/*
 * A file named by [dump] sections. Its bytes are read once and held once,
 * however many dumps name it: as one code image (the whole file, offset 0;
 * each user-space dump is a mapping of part of it) and at most once more as
 * kernel text (the first kernel address it is dumped at).
 */
struct dump_file {
	char *name;
	char *bytes;
	uint64_t size;
	bool image;               /* added as a code image */
	bool ktext;               /* added as kernel text */
	uint64_t kaddr;
};

static void note(struct snap *sn, const char *fmt, ...) prec_printf(2, 3);

static void note(struct snap *sn, const char *fmt, ...)
{
	struct prec_snapshot_report *r = sn->rep;
	va_list ap;

	va_start(ap, fmt);
	prec_notes_vadd(&r->notes, fmt, ap);
	va_end(ap);
}

static int parse_num(struct snap *sn, const char *file, const char *what, const char *v,
		     uint64_t *out)
{
	if (!v || prec_parse_u64(v, 0, out))
		return prec_diag_set(sn->d, -PREC_E_FORMAT, -1, "%s: %s \"%s\" is not a number",
				     file, what, v ? v : "");
	return 0;
}

static const struct dev *dev_by_name(const struct snap *sn, const char *name)
{
	size_t i;

	for (i = 0; name && i < sn->ndev; i++)
		if (!strcmp(sn->dev[i].name, name))
			return &sn->dev[i];
	return NULL;
}

static int load_devices(struct snap *sn)
{
	const struct ini_sec *list = ini_sec(sn->top, "device_list");
	size_t i;
	int err;

	if (!list || !list->n)
		return prec_diag_set(sn->d, -PREC_E_FORMAT, -1,
				     "snapshot.ini has no [device_list] devices");
	if (list->n > MAX_DEVICES)
		return prec_diag_set(sn->d, -PREC_E_FORMAT, -1,
				     "snapshot.ini lists %zu devices (at most %u)", list->n,
				     MAX_DEVICES);
	sn->dev = calloc(list->n, sizeof(*sn->dev));
	if (!sn->dev)
		return -ENOMEM;
	for (i = 0; i < list->n; i++) {
		struct dev *dv = &sn->dev[sn->ndev];

		err = ini_load(sn->src, list->kv[i].v, &dv->ini, sn->d);
		if (err)
			return err;
		sn->ndev++;
		dv->name = ini_get(dv->ini, "device", "name");
		dv->class = ini_get(dv->ini, "device", "class");
		dv->type = ini_get(dv->ini, "device", "type");
		if (!dv->name || !dv->name[0])
			return prec_diag_set(sn->d, -PREC_E_FORMAT, -1,
					     "%s has no [device] name", list->kv[i].v);
		if (dev_by_name(sn, dv->name) != dv)
			return prec_diag_set(sn->d, -PREC_E_FORMAT, -1,
					     "two devices are named \"%s\"", dv->name);
		if (!dv->type)
			dv->type = "";
		if (!dv->class)
			dv->class = "";
	}
	sn->rep->nr_devices = (unsigned)sn->ndev;
	return 0;
}

/* Core names OpenCSD knows, and the architecture it decodes them as. */
static const struct {
	const char *name;
	enum prec_cs_arch arch;
} cores[] = {
	{ "Cortex-A32", PREC_CS_ARCH_V8 },   { "Cortex-A35", PREC_CS_ARCH_V8 },
	{ "Cortex-A53", PREC_CS_ARCH_V8 },   { "Cortex-A57", PREC_CS_ARCH_V8 },
	{ "Cortex-A72", PREC_CS_ARCH_V8 },   { "Cortex-A73", PREC_CS_ARCH_V8 },
	{ "Cortex-A55", PREC_CS_ARCH_V8R3 }, { "Cortex-A65", PREC_CS_ARCH_V8R3 },
	{ "Cortex-A75", PREC_CS_ARCH_V8R3 }, { "Cortex-A76", PREC_CS_ARCH_V8R3 },
	{ "Cortex-A77", PREC_CS_ARCH_V8R3 }, { "Cortex-A78", PREC_CS_ARCH_V8R3 },
};

/*
 * The architecture of a core type: a known Cortex name, "ARMv8[.m]-A" or
 * "ARM-AA64". Returns false for names outside those.
 */
static bool core_arch(const char *type, enum prec_cs_arch *arch)
{
	size_t i;

	for (i = 0; i < PREC_ARRAY_SIZE(cores); i++) {
		if (!strcmp(type, cores[i].name)) {
			*arch = cores[i].arch;
			return true;
		}
	}
	if (!strncmp(type, "ARMv", 4) && isdigit((unsigned char)type[4])) {
		int maj = type[4] - '0', min = 0;
		const char *p = type + 5;

		if (*p == '.' && isdigit((unsigned char)p[1])) {
			min = p[1] - '0';
			p += 2;
		}
		if (maj < 8 || strcmp(p, "-A"))
			return false;
		*arch = maj > 8 || min > 3 ? PREC_CS_ARCH_AA64 :
			min == 3 ? PREC_CS_ARCH_V8R3 : PREC_CS_ARCH_V8;
		return true;
	}
	if (!strncasecmp(type, "ARM-AA64", 8)) {
		*arch = PREC_CS_ARCH_AA64;
		return true;
	}
	return false;
}

/* The CPU number of a core: the digits its name ends with, else @fallback. */
static int core_number(const char *name, int fallback)
{
	size_t n = strlen(name), k = n;

	while (k > 0 && isdigit((unsigned char)name[k - 1]))
		k--;
	if (k == n || n - k > 4)
		return fallback;
	return atoi(name + k);
}

static int add_record(struct snap *sn, uint32_t type, uint16_t misc, const void *body,
		      size_t blen, const char *str)
{
	struct perf_event_header h;
	size_t slen = strlen(str) + 1, size = PREC_ALIGN_UP(sizeof(h) + blen + slen, 8);
	static const char zero[8];
	int err;

	h.type = type;
	h.misc = misc;
	h.size = (uint16_t)size;
	if (size > 0xffff)
		return -EINVAL;
	err = prec_buf_append(&sn->sb, &h, sizeof(h));
	err = err ?: prec_buf_append(&sn->sb, body, blen);
	err = err ?: prec_buf_append(&sn->sb, str, slen);
	err = err ?: prec_buf_append(&sn->sb, zero, size - sizeof(h) - blen - slen);
	return err;
}

static int add_comm(struct snap *sn, int tid, const char *comm)
{
	uint32_t ids[2] = { SNAP_PID, (uint32_t)tid };
	char name[16];

	snprintf(name, sizeof(name), "%s", comm);
	return add_record(sn, PERF_RECORD_COMM, PERF_RECORD_MISC_USER, ids, sizeof(ids), name);
}

/* The file @name of the snapshot, read on first use. */
static struct dump_file *dump_file(struct snap *sn, const char *name)
{
	struct dump_file *f;
	long long flen;
	char *bytes = NULL;
	size_t i;

	for (i = 0; i < sn->nfiles; i++)
		if (!strcmp(sn->files[i].name, name))
			return &sn->files[i];
	flen = read_file(sn->src, name, DATA_MAX, &bytes, sn->d);
	if (flen < 0)
		return NULL;
	if (sn->dump_total + (uint64_t)flen > DUMPS_MAX) {
		free(bytes);
		prec_diag_set(sn->d, -EFBIG, -1, "the memory dumps exceed %llu bytes",
			      (unsigned long long)DUMPS_MAX);
		return NULL;
	}
	if (PREC_ARRAY_RESERVE(sn->files, sn->nfiles, 1)) {
		free(bytes);
		prec_diag_set(sn->d, -ENOMEM, -1, "out of memory");
		return NULL;
	}
	f = &sn->files[sn->nfiles];
	memset(f, 0, sizeof(*f));
	f->name = strdup(name);
	if (!f->name) {
		free(bytes);
		prec_diag_set(sn->d, -ENOMEM, -1, "out of memory");
		return NULL;
	}
	f->bytes = bytes;
	f->size = (uint64_t)flen;
	sn->dump_total += f->size;
	sn->nfiles++;
	return f;
}

/* Dump region [@off, @off + @len) of @f at @addr: kernel text or a mapping of its image. */
static int map_dump(struct snap *sn, struct dump_file *f, const struct ini_sec *sec,
		    uint64_t addr, uint64_t off, uint64_t len)
{
	struct {
		uint32_t pid, tid;
		uint64_t start, len, pgoff;
	} mm = { SNAP_PID, SNAP_PID, addr, len, off };
	int err = 0;

	if (prec_is_kernel_addr(addr)) {
		if (f->ktext) {
			note(sn, "[%s]: %s is already kernel text at %#llx; not mapped again at %#llx",
			     sec->name, f->name, (unsigned long long)f->kaddr,
			     (unsigned long long)addr);
			return 0;
		}
		f->ktext = true;
		f->kaddr = addr;
		return prec_session_add_kernel_text(sn->s, addr, f->bytes + off, (size_t)len);
	}
	if (!f->image) {
		struct prec_image_desc img = {
			.path = f->name,
			.file_offset = 0,
			.bytes = f->bytes,
			.size = (size_t)f->size,
		};

		err = prec_session_add_image(sn->s, &img);
		f->image = !err;
	}
	return err ?: add_record(sn, PERF_RECORD_MMAP, PERF_RECORD_MISC_USER, &mm, sizeof(mm),
				 f->name);
}

static int add_dump(struct snap *sn, const struct dev *dv, const struct ini_sec *sec)
{
	const char *file = sec_get(sec, "file"), *v;
	uint64_t addr, len = 0, off = 0;
	struct dump_file *f;
	int err;

	if (!file || !file[0])
		return prec_diag_set(sn->d, -PREC_E_FORMAT, -1, "%s [%s]: no file",
				     dv->ini->file, sec->name);
	err = parse_num(sn, dv->ini->file, "dump address", sec_get(sec, "address"), &addr);
	if (err)
		return err;
	v = sec_get(sec, "offset");
	if (v && (err = parse_num(sn, dv->ini->file, "dump offset", v, &off)))
		return err;
	v = sec_get(sec, "length");
	if (v && (err = parse_num(sn, dv->ini->file, "dump length", v, &len)))
		return err;
	if (sec_get(sec, "space"))
		note(sn, "%s [%s]: memory space \"%s\" taken as any", dv->ini->file, sec->name,
		     sec_get(sec, "space"));
	f = dump_file(sn, file);
	if (!f)
		return sn->d->code ? sn->d->code : -EIO;
	if (off > f->size)
		return prec_diag_set(sn->d, -PREC_E_FORMAT, -1,
				     "%s [%s]: offset %llu is past the end of %s (%llu bytes)",
				     dv->ini->file, sec->name, (unsigned long long)off, file,
				     (unsigned long long)f->size);
	if (!v || len > f->size - off)
		len = f->size - off;
	if (!len || addr + len < addr) {
		note(sn, "%s [%s]: empty or wrapping region skipped", dv->ini->file, sec->name);
		return 0;
	}
	err = map_dump(sn, f, sec, addr, off, len);
	if (!err) {
		sn->rep->nr_dumps++;
		sn->rep->dump_bytes += len;
	}
	return err;
}

static int load_dumps(struct snap *sn)
{
	size_t i, j;
	int err;

	for (i = 0; i < sn->ndev; i++) {
		const struct dev *dv = &sn->dev[i];

		for (j = 0; j < dv->ini->n; j++) {
			const struct ini_sec *sec = &dv->ini->sec[j];

			if (strncasecmp(sec->name, "dump", 4))
				continue;
			err = add_dump(sn, dv, sec);
			if (err)
				return err;
		}
	}
	return 0;
}

static enum prec_cs_format buffer_format(const char *f, bool *ok)
{
	*ok = true;
	if (!f || !*f || !strcasecmp(f, "coresight"))
		return PREC_CS_FMT_FRAMED;
	if (!strcasecmp(f, "source_data"))
		return PREC_CS_FMT_RAW;
	if (!strcasecmp(f, "dstream_coresight"))
		return PREC_CS_FMT_FSYNC;
	*ok = false;
	return PREC_CS_FMT_FRAMED;
}

/* The core whose [core_trace_sources] entry names @source, or NULL. */
static const char *core_of(const struct snap *sn, const char *source)
{
	const struct ini_sec *cs = ini_sec(sn->trace, "core_trace_sources");
	size_t i;

	for (i = 0; cs && i < cs->n; i++)
		if (!strcmp(cs->kv[i].v, source))
			return cs->kv[i].k;
	return NULL;
}

static int source_regs(struct snap *sn, const struct dev *src, struct prec_cs_source *cs)
{
	const struct ini_sec *regs = ini_sec(src->ini, "regs");
	static const struct {
		const char *name;
		size_t off;
		bool need;
	} tab[] = {
		{ "TRCCONFIGR", offsetof(struct prec_cs_source, configr), true },
		{ "TRCIDR0", offsetof(struct prec_cs_source, idr0), true },
		{ "TRCIDR1", offsetof(struct prec_cs_source, idr1), false },
		{ "TRCIDR2", offsetof(struct prec_cs_source, idr2), true },
		{ "TRCIDR8", offsetof(struct prec_cs_source, idr8), false },
		{ "TRCIDR9", offsetof(struct prec_cs_source, idr9), false },
		{ "TRCIDR10", offsetof(struct prec_cs_source, idr10), false },
		{ "TRCIDR11", offsetof(struct prec_cs_source, idr11), false },
		{ "TRCIDR12", offsetof(struct prec_cs_source, idr12), false },
		{ "TRCIDR13", offsetof(struct prec_cs_source, idr13), false },
		{ "TRCDEVARCH", offsetof(struct prec_cs_source, devarch), false },
		{ "TRCAUTHSTATUS", offsetof(struct prec_cs_source, authstatus), false },
	};
	uint64_t v;
	size_t i;
	int err;

	for (i = 0; i < PREC_ARRAY_SIZE(tab); i++) {
		const char *s = reg_get(regs, tab[i].name);

		if (!s) {
			if (tab[i].need)
				return prec_diag_set(sn->d, -PREC_E_FORMAT, -1,
						     "%s: trace source %s has no register %s",
						     src->ini->file, src->name, tab[i].name);
			continue;
		}
		err = parse_num(sn, src->ini->file, tab[i].name, s, &v);
		if (err)
			return err;
		*(uint32_t *)((char *)cs + tab[i].off) = (uint32_t)v;
	}
	err = parse_num(sn, src->ini->file, "TRCTRACEIDR", reg_get(regs, "TRCTRACEIDR"), &v);
	if (err)
		return err;
	if (!(v & 0x7f) || (v & 0x7f) > 0x6f)
		return prec_diag_set(sn->d, -PREC_E_FORMAT, -1,
				     "%s: TRCTRACEIDR 0x%llx is not a valid trace ID (1 to 0x6f)",
				     src->ini->file, (unsigned long long)v);
	cs->trace_id = v & 0x7f;
	return 0;
}

static int load_source(struct snap *sn, const char *source, enum prec_cs_format fmt,
		       const uint8_t *data, size_t len, int index)
{
	const struct dev *src = dev_by_name(sn, source), *core;
	struct prec_cs_source cs;
	const char *core_name;
	char proto[32];
	int err;

	memset(&cs, 0, sizeof(cs));
	if (!src) {
		/* As OpenCSD's snapshot reader: decode the sources it can, note the rest. */
		note(sn, "trace source %s skipped: trace.ini names it, but no device .ini "
		     "defines it", source);
		return 0;
	}
	snprintf(proto, sizeof(proto), "%s", src->type);
	proto[strcspn(proto, ".")] = 0;
	if (!strcmp(proto, "ETM4")) {
		cs.proto = PREC_CS_ETMV4;
	} else if (!strcmp(proto, "ETE")) {
		cs.proto = PREC_CS_ETE;
	} else {
		note(sn, "trace source %s (%s) skipped: only ETMv4 and ETE are decoded", source,
		     src->type[0] ? src->type : "no type");
		return 0;
	}
	core_name = core_of(sn, source);
	core = dev_by_name(sn, core_name);
	if (!core) {
		note(sn, "trace source %s skipped: no core in [core_trace_sources] traces it",
		     source);
		return 0;
	}
	if (!core_arch(core->type, &cs.arch)) {
		note(sn, "core %s: type \"%s\" unknown, decoded as Armv8-A", core->name,
		     core->type);
		cs.arch = PREC_CS_ARCH_DEFAULT;
	}
	cs.cpu = core_number(core->name, index);
	cs.format = fmt;
	err = source_regs(sn, src, &cs);
	if (err)
		return err;
	if (fmt != PREC_CS_FMT_RAW && prec_cs_meta_trace_id(sn->meta, cs.trace_id))
		return prec_diag_set(sn->d, -PREC_E_FORMAT, -1,
				     "trace ID 0x%x is used by two trace sources", cs.trace_id);
	err = prec_cs_meta_add(sn->meta, &cs);
	if (err == -EEXIST)
		return prec_diag_set(sn->d, -PREC_E_FORMAT, -1,
				     "two trace sources trace CPU %d (core %s)", cs.cpu,
				     core->name);
	if (err)
		return err;
	err = add_comm(sn, cs.cpu + 1, core->name);
	if (err)
		return err;
	if (len) {
		err = prec_session_add_aux(sn->s, cs.cpu, cs.cpu + 1, 0, data, len);
		if (err)
			return err;
	}
	sn->rep->nr_sources++;
	return 0;
}

static int load_buffers(struct snap *sn)
{
	const char *list = ini_get(sn->trace, "trace_buffers", "buffers");
	const struct ini_sec *assoc = ini_sec(sn->trace, "source_buffers");
	char *names = NULL, *tok, *save = NULL;
	char *data = NULL;
	int err = 0, index = 0;

	if (!list || !*list)
		return prec_diag_set(sn->d, -PREC_E_FORMAT, -1,
				     "trace.ini has no [trace_buffers] buffers list");
	names = strdup(list);
	if (!names)
		return -ENOMEM;
	for (tok = strtok_r(names, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const struct ini_sec *buf = ini_sec(sn->trace, trim(tok));
		const char *bname, *file;
		enum prec_cs_format fmt;
		long long len;
		unsigned nsrc;
		bool ok;
		size_t i;

		if (!buf) {
			err = prec_diag_set(sn->d, -PREC_E_FORMAT, -1,
					    "trace.ini lists buffer [%s] but has no such section",
					    trim(tok));
			goto out;
		}
		bname = sec_get(buf, "name");
		file = sec_get(buf, "file");
		if (!bname || !file) {
			err = prec_diag_set(sn->d, -PREC_E_FORMAT, -1,
					    "trace.ini [%s] needs both name= and file=", buf->name);
			goto out;
		}
		fmt = buffer_format(sec_get(buf, "format"), &ok);
		if (!ok) {
			err = prec_diag_set(sn->d, -PREC_E_FORMAT, -1,
					    "trace.ini [%s]: unknown format \"%s\" (coresight, "
					    "source_data or dstream_coresight)",
					    buf->name, sec_get(buf, "format"));
			goto out;
		}
		len = read_file(sn->src, file, DATA_MAX, &data, sn->d);
		if (len < 0) {
			err = (int)len;
			goto out;
		}
		sn->rep->nr_buffers++;
		sn->rep->trace_bytes += (uint64_t)len;
		for (i = 0, nsrc = sn->rep->nr_sources; assoc && i < assoc->n; i++) {
			if (strcmp(assoc->kv[i].v, bname))
				continue;
			/* Unformatted data is one unit's: the first source named. */
			if (fmt == PREC_CS_FMT_RAW && sn->rep->nr_sources > nsrc) {
				note(sn, "trace source %s skipped: buffer %s is unformatted and "
				     "holds one source's trace", assoc->kv[i].k, bname);
				continue;
			}
			err = load_source(sn, assoc->kv[i].k, fmt, (const uint8_t *)data,
					  (size_t)len, index++);
			if (err)
				goto out;
		}
		free(data);
		data = NULL;
	}
out:
	free(data);
	free(names);
	return err;
}

int prec_snapshot_probe(const char *dir)
{
	char path[4096];
	struct stat sb;

	if ((size_t)snprintf(path, sizeof(path), "%s/snapshot.ini", dir) >= sizeof(path))
		return 0;
	return !stat(path, &sb) && S_ISREG(sb.st_mode);
}

int prec_snapshot_load(struct prec_session *s, const char *dir, struct prec_snapshot_report *rep,
		       struct prec_diag *d)
{
	struct prec_snapshot_files f = { .read = dir_read, .ctx = (void *)dir };

	if (!dir)
		return -EINVAL;
	return prec_snapshot_load_files(s, &f, rep, d);
}

int prec_snapshot_load_files(struct prec_session *s, const struct prec_snapshot_files *files,
			     struct prec_snapshot_report *rep, struct prec_diag *d)
{
	struct prec_snapshot_report dummy;
	struct prec_machine m;
	struct snap sn;
	const char *v;
	size_t i;
	int err;

	if (!rep)
		rep = &dummy;
	memset(rep, 0, sizeof(*rep));
	memset(&sn, 0, sizeof(sn));
	sn.src = files;
	sn.s = s;
	sn.rep = rep;
	sn.d = d;
	if (!s || !files || !files->read)
		return -EINVAL;
	sn.meta = prec_cs_meta_new();
	if (!sn.meta)
		return -ENOMEM;
	err = ini_load(files, "snapshot.ini", &sn.top, d);
	if (err)
		goto out;
	v = ini_get(sn.top, "snapshot", "version");
	if (v && strcmp(v, "1.0") && strcmp(v, "1")) {
		err = prec_diag_set(d, -PREC_E_VERSION, -1,
				    "snapshot.ini version %s is not one this reader knows (1.0)",
				    v);
		goto out;
	}
	v = ini_get(sn.top, "snapshot", "description");
	if (v)
		snprintf(rep->description, sizeof(rep->description), "%s", v);
	v = ini_get(sn.top, "trace", "metadata");
	if (!v || !*v) {
		err = prec_diag_set(d, -PREC_E_FORMAT, -1,
				    "snapshot.ini has no [trace] metadata= entry: no trace to "
				    "decode");
		goto out;
	}
	err = load_devices(&sn);
	if (err)
		goto out;
	err = ini_load(files, v, &sn.trace, d);
	if (err)
		goto out;
	memset(&m, 0, sizeof(m));
	snprintf(m.vendor, sizeof(m.vendor), "ARM");
	m.per_cpu = true;
	prec_session_set_machine(s, &m);
	/* The synthetic records carry no sample_id trailer. */
	err = prec_session_set_sample_type(s, 0);
	if (err)
		goto out;
	err = load_buffers(&sn);
	if (err)
		goto out;
	if (!sn.meta->n) {
		err = prec_diag_set(d, -EOPNOTSUPP, -1,
				    "the snapshot has no ETMv4 or ETE trace source to decode");
		goto out;
	}
	err = load_dumps(&sn);
	if (err)
		goto out;
	if (!rep->nr_dumps)
		note(&sn, "the snapshot has no memory dumps: no instruction can be decoded");
	if (sn.sb.len) {
		err = prec_session_add_sideband(s, sn.sb.data, sn.sb.len, -1);
		if (err < 0)
			goto out;
	}
	err = prec_session_finalize(s);
	if (err)
		goto out;
	err = prec_cs_session_attach(s, sn.meta);
	sn.meta = NULL;
out:
	prec_cs_meta_free(sn.meta);
	for (i = 0; i < sn.ndev; i++)
		ini_free(sn.dev[i].ini);
	free(sn.dev);
	for (i = 0; i < sn.nfiles; i++) {
		free(sn.files[i].name);
		free(sn.files[i].bytes);
	}
	free(sn.files);
	ini_free(sn.top);
	ini_free(sn.trace);
	prec_buf_free(&sn.sb);
	return err < 0 ? err : 0;
}
