#!/usr/bin/env bash
# ptdump --follow: a recording still being written (ptrec holds an
# exclusive flock on its output file meanwhile). The views that stream write
# what is settled while the file grows, and in the end exactly what a decode
# after the end writes; the others decode once ptrec ends the recording,
# whether it ends normally or is killed.
. "$(dirname "$0")/src/paths.sh"
model_suite "ptdump --follow" "$PROGS/loop" "$PROGS/stages" || { t_done; exit; }

# wait_for FILE: until ptrec has committed FILE (at most 30 s).
wait_for() {
	local i
	for i in $(seq 300); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# ---- 1. a recording that ends normally ----

"$PTREC" record --emulate -q -o f.data -- "$PROGS/loop" 300 >/dev/null 2>rec.err &
rec=$!
if wait_for f.data; then
	"$PTDUMP" --follow --stats f.data >follow.out 2>follow.err
	frc=$?
	# ptdump ran until ptrec let go of the file: ptrec is gone by now.
	kill -0 "$rec" 2>/dev/null
	t_eq "--follow returned after ptrec ended" 1 "$?"
	wait "$rec"
	t_eq "the recording succeeded" 0 "$?"
	t_eq "--follow: exit status" 0 "$frc"
	t_eq "--follow decodes the whole file (as ptdump after the end)" \
		"$("$PTDUMP" --stats f.data 2>&1)" "$(cat follow.out follow.err)"
	t_match "the file is complete" 'complete \(' "$("$PTDUMP" --info f.data)"
else
	t_fail "the recording did not start" "$(cat rec.err)"
	wait "$rec"
fi

# ---- 2. a recording that is killed ----

"$PTREC" record --emulate -q -o k.data -- "$PROGS/loop" 100000 >/dev/null 2>krec.err &
rec=$!
if wait_for k.data; then
	"$PTDUMP" --follow --stats k.data >kf.out 2>kf.err &
	dump=$!
	sleep 1
	kill -0 "$dump" 2>/dev/null
	t_eq "--follow waits while ptrec writes" 0 "$?"
	kill -KILL "$rec"
	wait "$rec" 2>/dev/null
	for i in $(seq 100); do kill -0 "$dump" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$dump" 2>/dev/null
	t_eq "--follow goes on when ptrec is killed" 1 "$?"
	wait "$dump"
	t_eq "--follow on the cut file: exit status 0" 0 "$?"
	t_match "--follow on the cut file: its trace decoded" 'instructions: [1-9]' "$(cat kf.out)"
else
	t_fail "the second recording did not start" "$(cat krec.err)"
	kill -KILL "$rec" 2>/dev/null
	wait "$rec" 2>/dev/null
fi

# wait_match FILE PATTERN: until FILE has a line matching PATTERN (30 s).
wait_match() {
	local i
	for i in $(seq 300); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# vargs VIEW: its options (json: the call trace as JSON lines)
vargs() {
	case $1 in
	json) echo --call-trace --format=json ;;
	durations) echo --call-trace --durations ;;
	sbjson) echo --sideband --format=json ;;
	noplt) echo --call-trace --no-plt ;;
	dnoplt) echo --call-trace --durations --no-plt ;;
	*) echo "--$1" ;;
	esac
}

# paced_rec FILE PROG ERR [OPTS...]: ptrec records PROG into FILE (stderr:
# ERR; OPTS: more record options, then PROG's arguments after --), its
# input the fifo ctl, which fd 3 holds open for writing (a line a stage,
# the close its end); rec: ptrec's pid. Returns as wait_for FILE.
paced_rec() {
	local f=$1 prog=$2 err=$3 opts=()
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	exec 3<>ctl
	"$PTREC" record --emulate -q -o "$f" "${opts[@]}" -- "$prog" "$@" <ctl >/dev/null 2>"$err" 3>&- &
	rec=$!
	wait_for "$f"
}

# follow_views FILE OUT OPTS VIEW...: ptdump --follow OPTS of each VIEW of
# FILE into OUT.VIEW (stderr: OUT.VIEW.err), in the background; pids: theirs.
follow_views() {
	local f=$1 o=$2 opts=$3 v
	shift 3
	pids=
	for v in "$@"; do
		"$PTDUMP" --follow $opts $(vargs "$v") "$f" >"$o.$v" 2>"$o.$v.err" 3>&- &
		pids="$pids $!"
	done
}

