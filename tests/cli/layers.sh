#!/usr/bin/env bash
# The layering check (scripts/layers.sh): the tree passes it, and each kind of
# violation it exists to stop, planted in a copy of the tree, fails it.
. "$(dirname "$0")/lib.sh"
top=${PTREC_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}

t_run "the tree keeps its layers" 0 "$top/scripts/layers.sh" "$top"
t_match "summary line" '^layers: [0-9]+ files, [0-9]+ project includes' "$out"

copy() {
	rm -rf "$T_TMP/tree" && mkdir -p "$T_TMP/tree"
	(cd "$top" && cp -r --parents src decoders cmd "$T_TMP/tree/")
}

copy
sed -i '0,/^#include "/s//#include "session\/session.h"\n#include "/' "$T_TMP/tree/src/base/util.c"
t_run "base/ including session/ is refused" 1 "$top/scripts/layers.sh" "$T_TMP/tree"
t_match "upward include named" 'src/base/util.c:[0-9]+: base/ includes session/session.h: session/ is not below base/' "$out"

copy
sed -i '0,/^#include "/s//#include "output\/output.h"\n#include "/' "$T_TMP/tree/decoders/intel_pt.c"
t_run "decoders/ including output/ is refused" 1 "$top/scripts/layers.sh" "$T_TMP/tree"
t_match "decoder to formatter named" 'decoders/intel_pt.c:[0-9]+: decoders/ includes output/output.h' "$out"

copy
# A cycle inside one folder: session.c already includes nothing of image, so
# make session.c include image.h while image.h includes session.h.
sed -i '0,/^#include "/s//#include "session\/image.h"\n#include "/' "$T_TMP/tree/src/session/session.c"
t_run "a cycle between two modules of one folder is refused" 1 "$top/scripts/layers.sh" "$T_TMP/tree"
t_match "cycle reported" 'include cycle between modules' "$out"
t_match "cycle names the modules" 'src/session/(session|image)' "$out"

copy
sed -i '0,/^#include "/s//#include "util.h"\n#include "/' "$T_TMP/tree/src/spec/pmu.c"
t_run "an include without its folder is refused" 1 "$top/scripts/layers.sh" "$T_TMP/tree"
t_match "bare include named" 'src/spec/pmu.c:[0-9]+: #include "util.h" names no folder-qualified' "$out"

copy
mkdir -p "$T_TMP/tree/src/misc" && echo 'int x;' >"$T_TMP/tree/src/misc/x.c"
t_run "a folder that is no layer is refused" 1 "$top/scripts/layers.sh" "$T_TMP/tree"
t_match "unknown folder named" "folder 'misc' is not a layer" "$out"

copy
sed -i '0,/^static int open_target/s//static int direct(int fd) { return ioctl(fd, PERF_EVENT_IOC_ENABLE, 0); }\n&/' \
	"$T_TMP/tree/src/record/record.c"
t_run "the recorder calling ioctl past its kernel seam is refused" 1 "$top/scripts/layers.sh" "$T_TMP/tree"
t_match "direct call named" "src/record/record.c:[0-9]+: calls the kernel's perf interface directly" "$out"

t_done
