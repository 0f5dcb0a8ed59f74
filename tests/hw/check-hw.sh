#!/usr/bin/env bash
# make check-hw: the recordings of the end-to-end suites (the test programs
# and windows of tests/cli/decode.sh) made with this machine's tracer
# (PTREC_BACKEND=hw: intel_pt, else cs_etm), with checks that need no
# ground truth:
#   - ptrec records, ptdump decodes without errors or warnings;
#   - the test programs count their own calls (PTREC_TEST_COUNTS): a full
#     trace decodes exactly that many calls of each counted function;
#   - windows hold only what they should: a uprobe window on window_fn
#     begins once per call, in window_fn, with nothing of the functions
#     around it; a syscall window holds in_between's calls of outside_fn
#     and not window_fn;
#   - perf script agrees on the export: ptdump --to-perf-data, then perf's
#     own decoder gives the same calls per thread as ptdump, without errors.
#   - a kernel trace (--kcore) followed while it is recorded: ptdump
#     --follow writes calls before the recording ends, and then the bytes
#     of a decode after the end.
# It ends with a short report (machine, kernel, tracer and its caps, perf,
# each check) to paste into a bug report; make check-hw also keeps it in
# $B/check-hw-report.txt. It skips where there is no tracer.
# PTREC_HW_FORCE_EMULATE=1 runs the same checks over the software tracer
# (tests/cli/hw-checks.sh does, in make check), so they are tested here too.
. "$(dirname "$0")/../cli/src/paths.sh"
. "$SRC/perfcalls.sh"
FORCED=${PTREC_HW_FORCE_EMULATE:-0}
REPORT_FILE=${PTREC_HW_REPORT:-$BD/check-hw-report.txt}
[ "$FORCED" = 1 ] && REPORT_FILE=${PTREC_HW_REPORT:-$T_TMP/report.txt}
LINES=()

hw_pass() { t_pass "$1"; LINES+=("ok    $1"); }
hw_fail() { t_fail "$1" "$2"; LINES+=("FAIL  $1: $(printf '%s' "$2" | head -n 2 | tr '\n' ' ')"); }
hw_skip() { t_skip "$1" "$2"; LINES+=("skip  $1: $2"); }
hw_eq() { if [ "$2" = "$3" ]; then hw_pass "$1 ($3)"; else hw_fail "$1" "expected $2, got $3"; fi; }

# The short report: what a bug report about a tracer needs first.
report() {
	local caps=
	if [ -d "/sys/bus/event_source/devices/$T_TRACER/caps" ] && [ "$FORCED" != 1 ]; then
		caps=$(cd "/sys/bus/event_source/devices/$T_TRACER/caps" && grep -H . -- * 2>/dev/null |
			sed 's/:/=/' | tr '\n' ' ')
	fi
	{
		echo "ptrec check-hw report ($(date -u +%Y-%m-%d))"
		echo "ptrec:    $("$PTREC" --version 2>&1 | head -n 1)"
		echo "kernel:   $(uname -r) $(uname -m)"
		echo "cpu:      $(awk -F'\t*: ' '/^(model name|CPU implementer|CPU part)/ && !seen[$1]++ {
			printf "%s ", $2 } END { print "" }' /proc/cpuinfo | cut -c1-100)"
		if [ -n "$T_BACKEND_WHY" ]; then
			echo "tracer:   none: $T_BACKEND_WHY"
		elif [ "$FORCED" = 1 ]; then
			echo "tracer:   software tracer through the hw checks (PTREC_HW_FORCE_EMULATE=1)"
		else
			echo "tracer:   $T_TRACER ${caps:-(no caps)}"
		fi
		echo "perf:     $(perf version 2>/dev/null || echo none)"
		echo "sysctl:   perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null)" \
			"perf_event_mlock_kb=$(cat /proc/sys/kernel/perf_event_mlock_kb 2>/dev/null)"
		printf '%s\n' "${LINES[@]}"
		echo "result:   $T_P passed, $T_F failed, $T_S skipped"
	} >"$REPORT_FILE"
	echo "# ---- report (also in $REPORT_FILE) ----"
	sed 's/^/# /' "$REPORT_FILE"
}

if ! PTREC_BACKEND=hw t_backend_init; then
	hw_skip "recordings on the tracer" "$T_BACKEND_WHY"
	report
	t_done; exit
fi
for f in "$PTREC" "$PTDUMP" "$PROGS/calls" "$PROGS/window"; do
	if [ ! -e "$f" ]; then
		hw_fail "test binaries" "$f is missing (run make B=$B tests first)"
		report
		t_done; exit
	fi
done
cd "$T_TMP" || exit 1

# rec NAME RECORD-ARGS... -- PROG ARGS: NAME.data, the program's own call
# counts in NAME.counts; the exit status in $rec_status.
rec() {
	local n=$1
	shift
	rm -f "$n.counts"
	PTREC_TEST_COUNTS=$PWD/$n.counts t_rec -q -o "$n.data" "$@" >"$n.rec.out" 2>"$n.rec.err"
	rec_status=$?
}