# follow_done LABEL FILE OUT NEW VIEW...: waits for the decodes that
# follow_views started (pids, in the order of the VIEWs), and checks each
# one's exit status, that it wrote the bytes of a decode of FILE after the
# end (into NEW.VIEW), and the same warnings (but for -v's round lines).
follow_done() {
	local label=$1 f=$2 o=$3 n=$4 v i=0
	local -a p
	read -r -a p <<<"$pids"
	shift 4
	for v in "$@"; do
		wait "${p[i]}"
		t_eq "$label--follow --$v: exit status" 0 "$?"
		i=$((i + 1))
		"$PTDUMP" $(vargs "$v") "$f" >"$n.$v" 2>"$n.$v.err"
		t_eq "$label--follow --$v: the same bytes as a decode after the end" \
			"" "$(cmp "$o.$v" "$n.$v" 2>&1)"
		t_eq "$label--follow --$v: the same warnings" "$(cat "$n.$v.err")" \
			"$(grep -v '^ptdump: --follow: round \|^ptdump: -j[0-9]*: ' "$o.$v.err")"
	done
}

# ---- 3. the views stream while the file grows ----

# The workload (stages) runs a stage of first_fn calls, then one of later_fn
# for each line on its input, a fifo that only this script writes, and ends
# at its end. So while the file holds the first stage only, the recording
# cannot end and later_fn has not run.
mkfifo ctl
if paced_rec s.data "$PROGS/stages" srec.err; then
	views="call-trace branches events sideband durations sbjson"
	follow_views s.data s "" $views
	wait_match s.call-trace first_fn
	t_eq "--follow --call-trace: the first stage's calls before the recording ends" \
		0 "$?"
	wait_match s.branches first_fn
	t_eq "--follow --branches: the first stage's branches before the recording ends" \
		0 "$?"
	wait_match s.events "block 0x"
	t_eq "--follow --events: blocks before the recording ends" 0 "$?"
	wait_match s.sideband MMAP
	t_eq "--follow --sideband: records before the recording ends" 0 "$?"
	wait_match s.durations first_fn
	t_eq "--follow --call-trace --durations: the first stage's calls before the recording ends" \
		0 "$?"
	wait_match s.sbjson '"type":"mmap"'
	t_eq "--follow --sideband --format=json: records before the recording ends" 0 "$?"
	kill -0 "$rec" 2>/dev/null
	t_eq "ptrec is still recording meanwhile" 0 "$?"
	t_eq "nothing of the second stage before it ran" 0 "$(grep -c later_fn s.call-trace)"
	echo >&3
	wait_match s.call-trace later_fn
	t_eq "--follow --call-trace: the second stage's calls as it runs" 0 "$?"
	kill -0 "$rec" 2>/dev/null
	t_eq "ptrec is still recording then" 0 "$?"
	exec 3>&-
	wait "$rec"
	t_eq "the paced recording succeeded" 0 "$?"
	follow_done "" s.data s n $views
	t_eq "the second stage ran once" 20000 "$(grep -c later_fn n.call-trace)"
else
	t_fail "the paced recording did not start" "$(cat srec.err)"
	exec 3>&-
	wait "$rec"
fi

# ---- 4. a streamed recording that is killed ----

if paced_rec ks.data "$PROGS/stages" ksrec.err; then
	"$PTDUMP" --follow --call-ret-trace ks.data >ks.out 2>ks.err 3>&- &
	dump=$!
	wait_match ks.out first_fn
	t_eq "killed: calls written while ptrec ran" 0 "$?"
	kill -KILL "$rec"
	wait "$rec" 2>/dev/null
	exec 3>&-
	for i in $(seq 300); do kill -0 "$dump" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$dump" 2>/dev/null
	t_eq "killed: --follow goes on when ptrec is killed" 1 "$?"
	wait "$dump"
	t_eq "killed: exit status 0" 0 "$?"
	"$PTDUMP" --call-ret-trace ks.data >kn.out 2>kn.err
	t_eq "killed: the same bytes as a decode of the cut file" "" "$(cmp ks.out kn.out 2>&1)"
	t_eq "killed: the same warnings" "$(cat kn.err)" "$(cat ks.err)"
else
	t_fail "the recording to kill did not start" "$(cat ksrec.err)"
	exec 3>&-
	kill -KILL "$rec" 2>/dev/null
	wait "$rec" 2>/dev/null
fi

# ---- 5. the rounds go on from each other ----

