#!/usr/bin/env bash
# The checks of make check-hw (tests/hw/check-hw.sh), run here over the
# software tracer: the hw path of the end-to-end suites, its checks without
# ground truth and its report, where no intel_pt or cs_etm exists.
PTREC_HW_FORCE_EMULATE=1 exec bash "$(dirname "$0")/../hw/check-hw.sh"
