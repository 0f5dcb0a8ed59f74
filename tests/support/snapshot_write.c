// SPDX-License-Identifier: MIT
/* CoreSight snapshot directories: see snapshot_write.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapshot_write.h"
#include "base/util.h"

/* ---- formatter frames --------------------------------------------------- */

/*
 * A frame has 15 slots and an auxiliary byte. An even slot holds either a
 * trace ID change (bit 0 set, ID in bits 7:1) or a data byte whose bit 0
 * lives in the auxiliary byte; an odd slot always holds data. For an ID
 * slot the auxiliary bit says whether the next slot still belongs to the
 * previous ID (1) or already to the new one (0).
 */
struct frames {
	uint8_t *out;
	size_t len, cap;
	uint8_t val[15];
	uint8_t is_id[15];
	uint8_t delay[15];
	int n;
	int cur;
};

static int frame_emit(struct frames *f)
{
	uint8_t fr[16], aux = 0;
	int i;

	if (f->len + 16 > f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 4096;
		uint8_t *p = realloc(f->out, cap);

		if (!p)
			return -ENOMEM;
		f->out = p;
		f->cap = cap;
	}
	for (i = 0; i < 15; i++) {
		if (i & 1) {
			fr[i] = f->val[i];
		} else if (f->is_id[i]) {
			fr[i] = (uint8_t)(f->val[i] << 1 | 1);
			aux |= (uint8_t)(f->delay[i] << (i / 2));
		} else {
			fr[i] = f->val[i] & 0xfe;
			aux |= (uint8_t)((f->val[i] & 1) << (i / 2));
		}
	}
	fr[15] = aux;
	memcpy(f->out + f->len, fr, 16);
	f->len += 16;
	f->n = 0;
	memset(f->is_id, 0, sizeof(f->is_id));
	memset(f->delay, 0, sizeof(f->delay));
	return 0;
}

static int frame_data(struct frames *f, uint8_t b)
{
	f->val[f->n] = b;
	f->is_id[f->n] = 0;
	f->n++;
	return f->n == 15 ? frame_emit(f) : 0;
}

static int frame_id(struct frames *f, uint8_t id)
{
	if (f->cur == id)
		return 0;
	f->cur = id;
	if (f->n && (f->n & 1) && f->is_id[f->n - 1]) {
		/* The previous ID got no data: replace it. */
		f->val[f->n - 1] = id;
		f->delay[f->n - 1] = 0;
		return 0;
	}
	if (f->n & 1) {
		/* Only even slots take IDs: the previous ID's last byte moves
		 * to this odd slot, behind the new ID, which is delayed by it. */
		f->val[f->n] = f->val[f->n - 1];
		f->is_id[f->n] = 0;
		f->val[f->n - 1] = id;
		f->is_id[f->n - 1] = 1;
		f->delay[f->n - 1] = 1;
	} else {
		f->val[f->n] = id;
		f->is_id[f->n] = 1;
		f->delay[f->n] = 0;
	}
	f->n++;
	return f->n == 15 ? frame_emit(f) : 0;
}

int prec_cs_frames_encode(const struct prec_snap_source *src, size_t nsrc, size_t chunk,
			  uint8_t **out, size_t *size)
{
	struct frames f = { .cur = -1 };
	size_t *pos = NULL, i, left = 0;
	int r = 0;

	*out = NULL;
	*size = 0;
	if (!src && nsrc)
		return -EINVAL;
	for (i = 0; i < nsrc; i++) {
		uint8_t id = (uint8_t)src[i].regs.trctraceidr;

		if (id < 1 || id > 0x6f || (src[i].size && !src[i].data))
			return -EINVAL;
		left += src[i].size;
	}
	if (!chunk)
		chunk = 256;
	pos = calloc(nsrc ? nsrc : 1, sizeof(*pos));
	if (!pos)
		return -ENOMEM;
	while (left && !r) {
		for (i = 0; i < nsrc && !r; i++) {
			size_t k;

			if (pos[i] == src[i].size)
				continue;
			r = frame_id(&f, (uint8_t)src[i].regs.trctraceidr);
			for (k = 0; k < chunk && pos[i] < src[i].size && !r; k++, left--)
				r = frame_data(&f, src[i].data[pos[i]++]);
		}
	}
	if (!r && f.n) {
		/* Pad the last frame with the null trace ID. */
		r = frame_id(&f, 0);
		while (!r && f.n)
			r = frame_data(&f, 0);
	}
	free(pos);
	if (r) {
		free(f.out);
		return r;
	}
	*out = f.out;
	*size = f.len;
	return 0;
}