# A longer paced recording (twelve stages after the first), followed while
# it grows. With -v each round says how many of the streams' trace bytes it
# decoded: once the file is longer than a few decode windows, a round starts
# past the beginning, the last one after the end too.
# And the bytes are still those of a decode after the end, JSON lines too
# (their heading written once).
if paced_rec r.data "$PROGS/stages" rrec.err; then
	views="call-trace call-ret-trace branches events json noplt dnoplt sideband sbjson"
	follow_views r.data r -v $views
	wait_match r.call-trace first_fn
	for i in $(seq 12); do
		echo >&3
		sleep 0.7
		# A library mapped halfway, after rounds that went on from each other.
		if [ "$i" = 6 ]; then
			echo "dl libm.so.6 cos" >&3
			sleep 0.7
		fi
	done
	exec 3>&-
	wait "$rec"
	t_eq "the longer paced recording succeeded" 0 "$?"
	follow_done "rounds: " r.data r rn $views
	for v in $views; do
		# --sideband: round N: S sideband records settled, W written before.
		# A later round writes only the records after those.
		case $v in sideband | sbjson)
			later=$(awk '/^ptdump: --follow: round [0-9]*: [0-9]* sideband/ && $9 > 0 { n++ }
				END { print n + 0 }' r.$v.err)
			t_eq "rounds: --follow --$v: later rounds go on after the records written ($later)" \
				1 "$((later >= 1))"
			continue
			;;
		esac
		# round N: decoded D of T trace bytes, E events again
		rounds=$(grep -c '^ptdump: --follow: round [0-9]*: decoded ' r.$v.err)
		t_eq "rounds: --follow --$v: rounds while the file grew ($rounds)" 1 "$((rounds >= 3))"
		# --events too goes on from the last round: the walk's blocks end at
		# branches and events only (with --core libipt they depend on a cache
		# each round starts cold, and its rounds decode from the beginning).
		# JSON's rounds take longer, so fewer come late enough to show it.
		case $v in json) continue ;; esac
		part=$(awk '/^ptdump: --follow: round/ && $6 < $8 { n++ } END { print n + 0 }' \
			r.$v.err)
		t_eq "rounds: --follow --$v: later rounds decode less than the whole stream" \
			1 "$((part >= 1))"
		sums=$(awk '/^ptdump: --follow: round/ { d += $6; t += $8 } END { print d, t }' \
			r.$v.err)
		set -- $sums "$@"
		t_eq "rounds: --follow --$v: the rounds decoded less than all they were given" \
			1 "$(($1 < $2))"
		shift 2
		# The decode after the end is the last round: it goes on from the
		# one before, so it decodes less than the whole trace.
		last=$(grep '; the recording has ended$' r.$v.err | awk '{ print $6, $8 }')
		set -- ${last:-0 0} "$@"
		t_eq "rounds: --follow --$v: the last round, after the end, goes on from the others ($1 of $2 bytes)" \
			1 "$(($1 < $2))"
		shift 2
	done
	t_eq "rounds: the twelve later stages ran" 240000 "$(grep -c later_fn rn.call-trace)"
	# cos is an IFUNC: the variant for this CPU (__cos_fma, __cos_sse2, ...)
	t_eq "rounds: the library's stage ran, decoded" 20000 \
		"$(awk -F'\t' '$2 ~ /^ *__cos_[a-z0-9]+ *$/ && $2 !~ /ifunc/' rn.call-trace | wc -l)"
else
	t_fail "the longer paced recording did not start" "$(cat rrec.err)"
	exec 3>&-
	wait "$rec"
fi

# ---- 5b. a CoreSight recording streams too ----

# The aarch64 build of the paced workload, recorded with the CoreSight
# software tracer: the views are written while the file grows (each round
# decodes the stream from its beginning, and writes the events before the
# last timestamp but one of each trace unit), and end with the bytes of a
# decode after the end.
ARM_STAGES=$BD/progs-arm64/stages
if command -v qemu-aarch64 >/dev/null && [ -x "$ARM_STAGES" ]; then
	export PTREC_PLUGIN_ETM=${PTREC_PLUGIN_ETM:-$(dirname "$PTREC_PLUGIN")/ptrec-emu-etm.so}
	if paced_rec cs.data "$ARM_STAGES" csrec.err; then
		views="call-trace call-ret-trace branches events json"
		follow_views cs.data cs -v $views
		wait_match cs.call-trace first_fn
		t_eq "CoreSight: --follow --call-trace: the first stage's calls before the recording ends" \
			0 "$?"
		wait_match cs.events "block 0x"
		t_eq "CoreSight: --follow --events: blocks before the recording ends" 0 "$?"
		kill -0 "$rec" 2>/dev/null
		t_eq "CoreSight: ptrec is still recording meanwhile" 0 "$?"
		t_eq "CoreSight: nothing of the second stage before it ran" 0 \
			"$(grep -c later_fn cs.call-trace)"
		echo >&3
		wait_match cs.call-trace later_fn
		t_eq "CoreSight: --follow --call-trace: the second stage's calls as it runs" 0 "$?"
		exec 3>&-
		wait "$rec"
		t_eq "CoreSight: the paced recording succeeded" 0 "$?"
		follow_done "CoreSight: " cs.data cs csn $views
		t_eq "CoreSight: the second stage ran once" 20000 "$(grep -c later_fn csn.call-trace)"
	else
		t_fail "the CoreSight recording did not start" "$(cat csrec.err)"
		exec 3>&-
		wait "$rec"
	fi
