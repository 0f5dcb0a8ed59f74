// SPDX-License-Identifier: MIT
/* Fuzz target: a perf.data file: its description (--info) and every view. */
#include <stdint.h>
#include <stdlib.h>

#include "base/util.h"
#include "fuzz.h"
#include "interop/perfdata.h"
#include "output/perfdata_info.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prec_perfdata_opts o = { 0 };
	struct prec_perfdata_report rep;
	struct prec_session *s;
	struct prec_buf b = { 0 };
	struct prec_diag d;

	if (prec_perfdata_describe_buf(data, size, &o, &b, &d) == 0 &&
	    b.len > size * FUZZ_OUT_PER_BYTE + FUZZ_OUT_FIXED)
		__builtin_trap();
	prec_buf_free(&b);
	s = prec_session_new();
	if (s && prec_perfdata_load_buf(s, data, size, &o, &rep, &d) == 0)
		fuzz_views(s, size, size ? data[size - 1] : 0);
	prec_session_free(s);
	return 0;
}
