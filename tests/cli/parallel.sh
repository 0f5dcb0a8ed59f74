#!/usr/bin/env bash
# Parallel decoding (ptdump(1), -j): every view that decodes writes the same
# bytes, standard output and standard error, with -j4 as with -j1 (one
# pass, no threads), on clean, damaged and cut recordings, with parts as
# small as --buffer 4K makes them (16 KiB of trace: many parts, each cut
# at a PSB) and with the default parts, on ptrec files and on the same
# trace exported as perf.data (streams in memory). -j4 does start worker
# threads, and -j1 none. (With --core libipt, --events decodes in one pass
# whatever -j says: the blocks it prints end where libipt's block cache ends them.)
. "$(dirname "$0")/src/paths.sh"
model_suite parallel "$PROGS/loop" || { t_done; exit; }

emu_rec calls 'intel_pt//' "$PROGS/calls"
emu_rec threads 'intel_pt/noretcomp/' "$PROGS/threads"
emu_rec signals 'intel_pt//' "$PROGS/signals"
# Functions entered by jumps and fall-through, at the time of the code before.
emu_rec tailcall 'intel_pt//' "$PROGS/tailcall" 2
# Return compression over many parts: a compressed return whose call lies
# in the part before.
emu_rec loopret 'intel_pt//' "$PROGS/loop" 40
# A 64 KiB AUX area and 64 KiB file chunks: many AUX chunks whatever the
# machine's speed (the damaged copies need several), and gaps where it filled.
RECOPTS='-m 256K,64K --chunk-size 64K' emu_rec loop 'intel_pt/noretcomp/' "$PROGS/loop" 25

# Damaged copies: a payload byte of an AUX chunk flipped in the middle of
# each of several chunks (gaps), trace bytes flipped inside a chunk that
# is stored as is (decode errors mid-part), and the file cut inside its
# last AUX chunk.
python3 "$SRC/damage_aux.py" loop.data damaged.data cut.data 1::3
for f in calls loopret; do
	"$PTDUMP" --to-perf-data $f.perf $f.data >/dev/null 2>&1 ||
		t_fail "$f: --to-perf-data"
done

views=(--call-trace --call-ret-trace --insn-trace --branches --stats --events
	"--format=json --call-trace" "--format=json --branches" "--format=json --stats"
	--report --windows --folded "--call-trace --durations" "--call-trace --no-plt")
for f in calls threads signals loopret loop damaged cut calls.perf loopret.perf; do
	in=$f.data
	case $f in *.perf) in=$f ;; esac
	[ -e "$in" ] || continue
	for buf in 4K 2M; do
		for v in "${views[@]}"; do
			# shellcheck disable=SC2086
			a=$("$PTDUMP" -j1 $v --buffer $buf "$in" 2>j1.err | cksum)
			# shellcheck disable=SC2086
			b=$("$PTDUMP" -j4 $v --buffer $buf "$in" 2>j4.err | cksum)
			if [ "$a" = "$b" ] && cmp -s j1.err j4.err; then
				t_pass "$f $v --buffer $buf: -j4 = -j1 (${a#* } bytes)"
			else
				t_fail "$f $v --buffer $buf: -j4 = -j1" "$a / $b
$(diff j1.err j4.err | head -5)"
			fi
		done
	done
done

# --stats counts blocks and branches in a loop of its own (no events):
# its totals must be those of the views that emit every instruction and
# branch, on the clean, damaged and cut files alike (the instruction
# lines of --insn-trace: not its "[gap: ...]" lines).
for f in calls threads signals loopret loop damaged cut; do
	[ -e "$f.data" ] || continue
	want="$("$PTDUMP" -j1 -q --insn-trace "$f.data" 2>/dev/null | grep -v '^\[' | grep -c ':  *[0-9a-f]\{1,16\} ') $(
		"$PTDUMP" -j1 --branches --format=json "$f.data" 2>/dev/null | python3 -c 'import json, sys
n = {"branch": 0, "call": 0, "return": 0, "syscall": 0}
for l in sys.stdin:
    o = json.loads(l)
    if o.get("type") != "branch": continue
    n["branch"] += 1
    if o["kind"] in n: n[o["kind"]] += 1
print(n["branch"], n["call"], n["return"], n["syscall"])')"
	t_eq "$f: --stats totals = the instructions of --insn-trace, the branches of --branches" "$want" \
		"$("$PTDUMP" -j1 --stats "$f.data" 2>/dev/null | awk '$1 == "instructions:" { i = $2 } $1 == "branches:" { b = $2 }
			$1 == "calls:" { c = $2 } $1 == "returns:" { r = $2 } $1 == "syscalls:" { s = $2 } END { print i, b, c, r, s }')"
done

