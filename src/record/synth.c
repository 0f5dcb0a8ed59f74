// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/perf_records.h"
#include "base/symtab.h"
#include "base/util.h"
#include "record/synth.h"

#define REC_BUF 8192

struct synth {
	uint64_t id;
	uint64_t time; /* of every record: 0, before anything the kernel writes */
	prec_synth_fn fn;
	void *ctx;
	pid_t pid, ppid;
	uint8_t buf[REC_BUF];
};

/* Appends the sample_id trailer (pid, tid, time, cpu 0, id) and emits the record. */
static int emit(struct synth *s, size_t body, uint16_t type, uint16_t misc, uint32_t tid)
{
	struct perf_event_header *h = (struct perf_event_header *)s->buf;
	uint8_t *t = s->buf + body;
	uint32_t pid = (uint32_t)s->pid;
	uint64_t zero = 0;

	memcpy(t, &pid, 4);
	memcpy(t + 4, &tid, 4);
	memcpy(t + 8, &s->time, 8);
	memcpy(t + 16, &zero, 8);   /* cpu, res */
	memcpy(t + 24, &s->id, 8);
	h->type = type;
	h->misc = misc;
	h->size = (uint16_t)(body + 32);
	return s->fn(s->ctx, h);
}

/* Copies a NUL-terminated string at @off, padded with zeros to 8 bytes; returns the end. */
static size_t put_str(struct synth *s, size_t off, const char *str)
{
	size_t n = strlen(str) + 1, padded = (n + 7) & ~(size_t)7;

	memset(s->buf + off, 0, padded);
	memcpy(s->buf + off, str, n);
	return off + padded;
}

/* Reads "Name:" (the comm) and "PPid:" from /proc/PID/task/TID/status. */
static int read_status(pid_t pid, pid_t tid, char *comm, size_t csize, pid_t *ppid, pid_t *tgid)
{
	char path[96], *text = NULL, *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	if (prec_read_text(path, &text) < 0)
		return -ESRCH;
	comm[0] = '\0';
	if ((p = strstr(text, "Name:\t")) != NULL)
		sscanf(p + 6, "%15[^\n]", comm);
	if (ppid && (p = strstr(text, "\nPPid:")) != NULL)
		*ppid = (pid_t)atoi(p + 6);
	if (tgid && (p = strstr(text, "\nTgid:")) != NULL)
		*tgid = (pid_t)atoi(p + 6);
	free(text);
	return 0;
}

/*
 * COMM and FORK of one thread. As perf, the leader's parent is the
 * process's parent and every other thread's parent is the leader.
 */
static int synth_thread(struct synth *s, pid_t tid)
{
	char comm[16];
	uint32_t v[4];
	uint64_t zero = 0;
	size_t off;
	int err;

	if (read_status(s->pid, tid, comm, sizeof(comm), tid == s->pid ? &s->ppid : NULL, NULL))
		return 0;
	v[0] = (uint32_t)s->pid;
	v[1] = (uint32_t)tid;
	memcpy(s->buf + 8, v, 8);
	off = put_str(s, 16, comm);
	err = emit(s, off, PERF_RECORD_COMM, 0, (uint32_t)tid);
	if (err)
		return err;
	v[0] = (uint32_t)s->pid;
	v[1] = (uint32_t)(tid == s->pid ? s->ppid : s->pid);
	v[2] = (uint32_t)tid;
	v[3] = v[1];
	memcpy(s->buf + 8, v, 16);
	memcpy(s->buf + 24, &zero, 8);
	return emit(s, 32, PERF_RECORD_FORK, 0, (uint32_t)tid);
}

