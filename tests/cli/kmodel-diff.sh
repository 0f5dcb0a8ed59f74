#!/usr/bin/env bash
# The kernel model (src/record/kmodel.c) against the real kernel on 240
# generated cases (fixed seed): event groups of software events, tracepoints
# and uprobes, per-CPU and per-thread opens, inherit, enable_on_exec with a
# child that execs, SET_OUTPUT pairs, ring sizes, read formats, bad
# combinations, and the mlock budget as a user without CAP_IPC_LOCK. Each
# call must get the same answer from both (tests/tools/kmodel_diff.c lists
# what is compared, and what cannot be: AUX PMUs have no real counterpart
# here, and the model writes no records yet).
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
grep '^# [0-9]* passed' "$T_TMP/out" | sed 's/^# //'
t_done
