// SPDX-License-Identifier: MIT
#include "cli.h"
#include "ptrec-cmds.h"

int cmd_record(int argc, char **argv)
{
	cli_err("'record' is not implemented yet");
	return EXIT_FAIL;
}
