#!/usr/bin/env bash
# End-to-end decode tests: ptdump's call traces of software-tracer recordings
# against the tracer's ground truth, damaged inputs, and a closed pipe.
#
# The expected call traces come from tests/cli/src/decode_truth.c, which
# reads the ground truth (the blocks each thread executed, and where tracing
# was paused and resumed), classifies each block's last instruction with
# capstone from the binaries on disk at the mappings of the sideband, names
# call targets from the ELF symbol tables (PLT stubs from objdump) and keeps
# the call depth with perf's rules. ptdump's decoder, image and symbol code
# play no part in it. Lines are compared as "tid, [flag,] indent + name",
# per thread, exactly.
#
# Damaged files are made with tests/cli/src/decode_damage.c, which rewrites
# a trace file chunk by chunk through the project's own reader and writer.
. "$(dirname "$0")/src/paths.sh"
# DECODE_KEEP=1 keeps the work directory for a look at what failed;
# DECODE_ONLY="truth exec views windows damage random pipe" runs only those parts.
ONLY=${DECODE_ONLY:-truth exec views windows damage random pipe}
part() { [[ " $ONLY " == *" $1 "* ]]; }
if [ -n "${DECODE_KEEP:-}" ]; then
	trap - EXIT
	echo "# work directory: $T_TMP"
fi

if ! t_backend_init || [ "$T_HAS_TRUTH" != 1 ]; then
	# The same recordings with checks that need no truth: tests/hw/check-hw.sh.
	t_skip "decode tests" "${T_BACKEND_WHY:-PTREC_BACKEND=$T_BACKEND records no ground truth}"
	t_done; exit
fi
if ! command -v qemu-x86_64 >/dev/null; then
	t_skip "decode tests" "qemu-x86_64 is not installed (apt-get install qemu-user)"
	t_done; exit
fi
for f in "$PTREC" "$PTDUMP" "$PTREC_PLUGIN" "$BD/libprec.a" "$PROGS/calls"; do
	if [ ! -e "$f" ]; then
		t_fail "decode tests: $f is missing (run make B=$B tests first)"
		t_done; exit
	fi
done
cd "$T_TMP" || exit 1

# ---- helpers ----

# The library and ptdump are ASan builds under SANITIZE=1: link the same way.
SANFLAGS=
if nm "$BD/libprec.a" 2>/dev/null | grep -q __asan_init; then
	SANFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer"
fi
# The libraries as the Makefile links them.
LIBS="$(pkg-config --libs libzstd libelf libdw opencsd_c_api capstone 2>/dev/null ||
	echo -lzstd -lelf -ldw -lopencsd_c_api -lopencsd -lcapstone) -lipt -lpthread -lm"
if ! cc -O2 -g -Wall -Wextra -Werror -o decode_truth "$SRC/decode_truth.c" -lcapstone -lelf 2>cc.err; then
	t_fail "build decode_truth" "$(cat cc.err)"
	t_done; exit
fi
# shellcheck disable=SC2086
if ! cc -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE -I"$TOP/src" -I"$TOP/decoders" $SANFLAGS \
	-o decode_damage "$SRC/decode_damage.c" "$BD/libprec.a" $LIBS 2>cc.err; then
	t_fail "build decode_damage" "$(cat cc.err)"
	t_done; exit
fi
if ! cc -static -nostdlib -no-pie -o "$T_TMP/decode_tiny" "$SRC/decode_tiny.c" 2>cc.err; then
	t_fail "build decode_tiny" "$(cat cc.err)"
	t_done; exit
fi
t_pass "helpers build (decode_truth, decode_damage, decode_tiny)"

. "$SRC/truth.sh"

# One recording of PROG with tracer config CONF, compared in both views.
truth_case() {
	local title=$1 name=$2 want=$3 conf=$4
	shift 4
	record "$name" "intel_pt/$conf/u" -- "$@"
	if [ "$rec_status" != "$want" ]; then
		t_fail "$title: record" "exit status $rec_status, expected $want: $(head -n 5 "$name.rec.err")"
		return
	fi
	local topt=
	# Without timestamps nothing places an exec in the trace: the depth goes on.
	[[ "$conf" == *tsc=0* ]] && topt=-u
	if ! expect "$name" $topt; then
		t_fail "$title: truth" "$(cat "$name.sb.err" "$name.dt.err" | head -n 5)"
		return
	fi
	check_calls "$title: --call-trace = truth" "$name"
	[ -n "${RET:-}" ] && check_calls "$title: --call-ret-trace = truth" "$name" 1
	return 0
}

# ---- 1. every test program, with and without return compression and timing ----

CONFIGS=("default:" "noretcomp:noretcomp" "timing:tsc,mtc,cyc,mtc_period=0,cyc_thresh=1" "notiming:tsc=0,mtc=0")
PROGRAMS=("calls:0:$PROGS/calls 2" "longjmp:0:$PROGS/longjmp" "signals:0:$PROGS/signals"
	"threads:0:$PROGS/threads" "forkexec:3:$PROGS/forkexec" "spawn:5:$PROGS/spawn"
	"window:0:$PROGS/window" "loop:0:$PROGS/loop 3" "tiny:0:$T_TMP/decode_tiny 20")