# decodes NAME VIEW TITLE: ptdump VIEW of NAME.data into NAME.VIEW, and
# passes when it exits 0 with no warning and no line that is neither a call
# nor a trigger sample.
decodes() {
	local n=$1 view=$2 title=$3 odd
	"$PTDUMP" "$view" "$n.data" >"$n$view" 2>"$n$view.err"
	local rc=$?
	odd=$(grep -v $'\t' "$n$view" | grep -v -- ' -- \(pause\|resume\) trigger ' | head -n 3)
	if [ "$rc" = 0 ] && [ ! -s "$n$view.err" ] && [ -z "$odd" ]; then
		hw_pass "$title: ptdump $view decodes without errors ($(grep -c $'\t' "$n$view") lines)"
		return 0
	fi
	hw_fail "$title: ptdump $view decodes without errors" "status $rc $(head -n 3 "$n$view.err") $odd"
	return 1
}

# calls FILE NAME: the call-trace lines of FILE that call NAME.
calls() { awk -F'\t' -v f="$2" '{ s = $2; sub(/^ +/, "", s); sub(/^\[\+[0-9]+\] /, "", s); sub(/ +$/, "", s) } s == f' "$1" | wc -l; }
# counted NAME FN: what the program counted for FN.
counted() { awk -v f="$2" '$1 == f { print $2 }' "$1.counts" 2>/dev/null; }

# recorded NAME TITLE STATUS: the recording ended with STATUS and a file.
recorded() {
	if [ "$rec_status" = "$3" ] && [ -s "$1.data" ]; then
		hw_pass "$2: records"
		return 0
	fi
	hw_fail "$2: records" "status $rec_status (expected $3): $(head -n 3 "$1.rec.err")"
	return 1
}

# perf_agrees NAME TITLE: perf script's call trace of the export is ptdump's.
perf_agrees() {
	local n=$1 title=$2 out nerr
	if ! command -v perf >/dev/null; then
		hw_skip "$title: perf script agrees" "perf is not installed"
		return
	fi
	if ! "$PTDUMP" --to-perf-data "$n.perf" "$n.data" >/dev/null 2>"$n.exp.err"; then
		hw_fail "$title: export to perf.data" "$(head -n 3 "$n.exp.err")"
		return
	fi
	perf script -i "$n.perf" --symfs "$n.perf.debug" --call-trace -F +flags >"$n.perf.ct" 2>"$n.perf.err"
	nerr=$(grep -c 'instruction trace error' "$n.perf.ct")
	"$PTDUMP" --call-ret-trace "$n.data" 2>/dev/null | norm_calls | grep '^call|' | by_tid 2 >"$n.ptdump.c"
	norm_calls <"$n.perf.ct" | grep '^call|' | by_tid 2 >"$n.perf.c"
	if out=$(cmp_calls "$n.perf.c" "$n.ptdump.c") && [ "$nerr" = 0 ]; then
		hw_pass "$title: perf script agrees ($(printf '%s' "$out" | tail -n 1))"
	else
		hw_fail "$title: perf script agrees" "$nerr trace errors in perf; $out"
	fi
}

# full NAME PROG ARGS: a full user-space trace; every counted function is
# called as often in the decoded trace as the program counted.
full() {
	local n=$1 fn want got
	shift
	rec "$n" -e "$T_TRACER//u" -- "$@"
	recorded "$n" "$n (full trace)" 0 || return
	decodes "$n" --call-trace "$n (full trace)" || return
	while read -r fn want; do
		got=$(calls "$n--call-trace" "$fn")
		hw_eq "$n (full trace): calls of $fn decoded = the program's own count" "$want" "$got"
	done < <(grep -v : "$n.counts" 2>/dev/null)
	[ -s "$n.counts" ] || hw_fail "$n (full trace): the program counted its calls" "no $n.counts"
	perf_agrees "$n" "$n (full trace)"
}

full calls "$PROGS/calls" 2
full window "$PROGS/window" 5

# A uprobe window: resumed at window_fn's entry, paused at its return.
n=win-uprobe W=$PROGS/window
rec "$n" -e "$T_TRACER/aux-action=start-paused/u" -e "uprobe:$W:window_fn/aux-action=resume,name=enter/" \
	-e "uretprobe:$W:window_fn/aux-action=pause,name=leave/" -- "$W" 5
