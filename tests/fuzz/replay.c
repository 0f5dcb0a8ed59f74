// SPDX-License-Identifier: MIT
/*
 * A main() for the fuzz targets outside libFuzzer: runs each file named on
 * the command line through LLVMFuzzerTestOneInput once. make check builds
 * every target with it (with the sanitizers under SANITIZE=1) and replays
 * the corpus and every input that once crashed or blew up (tests/fuzz/regress).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f) {
		perror(path);
		return 1;
	}
	for (;;) {
		size_t r;

		if (n == cap) {
			uint8_t *nb = realloc(buf, cap ? 2 * cap : 65536);

			if (!nb) {
				free(buf);
				fclose(f);
				return 1;
			}
			buf = nb;
			cap = cap ? 2 * cap : 65536;
		}
		r = fread(buf + n, 1, cap - n, f);
		if (!r)
			break;
		n += r;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int i, bad = 0;

	for (i = 1; i < argc; i++)
		bad |= run_file(argv[i]);
	return bad;
}
