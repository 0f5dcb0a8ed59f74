// SPDX-License-Identifier: MIT
/*
 * The whole-system tracer's configuration: the text ptrec writes
 * (src/record/emusys.c), "key value" lines after "emu 2":
 *
 *	ram PATH            the file backing guest RAM
 *	ram_size N
 *	mark ADDR           ptrec_guest_mark() of the guest's first process
 *	comm NAME           the workload's name
 *	user 0|1, kernel 0|1, start_paused 0|1, truth 0|1
 *	tsc, mtc, cyc, noretcomp, branch, mtc_period, cyc_thresh, psb_period
 *	trigger IDX ACTION kentry|kret SYMBOL
 *	trigger IDX ACTION uentry|uret SLOT   a uprobe (uretprobe): the probed page's
 *	                                      address is slot SLOT of the mailbox's uprobe_pa
 *	trigger IDX ACTION insns PERIOD U K
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sideband.h"
#include "record/emu_proto.h"
#include "record/emusys_mb.h"
#include "sys.h"

struct sys_cfg sys_cfg = { .pt = { .branch = 1 } };

static int parse_trigger(const char *rest)
{
	struct sys_trig *tr;
	char act[16], kind[16];

	if (sys_cfg.ntrig >= SYS_MAX_TRIG) {
		emu_error("too many triggers (at most %d)", SYS_MAX_TRIG);
		return -1;
	}
	tr = &sys_cfg.trig[sys_cfg.ntrig];
	if (sscanf(rest, "%d %15s %15s %127s", &tr->idx, act, kind, tr->sym) != 4) {
		emu_error("bad trigger line: %s", rest);
		return -1;
	}
	tr->action = !strcmp(act, "pause") ? SYS_ACT_PAUSE :
		     !strcmp(act, "resume") ? SYS_ACT_RESUME : SYS_ACT_NONE;
	if (!strcmp(kind, "insns")) {
		tr->kind = SYS_TK_INSNS;
		if (sscanf(rest, "%*d %*s %*s %" SCNu64 " %d %d", &tr->period, &tr->u, &tr->k) != 3 ||
		    !tr->period) {
			emu_error("bad counter trigger: %s", rest);
			return -1;
		}
		tr->next = tr->period;
		tr->sym[0] = 0;
	} else if (!strcmp(kind, "kentry")) {
		tr->kind = SYS_TK_KENTRY;
	} else if (!strcmp(kind, "kret")) {
		tr->kind = SYS_TK_KRET;
	} else if (!strcmp(kind, "uentry") || !strcmp(kind, "uret")) {
		/* The same watch at a page cache page's byte instead of a kernel symbol. */
		char *end;

		tr->kind = kind[1] == 'e' ? SYS_TK_KENTRY : SYS_TK_KRET;
		tr->user = 1;
		tr->slot = (int)strtol(tr->sym, &end, 10);
		if (*end || tr->slot < 0 || tr->slot >= PREC_EMUSYS_MB_UPROBES) {
			emu_error("bad uprobe slot in: %s", rest);
			return -1;
		}
	} else {
		emu_error("bad trigger kind: %s", kind);
		return -1;
	}
	sys_cfg.ntrig++;
	return 0;
}

static void num_key(const char *key, unsigned long long v)
{
	struct emu_pt_cfg *c = &sys_cfg.pt;
	static const struct {
		const char *key;
		int *flag;
	} flags[] = {
		{ "user", &sys_cfg.u }, { "kernel", &sys_cfg.k },
		{ "start_paused", &sys_cfg.start_paused }, { "truth", &sys_cfg.truth },
		{ "per_cpu", &sys_cfg.per_cpu },
		{ "tsc", &sys_cfg.pt.tsc }, { "mtc", &sys_cfg.pt.mtc }, { "cyc", &sys_cfg.pt.cyc },
		{ "noretcomp", &sys_cfg.pt.noretcomp }, { "branch", &sys_cfg.pt.branch },
	};

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (!strcmp(key, flags[i].key))
			*flags[i].flag = !!v;
	if (!strcmp(key, "mtc_period"))
		c->mtc_period = (unsigned)(v & 15);
	else if (!strcmp(key, "cyc_thresh"))
		c->cyc_thresh = (unsigned)(v & 15);
	else if (!strcmp(key, "psb_period"))
		c->psb_period = (unsigned)(v & 15);
	else if (!strcmp(key, "ram_size"))
		sys_cfg.ram_size = v;
	else if (!strcmp(key, "mark"))
		sys_cfg.mark = v;
}

static int parse_line(const char *key, const char *rest)
{
	if (!strcmp(key, "trigger"))
		return parse_trigger(rest);
	/* (values longer than the field are cut, as the kernel cuts a comm) */
	if (!strcmp(key, "ram"))
		snprintf(sys_cfg.ram, sizeof(sys_cfg.ram), "%.*s", (int)sizeof(sys_cfg.ram) - 1, rest);
	else if (!strcmp(key, "comm"))
		snprintf(sys_cfg.comm, sizeof(sys_cfg.comm), "%.*s", (int)sizeof(sys_cfg.comm) - 1,
			 rest);
	else
		num_key(key, strtoull(rest, NULL, 0));
	return 0;
}

int sys_cfg_load(int fd)
{
	char *text = NULL, *line, *save = NULL;
	size_t n = 0, cap = 0;
	ssize_t r;
	int lineno = 0, err = 0;

	for (;;) {
		if (n + 4096 > cap) {
			char *t = realloc(text, cap = cap ? 2 * cap : 65536);

			if (!t) {
				free(text);
				emu_error("out of memory");
				return -1;
			}
			text = t;
		}
		r = pread(fd, text + n, cap - n - 1, (off_t)n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	if (!text || !n) {
		free(text);
		emu_error("cannot read the configuration");
		return -1;
	}
	text[n] = 0;
	for (line = strtok_r(text, "\n", &save); line && !err; line = strtok_r(NULL, "\n", &save)) {
		char key[32], rest[4200] = "";

		if (sscanf(line, "%31s %4199[^\n]", key, rest) < 1)
			continue;
		if (++lineno == 1) {
			if (strcmp(key, "emu") || strtoul(rest, NULL, 10) != EMU_PROTO_VERSION) {
				emu_error("config format mismatch: the plugin and ptrec come from "
					  "different builds");
				err = -1;
			}
			continue;
		}
		err = parse_line(key, rest);
	}
	free(text);
	if (!err && (!sys_cfg.ram[0] || !sys_cfg.ram_size || !sys_cfg.mark)) {
		emu_error("the configuration names no guest RAM file or mark address");
		err = -1;
	}
	return err;
}
