/* SPDX-License-Identifier: MIT */
/*
 * The perf.data file format (perf's tools/perf/Documentation/
 * perf.data-file-format.txt), as far as ptrec reads and writes it: the file
 * header, sections, feature numbers, the user-space record types, and the
 * AUXTRACE_INFO private layouts of intel_pt and cs_etm. Little-endian, as
 * written on x86-64 and arm64. Layout only; no code.
 */
#ifndef PREC_PERF_FORMAT_H
#define PREC_PERF_FORMAT_H

#include <stdint.h>
#include <linux/perf_event.h>

#define PERF_MAGIC2 "PERFILE2"

struct perf_file_section {
	uint64_t offset;
	uint64_t size;
};

/* The file header of a seekable perf.data. */
struct perf_file_header {
	char magic[8];                      /* "PERFILE2" */
	uint64_t size;                      /* sizeof(struct perf_file_header) */
	uint64_t attr_size;                 /* sizeof(perf_event_attr) + sizeof(perf_file_section) */
	struct perf_file_section attrs;
	struct perf_file_section data;
	struct perf_file_section event_types; /* unused, written as zero */
	uint64_t adds_features[4];          /* 256 feature bits */
};

/* The header of perf's pipe format (perf record -o -). */
struct perf_pipe_file_header {
	char magic[8];
	uint64_t size;                      /* 16 */
};

/* Feature bits (HEADER_*); a perf_file_section per set bit follows the data. */
enum {
	PERF_HEADER_RESERVED = 0,
	PERF_HEADER_TRACING_DATA = 1,
	PERF_HEADER_BUILD_ID = 2,
	PERF_HEADER_HOSTNAME = 3,
	PERF_HEADER_OSRELEASE = 4,
	PERF_HEADER_VERSION = 5,
	PERF_HEADER_ARCH = 6,
	PERF_HEADER_NRCPUS = 7,
	PERF_HEADER_CPUDESC = 8,
	PERF_HEADER_CPUID = 9,
	PERF_HEADER_TOTAL_MEM = 10,
	PERF_HEADER_CMDLINE = 11,
	PERF_HEADER_EVENT_DESC = 12,
	PERF_HEADER_CPU_TOPOLOGY = 13,
	PERF_HEADER_NUMA_TOPOLOGY = 14,
	PERF_HEADER_BRANCH_STACK = 15,
	PERF_HEADER_PMU_MAPPINGS = 16,
	PERF_HEADER_GROUP_DESC = 17,
	PERF_HEADER_AUXTRACE = 18,
	PERF_HEADER_STAT = 19,
	PERF_HEADER_CACHE = 20,
	PERF_HEADER_SAMPLE_TIME = 21,
	PERF_HEADER_MEM_TOPOLOGY = 22,
	PERF_HEADER_CLOCKID = 23,
	PERF_HEADER_DIR_FORMAT = 24,
	PERF_HEADER_BPF_PROG_INFO = 25,
	PERF_HEADER_BPF_BTF = 26,
	PERF_HEADER_COMPRESSED = 27,
	PERF_HEADER_CPU_PMU_CAPS = 28,
	PERF_HEADER_CLOCK_DATA = 29,
	PERF_HEADER_HYBRID_TOPOLOGY = 30,
	PERF_HEADER_PMU_CAPS = 31,
	PERF_HEADER_LAST_FEATURE,
	PERF_HEADER_FEAT_BITS = 256,
};

/* User-space record types (perf's PERF_RECORD_USER_TYPE_START and on). */
enum {
	PERF_RECORD_HEADER_ATTR = 64,
	PERF_RECORD_HEADER_EVENT_TYPE = 65,
	PERF_RECORD_HEADER_TRACING_DATA = 66,
	PERF_RECORD_HEADER_BUILD_ID = 67,
	PERF_RECORD_FINISHED_ROUND = 68,
	PERF_RECORD_ID_INDEX = 69,
	PERF_RECORD_AUXTRACE_INFO = 70,
	PERF_RECORD_AUXTRACE = 71,
	PERF_RECORD_AUXTRACE_ERROR = 72,
	PERF_RECORD_THREAD_MAP = 73,
	PERF_RECORD_CPU_MAP = 74,
	PERF_RECORD_STAT_CONFIG = 75,
	PERF_RECORD_STAT = 76,
	PERF_RECORD_STAT_ROUND = 77,
	PERF_RECORD_EVENT_UPDATE = 78,
	PERF_RECORD_TIME_CONV = 79,
	PERF_RECORD_HEADER_FEATURE = 80,
	PERF_RECORD_COMPRESSED = 81,
	PERF_RECORD_FINISHED_INIT = 82,
	PERF_RECORD_COMPRESSED2 = 83,
};

