/* SPDX-License-Identifier: MIT */
/*
 * The wire between a software-tracer plugin (ptrec-emu.so inside
 * qemu-x86_64, ptrec-emu-etm.so inside qemu-aarch64; both built on
 * emulate/common/) and the host library (src/emurun.c, for src/emulate.c and
 * src/etm_emulate.c). Shared by both sides; no code, only layout.
 *
 * Transport: one AF_UNIX SOCK_SEQPACKET socket. Every message is a single
 * send(), so messages from different threads and from forked processes never
 * interleave, and the socket keeps their boundaries. A message is a struct
 * emu_msg followed by its payload; payloads are at most EMU_MSG_MAX bytes.
 *
 * Configuration: the host writes a text file (a memfd) whose descriptor the
 * plugin receives as "cfgfd=N"; the socket comes as "fd=N". Lines:
 *
 *	emu 1                          format version, first line
 *	qemu PATH                      the qemu-user binary (for exec)
 *	plugin PATH                    this plugin (for exec)
 *	start_paused 0|1
 *	truth 0|1                      send EMU_MSG_TRUTH messages
 *	trigger IDX ACTION KIND ARG [PATH]
 *	    ACTION: pause | resume | none
 *	    KIND:   uprobe OFFSET PATH | uretprobe OFFSET PATH |
 *	            sys_enter NR | sys_exit NR (NR -1: any) | insns PERIOD
 *	    PATH runs to the end of the line.
 *
 * and the tracer's own. Intel PT (ptrec-emu.so):
 *	tsc 0|1, mtc 0|1, cyc 0|1, noretcomp 0|1, branch 0|1
 *	mtc_period N, cyc_thresh N, psb_period N   (intel_pt config fields)
 * CoreSight ETMv4 (ptrec-emu-etm.so):
 *	etm 1                          required: the config is for this tracer
 *	timestamp 0|1                  TRCCONFIGR.TS
 *	contextid 0|1                  TRCCONFIGR.CID (contexts carry the tid)
 *	sync_period N                  log2 of the bytes between syncs (8..20)
 * Each plugin ignores keys it does not know.
 */
#ifndef EMU_PROTO_H
#define EMU_PROTO_H

#include <stdint.h>

#define EMU_PROTO_VERSION 1
#define EMU_MSG_MAX (60 * 1024)
/* Descriptor numbers the host gives the socket and the config in the child. */
#define EMU_FD_SOCK 1021
#define EMU_FD_CFG 1022

enum emu_msg_type {
	EMU_MSG_HELLO = 1, /* a plugin instance started; arg = pid */
	EMU_MSG_AUX,       /* trace bytes of stream tid; arg = offset in that stream */
	EMU_MSG_SB,        /* one perf-format sideband record */
	EMU_MSG_TRUTH,     /* ground-truth text lines */
	EMU_MSG_ERROR,     /* fatal plugin error; payload = message text */
	EMU_MSG_BYE,       /* a plugin instance ends; arg = instructions it saw retire */
};

struct emu_msg {
	uint32_t type;
	uint32_t pid;
	uint32_t tid;
	uint32_t size; /* payload bytes following this header */
	uint64_t arg;
};

#endif