# --folded and --report take blocks summed by function from the decoder
# (prec_decoder_opts.fn_blocks): each function's instructions must still be
# those the instruction trace shows in it, with -j1 and -j4.
for f in calls threads signals tailcall loopret loop damaged cut; do
	[ -e "$f.data" ] || continue
	want=$("$PTDUMP" -j1 -q --insn-trace "$f.data" 2>/dev/null | python3 -c 'import collections, os, re, sys
n = collections.Counter()
for l in sys.stdin:
    if "\t" not in l: continue
    m = re.search(r" (\S+)\+0x[0-9a-f]+ \((.*)\)\t", l)
    if m: n[m.group(1)] += 1
    else: n["[" + os.path.basename(re.search(r" \[unknown\] \((.*)\)\t", l).group(1)) + "]"] += 1
print(" ".join("%s=%d" % kv for kv in sorted(n.items())))')
	for j in 1 4; do
		got=$("$PTDUMP" -j$j -q --folded "$f.data" 2>/dev/null | python3 -c 'import collections, sys
n = collections.Counter()
for l in sys.stdin:
    stack, w = l.rsplit(" ", 1)
    n[stack.split(";")[-1]] += int(w)
print(" ".join("%s=%d" % kv for kv in sorted(n.items())))')
		t_eq "$f -j$j: --folded's instructions by function = --insn-trace's" "$want" "$got"
	done
	t_match "$f: the instruction trace has functions" '^[^ ]+=[0-9]+' "$want"
done

# The profile views sum a function's blocks across time changes too
# (prec_decoder_opts.fn_span), but not under a time filter, which keeps or
# drops each block by its own time. A filter from 1 ns keeps every event
# with a time, and the events before the first time give no time, so the
# time profile must be the same with it as without.
for f in calls threads signals tailcall loop damaged cut; do
	[ -e "$f.data" ] || continue
	a=$("$PTDUMP" -j4 -q --folded --weight time "$f.data" 2>&1 | cksum)
	b=$("$PTDUMP" -j4 -q --folded --weight time --time 0.000000001, "$f.data" 2>&1 | cksum)
	t_eq "$f --folded --weight time: blocks summed across time = blocks summed at one time" "$b" "$a"
done

# With libipt's block decoder as the core (--core libipt), too.
for f in loopret damaged; do
	for v in --call-trace --stats --insn-trace; do
		a=$("$PTDUMP" --core libipt -j1 $v --buffer 4K $f.data 2>j1.err | cksum)
		b=$("$PTDUMP" --core libipt -j4 $v --buffer 4K $f.data 2>j4.err | cksum)
		if [ "$a" = "$b" ] && cmp -s j1.err j4.err; then
			t_pass "$f $v --core libipt: -j4 = -j1 (${a#* } bytes)"
		else
			t_fail "$f $v --core libipt: -j4 = -j1" "$a / $b"
		fi
	done
done

# The files above are big enough to be cut: loop's stream spans many parts.
n=$("$PTDUMP" --stats loopret.data | sed -n 's/^total: [0-9]* streams, \([0-9]*\) bytes/\1/p')
t_match "loopret: $n trace bytes, many 16 KiB parts" '^[0-9]{6,}$' "$n"
n=$("$PTDUMP" --stats damaged.data | sed -n 's/^gaps: \([0-9]*\) .*/\1/p')
t_match "damaged: $n gaps" '^[1-9][0-9]*$' "$n"

# Worker threads: -j4 starts some, -j1 none (both decode the same parts).
if command -v strace >/dev/null; then
	for j in 1 4; do
		strace -f -qq -e trace=clone,clone3 -o clone.$j "$PTDUMP" -j$j --stats \
			--buffer 4K loopret.data >/dev/null 2>&1
	done
	t_eq "-j1 starts no thread" 0 "$(grep -c CLONE_THREAD clone.1)"
	t_match "-j4 starts 4 worker threads" '^[4-9]$' "$(grep -c CLONE_THREAD clone.4)"
else
	t_skip "worker threads" "strace is not installed"
fi

# The workers' parts are taken (-v counts them), also where the blocks that
# need no packet stop long before the cuts (tests/progs/untraced.c): each
# warm-up ends in the state one pass has at its cut. Keeping the
# endless-loop search's stale step counts had 11 of 12 such parts decoded
# again in order, on the view's thread.
emu_rec untraced 'intel_pt/noretcomp/' "$PROGS/untraced"
"$PTDUMP" -j1 --stats --buffer 4K untraced.data >un.1 2>/dev/null
"$PTDUMP" -v -j2 --stats --buffer 4K untraced.data >un.2 2>un.err
t_eq "untraced: -j2 --stats = -j1" "$(cat un.1)" "$(cat un.2)"
taken=$(sed -n 's/^ptdump: -j2: \([0-9]*\) parts taken from the workers.*/\1/p' un.err)
redone=$(sed -n 's/^ptdump: -j2: .*, \([0-9]*\) decoded again in order$/\1/p' un.err)
t_match "untraced: -v counts the workers' parts taken ($taken)" '^([5-9]|[1-9][0-9]+)$' "$taken"
t_match "untraced: few decoded again ($redone: the segment's start)" '^[0-1]$' "$redone"
t_eq "untraced: -j1 -v counts no parts" 0 \
	"$("$PTDUMP" -v -j1 --stats --buffer 4K untraced.data 2>&1 >/dev/null | grep -c -- '^ptdump: -j1: ')"

# -j's argument.
"$PTDUMP" -j0 --stats calls.data >/dev/null 2>j0.err
t_eq "-j0: usage error" 2 $?
t_match "-j0: says what -j takes" 'number of threads from 1 to 256' "$(cat j0.err)"
"$PTDUMP" --jobs=x --stats calls.data >/dev/null 2>jx.err
t_eq "--jobs=x: usage error" 2 $?
t_done
