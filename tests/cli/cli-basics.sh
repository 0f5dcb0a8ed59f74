#!/usr/bin/env bash
# What a person at the shell meets first: versions, and messages that say why
# nothing came out or what is missing, without pointing at text the user did
# not type.
. "$(dirname "$0")/lib.sh"
cd "$T_TMP" || exit 1

t_run "ptdump --version" 0 "$PTDUMP" --version
t_match "ptdump --version: name and version" '^ptdump [0-9]+\.[0-9]+\.[0-9]+$' "$out"
dv=${out#ptdump }
t_run "ptdump -V" 0 "$PTDUMP" -V
t_run "ptrec --version" 0 "$PTREC" --version
t_eq "ptrec and ptdump report one version" "ptrec $dv" "$out"
t_run "ptdump --help lists --version" 0 "$PTDUMP" --help
t_match "ptdump --help: --version" '-V, --version' "$out"

# ptrec list with a pattern nothing matches: says so, exit 1.
t_run "ptrec list 'zzqq*': nothing matches" 1 "$PTREC" list 'zzqq*'
t_match "... says nothing matches, and where to look" "nothing here matches zzqq\*.*" "$err"
t_eq "... prints no headings" "" "$out"
t_run "ptrec list 'cpu-cl*': a match" 0 "$PTREC" list 'cpu-cl*'
t_match "... lists cpu-clock" 'cpu-clock +software event' "$out"
if [ ! -e /sys/bus/event_source/devices/intel_pt ]; then
	t_run "ptrec list 'intel_pt*' where there is none" 1 "$PTREC" list 'intel_pt*'
	t_match "... says so" 'nothing here matches intel_pt' "$err"
fi

# The default event (the tracer) where there is none: no caret under text
# the user never typed.
if ! "$PTREC" check >/dev/null 2>&1; then
	t_run "record without -e and no tracer" 2 "$PTREC" record -o x.data -- true
	t_match "... names the default and why" 'no -e given, and the default event, the tracer \(pt//\)' "$err"
	t_nomatch "... no caret line" '^ +\^' "$err"
fi

# ptrec check as an unprivileged user where tracefs is mounted but closed.
if t_is_root && command -v setpriv >/dev/null && [ "$(stat -c %a /sys/kernel/tracing 2>/dev/null)" = 700 ] &&
	[ -d /sys/kernel/tracing/events ]; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$PTREC" check >chk.out 2>&1
	t_match "unprivileged check: tracefs unreadable, not 'not mounted'" 'tracefs +unreadable' "$(cat chk.out)"
	t_nomatch "... does not say not mounted" 'not mounted' "$(cat chk.out)"
else
	t_skip "unprivileged check" "needs root, setpriv and a mounted tracefs of mode 700"
fi
# A decoded view that would be empty says why, with exit status 3.
if t_is_root; then
	"$PTREC" record -q -e syscalls:sys_enter_getpid -o tp.data -- true
	t_run "tracepoints only: --call-trace" 3 "$PTDUMP" --call-trace tp.data
	t_match "... says there is no trace, and where to look" 'no trace data: .* see --sideband' "$err"
fi
if command -v qemu-x86_64 >/dev/null; then
	"$PTREC" record -q --emulate -o emu.data -- "$(dirname "$PTDUMP")/progs/calls" >/dev/null 2>&1
	t_run "--pid not in the recording" 3 "$PTDUMP" --call-trace --pid 999999 emu.data
	t_match "... says so" 'no such process in this recording' "$err"
	t_run "--tid not in the recording" 3 "$PTDUMP" --call-trace --tid 999999 emu.data
	t_run "--cpu on per-thread streams" 3 "$PTDUMP" --branches --cpu 1 emu.data
	t_match "... says the streams are per thread" 'per-thread streams' "$err"
	t_run "--time outside the recording" 3 "$PTDUMP" --insn-trace --time 99999,99999.5 emu.data
	t_match "... gives the recording's span" 'outside the recording, which spans [0-9.]+ to [0-9.]+ s' "$err"
	t_run "a filter that matches: exit 0" 0 "$PTDUMP" --call-trace --time ,1000000 emu.data
	t_match "... and prints" 'calls' "$out"
fi

t_done
