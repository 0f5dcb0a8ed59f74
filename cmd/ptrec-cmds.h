/* SPDX-License-Identifier: MIT */
/* The ptrec subcommands; each gets argv with argv[0] = the command name. */
#ifndef PTREC_CMDS_H
#define PTREC_CMDS_H

int cmd_record(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_list(int argc, char **argv);

#endif
