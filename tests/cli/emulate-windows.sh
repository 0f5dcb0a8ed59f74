#!/usr/bin/env bash
# The hardware pause/resume tests of tests/hw/, run on the software tracer.
PTREC_HW_FORCE_EMULATE=1 exec bash "$(dirname "$0")/../hw/pause-resume.sh"
