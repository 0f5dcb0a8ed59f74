// SPDX-License-Identifier: MIT
/* The plugin's link to ptrec and its sideband records: see sideband.h. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "record/emu_proto.h"
#include "sideband.h"

struct emu_proc emu_proc = { .sock = -1, .cfgfd = -1, .shmfd = -1 };

/* The chunks of the shared area this process mapped (emu_proto.h). */
static struct emu_slot *g_chunk[EMU_SHM_MAX_CHUNKS];

int emu_shm_map(void)
{
	struct emu_shm h, *m;

	if (emu_proc.shmfd < 0)
		return 0;
	if (pread(emu_proc.shmfd, &h, sizeof(h), 0) != sizeof(h) || h.magic != EMU_SHM_MAGIC ||
	    h.slot_size != sizeof(struct emu_slot) || h.chunk_slots != EMU_SHM_CHUNK_SLOTS ||
	    h.max_chunks != EMU_SHM_MAX_CHUNKS || h.chunk_bytes != EMU_SHM_CHUNK_BYTES)
		return -1;
	m = mmap(NULL, EMU_SHM_HDR, PROT_READ | PROT_WRITE, MAP_SHARED, emu_proc.shmfd, 0);
	if (m == MAP_FAILED)
		return -1;
	emu_proc.shm = m;
	return 0;
}

/*
 * Chunk @i, mapped: the file is extended to cover it first (by whoever
 * comes first; fallocate never shrinks it). NULL if that fails. Two threads
 * may map it at once: one mapping stays.
 */
static struct emu_slot *chunk(uint32_t i)
{
	struct emu_slot *c = __atomic_load_n(&g_chunk[i], __ATOMIC_ACQUIRE), *none = NULL;
	off_t end = (off_t)EMU_SHM_CHUNK_OFF(i + 1);
	void *p;

