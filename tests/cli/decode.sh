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
TOP=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BD=$B ;; *) BD=$TOP/$B ;; esac
PTREC=${PTREC:-$BD/ptrec}
PTDUMP=${PTDUMP:-$BD/ptdump}
case $PTREC in /*) ;; *) PTREC=$PWD/$PTREC ;; esac
case $PTDUMP in /*) ;; *) PTDUMP=$PWD/$PTDUMP ;; esac
. "$(dirname "$0")/lib.sh"
PROGS=$BD/progs
export PTREC_PLUGIN=${PTREC_PLUGIN:-$BD/ptrec-emu.so}
SRC=$TOP/tests/cli/src
# DECODE_KEEP=1 keeps the work directory for a look at what failed;
# DECODE_ONLY="truth windows damage pipe" runs only those parts.
ONLY=${DECODE_ONLY:-truth windows damage pipe}
part() { [[ " $ONLY " == *" $1 "* ]]; }
if [ -n "${DECODE_KEEP:-}" ]; then
	trap - EXIT
	echo "# work directory: $T_TMP"
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

# ptdump --call-trace / --call-ret-trace lines -> "tid TAB [flag TAB] indent name",
# without perf's padding and without the "(resumed by ...)" of trigger names.
# Other lines (errors, trigger samples) are left out.
norm() {
	awk -v ret="${1:-0}" 'BEGIN { FS = "\t" }
	index($0, "\t") == 0 { next }
	{
		left = $1; right = $2
		sub(/ +$/, "", right)
		sub(/  \((resumed|paused) by .*\)$/, "", right)
		n = split(left, f, " ")
		tid = f[2]
		if (ret) {
			fl = left
			sub(/^.*[0-9]: +/, "", fl); sub(/ +\(.*$/, "", fl)
			printf "%s\t%s\t%s\n", tid, fl, right
		} else
			printf "%s\t%s\n", tid, right
	}'
}

# Lines of ptdump's output that are not call lines (errors, gaps), trigger
# sample lines excepted.
odd_lines() { grep -v $'\t' "$1" | grep -v -- ' -- \(pause\|resume\) trigger ' || true; }

# First differing lines of two files, for failure reports.
first_diff() { diff "$1" "$2" | head -n 12; }

# record NAME SPEC... -- PROG ARGS: records NAME.data and NAME.truth; the
# command's exit status is in $rec_status.
record() {
	local name=$1 args=()
	shift
	while [ "$1" != -- ]; do args+=(-e "$1"); shift; done
	shift
	"$PTREC" record --emulate -q "${args[@]}" --emulate-truth "$name.truth" -o "$name.data" -- "$@" \
		>"$name.rec.out" 2>"$name.rec.err"
	rec_status=$?
}

# expect NAME [decode_truth options]: NAME.exp (call trace) and NAME.expr
# (call-ret trace) from the truth, sorted stably by thread.
expect() {
	local name=$1
	shift
	"$PTDUMP" --sideband "$name.data" >"$name.sb" 2>"$name.sb.err" || return 1
	./decode_truth "$@" "$name.sb" "$name.truth" >"$name.exp.raw" 2>"$name.dt.err" || return 1
	./decode_truth -r "$@" "$name.sb" "$name.truth" >"$name.expr.raw" 2>>"$name.dt.err" || return 1
	sort -s -n -k1,1 "$name.exp.raw" >"$name.exp"
	sort -s -n -k1,1 "$name.expr.raw" >"$name.expr"
}

# check_calls TITLE NAME [ret]: ptdump's call trace of NAME.data equals the truth's.
check_calls() {
	local title=$1 name=$2 ret=${3:-0} view=--call-trace ext=exp odd rc
	[ "$ret" = 1 ] && view=--call-ret-trace ext=expr
	"$PTDUMP" $view "$name.data" >"$name.$ext.out" 2>"$name.$ext.err"
	rc=$?
	if [ "$rc" != 0 ]; then
		t_fail "$title" "ptdump $view exited with status $rc: $(head -n 5 "$name.$ext.err")"
		return
	fi
	norm "$ret" <"$name.$ext.out" | sort -s -n -k1,1 >"$name.$ext.got"
	odd=$(odd_lines "$name.$ext.out")
	if [ -n "$odd" ] || [ -s "$name.$ext.err" ]; then
		t_fail "$title" "unexpected errors or warnings:
$odd
$(head -n 5 "$name.$ext.err")"
	elif [ ! -s "$name.$ext" ]; then
		t_fail "$title" "the truth gives no call line at all"
	elif cmp -s "$name.$ext" "$name.$ext.got"; then
		t_pass "$title ($(wc -l <"$name.$ext") lines)"
	else
		t_fail "$title" "$(wc -l <"$name.$ext") lines expected, $(wc -l <"$name.$ext.got") decoded; first differences (< truth, > ptdump):
$(first_diff "$name.$ext" "$name.$ext.got")"
	fi
}

# One recording of PROG with tracer config CONF, compared in both views.
truth_case() {
	local title=$1 name=$2 want=$3 conf=$4
	shift 4
	record "$name" "intel_pt/$conf/u" -- "$@"
	if [ "$rec_status" != "$want" ]; then
		t_fail "$title: record" "exit status $rec_status, expected $want: $(head -n 5 "$name.rec.err")"
		return
	fi
	if ! expect "$name"; then
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
		check_calls "uprobe window ($cname): --call-trace = truth" "$n"
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
	/instruction trace error|trace data lost|trace buffer overflow/ { ns++; next }
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
			"trace data lost at offset $(printf '%#x' "$at") .*: 4096 bytes missing" "$out"
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
			"trace data lost at offset $(printf '%#x' "$sarg") .*: 4096 bytes missing" "$out"
		check_resync "bad chunk: the rest matches the truth" dmg.expr badchunk.out

		# 3d. the file cut short in the middle (a crash): decodes up to there
		head -c $((foff + 10)) split.data >short.data
		t_run "cut short: ptdump decodes, exit 0" 0 "$PTDUMP" --call-ret-trace short.data
		t_match "cut short: reported" "cut short|ends inside|truncated" "$err"
		printf '%s\n' "$out" | norm 1 >short.got
		p=$(lcp dmg.expr short.got)
		t_eq "cut short: what decodes is a prefix of the truth" "$(wc -l <short.got)" "$p"
		t_match "cut short: most of the first four chunks decode ($p lines)" '^[1-9][0-9]{2,}$' "$p"
	fi

	# 3e. a missing image: libc's code is neither in the file nor on disk
	# (the binaries are looked up under --symfs, which holds the program and
	# the loader only). With a PSB every 2 KiB the decoder finds its feet
	# again in the program between its calls into libc. What the truth
	# names inside libc, ptdump cannot name: decode_truth -m shows those
	# addresses as numbers too.
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
