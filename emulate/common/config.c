// SPDX-License-Identifier: MIT
/* The plugin's configuration: see config.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "record/emu_proto.h"
#include "sideband.h"

struct emu_cfg emu_cfg;

/* "IDX ACTION KIND ARG [PATH]" of a trigger line. */
static int parse_trigger(const char *rest)
{
	struct emu_trig *tr;
	char act[16], kind[16];
	long long arg;
	int idx, pos = 0;

	if (emu_cfg.ntrig >= EMU_MAX_TRIG) {
		emu_error("too many triggers (at most %d)", EMU_MAX_TRIG);
		return -1;
	}
	tr = &emu_cfg.trig[emu_cfg.ntrig];
	if (sscanf(rest, "%d %15s %15s %lli %n", &idx, act, kind, &arg, &pos) < 4) {
		emu_error("bad trigger line: %s", rest);
		return -1;
	}
	tr->idx = idx;
	tr->arg = arg;
	tr->action = !strcmp(act, "pause")    ? EMU_ACT_PAUSE :
		     !strcmp(act, "resume")   ? EMU_ACT_RESUME :
		     !strcmp(act, "snapshot") ? EMU_ACT_SNAPSHOT : EMU_ACT_NONE;
	if (!strcmp(kind, "uprobe") || !strcmp(kind, "uretprobe")) {
		struct stat st;

		tr->kind = kind[1] == 'p' ? EMU_TK_UPROBE : EMU_TK_URETPROBE;
		tr->path = strdup(rest + pos);
		if (tr->path && stat(tr->path, &st) == 0) {
			tr->dev = st.st_dev;
			tr->ino = st.st_ino;
			tr->have_ino = 1;
		}
	} else if (!strcmp(kind, "sys_enter")) {
		tr->kind = EMU_TK_SYS_ENTER;
	} else if (!strcmp(kind, "sys_exit")) {
		tr->kind = EMU_TK_SYS_EXIT;
	} else if (!strcmp(kind, "insns") && arg > 0) {
		tr->kind = EMU_TK_INSNS;
	} else {
		emu_error("bad trigger kind: %s", kind);
		return -1;
	}
	emu_cfg.ntrig++;
	return 0;
}

/* "OFFSET SIZE PATH" of a filter line. */
static int parse_filter(const char *rest)
{
	struct emu_filt *f;
	unsigned long long off, size;
	struct stat st;
	int pos = 0;

	if (emu_cfg.nfilt >= EMU_MAX_FILT) {
		emu_error("too many address filters (at most %d)", EMU_MAX_FILT);
		return -1;
	}
	f = &emu_cfg.filt[emu_cfg.nfilt];
	if (sscanf(rest, "%llu %llu %n", &off, &size, &pos) < 2 || !pos || !rest[pos] || !size) {
		emu_error("bad filter line: %s", rest);
		return -1;
	}
	f->off = off;
	f->size = size;
	f->path = strdup(rest + pos);
	if (f->path && stat(f->path, &st) == 0) {
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		f->have_ino = 1;
	}
	emu_cfg.nfilt++;
	return 0;
}

static int parse(char *text, void (*key_cb)(const char *key, unsigned long long v),
		 int (*check)(void))
{
	char *line, *save = NULL;
	int lineno = 0;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char key[32], rest[4200];
		unsigned long long v = 0;

		lineno++;
		rest[0] = 0;
		if (sscanf(line, "%31s %4199[^\n]", key, rest) < 1)
			continue;
		if (lineno == 1) {
			if (strcmp(key, "emu") || strtoul(rest, NULL, 10) != EMU_PROTO_VERSION) {
				emu_error("config format mismatch: the plugin and ptrec come from different builds");
				return -1;
			}
			continue;
		}
		if (!strcmp(key, "qemu")) {
			emu_cfg.qemu = strdup(rest);
		} else if (!strcmp(key, "plugin")) {
			emu_cfg.plugin = strdup(rest);
		} else if (!strcmp(key, "trigger")) {
			if (parse_trigger(rest) < 0)
				return -1;
		} else if (!strcmp(key, "filter")) {
			if (parse_filter(rest) < 0)
				return -1;
		} else {
			v = strtoull(rest, NULL, 0);
			if (!strcmp(key, "start_paused"))
				emu_cfg.start_paused = !!v;
			else if (!strcmp(key, "truth"))
				emu_cfg.truth = !!v;
			else
				key_cb(key, v);
		}
	}
	return check ? check() : 0;
}

int emu_cfg_load(int fd, void (*key)(const char *key, unsigned long long v), int (*check)(void))
{
	char *text;
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size > (1 << 20)) {
		emu_error("cannot read the tracer configuration");
		return -1;
	}
	text = calloc(1, (size_t)st.st_size + 1);
	if (!text)
		return -1;
	n = pread(fd, text, (size_t)st.st_size, 0);
	if (n != st.st_size) {
		free(text);
		emu_error("cannot read the tracer configuration");
		return -1;
	}
	n = parse(text, key, check);
	free(text);
	return (int)n;
}
