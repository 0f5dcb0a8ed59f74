/* SPDX-License-Identifier: MIT */
/*
 * The CoreSight decoder (ETMv4 and ETE instruction trace, decoded by OpenCSD),
 * wrapped in the decoder interface (decoder.h).
 *
 * It needs the trace units' metadata (session/cs_meta.h), attached to the
 * session by the importer; decoders/registry.c picks it for such sessions.
 *
 * The decoder turns OpenCSD's generic elements into the common event stream
 * (decoder.h): an instruction range is a PREC_TEV_BLOCK; its last
 * instruction, when it was a taken branch, a PREC_TEV_BRANCH whose kind comes
 * from OpenCSD's class of that instruction (BL/BLR call, RET return, ERET
 * sysret, B.cond/CBZ/TBZ cond, B jump, BR indirect); an exception a branch of
 * kind PREC_BR_SYSCALL (SVC, HVC, SMC) or PREC_BR_INTERRUPT (everything else)
 * from the preferred return address to the vector. Damaged trace is a
 * PREC_TEV_ERROR with its offset, after which OpenCSD waits for the next
 * alignment sync (A-sync) and decoding goes on.
 */
#ifndef PREC_CORESIGHT_H
#define PREC_CORESIGHT_H

#include "decoders/decoder.h"
#include "session/session.h"

extern const struct prec_decoder_ops prec_coresight_decoder;

#endif
