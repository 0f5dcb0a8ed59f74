#!/usr/bin/env bash
# Makes the seed corpora of the fuzz targets with ptrec's own tools, into
# tests/fuzz/corpus/TARGET/ (checked in; run again after a format change).
#   tests/fuzz/mkcorpus.sh      (needs 'make tests' in build/, and root for the
#                                real-kernel recording)
# Every seed is small: recordings with --no-embed (images by reference), a
# CoreSight snapshot whose memory dump is cut to 8 KiB and trace to 3 KiB.
set -eu
cd "$(dirname "$0")/../.."
B=${B:-build}
out=tests/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PTREC_PLUGIN=${PTREC_PLUGIN:-$PWD/$B/ptrec-emu.so}
rm -rf "$out" && mkdir -p "$out"/fuzz_{tracefile,perfdata,rawpt,snapshot,evspec,cstrace}

rec() { "$B/ptrec" record -q --no-embed "$@" >/dev/null 2>&1; }
# A window around one function (start paused, resumed at its entry, paused at
# its return) keeps a seed to a few thousand instructions, so that a fuzzer
# runs thousands of inputs a second instead of decoding a whole program each.
win() {
	local terms=$1 prog=$B/progs/$2 fn=$3 out=$4
	shift 4
	rec --emulate -e "pt/aux-action=start-paused$terms/u" -e "uprobe:$prog:$fn/aux-action=resume/" \
		-e "uretprobe:$prog:$fn/aux-action=pause/" -o "$out" -- "$prog" "$@"
}
win "" calls main "$out/fuzz_tracefile/calls"
win ",tsc,mtc,cyc" calls rec "$out/fuzz_tracefile/calls-timed"
win ",noretcomp" threads worker "$out/fuzz_tracefile/threads" 2
win "" window window_fn "$out/fuzz_tracefile/window"
[ "$(id -u)" = 0 ] && rec -e syscalls:sys_enter_getpid -o "$out/fuzz_tracefile/kernel-tp" -- true
"$B/ptrec" record -q --no-embed --emulate -o "$tmp/arm.data" -- "$B/progs-arm64/calls" >/dev/null 2>&1 &&
	cp "$tmp/arm.data" "$out/fuzz_tracefile/etm-calls"

for f in calls calls-timed window; do
	"$B/ptdump" -q --to-perf-data "$out/fuzz_perfdata/$f" "$out/fuzz_tracefile/$f" 2>/dev/null
	rm -rf "$out/fuzz_perfdata/$f.debug"
	"$B/ptdump" -q --to-raw "$tmp/raw-$f" "$out/fuzz_tracefile/$f" 2>/dev/null
	cp "$(ls "$tmp/raw-$f"/*.pt | head -n 1)" "$out/fuzz_rawpt/$f"
done

"$B/tests/test_etm_emulate" snapshot "$tmp/snap" "$tmp/snap.truth" raw -- "$B/progs-arm64/calls" >/dev/null 2>&1
truncate -s 8192 "$tmp/snap/mem_0.bin"
sed -i 's/^length=.*/length=0x2000/' "$tmp/snap/cpu_0.ini"
{ printf '\0'; head -c 4096 "$tmp/snap/trace_0.bin"; } >"$out/fuzz_cstrace/calls-raw"
truncate -s 3072 "$tmp/snap/trace_0.bin"
tests/fuzz/pack.sh "$tmp/snap" >"$out/fuzz_snapshot/calls-raw"
"$B/tests/test_etm_emulate" snapshot "$tmp/snapf" "$tmp/snapf.truth" -- "$B/progs-arm64/calls" >/dev/null 2>&1
truncate -s 8192 "$tmp/snapf/mem_0.bin"
sed -i 's/^length=.*/length=0x2000/' "$tmp/snapf/cpu_0.ini"
{ printf '\1'; head -c 4096 "$tmp/snapf/cstrace.bin"; } >"$out/fuzz_cstrace/calls-framed"
truncate -s 3072 "$tmp/snapf/cstrace.bin"
tests/fuzz/pack.sh "$tmp/snapf" >"$out/fuzz_snapshot/calls-framed"

i=0
while IFS= read -r spec; do
	i=$((i + 1))
	printf '%s%s' "${spec:0:1}" "${spec:2}" >"$out/fuzz_evspec/spec-$i"
done <<'SPECS'
0 {intel_pt/aux-start-paused/k,syscalls:sys_enter_newuname/aux-resume/,syscalls:sys_exit_newuname/aux-pause/}
0 pt/aux-action=start-paused/u
1 intel_pt/tsc,mtc,cyc,mtc_period=3,cyc_thresh=2/u
0 cs_etm/timestamp,contextid/@tmc_etr0
0 {cycles,instructions}:S
0 page-faults/period=100/
0 mem:0x1000/8:rw
0 r1a8
1 uprobe:/bin/true:main/aux-action=resume/
0 syscalls:sys_enter_*
SPECS
ls -la "$out"/*
