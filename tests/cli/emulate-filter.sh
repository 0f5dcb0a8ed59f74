#!/usr/bin/env bash
# Address filters (--filter) with the software Intel PT tracer, through the
# model of the kernel (PERF_EVENT_IOC_SET_FILTER, pt_event_addr_filters_validate):
# the trace holds only what ran inside the filtered functions, as hardware
# IP filtering gives it (TIP.PGD/TIP.PGE where a taken branch leaves or enters
# a range). Each recording is compared with the ground truth, which the
# truth decoder filters by the SDM's rule (decode_truth -f), and with counts
# taken from the truth's blocks alone.
. "$(dirname "$0")/src/paths.sh"
if ! command -v qemu-x86_64 >/dev/null; then
	t_skip "address filters" "qemu-x86_64 is not installed (apt-get install qemu-user)"
	t_done; exit
fi
cd "$T_TMP" || exit 1
. "$SRC/truth.sh"
truth_build || { t_done; exit; }

WIN=$PROGS/window
# An awk function: hex(s), the value of hex digits s (mawk has no strtonum).
HEX='function hex(s,  i, v) { v = 0; for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }'

# frec NAME PROG ARG FUNC...: records PROG ARG with "filter FUNC @ PROG" for each FUNC.
frec() {
	local n=$1 prog=$2 arg=$3 f fa=()
	shift 3
	for f in "$@"; do fa+=(--filter "filter $f @ $prog"); done
	"$PTREC" record --emulate -o "$n.data" --emulate-truth "$n.truth" "${fa[@]}" \
		-- "$prog" "$arg" >"$n.rec.out" 2>"$n.rec.err"
}

# same_as_truth NAME FUNC...: call and call-ret traces = the truth filtered to FUNC...
same_as_truth() {
	local n=$1 f fl=()
	shift
	for f in "$@"; do fl+=(-f "$f"); done
	"$PTDUMP" --sideband "$n.data" >"$n.sb" 2>/dev/null
	./decode_truth "${fl[@]}" "$n.sb" "$n.truth" | sort -s -n -k1,1 >"$n.exp"
	"$PTDUMP" --call-trace "$n.data" 2>"$n.err" | truth_norm | sort -s -n -k1,1 >"$n.got"
	t_eq "$n: --call-trace = the truth inside $* ($(wc -l <"$n.exp") lines)" "$(cat "$n.exp")" "$(cat "$n.got")"
	./decode_truth -r "${fl[@]}" "$n.sb" "$n.truth" | sort -s -n -k1,1 >"$n.rexp"
	"$PTDUMP" --call-ret-trace "$n.data" 2>>"$n.err" | norm 1 | sort -s -n -k1,1 >"$n.rgot"
	t_eq "$n: --call-ret-trace = the truth inside $* ($(wc -l <"$n.rexp") lines)" \
		"$(cat "$n.rexp")" "$(cat "$n.rgot")"
	t_eq "$n: no decode errors" "" "$(grep -i 'error' "$n.err")"
}

# ---- 1. a leaf function: only its instructions, all of them ----

frec leaf "$WIN" 5 window_fn
t_eq "filter window_fn: records" 0 "$?"
same_as_truth leaf window_fn
"$PTDUMP" --insn-trace leaf.data >leaf.insn 2>/dev/null
t_eq "filter window_fn: every traced instruction is in window_fn" "" \
	"$(grep -v 'tr strt\|tr end' leaf.insn | grep -v ' window_fn+0x' | head -n 3)"
