// SPDX-License-Identifier: MIT
/* ptdump: decodes ptrec trace files. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int main(int argc, char **argv)
{
	cli_prog = "ptdump";
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: ptdump [options] [FILE]\n");
		return EXIT_OK;
	}
	cli_err("decoding is not implemented yet");
	return EXIT_FAIL;
}