part truth && for p in "${PROGRAMS[@]}"; do
	IFS=: read -r pname pstatus pcmd <<<"$p"
	for c in "${CONFIGS[@]}"; do
		cname=${c%%:*} conf=${c#*:}
		if [ "$pname-$cname" = spawn-notiming ]; then
			# The children run the parent's code, then exec programs mapped
			# over it: without timestamps nothing tells the decoder which
			# address space a piece of trace belongs to (perf's timeless
			# decoding has the same limit).
			t_skip "spawn (notiming)" "no timestamps to place the children's exec"
			continue
		fi
		RET=
		[ "$cname" = default ] && RET=1
		# shellcheck disable=SC2086
		RET=$RET truth_case "$pname ($cname)" "$pname-$cname" "$pstatus" "$conf" $pcmd
	done
done

# ---- 1b. an exec: what runs before it is the old program ----

# check_insns TITLE NAME: ptdump --insn-trace of NAME.data walks the truth's
# blocks instruction by instruction (each block starts at its address and
# has as many instructions, all before its end), with no "(no code)" line:
# the code was read from the right program.
check_insns() {
	local title=$1 name=$2 bad
	"$PTDUMP" --insn-trace "$name.data" >"$name.insn" 2>"$name.insn.err"
	bad=$(awk -F'\t' '
	FNR == NR { if ($0 ~ /^B /) { split($0, b, " "); t = b[2]; n[t]++
			s[t, n[t]] = b[3]; e[t, n[t]] = b[4]; c[t, n[t]] = b[5] }
		next }
	index($0, "\t") == 0 { next }
	{
		split($1, f, " "); t = f[2]; a = f[4]
		if ($2 == "(no code)") { print "no code at " a; exit }
		if (!k[t]) { i[t]++; if (a != s[t, i[t]]) { print "block " i[t] " starts at " a ", truth " s[t, i[t]]; exit } }
		k[t]++
		if (sprintf("%16s", a) >= sprintf("%16s", e[t, i[t]])) { print "block " i[t] " runs on to " a ", truth ends before " e[t, i[t]]; exit }
		if (k[t] == c[t, i[t]]) k[t] = 0
		lines++
	}
	END { for (t in n) if (i[t] != n[t] || k[t]) print "thread " t ": " i[t] " of " n[t] " blocks decoded" }
	' "$name.truth" "$name.insn")
	if [ -s "$name.insn.err" ] || [ -n "$bad" ]; then
		t_fail "$title" "$bad $(head -n 3 "$name.insn.err")"
	else
		t_pass "$title ($(grep -c $'\t' "$name.insn") instructions)"
	fi
}

if part exec; then
	n=envexec
	record "$n" "intel_pt//u" -- env true
	if [ "$rec_status" = 0 ] && expect "$n"; then
		check_calls "env true: --call-trace = truth" "$n"
		check_insns "env true: --insn-trace = truth, the code before the exec is env's" "$n"
		# Lines before the exec's time are env's, lines after it true's.
		tx=$(awk '/ COMM +true \(exec\)/ { print $1; exit }' "$n.sb")
		got=$(awk -v tx="$tx" 'index($0, "\t") {
			split($0, f, " "); sub(/:$/, "", f[3])
			if (f[3] + 0 < tx + 0) b[f[1]]++; else if (f[3] + 0 > tx + 0) a[f[1]]++ }
			END { for (c in b) printf "before %s;", c; for (c in a) printf "after %s;", c }' "$n.insn")
		t_eq "env true: lines named env before the exec at $tx, true after it" \
			"before env;after true;" "$got"
		t_match "env true: the first line is env's, at time 0" '^ +env +[0-9]+ +0\.000000000: ' \
			"$(head -n 1 "$n.insn")"
	else
		t_fail "env true: record" "status $rec_status $(cat "$n.rec.err" "$n.dt.err" 2>/dev/null | head -n 5)"
	fi
fi

# ---- 1c. time ranges: --time keeps exactly the lines in the range, time 0 too ----

# check_time NAME RANGE: ptdump --call-trace --time RANGE prints the lines of
# the whole call trace whose times are in RANGE (as seconds, either side
# may be empty), and at least one.
check_time() {
	local n=$1 range=$2 lo hi
	lo=${range%%,*} hi=${range#*,}
	"$PTDUMP" --call-trace --time "$range" "$n.data" >"$n.time.out" 2>"$n.time.err"
	awk -v lo="$lo" -v hi="$hi" 'index($0, "\t") {
		split($0, f, " "); t = f[3]; sub(/:$/, "", t)
		if ((lo == "" || t + 0 >= lo + 0) && (hi == "" || t + 0 <= hi + 0)) print }' \
		"$n.exp.out" | sed 's/ *$//' >"$n.time.exp"
	# The name column's padding is sticky (perf's callindent): it depends on
	# the lines printed before, which the range leaves out. Compared without it.
	sed -i 's/ *$//' "$n.time.out"
	if [ ! -s "$n.time.exp" ]; then
		t_fail "--time $range: the whole trace has lines in the range"
	elif cmp -s "$n.time.exp" "$n.time.out" && [ ! -s "$n.time.err" ]; then
		t_pass "--time $range: the $(wc -l <"$n.time.exp") lines of the whole trace in the range"
	else
		t_fail "--time $range: the lines of the whole trace in the range" \
			"$(wc -l <"$n.time.exp") expected, $(wc -l <"$n.time.out") printed: $(first_diff "$n.time.exp" "$n.time.out") $(head -n 3 "$n.time.err")"
	fi
}

if part exec && [ -s envexec.exp.out ]; then
	check_time envexec ,0.0000001
	check_time envexec ,0.0001
	check_time envexec 0.0001,
	check_time envexec 0.00005,0.0002
fi

# ---- 1d. --stats: streams by first trace time then thread; --tid keeps one ----

if part views; then
	n=stats-threads
	record "$n" "intel_pt//u" -- "$PROGS/threads" 50
	"$PTDUMP" --sideband "$n.data" >"$n.sb" 2>/dev/null
	# first ITRACE_START or AUX of each thread, by time then tid
	want=$(awk '$4 == "ITRACE_START" || $4 == "AUX" { split($3, p, "/"); if (!(p[2] in s)) { s[p[2]] = 1; print $1, p[2] } }' "$n.sb" |
		sort -k1,1n -k2,2n | awk '{ printf "%s ", $2 }')
	"$PTDUMP" --stats "$n.data" >"$n.stats" 2>&1
	t_match "--stats: five threads" '^[0-9]+ [0-9]+ [0-9]+ [0-9]+ [0-9]+ $' "$want"
	t_eq "--stats: file streams by first trace time, then tid" "$want" \
		"$(awk '$1 == "tid" { printf "%s ", $2 }' "$n.stats")"
	t_eq "--stats: decoded streams by first trace time, then tid" "$want" \
		"$(awk '$1 == "stream" && $2 == "tid" { sub(/:$/, "", $3); printf "%s ", $3 }' "$n.stats")"
	tid=$(echo "$want" | cut -d' ' -f3)
	"$PTDUMP" --stats --tid "$tid" "$n.data" >"$n.stats1" 2>&1
	t_eq "--stats --tid $tid: that thread's streams only" "tid $tid;stream tid $tid:;total: 1 streams," \
		"$(awk '$1 == "tid" { printf "tid %s;", $2 } $1 == "stream" && $2 == "tid" { printf "stream tid %s;", $3 }
			$1 == "total:" { printf "total: %s %s", $2, $3 }' "$n.stats1")"
fi

# --symbol selects by where the code runs: entered by a call or by a jump
# (printf@plt jumps into printf, through the lazy-binding resolver the first
# time), NAME or a glob. The expected lines come from the unfiltered call
# trace: those below a line that enters printf@plt, down to the next line no
# deeper than it.
under() {
	awk -v re="$1" 'BEGIN { FS = "\t" }
	index($0, "\t") == 0 { next }
	{ n = $2; sub(/^ */, "", n); d = length($2) - length(n); sub(/ +$/, "", n) }
	on && d <= base { on = 0 }
	on { print }
	!on && n ~ re { on = 1; base = d; print }' "$2" | strip_indent
}
if part views; then
	n=sym
	record "$n" "intel_pt//u" -- "$PROGS/calls" 2
	"$PTDUMP" --call-trace "$n.data" >"$n.all" 2>/dev/null
	plt=$(under '^printf@plt$' "$n.all")
	t_match "the unfiltered trace calls printf@plt and more under it" $'\n.*\n' "$plt"
	t_run "--symbol 'printf*' (a glob): exit 0" 0 "$PTDUMP" --call-trace --symbol 'printf*' "$n.data"
	t_eq "--symbol 'printf*': printf@plt and everything under it" "$plt" "$(strip_indent <<<"$out")"
	t_run "--symbol printf (entered by a jump): exit 0" 0 "$PTDUMP" --call-trace --symbol printf "$n.data"
	got=$(strip_indent <<<"$out")
	k=$(grep -c . <<<"$got")
	t_match "--symbol printf: calls under printf are shown ($k lines)" '^[1-9]' "$k"
	t_eq "--symbol printf: the end of what runs under printf@plt (after the resolver)" \
		"$(tail -n "$k" <<<"$plt")" "$got"
	t_run "--symbol of a function that never ran: exit 3" 3 "$PTDUMP" --call-trace --symbol abort "$n.data"
	t_match "--symbol abort: says it never ran" 'symbol abort: the function never ran' "$err"
	t_run "--symbol of no function: exit 1" 1 "$PTDUMP" --call-trace --symbol 'no_such_fn*' "$n.data"
	t_match "--symbol 'no_such_fn*': says no function matches" 'no function of that name' "$err"
fi

# ---- 2. pause/resume windows: only the windows appear ----

WIN=$PROGS/window
part windows && for c in "default:" "noretcomp:noretcomp," "timing:tsc,mtc,cyc,"; do
	cname=${c%%:*} conf=${c#*:}

	# uprobe at window_fn's entry resumes, its return (uretprobe) pauses
	n=win-uprobe-$cname
	record "$n" "intel_pt/${conf}aux-action=start-paused/u" \
		"uprobe:$WIN:window_fn/aux-action=resume,name=enter/" \
		"uretprobe:$WIN:window_fn/aux-action=pause,name=leave/" -- "$WIN" 5
	if [ "$rec_status" = 0 ] && expect "$n"; then
		# window_fn calls nothing: the call trace is empty, as the truth's
		# (the trigger samples are its only lines).
		"$PTDUMP" --call-trace "$n.data" >"$n.exp.out" 2>&1
		t_eq "uprobe window ($cname): --call-trace has no call line, as the truth" \
			"$(cat "$n.exp")" "$(norm <"$n.exp.out")"
		t_eq "uprobe window ($cname): --call-trace shows the ten trigger samples" 10 \
			"$(grep -c -- ' -- \(pause\|resume\) trigger ' "$n.exp.out")"
		check_calls "uprobe window ($cname): --call-ret-trace = truth" "$n" 1
		got=$(cut -f3 "$n.expr.got" | sed 's/^ *//' | sort | uniq -c | awk '{ printf "%s %s;", $1, $2 }')
		begins=$(awk -F'\t' '$2 == "tr strt"' "$n.expr.got" | cut -f3 | sed 's/^ *//' | sort | uniq -c | tr -s ' ')
		t_eq "uprobe window ($cname): five windows, each begins in window_fn" " 5 window_fn" "$begins"
		t_nomatch "uprobe window ($cname): nothing from outside the windows" 'outside_fn|in_between' "$got"
	else
		t_fail "uprobe window ($cname): record" "status $rec_status $(cat "$n.rec.err" "$n.dt.err" 2>/dev/null | head -n 5)"
	fi

	# resume when getpid() returns, pause when uname() enters the kernel
	n=win-sys-$cname
	record "$n" "intel_pt/${conf}aux-action=start-paused/u" \
		"syscalls:sys_exit_getpid/aux-action=resume/" \
		"syscalls:sys_enter_newuname/aux-action=pause/" -- "$WIN" 5
	if [ "$rec_status" = 0 ] && expect "$n"; then
		check_calls "syscall window ($cname): --call-trace = truth" "$n"
		check_calls "syscall window ($cname): --call-ret-trace = truth" "$n" 1
		t_eq "syscall window ($cname): in_between's 20 calls of outside_fn" 20 \
			"$(grep -c $'\t        outside_fn$' "$n.exp.got")"
		t_nomatch "syscall window ($cname): window_fn is outside" 'window_fn' "$(cat "$n.exp.got")"
	else
		t_fail "syscall window ($cname): record" "status $rec_status $(cat "$n.rec.err" "$n.dt.err" 2>/dev/null | head -n 5)"
	fi

	# instruction counters: resume every 7000, pause every 11000 instructions
	n=win-insns-$cname
	record "$n" "intel_pt/${conf}aux-action=start-paused/u" \
		"instructions/period=7000,aux-action=resume,name=Resume/u" \
		"instructions/period=11000,aux-action=pause,name=Pause/u" -- "$PROGS/calls" 2
	if [ "$rec_status" = 0 ] && expect "$n" -t Resume -t Pause; then
		check_calls "counter windows ($cname): --call-trace = truth" "$n"
		check_calls "counter windows ($cname): --call-ret-trace = truth" "$n" 1
		nres=$(grep -c '^R ' "$n.truth")
		t_match "counter windows ($cname): several windows ($nres)" '^([3-9]|[1-9][0-9]+)$' "$nres"
	else
		t_fail "counter windows ($cname): record" "status $rec_status $(cat "$n.rec.err" "$n.dt.err" 2>/dev/null | head -n 5)"
	fi
done

# A window on a recursive function: every inner entry traps again (the
# uprobe resumes what is running) and every inner return finds tracing
# paused; the trace shows the inner traps as interruptions, not pauses.
# Only real pauses and resumes (P and R in the truth) may name a trigger.
if part windows; then
	n=win-rec
	record "$n" "intel_pt/aux-action=start-paused/u" \
		"uprobe:$T_TMP/decode_tiny:rec/aux-action=resume,name=enter-rec/" \
		"uretprobe:$T_TMP/decode_tiny:rec/aux-action=pause,name=leave-rec/" -- "$T_TMP/decode_tiny" 3
	if [ "$rec_status" = 0 ] && expect "$n" -t enter-rec -t leave-rec; then
		check_calls "recursive window: --call-ret-trace = truth" "$n" 1
		t_eq "recursive window: trace ends named as pauses = pauses in the truth" \
			"$(grep -c '^P ' "$n.truth")" "$(grep -c '(paused by leave-rec)' "$n.expr.out")"
		t_eq "recursive window: trace begins named as resumes = resumes in the truth" \
			"$(grep -c '^R ' "$n.truth")" "$(grep -c '(resumed by enter-rec)' "$n.expr.out")"
	else
		t_fail "recursive window: record" "status $rec_status $(cat "$n.rec.err" "$n.dt.err" 2>/dev/null | head -n 5)"
	fi
fi

# ---- 3. damaged input ----

# lcp A B: number of leading lines A and B share.
lcp() {
	awk 'NR == FNR { a[NR] = $0; n = NR; next }
	     !stop && FNR <= n && a[FNR] == $0 { p = FNR; next }
	     { stop = 1 }
	     END { print p + 0 }' "$1" "$2"
}

# segments EXP OUT: checks ptdump's --call-ret-trace output OUT of a damaged
# file against the truth EXP. The error/gap lines cut OUT into segments: the
# first must be the start of EXP exactly (depths included); every later one
# must be a run of consecutive EXP lines, in order, the last one reaching the
# end of EXP. After a resync the decoder cannot know the call depth (the
# calls that led there were in the damage), so later segments are compared
# without indentation. Prints "ok SEGMENTS MATCHED MISSING FIRST" (FIRST:
# lines before the first damage) or "bad: why".
segments() {
	awk -v ret=1 'BEGIN { FS = "\t"; ns = 0 }
	function strip(l) { sub(/\t +/, "\t", l); sub(/\t +/, "\t", l); return l }
	NR == FNR { e[NR] = $0; es[NR] = strip($0); ne = NR; next }
	/instruction trace error|^\[gap: |trace buffer overflow/ { ns++; next }
	index($0, "\t") == 0 { next }
	{
		left = $1; right = $2
		sub(/ +$/, "", right)
		sub(/  \((resumed|paused) by .*\)$/, "", right)
		split(left, f, " ")
		fl = left
		sub(/^.*[0-9]: +/, "", fl); sub(/ +\(.*$/, "", fl)
		g[ns, ++len[ns]] = f[2] "\t" fl "\t" right
	}
	END {
		if (!ns) { print "bad: no error or gap reported"; exit }
		for (i = 1; i <= len[0]; i++)
			if (g[0, i] != e[i]) {
				printf "bad: line %d before the damage differs: truth \"%s\", ptdump \"%s\"\n", i, e[i], g[0, i]
				exit
			}
		pos = len[0] + 1; matched = len[0]
		for (k = 1; k <= ns; k++) {
			m = len[k]
			if (!m)
				continue
			if (k == ns) {
				j = ne - m + 1
				ok = j >= pos
				for (i = 1; ok && i <= m; i++)
					ok = strip(g[k, i]) == es[j + i - 1]
				if (!ok) {
					printf "bad: the %d lines after the last damage are not the end of the truth (first: \"%s\")\n", m, g[k, 1]
					exit
				}
			} else {
				# the first place at or after pos where the segment
				# appears, found in the joined text of the truth
				if (!joined) {
					# in pieces: appending line by line would copy
					# the growing text each time
					piece = ""
					base = 0
					for (i = 1; i <= ne; i++) {
						off[i] = base + length(piece) + 1
						piece = piece "\n" es[i]
						if (i % 512 == 0) {
							all = all piece
							base = length(all)
							piece = ""
						}
					}
					all = all piece "\n"
					joined = 1
				}
				seg = ""
				for (i = 1; i <= m; i++)
					seg = seg "\n" strip(g[k, i])
				seg = seg "\n"
				at = pos <= ne ? index(substr(all, off[pos]), seg) : 0
				if (!at) {
					printf "bad: segment %d (%d lines, first \"%s\") is nowhere in the truth after line %d\n", k, m, g[k, 1], pos
					exit
				}
				at += off[pos] - 1
				lo = pos; hi = ne
				while (lo < hi) {
					mid = int((lo + hi + 1) / 2)
					if (off[mid] <= at)
						lo = mid
					else
						hi = mid - 1
				}
				j = lo
			}
			pos = j + m
			matched += m
		}
		if (pos - 1 != ne && len[ns]) {
			print "bad: the decode does not reach the end of the truth"
			exit
		}
		printf "ok %d %d %d %d\n", ns + 1, matched, ne - matched, len[0]
	}' "$1" "$2"
}
# check_resync TITLE EXP OUT [LAST_EMPTY_OK]
check_resync() {
	local r
	r=$(segments "$2" "$3")
	case $r in
	ok*)
		read -r _ nseg nm nmiss _ <<<"$r"
		if [ "$nmiss" -gt 0 ] && [ "$nm" -gt 0 ]; then
			t_pass "$1 ($nseg segments, $nm lines match, $nmiss lost in the damage)"
		else
			t_fail "$1" "$nm lines match, $nmiss missing: the damage should cost some lines"
		fi ;;
	*) t_fail "$1" "$r" ;;
	esac
}

# hexoff LINE: the "offset 0x..." of an error line, in decimal.
hexoff() { printf '%d' "$(sed -n 's/.* at offset \(0x[0-9a-f]*\).*/\1/p' <<<"$1" | head -n 1)"; }

if part damage; then
	n=dmg
	record "$n" "intel_pt//u" -- "$T_TMP/decode_tiny" 10000
	if [ "$rec_status" != 0 ] || ! expect "$n"; then
		t_fail "damage: base recording" "status $rec_status $(cat "$n.rec.err" "$n.dt.err" 2>/dev/null | head -n 5)"
	else
		tid=$(./decode_damage list dmg.data | awk '$2 == "AUX" { print $4; exit }')
		size=$(./decode_damage list dmg.data | awk '$2 == "AUX" { n += $7 } END { print n + 0 }')
		t_match "damage: base trace spans several PSB periods ($size bytes)" '^([1-9][0-9]{5,})$' "$size"
		check_calls "damage: undamaged base = truth" dmg 1

		# 3a. bytes corrupted inside the PT stream
		at=$((size * 3 / 8))
		t_run "corrupt: rewrite" 0 ./decode_damage rewrite dmg.data corrupt.data --corrupt "$tid" "$at" 16
		t_run "corrupt: ptdump decodes, exit 0" 0 "$PTDUMP" --call-ret-trace corrupt.data
		printf '%s\n' "$out" >corrupt.out
		e=$(grep 'instruction trace error at offset' corrupt.out)
		t_eq "corrupt: one decode error reported" 1 "$(grep -c 'instruction trace error' corrupt.out)"
		o=$(hexoff "$e")
		if [ "$o" -ge "$at" ] && [ "$o" -lt $((at + 16)) ]; then
			t_pass "corrupt: error offset $o inside the damaged bytes $at..$((at + 15))"
		else
			t_fail "corrupt: error offset" "reported $o for damage at $at..$((at + 15)): $e"
		fi
		check_resync "corrupt: decoding resyncs, the rest matches the truth" dmg.expr corrupt.out

		# The packet listing: clean on the undamaged file; on the damaged one,
		# one error inside the damage, then psb and the packets after it.
		t_run "packets: undamaged listing" 0 "$PTDUMP" --packets dmg.data
		t_match "packets: starts with psb at offset 0" '^0000000000000000  psb$' "$(sed -n 2p <<<"$out")"
		t_nomatch "packets: no error in an undamaged trace" 'error' "$out"
		npsb=$(grep -c '  psb$' <<<"$out")
		t_run "packets: damaged listing" 0 "$PTDUMP" --packets corrupt.data
		pe=$(grep -m1 'error:' <<<"$out" | cut -d' ' -f1)
		if [ -n "$pe" ] && [ "$((16#$pe))" -ge "$at" ] && [ "$((16#$pe))" -lt $((at + 16)) ]; then
			t_pass "packets: error at offset $((16#$pe)) inside the damaged bytes"
		else
			t_fail "packets: error offset" "got '$pe' for damage at $at..$((at + 15))"
		fi
		t_match "packets: the listing resumes at a psb after the damage" 'error:.*resync' "$out"
		t_eq "packets: every psb is listed, before and after the damage" "$npsb" "$(grep -c '  psb$' <<<"$out")"

		# 3b. a piece of the stream cut out (the trace is rewritten in 4 KiB chunks)
		at=$(((size / 2) / 4096 * 4096))
		t_run "cut: rewrite" 0 ./decode_damage rewrite dmg.data cut.data --split 4096 --cut "$tid" "$at" 4096
		t_run "cut: ptdump decodes, exit 0" 0 "$PTDUMP" --call-ret-trace cut.data
		printf '%s\n' "$out" >cut.out
		t_match "cut: the gap is reported at its offset with its size" \
			"^\\[gap: 4,096 bytes of trace lost, [0-9.]+-[0-9.]+\\] at offset $(printf '%#x' "$at") " "$out"
		check_resync "cut: decoding resyncs, the rest matches the truth" dmg.expr cut.out

		# 3c. a chunk damaged in the file: its checksum fails, the reader skips it
		t_run "bad chunk: rewrite in 4 KiB chunks" 0 ./decode_damage rewrite dmg.data split.data --split 4096
		read -r foff _ _ _ sarg _ <<<"$(./decode_damage list split.data | awk '$2 == "AUX"' | sed -n 5p)"
		cp split.data badchunk.data
		printf 'garbage!' | dd of=badchunk.data bs=1 seek=$((foff + 40 + 100)) conv=notrunc 2>/dev/null
		t_run "bad chunk: ptdump decodes, exit 0" 0 "$PTDUMP" --call-ret-trace badchunk.data
		printf '%s\n' "$out" >badchunk.out
		t_match "bad chunk: warning names the chunk's file offset" "offset $foff: checksum mismatch in AUX chunk" "$err"
		t_match "bad chunk: the gap is reported at the stream offset" \
			"^\\[gap: 4,096 bytes of trace lost, [0-9.]+-[0-9.]+\\] at offset $(printf '%#x' "$sarg") " "$out"
		check_resync "bad chunk: the rest matches the truth" dmg.expr badchunk.out

		# 3d. the file cut short in the middle (a crash): decodes up to there
		head -c $((foff + 10)) split.data >short.data
		t_run "cut short: ptdump decodes, exit 0" 0 "$PTDUMP" --call-ret-trace short.data
		t_match "cut short: reported" "cut short|ends inside|truncated" "$err"
		printf '%s\n' "$out" | norm 1 >short.got
		p=$(lcp dmg.expr short.got)
		t_eq "cut short: what decodes is a prefix of the truth" "$(wc -l <short.got)" "$p"
		t_match "cut short: most of the first four chunks decode ($p lines)" '^[1-9][0-9]{2,}$' "$p"
		# ... and cut before the chunks that describe the recording: said so
		head -c 300 split.data >tiny.data
		t_run "cut at 300 bytes: refused" 1 "$PTDUMP" --call-trace tiny.data
		t_match "cut at 300 bytes: says the file was cut short, not ENOENT" \
			'cut short after [0-9]+ bytes, before the chunks that describe the recording' "$err"
	fi

	# 3e. a missing image: libc's code is neither in the file nor on disk
	# (the binaries are looked up under --symfs, which holds the program,
	# the loader and the loader's debug file). With a PSB every 2 KiB the
	# decoder finds its feet again in the program between its calls into
	# libc. What the truth names inside libc, ptdump cannot name: decode_truth
	# -m shows those addresses as libc.so.6+0xOFF too.
	n=img
	record "$n" "intel_pt/psb_period=0/u" -- "$PROGS/loop" 3
	LIBC= LDSO=
	if [ "$rec_status" = 0 ]; then
		"$PTDUMP" --sideband "$n.data" >"$n.sb0" 2>/dev/null
		LIBC=$(awk '/ MMAP / { for (i = 1; i <= NF; i++) if ($i == "r-x") print $(i + 1) }' "$n.sb0" |
			grep -m1 'libc\.so')
		LDSO=$(awk '/ MMAP / { for (i = 1; i <= NF; i++) if ($i == "r-x") print $(i + 1) }' "$n.sb0" |
			grep -m1 'ld-linux')
	fi
	if [ "$rec_status" != 0 ] || [ -z "$LIBC" ] || ! expect "$n" -m "$LIBC"; then
		t_fail "missing image: base recording" "status $rec_status, libc '$LIBC' $(cat "$n.rec.err" "$n.dt.err" 2>/dev/null | head -n 5)"
	else
		mkdir -p "symfs$(dirname "$PROGS/loop")" "symfs$(dirname "$LDSO")"
		cp "$PROGS/loop" "symfs$PROGS/loop"
		cp "$LDSO" "symfs$LDSO"
		# and the loader's separate debug file, where the system has one
		# (the truth names the loader's functions from it, as perf does)
		bid=$(readelf -n "$LDSO" 2>/dev/null | awk '/Build ID:/ { print $3 }')
		dbg=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
		if [ -n "$bid" ] && [ -f "$dbg" ]; then
			mkdir -p "symfs${dbg%/*}"
			cp "$dbg" "symfs$dbg"
		fi
		t_run "missing image: rewrite without libc's image" 0 ./decode_damage rewrite img.data noimg.data --drop-image "$LIBC"
		t_run "missing image: ptdump decodes, exit 0" 0 "$PTDUMP" --call-ret-trace --symfs symfs noimg.data
		printf '%s\n' "$out" >noimg.out
		t_match "missing image: decode error with offset and address" \
			'instruction trace error at offset 0x[0-9a-f]+ .* no code image for address 0x' "$out"
		t_match "missing image: ptdump warns that libc's code is missing" "${LIBC##*/}" "$err"
		r=$(segments img.expr noimg.out)
		read -r verdict nseg nm nmiss nfirst <<<"$r"
		if [ "$verdict" = ok ] && [ "$nm" -gt "$nfirst" ]; then
			t_pass "missing image: outside libc the decode matches the truth ($nseg segments, $nm lines, $nmiss lost)"
		else
			t_fail "missing image: outside libc the decode matches the truth" "$r"
		fi
	fi

	# 3f. images recorded by reference (--no-embed): a file of another build
	# at the path is not used, and ptdump says so; a missing file likewise.
	mkdir -p ref
	cp "$PROGS/calls" ref/calls
	"$PTREC" record --emulate -q --no-embed -o ref.data -- "$T_TMP/ref/calls" >/dev/null 2>ref.err
	t_eq "by reference: records" 0 "$?"
	t_run "by reference, file present: decodes without error" 0 "$PTDUMP" --call-trace ref.data
	t_nomatch "by reference, file present: no error" 'trace error' "$out"
	cp "$PROGS/loop" ref/calls
	t_run "by reference, other build: ptdump decodes, exit 0" 0 "$PTDUMP" --call-trace ref.data
	t_match "by reference, other build: not used" 'no code image for address 0x4000001' "$out"
	t_match "by reference, other build: ptdump says its build id differs" 'ref/calls.*build.id|build.id.*ref/calls' "$err"
	rm -f ref/calls
	t_run "by reference, file gone: ptdump decodes, exit 0" 0 "$PTDUMP" --call-trace ref.data
	t_match "by reference, file gone: decode error with offset" 'trace error at offset 0x[0-9a-f]+ .*no code image' "$out"
	t_match "by reference, file gone: ptdump says the file is missing" 'ref/calls' "$err"
fi

# ---- 3g. random damage: 20 truncations and 20 corruptions ----

# The chunk layout, read from the chunk headers as ptrec-file(5) describes
# them (not through the project's reader): one line per chunk "offset type
# stored_len raw_len arg" (type 5 is AUX).
chunk_layout() {
	local f=$1 off=32 size magic typ stored raw lo hi
	size=$(stat -c %s "$f")
	while [ $((off + 40)) -le "$size" ]; do
		read -r magic typ stored raw lo hi <<<"$(od -An -tu4 -j "$off" -N 32 "$f" |
			tr -s ' \n' ' ' | awk '{ print $1, $2 % 65536, $4, $3, $7, $8 }')"
		[ "$magic" = 1263027115 ] || break # 0x4B4843AB
		echo "$off $typ $stored $raw $((lo + hi * 4294967296))"
		off=$((off + 40 + (stored + 7) / 8 * 8))
	done
}
commas() { sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$1"; }
# secs TEXT: "12.345678901" -> nanoseconds
secs() { local a=${1%%.*} b=${1#*.}; echo $((a * 1000000000 + 10#$b)); }
rnd() { echo $(((RANDOM << 15 | RANDOM) % $1)); }

# check_damaged TITLE FILE GAP_BYTES GAP_OFFSET [trailing]: FILE decodes with
# one gap of GAP_BYTES at stream offset GAP_OFFSET (none when GAP_BYTES is
# 0), and everything else as in the intact file: the lines before the gap
# are the intact decode's first lines, those after it its last lines (call
# depth aside: the calls before a resync are unknown).
check_damaged() {
	local title=$1 f=$2 bytes=$3 goff=$4 trailing=${5:-} rc ng gl n1 n2 nfull why=
	# The trace after a gap up to the next PSB cannot be decoded (Intel PT
	# syncs at a PSB only): when the rest of the stream has none, ptdump says so.
	local nopsb='^ instruction trace error at offset .*: no PSB in [0-9]* bytes of trace: nothing to decode$'
	"$PTDUMP" --call-trace "$f" >"$f.out" 2>"$f.err"
	grep -v "$nopsb" "$f.out" >"$f.calls"
	mv "$f.calls" "$f.out"
	rc=$?
	"$PTDUMP" --stats "$f" >"$f.stats" 2>/dev/null
	ng=$(grep -c '^\[gap: ' "$f.out")
	gl=$(grep -m1 '^\[gap: ' "$f.out")
	nfull=$(wc -l <random.intact)
	if [ "$rc" != 0 ]; then
		why="ptdump exited with status $rc: $(head -n 3 "$f.err")"
	elif grep -v $'\t' "$f.out" | grep -qv '^\[gap: '; then
		why="lines other than calls and the gap: $(grep -v $'\t' "$f.out" | grep -v '^\[gap: ' | head -n 3)"
	elif [ "$bytes" = 0 ]; then
		[ "$ng" = 0 ] || why="a gap where none is known: $gl"
		grep -q '^gaps: 0 (0 bytes lost)$' "$f.stats" || why="--stats: $(grep '^gaps' "$f.stats")"
		cmp -s "$f.out" <(head -n "$(wc -l <"$f.out")" random.intact) ||
			why="the decode is not a prefix of the intact one"
	elif [ "$ng" != 1 ]; then
		why="$ng gap lines, expected 1"
	elif ! grep -q "^gaps: 1 ($bytes bytes lost)$" "$f.stats"; then
		why="--stats says '$(grep '^gaps' "$f.stats")', expected $bytes bytes lost"
	elif [[ $(sed 's/, [0-9.?]*-[0-9.?]*\]/]/' <<<"$gl") != "[gap: $(commas "$bytes") bytes of trace lost] at offset $(printf '%#x' "$goff") "* ]]; then
		why="gap line '$gl', expected $bytes bytes at offset $goff"
	else
		n1=$(grep -n -m1 '^\[gap: ' "$f.out" | cut -d: -f1)
		n1=$((n1 - 1))
		n2=$(($(wc -l <"$f.out") - n1 - 1))
		if ! cmp -s <(head -n "$n1" "$f.out") <(head -n "$n1" random.intact); then
			why="the $n1 lines before the gap differ from the intact decode"
		elif [ -n "$trailing" ] && [ "$n2" != 0 ]; then
			why="$n2 lines after a gap at the end of the trace"
		elif [ "$n2" -gt 0 ] && ! cmp -s <(tail -n "$n2" "$f.out" | strip_indent) \
			<(tail -n "$n2" random.intact | strip_indent); then
			why="the $n2 lines after the gap are not the end of the intact decode"
		elif [ $((n1 + n2)) -ge "$nfull" ]; then
			why="nothing was lost: $n1 + $n2 lines of $nfull"
		else
			# the span: from no earlier than the last line before to no
			# later than the first line after
			local span t0 t1 tb ta
			span=$(sed -n 's/^\[gap: [^]]*, \([0-9.?]*\)-\([0-9.?]*\)\].*/\1 \2/p' <<<"$gl")
			read -r t0 t1 <<<"$span"
			tb=$(head -n "$n1" "$f.out" | tail -n 1 | awk '{ sub(/:$/, "", $3); print $3 }')
			ta=$(tail -n "$n2" "$f.out" | head -n 1 | awk '{ sub(/:$/, "", $3); print $3 }')
			if [ -z "$span" ] && [ $((n1 + n2)) -gt 0 ]; then
				why="no time span in '$gl'"
			elif [ "$n1" -gt 0 ] && { [ "$t0" = "?" ] || [ "$(secs "$t0")" -lt "$(secs "$tb")" ]; }; then
				why="span starts at $t0, before the last line before the gap ($tb)"
			elif [ "$n2" -gt 0 ] && { [ "$t1" = "?" ] || [ "$(secs "$t1")" -gt "$(secs "$ta")" ]; }; then
				why="span ends at $t1, after the first line after the gap ($ta)"
			fi
		fi
	fi
	if [ -z "$why" ]; then t_pass "$title"; else t_fail "$title" "$why"; fi
}

if part random; then
	n=random
	record "$n" "intel_pt//u" -- "$T_TMP/decode_tiny" 3000
	if [ "$rec_status" != 0 ] ||
		! ./decode_damage rewrite random.data random.split --split 2048 --meta-first >/dev/null 2>rw.err ||
		! "$PTDUMP" --call-trace random.split >random.intact 2>random.intact.err ||
		[ -s random.intact.err ]; then
		t_fail "random damage: base recording" "status $rec_status $(cat "$n.rec.err" rw.err random.intact.err 2>/dev/null | head -n 5)"
	else
		chunk_layout random.split >layout
		mapfile -t AUX < <(awk '$2 == 5' layout)
		FSIZE=$(stat -c %s random.split)
		t_eq "random damage: the layout read from the headers ends at the file's end" \
			"$FSIZE" "$(tail -n 1 layout | awk '{ print $1 + 40 + int(($3 + 7) / 8) * 8 }')"
		naux=${#AUX[@]}
		read -r first_aux _ <<<"${AUX[0]}"
		RANDOM=2020
		for i in $(seq 1 20); do
			k=$(rnd "$naux")
			read -r off _ stored raw arg <<<"${AUX[$k]}"
			# a header may be hit too where holes on both sides tell the size
			lo=$((off + 40)) span=$((stored - 16))
			if [ "$k" -gt 0 ] && [ "$k" -lt $((naux - 1)) ]; then lo=$off span=$((stored + 40 - 16)); fi
			at=$((lo + $(rnd $((span + 1)))))
			bytes=
			for _ in $(seq 16); do bytes+=$(printf '\\x%02x' $(rnd 256)); done
			cp random.split "corrupt$i.data"
			printf "$bytes" | dd of="corrupt$i.data" bs=1 seek="$at" conv=notrunc 2>/dev/null
			if cmp -s random.split "corrupt$i.data"; then
				t_skip "corruption $i" "the random bytes equal the file's"
				continue
			fi
			check_damaged "corruption $i (16 bytes at $at, AUX chunk $k of $naux): one gap of $raw bytes" \
				"corrupt$i.data" "$raw" "$arg"
		done
		for i in $(seq 1 20); do
			cut=$((first_aux + $(rnd $((FSIZE - first_aux)))))
			head -c "$cut" random.split >"trunc$i.data"
			# the chunk the cut falls in: its stream bytes are lost when its
			# header is whole (else nothing in the file tells of them)
			read -r off typ _ raw arg <<<"$(awk -v c="$cut" '$1 <= c { l = $0 } END { print l }' layout)"
			if [ "$cut" -lt $((first_aux + 40)) ]; then
				# not one whole trace chunk header: nothing to decode, said so
				t_run "truncation $i at $cut (in the first trace chunk's header): no trace, exit 3" 3 \
					"$PTDUMP" --call-trace "trunc$i.data"
				t_match "truncation $i: says there is no trace" 'no trace data' "$err"
			elif [ "$typ" = 5 ] && [ $((off + 40)) -le "$cut" ]; then
				check_damaged "truncation $i at $cut (inside AUX chunk at $off): a gap of $raw bytes at the end" \
					"trunc$i.data" "$raw" "$arg" trailing
			else
				check_damaged "truncation $i at $cut (type $typ chunk header at $off cut): no gap known" \
					"trunc$i.data" 0 0
			fi
			# --info says up to what time the trace is intact: the last TSC
			# packet that --packets lists, converted as perf does
			info=$("$PTDUMP" --info "trunc$i.data" 2>/dev/null)
			tsc=$("$PTDUMP" --packets "trunc$i.data" 2>/dev/null | awk '$2 == "tsc" { t = $3 } END { print t }')
			read -r _ _ shift _ mult _ zero rest <<<"$(grep '^time:' <<<"$info")"
			if [ -z "$tsc" ]; then
				want="up to an unknown time"
			else
				tsc=$((16#$tsc))
				if [[ $rest == *"no TSC conversion"* ]] || [ "$mult" = 0 ]; then t=$tsc; else
					t=$((zero + (tsc >> shift) * mult + (((tsc & ((1 << shift) - 1)) * mult) >> shift)))
				fi
				want=$(printf 'trace up to time %d.%09d ' $((t / 1000000000)) $((t % 1000000000)))
			fi
			t_match "truncation $i: --info says up to what time the trace is intact" \
				"^intact: +$want" "$(grep '^intact:' <<<"$info")"
		done
	fi
fi

# ---- 4. a closed pipe ends ptdump quietly ----

if part pipe; then
	big=dmg.data
	[ -e "$big" ] || record dmg "intel_pt//u" -- "$T_TMP/decode_tiny" 10000
	if [ -e "$big" ]; then
		for v in --call-trace --insn-trace --branches; do
			"$PTDUMP" $v "$big" 2>pipe.err | head -n 1 >/dev/null
			st=${PIPESTATUS[0]}
			if [ "$st" = 0 ] && [ ! -s pipe.err ]; then
				t_pass "ptdump $v | head -1: exit 0, nothing on stderr"
			else
				t_fail "ptdump $v | head -1" "exit status $st; stderr: $(head -n 3 pipe.err)"
			fi
		done
		sz=$("$PTDUMP" --insn-trace "$big" | wc -c)
		t_match "the closed-pipe case writes more than a pipe holds ($sz bytes)" '^[0-9]{7,}$' "$sz"
	fi
fi
t_done
