#!/usr/bin/env bash
# Decoding in bounded memory (ptdump(1), RESOURCES and PROGRESS): streams
# read from the file in windows cut at PSBs decode to the same bytes as whole
# streams in memory (--buffer 0), for every view that decodes, on clean,
# damaged and cut files; a trace larger than an address-space limit decodes
# under it; a trace on a pipe (FILE -) decodes as the file does; the
# progress line shows on a terminal and never in a pipe.
. "$(dirname "$0")/src/paths.sh"
cd "$T_TMP" || exit 1
command -v qemu-x86_64 >/dev/null || { t_skip "stream" "qemu-x86_64 not found"; t_done; exit; }

emu_rec calls 'intel_pt//' "$PROGS/calls"
emu_rec threads 'intel_pt/noretcomp/' "$PROGS/threads"
emu_rec signals 'intel_pt//' "$PROGS/signals"
# A 64 KiB AUX area and 64 KiB file chunks: many AUX chunks whatever the
# machine's speed (the damaged copies need several), and gaps where it filled.
RECOPTS='-m 256K,64K --chunk-size 64K' emu_rec loop 'intel_pt/noretcomp/' "$PROGS/loop" 25

# Damaged copies of loop.data: a payload byte of its second AUX chunk
# flipped (a gap), and the file cut inside its last AUX chunk.
python3 "$SRC/damage_aux.py" loop.data damaged.data cut.data 1

# 1. Windows of 4 KiB (the smallest) against whole streams, byte for byte.
for f in calls threads signals loop damaged cut; do
	[ -e $f.data ] || continue
	for v in --events --call-ret-trace --branches --stats; do
		w=$("$PTDUMP" $v --buffer 0 $f.data 2>whole.err | cksum)
		k=$("$PTDUMP" $v --buffer 4K $f.data 2>win.err | cksum)
		if [ "$w" = "$k" ] && cmp -s whole.err win.err; then
			t_pass "$f $v: 4K windows = whole streams (${w#* } bytes)"
		else
			t_fail "$f $v: 4K windows = whole streams" "$w / $k
$(diff whole.err win.err | head -5)"
		fi
	done
done
n=$("$PTDUMP" --stats loop.data | sed -n 's/^total: [0-9]* streams, \([0-9]*\) bytes/\1/p')
t_match "loop: $n trace bytes, many 4K windows" '^[0-9]{6,}$' "$n"

# 2. A trace larger than the address space allowed: whole streams cannot be
#    held, windows decode it to the same output as the unlimited run.
emu_rec big 'intel_pt/noretcomp/' "$PROGS/loop" 1500
# -j1 in these runs: decoding in parts holds parts decoded ahead and a stack
# per worker thread (ptdump(1), RESOURCES).
# 36 MiB of address space: ptdump's code, libraries, code images and symbol
# tables take about 30 (under 32 MiB libc's symbols no longer load).
limit=36864
# AddressSanitizer reserves terabytes of address space: under SANITIZE=1 the
# same runs go without the limit (the output checks still hold).
if [ "${SANITIZE:-}" = 1 ]; then
	vlimit() { :; }
	under="with no address-space limit (sanitizer build)"
else
	vlimit() { ulimit -v $limit; }
	under="under ulimit -v $limit"
fi
bytes=$("$PTDUMP" --stats big.data | sed -n 's/^total: [0-9]* streams, \([0-9]*\) bytes/\1/p')
chunks=$("$PTDUMP" --info big.data | awk '$1 == "AUX" { print $2 }')
if [ -n "$bytes" ] && [ "$bytes" -gt $((limit * 1024 * 5 / 4)) ]; then
	t_pass "big: $bytes trace bytes in $chunks AUX chunks, over 1.25 x the limit of $limit KiB"
else
	t_fail "big: a trace larger than the limit" "$bytes bytes"
fi
"$PTDUMP" --call-trace --buffer 0 big.data 2>free.err | cksum >free.sum
(vlimit; "$PTDUMP" -j1 --call-trace big.data 2>lim.err | cksum >lim.sum; echo "${PIPESTATUS[0]}" >lim.rc)
t_eq "big: decodes $under" 0 "$(cat lim.rc)"
t_eq "big: the same call trace as without a limit ($(cat free.sum))" "$(cat free.sum)" "$(cat lim.sum)"
if [ "${SANITIZE:-}" = 1 ]; then
	t_skip "big: whole streams do not fit the limit" "no address-space limit in a sanitizer build"
else
	(vlimit; "$PTDUMP" -j1 --stats --buffer 0 big.data >/dev/null 2>whole.err; echo $? >whole.rc)
	t_eq "big: whole streams do not fit the limit (the limit bites)" 1 "$(cat whole.rc)"
fi

# 2b. Under a tighter limit libc cannot be mapped for its symbols: its code
#     is named by object and offset, and ptdump says so on standard error
#     (the symbols load as the decode needs them, after the first messages).
if [ "${SANITIZE:-}" = 1 ]; then
	t_skip "tight limit: bare names are explained" "no address-space limit in a sanitizer build"
