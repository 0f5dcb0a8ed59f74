/* SPDX-License-Identifier: MIT */
/*
 * CoreSight trace-unit metadata for the MACHINE chunk: per CPU, the ID
 * registers from sysfs (/sys/bus/event_source/devices/cs_etm/cpuN/...) and
 * TRCCONFIGR/TRCTRACEIDR as the cs_etm attr config implies, laid out as perf's
 * cs_etm AUXTRACE_INFO blocks (src/perf_format.h: CS_ETMV4_* / CS_ETE_*).
 */
#ifndef PREC_ETMREGS_H
#define PREC_ETMREGS_H

#include "base/common.h"
#include "base/perf_abi.h"

struct prec_tfile_etm;

/* TRCTRACEIDR's "the real id comes in PERF_RECORD_AUX_OUTPUT_HW_ID" flag. */
#define PREC_CS_TRACE_ID_UNUSED 0x80000000u

/*
 * TRCCONFIGR bits the cs_etm config implies (cycacc, contextid1, contextid2
 * with VMIDOPT, timestamp, retstack, branch broadcast).
 */
uint64_t prec_etm_trcconfigr(uint64_t cs_etm_config);

/*
 * Reads every cpuN directory of the cs_etm PMU. *@blocks gets one entry per
 * CPU whose registers were readable, pointing into *@regs (both malloc'd;
 * free both). Returns the number of blocks, 0 if there is no cs_etm PMU, or
 * a negative error.
 */
int prec_etm_read_sysfs(uint64_t cs_etm_config, struct prec_tfile_etm **blocks, uint64_t **regs);

/*
 * Checks @cs_etm_config against every CPU's trace unit, as perf's
 * cs_etm_validate_config() does (tools/perf/arch/arm/util/cs-etm.c):
 * contextid1 needs a 32-bit context ID (TRCIDR2.CIDSIZE), contextid2 the
 * VMID option with a 32-bit VMID (TRCIDR2.VMIDOPT, VMIDSIZE), timestamp
 * global timestamps (TRCIDR0.TSSIZE). Returns 0 (also when there is no
 * cs_etm PMU), -EINVAL with @d naming the CPU and the term, or another
 * negative error from reading sysfs.
 */
int prec_etm_check_config(uint64_t cs_etm_config, struct prec_diag *d);

#endif
