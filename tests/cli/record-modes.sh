#!/usr/bin/env bash
# Recording modes: files are never lost (a failed recording leaves the
# previous file, a started one moves it to FILE.old), -o - streams the trace
# to standard output. Recordings with the software tracer are compared with
# its ground truth.
. "$(dirname "$0")/src/paths.sh"
if ! command -v qemu-x86_64 >/dev/null; then
	t_skip "record modes" "qemu-x86_64 is not installed (apt-get install qemu-user)"
	t_done; exit
fi
cd "$T_TMP" || exit 1
if ! cc -O2 -g -Wall -Wextra -Werror -o decode_truth "$SRC/decode_truth.c" -lcapstone -lelf 2>cc.err; then
	t_fail "build decode_truth" "$(cat cc.err)"
	t_done; exit
fi
. "$SRC/truth.sh"

# ---- 1. files are never lost ----

mkdir keep && cd keep || exit 1
t_run "a first recording" 0 "$PTREC" record --emulate -q -o t.data -- "$PROGS/calls" 2
sum0=$(md5sum <t.data)
size0=$(stat -c %s t.data)
# after_failure TITLE: t.data is the first recording's, nothing else is left.
after_failure() {
	t_eq "$1: the previous file is untouched" "$sum0" "$(md5sum <t.data 2>/dev/null)"
	t_eq "$1: no FILE.old, no temporary file" "t.data" "$(ls -A | tr '\n' ' ' | sed 's/ $//')"
}
t_run "bad event spec fails" 2 "$PTREC" record --emulate -q -o t.data -e 'pt/nosuchterm/u' -- "$PROGS/calls" 2
after_failure "bad event spec"
t_run "missing qemu fails" 1 "$PTREC" record --emulate -q --qemu /nonexistent -o t.data -- "$PROGS/calls" 2
t_match "missing qemu: said so" 'cannot find /nonexistent' "$err"
after_failure "missing qemu"
t_run "missing program fails" 1 "$PTREC" record --emulate -q -o t.data -- ./no-such-program
after_failure "missing program"
t_run "missing plugin fails" 1 env PTREC_PLUGIN=/nonexistent.so "$PTREC" record --emulate -q -o t.data -- "$PROGS/calls" 2
after_failure "missing plugin"
echo 'not a program' >text && chmod +x text
t_run "a program that is no ELF fails" 1 "$PTREC" record --emulate -q -o t.data -- ./text
rm -f text
after_failure "no ELF"
if t_is_root && [ -e /sys/kernel/tracing/events/syscalls ]; then
	# The kernel path: events open, then the program cannot be run.
	t_run "kernel path: missing program fails" 1 "$PTREC" record -q -o t.data \
		-e syscalls:sys_enter_getpid -- ./no-such-program
	after_failure "kernel path: missing program"
	t_run "kernel path: offline CPU fails" 1 "$PTREC" record -q -o t.data -C 4095 \
		-e syscalls:sys_enter_getpid -- true
	after_failure "kernel path: CPU 4095"
else
	t_skip "kernel path failures" "needs root and tracefs syscall events"
fi
# A directory where the file should be: refused, the directory as it was.
mkdir d.data && touch d.data/x
t_run "a directory as FILE fails" 1 "$PTREC" record --emulate -q -o d.data -- "$PROGS/calls" 2
t_match "a directory: said so" 'd.data: Is a directory' "$err"
t_eq "a directory: left as it was" "x" "$(ls d.data)"
rm -r d.data
after_failure "directory"
# EACCES: an unprivileged user in a directory it cannot write to.
if t_is_root && runuser -u nobody -- test -x "$PTREC"; then
	mkdir ro && cp t.data ro/t.data && chown -R nobody ro && chmod 0555 ro
	t_run "EACCES fails" 1 runuser -u nobody -- "$PTREC" record --emulate -q -o ro/t.data -- "$PROGS/calls" 2
	t_match "EACCES: said so" 'Permission denied' "$err"
	t_eq "EACCES: the previous file is untouched" "$sum0" "$(md5sum <ro/t.data)"
	t_eq "EACCES: nothing else in the directory" "t.data" "$(ls -A ro)"
	chmod 0755 ro && rm -r ro
