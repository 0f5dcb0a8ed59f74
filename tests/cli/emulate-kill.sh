#!/usr/bin/env bash
# When ptrec dies (SIGKILL: the OOM killer, a CI time-out), nothing it
# started runs on: the software tracer's QEMU ends with it (a parent-death
# signal), and processes the workload forked end at their next message to
# the gone recorder.
. "$(dirname "$0")/lib.sh"
B=${B:-build}
LOOP=${PTREC_TOP:-.}/$B/progs/loop
cd "$T_TMP" || exit 1

# QEMU processes whose command line names this test's program copy.
alive() { pgrep -f -- "qemu[^ ]* .*$T_TMP/$1" | wc -l; }
gone_within() { # MARKER SECONDS
	local i
	for i in $(seq $(( $2 * 10 ))); do
		[ "$(alive "$1")" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}

cp "$LOOP" "$T_TMP/loop-a"
"$PTREC" record -q --emulate -o a.data -- "$T_TMP/loop-a" 200000 >/dev/null 2>&1 &
rp=$!
sleep 2
t_eq "the workload runs under QEMU" 1 "$(alive loop-a)"
{ kill -KILL "$rp"; wait "$rp"; } 2>/dev/null
if gone_within loop-a 5; then t_pass "ptrec killed: its QEMU is gone"; else
	t_fail "ptrec killed: its QEMU is gone" "$(pgrep -af -- "$T_TMP/loop-a")"; pkill -KILL -f -- "$T_TMP/loop-a"; fi

# A workload that forks: three QEMU processes (sh and two loops).
cp "$LOOP" "$T_TMP/loop-b"
"$PTREC" record -q --emulate -o b.data -- /bin/sh -c "'$T_TMP/loop-b' 200000 & '$T_TMP/loop-b' 200000; wait" >/dev/null 2>&1 &
rp=$!
sleep 3
t_eq "both forked loops run" 2 "$(alive 'loop-b 200000$')"
{ kill -KILL "$rp"; wait "$rp"; } 2>/dev/null
if gone_within loop-b 10; then t_pass "ptrec killed: every process of the recording is gone"; else
	t_fail "ptrec killed: every process of the recording is gone" "$(pgrep -af -- "$T_TMP/loop-b")"
	pkill -KILL -f -- "$T_TMP/loop-b"; fi
t_done
