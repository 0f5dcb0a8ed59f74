#!/usr/bin/env bash
# Decoding in shards (ptdump(1), SHARDS): every shard K of N run by GNU
# parallel, as a scheduler would, then --merge: each view writes the same
# bytes, standard output and standard error, as the plain decode, for N = 1,
# 2, 3 and 5, with parts as small as --buffer 4K makes them, on clean,
# damaged and cut recordings. The merge does take events from the parts
# (-v counts them), and takes no part whose entry state is not the one the
# part before ended with (a part file altered to say so, checksum and all,
# is decoded again). Then the bad input: K/N out of range or malformed,
# parts of another trace, plan, N or build, cut or damaged part files,
# shards missing or given twice, an unwritable -o.
. "$(dirname "$0")/src/paths.sh"
model_suite shard "$PROGS/loop" || { t_done; exit; }
if ! command -v parallel >/dev/null; then
	t_skip shard "GNU parallel is not installed (apt-get install parallel; make deps)"
	t_done
	exit
fi

emu_rec calls 'intel_pt//' "$PROGS/calls"
emu_rec threads 'intel_pt/noretcomp/' "$PROGS/threads"
emu_rec signals 'intel_pt//' "$PROGS/signals"
emu_rec loopret 'intel_pt//' "$PROGS/loop" 8
# A 64 KiB AUX area and 64 KiB file chunks: many AUX chunks whatever the
# machine's speed (the damaged copies need several), and gaps where it filled.
RECOPTS='-m 256K,64K --chunk-size 64K' emu_rec loop 'intel_pt/noretcomp/' "$PROGS/loop" 8

# Damaged copies (as parallel.sh): payload bytes flipped in several AUX
# chunks (the middle one always: a short recording has few), and the file
# cut inside its last AUX chunk.
python3 "$SRC/damage_aux.py" loop.data damaged.data cut.data 1::3 mid
cmp -s loop.data damaged.data && t_fail "damaged.data is damaged"

# shards NAME N: the N part files NAME.N.K of NAME.data, every shard run by GNU parallel.
shards() {
	rm -f "$1.$2".*
	parallel --halt now,fail=1 "$PTDUMP" --buffer 4K --shard {}/"$2" -o "$1.$2".{} "$1.data" \
		::: $(seq 1 "$2") 2>par.err ||
		t_fail "$1: --shard K/$2 under parallel" "$(cat par.err)"
}

views=(--call-trace --call-ret-trace --branches --stats "--format=json --call-trace"
	--report --windows --folded "--call-trace --durations" "--call-trace --no-plt")
for f in calls threads signals loopret loop damaged cut; do
	[ -e $f.data ] || continue
	vs=("${views[@]}")
	# every instruction of the small ones (the loops' would take long)
	case $f in calls | threads | signals) vs+=(--insn-trace) ;; esac
	for v in "${vs[@]}"; do
		# shellcheck disable=SC2086
		"$PTDUMP" $v $f.data >$f.plain 2>$f.plain.err
		echo $? >>$f.plain.err
		sum=$(cksum <$f.plain)
		echo "$v ${sum// /:} $(cksum <$f.plain.err | tr ' ' :)" >>$f.sums
	done
	for n in 1 2 3 5; do
		shards $f $n
		while read -r v1 v2 rest; do
			v="$v1"
			case $v2 in --*) v="$v1 $v2" ;; *) rest="$v2 $rest" ;; esac
			# shellcheck disable=SC2086
			"$PTDUMP" $v --buffer 4K --merge $f.data $f.$n.* >m.out 2>m.err
			echo $? >>m.err
			got="$(cksum <m.out | tr ' ' :) $(cksum <m.err | tr ' ' :)"
			if [ "$got" = "$rest" ]; then
				t_pass "$f $v: $n shards merged = plain (${rest%% *})"
			else
				t_fail "$f $v: $n shards merged = plain" "$got / $rest
$(head -3 m.err)"
			fi
		done <$f.sums
	done
done

# The parts are used: most are taken from the shards, not decoded again.
shards loopret 3
"$PTDUMP" -v --stats --buffer 4K --merge loopret.data loopret.3.* 2>v.err >/dev/null
taken=$(sed -n 's/.*--merge: \([0-9]*\) parts taken.*/\1/p' v.err)
redone=$(sed -n 's/.*taken from the shards, \([0-9]*\) decoded again/\1/p' v.err)
t_match "loopret: parts taken from 3 shards ($taken)" '^([2-9]|[1-9][0-9]+)$' "$taken"
t_match "loopret: few decoded again ($redone: segment starts)" '^[0-2]$' "$redone"

