// SPDX-License-Identifier: MIT
#include "cli.h"
#include "ptrec-cmds.h"

int cmd_check(int argc, char **argv)
{
	cli_err("'check' is not implemented yet");
	return EXIT_FAIL;
}