/* One line of /proc/PID/maps as MMAP2; only executable mappings. */
static int synth_map(struct synth *s, const char *line)
{
	unsigned long long lo, hi, pgoff, ino;
	unsigned maj, min;
	char perms[8];
	int n = 0, err;
	const char *path;
	uint8_t bid[32];
	uint32_t prot, flags, v[2];
	uint16_t misc = PERF_RECORD_MISC_USER;
	uint64_t q[3];
	size_t off;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &lo, &hi, perms, &pgoff, &maj, &min,
		   &ino, &n) < 7 || !n || perms[2] != 'x')
		return 0;
	path = line + n;
	if (!*path || strlen(path) > REC_BUF - 200)
		return 0;
	prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) | PROT_EXEC;
	flags = perms[3] == 'p' ? MAP_PRIVATE : MAP_SHARED;
	v[0] = (uint32_t)s->pid;
	v[1] = (uint32_t)s->pid;
	q[0] = lo;
	q[1] = hi - lo;
	q[2] = pgoff;
	memcpy(s->buf + 8, v, 8);
	memcpy(s->buf + 16, q, 24);
	memset(s->buf + 40, 0, 24);
	err = path[0] == '/' ? prec_elf_build_id(path, bid, sizeof(bid)) : 0;
	if (err > 0 && err <= 20) {
		/* The build-id variant of MMAP2: size, 3 reserved bytes, 20 id bytes. */
		s->buf[40] = (uint8_t)err;
		memcpy(s->buf + 44, bid, (size_t)err);
		misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
	} else {
		uint32_t dev[2] = { maj, min };
		uint64_t inode = ino;

		memcpy(s->buf + 40, dev, 8);
		memcpy(s->buf + 48, &inode, 8);
	}
	memcpy(s->buf + 64, &prot, 4);
	memcpy(s->buf + 68, &flags, 4);
	off = put_str(s, 72, path);
	return emit(s, off, PERF_RECORD_MMAP2, misc, (uint32_t)s->pid);
}

/* Each line of the maps text @text (modified). */
static int synth_maps_text(struct synth *s, char *text)
{
	char *line, *save = NULL;
	int err = 0;

	for (line = strtok_r(text, "\n", &save); line && !err; line = strtok_r(NULL, "\n", &save))
		err = synth_map(s, line);
	return err;
}

static int synth_maps(struct synth *s)
{
	char path[64], *text = NULL;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)s->pid);
	if (prec_read_text(path, &text) < 0)
		return 0; /* gone, or a kernel thread */
	err = synth_maps_text(s, text);
	free(text);
	return err;
}

static int synth_one(struct synth *s, pid_t pid, const pid_t *tids, size_t ntids)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	size_t i;
	int err = 0;

	s->pid = pid;
	s->ppid = 0;
	/* The leader first: its status gives the parent the others' FORK records need. */
	err = synth_thread(s, pid);
	if (!err && tids) {
		for (i = 0; i < ntids && !err; i++)
			if (tids[i] != pid)
				err = synth_thread(s, tids[i]);
	} else if (!err) {
		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		d = opendir(path);
		if (!d)
			return 0;
		while (!err && (de = readdir(d)))
			if (isdigit((unsigned char)de->d_name[0]) && atoi(de->d_name) != pid)
				err = synth_thread(s, (pid_t)atoi(de->d_name));
		closedir(d);
	}
	return err ? err : synth_maps(s);
}

int prec_synth_process(pid_t pid, const pid_t *tids, size_t ntids, uint64_t id,
		       prec_synth_fn fn, void *ctx)
{
	struct synth *s = malloc(sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->id = id;
	s->time = 0;
	s->fn = fn;
	s->ctx = ctx;
	err = synth_one(s, pid, tids, ntids);
	free(s);
	return err;
}

int prec_synth_maps(pid_t pid, const char *maps, uint64_t time, uint64_t id, prec_synth_fn fn,
		    void *ctx)
{
	struct synth *s = malloc(sizeof(*s));
	char *text = strdup(maps);
	int err = -ENOMEM;

	if (s && text) {
		s->id = id;
		s->time = time;
		s->fn = fn;
		s->ctx = ctx;
		s->pid = pid;
		s->ppid = 0;
		err = synth_maps_text(s, text);
	}
	free(text);
	free(s);
	return err;
}

int prec_synth_all(uint64_t id, prec_synth_fn fn, void *ctx)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (de = readdir(d)))
		if (isdigit((unsigned char)de->d_name[0]))
			err = prec_synth_process((pid_t)atoi(de->d_name), NULL, 0, id, fn, ctx);
	closedir(d);
	return err;
}

pid_t prec_synth_tgid(pid_t tid)
{
	char comm[16];
	pid_t tgid = -1;

	/* /proc/TID resolves for any thread id, though readdir does not list it. */
	if (read_status(tid, tid, comm, sizeof(comm), NULL, &tgid) || tgid <= 0)
		return -ESRCH;
	return tgid;
}
