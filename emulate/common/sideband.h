/* SPDX-License-Identifier: MIT */
/*
 * The plugin's link to ptrec (emu_proto.h) and the perf-format sideband
 * records it sends, in the layout src/emulate.h documents: non-sample
 * records end in a sample_id_all trailer for sample_type TID | TIME | CPU |
 * IDENTIFIER with id EMU_SB_ID (the trace event) and cpu 0; times are
 * values of the emulated clock.
 *
 * Each plugin .so links its own copy: the state below is per plugin, and
 * per process (a forked child updates it; an exec starts afresh).
 */
#ifndef EMU_COMMON_SIDEBAND_H
#define EMU_COMMON_SIDEBAND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* The sample id of the trace event (Intel PT's or the ETM's). */
#define EMU_SB_ID 1

/* The process the plugin instance runs in and its link to ptrec. */
struct emu_proc {
	int sock;       /* the socket to ptrec; -1 until known */
	int cfgfd;      /* the configuration memfd; -1 until known */
	int shmfd;      /* the shared area's memfd; -1 without one */
	struct emu_shm *shm; /* that area, mapped; NULL without one */
	int pid, ppid;
	int broken;     /* ptrec went away or the encoder failed: trace no more */
	uint64_t tsc0;  /* the emulated clock when this process began counting */
	uint64_t clock; /* user instructions the process retired since (atomic) */
	char comm[16];
};

extern struct emu_proc emu_proc;

/*
 * Sends one message (one send(), so messages never interleave) of @n bytes
 * at @p. Once sending fails, marks the link broken and sends nothing more:
 * the workload runs on, untraced.
 */
void emu_send(uint32_t type, uint32_t tid, uint64_t arg, const void *p, size_t n);

/* Reports a fatal error to ptrec, or to stderr while there is no socket. */
void emu_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int emu_gettid(void);

struct emu_slot;
/* Maps the shared area (emu_proc.shmfd); without it slots are private. Returns 0 or -1. */
int emu_shm_map(void);
/*
 * A slot for a thread of this process, zeroed up to its buffers: one of the
 * shared area, else private memory. NULL when out of memory.
 */
struct emu_slot *emu_slot_claim(void);
/* Gives a slot back (a shared one only if this process owns it). */
void emu_slot_release(struct emu_slot *s);
/* Whether @s is in the shared area. */
int emu_slot_shared(const struct emu_slot *s);
/* EMU_MSG_TRUTH's arg for the truth of slot @s (0 for a private one). */
uint64_t emu_slot_truth_arg(const struct emu_slot *s);
/* After an exec: the slots this pid held are the old program's; free them. */
void emu_slot_release_pid(void);

/* The emulated clock: one tick per user instruction the process retired. */
uint64_t emu_now(void);

/* ---- building records ---------------------------------------------- */

struct emu_sb {
	uint8_t b[4608];
	size_t n;
};

/* Starts a record; what does not fit in the buffer is dropped. */
void emu_sb_begin(struct emu_sb *s, uint32_t type, uint16_t misc);
void emu_sb_put(struct emu_sb *s, const void *p, size_t n);
void emu_sb_u32(struct emu_sb *s, uint32_t v);
void emu_sb_u64(struct emu_sb *s, uint64_t v);
/* A NUL-terminated string padded to 8 bytes with NULs. */
void emu_sb_str(struct emu_sb *s, const char *str);
/* Appends the sample_id_all trailer of thread @tid, sets the size, sends it. */
void emu_sb_end(struct emu_sb *s, int tid);

/* ---- the records --------------------------------------------------- */

/* COMM of thread @tid (the name in emu_proc.comm); @exec: after an exec. */
void emu_sb_comm(int tid, int exec);
/* FORK or EXIT (@type), sent from the calling thread. */
void emu_sb_task(uint32_t type, int pid, int ppid, int tid, int ptid);
void emu_sb_itrace_start(int tid);
/* @size trace bytes at @off of the stream of @tid went to ptrec. */
void emu_sb_aux(int tid, uint64_t off, uint64_t size);
/* SAMPLE of trigger event @idx (sample id @idx + 1) at @ip. */
void emu_sb_sample(int tid, int idx, uint64_t ip, uint64_t period);
/*
 * MMAP2 of @len bytes of @path (@st: its stat) at @start from file offset
 * @pgoff, with the build id @id of @idn bytes when @idn > 0, else the
 * device and inode.
 */
void emu_sb_mmap2(int tid, const char *path, const struct stat *st, const uint8_t *id,
		  size_t idn, uint64_t start, uint64_t len, uint64_t pgoff, uint32_t prot,
		  uint32_t flags);

/* Reads the GNU build id note of the ELF file @fd; returns its size or 0. */
size_t emu_build_id(int fd, uint8_t id[20]);

#endif
