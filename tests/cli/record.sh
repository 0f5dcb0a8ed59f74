#!/usr/bin/env bash
# ptrec record on the real kernel (as root): tracepoint groups without an AUX
# leader, workload/attach/system-wide/per-thread modes, signals, SIGKILL, a full
# disk, a damaged file, and the kernel's refusals turned into messages.
. "$(dirname "$0")/lib.sh"

if ! t_is_root; then
	t_skip "record" "needs root (tracepoints and uprobes through perf_event_open)"
	t_done; exit
fi
cc -O1 -pthread -o "$T_TMP/unames" "$(dirname "$0")/src/unames.c" || { t_fail "build unames"; t_done; exit; }
EV=syscalls:sys_enter_newuname,syscalls:sys_exit_newuname
UNAME=$(command -v uname)
cd "$T_TMP" || exit 1

# Sideband lines: TIME [CPU] PID/TID TYPE ...; print "TYPE pid tid rest".
sb() { "$PTDUMP" --sideband "$@" | awk '{ i = 2; if ($2 ~ /^\[/) i = 3; split($i, pt, "/"); t = $(i+1); $1 = ""; if (i == 3) $2 = ""; $i = ""; $(i+1) = ""; gsub(/^ +/, ""); print t, pt[1], pt[2], $0 }'; }

# 1. uname under a tracepoint pair: comm, exec, mmaps, exactly two samples.
t_run "record uname" 0 "$PTREC" record -q -e "$EV" -o u.data -- uname
s=$(sb u.data)
pid=$(awk '$1 == "COMM" && $4 == "uname" && $5 == "(exec)" { print $2; exit }' <<<"$s")
t_match "uname: COMM with exec" '^[0-9]+$' "$pid"
t_match "uname: mmap of the uname binary" "^MMAP $pid $pid .* r-x $UNAME" "$s"
t_match "uname: mmap of libc" "^MMAP $pid $pid .*libc\\.so" "$s"
t_eq "uname: one sys_enter sample" 1 "$(grep -c "^SAMPLE $pid $pid syscalls:sys_enter_newuname" <<<"$s")"
t_eq "uname: one sys_exit sample" 1 "$(grep -c "^SAMPLE $pid $pid syscalls:sys_exit_newuname" <<<"$s")"
t_eq "uname: no other samples" 2 "$(grep -c '^SAMPLE' <<<"$s")"
t_eq "file mode 0600" 600 "$(stat -c %a u.data)"
info=$("$PTDUMP" --info u.data)
t_match "info: complete" 'complete \([0-9]+ chunks\)' "$info"
t_match "info: workload" '^workload: +uname' "$info"

# 2. A workload that starts threads, forks and execs: every pid/tid appears.
t_run "workload exit status is the workload's" 7 "$PTREC" record -q -e "$EV" -o w.data -- ./unames -x
main=$(grep -E "^[0-9]+$" <<<"$out")
s=$(sb w.data)
tids=$(awk -v p="$main" '$1 == "SAMPLE" && $2 == p && $4 ~ /enter/ { print $3 }' <<<"$s" | sort -u | wc -l)
t_eq "threads: samples from 3 threads of the workload" 3 "$tids"
t_eq "threads: FORK records for both threads" 2 "$(awk -v p="$main" '$1 == "FORK" && $2 == p && $3 != p' <<<"$s" | wc -l)"
child=$(awk -v p="$main" '$1 == "COMM" && $4 == "uname" && $5 == "(exec)" && $2 != p { print $2; exit }' <<<"$s")
t_match "fork+exec: the child's exec comm" '^[0-9]+$' "$child"
t_eq "fork+exec: the child's sample" 1 "$(grep -c "^SAMPLE $child $child syscalls:sys_enter_newuname" <<<"$s")"
t_match "fork+exec: FORK of the child" "^FORK $child $child from $main/$main" "$s"

# 2b. --per-thread: one ring for the workload's thread, no inheritance.
t_run "per-thread workload" 7 "$PTREC" record -q --per-thread -e "$EV" -o pt.data -- ./unames
main=$(grep -E "^[0-9]+$" <<<"$out")
s=$(sb pt.data)
t_eq "per-thread: only the main thread's samples" "SAMPLE $main $main" \
	"$(awk '$1 == "SAMPLE" { print $1, $2, $3 }' <<<"$s" | sort -u | tr '\n' ' ' | sed 's/ $//')"
t_match "per-thread: per-thread streams in the file" 'streams: +per thread' "$("$PTDUMP" --info pt.data)"

