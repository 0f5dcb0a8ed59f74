// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>

#include "harness.h"
#include "util.h"

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

/* The SSE4.2 and the portable CRC agree on every length and alignment. */
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

static const struct t_case cases[] = {
	T(parse_u64), T(edit_distance), T(crc32c), T(crc32c_paths_agree), T(buf_printf), T(sysroot_paths),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}
