#!/usr/bin/env bash
# Hardware pause/resume, as perf's test_intel_pt.sh checks it, adapted: the
# tracer starts paused, one instructions counter resumes it, another pauses
# it, and the decoded branches must all fall inside resumed windows (with at
# least one branch). Also a full trace and the syscall window.
# Runs on intel_pt, else cs_etm; skips where neither exists. With
# PTREC_HW_FORCE_EMULATE=1 it runs the same checks on the software tracer
# (tests/cli/emulate-windows.sh does that here).
. "$(dirname "$0")/../cli/lib.sh"

if ! PTREC_BACKEND=hw t_backend_init; then
	t_skip "hardware pause/resume" "$T_BACKEND_WHY"
	t_done; exit
fi
tracer=$T_TRACER
mode=${T_REC_OPTS[*]}
cd "$T_TMP" || exit 1
UNAME=$(command -v uname)

# Skip (as perf does) when the tracer cannot start paused here.
if ! "$PTREC" record $mode -q -o probe.data -e "$tracer/aux-action=start-paused/u" -- "$UNAME" >/dev/null 2>probe.err; then
	t_skip "pause/resume" "$tracer cannot start paused here: $(head -n1 probe.err)"
	t_done; exit
fi

# 1. Full user-space trace: calls into the program and libc appear.
t_run "full trace records" 0 "$PTREC" record $mode -q -o full.data -e "$tracer//u" -- "$UNAME"
t_run "full trace decodes" 0 "$PTDUMP" --call-trace full.data
t_match "full trace: uname's calls appear" '^ +uname +[0-9]+ ' "$out"
calls=$(wc -l <<<"$out")
[ "$calls" -gt 100 ] && t_pass "full trace: over 100 calls ($calls)" || t_fail "full trace: only $calls calls"
t_nomatch "full trace: no decode errors" 'error' "$err"

# 2. Counter-driven windows (perf's test_pause_resume).
t_run "counter windows record" 0 "$PTREC" record $mode -q -o pr.data -e "$tracer/aux-action=start-paused/u" \
	-e instructions/period=50000,aux-action=resume,name=Resume/u \
	-e instructions/period=100000,aux-action=pause,name=Pause/u -- "$UNAME"
t_run "counter windows decode" 0 "$PTDUMP" --branches pr.data
# Lines are in time order; among lines with the same timestamp the order is not
# defined (trace timestamps are coarser than the triggers'), so a branch that
# shares its time with the last trigger is not held against the window.
verdict=$(awk '
	BEGIN { paused = 1; branches = 0; bad = 0; tt = "" }
	{ t = $3 }
	/-- resume trigger Resume/ { paused = 0; tt = t; next }
	/-- pause trigger Pause/ { paused = 1; tt = t; next }
	/=>/ { branches++; if (paused && t != tt) { bad++; print "paused branch: " $0 > "/dev/stderr" } }
	END { print branches, bad }' <<<"$out")
read -r nbr nbad <<<"$verdict"
[ "$nbr" -gt 0 ] && t_pass "counter windows: branches seen ($nbr)" || t_fail "counter windows: no branch at all"
t_eq "counter windows: no branch while paused" 0 "$nbad"

# 3. A syscall window in the kernel (hardware only: the software tracer
# traces user space).
if [ -z "$mode" ]; then
	t_run "syscall window records" 0 "$PTREC" record -q -o sys.data \
		-e "{$tracer/aux-action=start-paused/k,syscalls:sys_enter_newuname/aux-action=resume/,syscalls:sys_exit_newuname/aux-action=pause/}" -- "$UNAME"
	t_run "syscall window decodes" 0 "$PTDUMP" --call-trace sys.data
	t_match "syscall window: the kernel's uname" 'newuname|do_sys|uname' "$out"
fi
t_done
