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

# The traced program: gzip compressing a small generated file. The window is
# one call of gzip's deflate(), from its entry (uprobe) to its return (uretprobe).
printf 'ptrec demo line %d\n' $(seq 1 2000) >"$out/input.txt"
GZIP_BIN=$(command -v gzip)
WINDOW="-e uprobe:$GZIP_BIN:deflate/aux-action=resume/ -e uretprobe:$GZIP_BIN:deflate/aux-action=pause/"

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

echo "== ptrec record ${mode[*]} -e pt/aux-action=start-paused/u $WINDOW -- gzip -c input.txt"
# shellcheck disable=SC2086
"$PTREC" record "${mode[@]}" -o "$out/demo.data" \
	-e pt/aux-action=start-paused/u $WINDOW -- "$GZIP_BIN" -c "$out/input.txt" >"$out/input.txt.gz"
gunzip -c "$out/input.txt.gz" | cmp - "$out/input.txt"

echo "== ptdump --info"
"$PTDUMP" --info "$out/demo.data" | sed -n '1,12p'
echo "== ptdump --call-trace (first 40 lines): only deflate() and what it calls"
"$PTDUMP" --call-trace "$out/demo.data" | head -n 40
echo "== ptdump --stats"
"$PTDUMP" --stats "$out/demo.data" | tail -n 14
