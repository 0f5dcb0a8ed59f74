/* SPDX-License-Identifier: MIT */
/*
 * One-word windows: --func NAME[@OBJ] and --syscall NAME,... turned into the
 * event specs they stand for, and the search that finds which object of a
 * program defines a function without running the dynamic linker: the
 * executable, then its DT_NEEDED libraries breadth-first as ld.so finds
 * them (DT_RPATH, LD_LIBRARY_PATH, DT_RUNPATH, the directories of
 * /etc/ld.so.conf, the loader's default directories), then the loader.
 */
#ifndef PREC_FUNC_H
#define PREC_FUNC_H

#include <stdbool.h>
#include <stddef.h>

#include "base/common.h"
#include "base/util.h"

/* The objects a program loads, in the dynamic linker's search order. */
struct prec_loadlist {
	char **paths;	/* absolute paths; [0] is the executable */
	size_t n;
};

/*
 * Builds the load list of program @prog (NULL: an empty list, for --func
 * NAME@/path without a program) (a path, or a name looked up in
 * $PATH). Libraries that cannot be found are left out (the program would not
 * start either; its own run says so). Returns 0 or a negative code with @d.
 */
int prec_loadlist_build(const char *prog, struct prec_loadlist *ll, struct prec_diag *d);
void prec_loadlist_free(struct prec_loadlist *ll);

/*
 * The object of @ll that defines the function @name (in .symtab, static
 * functions included, or .dynsym): the first in load order. @obj (NULL: any)
 * restricts the search to the objects whose path is @obj or whose file name
 * starts with @obj ("libc" finds libc.so.6); a path (with '/') the list does
 * not hold, such as a library the program will dlopen(), is added to @ll.
 * Returns the index in @ll, or -PREC_E_NOSYM with "did you mean" in @d,
 * -ENOENT when @obj names no object of the list (or no file).
 */
int prec_func_find(struct prec_loadlist *ll, const char *name, const char *obj,
		   struct prec_diag *d);

/*
 * Appends the group of --func: a tracer (@tracer, e.g. "pt") starting
 * paused in user space, and per function a uprobe on its entry that resumes
 * and a uretprobe that pauses (named NAME and NAME__return, as perf probe
 * names a return probe). @paths[i] defines @names[i].
 */
int prec_func_group(struct prec_buf *b, const char *tracer, const char *const *paths,
		    const char *const *names, size_t n);

/*
 * Appends the group of --syscall LIST (comma-separated syscall names): the
 * tracer starting paused, per syscall sys_enter_NAME resuming and
 * sys_exit_NAME pausing; the tracer traces the kernel (k) or, with @user,
 * user space (u). Returns 0, -EINVAL for an empty or malformed name.
 */
int prec_syscall_group(struct prec_buf *b, const char *tracer, const char *list, bool user);

#endif
