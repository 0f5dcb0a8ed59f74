#!/usr/bin/env bash
# ptrec record on the real kernel (as root), the rules it shares with perf:
# CPU-wide targets with a workload, attach modes (existing mappings, threads
# that outlive their leader), -C and its sideband, ring sizes for unprivileged
# users, the kernel's refusals, throttled triggers. Tracepoint and software
# events only: no tracer hardware is needed.
. "$(dirname "$0")/lib.sh"

if ! t_is_root; then
	t_skip "record-kernel" "needs root (tracepoints through perf_event_open)"
	t_done; exit
fi
SRC=$(cd "$(dirname "$0")/src" && pwd)
cc -O1 -pthread -o "$T_TMP/unames" "$SRC/unames.c" || { t_fail "build unames"; t_done; exit; }
EV=syscalls:sys_enter_newuname
UNAME=$(command -v uname)
NCPU=$(nproc)
cd "$T_TMP" || exit 1

# Sideband lines: TIME [CPU] PID/TID TYPE ...; print "TYPE pid tid rest".
sb() { "$PTDUMP" --sideband "$@" | awk '{ i = 2; if ($2 ~ /^\[/) i = 3; split($i, pt, "/"); t = $(i+1); $1 = ""; if (i == 3) $2 = ""; $i = ""; $(i+1) = ""; gsub(/^ +/, ""); print t, pt[1], pt[2], $0 }'; }

# 1. -a with a workload: CPU-wide events are enabled explicitly (enable_on_exec
#    only enables the exec'ing task's own context), so the workload and other
#    processes are recorded.
t_run "-a -- CMD" 7 "$PTREC" record -q -a -e "$EV" -o a.data -- ./unames
main=$(grep -E '^[0-9]+$' <<<"$out")
s=$(sb a.data)
t_eq "-a -- CMD: the workload's three threads recorded" 3 \
	"$(awk -v p="$main" '$1 == "SAMPLE" && $2 == p' <<<"$s" | wc -l)"
# The other process runs once the workload has started (the events are on then).
after_go() { (while [ ! -e "$1" ]; do sleep 0.05; done; shift; exec "$@") & }
after_go go1 ./unames >other.out
bg=$!
t_run "-a -- sleep: another process" 0 "$PTREC" record -q -a -e "$EV" -o a2.data -- sh -c 'touch go1; sleep 1'
wait "$bg"
other=$(head -n 1 other.out)
s=$(sb a2.data)
t_eq "-a -- sleep: the other process's three threads recorded" 3 \
	"$(awk -v p="$other" '$1 == "SAMPLE" && $2 == p' <<<"$s" | wc -l)"

# 3. -p on a process whose main thread called pthread_exit: the zombie leader
#    does not end the recording while another thread lives.
cc -O1 -pthread -o leader_exit "$SRC/leader_exit.c" || t_fail "build leader_exit"
./leader_exit 1.5 >le.out &
bg=$!
sleep 0.3
t_run "-p, zombie leader" 0 timeout 20 "$PTREC" record -q -e "$EV" -o le.data -p "$bg"
wait "$bg"
tid=$(sed -n 2p le.out)
s=$(sb le.data)
t_match "-p, zombie leader: the live thread's sample after the leader ended" "^SAMPLE $bg $tid " "$s"
./leader_exit 1.5 >le2.out &
bg=$!
sleep 0.3
t_run "-p --per-thread, zombie leader" 0 timeout 20 "$PTREC" record -q --per-thread -e "$EV" -o le2.data -p "$bg"
wait "$bg"
t_match "-p --per-thread, zombie leader: the live thread's sample" "^SAMPLE $bg $(sed -n 2p le2.out) " "$(sb le2.data)"

