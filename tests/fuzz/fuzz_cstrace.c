// SPDX-License-Identifier: MIT
/*
 * Fuzz target: CoreSight trace bytes through OpenCSD. The input is the raw
 * (TRBE-style, unformatted) ETMv4 packet stream of one trace unit on CPU 0,
 * or, when its first byte is odd, formatter frames; with bit 1 of the first
 * byte set, the unit is an ETE (TRCDEVARCH 0x47705a13) instead. The unit's
 * other registers are fixed (those of the CoreSight software tracer). No code image: OpenCSD's
 * packet and element decoders are the target, every view runs on top.
 */
#include <stdint.h>

#include "fuzz.h"
#include "session/cs_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prec_cs_source src = {
		.cpu = 0, .proto = PREC_CS_ETMV4, .trace_id = 0x10, .configr = 0x41,
		.idr0 = 0x28000ea1, .idr1 = 0x4100f403, .idr2 = 0x488,
	};
	struct prec_machine mach = { .vendor = "ARM", .per_cpu = true };
	struct prec_session *s;
	struct prec_cs_meta *m;
	int err;

	if (!size)
		return 0;
	src.format = data[0] & 1 ? PREC_CS_FMT_FRAMED : PREC_CS_FMT_RAW;
	if (data[0] & 2) {
		src.proto = PREC_CS_ETE;
		src.devarch = 0x47705a13;
	}
	s = prec_session_new();
	m = prec_cs_meta_new();
	if (!s || !m || prec_cs_meta_add(m, &src))
		goto out;
	prec_session_set_machine(s, &mach);
	if (prec_session_set_sample_type(s, 0) || prec_session_add_aux(s, 0, -1, 0, data + 1, size - 1))
		goto out;
	if (prec_session_finalize(s))
		goto out;
	err = prec_cs_session_attach(s, m); /* takes m, also on failure */
	m = NULL;
	if (!err)
		fuzz_views(s, size, size ? data[size - 1] : 0);
out:
	prec_cs_meta_free(m);
	prec_session_free(s);
	return 0;
}
