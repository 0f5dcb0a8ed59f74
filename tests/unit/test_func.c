// SPDX-License-Identifier: MIT
/* spec/func: the load list against the dynamic linker's own (ldd), and the specs. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "spec/func.h"

/* The libraries ld.so resolves for @prog ("name => path" lines of ldd), realpath'd. */
static size_t ldd_paths(const char *prog, char out[][PATH_MAX], size_t max)
{
	char cmd[PATH_MAX + 32], line[PATH_MAX * 2];
	size_t n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ldd '%s' 2>/dev/null", prog);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		char *arrow = strstr(line, "=> /"), *end;

		if (!arrow)
			continue;
		arrow += 3;
		end = strstr(arrow, " (");
		if (end)
			*end = '\0';
		if (realpath(arrow, out[n]))
			n++;
	}
	pclose(f);
	return n;
}

static bool in_list(const struct prec_loadlist *ll, const char *p)
{
	size_t i;

	for (i = 0; i < ll->n; i++)
		if (!strcmp(ll->paths[i], p))
			return true;
	return false;
}

/* Every library ldd names is in the load list, and the list holds nothing else but the loader. */
static void same_as_ldd(void)
{
	static const char *progs[] = { "/usr/bin/uname", "/usr/bin/perf", "/usr/bin/qemu-x86_64",
				       "/usr/bin/objdump" };
	static char want[128][PATH_MAX];
	size_t i, j, tried = 0;

	if (access("/usr/bin/ldd", X_OK))
		t_skip("no ldd to compare with");
	for (i = 0; i < T_N(progs); i++) {
		struct prec_loadlist ll;
		struct prec_diag d = { 0 };
		size_t n;

		if (access(progs[i], X_OK))
			continue;
		n = ldd_paths(progs[i], want, 128);
		if (!n)
			continue;
		tried++;
		T_EQ_INT(prec_loadlist_build(progs[i], &ll, &d), 0);
		for (j = 0; j < n; j++)
			t_check(in_list(&ll, want[j]), __FILE__, __LINE__, "%s: ldd finds %s, ptrec not",
				progs[i], want[j]);
		/* ptrec's list: the program, ldd's libraries, the loader. */
		t_check(ll.n == n + 2, __FILE__, __LINE__, "%s: %zu objects, ldd %zu libraries (+2)",
			progs[i], ll.n, n);
		prec_loadlist_free(&ll);
	}
	T_OK(tried > 0);
}

static void find_and_near(void)
{
	struct prec_loadlist ll;
	struct prec_diag d = { 0 };
	int k;

	T_EQ_INT(prec_loadlist_build("uname", &ll, &d), 0); /* from $PATH */
	k = prec_func_find(&ll, "setlocale", NULL, &d);
	T_OK(k > 0); /* not the program: a library */
	if (k > 0)
		T_CONTAINS(ll.paths[k], "/libc.so");
	T_EQ_INT(prec_func_find(&ll, "setlocale", "libc", &d), k);
	T_EQ_INT(prec_func_find(&ll, "setlocale", ll.paths[0], &d), -PREC_E_NOSYM);
	T_EQ_INT(prec_func_find(&ll, "setlocale", "libnothing", &d), -ENOENT);
	T_EQ_INT(prec_func_find(&ll, "setlocal", NULL, &d), -PREC_E_NOSYM);
	T_CONTAINS(d.hint, "did you mean 'setlocale'");
	prec_loadlist_free(&ll);
	/* No program: a path is searched as it is (a library loaded later with dlopen()). */
	T_EQ_INT(prec_loadlist_build(NULL, &ll, &d), 0);
	T_EQ_INT((int)ll.n, 0);
	T_EQ_INT(prec_func_find(&ll, "main", "/etc/passwd", &d), -PREC_E_NOSYM);
	T_EQ_INT(prec_func_find(&ll, "main", "libc", &d), -ENOENT);
	prec_loadlist_free(&ll);
	T_EQ_INT(prec_loadlist_build("/nonexistent/prog", &ll, &d), -ENOENT);
	T_EQ_INT(prec_loadlist_build("/etc/passwd", &ll, &d), -PREC_E_FORMAT);
}

static void specs(void)
{
	struct prec_buf b = { 0 };
	const char *paths[] = { "/bin/x", "/lib/y.so" }, *names[] = { "f", "g" };

	T_EQ_INT(prec_syscall_group(&b, "intel_pt", "newuname", false), 0);
	T_EQ_STR(b.data, "{intel_pt/aux-start-paused/k,syscalls:sys_enter_newuname/aux-resume/,"
			 "syscalls:sys_exit_newuname/aux-pause/}");
	prec_buf_reset(&b);
	T_EQ_INT(prec_syscall_group(&b, "pt", "read,write", true), 0);
	T_EQ_STR(b.data, "{pt/aux-start-paused/u,syscalls:sys_enter_read/aux-resume/,"
			 "syscalls:sys_exit_read/aux-pause/,syscalls:sys_enter_write/aux-resume/,"
			 "syscalls:sys_exit_write/aux-pause/}");
	prec_buf_reset(&b);
	T_EQ_INT(prec_syscall_group(&b, "pt", "read,", false), -EINVAL);
	prec_buf_reset(&b);
	T_EQ_INT(prec_syscall_group(&b, "pt", "", false), -EINVAL);
	prec_buf_reset(&b);
	T_EQ_INT(prec_syscall_group(&b, "pt", "re/ad", false), -EINVAL);
	prec_buf_reset(&b);
	T_EQ_INT(prec_func_group(&b, "pt", paths, names, 2), 0);
	T_EQ_STR(b.data, "{pt/aux-start-paused/u,uprobe:\"/bin/x\":f/aux-resume,name=f/,"
			 "uretprobe:\"/bin/x\":f/aux-pause,name=f__return/,"
			 "uprobe:\"/lib/y.so\":g/aux-resume,name=g/,"
			 "uretprobe:\"/lib/y.so\":g/aux-pause,name=g__return/}");
	prec_buf_free(&b);
}

static const struct t_case cases[] = { T(same_as_ldd), T(find_and_near), T(specs) };

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}
