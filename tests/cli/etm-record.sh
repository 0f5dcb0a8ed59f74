#!/usr/bin/env bash
# ptrec record --emulate on aarch64 programs (the CoreSight software tracer),
# decoded by ptdump through OpenCSD: the executed ranges equal the ground
# truth, with and without a pause/resume window, and every view works.
. "$(dirname "$0")/lib.sh"
progs=$PWD/${B:-build}/progs-arm64
cd "$T_TMP" || exit 1
if ! command -v qemu-aarch64 >/dev/null || [ ! -x "$progs/calls" ]; then
	t_skip "aarch64 recording" "qemu-aarch64 or the aarch64 test programs are missing"
	t_done; exit
fi
export PTREC_PLUGIN_ETM=${PTREC_PLUGIN_ETM:-$(dirname "$PTREC_PLUGIN")/ptrec-emu-etm.so}

# Runs of consecutive addresses, one "start end" per line, merged where one
# range ends where the next begins.
# Truth blocks count only between a resume (R) and the next pause (P).
truth_runs() { awk '$1 == "R" { on = 1 } $1 == "P" { on = 0 } $1 == "B" && on { print $3, $4 }' "$1" | merge; }
dump_runs() { sed -n 's/.*exec range=0x\([0-9a-f]*\):\[0x\([0-9a-f]*\)\].*/\1 \2/p' | merge; }
merge() { awk '{ if ($1 == e) { e = $2; next } if (s != "") print s, e; s = $1; e = $2 } END { if (s != "") print s, e }'; }

for prog in calls longjmp; do
	t_run "$prog: record" 0 "$PTREC" record --emulate -q -o "$prog.data" --emulate-truth "$prog.truth" -- "$progs/$prog"
	t_match "$prog: an aarch64 file with its trace unit" 'etm: +cpu 0 kind 0x40404040' "$("$PTDUMP" --info "$prog.data")"
	t_run "$prog: --ranges" 0 "$PTDUMP" --ranges "$prog.data"
	t_eq "$prog: ranges equal the truth" "$(truth_runs "$prog.truth" | md5sum)" "$(dump_runs <<<"$out" | md5sum)"
	t_nomatch "$prog: no decode errors" 'ERROR' "$out"
done

t_run "call trace" 0 "$PTDUMP" --call-trace calls.data
t_match "call trace: the program's functions" '\s(fib|tail_caller) +$' "$out"
t_run "instruction trace" 0 "$PTDUMP" --insn-trace calls.data
t_match "instruction trace: A64 disassembly" '\b(bl|ret|ldp|stp)\b' "$out"
t_run "branches" 0 "$PTDUMP" --branches calls.data
t_match "branches: calls and returns" 'call .*=>' "$out"

# A uprobe window: only the window's instructions.
t_run "window: record" 0 "$PTREC" record --emulate -q -o w.data --emulate-truth w.truth \
	-e pt/aux-action=start-paused/u -e "uprobe:$progs/window:window_fn/aux-action=resume/" \
	-e "uretprobe:$progs/window:window_fn/aux-action=pause/" -- "$progs/window"
t_run "window: --ranges" 0 "$PTDUMP" --ranges w.data
t_eq "window: ranges equal the truth" "$(truth_runs w.truth | md5sum)" "$(dump_runs <<<"$out" | md5sum)"
t_run "window: call-ret trace" 0 "$PTDUMP" --call-ret-trace w.data
t_match "window: resumed by the uprobe" 'resumed by uprobe:' "$out"
t_done
