#!/usr/bin/env bash
# The CoreSight software tracer from the outside: aarch64 programs recorded
# under qemu-aarch64 into snapshot directories, decoded by OpenCSD's
# trc_pkt_lister, compared run by run with the plugin's ground truth (an awk
# comparison, independent of the C one in tests/unit/test_etm_emulate.c).
# The recorder is the unit test binary's driver mode:
#   test_etm_emulate snapshot DIR TRUTH [raw] [ts] [cid] -- PROG ARGS...
. "$(dirname "$0")/lib.sh"
B=${B:-build}
TOP=${PTREC_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
case $B in /*) BD=$B ;; *) BD=$TOP/$B ;; esac
DRV=$BD/tests/test_etm_emulate
PROGS=$BD/progs-arm64
PLUGIN=$BD/ptrec-emu-etm.so

if ! command -v trc_pkt_lister >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
	t_skip "etm" "needs trc_pkt_lister (libopencsd-bin) and qemu-aarch64 (qemu-user)"
	t_done
	exit
fi
if [ ! -x "$DRV" ] || [ ! -r "$PLUGIN" ] || [ ! -x "$PROGS/calls" ]; then
	t_fail "etm: build first (make tests)" "missing $DRV, $PLUGIN or $PROGS/calls"
	t_done
	exit
fi

# compare TRUTH LISTING "CSID=TID ..." : prints "ok N" or the first difference.
compare() {
	awk -v map="$3" '
	BEGIN { n = split(map, m, " "); for (i = 1; i <= n; i++) { split(m[i], kv, "="); tidof[kv[1]] = kv[2] } }
	function hex(s,   i, v) {
		v = 0; s = tolower(s)
		for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	}
	function add(arr, cnt, t, s, e) {
		if (cnt[t] > 0 && arr[t, cnt[t], 1] == s) { arr[t, cnt[t], 1] = e; return }
		cnt[t]++; arr[t, cnt[t], 0] = s; arr[t, cnt[t], 1] = e
	}
	FNR == NR {
		if ($1 == "R") on[$2] = 1
		else if ($1 == "P") on[$2] = 0
		else if ($1 == "B" && on[$2]) { add(T, tn, $2, hex($3), hex($4)); tids[$2] = 1 }
		next
	}
	/OCSD_ERR_|ADDR_NACC|I_BAD_|I_RESERVED/ { bad++ }
	/OCSD_GEN_TRC_ELEM_INSTR_RANGE\(exec range=/ {
		if (!match($0, /ID:[0-9a-f]+;/)) next
		id = substr($0, RSTART + 3, RLENGTH - 4)
		if (!(id in tidof)) { unknown++; next }
		match($0, /range=0x[0-9a-f]+:\[0x[0-9a-f]+\]/)
		r = substr($0, RSTART + 8, RLENGTH - 9); split(r, se, /:\[0x/)
		add(D, dn, tidof[id], hex(se[1]), hex(se[2]))
	}
	END {
		if (bad) { print "decode problems: " bad; exit 1 }
		if (unknown) { print "ranges of unknown trace IDs: " unknown; exit 1 }
		total = 0
		for (t in tids) {
			if (tn[t] != dn[t]) { print "tid " t ": " tn[t] " truth runs, " dn[t] " decoded"; exit 1 }
			for (i = 1; i <= tn[t]; i++) {
				if (T[t, i, 0] != D[t, i, 0] || T[t, i, 1] != D[t, i, 1]) {
					printf "tid %s run %d: truth %x-%x decoded %x-%x\n", t, i, T[t, i, 0], T[t, i, 1], D[t, i, 0], D[t, i, 1]
					exit 1
				}
				total += (T[t, i, 1] - T[t, i, 0]) / 4
			}
		}
		print "ok " total
	}' "$1" "$2"
}

# record NAME PROG [opts] -- ARGS: snapshot in $T_TMP/NAME, map in $map.
record() {
	local name=$1 prog=$2
	shift 2
	out=$("$DRV" snapshot "$T_TMP/$name" "$T_TMP/$name.truth" "$@" 2>"$T_TMP/$name.err")
	rc=$?
	map=
	while read -r w tid csid _; do
		[ "$w" = stream ] && map="$map$(printf '%x' "$csid")=$tid "
	done <<<"$out"
	return $rc
}

# A formatted snapshot of each program decodes to the truth.
for p in calls longjmp threads signals forks execs; do
	if record "$p" "$p" -- "$PROGS/$p"; then
		t_pass "$p: recorded"
		res=$(trc_pkt_lister -ss_dir "$T_TMP/$p" -decode -logstdout 2>&1 >"$T_TMP/$p.lst"; compare "$T_TMP/$p.truth" "$T_TMP/$p.lst" "$map")
		t_match "$p: trc_pkt_lister decodes to the truth" '^ok [1-9][0-9]{4,}' "$res"
	else
		t_fail "$p: recorded" "$(cat "$T_TMP/$p.err")"
	fi
done

# The snapshot files.
t_match "snapshot.ini names the devices" 'device1=ETM_0.ini' "$(cat "$T_TMP/calls/snapshot.ini")"
t_match "trace.ini: formatted buffer" 'format=coresight' "$(cat "$T_TMP/calls/trace.ini")"
t_match "ETM device registers" 'TRCTRACEIDR\(0x010\)=0x00000010' "$(cat "$T_TMP/calls/ETM_0.ini")"
t_match "memory dump of the code" 'address=0x400000' "$(cat "$T_TMP/calls/cpu_0.ini")"
sz=$(stat -c %s "$T_TMP/calls/cstrace.bin")
t_eq "formatted buffer is whole frames" 0 $((sz % 16))

# Raw (source_data) buffers, timestamps and context IDs: every thread's buffer alone.
if record threads-raw threads raw ts cid -- "$PROGS/threads"; then
	t_eq "threads: five streams" 5 "$(printf '%s\n' "$out" | grep -c '^stream ')"
	t_match "trace.ini: one raw buffer per thread" 'buffers=buffer0,buffer1,buffer2,buffer3,buffer4' "$(cat "$T_TMP/threads-raw/trace.ini")"
	ok=1
	for i in 0 1 2 3 4; do
		set -- $(printf '%s\n' "$out" | grep '^stream ' | sed -n "$((i + 1))p")
		tid=$2
		csid=$(printf '%x' "$3")
		trc_pkt_lister -ss_dir "$T_TMP/threads-raw" -src_name "ETB_$i" -decode -logstdout >"$T_TMP/raw$i.lst" 2>&1
		# only this thread's blocks count: the other tids map to nothing
		grep "^[BRP] $tid " "$T_TMP/threads-raw.truth" >"$T_TMP/raw$i.truth"
		res=$(compare "$T_TMP/raw$i.truth" "$T_TMP/raw$i.lst" "$csid=$tid")
		case $res in ok\ [1-9]*) ;; *) ok=0; t_fail "raw buffer $i (tid $tid)" "$res" ;; esac
		if ! grep -q "CID=0x$(printf %08x "$tid")" "$T_TMP/raw$i.lst"; then
			ok=0
			t_fail "raw buffer $i carries context ID $tid"
		fi
	done
	[ $ok = 1 ] && t_pass "threads: each raw buffer decodes to its thread's truth, with its tid as context ID"
	t_match "timestamps decoded" 'OCSD_GEN_TRC_ELEM_TIMESTAMP' "$(cat "$T_TMP/raw0.lst")"
else
	t_fail "threads (raw, ts, cid): recorded" "$(cat "$T_TMP/threads-raw.err")"
fi

# Errors: a clear message and a non-zero exit.
t_run "an x86-64 program is refused" 1 "$DRV" snapshot "$T_TMP/x" "$T_TMP/x.truth" -- /bin/true
t_match "... saying so" "not an aarch64" "$err"
t_run "a missing program is refused" 1 "$DRV" snapshot "$T_TMP/x" "$T_TMP/x.truth" -- "$T_TMP/nothing-here"
t_match "... saying so" "cannot find the program" "$err"
PTREC_ETM_PLUGIN=$T_TMP/none.so t_run "a missing plugin is reported" 1 "$DRV" snapshot "$T_TMP/x" "$T_TMP/x.truth" -- "$PROGS/calls"
t_match "... saying so" "cannot find the tracer plugin" "$err"
t_run "the plugin refuses to run by hand" 1 qemu-aarch64 -plugin "$PLUGIN" "$PROGS/calls"
t_match "... saying how to run it" "ptrec record --emulate" "$err"

t_done
