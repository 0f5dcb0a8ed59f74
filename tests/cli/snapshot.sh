#!/usr/bin/env bash
# The flight recorder (ptrec record -S): the AUX area in overwrite mode,
# snapshots on SIGUSR2 and at the end, through the model of the kernel with
# the software tracer. Each snapshot is compared with the ground truth: its
# calls are a run of the truth's calls, the snapshots in order, the last
# one ending where the workload ended; a SIZE limit keeps the newest bytes.
. "$(dirname "$0")/src/paths.sh"
if ! command -v qemu-x86_64 >/dev/null; then
	t_skip "snapshot mode" "qemu-x86_64 is not installed (apt-get install qemu-user)"
	t_done; exit
fi
cd "$T_TMP" || exit 1
. "$SRC/truth.sh"
truth_build || { t_done; exit; }

# stretches NAME: NAME.st, one line per snapshot stretch (src/stretches.awk).
stretches() {
	truth_calls "$1" || { t_fail "$1: decode and truth" "$(cat "$1".err "$1".dt.err 2>/dev/null)"; return 1; }
	awk -F'\t' -f "$SRC/stretches.awk" "$1.exp" "$1.out" >"$1.st"
}
# aux_bytes NAME: the trace bytes the report says the snapshots copied.
snap_report() { printf '%s' "$err" | grep -o 'ptrec: [0-9]* snapshots\?, .* of trace'; }

# ---- 1. the end of the workload: the newest bytes of a wrapped area ----

t_run "-S: records" 0 "$PTREC" record --emulate -S -m ,16K -o a.data --emulate-truth a.truth \
	-- "$PROGS/calls" 200
t_eq "-S: one snapshot of the whole 16 KiB area" "ptrec: 1 snapshot, 16.0 KiB of trace" "$(snap_report)"
if stretches a; then
	read -r _ na fa la <a.st
	nt=$(awk '$1 == "truth" { print $2 }' a.st)
	t_eq "-S: one stretch" "1" "$(grep -vc truth a.st)"
	t_eq "-S: its calls are the truth's last ones" "$nt" "${la:-miss}"
	[ "${na:-0}" -ge 500 ] && t_pass "-S: $na calls in 16 KiB" || t_fail "-S: too few calls" "$(cat a.st)"
	t_eq "-S: ptdump says nothing else" "" "$(cat a.odd)"
fi

# A PSB every 2 KiB (psb_period=0): 4 KiB always hold one to start decoding at.
t_run "-S4K: records" 0 "$PTREC" record --emulate -e pt/psb_period=0/u -S4K -m ,16K -o b.data \
	--emulate-truth b.truth -- "$PROGS/calls" 200
t_eq "-S4K: 4 KiB copied" "ptrec: 1 snapshot, 4.0 KiB of trace" "$(snap_report)"
t_nomatch "-S4K with a 2 KiB PSB period: no warning" 'PSB period' "$err"
if stretches b; then
	read -r _ nb fb lb <b.st
	nt=$(awk '$1 == "truth" { print $2 }' b.st)
	t_eq "-S4K: its calls are the truth's last ones" "$nt" "${lb:-miss}"
	[ "${nb:-0}" -gt 0 ] && [ "$nb" -lt "${na:-0}" ] &&
		t_pass "-S4K: fewer calls ($nb) than the whole area ($na)" ||
		t_fail "-S4K: calls" "4K: ${nb:-?}, 16K: ${na:-?}"
fi
t_run "-S4K with the default PSB period: records" 0 "$PTREC" record --emulate -S4K -m ,16K \
	-o b2.data -- "$PROGS/calls" 2
t_match "...and warns, as perf does" 'snapshot size \(4096 bytes\) may be too small for the PSB period \(16384 bytes\)' "$err"
t_match "--info: 4 KiB of trace in the file" 'AUX +1 chunk +4\.00 KiB raw' "$("$PTDUMP" --info b.data)"
t_match "--info: the file says snapshot mode" 'streams: +per thread, snapshot mode' "$("$PTDUMP" --info b.data)"

# ---- 2. SIGUSR2: snapshots while tracing goes on ----

# The workload signals its parent after each phase and waits 300 ms.
t_run "SIGUSR2: records" 0 "$PTREC" record --emulate --snapshot -m ,64K -o c.data \
	--emulate-truth c.truth -- "$PROGS/snapshot" 100000 3 300
t_eq "SIGUSR2: three snapshots (two signals, the end)" "ptrec: 3 snapshots, 192.0 KiB of trace" \
	"$(snap_report)"
