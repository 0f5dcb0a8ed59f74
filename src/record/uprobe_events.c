// SPDX-License-Identifier: MIT
/* Uprobes as tracefs events: see uprobe_events.h. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "base/util.h"
#include "record/uprobe_events.h"
#include "spec/pmu.h"

#define GROUP_PREFIX "ptrec_"

struct probe {
	char kind;      /* 'u': uprobe_events; 'k': kprobe_events */
	char *path;     /* the file, or the kernel function */
	uint64_t offset;
	bool ret;
	unsigned n;     /* the event is GROUP/<kind><n> */
	uint64_t id;
};

struct prec_uprobe_events {
	char group[32];
	struct probe *p;
	size_t np;
};

static const char *events_file(char kind)
{
	return kind == 'k' ? "kprobe_events" : "uprobe_events";
}

/* One command to <tracefs>/uprobe_events or kprobe_events (one per write). */
static int probe_cmd(char kind, const char *cmd)
{
	char dir[512], path[600];
	ssize_t n;
	int fd, err;

	err = prec_tracefs_dir(dir, sizeof(dir));
	if (err)
		return err;
	snprintf(path, sizeof(path), "%s/%s", dir, events_file(kind));
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, cmd, strlen(cmd));
	err = n < 0 ? -errno : 0;
	close(fd);
	return err;
}

/* Removes the events of ptrec processes that are gone (killed before cleaning up). */
static void remove_stale(char kind)
{
	char dir[512], path[600], line[4096];
	FILE *f;

	if (prec_tracefs_dir(dir, sizeof(dir)))
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, events_file(kind));
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char ev[256], cmd[300];
		int pid;

		/* "p:ptrec_1234/u0 /path:0x..." or "r:..." */
		if (sscanf(line, "%*c:" GROUP_PREFIX "%d/%255s", &pid, ev) != 2)
			continue;
		if (pid == (int)getpid() || kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(cmd, sizeof(cmd), "-:" GROUP_PREFIX "%d/%s", pid, ev);
		probe_cmd(kind, cmd);
	}
	fclose(f);
}

struct prec_uprobe_events *prec_uprobe_events_new(void)
{
	struct prec_uprobe_events *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	snprintf(u->group, sizeof(u->group), GROUP_PREFIX "%d", (int)getpid());
	remove_stale('u');
	remove_stale('k');
	return u;
}

static int add_error(struct prec_diag *d, int err, char kind, const char *what, const char *cmd)
{
	if (!d)
		return err;
	d->code = err;
	d->pos = -1;
	snprintf(d->msg, sizeof(d->msg), "cannot create the %s on %s in tracefs: %s",
		 kind == 'k' ? "kprobe" : "uprobe", what, strerror(-err));
	if (err == -ENOENT && kind == 'k')
		snprintf(d->hint, sizeof(d->hint),
			 "this kernel has no kprobe_events in tracefs (CONFIG_KPROBE_EVENTS); "
			 "on a machine without it, --emulate=system traces a guest's kernel");
	else if (err == -ENOENT)
		snprintf(d->hint, sizeof(d->hint),
			 "this kernel has no uprobe_events in tracefs (CONFIG_UPROBE_EVENTS); "
			 "ptrec needs it for probes that a program's threads and children inherit");
	else if (err == -EINVAL)
		snprintf(d->hint, sizeof(d->hint),
			 "the kernel refused '%.200s' (see tracefs error_log)%s", cmd,
			 kind == 'k' ? "; functions marked notrace or in the kprobe blacklist "
				       "cannot be probed" : "; a path with spaces cannot be probed");
	else
		snprintf(d->hint, sizeof(d->hint), "%s need root or CAP_PERFMON with "
			 "access to tracefs", kind == 'k' ? "kprobes" : "uprobes");
	return err;
}

/* Creates (or reuses) probe @kind of @what at @offset; *@id its tracepoint id. */
static int probe_add(struct prec_uprobe_events *u, char kind, const char *what, uint64_t offset,
		     bool ret, uint64_t *id, struct prec_diag *d)
{
	char cmd[4200], name[16];
	struct probe *p;
	size_t i;
	int err;

	for (i = 0; i < u->np; i++)
		if (u->p[i].kind == kind && u->p[i].offset == offset && u->p[i].ret == ret &&
		    !strcmp(u->p[i].path, what)) {
			*id = u->p[i].id;
			return 0;
		}
	if (strlen(what) > 4000 || strpbrk(what, " \t\n"))
		return add_error(d, -EINVAL, kind, what, what);
	if (PREC_ARRAY_RESERVE(u->p, u->np, 1))
		return -ENOMEM;
	p = &u->p[u->np];
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->n = (unsigned)u->np;
	snprintf(name, sizeof(name), "%c%u", kind, p->n);
	if (kind == 'k' && offset)
		snprintf(cmd, sizeof(cmd), "p:%s/%s %s+%llu", u->group, name, what,
			 (unsigned long long)offset);
	else if (kind == 'k')
		snprintf(cmd, sizeof(cmd), "%c:%s/%s %s", ret ? 'r' : 'p', u->group, name, what);
	else
		snprintf(cmd, sizeof(cmd), "%c:%s/%s %s:0x%llx", ret ? 'r' : 'p', u->group, name,
			 what, (unsigned long long)offset);
	err = probe_cmd(kind, cmd);
	if (err)
		return add_error(d, err, kind, what, cmd);
	p->path = strdup(what);
	if (!p->path) {
		snprintf(cmd, sizeof(cmd), "-:%s/%s", u->group, name);
		probe_cmd(kind, cmd);
		return -ENOMEM;
	}
	p->offset = offset;
	p->ret = ret;
	u->np++;
	err = prec_tracepoint_id(u->group, name, &p->id);
	if (err)
		return add_error(d, err, kind, what, cmd);
	*id = p->id;
	return 0;
}

int prec_uprobe_events_add(struct prec_uprobe_events *u, const char *path, uint64_t offset,
			   bool ret, uint64_t *id, struct prec_diag *d)
{
	return probe_add(u, 'u', path, offset, ret, id, d);
}

int prec_kprobe_events_add(struct prec_uprobe_events *u, const char *func, uint64_t offset,
			   bool ret, uint64_t *id, struct prec_diag *d)
{
	return probe_add(u, 'k', func, offset, ret, id, d);
}

void prec_uprobe_events_free(struct prec_uprobe_events *u)
{
	char cmd[64];
	size_t i;

	if (!u)
		return;
	for (i = 0; i < u->np; i++) {
		snprintf(cmd, sizeof(cmd), "-:%s/%c%u", u->group, u->p[i].kind, u->p[i].n);
		probe_cmd(u->p[i].kind, cmd);
		free(u->p[i].path);
	}
	free(u->p);
	free(u);
}