/* ---- the directory ------------------------------------------------------ */

static int write_file(const char *dir, const char *name, const void *p, size_t n,
		      struct prec_diag *diag)
{
	char path[4096];
	int fd, r;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return prec_diag_set(diag, -ENAMETOOLONG, -1, "snapshot path too long");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return prec_diag_set(diag, -errno, -1, "cannot create %s: %s", path, strerror(errno));
	r = prec_write_full(fd, p, n);
	if (close(fd) < 0 && !r)
		r = -errno;
	if (r < 0)
		return prec_diag_set(diag, r, -1, "cannot write %s: %s", path, strerror(-r));
	return 0;
}

static int write_text(const char *dir, const char *name, struct prec_buf *b,
		      struct prec_diag *diag)
{
	if (!b->data)
		return prec_diag_set(diag, -ENOMEM, -1, "out of memory");
	return write_file(dir, name, b->data, b->len, diag);
}

static void cpu_ini(struct prec_buf *b, size_t i, const char *core, const struct prec_snapshot *s,
		    int dumps)
{
	size_t k;

	prec_buf_printf(b, "[device]\nname=cpu_%zu\nclass=core\ntype=%s\n\n", i, core);
	prec_buf_printf(b, "[regs]\nPC(size:64)=0x0\nSP(size:64)=0x0\n\n");
	for (k = 0; dumps && k < s->nmem; k++)
		prec_buf_printf(b, "[dump%zu]\nfile=mem_%zu.bin\naddress=0x%" PRIx64
				"\nlength=0x%zx\n\n", k + 1, k, s->mem[k].addr, s->mem[k].size);
}

static void etm_ini(struct prec_buf *b, size_t i, const struct prec_etm_regs *r)
{
	/* Register names with their word offsets, as debuggers write them. */
	prec_buf_printf(b, "[device]\nname=ETM_%zu\nclass=trace_source\ntype=ETM4\n\n[regs]\n", i);
	prec_buf_printf(b, "TRCCONFIGR(0x004)=0x%08" PRIx32 "\n", r->trcconfigr);
	prec_buf_printf(b, "TRCTRACEIDR(0x010)=0x%08" PRIx32 "\n", r->trctraceidr);
	prec_buf_printf(b, "TRCAUTHSTATUS(0x3ee)=0x%08" PRIx32 "\n", r->trcauthstatus);
	prec_buf_printf(b, "TRCIDR0(0x078)=0x%08" PRIx32 "\n", r->trcidr0);
	prec_buf_printf(b, "TRCIDR1(0x079)=0x%08" PRIx32 "\n", r->trcidr1);
	prec_buf_printf(b, "TRCIDR2(0x07a)=0x%08" PRIx32 "\n", r->trcidr2);
	prec_buf_printf(b, "TRCIDR8(0x060)=0x%08" PRIx32 "\n", r->trcidr8);
}

