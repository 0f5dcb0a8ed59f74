/* SPDX-License-Identifier: MIT */
/*
 * The plugin's configuration: the text ptrec writes (emu_proto.h lists the
 * lines). The keys both tracers share are read here; every other
 * "key value" line goes to the tracer.
 */
#ifndef EMU_COMMON_CONFIG_H
#define EMU_COMMON_CONFIG_H

#include <stdint.h>
#include <sys/types.h>

#define EMU_MAX_TRIG 64

enum emu_action { EMU_ACT_NONE, EMU_ACT_PAUSE, EMU_ACT_RESUME, EMU_ACT_SNAPSHOT };
enum emu_trig_kind { EMU_TK_UPROBE, EMU_TK_URETPROBE, EMU_TK_SYS_ENTER, EMU_TK_SYS_EXIT, EMU_TK_INSNS };

struct emu_trig {
	int idx;        /* the event's index in ptrec's group; sample id idx + 1 */
	int action;     /* enum emu_action */
	int kind;       /* enum emu_trig_kind */
	int64_t arg;    /* uprobes: file offset; syscalls: number or -1; counters: period */
	char *path;     /* uprobes: the probed file */
	dev_t dev;      /* ... and its identity, if it could be stat()ed */
	ino_t ino;
	int have_ino;
};

#define EMU_MAX_FILT 8

/* An address filter: trace only in [off, off + size) of a file (FilterEn). */
struct emu_filt {
	uint64_t off, size;
	char *path;
	dev_t dev;      /* the file's identity, if it could be stat()ed */
	ino_t ino;
	int have_ino;
};

struct emu_cfg {
	int start_paused, truth;
	char *qemu, *plugin; /* for following exec */
	struct emu_trig trig[EMU_MAX_TRIG];
	int ntrig;
	struct emu_filt filt[EMU_MAX_FILT];
	int nfilt;
};

extern struct emu_cfg emu_cfg;

/*
 * Reads the configuration from @fd into emu_cfg. Lines with other keys go to
 * @key with their value as a number (strtoull base 0); after the last line,
 * @check (may be NULL) says whether the whole is acceptable (returns 0, or
 * -1 having reported why). Returns 0, or -1 having reported the error.
 */
int emu_cfg_load(int fd, void (*key)(const char *key, unsigned long long v), int (*check)(void));

#endif