# The same where the blocks that need no packet stop before the cuts
# (tests/progs/untraced.c: a chain of calls, then a loop of conditional
# branches only): each part's warm-up never sees them, and its state at the
# cut is still the one the decode of the whole stream has there, so the
# parts are taken (a state that kept the endless-loop search's stale step
# counts had the merge decode 11 of 12 parts again).
emu_rec untraced 'intel_pt/noretcomp/' "$PROGS/untraced"
shards untraced 3
"$PTDUMP" --stats --buffer 4K untraced.data >un.plain 2>/dev/null
"$PTDUMP" -v --stats --buffer 4K --merge untraced.data untraced.3.* >un.out 2>v.err
t_eq "untraced: 3 shards merged = plain --stats" "$(cat un.plain)" "$(cat un.out)"
taken=$(sed -n 's/.*--merge: \([0-9]*\) parts taken.*/\1/p' v.err)
redone=$(sed -n 's/.*taken from the shards, \([0-9]*\) decoded again/\1/p' v.err)
t_match "untraced: parts taken from 3 shards ($taken)" '^([5-9]|[1-9][0-9]+)$' "$taken"
t_match "untraced: few decoded again ($redone: the segment's start)" '^[0-1]$' "$redone"

# Balance: with the default --buffer (parts of 256 KiB) a trace of a few
# hundred KiB still spreads over all shards: parts shrink to give each
# shard about 4, down to 16 KiB, and the merge plans the same parts.
# nparts is the u64 16 bytes before a part file's end.
emu_rec bal 'intel_pt//' "$PROGS/loop" 40
nparts() { od -An -tu8 -j $(($(stat -c %s "$1") - 16)) -N8 "$1" | tr -d ' '; }
bytes=$("$PTDUMP" --stats bal.data | sed -n 's/^total: [0-9]* streams, \([0-9]*\) bytes/\1/p')
rm -f bal.[0-9]*
parallel --halt now,fail=1 "$PTDUMP" --shard {}/5 -o bal.{} bal.data ::: 1 2 3 4 5 2>par.err ||
	t_fail "balance: --shard K/5 under parallel" "$(cat par.err)"
counts=$(for k in 1 2 3 4 5; do nparts bal.$k; done | tr '\n' ' ')
t_match "balance: each of 5 shards of $bytes trace bytes holds parts ($counts)" \
	'^([1-9][0-9]* ){5}$' "$counts"
"$PTDUMP" --call-trace bal.data >bal.plain 2>/dev/null
"$PTDUMP" -v --call-trace --merge bal.data bal.[0-9] >bal.ct 2>bal.err
if [ -s bal.plain ] && cmp -s bal.ct bal.plain; then
	t_pass "balance: the 5 shards merged = plain --call-trace"
else
	t_fail "balance: the 5 shards merged = plain --call-trace" "$(head -3 bal.err)"
fi
taken=$(sed -n 's/.*--merge: \([0-9]*\) parts taken.*/\1/p' bal.err)
t_match "balance: the merge takes the shards' parts ($taken)" '^([5-9]|[1-9][0-9]+)$' "$taken"

# A part whose entry state is not the true one (its time changed, its
# file's checksum made good again) is decoded again, and the output stays.
python3 - loopret.3.2 tampered.2 <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
# header 120 bytes; the first part: 6 u32, seg/lo/hi, then entry[32]: word 9 is the tsc
off = 120 + 24 + 24 + 9 * 8
struct.pack_into('<Q', d, off, struct.unpack_from('<Q', d, off)[0] ^ 0x5a5a)
t = [0] * 256
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    t[i] = c
c = 0xffffffff
for b in memoryview(d)[:len(d) - 8]:
    c = t[(c ^ b) & 0xff] ^ (c >> 8)
struct.pack_into('<I', d, len(d) - 8, c ^ 0xffffffff)
open(sys.argv[2], 'wb').write(d)
PY
"$PTDUMP" --call-trace loopret.data >plain.ct 2>/dev/null
"$PTDUMP" -v --call-trace --buffer 4K --merge loopret.data loopret.3.1 tampered.2 loopret.3.3 \
	>tamp.ct 2>tamp.err
t_eq "tampered part: merge exits 0" 0 $?
if cmp -s plain.ct tamp.ct; then
	t_pass "tampered part: the output is still the plain decode's"
else
	t_fail "tampered part: the output is still the plain decode's"
fi
r2=$(sed -n 's/.*taken from the shards, \([0-9]*\) decoded again/\1/p' tamp.err)
t_eq "tampered part: decoded again" "$((redone + 1))" "$r2"

# -j: a shard's parts decoded by worker threads make the same part file.
"$PTDUMP" -j3 --buffer 4K --shard 2/3 -o j3.part loopret.data 2>/dev/null
if cmp -s j3.part loopret.3.2; then
	t_pass "-j3 --shard 2/3: the same part file as without -j"
else
	t_fail "-j3 --shard 2/3: the same part file as without -j"
fi

# -o -: the part file on standard output.
"$PTDUMP" --shard 1/1 -o - calls.data >calls.std 2>/dev/null
a=$("$PTDUMP" --call-trace calls.data 2>&1 | cksum)
b=$("$PTDUMP" --call-trace --merge calls.data calls.std 2>&1 | cksum)
t_eq "-o -: merged = plain" "$a" "$b"

