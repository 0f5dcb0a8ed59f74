#!/usr/bin/env bash
# The cs_etm attr config `ptrec record` asks for, on the fixture sysfs tree
# (tests/fixtures/mksysroot.sh; its format files are the kernel's): with
# per-CPU rings (-a, or a command without --per-thread) perf sets timestamp
# and contextid unless the user's terms do (tools/perf/arch/arm/util/cs-etm.c,
# cs_etm_recording_options), and so must ptrec. The expected bits come from
# the fixture's format files, read here with sed, not from ptrec.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)

fx=$T_TMP/fx
PTREC=$PTREC sh "$top/tests/fixtures/mksysroot.sh" "$fx" --without intel_pt || {
	t_fail "fixture"
	t_done
	exit
}
export PTREC_SYSROOT=$fx
fmt=$fx/sys/bus/event_source/devices/cs_etm/format

# bit NAME: the bit a one-bit format file names ("config:N").
bit() { sed -n 's/^config:\([0-9]*\)$/\1/p' "$fmt/$1"; }
# want BIT...: the config value with those bits set, as --dry-run prints it.
want() {
	local v=0 b
	for b in "$@"; do v=$((v | (1 << b))); done
	printf '0x%x' "$v"
}
# config: the cs_etm event's config in the --dry-run output ($out); 0 when not printed.
config() {
	local c
	c=$(printf '%s\n' "$out" | sed -n 's/^ *config  *\(0x[0-9a-f]*\)$/\1/p' | head -n 1)
	echo "${c:-0x0}"
}

ts=$(bit timestamp) cid=$(bit contextid) cid1=$(bit contextid1) cid2=$(bit contextid2)
t_eq "fixture: contextid is contextid1 (no VHE)" "$cid1" "$cid"

t_run "-a" 0 "$PTREC" record --dry-run -a -e 'cs_etm//u'
t_eq "-a: timestamp and contextid" "$(want "$ts" "$cid")" "$(config)"
t_match "-a: terms listed" "terms contextid,timestamp" "$out"
t_run "command" 0 "$PTREC" record --dry-run -e 'cs_etm//u' -- true
t_eq "command (per-CPU rings): the same" "$(want "$ts" "$cid")" "$(config)"
t_run "no terms at all" 0 "$PTREC" record --dry-run -a -e cs_etm
t_eq "bare cs_etm: the same" "$(want "$ts" "$cid")" "$(config)"
t_run "per-thread" 0 "$PTREC" record --dry-run --per-thread -e 'cs_etm//u' -- true
t_eq "--per-thread: no defaults" "0x0" "$(config)"
t_run "-t" 0 "$PTREC" record --dry-run -t $$ -e 'cs_etm//u'
t_eq "-t (per-thread): no defaults" "0x0" "$(config)"

# What the user wrote wins, term by term.
t_run "timestamp=0" 0 "$PTREC" record --dry-run -a -e 'cs_etm/timestamp=0/u'
t_eq "timestamp=0 kept, contextid added" "$(want "$cid")" "$(config)"
t_run "contextid=0" 0 "$PTREC" record --dry-run -a -e 'cs_etm/contextid=0/u'
t_eq "contextid=0 kept, timestamp added" "$(want "$ts")" "$(config)"
t_run "contextid2" 0 "$PTREC" record --dry-run -a -e 'cs_etm/contextid2/u'
t_eq "contextid2 alone (not also contextid1)" "$(want "$ts" "$cid2")" "$(config)"
t_run "contextid1=0" 0 "$PTREC" record --dry-run -a -e 'cs_etm/contextid1=0/u'
t_eq "contextid1=0 kept" "$(want "$ts")" "$(config)"
t_run "raw config" 0 "$PTREC" record --dry-run -a -e 'cs_etm/config=0x1000/u'
t_eq "config= is taken as it is" "0x1000" "$(config)"
t_run "other terms" 0 "$PTREC" record --dry-run -a -e 'cs_etm/cycacc,@tmc_etr0/u'
t_eq "cycacc and a sink: defaults added" "$(want "$ts" "$cid" "$(bit cycacc)")" "$(config)"

# A VHE kernel's "contextid" names contextid2 (coresight-etm-perf.c shows
# config:15 there): the default follows the format file.
printf 'config:%s\n' "$cid2" >"$fmt/contextid"
t_run "VHE" 0 "$PTREC" record --dry-run -a -e 'cs_etm//u'
t_eq "VHE: contextid is contextid2" "$(want "$ts" "$cid2")" "$(config)"

# No timestamp format (an old kernel): nothing to set, no error.
rm "$fmt/timestamp"
t_run "no timestamp format" 0 "$PTREC" record --dry-run -a -e 'cs_etm//u'
t_eq "no timestamp format: contextid only" "$(want "$cid2")" "$(config)"

# perf's check of every trace unit against the config (cs_etm_validate_config):
# a unit without global timestamps (TRCIDR0.TSSIZE 0) cannot take the default,
# and the message names the CPU and the way out. No trace hardware here, so
# the record that passes the check fails later, at perf_event_open.
fx2=$T_TMP/fx2
PTREC=$PTREC sh "$top/tests/fixtures/mksysroot.sh" "$fx2" --without intel_pt || t_fail "fixture 2"
export PTREC_SYSROOT=$fx2
printf '0x20000ea1\n' >"$fx2/sys/bus/event_source/devices/cs_etm/cpu1/trcidr/trcidr0"
t_run "no timestamps on cpu1" 1 "$PTREC" record -a -o "$T_TMP/x.data" -e 'cs_etm//u'
t_match "no timestamps: CPU and term named" "trace unit of CPU 1 cannot do cs_etm's timestamp" "$err"
t_match "no timestamps: the way out" "cs_etm/timestamp=0/" "$err"
"$PTREC" record -a -o "$T_TMP/x.data" -e 'cs_etm/timestamp=0/u' >/dev/null 2>"$T_TMP/err2"
t_match "timestamp=0 passes the check (fails opening the event)" "error: cs_etm/timestamp=0/u: " "$(cat "$T_TMP/err2")"
"$PTREC" record --per-thread -o "$T_TMP/x.data" -e 'cs_etm//u' -- true >/dev/null 2>"$T_TMP/err3"
t_match "per-thread: no timestamp asked, no complaint" "error: cs_etm//u: " "$(cat "$T_TMP/err3")"

t_done