# 2. Attach modes describe what was there before: COMM, FORK and MMAP2 (with
#    build ids) of every target thread from /proc, and the images embedded.
./unames -w 1.5 >pp.out &
bg=$!
sleep 0.3
t_run "-p: existing mappings" 0 timeout 20 "$PTREC" record -e "$EV" -o pp.data -p "$bg"
wait "$bg"
report=$err
s=$(sb pp.data)
t_match "-p: COMM of the running process" "^COMM $bg $bg unames" "$s"
t_match "-p: MMAP2 of its executable, with build id" "^MMAP $bg $bg .* r-x $T_TMP/unames build-id [0-9a-f]{40}" "$s"
t_match "-p: MMAP2 of libc" "^MMAP $bg $bg .* r-x /.*libc\\.so[^ ]* build-id" "$s"
t_match "-p: FORK of the process from its parent" "^FORK $bg $bg from $$/$$" "$s"
t_match "-p: the images are embedded (report)" ' [2-9][0-9]* images embedded' "$report"
t_match "-p: IMAGE chunks in the file" 'IMAGE +[2-9][0-9]* chunks' "$("$PTDUMP" --info pp.data)"
./unames -w 1.5 >tt.out &
bg=$!
sleep 0.3
t_run "-t: existing mappings" 0 timeout 20 "$PTREC" record -q -e "$EV" -o tt.data -t "$bg"
wait "$bg"
s=$(sb tt.data)
t_match "-t: COMM of the thread" "^COMM $bg $bg unames" "$s"
t_match "-t: MMAP2 of its executable" "^MMAP $bg $bg .* r-x $T_TMP/unames" "$s"
sleep 3 &
bg=$!
t_run "-a: existing processes" 0 "$PTREC" record -q -a -d 0.3 -e "$EV" -o as.data
s=$(sb as.data)
t_match "-a: COMM of a process started before" "^COMM $bg $bg sleep" "$s"
t_match "-a: MMAP2 of its executable" "^MMAP $bg $bg .* r-x $(readlink -f "$(command -v sleep)")" "$s"
kill "$bg" 2>/dev/null; wait "$bg" 2>/dev/null

# 9. -C LIST with a workload records those CPUs whole, as perf does: another
#    process on CPU 0 is recorded. --per-thread gives way to -C and -a alike.
after_go go2 taskset -c 0 ./unames >c0.out
bg=$!
t_run "-C 0 -- sleep" 0 "$PTREC" record -q -C 0 -e "$EV" -o c0.data -- sh -c 'touch go2; sleep 1'
wait "$bg"
other=$(head -n 1 c0.out)
s=$(sb c0.data)
t_eq "-C 0 -- sleep: the other process on CPU 0 recorded" 3 \
	"$(awk -v p="$other" '$1 == "SAMPLE" && $2 == p' <<<"$s" | wc -l)"
t_nomatch "-C 0: nothing from CPU 1" '^\s*[0-9.]+ \[00[1-9]\] .* SAMPLE' "$("$PTDUMP" --sideband c0.data)"
t_run "-C 0 alone: CPU 0 whole, like -a -C 0" 0 "$PTREC" record -q -C 0 -d 0.3 -e "$EV" -o c1.data
t_match "-C 0 alone: per-CPU streams" 'streams: +per CPU' "$("$PTDUMP" --info c1.data)"
t_run "--per-thread -C 0 -- CMD" 7 "$PTREC" record -q --per-thread -C 0 -e "$EV" -o pc.data -- ./unames
t_match "--per-thread -C 0: says -C wins" '--per-thread is ignored: -C records whole CPUs' "$err"
t_match "--per-thread -C 0: per-CPU streams" 'streams: +per CPU' "$("$PTDUMP" --info pc.data)"
t_run "--per-thread -a -d 0.2" 0 "$PTREC" record -q --per-thread -a -d 0.2 -e "$EV" -o pa.data
t_match "--per-thread -a: the same message" '--per-thread is ignored: -a records whole CPUs' "$err"
t_run "-p --per-thread -C 0" 0 "$PTREC" record -q --per-thread -C 0 -e "$EV" -o pp2.data -p $$ -d 0.2
t_match "-p --per-thread -C 0: says -C is ignored" '-C is ignored' "$err"

# 7. With -C, sideband comes from every online CPU (each its own data ring), as
#    perf tracks system-wide for a CPU list: a program that exec'd on another
#    CPU still has its comm and mmaps.
if [ "$NCPU" -ge 2 ]; then
	t_run "-C 0 -- taskset -c 1" 7 "$PTREC" record -q -C 0 -e "$EV" -o tk.data -- taskset -c 1 ./unames
	main=$(grep -E '^[0-9]+$' <<<"$out")
	s=$(sb tk.data)
	t_match "-C 0: the exec on CPU 1 is in the sideband" "^COMM $main $main unames \\(exec\\)" "$s"
	t_match "-C 0: the mmap on CPU 1 is in the sideband" "^MMAP $main $main .* r-x $T_TMP/unames" "$s"
	t_eq "-C 0: no sample from CPU 1" 0 "$(awk -v p="$main" '$1 == "SAMPLE" && $2 == p' <<<"$s" | wc -l)"
