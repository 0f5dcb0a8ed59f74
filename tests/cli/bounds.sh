#!/usr/bin/env bash
# Decoding is bounded by what the input holds (ptdump(1), RESOURCES): code that
# runs without consuming trace (direct jumps and calls need no packets) is not
# followed forever, and output lines do not grow with the call depth.
# The inputs are made here: raw Intel PT packets written byte by byte (PSB+,
# MODE.Exec 64-bit, TIP.PGE to 0x400000) and code images of direct calls.
. "$(dirname "$0")/lib.sh"
cd "$T_TMP" || exit 1

# enter.pt ends with a TNT packet that code running without trace never
# reaches, so the trace is not used up there (decoding stops where it is:
# libipt's pts_eos).
psb='\x02\x82\x02\x82\x02\x82\x02\x82\x02\x82\x02\x82\x02\x82\x02\x82\x02\x23'
printf "$psb"'\x99\x01\x71\x00\x00\x40\x00\x00\x00\x06' >enter.pt
trace_bytes=$(stat -c %s enter.pt)

# 1. "1: call 1b": an endless loop, reported once, at once.
printf '\xe8\xfb\xff\xff\xff' >self.bin
for v in --call-trace --insn-trace --branches --call-ret-trace; do
	t_run "call-self loop $v: finishes" 0 timeout 20 "$PTDUMP" --pt enter.pt --image self.bin@0x400000 $v
	t_eq "call-self loop $v: one endless-loop error" 1 "$(printf '%s\n' "$out" "$err" | grep -c 'endless loop at 0x400000')"
	t_match "call-self loop $v: a few lines, not a million ($(printf '%s\n' "$out" | wc -l))" \
		'^[0-9]$' "$(printf '%s\n' "$out" | wc -l)"
done

# 2. 100,000 direct calls in a row, then a jump back: no loop within reach of
#    the cycle detection before the budget, so the stream stops at its budget
#    of blocks without trace (4096 + 64 a byte of trace), and no line is
#    longer than 1024 levels of indentation (4 columns each) allow.
python3 -c 'import sys; n = 100000; sys.stdout.buffer.write(b"\xe8\0\0\0\0" * n + b"\xe9" + (-(5 * n + 5)).to_bytes(4, "little", signed=True))' >chain.bin
budget=$((4096 + 64 * trace_bytes))
for v in --call-trace --insn-trace --branches; do
	timeout 60 "$PTDUMP" --pt enter.pt --image chain.bin@0x400000 $v >chain.out 2>chain.err
	t_eq "100,000 direct calls $v: exit status 0" 0 $?
	t_match "100,000 direct calls $v: stopped with an error" 'blocks without trace: stream stopped' "$(cat chain.out chain.err)"
	lines=$(wc -l <chain.out)
	[ "$lines" -le $((budget + 10)) ] && t_pass "100,000 direct calls $v: $lines lines, within the budget of $budget blocks" ||
		t_fail "100,000 direct calls $v: within the budget" "$lines lines, budget $budget"
	longest=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' chain.out)
	[ "$longest" -le $((4096 + 300)) ] && t_pass "100,000 direct calls $v: longest line $longest columns" ||
		t_fail "100,000 direct calls $v: line length bounded" "$longest columns"
done

# 3. The bounds do not cut a legitimate decode: 1000 nested direct calls
#    (distinct blocks, within the budget), then "jmp *%rax", whose target a
#    TIP gives; there the trace is used up and the decode ends, no error.
python3 -c '
import sys
sys.stdout.buffer.write(b"\xe8\0\0\0\0" * 1000 + b"\xff\xe0" + b"\xcc")' >deep.bin
printf "$psb"'\x99\x01\x71\x00\x00\x40\x00\x00\x00\x6d\x8a\x13\x40\x00\x00\x00' >deep.pt
t_run "1000 nested calls: decoded" 0 "$PTDUMP" --pt deep.pt --image deep.bin@0x400000 --call-trace
t_nomatch "1000 nested calls: no bound reached" 'without trace|endless' "$out$err"
t_eq "1000 nested calls: 1000 call lines (the trace begin is no call line)" 1000 "$(printf '%s\n' "$out" | grep -c deep.bin)"
t_done
