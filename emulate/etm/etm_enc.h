/* SPDX-License-Identifier: MIT */
/*
 * An ETMv4 instruction-trace packet encoder (Arm IHI 0064), just what a
 * trace unit configured for EL0 AArch64 instruction trace emits: A-sync,
 * Trace Info, Trace On, Timestamp, Exception, Address (exact match, short,
 * long 32/64-bit, IS0) with the three-entry address history, Address with
 * Context, and Atom formats 1 to 6. No cycle counts, no data trace, no
 * return stack, no speculation (TRCIDR8.MAXSPEC 0: every P0 element is
 * committed as it is traced).
 *
 * The encoder appends to a caller-owned byte buffer; the caller drains it.
 * It keeps no pointer to anything but that buffer.
 */
#ifndef ETM_ENC_H
#define ETM_ENC_H

#include <stddef.h>
#include <stdint.h>

/* Exception types of the Exception packet (AArch64 PE, ETMv4 table). */
enum etm_exc {
	ETM_EXC_CALL = 0x2,       /* SVC, HVC, SMC */
	ETM_EXC_TRAP = 0x3,
	ETM_EXC_INST_DEBUG = 0x6, /* breakpoint instructions and events */
	ETM_EXC_IRQ = 0xe,
};

#define ETM_MAX_PENDING_ATOMS 48
/* Room a single encoder call may need in the buffer. */
#define ETM_ENC_SLACK 64

struct etm_enc {
	uint8_t *buf;        /* output: the caller drains buf[0..len) */
	size_t len, cap;
	uint64_t *published; /* if not NULL: kept equal to len (the crash-safe slot's count) */
	uint64_t hist[3];    /* address history; hist[0] is the current address */
	uint64_t atoms;      /* pending atoms, bit i = i-th oldest, 1 = E */
	unsigned natoms;
	uint64_t last_ts;    /* last timestamp sent since the last Trace Info */
	int ts_valid;
	/* configuration */
	int cid;             /* TRCCONFIGR.CID: contexts carry a 32-bit CONTEXTIDR */
	uint32_t contextid;  /* the value they carry */
};

/* Sets up @e to write into @buf of @cap bytes (cap > ETM_ENC_SLACK). */
void etm_enc_init(struct etm_enc *e, uint8_t *buf, size_t cap);

/* Queues one atom (E = taken/executed, N = not taken); may emit packets. */
void etm_enc_atom(struct etm_enc *e, int taken);
/* Emits the queued atoms with as few Atom packets as the formats allow. */
void etm_enc_flush_atoms(struct etm_enc *e);

/* A-sync then Trace Info (resets the address history). */
void etm_enc_sync(struct etm_enc *e);
void etm_enc_trace_on(struct etm_enc *e);
/* Timestamp packet: only the low-order bits that changed since the last. */
void etm_enc_timestamp(struct etm_enc *e, uint64_t ts);
/* Address with Context (64-bit, IS0, EL0, AArch64, Non-secure). */
void etm_enc_addr_ctxt(struct etm_enc *e, uint64_t addr);
/* The cheapest address packet for @addr given the history. */
void etm_enc_addr(struct etm_enc *e, uint64_t addr);
/* Exception packet (preferred return address follows) and its address. */
void etm_enc_exception(struct etm_enc *e, enum etm_exc type, uint64_t ret_addr);

#endif
