#!/usr/bin/env bash
# A workload killed by a signal keeps its trace: what the software tracer had
# not sent when the process died (SIGSEGV, SIGABRT, SIGKILL, SIGTERM, sent by
# itself or from outside) reaches the file, every call up to the end decodes
# as the ground truth has it, the faulting function is the last call, the
# thread's last line names the signal, and so does ptrec's report; ptrec's
# exit status is the workload's. The same for a process the workload
# started (forked, forked and exec'd, orphaned) that dies of a signal.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/src/truth.sh"
B=${B:-build}
PROGS=${PTREC_TOP:-.}/$B/progs
cd "$T_TMP" || exit 1
if ! command -v qemu-x86_64 >/dev/null; then
	t_skip "crash tests" "qemu-x86_64 is not installed"; t_done; exit
fi
truth_build || { t_done; exit; }

# The ground truth of the faulting instruction: crash()'s store through the
# NULL pointer, and the instruction before it, as offsets in crash() found
# with objdump.
fault_off= prev_off= inside= base= prev=
while read -r a rest; do
	if [ "$rest" = "<crash>:" ]; then
		base=$a inside=1
		continue
	fi
	[ -n "$inside" ] || continue
	[ -z "$a" ] && break
	if [[ $rest == movl*'$0x1,(%r'* ]]; then
		fault_off=$(printf '%x' $((0x${a%:} - 0x$base))) prev_off=$(printf '%x' $((0x$prev - 0x$base)))
		break
	fi
	prev=${a%:}
done < <(objdump -d --no-show-raw-insn "$PROGS/crash")
[ -n "$fault_off" ] || t_fail "objdump finds crash()'s store through the NULL pointer"

# check_fault NAME TID: the signal line of thread TID names the faulting
# instruction, and the thread's instruction trace ends just before it.
check_fault() {
	local n=$1 tid=$2 last
	t_match "$n: killed by SIGSEGV at the faulting instruction, crash+0x$fault_off" \
		"-- killed by SIGSEGV at 0x[0-9a-f]+ crash\+0x$fault_off \(.*\): movl \\\$1, \(%r[a-z0-9]+\)\$" \
		"$(grep -E "^ *[^ ]+ +$tid " "$n.out" | tail -n 1)"
	"$PTDUMP" --insn-trace --tid "$tid" "$n.data" >"$n.insn" 2>"$n.insn.err"
	last=$(grep -v -- ' -- \| tr end ' "$n.insn" | tail -n 1 | sed -n 's/.* \(crash+0x[0-9a-f]*\) .*/\1/p')
	t_eq "$n: its last instruction is the one before, crash+0x$prev_off" "crash+0x$prev_off" "$last"
}

# crash_case NAME STATUS REPORT LASTCALL PROG ARGS...: records PROG (killed
# by signal STATUS-128) and checks the report, the calls and the last lines.
crash_case() {
	local n=$1 want=$2 report=$3 lastcall=$4 rc sig
	shift 4
	"$PTREC" record --emulate --emulate-truth "$n.truth" -o "$n.data" -- "$@" >"$n.rec.out" 2>"$n.rec.err"
	rc=$?
	check_case "$n" "$want" "$rc" "$report" "$lastcall"
}

