// SPDX-License-Identifier: MIT
#include "cli.h"
#include "ptrec-cmds.h"

int cmd_list(int argc, char **argv)
{
	cli_err("'list' is not implemented yet");
	return EXIT_FAIL;
}