else
	t_skip "EACCES" "needs root (runs ptrec as nobody) and a ptrec nobody can run"
fi

# A recording that starts moves the previous file to FILE.old.
t_run "a second recording" 0 "$PTREC" record --emulate -q -o t.data -- "$PROGS/calls" 1
t_eq "the previous file is now t.data.old" "$sum0" "$(md5sum <t.data.old)"
t_match "the new file is complete" 'complete \(' "$("$PTDUMP" --info t.data)"
sum1=$(md5sum <t.data)
t_run "a third recording" 0 "$PTREC" record --emulate -q -o t.data -- "$PROGS/calls" 1
t_eq "t.data.old is replaced by the second" "$sum1" "$(md5sum <t.data.old)"
t_eq "mode 0600" "600" "$(stat -c %a t.data)"
# A workload that fails after starting still leaves its recording (status 3).
t_run "a failing workload's recording is kept" 3 "$PTREC" record --emulate -q -o t.data -- "$PROGS/forkexec"
t_match "the failing workload's file decodes" 'complete \(' "$("$PTDUMP" --info t.data)"
# A device is written as it is.
t_run "-o /dev/null" 0 "$PTREC" record --emulate -q -o /dev/null -- "$PROGS/calls" 1
t_eq "/dev/null is still a character device" "character special file" "$(stat -c %F /dev/null)"
cd .. || exit 1

# ---- 2. -o - ----

"$PTREC" record --emulate --emulate-truth p.truth -o - -- "$PROGS/calls" 2 >p.data 2>p.err
t_eq "-o - to a file: exit status" 0 "$?"
t_nomatch "-o -: no file named -" . "$(ls -A -- - 2>/dev/null)"
t_match "-o -: the report names standard output" 'to standard output' "$(cat p.err)"
t_match "-o -: the program's output went to standard error" '^calls [0-9]+' "$(cat p.err)"
if expect p; then check_calls "-o -: --call-trace = truth" p; else t_fail "-o -: truth" "$(cat p.sb.err p.dt.err)"; fi
"$PTREC" record --emulate -q -o - -- "$PROGS/calls" 1 2>/dev/null | cat >q.data
t_match "-o - into a pipe: the file is complete" 'complete \(' "$("$PTDUMP" --info q.data)"
# A terminal is refused (script(1) gives the command one).
if command -v script >/dev/null; then
	script -qec "$PTREC record --emulate -q -o - -- $PROGS/calls 1" /dev/null >tty.out 2>&1
	t_eq "-o - on a terminal: refused" 1 "$?"
	t_match "-o - on a terminal: said so" 'standard output is a terminal' "$(cat tty.out)"
else
	t_skip "-o - on a terminal" "script(1) is not installed"
fi

# ---- 3. --func and --syscall ----

WIN=$PROGS/window
# calls_of NAME: the call-ret trace without thread ids (two runs compare).
calls_of() { "$PTDUMP" --call-ret-trace "$1" 2>&1 | norm 1 | cut -f2-; }
"$PTREC" record --emulate -q --func window_fn --emulate-truth fw.truth -o fw.data -- "$WIN" 5 >fw.out 2>fw.err
t_eq "--func window_fn: records" 0 "$?"
record fe "pt/aux-action=start-paused/u" "uprobe:$WIN:window_fn/aux-action=resume/" \
	"uretprobe:$WIN:window_fn/aux-action=pause/" -- "$WIN" 5
t_eq "--func: the explicit uprobe spec records" 0 "$rec_status"
t_eq "--func window_fn = the explicit uprobe spec (decoded)" "$(calls_of fe.data)" "$(calls_of fw.data)"
t_match "--func: windows found" 'window_fn' "$(calls_of fw.data)"
if expect fw; then check_calls "--func window_fn: --call-ret-trace = truth" fw 1; else t_fail "--func: truth" "$(cat fw.sb.err fw.dt.err)"; fi
t_eq "--func: the windows are named after the function" 5 \
	"$("$PTDUMP" --call-ret-trace fw.data | grep -c '(resumed by window_fn)')"