/* AUXTRACE_INFO type ids */
enum {
	PERF_AUXTRACE_UNKNOWN = 0,
	PERF_AUXTRACE_INTEL_PT = 1,
	PERF_AUXTRACE_INTEL_BTS = 2,
	PERF_AUXTRACE_CS_ETM = 3,
	PERF_AUXTRACE_ARM_SPE = 4,
	PERF_AUXTRACE_S390_CPUMSF = 5,
	PERF_AUXTRACE_HISI_PTT = 6,
};

struct perf_record_auxtrace_info {
	struct perf_event_header header;
	uint32_t type;
	uint32_t reserved__;
	uint64_t priv[];
};

/* header.size covers these 48 bytes only; `size` bytes of trace follow. */
struct perf_record_auxtrace {
	struct perf_event_header header;
	uint64_t size;      /* trace bytes that follow, padded to a multiple of 8 */
	uint64_t offset;    /* position in the AUX stream */
	uint64_t reference;
	uint32_t idx;       /* mmap index */
	uint32_t tid;
	uint32_t cpu;
	uint32_t reserved__;
};

struct perf_record_time_conv {
	struct perf_event_header header;
	uint64_t time_shift;
	uint64_t time_mult;
	uint64_t time_zero;
	uint64_t time_cycles;     /* later perf: only if header.size covers them */
	uint64_t time_mask;
	uint8_t cap_user_time_zero;
	uint8_t cap_user_time_short;
	uint8_t reserved[6];
};

/* intel_pt AUXTRACE_INFO priv[] indices (perf's util/intel-pt.h) */
enum {
	INTEL_PT_PMU_TYPE = 0,
	INTEL_PT_TIME_SHIFT,
	INTEL_PT_TIME_MULT,
	INTEL_PT_TIME_ZERO,
	INTEL_PT_CAP_USER_TIME_ZERO,
	INTEL_PT_TSC_BIT,
	INTEL_PT_NORETCOMP_BIT,
	INTEL_PT_HAVE_SCHED_SWITCH,
	INTEL_PT_SNAPSHOT_MODE,
	INTEL_PT_PER_CPU_MMAPS,
	INTEL_PT_MTC_BIT,
	INTEL_PT_MTC_FREQ_BITS,
	INTEL_PT_TSC_CTC_N,
	INTEL_PT_TSC_CTC_D,
	INTEL_PT_CYC_BIT,
	INTEL_PT_MAX_NONTURBO_RATIO,
	INTEL_PT_FILTER_STR_LEN,
	INTEL_PT_AUXTRACE_PRIV_MAX,
};

/* cs_etm AUXTRACE_INFO priv[] (perf's util/cs-etm.h): global part, then per-CPU blocks */
enum {
	CS_HEADER_VERSION = 0,     /* 0, 1 or 2 */
	CS_PMU_TYPE_CPUS,          /* pmu_type << 32 | nr_cpus */
	CS_ETM_SNAPSHOT,
	CS_HEADER_VERSION_MAX,
};
enum {
	CS_ETM_MAGIC = 0,
	CS_ETM_CPU,
	CS_ETM_NR_TRC_PARAMS,      /* from header version 1 */
	CS_ETM_COMMON_BLK_MAX_V1,
};
/* ETMv4 block after the common part */
enum {
	CS_ETMV4_TRCCONFIGR = CS_ETM_COMMON_BLK_MAX_V1,
	CS_ETMV4_TRCTRACEIDR,
	CS_ETMV4_TRCIDR0,
	CS_ETMV4_TRCIDR1,
	CS_ETMV4_TRCIDR2,
	CS_ETMV4_TRCIDR8,
	CS_ETMV4_TRCAUTHSTATUS,
	CS_ETMV4_TS_SOURCE,
	CS_ETMV4_PRIV_MAX,
};
/* ETE: as ETMv4 with TRCDEVARCH before TS_SOURCE */
enum {
	CS_ETE_TRCCONFIGR = CS_ETM_COMMON_BLK_MAX_V1,
	CS_ETE_TRCTRACEIDR,
	CS_ETE_TRCIDR0,
	CS_ETE_TRCIDR1,
	CS_ETE_TRCIDR2,
	CS_ETE_TRCIDR8,
	CS_ETE_TRCAUTHSTATUS,
	CS_ETE_TRCDEVARCH,
	CS_ETE_TS_SOURCE,
	CS_ETE_PRIV_MAX,
};
#define CS_ETMV3_MAGIC 0x3030303030303030ull
#define CS_ETMV4_MAGIC 0x4040404040404040ull
#define CS_ETE_MAGIC 0x5050505050505050ull

#endif
