/* SPDX-License-Identifier: MIT */
/* The ptrec subcommands; each gets argv with argv[0] = the command name. */
#ifndef PTREC_CMDS_H
#define PTREC_CMDS_H

#include <stdbool.h>
#include <stddef.h>

int cmd_record(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_list(int argc, char **argv);

/* ptrec record's one-word windows (--func, --syscall, --syscall-user). */
struct rec_windows {
	const char **funcs;     /* NAME[@OBJECT] */
	size_t nfuncs;
	const char **syscalls;  /* comma-separated syscall names */
	size_t nsyscalls;
	bool user;              /* --syscall-user: the tracer traces user space */
};
/*
 * The event spec the windows stand for, in *@spec (malloc'd; NULL when no
 * window was asked for). @prog is the command whose objects --func searches.
 * Returns -1 to go on, else the exit status (the error said).
 */
int rec_windows_expand(const struct rec_windows *w, const char *prog, bool emulate, char **spec);

struct prec_evlist;
/*
 * --filter TEXT...: perf's address filter syntax resolved into the kernel's
 * string for the tracer of @el (*@out, malloc'd), the PMU's number of
 * address ranges checked; with @dry, printed. Returns -1 to go on, else the
 * exit status (the error said).
 */
int rec_filter_resolve(const char *const *texts, size_t n, const struct prec_evlist *el,
		       bool emulate, bool emulate_system, bool dry, char **out);

#endif