int prec_snapshot_write(const char *dir, const struct prec_snapshot *s, struct prec_diag *diag)
{
	struct prec_buf b = { 0 };
	const char *core;
	uint8_t *frames = NULL;
	size_t i, j, nframes = 0;
	char name[64];
	int r = 0;

	if (!dir || !s || !s->nsrc || !s->src || (s->nmem && !s->mem) ||
	    (s->format != PREC_SNAP_FORMATTED && s->format != PREC_SNAP_SOURCE_DATA))
		return prec_diag_set(diag, -EINVAL, -1, "bad snapshot description");
	core = s->core ? s->core : PREC_ETM_CORE_NAME;
	if (strpbrk(core, "\n[]=") || (s->description && strpbrk(s->description, "\n[]")))
		return prec_diag_set(diag, -EINVAL, -1, "bad snapshot description");
	for (i = 0; i < s->nsrc; i++) {
		uint32_t id = s->src[i].regs.trctraceidr;

		if (id < 1 || id > 0x6f)
			return prec_diag_set(diag, -EINVAL, -1, "trace ID 0x%x is not in 1..0x6f", id);
		for (j = 0; j < i; j++)
			if (s->src[j].regs.trctraceidr == id)
				return prec_diag_set(diag, -EINVAL, -1, "trace ID 0x%x used twice", id);
	}
	for (i = 0; i < s->nmem; i++)
		if (s->mem[i].size && !s->mem[i].data)
			return prec_diag_set(diag, -EINVAL, -1, "bad snapshot description");
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return prec_diag_set(diag, -errno, -1, "cannot create %s: %s", dir, strerror(errno));

	prec_buf_printf(&b, "[snapshot]\nversion=1.0\n");
	if (s->description)
		prec_buf_printf(&b, "description=%s\n", s->description);
	prec_buf_printf(&b, "\n[device_list]\n");
	for (i = 0; i < s->nsrc; i++)
		prec_buf_printf(&b, "device%zu=cpu_%zu.ini\n", 2 * i, i);
	for (i = 0; i < s->nsrc; i++)
		prec_buf_printf(&b, "device%zu=ETM_%zu.ini\n", 2 * i + 1, i);
	prec_buf_printf(&b, "\n[trace]\nmetadata=trace.ini\n");
	r = write_text(dir, "snapshot.ini", &b, diag);
	prec_buf_reset(&b);

	for (i = 0; !r && i < s->nsrc; i++) {
		cpu_ini(&b, i, core, s, s->format == PREC_SNAP_SOURCE_DATA || i == 0);
		snprintf(name, sizeof(name), "cpu_%zu.ini", i);
		r = write_text(dir, name, &b, diag);
		prec_buf_reset(&b);
		if (r)
			break;
		etm_ini(&b, i, &s->src[i].regs);
		snprintf(name, sizeof(name), "ETM_%zu.ini", i);
		r = write_text(dir, name, &b, diag);
		prec_buf_reset(&b);
	}
	for (i = 0; !r && i < s->nmem; i++) {
		snprintf(name, sizeof(name), "mem_%zu.bin", i);
		r = write_file(dir, name, s->mem[i].data, s->mem[i].size, diag);
	}
	if (r)
		goto out;

	if (s->format == PREC_SNAP_FORMATTED) {
		r = prec_cs_frames_encode(s->src, s->nsrc, 0, &frames, &nframes);
		if (r) {
			prec_diag_set(diag, r, -1, "cannot format the trace: %s", prec_strerror(r));
			goto out;
		}
		r = write_file(dir, "cstrace.bin", frames, nframes, diag);
		if (r)
			goto out;
		prec_buf_printf(&b, "[trace_buffers]\nbuffers=buffer0\n\n[buffer0]\nname=ETB_0\n"
				    "file=cstrace.bin\nformat=coresight\n\n[source_buffers]\n");
		for (i = 0; i < s->nsrc; i++)
			prec_buf_printf(&b, "ETM_%zu=ETB_0\n", i);
	} else {
		for (i = 0; !r && i < s->nsrc; i++) {
			snprintf(name, sizeof(name), "trace_%zu.bin", i);
			r = write_file(dir, name, s->src[i].data ? (const void *)s->src[i].data : "",
				       s->src[i].size, diag);
		}
		if (r)
			goto out;
		prec_buf_printf(&b, "[trace_buffers]\nbuffers=");
		for (i = 0; i < s->nsrc; i++)
			prec_buf_printf(&b, "%sbuffer%zu", i ? "," : "", i);
		prec_buf_printf(&b, "\n\n");
		for (i = 0; i < s->nsrc; i++)
			prec_buf_printf(&b, "[buffer%zu]\nname=ETB_%zu\nfile=trace_%zu.bin\n"
					"format=source_data\n\n", i, i, i);
		prec_buf_printf(&b, "[source_buffers]\n");
		for (i = 0; i < s->nsrc; i++)
			prec_buf_printf(&b, "ETM_%zu=ETB_%zu\n", i, i);
	}
	prec_buf_printf(&b, "\n[core_trace_sources]\n");
	for (i = 0; i < s->nsrc; i++)
		prec_buf_printf(&b, "cpu_%zu=ETM_%zu\n", i, i);
	r = write_text(dir, "trace.ini", &b, diag);
out:
	free(frames);
	prec_buf_free(&b);
	return r;
}

