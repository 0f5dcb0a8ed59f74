// SPDX-License-Identifier: MIT
/*
 * Fuzz target: event specs, parsed as ptrec record -e parses them, against
 * the fixture system tree (tests/fixtures/mksysroot.sh) named by
 * PTREC_SYSROOT. The first byte chooses hardware or --emulate rules.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "spec/evspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prec_evspec_opts o = { 0 };
	struct prec_evlist *el = NULL;
	struct prec_diag d;
	char *spec;

	if (!size || size > 65536)
		return 0;
	o.emulate = data[0] & 1;
	spec = malloc(size);
	if (!spec)
		return 0;
	memcpy(spec, data + 1, size - 1);
	spec[size - 1] = 0;
	if (prec_evspec_parse(spec, &o, &el, &d) == 0) {
		struct prec_buf b = { 0 };

		prec_evlist_dump(el, &b);
		prec_buf_free(&b);
	}
	prec_evlist_free(el);
	free(spec);
	return 0;
}
