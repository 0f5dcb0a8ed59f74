// SPDX-License-Identifier: MIT
/*
 * Fuzz target: raw Intel PT bytes (ptdump --pt) decoded against a fixed code
 * image: 64 KiB of this program's own machine code (from this target's code on),
 * as raw bytes at 0x400000, in a memory file made once; a view chosen by the
 * last byte.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "interop/rawpt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The image: 64 KiB of code of this program, read once into a memory file. */
static const char *image_path(void)
{
	static char path[64];
	const uint8_t *code = (const uint8_t *)(uintptr_t)&LLVMFuzzerTestOneInput;
	int fd;

	if (path[0])
		return path;
	fd = fuzz_memfd(code, 65536, path, sizeof(path));
	if (fd < 0)
		path[0] = 0;
	return path; /* the fd stays open for the process */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prec_rawpt_image img;
	struct prec_rawpt_opts o;
	struct prec_session *s;
	struct prec_diag d;
	char path[64];
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	memset(&img, 0, sizeof(img));
	snprintf(img.path, sizeof(img.path), "%s", image_path());
	img.addr = 0x400000;
	prec_rawpt_opts_init(&o);
	o.pt_path = path;
	o.images = &img;
	o.nimages = 1;
	o.has_cpu = true;
	o.family = 6;
	o.model = 94;
	o.stepping = 3;
	o.mtc_freq = 3;
	o.nom_freq = 10;
	s = prec_session_new();
	if (s && prec_rawpt_load(s, &o, &d) == 0)
		fuzz_views(s, size, size ? data[size - 1] : 0);
	prec_session_free(s);
	close(fd);
	return 0;
}