# 3. Attach to a running process (-p): ends when it exits.
./unames -w 1 >p.out &
bg=$!
t_run "attach -p" 0 timeout 20 "$PTREC" record -q -e "$EV" -o p.data -p "$bg"
wait "$bg"
s=$(sb p.data)
t_eq "attach -p: enter samples from all three threads" 3 "$(awk -v p="$bg" '$1 == "SAMPLE" && $2 == p && $4 ~ /enter/' <<<"$s" | wc -l)"

# 4. Attach to one thread (-t): only that thread, per-thread ring.
./unames -w 1 >t.out &
sleep 0.2
bg=$!
t_run "attach -t" 0 timeout 20 "$PTREC" record -q -e "$EV" -o t.data -t "$bg"
wait "$bg"
s=$(sb t.data)
t_eq "attach -t: exactly the main thread's enter sample" "SAMPLE $bg $bg" \
	"$(awk '$1 == "SAMPLE" && $4 ~ /enter/ { print $1, $2, $3 }' <<<"$s" | sort -u | tr '\n' ' ' | sed 's/ $//')"

# 5. System-wide while uname runs three times (started once recording runs).
"$PTREC" record -q -a -d 4 -e "$EV" -o a.data &
rp=$!
sleep 1.5
: >upids
for i in 1 2 3; do "$UNAME" >/dev/null & echo $! >>upids; wait $!; done
wait "$rp"
t_eq "system-wide -a -d 4" 0 "$?"
s=$(sb a.data)
# Only this test's three: other users of the machine may run uname meanwhile.
n=$(while read -r p; do
	grep -q "^SAMPLE $p $p syscalls:sys_enter" <<<"$s" && grep -q "^COMM $p $p uname" <<<"$s" && echo "$p"
done <upids | wc -l)
t_eq "system-wide: samples of three uname processes, each with its comm" 3 "$n"
t_run "system-wide -C 0" 0 "$PTREC" record -q -a -C 0 -d 0.3 -e "$EV" -o c.data
t_nomatch "-C 0: no sample from another CPU" '^\s*[0-9.]+ \[00[1-9]\] .* SAMPLE' "$("$PTDUMP" --sideband c.data)"

# 6. SIGINT in the middle: the workload is stopped and the file is complete.
"$PTREC" record -q -e "$EV" -o i.data -- sh -c 'while :; do uname >/dev/null; done' &
rp=$!
sleep 1
kill -INT "$rp"
wait "$rp"
rc=$?
t_eq "SIGINT: exit status of the stopped workload (SIGTERM)" 143 "$rc"
t_match "SIGINT: the file is complete" 'complete \(' "$("$PTDUMP" --info i.data)"
t_match "SIGINT: samples were kept" 'SAMPLE' "$(sb i.data)"

# 6b. A second SIGINT while the first is handled: ptrec exits at once.
"$PTREC" record -q -e "$EV" -o i2.data -- sh -c 'trap "" TERM; while :; do uname >/dev/null; done' >i2.out 2>i2.err </dev/null &
rp=$!
sleep 1.5
kill -INT "$rp"
sleep 0.3
kill -INT "$rp"
wait "$rp"
t_eq "second SIGINT: exits at once (128+SIGINT)" 130 "$?"
# The workload ignores SIGTERM and outlives ptrec: end it here.
pkill -KILL -f 'TERM; while :; do uname' || true
t_run "second SIGINT: the file still reads" 0 "$PTDUMP" --sideband i2.data

# killed_record WAIT ARG PATTERN ARGS...: ptrec record ARGS in the
# background, SIGKILLed once the command WAIT ARG returns; then its
# workload (pkill -f PATTERN) is ended too.
killed_record() {
	local w=$1 wa=$2 wl=$3 rp
	shift 3
	"$PTREC" record "$@" &
	rp=$!
	"$w" "$wa"
	kill -KILL "$rp"
	wait "$rp" 2>/dev/null
	pkill -f "$wl" || true
}

