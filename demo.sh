#!/usr/bin/env bash
# The main job: record a real program and decode it into a call trace.
# Uses the hardware tracer when 'ptrec check' finds one that can pause and
# resume, and the software tracer (--emulate) otherwise, and says which.
# Run through 'make demo' (which installs dependencies and builds first).
set -euo pipefail
cd "$(dirname "$0")"
B=${B:-build}
PTREC=$PWD/$B/ptrec
PTDUMP=$PWD/$B/ptdump
export PTREC_PLUGIN=${PTREC_PLUGIN:-$PWD/$B/ptrec-emu.so}
out=$(mktemp -d /tmp/ptrec-demo.XXXXXX)
trap 'rm -rf "$out"' EXIT

# The traced program: uname(1) from the system. The window is one call of
# the C library's setlocale(), from its entry (uprobe) to its return
# (uretprobe): the tracer starts paused and traces only inside that call.
UNAME=$(command -v uname)
LIBC=$(ldd "$UNAME" | awk '/libc\.so/ { print $3; exit }')
WINDOW=(-e "pt/aux-action=start-paused/u"
	-e "uprobe:$LIBC:setlocale/aux-action=resume,name=enter-setlocale/"
	-e "uretprobe:$LIBC:setlocale/aux-action=pause,name=leave-setlocale/")

set +e
"$PTREC" check >"$out/check.txt"
verdict=$?
set -e
if [ "$verdict" -eq 0 ]; then
	echo "== hardware tracer found: recording with it"
	mode=()
else
	echo "== no usable trace hardware here ('ptrec check' exit $verdict): using the software tracer (--emulate)"
	mode=(--emulate)
fi

echo "== ptrec record ${mode[*]} ${WINDOW[*]} -o demo.data -- uname -a"
"$PTREC" record "${mode[@]}" -o "$out/demo.data" "${WINDOW[@]}" -- "$UNAME" -a

echo "== ptdump --info"
"$PTDUMP" --info "$out/demo.data" | sed -n '1,12p'
echo "== ptdump --call-trace (first 40 lines): only setlocale() and what it calls"
"$PTDUMP" --call-trace "$out/demo.data" | head -n 40
echo "== ptdump --stats"
"$PTDUMP" --stats "$out/demo.data" | tail -n 14