# err WHAT STATUS REGEX CMD...: CMD exits with STATUS and says REGEX.
err() {
	local what=$1 st=$2 re=$3 rc
	shift 3
	"$@" >/dev/null 2>e.err
	rc=$?
	t_eq "$what: exit $st" "$st" "$rc"
	t_match "$what: says why" "$re" "$(cat e.err)"
}
err "--shard 0/3" 2 'K is from 1 to N' "$PTDUMP" --shard 0/3 -o x calls.data
err "--shard 4/3" 2 'K is from 1 to N \(3\)' "$PTDUMP" --shard 4/3 -o x calls.data
err "--shard 1/0" 2 'N is from 1 to 65536' "$PTDUMP" --shard 1/0 -o x calls.data
err "--shard 2" 2 'takes K/N' "$PTDUMP" --shard 2 -o x calls.data
err "--shard a/b" 2 'takes K/N' "$PTDUMP" --shard a/b -o x calls.data
err "--shard 1/2x" 2 'takes K/N' "$PTDUMP" --shard 1/2x -o x calls.data
err "--shard without -o" 2 'name it with -o PART' "$PTDUMP" --shard 1/2 calls.data
err "-o without --shard" 2 '-o names the part file of --shard' "$PTDUMP" -o x calls.data
err "--shard with a view" 2 'give --insn-trace to --merge' \
	"$PTDUMP" --insn-trace --shard 1/2 -o x calls.data
err "--shard and --merge" 2 'one at a time' "$PTDUMP" --shard 1/2 -o x --merge calls.data
err "--shard -o unwritable" 1 '-o /nonexistent/dir/p: No such file' \
	"$PTDUMP" --shard 1/2 -o /nonexistent/dir/p calls.data
err "--merge without parts" 2 'takes the trace file, then its part files' \
	"$PTDUMP" --merge calls.data
err "--merge --events" 2 'not --events' "$PTDUMP" --events --merge loop.data loop.2.1 loop.2.2
err "--merge --packets" 2 'renders the decoded views' \
	"$PTDUMP" --packets --merge loop.data loop.2.1 loop.2.2
err "a shard missing" 1 '1 of 3 shards missing: 2/3' \
	"$PTDUMP" --buffer 4K --merge loop.data loop.3.1 loop.3.3
err "a shard twice" 1 'shard 2/3 given twice' \
	"$PTDUMP" --buffer 4K --merge loop.data loop.3.1 loop.3.2 loop.3.2 loop.3.3
err "shards of two N" 1 'parts of one decode have the same N' \
	"$PTDUMP" --buffer 4K --merge loop.data loop.3.1 loop.2.2 loop.3.3
err "parts of another trace" 1 'a part of another trace file' \
	"$PTDUMP" --buffer 4K --merge damaged.data loop.2.1 loop.2.2
err "another --buffer" 1 'cut for --buffer 4096 bytes, not 0' \
	"$PTDUMP" --merge loop.data loop.2.1 loop.2.2
err "not a part file" 1 'calls.data: not a part file of ptdump --shard' \
	"$PTDUMP" --merge loop.data calls.data
err "no such part file" 1 'nothere: No such file' \
	"$PTDUMP" --buffer 4K --merge loop.data loop.2.1 loop.2.2 nothere
head -c 3000 loop.3.2 >cut.part
err "a cut part file" 1 'cut.part: damaged or cut short' \
	"$PTDUMP" --buffer 4K --merge loop.data loop.3.1 cut.part loop.3.3
head -c 40 loop.3.2 >stub.part
err "a part file cut in its header" 1 'stub.part: not a part file' \
	"$PTDUMP" --buffer 4K --merge loop.data loop.3.1 stub.part loop.3.3
cp loop.3.2 flip.part
printf '\x55' | dd of=flip.part bs=1 seek=2000 conv=notrunc 2>/dev/null
err "a damaged part file" 1 'flip.part: damaged or cut short .* --shard 2/3' \
	"$PTDUMP" --buffer 4K --merge loop.data loop.3.1 flip.part loop.3.3
cp loop.3.2 build.part
printf 'X' | dd of=build.part bs=1 seek=16 conv=notrunc 2>/dev/null
err "a part of another ptdump" 1 'build.part: written by another ptdump' \
	"$PTDUMP" --buffer 4K --merge loop.data loop.3.1 build.part loop.3.3
# A part file is tied to the build that wrote it: its header (16 bytes in)
# names ptdump's version and ELF build id, as readelf reads it.
bid=$(readelf -n "$PTDUMP" 2>/dev/null | sed -n 's/^ *Build ID: *//p' | head -n 1)
named=$(dd if=loop.3.2 bs=1 skip=16 count=64 2>/dev/null | tr -d '\0')
if [ -n "$bid" ]; then
	t_match "a part file names ptdump's build id ($bid)" " $bid\$" "$named"
else
	t_skip "a part file names ptdump's build id" "ptdump has no build id note"
fi
t_done
