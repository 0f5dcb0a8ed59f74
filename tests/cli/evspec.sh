#!/usr/bin/env bash
# `ptrec list` and event-spec diagnostics as users see them: the real PMUs and
# tracepoints of this machine, exact error output with the caret under the
# bad column, fixture trees for intel_pt and cs_etm, and tracefs mounting.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)

fx=$T_TMP/fx
fx_bare=$T_TMP/fx-bare
PTREC=$PTREC sh "$top/tests/fixtures/mksysroot.sh" "$fx" || { t_fail "fixture"; t_done; exit; }
PTREC=$PTREC sh "$top/tests/fixtures/mksysroot.sh" "$fx_bare" --without intel_pt,cs_etm,tracefs ||
	{ t_fail "fixture bare"; t_done; exit; }

# ---- help and usage ----
t_run "list --help" 0 "$PTREC" list --help
t_match "help names the modes" "--names KIND" "$out"
t_run "list bad option" 2 "$PTREC" list --bogus
t_match "bad option message" "unknown option '--bogus'" "$err"
t_run "names without kind" 2 "$PTREC" list --names
t_run "names bad kind" 2 "$PTREC" list --names widgets
t_match "names bad kind message" "not 'widgets'" "$err"
t_run "-e with glob" 2 "$PTREC" list -e cycles 'sched*'

# ---- the real machine ----
real_pmus=$(ls /sys/bus/event_source/devices | sort)
t_run "list names pmus" 0 "$PTREC" list --names pmus
t_eq "pmu names are sysfs's" "$real_pmus" "$(printf '%s\n' "$out" | grep -vx pt | sort)"
t_run "list" 0 "$PTREC" list
for p in $real_pmus; do
	type=$(cat /sys/bus/event_source/devices/$p/type)
	t_match "list shows $p with its type" "^  $p \\(type $type[,)]" "$out"
done
if [ -e /sys/bus/event_source/devices/uprobe/format/retprobe ]; then
	t_match "list shows uprobe terms" "retprobe +$(cat /sys/bus/event_source/devices/uprobe/format/retprobe)" "$out"
fi
t_match "list shows generic events" "^  cpu-clock +software event" "$out"
t_match "list shows aux terms" "aux-action=\\(start-paused\\|pause\\|resume\\)" "$out"