else
	"$PTDUMP" --call-trace calls.data >tfree.out 2>/dev/null
	bare=
	for l in 36000 33000 31000 30000 29000 28000 27000 26000 25000 24000; do
		(ulimit -v $l; "$PTDUMP" -j1 --call-trace calls.data >tl.out 2>tl.err; echo $? >tl.rc)
		[ "$(cat tl.rc)" = 0 ] || continue
		if grep -q 'libc\.so\.6+0x' tl.out && ! grep -q 'libc\.so\.6+0x' tfree.out; then
			bare=$l
			break
		fi
	done
	if [ -z "$bare" ]; then
		t_skip "tight limit: bare names are explained" "no limit tried left libc unnamed with the decode going on"
	else
		t_match "ulimit -v $bare: libc's code by object and offset, and a warning that says why" \
			'warning: (cannot map|no symbols for) [^ ]*libc\.so\.6' "$(cat tl.err)"
		t_eq "ulimit -v $bare: the same calls, only names differ" "$(wc -l <tfree.out)" "$(wc -l <tl.out)"
	fi
fi

# 3. FILE - : a pipe, a redirected file, a perf.data export on a pipe.
"$PTDUMP" --call-trace calls.data >file.out 2>&1
cat calls.data | "$PTDUMP" --call-trace - >pipe.out 2>&1
t_eq "calls: ptdump - on a pipe = the file ($(wc -l <file.out) lines)" "$(cksum <file.out)" "$(cksum <pipe.out)"
"$PTDUMP" --call-trace - <calls.data >redir.out 2>&1
t_eq "calls: ptdump - < file = the file" "$(cksum <file.out)" "$(cksum <redir.out)"
"$PTDUMP" --stats big.data 2>&1 | sed 1,/^stream/d >bigfile.out
(vlimit; cat big.data | "$PTDUMP" -j1 --stats - 2>&1 | sed 1,/^stream/d >bigpipe.out)
t_eq "big: ptdump - on a pipe $under = the file" "$(cksum <bigfile.out)" "$(cksum <bigpipe.out)"
"$PTDUMP" -q --to-perf-data calls.perf calls.data
"$PTDUMP" --call-trace calls.perf >pf.out 2>/dev/null
cat calls.perf | "$PTDUMP" --call-trace - >pp.out 2>/dev/null
t_eq "calls: perf.data on a pipe = the perf.data file" "$(cksum <pf.out)" "$(cksum <pp.out)"
t_run "garbage on a pipe: an error" 1 sh -c "echo garbage | '$PTDUMP' -"
t_match "garbage on a pipe: says why" 'not a ptrec trace file' "$err"

# 4. The progress line: --progress forces it into a pipe and it is erased
#    at the end; without it a pipe gets none; on a terminal (script(1)'s
#    pty) a decode of over a second shows it, --no-progress and -q do not.
"$PTDUMP" --progress --stats big.data >/dev/null 2>prog.err
t_match "--progress: a progress line on standard error" \
	'\[ ptdump: [0-9.]+ of [0-9.]+ MB \([0-9]+%\), [0-9.]+ MB/s, [0-9]+:[0-9]{2} left \]' "$(tr '\r' '\n' <prog.err)"
t_match "--progress: erased at the end" $'\r\e\\[K$' "$(cat prog.err)"
"$PTDUMP" --stats big.data >/dev/null 2>noprog.err
t_nomatch "a pipe: no progress line" 'MB/s' "$(cat noprog.err)"
if command -v script >/dev/null; then
	# A decode of well over a second (--stats of this trace may take less).
	script -qec "'$PTDUMP' -j1 --branches big.data >/dev/null" /dev/null </dev/null >tty.out 2>&1
	t_match "a terminal: a progress line" 'MB/s, [0-9]+:[0-9]{2} left' "$(tr '\r' '\n' <tty.out)"
	script -qec "'$PTDUMP' --no-progress --stats big.data >/dev/null" /dev/null </dev/null >tty2.out 2>&1
	t_nomatch "a terminal with --no-progress: none" 'MB/s' "$(cat tty2.out)"
	script -qec "'$PTDUMP' -q --stats big.data >/dev/null" /dev/null </dev/null >tty3.out 2>&1
	t_nomatch "a terminal with -q: none" 'MB/s' "$(cat tty3.out)"
else
	t_skip "a terminal: a progress line" "script(1) not found"
fi

# The conversions too: the total is the trace bytes the export writes.
"$PTDUMP" --progress --to-perf-data big.perf big.data 2>cprog.err
n=$(tr '\r' '\n' <cprog.err | sed -n 's/.*: [0-9]* streams, \([0-9]*\) trace bytes.*/\1/p')
mb=$(awk -v n="${n:-0}" 'BEGIN { printf "%.1f", n / 1e6 }')
t_match "--to-perf-data --progress: a progress line of the $mb MB of trace" \
	"\\[ ptdump: [0-9.]+ of $mb MB \\([0-9]+%\\), [0-9.]+ MB/s, [0-9]+:[0-9]{2} left \\]" \
	"$(tr '\r' '\n' <cprog.err)"
t_match "--to-perf-data --progress: erased before the summary" $'\r\e\\[K\\[ ptdump: wrote' \
	"$(cat cprog.err)"
"$PTDUMP" --to-perf-data big.perf big.data 2>cnoprog.err
t_nomatch "--to-perf-data in a pipe: no progress line" 'MB/s' "$(cat cnoprog.err)"
"$PTDUMP" --progress --to-raw big.raw big.data 2>rprog.err
t_match "--to-raw --progress: a progress line of the $mb MB of trace" \
	"\\[ ptdump: [0-9.]+ of $mb MB" "$(tr '\r' '\n' <rprog.err)"
"$PTDUMP" --to-raw big.raw big.data 2>rnoprog.err
t_nomatch "--to-raw in a pipe: no progress line" 'MB/s' "$(cat rnoprog.err)"

# 5. Bad --buffer values.
for b in 1K 5G x 12Q -1; do
	t_run "--buffer $b: a usage error" 2 "$PTDUMP" --buffer $b calls.data
done
t_done