# A static function (cmp, qsort's callback in calls), called from the C library.
"$PTREC" record --emulate -q --func cmp --emulate-truth fs.truth -o fs.data -- "$PROGS/calls" 2 >/dev/null 2>fs.err
t_eq "--func on a static function: records" 0 "$?"
if expect fs; then check_calls "--func cmp (static): --call-ret-trace = truth" fs 1; else t_fail "--func static: truth" "$(cat fs.sb.err fs.dt.err)"; fi
t_match "--func cmp: windows begin in cmp" $'tr strt\tcmp' "$("$PTDUMP" --call-ret-trace fs.data | norm 1 | cut -f2-)"

# A function of the C library, found without ldd; @libc narrows the search.
UNAME=$(command -v uname)
LIBC=$(readlink -f "$(ldd "$UNAME" | awk '/libc\.so/ { print $3; exit }')")
t_run "--func setlocale --dry-run" 0 "$PTREC" record --emulate -n --func setlocale -- uname -a
t_match "--func setlocale: found in ldd's libc" "uprobe:\"$LIBC\":setlocale/" "$out"
t_run "--func setlocale@libc --dry-run" 0 "$PTREC" record --emulate -n --func setlocale@libc -- uname -a
t_match "--func setlocale@libc: the same" "uprobe:\"$LIBC\":setlocale/" "$out"
"$PTREC" record --emulate -q --func setlocale --emulate-truth fl.truth -o fl.data -- uname -a >/dev/null 2>fl.err
t_eq "--func setlocale: records" 0 "$?"
if expect fl; then check_calls "--func setlocale: --call-ret-trace = truth" fl 1; else t_fail "--func setlocale: truth" "$(cat fl.sb.err fl.dt.err)"; fi

# A library found through DT_RUNPATH with $ORIGIN (no ldconfig, no LD_LIBRARY_PATH).
mkdir -p rp/lib
printf '%s\n' '__attribute__((noinline)) int libfn(int x) { return x * 7 + 1; }' >rp/lib.c
printf '%s\n' 'int libfn(int); int main(void) { int i, s = 0; for (i = 0; i < 3; i++) s += libfn(i); return s == 24 ? 0 : 1; }' >rp/main.c
if cc -shared -fPIC -o rp/lib/libwin.so rp/lib.c && cc -o rp/prog rp/main.c -Lrp/lib -lwin -Wl,--enable-new-dtags,-rpath,'$ORIGIN/lib'; then
	t_run "--func in a RUNPATH library" 0 "$PTREC" record --emulate -q --func libfn --emulate-truth fr.truth -o fr.data -- rp/prog
	t_eq "--func libfn: three windows" 3 "$("$PTDUMP" --call-ret-trace fr.data | grep -c '(resumed by libfn)')"
	if expect fr; then check_calls "--func libfn: --call-ret-trace = truth" fr 1; else t_fail "--func libfn: truth" "$(cat fr.sb.err fr.dt.err)"; fi
else
	t_fail "build the RUNPATH test program"
fi

# Misses: did you mean, an unknown object, no command.
t_run "--func misspelt" 2 "$PTREC" record --emulate -q --func window_f -o x.data -- "$WIN" 1
t_match "--func misspelt: did you mean" "did you mean 'window_fn'" "$err"
t_run "--func setlocal (a library function misspelt)" 2 "$PTREC" record --emulate -n --func setlocal -- uname
t_match "--func setlocal: did you mean setlocale" "did you mean 'setlocale'" "$err"
t_run "--func NAME@OBJ the program does not load" 2 "$PTREC" record --emulate -n --func f@libnothing -- uname
t_match "--func @libnothing: said so" "loads no object 'libnothing'" "$err"
t_run "--func without a command" 2 "$PTREC" record --emulate -n --func main
t_match "--func without a command: said so" 'without a command, give the object' "$err"
if [ -e rp/lib/libwin.so ]; then
	# A library the program does not load at start (as one it would dlopen()): by path.
	t_run "--func NAME@PATH outside the load list" 0 "$PTREC" record --emulate -n --func libfn@rp/lib/libwin.so -- "$WIN"
	t_match "--func NAME@PATH: that file" "uprobe:\"$T_TMP/rp/lib/libwin.so\":libfn/" "$out"