check_case() {
	local n=$1 want=$2 rc=$3 report=$4 lastcall=$5 sig last
	sig=$(kill -l $((want - 128)))
	t_eq "$n: exit status is the workload's" "$want" "$rc"
	t_match "$n: the report names the signal" "ptrec: workload killed by SIG$sig$report" "$(cat "$n.rec.err")"
	if ! truth_calls "$n"; then
		t_fail "$n: truth" "$(cat "$n.sb.err" "$n.dt.err" | head -n 5)"; return
	fi
	if [ -s "$n.err" ] || [ "$(grep -Evc -- "-- killed by SIG$sig (at|near) " "$n.odd")" != 0 ]; then
		t_fail "$n: ptdump decodes without errors" "$(head -n 5 "$n.err" "$n.odd")"
	elif [ "$(wc -l <"$n.exp")" -gt 1000 ] && cmp -s "$n.exp" "$n.got"; then
		t_pass "$n: every call up to the end = truth ($(wc -l <"$n.exp") lines)"
	else
		t_fail "$n: every call up to the end = truth" "$(wc -l <"$n.exp") expected, $(wc -l <"$n.got") decoded:
$(diff "$n.exp" "$n.got" | head -n 8)"
	fi
	# LASTCALL "syscall:F": died in a system call (the last line, below its
	# caller's), with F among the last calls; else the last call is LASTCALL.
	if [ "${lastcall%%:*}" = syscall ]; then
		last=$(sed 's/.*\t *//' "$n.got" | tail -n 1)
		t_eq "$n: died in a system call" "[syscall]" "$last"
		sed 's/.*\t *//' "$n.got" | tail -n 20 >"$n.last8"
		t_match "$n: ${lastcall#*:} among the last calls" "${lastcall#*:}" "$(grep -x "${lastcall#*:}" "$n.last8")"
	else
		last=$(sed 's/.*\t *//' "$n.got" | tail -n 1)
		t_match "$n: the last call is $lastcall" "^$lastcall\$" "$last"
	fi
	if [ "$sig" = SEGV ] && [ "$lastcall" = crash ]; then
		check_fault "$n" "$(awk '$4 == "SIGNAL" { split($3, p, "/"); print p[2] }' "$n.sb")"
	else
		t_match "$n: the thread's last line is the signal, near where it stood" \
			"-- killed by SIG$sig near 0x" "$(tail -n 1 "$n.out")"
	fi
}

crash_case segv 139 " in crash\(\), called from mid\(\)" crash "$PROGS/crash" segv
crash_case abort 134 " in .*, called from " syscall:crash "$PROGS/crash" abort
crash_case kill9 137 " in kill\(\), called from crash\(\)" syscall:crash "$PROGS/crash" kill 9
crash_case kill15 143 " in kill\(\), called from crash\(\)" syscall:crash "$PROGS/crash" kill 15
cp "$PROGS/crash" spinner
crash_case sh-kill 139 " in kill\(\)" syscall:kill@plt /bin/sh -c 'kill -SEGV $$'

# fork_case NAME MODE HOW SIG: "crash MODE HOW": a process the workload
# started (fork, fork and exec, or one left behind by its parent) dies of
# SIG; the workload exits 0. That process's trace reaches the file up to
# its end, it gets the signal record, and the report names it.
fork_case() {
	local n=$1 mode=$2 how=$3 sig=$4 rc child last
	"$PTREC" record --emulate --emulate-truth "$n.truth" -o "$n.data" -- "$PROGS/crash" "$mode" "$how" \
		>"$n.rec.out" 2>"$n.rec.err"
	rc=$?
	t_eq "$n: exit status is the workload's" 0 "$rc"
	t_match "$n: the report names the process, the signal and the function" \
		"ptrec: process [0-9]+ killed by SIG$sig in crash\(\), called from mid\(\)" "$(cat "$n.rec.err")"
	t_nomatch "$n: the report does not say the workload was killed" "workload killed" "$(cat "$n.rec.err")"
	if [ "$mode" != orphan ]; then
		t_eq "$n: the workload saw its child killed" "child killed by signal $(kill -l "$sig")" \
			"$(cat "$n.rec.out")"
	fi
	if ! truth_calls "$n"; then
		t_fail "$n: truth" "$(cat "$n.sb.err" "$n.dt.err" | head -n 5)"; return
	fi
	child=$(awk '$4 == "SIGNAL" { split($3, p, "/"); print p[2] }' "$n.sb")
	t_eq "$n: one signal record, the dead process's, started by the workload" \
		"1 1" "$(grep -c ' SIGNAL ' "$n.sb") $(grep -c " SIGNAL .*(ran last).*(started by the workload)" "$n.sb")"
	if [ -s "$n.err" ] || [ "$(grep -Evc -- "-- killed by SIG$sig (at|near) " "$n.odd")" != 0 ]; then
		t_fail "$n: ptdump decodes without errors" "$(head -n 5 "$n.err" "$n.odd")"
	elif [ "$(grep -c "^$child	" "$n.exp")" -gt 1000 ] && cmp -s "$n.exp" "$n.got"; then
		t_pass "$n: every call of both processes up to the end = truth ($(wc -l <"$n.exp") lines)"
	else
		t_fail "$n: every call up to the end = truth" "$(wc -l <"$n.exp") expected, $(wc -l <"$n.got") decoded:
$(diff "$n.exp" "$n.got" | head -n 8)"
	fi
	last=$(grep "^$child	" "$n.got" | sed 's/.*\t *//' | tail -n 1)
	t_eq "$n: the dead process's last call is crash" crash "$last"
	check_fault "$n" "$child"
}

fork_case fork fork segv SEGV
fork_case forkexec forkexec segv SEGV
fork_case orphan orphan segv SEGV

# Many threads (more than the shared area's first chunks hold): each keeps
# its unsent trace and truth in shared memory, so when one thread crashes
# the process, every thread's calls reach the file up to its end.
n=threads300
"$PTREC" record --emulate --emulate-truth "$n.truth" -o "$n.data" -- "$PROGS/crash" threads 300 segv \
	>"$n.rec.out" 2>"$n.rec.err"
rc=$?
t_eq "$n: exit status is the workload's" 139 "$rc"
t_match "$n: the report names the signal and the function" \
	"ptrec: workload killed by SIGSEGV in crash\(\), called from mid\(\)" "$(cat "$n.rec.err")"
if truth_calls "$n"; then
	t_eq "$n: 300 threads, each with its 100 calls of work, and the main thread" "301 300" \
		"$(cut -f1 "$n.got" | sort -u | wc -l) $(awk -F'\t' '$2 ~ /^ *work$/ { c[$1]++ }
			END { for (t in c) if (c[t] == 100) k++; print k }' "$n.got")"
	t_eq "$n: a signal record for each thread, one of them ran last" "301 1" \
		"$(grep -c ' SIGNAL ' "$n.sb") $(grep -c ' SIGNAL .*(ran last)' "$n.sb")"
	if [ -s "$n.err" ] || [ "$(grep -Evc -- "-- killed by SIGSEGV (at|near) " "$n.odd")" != 0 ]; then
		t_fail "$n: ptdump decodes without errors" "$(head -n 5 "$n.err" "$n.odd")"
	elif cmp -s "$n.exp" "$n.got"; then
		t_pass "$n: every call of every thread up to the end = truth ($(wc -l <"$n.exp") lines)"
	else
		t_fail "$n: every call of every thread up to the end = truth" "$(diff "$n.exp" "$n.got" | head -n 8)"
	fi
	culprit=$(awk '$4 == "SIGNAL" && /ran last/ { split($3, p, "/"); print p[2] }' "$n.sb")
	t_eq "$n: the thread that ran last called crash last" crash \
		"$(grep "^$culprit	" "$n.got" | sed 's/.*\t *//' | tail -n 1)"
	check_fault "$n" "$culprit"
else
	t_fail "$n: truth" "$(cat "$n.sb.err" "$n.dt.err" | head -n 5)"
fi

# truth_size NAME: bytes of NAME.truth so far.
truth_size() { stat -c %s "$1.truth" 2>/dev/null || echo 0; }

# From outside, while the workload runs user code: QEMU takes SIGTERM at the
# next block, SIGKILL wherever it is. The kill comes once the spinner said
# it spins (after its write) and two more pieces of the truth (12 KiB each)
# arrived: by then it has left the write far behind. The bound (300 s) only
# keeps a broken recorder from hanging the suite.
for s in TERM KILL; do
	n=ext-$s
	"$PTREC" record --emulate --emulate-truth "$n.truth" -o "$n.data" -- "$T_TMP/spinner" spin \
		>"$n.rec.out" 2>"$n.rec.err" &
	rp=$!
	at=
	for _ in $(seq 3000); do
		if [ -z "$at" ] && grep -qx spinning "$n.rec.out"; then
			at=$(truth_size "$n")
		elif [ -n "$at" ] && [ "$(truth_size "$n")" -gt $((at + 2 * 12288)) ]; then
			break
		fi
		kill -0 "$rp" 2>/dev/null || break
		sleep 0.1
	done
	kill -"$s" "$(pgrep -P "$rp")"
	wait "$rp"
	rc=$?
	check_case "$n" $((128 + $(kill -l $s))) "$rc" " in (work\(\), called from crash|crash\(\), called from mid)\(\)" work
done
t_done