else
	t_skip "-C sideband from every CPU" "needs two CPUs"
fi

# 4. Default ring sizes fit the unprivileged mlock budget: perf_event_mlock_kb
#    lowered for the test (restored on exit), a 64 KiB RLIMIT_MEMLOCK, an
#    unprivileged user; the defaults follow the limit as perf's do.
if command -v setpriv >/dev/null && [ -w /proc/sys/kernel/perf_event_mlock_kb ]; then
	mlock_old=$(cat /proc/sys/kernel/perf_event_mlock_kb)
	trap 'echo "$mlock_old" >/proc/sys/kernel/perf_event_mlock_kb; t_cleanup' EXIT
	echo 132 >/proc/sys/kernel/perf_event_mlock_kb
	chmod 777 "$T_TMP"
	nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups bash -c 'ulimit -l 64; exec "$@"' sh "$@"; }
	t_run "unprivileged, lowered mlock limit: default rings fit" 0 nobody "$PTREC" record -q -e cpu-clock:u -o "$T_TMP/ml.data" -- true
	t_match "unprivileged: the recording is complete" 'complete \(' "$("$PTDUMP" --info "$T_TMP/ml.data" 2>&1)"
	t_run "unprivileged: 512K rings exceed the limit" 1 nobody "$PTREC" record -q -m 512K -e cpu-clock:u -o "$T_TMP/ml2.data" -- true
	t_match "unprivileged: the message names the limit" 'perf_event_mlock_kb is 132' "$err"
	echo "$mlock_old" >/proc/sys/kernel/perf_event_mlock_kb
else
	t_skip "mlock budget" "needs setpriv and a writable perf_event_mlock_kb"
fi

# 5. A CPU the machine does not have: said so, not "bad attributes".
bad=$(( $(sed 's/.*-//; s/.*,//' /sys/devices/system/cpu/possible) + 1 ))
t_run "-C beyond the possible CPUs" 1 "$PTREC" record -q -C "$bad" -e "$EV" -o x.data -- true
t_match "-C beyond: names the CPU" "CPU $bad does not exist here" "$err"
t_nomatch "-C beyond: not blamed on the attributes" 'attributes' "$err"

# 6. Throttling: with perf_event_max_sample_rate lowered (restored on exit), a
#    10 us cpu-clock gets at most one overflow a tick; the kernel logs
#    PERF_RECORD_THROTTLE and the report counts them per event.
if [ -w /proc/sys/kernel/perf_event_max_sample_rate ]; then
	cc -O1 -o uname_loop "$SRC/uname_loop.c" || t_fail "build uname_loop"
	rate_old=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
	mlock_old=${mlock_old:-$(cat /proc/sys/kernel/perf_event_mlock_kb)}
	trap 'echo "$rate_old" >/proc/sys/kernel/perf_event_max_sample_rate; echo "$mlock_old" >/proc/sys/kernel/perf_event_mlock_kb; t_cleanup' EXIT
	echo 100 >/proc/sys/kernel/perf_event_max_sample_rate
	t_run "throttled event" 0 "$PTREC" record -e cpu-clock/period=10000/ -o th.data -- ./uname_loop 2000000
	echo "$rate_old" >/proc/sys/kernel/perf_event_max_sample_rate
	n=$(sed -n 's/.*event cpu-clock\/period=10000\/ was throttled \([0-9]*\) times.*/\1/p' <<<"$err")
	t_match "throttled: reported with a count" '^[1-9][0-9]*$' "$n"
	samples=$(sb th.data | grep -c '^SAMPLE')
	# One overflow a tick, each followed by its throttle: about as many as samples.
	t_eq "throttled: about one throttle per sample" 1 "$(( ${n:-0} >= samples / 2 && ${n:-0} <= samples + 2 ))"
	t_run "not throttled at the normal rate" 0 "$PTREC" record -e syscalls:sys_enter_newuname -o nt.data -- ./uname_loop 1000
	t_nomatch "normal rate: no throttle warning" 'throttled' "$err"
else
	t_skip "throttling" "perf_event_max_sample_rate is not writable"
fi
t_done
