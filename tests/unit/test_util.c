// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "base/array.h"
#include "base/util.h"

static void parse_u64(void)
{
	uint64_t v = 0;

	T_EQ_INT(prec_parse_u64("0x10", 0, &v), 0);
	T_EQ_U64(v, 16);
	T_EQ_INT(prec_parse_u64("18446744073709551615", 0, &v), 0);
	T_EQ_U64(v, UINT64_MAX);
	T_EQ_INT(prec_parse_u64("18446744073709551616", 0, &v), -ERANGE);
	T_EQ_INT(prec_parse_u64("-1", 0, &v), -EINVAL);
	T_EQ_INT(prec_parse_u64("12x", 0, &v), -EINVAL);
	T_EQ_INT(prec_parse_u64("", 0, &v), -EINVAL);
}

static void edit_distance(void)
{
	T_EQ_INT(prec_edit_distance("cyc", "cyc", 2), 0);
	T_EQ_INT(prec_edit_distance("noretcmp", "noretcomp", 2), 1);
	T_EQ_INT(prec_edit_distance("intel_tp", "intel_pt", 2), 2);
	T_EQ_INT(prec_edit_distance("abc", "xyzuvw", 2), 3);
}

static void crc32c(void)
{
	/* The standard CRC-32C check value. */
	T_EQ_U64(prec_crc32c(0, "123456789", 9), 0xe3069283u);
	/* Incremental use gives the same as one call. */
	T_EQ_U64(prec_crc32c(prec_crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
	T_EQ_U64(prec_crc32c(0, "", 0), 0);
	T_EQ_U64(prec_crc32c_sw(0, "123456789", 9), 0xe3069283u);
}

/*
 * The instruction path (SSE4.2 on x86-64, ARMv8 CRC32 on aarch64) and the
 * portable one agree on every length and alignment.
 */
static void crc32c_paths_agree(void)
{
	unsigned char buf[1100];
	size_t i, off, n;
	unsigned seed = 12345;

	for (i = 0; i < sizeof(buf); i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (unsigned char)(seed >> 16);
	}
	for (off = 0; off < 8; off++)
		for (n = 0; n + off < sizeof(buf); n += 37)
			T_EQ_U64(prec_crc32c(7, buf + off, n), prec_crc32c_sw(7, buf + off, n));
#if defined(__x86_64__) || defined(__aarch64__)
	/* Both CPUs this runs on in CI (and qemu-aarch64) have the instructions. */
	if (!prec_crc32c_has_hw())
		t_skip("this CPU has no CRC-32C instructions: only the portable path ran");
#endif
}

static void buf_printf(void)
{
	struct prec_buf b = { 0 };
	int i;

	for (i = 0; i < 1000; i++)
		T_EQ_INT(prec_buf_printf(&b, "%d,", i), 0);
	T_EQ_INT(b.len, 3890);
	T_OK(!strncmp(b.data, "0,1,2,", 6));
	T_OK(!strcmp(b.data + b.len - 4, "999,"));
	prec_buf_free(&b);
}

static void sysroot_paths(void)
{
	char p[64];

	setenv("PTREC_SYSROOT", "/tmp/fx", 1);
	T_EQ_INT(prec_sys_path(p, sizeof(p), "/sys/bus/%s", "x"), 0);
	T_EQ_STR(p, "/tmp/fx/sys/bus/x");
	T_EQ_INT(prec_sys_path(p, 10, "/sys/bus/%s", "x"), -ENAMETOOLONG);
	unsetenv("PTREC_SYSROOT");
	T_EQ_INT(prec_sys_path(p, sizeof(p), "/proc/%d", 1), 0);
	T_EQ_STR(p, "/proc/1");
}

/* Appends grow geometrically and keep every element; overflow is refused. */
static void array_reserve(void)
{
	uint32_t *v = NULL;
	size_t n, reallocs = 0;
	void *last = NULL;

	for (n = 0; n < 100000; n++) {
		T_EQ_INT(PREC_ARRAY_RESERVE(v, n, 1), 0);
		if (v != last)
			reallocs++;
		last = v;
		v[n] = (uint32_t)n * 2654435761u;
	}
	for (n = 0; n < 100000; n++)
		if (v[n] != (uint32_t)n * 2654435761u)
			break;
	T_EQ_U64(n, 100000);
	/* at most one move per doubling from 8 to 2^17 (the allocator may move less) */
	T_OK(reallocs <= 15);
	/* shrinking the count and growing again keeps the room that is there */
	T_EQ_INT(PREC_ARRAY_RESERVE(v, 10, 20), 0);
	T_EQ_INT(v[29] == 29u * 2654435761u, 1);
	T_EQ_INT(prec_array_reserve(&v, SIZE_MAX - 1, 2, 4), -ENOMEM);
	T_EQ_INT(prec_array_reserve(&v, 30, SIZE_MAX / 8, 16), -ENOMEM);
	free(v);
}

static void near_ranking(void)
{
	struct prec_near n;

	/* a swap of two letters beats another edit at the same distance */
	prec_near_init(&n, "cylces", 2, 1);
	prec_near_add(&n, "cycles-x");
	prec_near_add(&n, "cyclesx");
	prec_near_add(&n, "cycles");
	T_EQ_STR(prec_near_get(&n, 0), "cycles");
	T_OK(!prec_near_get(&n, 1));
	/*
	 * nearer first (one edit beats a swap, which is two), same length before
	 * other lengths; the same name offered twice and the wanted name itself
	 * are ignored
	 */
	prec_near_init(&n, "mian", 2, 2);
	prec_near_add(&n, "mian");
	prec_near_add(&n, "main");
	prec_near_add(&n, "man");
	prec_near_add(&n, "man");
	prec_near_add(&n, "mien");
	prec_near_add(&n, "xxxxxxx");
	T_EQ_STR(prec_near_get(&n, 0), "mien");
	T_EQ_STR(prec_near_get(&n, 1), "man");
	/* beyond @max: nothing */
	prec_near_init(&n, "abc", 1, 3);
	prec_near_add(&n, "xyz");
	T_OK(!prec_near_get(&n, 0));
}

static void hex(void)
{
	const uint8_t id[] = { 0x00, 0x9f, 0xa0, 0xff, 0x12 };
	char out[2 * sizeof(id) + 1];

	memset(out, 'x', sizeof(out));
	prec_hex(out, id, sizeof(id));
	T_EQ_STR(out, "009fa0ff12");
	prec_hex(out, id, 0);
	T_EQ_STR(out, "");
}

/* What execvp(3) itself runs with this PATH: the exit status of the program, or -1. */
static int execvp_status(const char *path, const char *name)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		char *argv[] = { (char *)name, NULL };

		setenv("PATH", path, 1);
		execvp(name, argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void put_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	T_OK(f);
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
	T_EQ_INT(chmod(path, mode), 0);
}

/* The PATH search agrees with execvp: empty entries are the current directory. */
static void find_exec(void)
{
	const char *dir = t_tmpdir();
	char p[PATH_MAX], out[PATH_MAX], save[PATH_MAX];
	const char *paths[] = { "", ":", "d1:d2::d3", "d1:d2:", "/nonexistent-ptrec", "d1:d2",
				"d3:", "/nonexistent-ptrec:d3" };
	char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	size_t i;

	T_OK(getcwd(save, sizeof(save)) != NULL);
	snprintf(p, sizeof(p), "%s/d1", dir);
	T_EQ_INT(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/d1/ptrec-prog", dir); /* a directory: not a program */
	T_EQ_INT(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/d2", dir);
	T_EQ_INT(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/d2/ptrec-prog", dir); /* not executable */
	put_file(p, "#!/bin/sh\nexit 5\n", 0644);
	snprintf(p, sizeof(p), "%s/d3", dir);
	T_EQ_INT(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/d3/ptrec-prog", dir);
	put_file(p, "#!/bin/sh\nexit 3\n", 0755);
	snprintf(p, sizeof(p), "%s/ptrec-prog", dir);
	put_file(p, "#!/bin/sh\nexit 7\n", 0755);
	T_EQ_INT(chdir(dir), 0);
	for (i = 0; i < T_N(paths); i++) {
		int want = execvp_status(paths[i], "ptrec-prog"), got = -1, r;

		setenv("PATH", paths[i], 1);
		r = prec_find_exec("ptrec-prog", out, sizeof(out));
		if (r == 0)
			got = execvp_status("/nonexistent-ptrec", out); /* has a slash: run as is */
		else
			got = 127;
		if (!t_check(got == want, __FILE__, __LINE__, "PATH='%s': found '%s' (%d), execvp %d",
			     paths[i], r ? "" : out, got, want))
			continue;
	}
	/* the expected outcomes, so that a broken execvp oracle cannot pass silently */
	setenv("PATH", "d1:d2::d3", 1);
	T_EQ_INT(prec_find_exec("ptrec-prog", out, sizeof(out)), 0);
	T_EQ_STR(out, "./ptrec-prog");
	setenv("PATH", "d1:d2", 1);
	T_EQ_INT(prec_find_exec("ptrec-prog", out, sizeof(out)), -ENOENT);
	/* a name with a slash is taken as is, if it exists */
	T_EQ_INT(prec_find_exec("d3/ptrec-prog", out, sizeof(out)), 0);
	T_EQ_STR(out, "d3/ptrec-prog");
	T_EQ_INT(prec_find_exec("d3/nothing", out, sizeof(out)), -ENOENT);
	T_EQ_INT(prec_find_exec("", out, sizeof(out)), -ENOENT);
	T_EQ_INT(chdir(save), 0);
	if (old)
		setenv("PATH", old, 1);
	free(old);
}

static const struct t_case cases[] = {
	T(parse_u64), T(edit_distance), T(crc32c), T(crc32c_paths_agree), T(buf_printf), T(sysroot_paths),
	T(array_reserve), T(near_ranking), T(hex), T(find_exec),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}