if t_is_root; then
	tdir=/sys/kernel/tracing
	[ -d $tdir/events ] || tdir=/sys/kernel/debug/tracing
	t_run "names tracepoints" 0 "$PTREC" list --names tracepoints
	want=$(cd $tdir/events && for f in */*/id; do d=${f%/id}; echo "${d%%/*}:${d#*/}"; done | LC_ALL=C sort)
	t_eq "tracepoints are tracefs's" "$want" "$(printf '%s\n' "$out" | LC_ALL=C sort)"
	t_run "list one tracepoint" 0 "$PTREC" list 'syscalls:sys_enter_newuname'
	t_eq "glob keeps one tracepoint" "Tracepoints (SUBSYSTEM:NAME):
  syscalls:sys_enter_newuname" "$(printf '%s\n' "$out" | sed '/^$/d')"
	id=$(cat $tdir/events/syscalls/sys_enter_newuname/id)
	t_run "dump real tracepoint" 0 "$PTREC" list -e 'syscalls:sys_enter_newuname/period=3/u'
	t_match "tracepoint id from tracefs" "config +$(printf '%#x' "$id")\$" "$out"
	t_match "tracepoint syscall number" "syscall 63 enter" "$out"

	# tracefs not mounted: ptrec mounts it (in a private mount namespace here)
	if unshare -m true 2>/dev/null; then
		out=$(unshare -m sh -c 'umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null
			[ -e /sys/kernel/tracing/events ] && echo still-mounted
			"$1" list --names tracepoints | grep -c "^syscalls:sys_enter_newuname$"
			grep -c " /sys/kernel/tracing tracefs " /proc/self/mounts' sh "$PTREC" 2>&1)
		t_eq "ptrec mounts tracefs when needed" "1
1" "$out"
	else
		t_skip "tracefs mount" "unshare -m is not available"
	fi
else
	t_skip "real tracepoints" "needs root"
fi

# A uprobe on a shared library function, resolved through .dynsym: the file
# offset must match what nm -D and readelf -l say.
libc=$(ldd "$PTREC" | sed -n 's,.*libc\.so\.6 => \([^ ]*\) .*,\1,p' | head -n 1)
if [ -n "$libc" ] && [ -e /sys/bus/event_source/devices/uprobe ]; then
	libc=$(readlink -f "$libc")
	vaddr=$(nm -D --defined-only "$libc" | awk '$3 == "getpid" || $3 ~ /^getpid@@/ { print $1; exit }')
	off=
	while read -r kind o v _ s _; do
		[ "$kind" = LOAD ] || continue
		if (( 16#$vaddr >= v && 16#$vaddr < v + s )); then
			off=$(printf '%#x' $(( 16#$vaddr - v + o )))
		fi
	done < <(readelf -lW "$libc")
	t_run "uprobe on libc" 0 "$PTREC" list -e "uprobe:$libc:getpid"
	t_match "uprobe file offset = readelf's" "file offset $off\$" "$out"
	t_match "uprobe config2 = file offset" "config2 +$off\$" "$out"
	t_run "uprobe in PATH" 0 env PATH="$(dirname "$PTREC"):$PATH" "$PTREC" list -e "uprobe:ptrec:main"
	t_match "uprobe in PATH resolved" "uprobe $(readlink -f "$PTREC"):main\+0 vaddr" "$out"
	t_run "uprobe bad symbol" 2 "$PTREC" list -e "uprobe:$libc:getpdi"
	t_match "uprobe did you mean" "hint: did you mean 'getpid'" "$err"
else
	t_skip "uprobe on libc" "no libc path or no uprobe PMU"
fi

# ---- kernel function probes ----
kf=$(awk '$2 ~ /^[tT]$/ && $3 == "__x64_sys_newuname" { print $3; exit }' /proc/kallsyms 2>/dev/null)
if [ -n "$kf" ]; then
	t_run "kprobe on a kernel function" 0 "$PTREC" list -e "kprobe:$kf+8"
	t_match "kprobe: the function and offset" "kprobe at $kf\+8: a tracefs kprobe event" "$out"
	t_run "kretprobe on a kernel function" 0 "$PTREC" list -e "kretprobe:$kf"
	t_match "kretprobe: the function" "kretprobe of $kf\+0" "$out"
	t_run "kprobe: no such kernel function" 2 "$PTREC" list -e 'kprobe:no_such_function_at_all'
	t_match "kprobe: the message names kallsyms" "no kernel function no_such_function_at_all in /proc/kallsyms" "$err"
	t_run "kretprobe with an offset" 2 "$PTREC" list -e "kretprobe:$kf+4"
	t_match "kretprobe with an offset: the message" "a kretprobe takes no offset" "$err"
	t_run "kprobe under the user-mode tracer" 2 "$PTREC" list --emulate -e "{intel_pt//u,kprobe:$kf/aux-action=resume/}"
	t_match "kprobe under the user-mode tracer: the hint" "emulate=system" "$err"
	tfs=$(awk '$3 == "tracefs" { print $2; exit }' /proc/mounts)
	if [ -n "$tfs" ] && [ ! -e "$tfs/kprobe_events" ]; then
		t_run "kprobe without kprobe_events" 1 "$PTREC" record -q -o kp.data -e "kprobe:$kf" -- true
		t_match "kprobe without kprobe_events: the hint" "CONFIG_KPROBE_EVENTS" "$err"
	elif [ -n "$tfs" ] && [ "$(id -u)" = 0 ]; then
		# One uname(1) makes one uname(2): one sample, and no probe left behind.
		t_run "kprobe records" 0 "$PTREC" record -q -o kp.data -e "kprobe:$kf" -- uname
		t_eq "kprobe: one sample per uname(2)" 1 "$("$PTDUMP" --sideband kp.data | grep -c SAMPLE)"
		t_eq "kprobe: the tracefs event is removed" 0 "$(grep -c ptrec_ "$tfs/kprobe_events")"
	fi
else
	t_skip "kernel function probes" "no __x64_sys_newuname in /proc/kallsyms"
fi

# ---- exact diagnostics ----
# No tracer on this machine (a VM): the message names what exists.
if [ ! -e /sys/bus/event_source/devices/intel_pt ] && [ ! -e /sys/bus/event_source/devices/cs_etm ]; then
	t_run "no intel_pt" 2 "$PTREC" list -e 'intel_pt//u'
	t_eq "no intel_pt message" "ptrec: error: bad event: no intel_pt PMU on this machine
  intel_pt//u
  ^
  hint: AUX-capable PMUs here: none; see 'ptrec check', or check the spec for the software tracer with 'ptrec list --emulate -e SPEC'" "$err"
fi
t_run "bare: no intel_pt" 2 env PTREC_SYSROOT="$fx_bare" "$PTREC" list -e 'cycles,{intel_pt/aux-start-paused/k,cycles}'
t_eq "bare: caret at column 8" "ptrec: error: bad event: no intel_pt PMU on this machine
  cycles,{intel_pt/aux-start-paused/k,cycles}
          ^
  hint: AUX-capable PMUs here: none; see 'ptrec check', or check the spec for the software tracer with 'ptrec list --emulate -e SPEC'" "$err"

# An overlong spec: about 100 columns around the caret, not the whole text twice.
long="intel_pt/$(printf 'a%.0s' $(seq 1 5000))=1/u"
t_run "long spec: refused" 2 "$PTREC" list --emulate -e "$long"
t_eq "long spec: three lines of context and a hint" 4 "$(printf '%s\n' "$err" | wc -l)"
t_eq "long spec: no line much wider than 100 columns" 0 \
	"$(printf '%s\n' "$err" | sed 1d | awk 'length($0) > 120' | wc -l)"
t_match "long spec: the cut marked" '^  intel_pt/a+\.\.\.$' "$(printf '%s\n' "$err" | sed -n 2p)"
t_match "long spec: the caret under the term" '^ {11}\^$' "$(printf '%s\n' "$err" | sed -n 3p)"

export PTREC_SYSROOT=$fx
# An error far into a long spec: the window follows the caret.
long="$(printf 'cycles,%.0s' $(seq 1 100))bogus_ev"
t_run "long spec, late error: refused" 2 "$PTREC" list -e "$long"
line=$(printf '%s\n' "$err" | sed -n 2p) caret=$(printf '%s\n' "$err" | sed -n 3p)
t_match "long spec, late error: starts with ..." '^  \.\.\.' "$line"
t_eq "long spec, late error: the caret under the bad event" "bogus_ev" \
	"$(printf '%s' "${line:$((${#caret} - 1))}" | cut -c1-8)"
t_run "range error" 2 "$PTREC" list -e 'intel_pt/psb_period=16/'
t_eq "range error text" "ptrec: error: bad event: value 16 is out of range for psb_period (4 bits: 0..15)
  intel_pt/psb_period=16/
                      ^" "$err"
t_run "did you mean term" 2 "$PTREC" list -e 'intel_pt/cyc,mtc_perod=3/u'
t_eq "did you mean term text" "ptrec: error: bad event: unknown term 'mtc_perod' for intel_pt
  intel_pt/cyc,mtc_perod=3/u
               ^
  hint: did you mean 'mtc_period'?" "$err"
t_run "bad aux-action" 2 "$PTREC" list -e 'intel_pt/aux-action=paused/'
t_eq "bad aux-action text" "ptrec: error: bad event: bad aux-action 'paused'
  intel_pt/aux-action=paused/
                      ^
  hint: did you mean 'pause'? valid values: start-paused, pause, resume" "$err"
# an error found after all -e are read points into the right one
t_run "finish error" 2 "$PTREC" list -e 'intel_pt//k' -e '{cycles,syscalls:sys_enter_newuname/aux-resume/}'
t_eq "finish error text" "ptrec: error: bad event: events with aux-action must have an AUX area event as group leader
  {cycles,syscalls:sys_enter_newuname/aux-resume/}
                                      ^
  hint: the leader of this group is 'cycles'; put the tracer first: {intel_pt/aux-start-paused/,...}" "$err"
t_run "trailing comma" 2 "$PTREC" list -e 'cycles,'
t_eq "trailing comma text" "ptrec: error: bad event: expected an event after the trailing ','
  cycles,
         ^" "$err"

# ---- fixture trees: intel_pt and cs_etm ----
t_run "window" 0 "$PTREC" list -e '{intel_pt/aux-start-paused/k,syscalls:sys_enter_newuname/aux-resume/,syscalls:sys_exit_newuname/aux-pause/}'
t_match "window: one group" "^3 events in 1 group" "$out"
t_match "window: config" "config +0x300e601" "$out"
t_eq "window: aux bits" "aux_start_paused 1
aux_resume 1
aux_pause 1" "$(printf '%s\n' "$out" | grep -E '^ +aux_(start_paused|pause|resume) ' | tr -s ' ' | sed 's/^ //')"
t_run "regroup" 0 "$PTREC" list -e 'pt/aux-action=start-paused/u' -e 'instructions/period=50000,aux-action=resume/u' -e 'cycles' -e 'instructions/period=100000,aux-action=pause/u'
t_match "regroup: tracer group" "group 0: leader #0, 3 members" "$out"
t_match "regroup: cycles alone" "group 1: leader #3, 1 member" "$out"
t_run "list intel_pt" 0 "$PTREC" list 'intel_pt'
t_match "intel_pt terms" "psb_period +config:24-27" "$out"
t_match "intel_pt aux" "intel_pt \\(type 10, AUX tracer, 2 address filters\\)" "$out"
t_run "names terms cs_etm" 0 "$PTREC" list --names terms cs_etm
t_match "cs_etm terms" "^sinkid$" "$out"
t_match "cs_etm alias" "^autofdo$" "$out"
t_run "cs_etm sink" 0 "$PTREC" list -e 'cs_etm/@tmc_etr0,timestamp/k'
t_match "cs_etm sink config2" "config2 +0x7a3b9e12" "$out"
t_run "list pt names" 0 "$PTREC" list --names pmus 'pt'
t_eq "pt alias listed" "pt" "$out"

# ---- tracefs missing ----
export PTREC_SYSROOT=$fx_bare
t_run "no tracefs: names" 1 "$PTREC" list --names tracepoints
t_match "no tracefs: says how" "tracefs is not mounted; as root: mount -t tracefs nodev /sys/kernel/tracing" "$err"
t_run "no tracefs: list still works" 0 "$PTREC" list
t_match "no tracefs: warning" "warning: tracepoints are not listed: tracefs is not mounted" "$err"
t_run "no tracefs: tracepoint" 2 "$PTREC" list -e 'sched:sched_switch'
t_match "no tracefs: tracepoint message" "tracefs is not mounted, so tracepoint 'sched:sched_switch' cannot be resolved" "$err"

# ---- --emulate ----
t_run "emulate names pmus" 0 "$PTREC" list --emulate --names pmus
t_match "emulate lists intel_pt" "^intel_pt$" "$out"
t_match "emulate lists pt" "^pt$" "$out"
t_match "emulate lists the software cs_etm" "^cs_etm$" "$out"
t_run "emulate sysfs cs_etm" 0 "$PTREC" list --emulate --sysfs cs_etm
t_eq "emulate cs_etm: the kernel's terms the ETMv4 tracer implements" "type 2113929218
nr_addr_filters 8
format/contextid1 config:14
format/contextid config:14
format/timestamp config:28" "$out"
t_run "emulate sysfs" 0 "$PTREC" list --emulate --sysfs intel_pt
t_match "emulate format" "^format/psb_period config:24-27$" "$out"
t_match "emulate caps" "^caps/ptwrite 0$" "$out"
t_run "emulate window" 0 "$PTREC" list --emulate -e '{intel_pt/aux-start-paused/u,syscalls:sys_enter_newuname/aux-resume/,syscalls:sys_exit_newuname/aux-pause/}'
t_match "emulate window emulated" "emulated: software tracer" "$out"
t_run "emulate k" 2 "$PTREC" list --emulate -e 'intel_pt//k'
t_eq "emulate k text" "ptrec: error: bad event: emulation traces user space only; use u
  intel_pt//k
            ^
  hint: the software tracer runs the program in user mode; drop the k (and h) modifier" "$err"
t_run "emulate tracepoints" 0 "$PTREC" list --emulate --names tracepoints 'syscalls:sys_e*_newuname'
t_eq "emulate tracepoints without tracefs" "syscalls:sys_enter_newuname
syscalls:sys_exit_newuname" "$out"
unset PTREC_SYSROOT

t_done
