// SPDX-License-Identifier: MIT
/* tests/progs/stages.c for the CoreSight tracer (tests/cli/follow.sh), without its dlopen stage. */
#define STAGES_NO_DL
#include "../progs/stages.c"