	if (c)
		return c;
	if (fallocate(emu_proc.shmfd, 0, end - 4096, 4096) < 0)
		return NULL;
	p = mmap(NULL, EMU_SHM_CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, emu_proc.shmfd,
		 (off_t)EMU_SHM_CHUNK_OFF(i));
	if (p == MAP_FAILED)
		return NULL;
	if (__atomic_compare_exchange_n(&g_chunk[i], &none, (struct emu_slot *)p, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return p;
	munmap(p, EMU_SHM_CHUNK_BYTES);
	return none;
}

int emu_slot_shared(const struct emu_slot *s)
{
	return s && s->index != EMU_SLOT_PRIVATE;
}

uint64_t emu_slot_truth_arg(const struct emu_slot *s)
{
	return emu_slot_shared(s) ? EMU_TRUTH_ARG(s->index, s->t_off) : 0;
}

/*
 * Clears what a new owner must not inherit: the header (the buffers are
 * written before read). t_off goes on: the host counts the slot's truth.
 */
static void slot_reset(struct emu_slot *s)
{
	s->tid = 0;
	s->state = 0;
	s->nheld = 0;
	s->held = 0;
	s->aux_off = 0;
	s->len = 0;
	s->tlen = 0;
	s->ip = 0;
	s->c_done = 0;
	s->c_ninsn = 0;
	s->c_end = 0;
	s->at = 0;
	s->now = 0;
	s->sh_n = 0;
	s->c_pos = 0;
	s->c_tlen = 0;
	s->c_held = 0;
	s->c_nheld = 0;
	s->c_state = 0;
	s->c_sh_n = 0;
}

/* A free slot of chunk @i claimed for this process, or NULL. */
static struct emu_slot *claim_in(uint32_t i)
{
	struct emu_slot *c = chunk(i);
	uint32_t k;

	for (k = 0; c && k < EMU_SHM_CHUNK_SLOTS; k++) {
		struct emu_slot *s = &c[k];
		uint32_t free_owner = 0;

		if (__atomic_load_n(&s->owner, __ATOMIC_RELAXED) ||
		    !__atomic_compare_exchange_n(&s->owner, &free_owner, (uint32_t)getpid(), 0,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		slot_reset(s);
		s->index = i * EMU_SHM_CHUNK_SLOTS + k;
		return s;
	}
	return NULL;
}

struct emu_slot *emu_slot_claim(void)
{
	struct emu_shm *m = emu_proc.shm;
	struct emu_slot *s = NULL;
	uint32_t i = 0, n;

	/* Every chunk in use is full: add one (or find the one another added). */
	while (m && !s && (n = __atomic_load_n(&m->nchunks, __ATOMIC_ACQUIRE)) <= EMU_SHM_MAX_CHUNKS) {
		for (; i < n && !s; i++)
			s = claim_in(i);
		if (s || n == EMU_SHM_MAX_CHUNKS)
			break;
		__atomic_compare_exchange_n(&m->nchunks, &n, n + 1, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE);
	}
	if (s)
		return s;
	s = malloc(sizeof(*s));
	if (s) {
		s->owner = 0;
		s->t_off = 0;
		s->index = EMU_SLOT_PRIVATE;
		slot_reset(s);
	}
	return s;
}

void emu_slot_release(struct emu_slot *s)
{
	if (!s)
		return;
	if (!emu_slot_shared(s)) {
		free(s);
		return;
	}
	if (__atomic_load_n(&s->owner, __ATOMIC_RELAXED) != (uint32_t)getpid())
		return; /* a copy inherited at fork: the parent's thread owns it */
	s->len = 0;
	s->tlen = 0;
	__atomic_store_n(&s->owner, 0, __ATOMIC_RELEASE);
}

void emu_slot_release_pid(void)
{
	struct emu_shm *m = emu_proc.shm;
	uint32_t i, k, n = m ? __atomic_load_n(&m->nchunks, __ATOMIC_ACQUIRE) : 0;

	for (i = 0; i < n && i < EMU_SHM_MAX_CHUNKS; i++) {
		struct emu_slot *c = chunk(i);

		for (k = 0; c && k < EMU_SHM_CHUNK_SLOTS; k++)
			emu_slot_release(&c[k]);
	}
}

void emu_send(uint32_t type, uint32_t tid, uint64_t arg, const void *p, size_t n)
{
	struct emu_msg m = { .type = type, .pid = (uint32_t)emu_proc.pid, .tid = tid,
			     .size = (uint32_t)n, .arg = arg };
	struct iovec iov[2] = { { &m, sizeof(m) }, { (void *)p, n } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

	if (emu_proc.broken || emu_proc.sock < 0)
		return;
	while (sendmsg(emu_proc.sock, &mh, MSG_NOSIGNAL) < 0) {
		if (errno == EINTR)
			continue;
		/*
		 * The recorder went away (killed, crashed): nothing it started
		 * runs on. The first QEMU has a parent-death signal; processes
		 * the workload forked end here, at their next message.
		 */
		if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
			kill(getpid(), SIGKILL);
		emu_proc.broken = 1;
		return;
	}
}

void emu_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (emu_proc.sock >= 0)
		emu_send(EMU_MSG_ERROR, 0, 0, msg, strlen(msg) + 1);
	else
		fprintf(stderr, "ptrec-emu: %s\n", msg);
}

int emu_gettid(void)
{
	return (int)syscall(SYS_gettid);
}

uint64_t emu_now(void)
{
	return emu_proc.tsc0 + __atomic_load_n(&emu_proc.clock, __ATOMIC_RELAXED);
}

void emu_sb_begin(struct emu_sb *s, uint32_t type, uint16_t misc)
{
	struct perf_event_header h = { .type = type, .misc = misc, .size = 0 };

	memcpy(s->b, &h, sizeof(h));
	s->n = sizeof(h);
}

void emu_sb_put(struct emu_sb *s, const void *p, size_t n)
{
	if (s->n + n > sizeof(s->b))
		return;
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

void emu_sb_u32(struct emu_sb *s, uint32_t v)
{
	emu_sb_put(s, &v, 4);
}

void emu_sb_u64(struct emu_sb *s, uint64_t v)
{
	emu_sb_put(s, &v, 8);
}

void emu_sb_str(struct emu_sb *s, const char *str)
{
	size_t n = strlen(str) + 1, pad = (8 - n % 8) % 8;
	static const uint8_t zero[8];

	emu_sb_put(s, str, n);
	emu_sb_put(s, zero, pad);
}

static void sb_send(struct emu_sb *s, int tid)
{
	struct perf_event_header h;

	memcpy(&h, s->b, sizeof(h));
	h.size = (uint16_t)s->n;
	memcpy(s->b, &h, sizeof(h));
	emu_send(EMU_MSG_SB, (uint32_t)tid, 0, s->b, s->n);
}

void emu_sb_end(struct emu_sb *s, int tid)
{
	emu_sb_u32(s, (uint32_t)emu_proc.pid);
	emu_sb_u32(s, (uint32_t)tid);
	emu_sb_u64(s, emu_now());
	emu_sb_u32(s, 0);
	emu_sb_u32(s, 0);
	emu_sb_u64(s, EMU_SB_ID);
	sb_send(s, tid);
}

void emu_sb_comm(int tid, int exec)
{
	struct emu_sb s;

	emu_sb_begin(&s, PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0);
	emu_sb_u32(&s, (uint32_t)emu_proc.pid);
	emu_sb_u32(&s, (uint32_t)tid);
	emu_sb_str(&s, emu_proc.comm);
	emu_sb_end(&s, tid);
}

void emu_sb_task(uint32_t type, int pid, int ppid, int tid, int ptid)
{
	struct emu_sb s;

	emu_sb_begin(&s, type, 0);
	emu_sb_u32(&s, (uint32_t)pid);
	emu_sb_u32(&s, (uint32_t)ppid);
	emu_sb_u32(&s, (uint32_t)tid);
	emu_sb_u32(&s, (uint32_t)ptid);
	emu_sb_u64(&s, emu_now());
	emu_sb_end(&s, emu_gettid());
}

void emu_sb_itrace_start(int tid)
{
	struct emu_sb s;

	emu_sb_begin(&s, PERF_RECORD_ITRACE_START, 0);
	emu_sb_u32(&s, (uint32_t)emu_proc.pid);
	emu_sb_u32(&s, (uint32_t)tid);
	emu_sb_end(&s, tid);
}

void emu_sb_aux(int tid, uint64_t off, uint64_t size)
{
	struct emu_sb s;

	emu_sb_begin(&s, PERF_RECORD_AUX, 0);
	emu_sb_u64(&s, off);
	emu_sb_u64(&s, size);
	emu_sb_u64(&s, 0);
	emu_sb_end(&s, tid);
}

void emu_sb_sample(int tid, int idx, uint64_t ip, uint64_t period)
{
	struct emu_sb s;

	/* sample_type IDENTIFIER|IP|TID|TIME|CPU|PERIOD */
	emu_sb_begin(&s, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	emu_sb_u64(&s, (uint64_t)idx + 1);
	emu_sb_u64(&s, ip);
	emu_sb_u32(&s, (uint32_t)emu_proc.pid);
	emu_sb_u32(&s, (uint32_t)tid);
	emu_sb_u64(&s, emu_now());
	emu_sb_u32(&s, 0);
	emu_sb_u32(&s, 0);
	emu_sb_u64(&s, period);
	sb_send(&s, tid);
}

void emu_sb_mmap2(int tid, const char *path, const struct stat *st, const uint8_t *id,
		  size_t idn, uint64_t start, uint64_t len, uint64_t pgoff, uint32_t prot,
		  uint32_t flags)
{
	struct emu_sb s;

	emu_sb_begin(&s, PERF_RECORD_MMAP2,
		     PERF_RECORD_MISC_USER | (idn ? PERF_RECORD_MISC_MMAP_BUILD_ID : 0));
	emu_sb_u32(&s, (uint32_t)emu_proc.pid);
	emu_sb_u32(&s, (uint32_t)tid);
	emu_sb_u64(&s, start);
	emu_sb_u64(&s, len);
	emu_sb_u64(&s, pgoff);
	if (idn) {
		uint8_t hdr[4] = { (uint8_t)idn, 0, 0, 0 };
		uint8_t pad[20] = { 0 };

		memcpy(pad, id, idn);
		emu_sb_put(&s, hdr, 4);
		emu_sb_put(&s, pad, 20);
	} else {
		emu_sb_u32(&s, major(st->st_dev));
		emu_sb_u32(&s, minor(st->st_dev));
		emu_sb_u64(&s, st->st_ino);
		emu_sb_u64(&s, 0);
	}
	emu_sb_u32(&s, prot);
	emu_sb_u32(&s, flags);
	emu_sb_str(&s, path);
	emu_sb_end(&s, tid);
}

size_t emu_build_id(int fd, uint8_t id[20])
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int i;

	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(ph) || eh.e_phnum > 256)
		return 0;
	for (i = 0; i < eh.e_phnum; i++) {
		uint8_t note[1024];
		size_t off = 0, len;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) != sizeof(ph))
			return 0;
		if (ph.p_type != PT_NOTE)
			continue;
		len = ph.p_filesz < sizeof(note) ? ph.p_filesz : sizeof(note);
		if (pread(fd, note, len, (off_t)ph.p_offset) != (ssize_t)len)
			continue;
		while (off + sizeof(Elf64_Nhdr) <= len) {
			Elf64_Nhdr nh;
			size_t name_at, desc_at;

			memcpy(&nh, note + off, sizeof(nh));
			name_at = off + sizeof(nh);
			desc_at = name_at + ((nh.n_namesz + 3) & ~3u);
			if (desc_at + nh.n_descsz > len)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(note + name_at, "GNU", 4) && nh.n_descsz > 0) {
				size_t n = nh.n_descsz > 20 ? 20 : nh.n_descsz;

				memcpy(id, note + desc_at, n);
				return n;
			}
			off = desc_at + ((nh.n_descsz + 3) & ~3u);
		}
	}
	return 0;
}