if stretches c; then
	nt=$(awk '$1 == "truth" { print $2 }' c.st)
	t_eq "SIGUSR2: a gap line between snapshots" "2" "$(grep -c '^\[gap' c.odd)"
	t_eq "SIGUSR2: three stretches, each a run of the truth's calls, in order" \
		"1 2 3 ok" "$(awk '$1 != "truth" { s = s $1 " " } $3 == "miss" { bad = 1 } END { print s (bad ? "miss" : "ok") }' c.st)"
	t_eq "SIGUSR2: the last one ends where the workload ended" "$nt" "$(awk '$1 == 3 { print $4 }' c.st)"
	t_nomatch "SIGUSR2: no decoding errors" 'error' "$(cat c.odd)"
fi
# What the file says of its snapshots, and each one decoded on its own.
t_eq "--info: the three snapshots, why and how big" \
	"#1 64.00 KiB on SIGUSR2|#2 64.00 KiB on SIGUSR2|#3 64.00 KiB at the end|" \
	"$("$PTDUMP" --info c.data | sed -nE 's/^  (#[0-9]+)  [0-9.]+  ([0-9.]+ KiB) of trace, (.*)$/\1 \2 \3/p' | tr '\n' '|')"
t_eq "--sideband: a SNAPSHOT record each, in time order with the rest" "3" \
	"$("$PTDUMP" --sideband c.data | grep -c ' SNAPSHOT #')"
if /usr/bin/python3 -c 'import jsonschema' 2>/dev/null; then
	t_run "--sideband --format=json: the snapshot records, valid (JSON Schema)" 0 /usr/bin/python3 -c '
import json, sys, jsonschema
defs = json.load(open(sys.argv[1]))["$defs"]
v = jsonschema.Draft202012Validator({"$ref": "#/$defs/sideband", "$defs": defs})
snaps = []
for l in sys.stdin.read().splitlines()[1:]:
    o = json.loads(l)
    v.validate(o)
    if o["type"] == "snapshot":
        snaps.append((o["index"], o["reason"], o["bytes"], len(o["streams"])))
assert snaps == [(1, "signal", 65536, 1), (2, "signal", 65536, 1), (3, "end", 65536, 1)], snaps
' "$TOP/docs/ptdump-json.schema.json" < <("$PTDUMP" --sideband --format=json c.data)
fi
# tid TAB name of each call line (the depth restarts with each decode)
names() { awk -F'\t' 'index($0, "\t") { split($1, f, " "); r = $2; gsub(/^ +| +$/, "", r); print f[2] "\t" r }'; }
"$PTDUMP" --call-trace c.data >c.all
for k in 1 2 3; do
	t_run "--snapshot-index $k: decodes" 0 "$PTDUMP" --call-trace --snapshot-index $k c.data
	t_eq "--snapshot-index $k: the calls of the whole decode's stretch $k" \
		"$(awk -v k=$k '/^\[gap/ { n++; next } n == k - 1' c.all | names | md5sum)" \
		"$(echo "$out" | names | md5sum)"
done
t_run "--snapshot-index 4 of 3: an error" 1 "$PTDUMP" --call-trace --snapshot-index 4 c.data
t_match "...that says how many there are" 'has 3 snapshots' "$err"
"$PTREC" record --emulate -q -o plain.data -- "$PROGS/calls" 2 >/dev/null 2>&1
t_run "--snapshot-index of a recording without snapshots: an error" 1 \
	"$PTDUMP" --call-trace --snapshot-index 1 plain.data
t_match "...that says so" 'has no snapshots' "$err"
t_run "--snapshot-index 0: a usage error" 2 "$PTDUMP" --call-trace --snapshot-index 0 c.data

# ---- 3. snapshot triggers: the kernel pauses the tracer when one fires ----

# marker() follows each phase; phase() resumes tracing after the pause.
SP=$PROGS/snapshot
trig=(-e pt/psb_period=0/u -e "uprobe:$SP:marker/snapshot/")
resume=(-e "uprobe:$SP:phase/aux-action=resume/")
t_run "trigger: records" 0 "$PTREC" record --emulate -m ,64K -o e.data --emulate-truth e.truth \
	"${trig[@]}" "${resume[@]}" -- "$SP" 100000 3 300 quiet
t_eq "trigger: three snapshots, one per marker() (the end adds nothing: paused)" \
	"ptrec: 3 snapshots, 192.0 KiB of trace" "$(snap_report)"
if stretches e; then
	marks=$(sed -E 's/^[^\t]*\t *//' e.exp | grep -n '^marker$' | cut -d: -f1 | tr '\n' ' ')
	t_eq "trigger: each snapshot ends at the truth's call of marker(), the moment it fired" \
		"$marks" "$(awk '$1 != "truth" { printf "%s ", $4 }' e.st)"
	t_eq "trigger: the three pauses in the trace" "3" \
		"$(grep -c 'pause trigger uprobe:.*marker/snapshot/' e.out)"
fi
t_eq "trigger: --info names the trigger of each snapshot" "3" \
	"$("$PTDUMP" --info e.data | grep -c '^  #[0-9].* of trace, by uprobe:.*marker/snapshot/')"
