// SPDX-License-Identifier: MIT
/* ptrec: the recorder's entry point and subcommand table. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ptrec-cmds.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} cmds[] = {
	{ "record", cmd_record, "record a trace of a command, processes or CPUs" },
	{ "check", cmd_check, "say whether tracing can work on this machine, and why not" },
	{ "list", cmd_list, "list PMUs with their terms, and tracepoints" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: ptrec [--version] [--help] <command> [<args>]\n\n"
		   "Targeted hardware instruction tracing (Intel PT, Arm CoreSight) with the\n"
		   "kernel's AUX pause/resume controls.\n\ncommands:\n");
	for (i = 0; i < PREC_ARRAY_SIZE(cmds); i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "\nSee 'ptrec <command> --help' and ptrec(1). Decode with ptdump(1).\n");
}

int main(int argc, char **argv)
{
	size_t i;

	cli_prog = "ptrec";
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		if (argc > 2 && strcmp(argv[1], "help") == 0) {
			char *hargv[] = { argv[2], "--help", NULL };

			for (i = 0; i < PREC_ARRAY_SIZE(cmds); i++)
				if (!strcmp(argv[2], cmds[i].name))
					return cmds[i].fn(2, hargv);
		}
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("ptrec %s\n", PTREC_VERSION);
		return EXIT_OK;
	}
	for (i = 0; i < PREC_ARRAY_SIZE(cmds); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	return cli_usage_error(NULL, "'%s' is not a ptrec command (commands: record, check, list)",
			       argv[1]);
}
