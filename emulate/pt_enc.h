/* SPDX-License-Identifier: MIT */
/*
 * Intel PT packets through libipt's encoder, as both Intel PT software
 * tracers write them (emulate/plugin.c: user mode; emulate/system/: the
 * whole guest): TNT batching, IP compression against the last IP, PSB+,
 * the timing packets (TSC, TMA, CBR, MTC, CYC) of the emulated clock, and
 * the return-compression stack. The owner supplies the buffer, says where
 * the stream stands, sends the bytes and counts cycles.
 */
#ifndef EMU_PT_ENC_H
#define EMU_PT_ENC_H

#include <intel-pt.h>
#include <stdint.h>

#define EMU_PT_RS_DEPTH 64 /* return-compression stack, as in hardware and libipt */

/*
 * The emulated clock: one instruction is one core cycle and one TSC tick
 * (nominal ratio = CBR = 10, i.e. 1 GHz with a 100 MHz bus clock). The
 * crystal (ART/CTC) runs at 25 MHz: CPUID.15H gives TSC/ART = 40/1.
 * src/record/emulate.h publishes the same numbers for the decoder side.
 */
#define EMU_PT_CLK_RATIO 10
#define EMU_PT_TSC_PER_CTC 40

/* The intel_pt config terms. */
struct emu_pt_cfg {
	int tsc, mtc, cyc, noretcomp, branch;
	unsigned mtc_period, cyc_thresh, psb_period;
};

struct emu_pt;

struct emu_pt_ops {
	/* Sends the encoder's bytes; the encoder is then reset to offset 0. */
	void (*flush)(struct emu_pt *p);
	/* The stream offset of the encoder's buffer start. */
	uint64_t (*base)(struct emu_pt *p);
	/* The emulated TSC now. */
	uint64_t (*now)(struct emu_pt *p);
	/* The encoder failed: trace no more. */
	void (*failed)(struct emu_pt *p);
	/* May be NULL: @n bytes were just encoded into the buffer. */
	void (*wrote)(struct emu_pt *p, size_t n);
	/*
	 * May be NULL: the branch outcomes the encoder holds, not yet in a TNT
	 * packet (@ntnt of them in @tnt, the first the most significant bit).
	 */
	void (*held)(struct emu_pt *p, uint64_t tnt, unsigned ntnt);
	size_t flush_at; /* flush before a packet once this many bytes are buffered */
};

struct emu_pt {
	const struct emu_pt_ops *ops;
	const struct emu_pt_cfg *cfg;
	const uint64_t *cycles; /* the owner's instruction (= cycle) count */
	struct pt_encoder *enc;
	uint64_t psb_at;   /* stream offset of the last PSB */
	int psb_done;      /* a PSB has been written in this stream */
	uint64_t last_ip;
	uint64_t tnt;
	unsigned ntnt;
	uint64_t rs[EMU_PT_RS_DEPTH];
	unsigned rs_top, rs_n;
	uint64_t last_cyc;
	uint64_t last_mtc;
	/*
	 * PSB+ holds a PIP with @cr3 when @pip is set: the whole-system tracer
	 * tracing ring 0 (the SDM's packet tables give PIP only with OS=1).
	 */
	int pip;
	uint64_t cr3;
};

/* Sets up the encoder on [@buf, @buf + @cap); 0, or -1 if libipt refused. */
int emu_pt_init(struct emu_pt *p, uint8_t *buf, size_t cap);
void emu_pt_fini(struct emu_pt *p);
/* A new, empty stream. */
void emu_pt_reset(struct emu_pt *p);
/* Bytes in the buffer. */
size_t emu_pt_buffered(struct emu_pt *p);
/* The buffer was sent: start it afresh. */
void emu_pt_drained(struct emu_pt *p);

void emu_pt_tnt_flush(struct emu_pt *p);
/* One conditional-branch (or compressed-return) bit. */
void emu_pt_tnt_bit(struct emu_pt *p, int taken);
/* TIP, TIP.PGE, TIP.PGD or FUP at @ip (@suppress: IP suppressed). */
void emu_pt_ip(struct emu_pt *p, enum pt_packet_type type, uint64_t ip, int suppress);
void emu_pt_simple(struct emu_pt *p, enum pt_packet_type type);
/* MODE.Exec for 64-bit code. */
void emu_pt_mode_exec(struct emu_pt *p);
/* TSC, TMA and CBR, as sent in PSB+ and when TraceEn goes 0 -> 1. */
void emu_pt_timing(struct emu_pt *p);
/* PSB+ (with PIP if p->pip); with @with_fup, MODE.Exec and FUP @ip inside it. */
void emu_pt_psb_plus(struct emu_pt *p, int with_fup, uint64_t ip);
/* PIP with CR3 @cr3 (a root-mode guest: NR clear). */
void emu_pt_pip(struct emu_pt *p, uint64_t cr3);
/* Return compression: forget the stack (code ran untraced). */
void emu_pt_rs_reset(struct emu_pt *p);
void emu_pt_rs_push(struct emu_pt *p, uint64_t ret);
/* A near return to @next: a taken TNT bit if compressed, else TIP. */
void emu_pt_ret(struct emu_pt *p, uint64_t next);
/* Instructions retired: an MTC for a crystal tick that passed among them. */
void emu_pt_retired(struct emu_pt *p);
/* PSB+ if the stream went far enough since the last one. */
void emu_pt_periodic(struct emu_pt *p, uint64_t ip, int pkt_en);

#endif
