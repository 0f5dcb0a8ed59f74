#!/usr/bin/env bash
# The kernel model (src/record/kmodel.c) against the real kernel on 240
# generated cases (fixed seed): event groups of software events, tracepoints
# and uprobes, per-CPU and per-thread opens, inherit, enable_on_exec with a
# child that execs, SET_OUTPUT pairs, ring sizes, read formats, bad
# combinations, the mlock budget as a user without CAP_IPC_LOCK, record
# cases and side-band cases. Each call must get the same answer from both,
# and each data ring the same records: after the calls the case process
# calls getpid() (the syscall tracepoints), the uprobe'd function, renames
# itself, pauses, resumes and consumes rings, floods 1-page rings, forks a
# child and clones a thread that exit at once (FORK, EXIT of inherited
# events), maps a file executable or not (MMAP, MMAP2 with mmap,
# mmap2, mmap_data), sleeps (SWITCH out and in); its child's exec gives
# COMM (exec) and EXIT. The model is told the same occurrences through its
# producer side; per ring, occurrence by occurrence and in order (a run of
# samples of one occurrence as a set), the record types, misc flags, sizes
# (sample layout, sample_id trailers) and the fields both give alike (ids,
# pids, CPU, period, LOST counts, names, FORK/EXIT tasks, a mapping's
# address, length, offset, file, device, inode, prot and flags) must match;
# then a poll() of every event must say the same (POLLIN, POLLHUP).
# Not compared (tests/tools/kmodel_diff.c says why): AUX PMUs (no real one
# here), records that depend on timing or on other processes (cpu-clock,
# task-clock and context-switch samples, SWITCH records of preemptions and
# yields, a child's own switches, SWITCH_CPU_WIDE, MMAP of memory the
# process maps for itself and of an exec'd program's loading, the
# STREAM_ID of inherited events once a child ran, a CPU event's view of
# other processes), build ids, IP, TIME and READ values, write_backward,
# groups mixing PMUs, counts.
#   KMODEL_DIFF_SEED=N   another seed; KMODEL_DIFF_CASES=N   another count
# A failing case reproduces alone: build/tools/kmodel_diff --seed S --case K -v
TOP=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BD=$B ;; *) BD=$TOP/$B ;; esac
. "$(dirname "$0")/lib.sh"
tool=$BD/tools/kmodel_diff

if [ ! -x "$tool" ]; then
	t_fail "kmodel_diff is built" "$tool is missing (run make B=$B tests first)"
	t_done; exit
fi
if ! t_is_root; then
	t_skip "model against the real kernel" "needs root"
	t_done; exit
fi
[ -e /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
seed=${KMODEL_DIFF_SEED:-20261202}
cases=${KMODEL_DIFF_CASES:-240}
"$tool" --seed "$seed" --cases "$cases" >"$T_TMP/out" 2>"$T_TMP/err"
rc=$?
n=0
while IFS=$'\t' read -r verdict desc why; do
	case $verdict in
	ok) t_pass "${desc:0:150}"; n=$((n + 1)) ;;
	FAIL) t_fail "$desc" "$why
reproduce: $tool --seed $seed --case ${desc%% *} -v" ; n=$((n + 1)) ;;
	skip) t_skip "$desc" "$why" ;;
	esac
done < <(sed 's/^\(ok\|FAIL\)\t#/\1\t/' "$T_TMP/out")
if grep -q '^skip' "$T_TMP/out"; then
	t_done; exit
fi
[ "$n" -ge 200 ] && t_pass "at least 200 cases compared ($n, seed $seed)" ||
	t_fail "at least 200 cases compared" "only $n; exit status $rc: $(head -n 5 "$T_TMP/err")"
# What the compared rings held (the real kernel's side of the passing cases):
# the comparison must have had records of every kind to compare.
re='\[rings [0-9]*, records [0-9]*: SAMPLE [0-9]* COMM [0-9]* EXIT [0-9]* LOST [0-9]*'
re="$re FORK [0-9]* MMAP [0-9]* SWITCH [0-9]*\]"
read -r withrec recs samples comms exits losts forks mmaps switches < <(grep '^ok' "$T_TMP/out" |
	grep -o "$re" | tr -c '0-9\n' ' ' |
	awk '{ if ($2 > 0) c++; for (i = 2; i <= 9; i++) t[i] += $i }
		END { print c + 0, t[2] + 0, t[3] + 0, t[4] + 0, t[5] + 0, t[6] + 0, t[7] + 0,
			t[8] + 0, t[9] + 0 }')
kinds="SAMPLE $samples, COMM $comms, EXIT $exits, LOST $losts, FORK $forks, MMAP $mmaps, SWITCH $switches"
if [ "$withrec" -ge 60 ] && [ "$samples" -gt 0 ] && [ "$comms" -gt 0 ] && [ "$exits" -gt 0 ] &&
	[ "$losts" -gt 0 ] && [ "$forks" -gt 0 ] && [ "$mmaps" -gt 0 ] && [ "$switches" -gt 0 ]; then
	t_pass "data rings compared in $withrec cases ($recs records: $kinds)"
else
	t_fail "data rings compared in at least 60 cases, with SAMPLE, COMM, EXIT, LOST, FORK, MMAP and SWITCH records" \
		"$withrec cases, $recs records: $kinds"
fi
grep '^# [0-9]* passed' "$T_TMP/out" | sed 's/^# //'
t_done