fi
t_run "--func with --syscall (user and kernel)" 2 "$PTREC" record -n --func main --syscall read -- true
t_run "--syscall with a bad name" 2 "$PTREC" record --emulate -n --syscall 'read,,write' -- true

# --syscall: the dry run shows the seed example's group, resolved (a fixture
# machine with intel_pt, as this test may run without trace hardware).
PTREC=$PTREC sh "$TOP/tests/fixtures/mksysroot.sh" fx --without cs_etm >/dev/null 2>&1 || t_fail "fixture"
t_run "--syscall newuname --dry-run" 0 env PTREC_SYSROOT="$T_TMP/fx" "$PTREC" record -n --syscall newuname -- uname
t_eq "--syscall: the seed example's spec" \
	"# --func/--syscall stand for: -e '{intel_pt/aux-start-paused/k,syscalls:sys_enter_newuname/aux-resume/,syscalls:sys_exit_newuname/aux-pause/}'" \
	"$(head -n1 <<<"$out")"
t_match "--syscall: one group of three" '^3 events in 1 group' "$(sed -n 2p <<<"$out")"
t_match "--syscall: the tracer starts paused, kernel only" 'aux_start_paused +1' "$out"
t_match "--syscall: exclude_user" 'exclude_user +1' "$out"
t_run "--syscall-user read,openat --dry-run" 0 env PTREC_SYSROOT="$T_TMP/fx" "$PTREC" record -n --syscall-user read,openat -- true
t_match "--syscall-user: u, two syscalls" "^# .*-e '\\{intel_pt/aux-start-paused/u,syscalls:sys_enter_read/aux-resume/,syscalls:sys_exit_read/aux-pause/,syscalls:sys_enter_openat/aux-resume/,syscalls:sys_exit_openat/aux-pause/\\}'" "$out"
# Under --emulate (user space only) --syscall records its trigger samples.
"$PTREC" record --emulate -q --syscall getpid --emulate-truth sy.truth -o sy.data -- "$WIN" 3 >/dev/null 2>sy.err
t_eq "--syscall under --emulate: records" 0 "$?"
t_match "--syscall under --emulate: says what it means" 'user space only' "$(cat sy.err)"
st=$("$PTDUMP" --stats sy.data)
t_eq "--syscall under --emulate: resume samples = the truth's resumes" "$(grep -c '^R ' sy.truth)" \
	"$(sed -n 's/^trigger syscalls:sys_enter_getpid.*: \([0-9]*\) samples$/\1/p' <<<"$st")"
t_eq "--syscall under --emulate: pause samples = the truth's pauses" "$(grep -c '^P ' sy.truth)" \
	"$(sed -n 's/^trigger syscalls:sys_exit_getpid.*: \([0-9]*\) samples$/\1/p' <<<"$st")"

# ---- 4. --filter: perf's syntax into the kernel's, the PMU's limit up front ----

# The fixture's intel_pt gets 2 address ranges (CPUID 0x14's count, as sysfs shows it).
echo 2 >"$T_TMP/fx/sys/bus/event_source/devices/intel_pt/caps/num_address_ranges"
FN_OFF=$(objdump -d -F "$WIN" | sed -n 's/^[0-9a-f]* <window_fn> (File Offset: 0x\([0-9a-f]*\)):$/\1/p')
FN_SIZE=$(nm -S "$WIN" | awk '$4 == "window_fn" { print $2 }')
FN_ADDR=$(nm "$WIN" | awk '$3 == "outside_fn" { print $1 }')
OUT_OFF=$(objdump -d -F "$WIN" | sed -n 's/^[0-9a-f]* <outside_fn> (File Offset: 0x\([0-9a-f]*\)):$/\1/p')
t_run "--filter 'filter FUNC @ OBJ' --dry-run" 0 env PTREC_SYSROOT="$T_TMP/fx" "$PTREC" record -n \
	-e intel_pt//u --filter "filter window_fn @ $WIN, start 0x$FN_ADDR@$WIN" -- "$WIN"
want=$(printf 'filter 0x%x/0x%x@%s,start 0x%x@%s' "0x$FN_OFF" "0x$FN_SIZE" "$(readlink -f "$WIN")" "0x$OUT_OFF" "$(readlink -f "$WIN")")
t_eq "--filter: the kernel's string, file offsets as objdump -F shows them" \
	"# --filter: intel_pt gets the address filters '$want' (2 of 2 address ranges)" "$(head -n1 <<<"$out")"
