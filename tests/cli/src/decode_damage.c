// SPDX-License-Identifier: MIT
/*
 * decode_damage: lists and rewrites ptrec trace files chunk by chunk with the
 * project's own reader and writer, to make damaged inputs for the decode
 * tests.
 *
 *   decode_damage list FILE
 *	one line per good chunk: file_offset type_name cpu tid arg stored_len
 *	raw_len (decimal); payload bytes start 40 bytes after file_offset.
 *   decode_damage rewrite IN OUT [ACTION...]
 *	copies every chunk (the writer adds its own STATS and END), applying:
 *	--corrupt TID OFF LEN   overwrite LEN trace bytes of thread TID's stream
 *	                        from stream offset OFF with a pattern no PT
 *	                        packet starts with (0xd9: a reserved opcode)
 *	--cut TID OFF LEN       leave out LEN trace bytes from stream offset OFF
 *	                        (the stream then has a hole the reader reports)
 *	--drop-image TEXT       leave out every code image whose path contains
 *	                        TEXT
 *	--split SIZE            write trace bytes in chunks of at most SIZE
 *	                        bytes (so that one can be cut or damaged alone)
 *	--meta-first            write every other chunk (sideband, images) before
 *	                        the trace chunks, so that any prefix of the file
 *	                        ending in trace has what decoding it needs
 *	The new file is written uncompressed.
 *
 * Exit status: 0, 1 on failure (with a message), 2 for usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "tracefile/tfile.h"

static void usage(void)
{
	fprintf(stderr, "usage: decode_damage list FILE\n"
			"       decode_damage rewrite IN OUT [--corrupt TID OFF LEN] "
			"[--cut TID OFF LEN] [--drop-image TEXT] [--split SIZE] [--meta-first]\n");
	exit(2);
}

static void on_damage(void *ctx, const struct prec_tfile_damage *d)
{
	char buf[256];

	(void)ctx;
	prec_tfile_damage_str(d, buf, sizeof(buf));
	fprintf(stderr, "decode_damage: input damaged: %s\n", buf);
}

static int open_reader(const char *path, struct prec_tfile_reader **r)
{
	struct prec_tfile_ropts o = { .on_damage = on_damage };
	struct prec_diag d = { 0 };
	int err = prec_tfile_reader_new(path, &o, r, &d);

	if (err)
		fprintf(stderr, "decode_damage: %s: %s\n", path,
			d.msg[0] ? d.msg : prec_strerror(err));
	return err;
}

static int list(const char *path)
{
	struct prec_tfile_reader *r = NULL;
	struct prec_tfile_chunk c;
	int err;

	err = open_reader(path, &r);
	if (err)
		return 1;
	while ((err = prec_tfile_next(r, &c)) > 0)
		printf("%" PRIu64 " %s %d %d %" PRIu64 " %u %zu\n", c.file_off,
		       prec_tfile_type_name(c.type), c.cpu, c.tid, c.arg, c.stored_len, c.len);
	prec_tfile_reader_free(r);
	if (err < 0) {
		fprintf(stderr, "decode_damage: %s: %s\n", path, prec_strerror(err));
		return 1;
	}
	return 0;
}

struct action {
	int tid;
	uint64_t off, len;
};

static uint64_t split;

/* AUX bytes at stream offset @arg, in pieces of at most @split bytes. */
static int write_aux(struct prec_tfile_writer *w, const struct prec_tfile_chunk *c, uint64_t arg,
		     const unsigned char *p, size_t n)
{
	int err = 0;

	while (n && !err) {
		size_t k = split && n > split ? (size_t)split : n;

		err = prec_tfile_write_chunk(w, c->type, c->cpu, c->tid, arg, p, k);
		arg += k;
		p += k;
		n -= k;
	}
	return err;
}

