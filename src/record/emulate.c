// SPDX-License-Identifier: MIT
/* The software tracer, host side: see emulate.h. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifndef PREC_NO_LIBIPT
#include <intel-pt.h>
#endif

#include "record/emulate.h"
#include "record/emurun.h"
#include "base/util.h"

const struct prec_emu_cpu prec_emu_cpu = {
	.vendor = "GenuineIntel",
	.family = 6,
	.model = 0x5e,
	.stepping = 3,
	.cpuid_14_0 = { 1, 0xf, 0x7, 0 },
	.cpuid_14_1 = { 0x02490002, 0x003f3fff, 0, 0 },
	.cpuid_15 = { 1, 40, 25000000 },
	.max_nonturbo_ratio = 10,
	.tsc_hz = 1000000000ull,
};

void prec_emu_set_pt_config(struct prec_emu_config *cfg, uint64_t c)
{
	cfg->cyc = c >> 1 & 1;
	cfg->mtc = c >> 9 & 1;
	cfg->tsc = c >> 10 & 1;
	cfg->noretcomp = c >> 11 & 1;
	cfg->no_branch = !(c >> 13 & 1);
	cfg->mtc_period = c >> 14 & 0xf;
	cfg->cyc_thresh = c >> 19 & 0xf;
	cfg->psb_period = c >> 24 & 0xf;
}

int prec_emu_exit_code(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 255;
}

/* 1: x86-64 ELF, 2: "#!" script (interpreter in @interp), 0: other, <0: error. */
static int probe_file(const char *path, char *interp, size_t isize)
{
	unsigned char h[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, h, sizeof(h) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	h[n] = 0;
	if (n >= 20 && !memcmp(h, ELFMAG, SELFMAG)) {
		uint16_t mach;

		memcpy(&mach, h + 18, 2);
		return h[EI_CLASS] == ELFCLASS64 && mach == EM_X86_64 ? 1 : 0;
	}
	if (n > 2 && h[0] == '#' && h[1] == '!') {
		char *p = (char *)h + 2, *e;

		while (*p == ' ' || *p == '\t')
			p++;
		e = p + strcspn(p, " \t\n");
		*e = 0;
		if ((size_t)snprintf(interp, isize, "%s", p) >= isize || !*p)
			return 0;
		return 2;
	}
	return 0;
}

int prec_emu_check_program(const char *prog, char *path, size_t size, struct prec_diag *diag)
{
	char interp[PATH_MAX];
	int r;

	r = prec_emurun_find_program(prog, path, size, diag);
	if (r < 0)
		return r;
	r = probe_file(path, interp, sizeof(interp));
	if (r == 2)
		r = probe_file(interp, interp, sizeof(interp)) == 1 ? 1 : 0;
	if (r < 0)
		return prec_diag_set(diag, r, -1, "cannot read '%s': %s", path, strerror(-r));
	if (r != 1) {
		prec_diag_set(diag, -ENOEXEC, -1, "'%s' is not an x86-64 Linux program", path);
		prec_diag_hint(diag, "the software tracer (--emulate) runs x86-64 ELF executables "
				     "and scripts whose interpreter is one");
		return -ENOEXEC;
	}
	return 0;
}

/* QEMU runs a script's interpreter, which then reads the script. */
static int check_program(const char *prog, char *path, size_t size, char *interp, size_t isize,
			 struct prec_diag *diag)
{
	int r = prec_emu_check_program(prog, path, size, diag);

	if (r < 0)
		return r;
	if (probe_file(path, interp, isize) != 2)
		interp[0] = 0;
	return 0;
}

/* The intel_pt terms, as the plugin reads them (emu_proto.h). */
static int prepare(const void *c, struct prec_buf *b, struct prec_diag *diag)
{
	const struct prec_emu_config *cfg = c;

	prec_buf_printf(b, "tsc %d\nmtc %d\ncyc %d\nnoretcomp %d\nbranch %d\n", cfg->tsc,
			cfg->mtc, cfg->cyc, cfg->noretcomp, !cfg->no_branch);
	prec_buf_printf(b, "mtc_period %u\ncyc_thresh %u\npsb_period %u\n", cfg->mtc_period,
			cfg->cyc_thresh, cfg->psb_period);
	return 0;
}

#ifndef PREC_NO_LIBIPT
/*
 * The end of a stream whose process died: the TNT bits the encoder held,
 * then, if user code ran with packets flowing, FUP at where the thread stood
 * and TIP.PGD, as hardware writes when an exception takes user-only tracing
 * into the kernel. The IPs are absolute (no last-IP state is needed).
 */
static size_t close_stream(uint64_t held, unsigned nheld, bool user, uint64_t ip, uint8_t *out,
			   size_t cap)
{
	struct pt_config c;
	struct pt_encoder *e;
	struct pt_packet pk;
	uint64_t off = 0;
	int err = 0;

	pt_config_init(&c);
	c.begin = out;
	c.end = out + cap;
	e = pt_alloc_encoder(&c);
	if (!e)
		return 0;
	if (nheld && nheld <= 6) {
		memset(&pk, 0, sizeof(pk));
		pk.type = ppt_tnt_8;
		pk.payload.tnt.bit_size = (uint8_t)nheld;
		pk.payload.tnt.payload = held;
		err = pt_enc_next(e, &pk);
	}
	if (user && ip && err >= 0) {
		memset(&pk, 0, sizeof(pk));
		pk.type = ppt_fup;
		pk.payload.ip.ip = ip;
		pk.payload.ip.ipc = (uint64_t)((int64_t)(ip << 16) >> 16) == ip ? pt_ipc_sext_48 :
										   pt_ipc_full;
		err = pt_enc_next(e, &pk);
		memset(&pk, 0, sizeof(pk));
		pk.type = ppt_tip_pgd;
		pk.payload.ip.ipc = pt_ipc_suppressed;
		if (err >= 0)
			err = pt_enc_next(e, &pk);
	}
	pt_enc_get_offset(e, &off);
	pt_free_encoder(e);
	return err < 0 ? 0 : (size_t)off;
}
#endif

static const struct prec_emurun_tracer tracer = {
	.qemu_default = "qemu-x86_64",
	.plugin_file = "ptrec-emu.so",
	.config_name = "ptrec-emu-config",
	.check_program = check_program,
	.prepare = prepare,
#ifndef PREC_NO_LIBIPT
	.close_stream = close_stream,
#endif
};

int prec_emu_run(const struct prec_emu_config *cfg, const struct prec_emu_ops *ops,
		 int *wstatus, struct prec_diag *diag)
{
	struct prec_emurun run = { .tracer = &tracer, .cfg = cfg, .ops = ops };

	if (cfg) {
		PREC_EMURUN_SET(&run, cfg);
		run.filters = cfg->filters;
		run.nfilters = cfg->nfilters;
	}
	return prec_emurun_run(&run, wstatus, diag);
}