t_run "--filter: 3 ranges on a PMU with 2" 1 env PTREC_SYSROOT="$T_TMP/fx" "$PTREC" record -n \
	-e intel_pt//u --filter "filter window_fn @ $WIN" --filter "filter outside_fn @ $WIN,stop main @ $WIN" -- "$WIN"
t_match "--filter: the limit named" 'intel_pt on this CPU has 2 address ranges; 3 given' "$err"
t_run "--filter ADDR/SIZE range" 0 env PTREC_SYSROOT="$T_TMP/fx" "$PTREC" record -n \
	-e intel_pt//u --filter "filter 0x$FN_ADDR / 0x10 @ $WIN" -- "$WIN"
t_match "--filter ADDR/SIZE: the address as a file offset, the size as given" \
	"'filter 0x$OUT_OFF/0x10@" "$out"
t_run "--filter: a misspelt function" 2 env PTREC_SYSROOT="$T_TMP/fx" "$PTREC" record -n \
	-e intel_pt//u --filter "filter window_f @ $WIN" -- "$WIN"
t_match "--filter: did you mean" "did you mean 'window_fn'" "$err"
t_run "--filter: a bad action" 2 env PTREC_SYSROOT="$T_TMP/fx" "$PTREC" record -n \
	-e intel_pt//u --filter "trace main @ $WIN" -- "$WIN"
t_match "--filter: the actions named" "expected 'filter', 'start' or 'stop'" "$err"
t_run "--filter: start takes no size" 2 env PTREC_SYSROOT="$T_TMP/fx" "$PTREC" record -n \
	-e intel_pt//u --filter "start main/4 @ $WIN" -- "$WIN"
t_run "--filter: a kernel symbol is not looked up" 2 env PTREC_SYSROOT="$T_TMP/fx" "$PTREC" record -n \
	-e intel_pt//k --filter "filter do_sys_open" -- true
t_run "--filter: a kernel range" 0 env PTREC_SYSROOT="$T_TMP/fx" "$PTREC" record -n \
	-e intel_pt//k --filter "filter 0xffffffff81000000/0x1000" -- true
t_match "--filter: a kernel range passed on" "'filter 0xffffffff81000000/0x1000'" "$out"
echo 0 >"$T_TMP/fx/sys/bus/event_source/devices/intel_pt/caps/num_address_ranges"
t_run "--filter on a PMU without address ranges" 1 env PTREC_SYSROOT="$T_TMP/fx" "$PTREC" record -n \
	-e intel_pt//u --filter "filter window_fn @ $WIN" -- "$WIN"
t_match "--filter: no ranges named" 'intel_pt on this CPU has 0 address ranges; 1 given' "$err"
# cs_etm has no caps/num_address_ranges: its nr_addr_filters (8 in the fixture) counts.
PTREC=$PTREC sh "$TOP/tests/fixtures/mksysroot.sh" fxe >/dev/null 2>&1 || t_fail "fixture with cs_etm"
t_run "--filter on cs_etm" 0 env PTREC_SYSROOT="$T_TMP/fxe" "$PTREC" record -n \
	-e cs_etm//u --filter "filter window_fn @ $WIN" -- "$WIN"
t_match "--filter on cs_etm: its nr_addr_filters" '\(1 of 8 address ranges\)' "$out"
t_run "--filter under --emulate=system" 2 "$PTREC" record --emulate=system -n -e intel_pt//k \
	--filter "filter 0xffffffff81000000/0x100" -- true
t_match "--filter under --emulate=system: said so, with the window to use" \
	'whole-system software tracer does not apply address filters.*kprobe:FUNCTION' "$(tr '\n' ' ' <<<"$err")"
# The software tracer's intel_pt has 2 ranges, whatever the host (emulate-filter.sh records).
t_run "--filter under --emulate" 0 "$PTREC" record --emulate -n --filter "filter window_fn @ $WIN" -- "$WIN"
t_match "--filter under --emulate: the software tracer's ranges" '\(1 of 2 address ranges\)' "$out"

t_done