# 7. SIGKILL: the file reads up to its last whole chunk.
killed_record sleep 2.5 'while :; do uname' -q -e "$EV" -o k.data -- sh -c 'while :; do uname >/dev/null; done'
t_run "SIGKILL: ptdump still reads the file" 0 "$PTDUMP" --sideband k.data
t_match "SIGKILL: samples from before the kill" 'SAMPLE' "$out"
t_match "SIGKILL: reported as cut short" 'cut short|no END' "$err"
# 7b. The kernel's symbols are written once the events are open, before any
#     trace: a recording killed while its workload runs still holds them.
#     The kernel is "traced" here through --kcore (a kernel without
#     /proc/kcore gives its symbols and a note).
# wait_ksyms FILE: until FILE holds KSYMS (5 s at most), and half a second more
wait_ksyms() {
	for _ in $(seq 50); do
		"$PTDUMP" --info "$1" 2>/dev/null | grep -q KSYMS && break
		sleep 0.1
	done
	sleep 0.5
}
if awk '$3 == "_stext" { shown = $1 !~ /^0+$/ } END { exit !shown }' /proc/kallsyms; then
	killed_record wait_ksyms kk.data '^sleep 30$' -q --kcore -e "$EV" -o kk.data -- sleep 30
	t_run "SIGKILL with --kcore: the cut file reads" 0 "$PTDUMP" --info kk.data
	t_match "SIGKILL with --kcore: cut short" 'cut short' "$out"
	t_match "SIGKILL with --kcore: the kernel's symbols are in it" '^ *KSYMS +[1-9]' "$out"
	# all of /proc/kallsyms: its size as --info prints it (MiB, two decimals)
	t_eq "SIGKILL with --kcore: all of the kernel's kallsyms" \
		"$(wc -c </proc/kallsyms | awk '{ printf "%.2f MiB", $1 / 1048576 }')" \
		"$(awk '$1 == "KSYMS" { print $4, $5 }' <<<"$out")"
else
	t_skip "SIGKILL with --kcore" "kallsyms hides its addresses"
fi

# 8. A full disk: a clear error, a non-zero exit, and what was written stays readable.
mkdir -p full
if mount -t tmpfs -o size=256k tmpfs full 2>/dev/null; then
	t_run "full disk: non-zero exit" 1 "$PTREC" record -q -e "$EV" -o full/f.data -- uname
	t_match "full disk: says so" 'disk is full' "$err"
	t_run "full disk: the partial file reads" 0 "$PTDUMP" --sideband full/f.data
	t_match "full disk: the samples survived" 'SAMPLE' "$out"
	umount full
else
	t_skip "full disk" "cannot mount a tmpfs"
fi

# 9. A damaged chunk: reported with its offset, the rest still reads.
cp u.data d.data
size=$(stat -c %s d.data)
printf '\xff\xff\xff\xff' | dd of=d.data bs=1 seek=$((size / 2)) conv=notrunc status=none
t_run "damaged: ptdump reads on" 0 "$PTDUMP" --sideband d.data
t_match "damaged: offset reported" 'offset [0-9]+' "$err"
t_eq "damaged: both samples still there" 2 "$(grep -c 'SAMPLE' <<<"$out")"

# 10. Refusals become messages.
t_run "no tracer PMU: usage error" 2 "$PTREC" record -e intel_pt//u -o x.data -- true
t_match "no tracer PMU: says what exists and what to do" 'no intel_pt PMU on this machine' "$err"
t_match "no tracer PMU: points at --emulate" 'emulate' "$err"
t_run "missing command" 1 "$PTREC" record -q -e "$EV" -o x.data -- ./no-such-command
t_match "missing command: named" 'no-such-command' "$err"
if command -v setpriv >/dev/null; then
	chmod 777 "$T_TMP"
	t_run "unprivileged kernel counting: refused" 1 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$PTREC" record -q -e cpu-clock -o "$T_TMP/np.data" -- true
	t_match "unprivileged: names perf_event_paranoid and the fix" 'perf_event_paranoid is [0-9-]+.*(root|CAP_PERFMON)' "$err"
	if [ "$(stat -c %a /sys/kernel/tracing 2>/dev/null)" = 700 ]; then
		t_run "unprivileged tracepoint: tracefs closed" 2 setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$PTREC" record -q -e "$EV" -o "$T_TMP/np.data" -- true
		t_match "tracefs closed: says so, not 'not mounted'" 'cannot read tracefs: Permission denied' "$err"
	fi
fi
t_run "-m 3: rounded up, as perf does" 0 "$PTREC" record -q -m 3 -e "$EV" -o "$T_TMP/m3.data" -- true
t_match "-m 3: says it rounds to 4 pages" 'rounding up to 16 KiB \(4 pages\)' "$err"
t_run "bad -m: zero" 2 "$PTREC" record -m 0 -e "$EV" -- true
t_run "bad -m: not a size" 2 "$PTREC" record -m 3X -e "$EV" -- true
t_match "bad -m: shows the form" 'DATA\[,AUX\]' "$err"
t_run "nothing to record" 2 "$PTREC" record -e "$EV"
t_done