int main(int argc, char **argv)
{
	struct prec_tfile_reader *r = NULL;
	struct prec_tfile_writer *w = NULL;
	struct prec_tfile_wopts wo;
	struct prec_tfile_stats *st = NULL;
	struct prec_tfile_chunk c;
	struct action corrupt = { -1, 0, 0 }, cut = { -1, 0, 0 };
	const char *drop = NULL;
	unsigned char *tmp = NULL;
	int err, i, rc = 1, pass;
	bool meta_first = false;
	uint64_t corrupted = 0, cut_bytes = 0, dropped = 0;

	if (argc == 3 && !strcmp(argv[1], "list"))
		return list(argv[2]);
	if (argc < 4 || strcmp(argv[1], "rewrite"))
		usage();
	for (i = 4; i < argc; i++) {
		struct action *a = NULL;

		if (!strcmp(argv[i], "--corrupt"))
			a = &corrupt;
		else if (!strcmp(argv[i], "--cut"))
			a = &cut;
		if (a) {
			if (i + 3 >= argc)
				usage();
			a->tid = atoi(argv[i + 1]);
			a->off = strtoull(argv[i + 2], NULL, 0);
			a->len = strtoull(argv[i + 3], NULL, 0);
			i += 3;
		} else if (!strcmp(argv[i], "--drop-image") && i + 1 < argc) {
			drop = argv[++i];
		} else if (!strcmp(argv[i], "--meta-first")) {
			meta_first = true;
		} else if (!strcmp(argv[i], "--split") && i + 1 < argc) {
			split = strtoull(argv[++i], NULL, 0);
			if (!split)
				usage();
		} else {
			usage();
		}
	}
	if (open_reader(argv[2], &r))
		return 1;
	prec_tfile_wopts_init(&wo);
	wo.level = 0;
	wo.file_flags = prec_tfile_file_header(r)->flags;
	err = prec_tfile_writer_new(argv[3], &wo, &w);
	if (err) {
		fprintf(stderr, "decode_damage: %s: %s\n", argv[3], prec_strerror(err));
		goto out;
	}
	if (prec_tfile_read_stats(r, &st))
		st = NULL;
	/* Pass 0 (with --meta-first): the chunks other than trace; pass 1: the rest. */
	for (pass = meta_first ? 0 : 1, err = 1; pass < 2 && err >= 0; pass++) {
		prec_tfile_rewind(r);
		while ((err = prec_tfile_next(r, &c)) > 0) {
			const unsigned char *p = c.data;
			size_t n = c.len;

			if (c.type == PREC_TFILE_STATS || c.type == PREC_TFILE_END)
				continue;
			if (meta_first && (pass == 0) == (c.type == PREC_TFILE_AUX))
				continue;
			if (c.type == PREC_TFILE_IMAGE && drop) {
				struct prec_tfile_image img;
				const void *bytes;
				size_t nb;

				if (!prec_tfile_image_decode(c.data, c.len, &img, &bytes, &nb) &&
				    strstr(img.path, drop)) {
					dropped++;
					continue;
				}
			}
			if (c.type == PREC_TFILE_AUX && c.tid == corrupt.tid &&
			    corrupt.off < c.arg + n && corrupt.off + corrupt.len > c.arg) {
				uint64_t a = corrupt.off > c.arg ? corrupt.off - c.arg : 0;
				uint64_t b = corrupt.off + corrupt.len - c.arg;

				if (b > n)
					b = n;
				free(tmp);
				tmp = malloc(n);
				if (!tmp) {
					err = -ENOMEM;
					break;
				}
				memcpy(tmp, p, n);
				memset(tmp + a, 0xd9, b - a);
				corrupted += b - a;
				p = tmp;
			}
			if (c.type == PREC_TFILE_AUX && c.tid == cut.tid && cut.off < c.arg + n &&
			    cut.off + cut.len > c.arg) {
				uint64_t a = cut.off > c.arg ? cut.off - c.arg : 0;
				uint64_t b = cut.off + cut.len - c.arg;

				if (b > n)
					b = n;
				/* The bytes before and after the hole, as two chunks. */
				if (a)
					err = write_aux(w, &c, c.arg, p, a);
				if (!err && b < n)
					err = write_aux(w, &c, c.arg + b, p + b, n - b);
				cut_bytes += b - a;
				if (err)
					break;
				continue;
			}
			if (c.type == PREC_TFILE_AUX)
				err = write_aux(w, &c, c.arg, p, n);
			else
				err = prec_tfile_write_chunk(w, c.type, c.cpu, c.tid, c.arg, p, n);
			if (err)
				break;
		}
	}
	if (err < 0) {
		fprintf(stderr, "decode_damage: rewriting %s: %s\n", argv[2], prec_strerror(err));
		goto out;
	}
	err = prec_tfile_writer_close(w, st);
	if (err) {
		fprintf(stderr, "decode_damage: %s: %s\n", argv[3], prec_strerror(err));
		goto out;
	}
	if ((corrupt.tid >= 0 && !corrupted) || (cut.tid >= 0 && !cut_bytes) ||
	    (drop && !dropped)) {
		fprintf(stderr, "decode_damage: nothing matched the requested damage\n");
		goto out;
	}
	printf("corrupted %" PRIu64 " cut %" PRIu64 " images_dropped %" PRIu64 "\n", corrupted,
	       cut_bytes, dropped);
	rc = 0;
out:
	free(tmp);
	free(st);
	prec_tfile_writer_free(w);
	prec_tfile_reader_free(r);
	return rc;
}
