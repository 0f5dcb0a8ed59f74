// SPDX-License-Identifier: MIT
/* ptrec record --func and --syscall: one-word windows, expanded to event specs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ptrec-cmds.h"
#include "spec/func.h"
#include "base/util.h"

/* The tracer's name in the expansion: the PMU this machine has (intel_pt by default). */
static const char *tracer_name(bool emulate)
{
	char path[512];

	if (emulate)
		return "pt"; /* the software tracer picks Intel PT or ETM by the program */
	if (!prec_sys_path(path, sizeof(path), "/sys/bus/event_source/devices/intel_pt") &&
	    !access(path, F_OK))
		return "intel_pt";
	if (!prec_sys_path(path, sizeof(path), "/sys/bus/event_source/devices/cs_etm") &&
	    !access(path, F_OK))
		return "cs_etm";
	return "intel_pt";
}

/* "NAME[@OBJ]" of each --func: finds the object and appends the group. */
static int func_group(const struct rec_windows *w, const char *prog, const char *tracer,
		      struct prec_buf *b)
{
	struct prec_loadlist ll;
	struct prec_diag d = { 0 };
	const char **paths = calloc(w->nfuncs, sizeof(*paths));
	char **names = calloc(w->nfuncs, sizeof(*names));
	size_t i;
	int ret = -1;

	if (!paths || !names) {
		cli_err("out of memory");
		ret = EXIT_FAIL;
		goto out;
	}
	if (prec_loadlist_build(prog, &ll, &d) < 0) {
		cli_diag(NULL, NULL, &d);
		ret = EXIT_FAIL;
		goto out;
	}
	for (i = 0; i < w->nfuncs && ret < 0; i++) {
		char *at;
		int k;

		names[i] = strdup(w->funcs[i]);
		if (!names[i]) {
			ret = EXIT_FAIL;
			break;
		}
		at = strchr(names[i], '@');
		if (at)
			*at++ = '\0';
		if (!prog && (!at || !strchr(at, '/'))) {
			ret = cli_usage_error("record", "--func %s: without a command, give the "
					      "object's path: NAME@/path/to/object", w->funcs[i]);
			break;
		}
		if (!names[i][0] || (at && !*at)) {
			ret = cli_usage_error("record", "--func takes NAME or NAME@OBJECT; got '%s'",
					      w->funcs[i]);
			break;
		}
		k = prec_func_find(&ll, names[i], at, &d);
		if (k < 0) {
			cli_diag(NULL, NULL, &d);
			ret = EXIT_USAGE;
			break;
		}
		paths[i] = ll.paths[k];
	}
	if (ret < 0 && prec_func_group(b, tracer, paths, (const char *const *)names, w->nfuncs)) {
		cli_err("out of memory");
		ret = EXIT_FAIL;
	}
	prec_loadlist_free(&ll);
out:
	for (i = 0; names && i < w->nfuncs; i++)
		free(names[i]);
	free(names);
	free(paths);
	return ret;
}

/* --syscall / --syscall-user LIST: every list into one group. */
static int syscall_group(const struct rec_windows *w, const char *tracer, bool user, bool emulate,
			 struct prec_buf *b)
{
	struct prec_buf list = { 0 };
	size_t i;
	int err = 0;

	for (i = 0; !err && i < w->nsyscalls; i++)
		err = prec_buf_printf(&list, "%s%s", i ? "," : "", w->syscalls[i]);
	if (!err)
		err = prec_syscall_group(b, tracer, list.data ? list.data : "", user || emulate);
	if (err == -EINVAL)
		cli_usage_error("record", "--syscall%s takes syscall names separated by commas, "
				"e.g. read,write; got '%s'", user ? "-user" : "",
				list.data ? list.data : "");
	prec_buf_free(&list);
	if (err == -EINVAL)
		return EXIT_USAGE;
	if (err) {
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	if (emulate && !user)
		cli_note("--emulate traces user space only: --syscall marks when each call enters "
			 "and leaves the kernel (its trigger samples), with no kernel code traced "
			 "between them");
	return -1;
}

int rec_windows_expand(const struct rec_windows *w, const char *prog, bool emulate,
		       char **spec)
{
	const char *tracer = tracer_name(emulate);
	struct prec_buf b = { 0 };
	int ret;

	*spec = NULL;
	if (!w->nfuncs && !w->nsyscalls)
		return -1;
	if (w->nfuncs && w->nsyscalls && !w->user)
		return cli_usage_error("record", "--func traces user space and --syscall the kernel: "
				       "one tracer cannot do both; use --syscall-user with --func");
	if (w->nfuncs) {
		ret = func_group(w, prog, tracer, &b);
		if (ret >= 0)
			goto fail;
	}
	if (w->nsyscalls) {
		struct prec_buf s = { 0 };

		ret = syscall_group(w, tracer, w->user, emulate, &s);
		if (ret < 0 && b.data) {
			/* One group: the syscall triggers join the functions' tracer. */
			const char *members = strchr(s.data, ',');

			b.len--; /* the closing brace */
			if (prec_buf_printf(&b, "%.*s}", (int)(strlen(members) - 1), members))
				ret = EXIT_FAIL;
		} else if (ret < 0) {
			b = s;
			s.data = NULL;
		}
		prec_buf_free(&s);
		if (ret >= 0)
			goto fail;
	}
	*spec = b.data;
	return -1;
fail:
	prec_buf_free(&b);
	return ret;
}