/* ---- damage ------------------------------------------------------------- */

/* The value of @key in section [@sect] of ini text @t, copied to @out. */
static int ini_get(const char *t, const char *sect, const char *key, char *out, size_t size)
{
	const char *p = t;
	size_t sl = strlen(sect), kl = strlen(key);
	int in = 0;

	while (*p) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);

		while (n && (p[n - 1] == '\r' || p[n - 1] == ' '))
			n--;
		if (n && p[0] == '[') {
			in = n == sl + 2 && !strncmp(p + 1, sect, sl) && p[n - 1] == ']';
		} else if (in && n > kl && !strncmp(p, key, kl)) {
			const char *v = p + kl;

			while (*v == ' ')
				v++;
			if (*v == '=') {
				v++;
				while (*v == ' ')
					v++;
				if ((size_t)(p + n - v) >= size)
					return -ENAMETOOLONG;
				memcpy(out, v, (size_t)(p + n - v));
				out[p + n - v] = 0;
				return 0;
			}
		}
		p = e ? e + 1 : p + n;
	}
	return -ENOENT;
}

int prec_snapshot_corrupt(const char *dir, unsigned buffer, uint64_t offset, const void *bytes,
			  size_t n)
{
	char path[4096], list[1024], file[512], *tok, *save = NULL;
	char *text = NULL;
	unsigned k = 0;
	struct stat st;
	int fd, r;

	if ((size_t)snprintf(path, sizeof(path), "%s/trace.ini", dir) >= sizeof(path))
		return -ENAMETOOLONG;
	if (prec_read_text(path, &text) < 0)
		return -ENOENT;
	r = ini_get(text, "trace_buffers", "buffers", list, sizeof(list));
	for (tok = r ? NULL : strtok_r(list, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save))
		if (k++ == buffer)
			break;
	if (!tok || ini_get(text, tok, "file", file, sizeof(file)) < 0 || strstr(file, "..")) {
		free(text);
		return -ENOENT;
	}
	free(text);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
	} else if (offset > (uint64_t)st.st_size || n > (uint64_t)st.st_size - offset) {
		r = -ERANGE;
	} else {
		ssize_t w = pwrite(fd, bytes, n, (off_t)offset);

		r = w == (ssize_t)n ? 0 : w < 0 ? -errno : -EIO;
	}
	close(fd);
	return r;
}

int prec_snapshot_write_recording(const char *dir, const struct prec_etm_config *cfg,
				  const struct prec_etm_recording *rec, enum prec_snap_format fmt,
				  struct prec_diag *diag)
{
	struct prec_snap_source *src;
	struct prec_snap_mem *mem;
	struct prec_snapshot s = { .format = fmt, .description = "ptrec CoreSight software tracer" };
	size_t i;
	int r;

	if (!rec || !rec->nstreams)
		return prec_diag_set(diag, -ENODATA, -1, "the recording has no trace");
	src = calloc(rec->nstreams, sizeof(*src));
	mem = calloc(rec->nmem ? rec->nmem : 1, sizeof(*mem));
	if (!src || !mem) {
		free(src);
		free(mem);
		return prec_diag_set(diag, -ENOMEM, -1, "out of memory");
	}
	for (i = 0; i < rec->nstreams; i++) {
		prec_etm_regs_get(cfg, rec->streams[i].csid, &src[i].regs);
		src[i].data = rec->streams[i].data;
		src[i].size = rec->streams[i].size;
	}
	for (i = 0; i < rec->nmem; i++) {
		mem[i].addr = rec->mem[i].addr;
		mem[i].data = rec->mem[i].data;
		mem[i].size = rec->mem[i].size;
	}
	s.nsrc = rec->nstreams;
	s.src = src;
	s.nmem = rec->nmem;
	s.mem = mem;
	r = prec_snapshot_write(dir, &s, diag);
	free(src);
	free(mem);
	return r;
}
