#!/usr/bin/env bash
# ptrec check against the kernel's own answers, asked by an independent probe.
. "$(dirname "$0")/lib.sh"
cc -O1 -o "$T_TMP/auxprobe" "$(dirname "$0")/src/auxprobe.c" || { t_fail "build probe"; t_done; exit; }
read -r plain paused < <("$T_TMP/auxprobe")

"$PTREC" check --json >"$T_TMP/c.json"
rc=$?
j=$(cat "$T_TMP/c.json")
t_match "json: one object" '^\{' "$j"
if command -v python3 >/dev/null; then
	t_run "json parses" 0 python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T_TMP/c.json"
fi
if [ "$plain" = 0 ] && [ "$paused" = 95 ]; then
	t_match "aux_action: the kernel knows it (EOPNOTSUPP for a software event)" '"aux_action": \{"ok": true, "value": "supported"' "$j"
	t_match "aux_action: names the kernel's answer" 'EOPNOTSUPP' "$j"
elif [ "$plain" = 0 ] && [ "$paused" = 22 ]; then
	t_match "aux_action: old kernel (EINVAL)" '"aux_action": \{"ok": false, "value": "not supported"' "$j"
else
	t_skip "aux_action" "the probe could not open a software event ($plain)"
fi

# The AUX PMUs the check names are exactly those in sysfs.
have=$(ls /sys/bus/event_source/devices | grep -E '^(intel_pt|cs_etm|arm_spe|intel_bts)' | sort | tr '\n' ' ')
if [ -z "$have" ]; then
	t_match "no AUX PMU here: says none" '"aux_pmus": \{"ok": false, "value": "none"' "$j"
	if command -v qemu-x86_64 >/dev/null && [ -r "${PTREC_PLUGIN:-/nonexistent}" ]; then
		t_eq "exit 3: emulation only" 3 "$rc"
		t_match "verdict emulate-only" '"verdict": "emulate-only"' "$j"
	else
		t_eq "exit 4: nothing works" 4 "$rc"
	fi
else
	for p in $have; do t_match "PMU $p listed" "\"$p\"" "$j"; done
fi
t_match "uprobe PMU: as in sysfs" "\"uprobe\": \\{\"ok\": $([ -e /sys/bus/event_source/devices/uprobe ] && echo true || echo false)" "$j"
t_match "paranoid: the sysctl value" "\"perf_event_paranoid\": \\{\"ok\": (true|false), \"value\": \"$(cat /proc/sys/kernel/perf_event_paranoid)\"" "$j"

t_run "text output" "$rc" "$PTREC" check
t_match "text: verdict line" '^verdict: ' "$(tail -n1 <<<"$out")"
t_run "bad option" 2 "$PTREC" check --bogus
t_run "help" 0 "$PTREC" check --help
t_match "help: documents the exit codes" 'exit status' "$out"
PTREC_PLUGIN=/nonexistent/p.so t_run "missing plugin: emulate unavailable" 4 "$PTREC" check
t_match "missing plugin: named" 'plugin /nonexistent/p.so is missing' "$out"
t_done