# The truth's own count: its blocks that start in window_fn (a leaf entered
# by a call and left by a return: all of them traced).
lo=$(sed -n 's/.* \([0-9a-f]*\) window_fn+0x0 .*/\1/p' leaf.insn | head -n 1)
size=$(nm -S "$WIN" | awk '$4 == "window_fn" { print $2 }')
want=$(awk -v lo=$((16#${lo:-0})) -v hi=$((16#${lo:-0} + 16#${size:-0})) "$HEX"'
	$1 == "B" { a = hex($3); if (a >= lo && a < hi) n += $5 } END { print n + 0 }' leaf.truth)
got=$("$PTDUMP" --stats leaf.data | sed -n 's/^instructions: //p')
t_eq "filter window_fn: instructions = the truth's in window_fn" "$want" "$got"
t_match "filter window_fn: 5 windows, one per call" '^5$' \
	"$("$PTDUMP" --stats leaf.data | sed -n 's/^trace begins: //p')"

# ---- 2. a function that calls out: each call leaves the range, each return re-enters ----

frec mid "$WIN" 5 in_between
same_as_truth mid in_between
t_eq "filter in_between: its 20 calls of outside_fn" 20 "$(grep -c 'outside_fn' mid.got)"
t_eq "filter in_between: nothing of main or window_fn" "" "$(grep -E 'window_fn|main' mid.rgot)"
frec all "$WIN" 5
full=$("$PTDUMP" --stats all.data | sed -n 's/^total: .*, \([0-9]*\) bytes$/\1/p')
part=$("$PTDUMP" --stats mid.data | sed -n 's/^total: .*, \([0-9]*\) bytes$/\1/p')
t_eq "filter in_between: less trace than without a filter ($part < $full bytes)" 1 \
	"$(( ${part:-0} > 0 && ${part:-0} * 4 < ${full:-0} ))"

# ---- 3. two ranges (the PMU's limit), a static callback, threads ----

frec two "$WIN" 5 window_fn outside_fn
same_as_truth two window_fn outside_fn
frec cb "$PROGS/calls" 2 cmp
same_as_truth cb cmp
frec thr "$PROGS/threads" 2 worker
same_as_truth thr worker

# ---- 4. what the model refuses as the kernel does ----

t_run "3 ranges under --emulate" 1 "$PTREC" record --emulate -q -o r.data \
	--filter "filter window_fn @ $WIN, filter outside_fn @ $WIN, filter main @ $WIN" -- "$WIN"
t_match "3 ranges: the limit named" 'intel_pt on this CPU has 2 address ranges; 3 given' "$err"
t_run "'start' under --emulate (intel_pt has none)" 1 "$PTREC" record --emulate -q -o r.data \
	--filter "start window_fn @ $WIN" -- "$WIN"
t_match "'start': the kernel's refusal explained" 'refused the address filters .*start' "$err"
t_eq "no file is left by the refusals" "" "$(ls r.data* 2>/dev/null)"

# ---- 5. the CoreSight software tracer: ViewInst include ranges ----

A64=$BD/progs-arm64
if ! command -v qemu-aarch64 >/dev/null || [ ! -x "$A64/window" ]; then
	t_skip "cs_etm address filters" "qemu-aarch64 or the aarch64 test programs are missing"
	t_done; exit
fi
export PTREC_PLUGIN_ETM=${PTREC_PLUGIN_ETM:-$(dirname "$PTREC_PLUGIN")/ptrec-emu-etm.so}
merge() { awk '{ if ($1 == e) { e = $2; next } if (s != "") print s, e; s = $1; e = $2 } END { if (s != "") print s, e }'; }
# truth_in LO SIZE TRUTH: the truth's blocks that start in [LO, LO+SIZE), merged into runs.
truth_in() {
	awk -v lo=$((16#$1)) -v hi=$((16#$1 + 16#$2)) "$HEX"'
	$1 == "B" { a = hex($3); if (a >= lo && a < hi) print $3, $4 }' "$3" | merge
}
dump_runs() { sed -n 's/.*exec range=0x\([0-9a-f]*\):\[0x\([0-9a-f]*\)\].*/\1 \2/p' | merge; }
# etm_filter NAME FUNC: records window with "filter FUNC" and compares its
# decoded ranges with the truth's blocks in FUNC; ptdump's output in $out.
etm_filter() {
	local lo size want
	read -r lo size <<<"$(nm -S "$A64/window" | awk -v f="$2" '$4 == f { print $1, $2 }')"
	t_run "cs_etm filter $2: records" 0 "$PTREC" record --emulate -q -e cs_etm//u -o "$1.data" \
		--emulate-truth "$1.truth" --filter "filter $2 @ $A64/window" -- "$A64/window"
	t_run "cs_etm filter $2: --ranges" 0 "$PTDUMP" --ranges "$1.data"
	want=$(truth_in "$lo" "$size" "$1.truth")
	t_eq "cs_etm filter $2: ranges = the truth's blocks in $2 ($(wc -l <<<"$want") runs)" \
		"$want" "$(dump_runs <<<"$out")"
}
etm_filter e window_fn
t_nomatch "cs_etm filter window_fn: no decode errors" 'ERROR' "$out"
t_eq "cs_etm filter window_fn: 5 windows, one per call" 5 \
	"$("$PTDUMP" --call-ret-trace e.data | grep -c 'tr strt')"
# A function that calls out (main): Trace On at each return into it.
etm_filter m main
t_run "cs_etm: 9 ranges (the driver's ETM_ADDR_CMP_MAX is 8)" 1 "$PTREC" record --emulate -q \
	-e cs_etm//u -o r.data --filter "$(for i in 1 2 3 4 5 6 7 8 9; do printf 'filter window_fn @ %s,' "$A64/window"; done | sed 's/,$//')" \
	-- "$A64/window"
t_match "cs_etm: the limit named" 'cs_etm on this CPU has 8 address ranges; 9 given' "$err"
t_run "cs_etm: a start address is not emulated" 1 "$PTREC" record --emulate -q -e cs_etm//u \
	-o r.data --filter "start window_fn @ $A64/window" -- "$A64/window"
t_match "cs_etm: start refused by the model" 'refused the address filters' "$err"

t_done