else
	t_skip "CoreSight --follow" "qemu-aarch64 or the aarch64 test programs are missing"
fi

# ---- 5c. the settled time, with cuts anywhere ----

# The recordings' chunks end where the tracer wrote them; settled_check
# cuts each stream every 3001 bytes instead (inside packets and
# timestamps) and compares, at each cut, the events before the decoder's
# settled time with the whole stream's first events.
SETTLED_CHECK=$BD/tools/settled_check
# settled_nums OUT: settled_check's line for stream 0 as C S E D (cuts,
# with a settled time, events compared, differ)
settled_nums() {
	sed -n 's/^stream 0: \([0-9]*\) cuts, \([0-9]*\) with .*, \([0-9]*\) events compared, \([0-9]*\) differ$/\1 \2 \3 \4/p' <<<"$1"
}
for f in s.data cs.data; do
	[ -s "$f" ] || continue
	t_run "settled_check $f" 0 "$SETTLED_CHECK" -s 3001 "$f"
	set -- $(settled_nums "$out")
	t_eq "settled_check $f: the prefixes' events before their settled time are the whole stream's" \
		"0" "${4:-missing}"
	t_eq "settled_check $f: most cuts have a settled time (${2:-0} of ${1:-0}), events compared (${3:-0})" \
		1 "$(( ${1:-0} >= 10 && ${2:-0} * 10 >= ${1:-0} * 7 && ${3:-0} > 0 ))"
done

# ---- 5d. windows of pause and resume ----

# Windows resumed at first_fn's entry and paused at its return, 100 of them
# in the first stage: a few KB with one PSB+, at the start. Each window
# begins with a timestamp and ends with a TIP.PGD, and the bound is the
# timestamp before the last whole one (ipt_settled()), so the first stage's
# windows come out while the recording waits for the second (a bound that
# needs two PSBs never comes before the end).
if paced_rec w.data "$PROGS/stages" wrec.err -e intel_pt/aux-action=start-paused/u \
	-e "uprobe:$PROGS/stages:first_fn/aux-action=resume/" \
	-e "uretprobe:$PROGS/stages:first_fn/aux-action=pause/" -- 100; then
	follow_views w.data w "" call-ret-trace events
	wait_match w.call-ret-trace 'tr end .*(paused by '
	t_eq "windows: --follow --call-ret-trace writes ended windows while the recording runs" 0 "$?"
	wait_match w.events "block 0x"
	t_eq "windows: --follow --events writes blocks while the recording runs" 0 "$?"
	kill -0 "$rec" 2>/dev/null
	t_eq "windows: ptrec is still recording meanwhile" 0 "$?"
	n1=$(grep -c 'tr end .*(paused by ' w.call-ret-trace)
	echo >&3
	exec 3>&-
	wait "$rec"
	t_eq "windows: the paced recording succeeded" 0 "$?"
	follow_done "windows: " w.data w wn call-ret-trace events
	t_eq "windows: the first stage's 100 windows, of which some came out before the second ($n1)" \
		"100 1" "$(grep -c 'tr end .*(paused by ' wn.call-ret-trace) $(( n1 > 0 && n1 < 100 ))"
	t_run "settled_check w.data, cut at every byte" 0 "$SETTLED_CHECK" -s 1 w.data
	set -- $(settled_nums "$out")
	t_eq "settled_check w.data: the prefixes' events before their settled time are the whole stream's" \
		"0" "${4:-missing}"
	t_eq "settled_check w.data: most cuts have a settled time (${2:-0} of ${1:-0})" \
		1 "$(( ${1:-0} >= 1000 && ${2:-0} * 10 >= ${1:-0} * 9 ))"
else
	t_fail "the windowed recording did not start" "$(cat wrec.err)"
	exec 3>&-
	wait "$rec"
fi

# ---- 6. no writer, and what --follow refuses ----

start=$(date +%s%N)
t_run "--follow on a finished file" 0 "$PTDUMP" --follow --stats f.data
t_eq "--follow on a finished file does not wait" 1 "$(( ($(date +%s%N) - start) < 5000000000 ))"
t_run "--follow on standard input" 2 "$PTDUMP" --follow --stats - </dev/null
t_match "--follow on standard input: said why" 'standard input is read to its end anyway' "$err"
t_run "--follow on a missing file" 1 "$PTDUMP" --follow --stats nothing.data
t_match "--follow on a missing file: said so" 'nothing.data: No such file' "$err"

t_done
