#!/usr/bin/env bash
# ptdump --follow: a recording still being written is decoded once ptrec
# ends it (ptrec holds an exclusive flock on its output file meanwhile),
# whether it ends normally or is killed.
. "$(dirname "$0")/src/paths.sh"
model_suite "ptdump --follow" "$PROGS/loop" || { t_done; exit; }

# wait_for FILE: until ptrec has committed FILE (at most 30 s).
wait_for() {
	local i
	for i in $(seq 300); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# ---- 1. a recording that ends normally ----

"$PTREC" record --emulate -q -o f.data -- "$PROGS/loop" 300 >/dev/null 2>rec.err &
rec=$!
if wait_for f.data; then
	"$PTDUMP" --follow --stats f.data >follow.out 2>follow.err
	frc=$?
	# ptdump ran until ptrec let go of the file: ptrec is gone by now.
	kill -0 "$rec" 2>/dev/null
	t_eq "--follow returned after ptrec ended" 1 "$?"
	wait "$rec"
	t_eq "the recording succeeded" 0 "$?"
	t_eq "--follow: exit status" 0 "$frc"
	t_eq "--follow decodes the whole file (as ptdump after the end)" \
		"$("$PTDUMP" --stats f.data 2>&1)" "$(cat follow.out follow.err)"
	t_match "the file is complete" 'complete \(' "$("$PTDUMP" --info f.data)"
else
	t_fail "the recording did not start" "$(cat rec.err)"
	wait "$rec"
fi

# ---- 2. a recording that is killed ----

"$PTREC" record --emulate -q -o k.data -- "$PROGS/loop" 100000 >/dev/null 2>krec.err &
rec=$!
if wait_for k.data; then
	"$PTDUMP" --follow --stats k.data >kf.out 2>kf.err &
	dump=$!
	sleep 1
	kill -0 "$dump" 2>/dev/null
	t_eq "--follow waits while ptrec writes" 0 "$?"
	kill -KILL "$rec"
	wait "$rec" 2>/dev/null
	for i in $(seq 100); do kill -0 "$dump" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$dump" 2>/dev/null
	t_eq "--follow goes on when ptrec is killed" 1 "$?"
	wait "$dump"
	t_eq "--follow on the cut file: exit status 0" 0 "$?"
	t_match "--follow on the cut file: its trace decoded" 'instructions: [1-9]' "$(cat kf.out)"
else
	t_fail "the second recording did not start" "$(cat krec.err)"
	kill -KILL "$rec" 2>/dev/null
	wait "$rec" 2>/dev/null
fi

# ---- 3. no writer, and what --follow refuses ----

start=$(date +%s%N)
t_run "--follow on a finished file" 0 "$PTDUMP" --follow --stats f.data
t_eq "--follow on a finished file does not wait" 1 "$(( ($(date +%s%N) - start) < 5000000000 ))"
t_run "--follow on standard input" 2 "$PTDUMP" --follow --stats - </dev/null
t_match "--follow on standard input: said why" 'standard input is read to its end anyway' "$err"
t_run "--follow on a missing file" 1 "$PTDUMP" --follow --stats nothing.data
t_match "--follow on a missing file: said so" 'nothing.data: No such file' "$err"

t_done