t_eq "trigger: --snapshot-index 2 ends at the truth's second call of marker()" "marker" \
	"$("$PTDUMP" --call-trace --snapshot-index 2 e.data | awk -F'\t' 'index($0, "\t") { r = $2 } END { gsub(/^ +| +$/, "", r); print r }')"
t_match "--dry-run shows the term" 'aux-action pause, snapshot' \
	"$("$PTREC" record --emulate --dry-run "${trig[@]}" -- "$SP" 2>&1)"

t_run "trigger without a resume: records" 0 "$PTREC" record --emulate -m ,64K -o f.data \
	"${trig[@]}" -- "$SP" 100000 3 300 quiet
t_eq "...one snapshot: tracing stays paused after it" "ptrec: 1 snapshot, 64.0 KiB of trace" \
	"$(snap_report)"
t_match "...and a warning says why" 'nothing in the group of snapshot trigger .* resumes tracing' "$err"

t_run "--snapshot-limit 2: the workload is stopped (SIGTERM)" 143 "$PTREC" record --emulate \
	--snapshot-limit 2 -m ,64K -o g.data "${trig[@]}" "${resume[@]}" -- "$SP" 100000 3 300 quiet
t_eq "--snapshot-limit 2: two snapshots" "ptrec: 2 snapshots, 128.0 KiB of trace" "$(snap_report)"
t_run "snapshot with aux-action=resume is refused" 2 "$PTREC" record --emulate -o d.data \
	-e pt//u -e "uprobe:$SP:marker/snapshot,aux-action=resume/" -- "$SP"
t_match "...and says so" 'a snapshot trigger pauses tracing; it cannot resume it' "$err"
t_run "--snapshot-limit without snapshot mode is refused" 1 "$PTREC" record --emulate \
	--snapshot-limit 1 -o d.data -- "$SP" 10 1 0 quiet
t_match "...and says so" 'goes with snapshot mode' "$err"

# ---- 4. CoreSight: the ETMv4 software tracer on an aarch64 program ----

arm=$BD/progs-arm64
if command -v qemu-aarch64 >/dev/null && [ -x "$arm/calls" ]; then
	export PTREC_PLUGIN_ETM=${PTREC_PLUGIN_ETM:-$(dirname "$PTREC_PLUGIN")/ptrec-emu-etm.so}
	merge() { awk '{ if ($1 == e) { e = $2; next } if (s != "") print s, e; s = $1; e = $2 } END { if (s != "") print s, e }'; }
	t_run "cs_etm -S: records" 0 "$PTREC" record --emulate -S -m ,16K -o h.data --emulate-truth h.truth \
		-- "$arm/calls" 20
	t_eq "cs_etm -S: one snapshot of the whole 16 KiB area" "ptrec: 1 snapshot, 16.0 KiB of trace" \
		"$(snap_report)"
	t_nomatch "cs_etm -S: no PSB warning (not Intel PT)" 'PSB' "$err"
	awk '$1 == "B" { print $3, $4 }' h.truth | merge >h.exp
	"$PTDUMP" --ranges h.data | sed -n 's/.*exec range=0x\([0-9a-f]*\):\[0x\([0-9a-f]*\)\].*/\1 \2/p' |
		merge >h.got
	k=$(wc -l <h.got)
	[ "$k" -gt 100 ] && [ "$k" -lt "$(wc -l <h.exp)" ] && t_pass "cs_etm -S: $k of $(wc -l <h.exp) ranges" ||
		t_fail "cs_etm -S: ranges" "$k of $(wc -l <h.exp)"
	t_eq "cs_etm -S: the decoded ranges are the truth's last ones" "$(tail -n "$k" h.exp | md5sum)" \
		"$(md5sum <h.got)"
else
	t_skip "cs_etm snapshot" "qemu-aarch64 or the aarch64 test programs are missing"
fi

# ---- 5. refusals ----

t_run "-S SIZE beyond the AUX area is refused" 1 "$PTREC" record --emulate -S64K -m ,16K \
	-o d.data -- "$PROGS/calls" 1
t_match "...and says so" 'larger than the AUX area' "$err"
t_run "-S without a tracer is refused" 1 "$PTREC" record -S -e page-faults -o d.data -- true
t_match "...and says so" 'no event is a tracer' "$err"
t_run "-S with a bad SIZE is a usage error" 2 "$PTREC" record --emulate -Sfoo -o d.data -- true
t_run "--switch-output with --emulate=system is refused" 1 "$PTREC" record --emulate=system \
	--switch-output -o d.data -- true
t_match "...and says so" 'does not go with --emulate=system yet' "$err"
t_run "-a with --emulate=system is refused" 1 "$PTREC" record --emulate=system -a -e intel_pt//k \
	-o d.data -- true
t_match "...and says so" '-a and -C .* are not done yet' "$err"
t_eq "no file left by the refusals" "" "$(ls d.data* 2>/dev/null)"
t_done