if recorded "$n" "uprobe window" 0 && decodes "$n" --call-ret-trace "uprobe window"; then
	want=$(counted "$n" window_fn)
	hw_eq "uprobe window: a trigger sample at each entry and return of window_fn" $((2 * ${want:-0})) \
		"$(grep -c -- ' -- \(pause\|resume\) trigger ' "$n--call-ret-trace")"
	hw_eq "uprobe window: one window per call of window_fn, each begins in it" "${want:-?}" \
		"$(norm_calls <"$n--call-ret-trace" | awk -F'|' '$1 == "tr strt" { s = $4; sub(/^ +/, "", s)
			sub(/ +\(resumed by .*$/, "", s); print s }' | grep -c '^window_fn$')"
	hw_eq "uprobe window: nothing of the functions around it" "" \
		"$(norm_calls <"$n--call-ret-trace" | grep -E '(outside_fn|in_between)( |$)' | head -n 3)"
fi

# A syscall window: resumed when getpid() returns, paused when uname() enters.
n=win-sys
rec "$n" -e "$T_TRACER/aux-action=start-paused/u" -e "syscalls:sys_exit_getpid/aux-action=resume/" \
	-e "syscalls:sys_enter_newuname/aux-action=pause/" -- "$W" 5
if recorded "$n" "syscall window" 0 && decodes "$n" --call-trace "syscall window"; then
	hw_eq "syscall window: in_between's calls of outside_fn, as the program counted" \
		"$(counted "$n" in_between:outside_fn)" "$(calls "$n--call-trace" outside_fn)"
	hw_eq "syscall window: window_fn is outside" 0 "$(calls "$n--call-trace" window_fn)"
fi

# Threads and a fork with an exec: they decode, every thread has calls.
n=threads
rec "$n" -e "$T_TRACER//u" -- "$PROGS/threads" 50
if recorded "$n" "threads" 0 && decodes "$n" --call-trace "threads"; then
	hw_eq "threads: the main thread and its 4 workers have calls" 5 \
		"$(awk -F'\t' 'NF > 1 { split($1, f, " "); print f[2] }' "$n--call-trace" | sort -u | wc -l)"
fi
n=forkexec
rec "$n" -e "$T_TRACER//u" -- "$PROGS/forkexec" 50
recorded "$n" "fork and exec" 3 && decodes "$n" --call-trace "fork and exec"

# A kernel trace followed while it is recorded: ptrec writes the kernel's
# symbols and (--kcore) text once its events are open, before any trace, so
# ptdump --follow writes the kernel calls of the shell's start while it
# waits on its fifo (the bound needs two PSBs: a whole trace of the kernel,
# not a window of one syscall), and in the end the bytes of a decode after
# the end. The software tracer traces user space: there the same steps
# follow a full trace of the paced workload (tests/progs/stages.c).
# followed NAME TITLE SPEC WORKLOAD...: those steps.
followed() {
	local n=$1 title=$2 spec=$3 rp fp fstatus early=0
	shift 3
	rm -f "$n.fifo" "$n.data"
	mkfifo "$n.fifo"
	exec 3<>"$n.fifo"
	t_rec -q --kcore -o "$n.data" -e "$spec" -- "$@" <"$n.fifo" >/dev/null 2>"$n.rec.err" 3>&- &
	rp=$!
	for _ in $(seq 300); do [ -s "$n.data" ] && break; sleep 0.1; done
	"$PTDUMP" --follow --call-trace "$n.data" >"$n.fol" 2>"$n.fol.err" 3>&- &
	fp=$!
	# call lines (not trigger samples) while the workload waits: 30 s at most
	for _ in $(seq 300); do
		early=$(grep $'\t' "$n.fol" 2>/dev/null | grep -vc -- ' -- \(pause\|resume\) trigger ')
		[ "$early" -gt 0 ] && break
		sleep 0.1
	done
	echo go >&3
	exec 3>&-
	wait "$rp"
	rec_status=$?
	wait "$fp"
	fstatus=$?
	recorded "$n" "$title" 0 || return
	if [ "$early" -gt 0 ]; then
		hw_pass "$title: --follow writes calls while the recording runs ($early lines)"
	else
		hw_fail "$title: --follow writes calls while the recording runs" \
			"none before the workload went on: $(head -n 3 "$n.fol.err")"
	fi
	"$PTDUMP" --call-trace "$n.data" >"$n.after" 2>/dev/null
	if [ "$fstatus" = 0 ] && cmp -s "$n.fol" "$n.after"; then
		hw_pass "$title: --follow wrote the bytes of a decode after the end"
	else
		hw_fail "$title: --follow wrote the bytes of a decode after the end" \
			"status $fstatus; $(cmp "$n.fol" "$n.after" 2>&1 | head -n 1)"
	fi
}
if [ "$FORCED" = 1 ]; then
	followed follow-user "followed trace (user space)" "$T_TRACER//u" "$PROGS/stages" 20000
elif [ ! -r /proc/kcore ]; then
	hw_skip "followed kernel trace" "this kernel has no /proc/kcore to copy its code from"
else
	followed follow-kernel "followed kernel trace" "$T_TRACER//k" sh -c 'read -r x; uname'
fi

report
t_done
