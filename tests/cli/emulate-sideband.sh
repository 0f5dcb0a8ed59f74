#!/usr/bin/env bash
# Sideband from the software tracer in the order and with the fields the
# kernel gives: a new thread's FORK before its first trace (ITRACE_START,
# AUX), written once; EXIT naming the process's parent (the kernel's
# perf_event_task_output: a task's real parent), as on the real kernel here.
. "$(dirname "$0")/lib.sh"
B=${B:-build}
PROGS=${PTREC_TOP:-.}/$B/progs
cd "$T_TMP" || exit 1

# Per thread of the recording: "tid nforks fork_line itrace_line first_aux_line".
order() {
	"$PTDUMP" --sideband "$1" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\/[0-9]+$/) break
		split($i, p, "/"); t = p[2]; ty = $(i+1)
		if (ty == "FORK") { nf[t]++; if (!(t in f)) f[t] = NR }
		if (ty == "ITRACE_START" && !(t in s)) s[t] = NR
		if (ty == "AUX" && !(t in a)) a[t] = NR
		if (ty == "COMM" && $(i+3) == "(exec)") main[p[1]] = 1 }
		END { for (t in s) if (!(t in main)) print t, nf[t] + 0, f[t] + 0, s[t], a[t] + 0 }'
}
# Every EXIT's parent as "ppid/ptid", with the exiting tid: "tid ppid/ptid".
exits() { "$PTDUMP" --sideband "$1" | sed -n 's,.* \([0-9]*\)/\([0-9]*\) *EXIT *(parent \([0-9]*/[0-9]*\)).*,\2 \3,p'; }

bad=0 runs=6
for i in $(seq $runs); do
	"$PTREC" record -q --emulate -o t$i.data -- "$PROGS/threads" 4 >/dev/null 2>&1 || { bad=$((bad + 1)); continue; }
	o=$(order t$i.data)
	[ "$(wc -l <<<"$o")" = 4 ] || { t_fail "run $i: 4 threads with a stream" "$o"; continue; }
	while read -r tid nf f s a; do
		if [ "$nf" != 1 ] || [ "$f" -ge "$s" ] || { [ "$a" != 0 ] && [ "$a" -lt "$s" ]; }; then
			bad=$((bad + 1))
			t_fail "run $i thread $tid: one FORK before ITRACE_START before AUX" "forks $nf, lines $f $s $a"
		fi
	done <<<"$o"
done
t_eq "threads, $runs runs: each thread's FORK once, before its first trace" 0 "$bad"

# EXIT parents: the process's parent for the process and its threads alike,
# never the exiting thread.
e=$(exits t1.data)
t_eq "emulated: 5 EXIT records (4 threads and the process)" 5 "$(wc -l <<<"$e")"
t_eq "emulated: one parent for every EXIT, as ppid/ptid pairs" 1 \
	"$(awk '{ split($2, p, "/"); if (p[1] == p[2]) print $2 }' <<<"$e" | sort -u | wc -l)"
t_eq "emulated: no EXIT names the exiting thread as its parent" 0 \
	"$(awk '{ split($2, p, "/"); if (p[1] == $1) n++ } END { print n + 0 }' <<<"$e")"

if t_is_root; then
	# The same program on the real kernel: the same relation.
	"$PTREC" record -q -e syscalls:sys_enter_getpid -o k.data -- "$PROGS/threads" 4 >/dev/null 2>&1
	k=$(exits k.data)
	t_eq "kernel: one parent for every EXIT of the workload" 1 \
		"$(awk '{ split($2, p, "/"); if (p[1] == p[2]) print $2 }' <<<"$k" | sort -u | wc -l)"
	t_eq "kernel and emulated: as many EXIT records" "$(wc -l <<<"$k")" "$(wc -l <<<"$e")"
else
	t_skip "kernel EXIT records" "needs root"
fi

# A forked child announces itself before its trace too.
"$PTREC" record -q --emulate -o f.data -- "$PROGS/forkexec" >/dev/null 2>&1
t_eq "forkexec: every FORK before that task's first ITRACE_START" 0 \
	"$("$PTDUMP" --sideband f.data | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\/[0-9]+$/) break
		split($i, p, "/"); t = p[2]; ty = $(i+1)
		if (ty == "FORK" && !(t in f)) f[t] = NR
		if (ty == "ITRACE_START" && !(t in s)) s[t] = NR }
		END { for (t in f) if (t in s && f[t] > s[t]) n++; print n + 0 }')"
# Names: a new thread or a forked child has its parent's name until a COMM of
# its own (perf's thread model), so no line of a view is ":TID".
t_run "threads: call trace" 0 "$PTDUMP" --call-trace t1.data
t_eq "threads: every line named after the process" "threads" \
	"$(printf '%s\n' "$out" | awk 'NF { print $1 }' | sort -u)"
"$PTREC" record -q --emulate -o fx.data -- "$PROGS/forkexec" >/dev/null 2>&1
t_run "fork child: call trace" 0 "$PTDUMP" --call-trace fx.data
t_eq "fork child: named after its parent, no ':TID' lines" "forkexec" \
	"$(printf '%s\n' "$out" | awk 'NF { print $1 }' | sort -u)"
t_eq "fork child: its own lines are there" 2 "$(printf '%s\n' "$out" | awk 'NF { print $2 }' | sort -u | wc -l)"
# The exec starts a new program with an empty stack: its loader's first call
# (_dl_start, entered from _start) is at the depth of the first program's,
# not below the frames of the execl() that never return.
t_eq "exec: both programs' _dl_start at the same depth" "2 1" \
	"$(printf '%s\n' "$out" | awk -F'\t' '$2 ~ /^ *_dl_start( |$)/ { n++; match($2, /^ */); d[RLENGTH] = 1 }
		END { k = 0; for (x in d) k++; print n, k }')"
# As JSON: the same depth in both.
t_run "exec: JSON call trace" 0 "$PTDUMP" --call-trace --format=json fx.data
t_eq "exec: JSON depth of both _dl_start equal" 1 \
	"$(printf '%s\n' "$out" | grep '"to_name":"_dl_start"' | grep -o '"depth":[0-9]*' | sort -u | wc -l)"

t_done
