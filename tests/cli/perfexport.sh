#!/usr/bin/env bash
# perf.data export, checked against perf itself: every software-tracer test
# program is recorded with --emulate, exported, and decoded twice, by ptdump
# from the ptrec file and by perf's own Intel PT decoder from the perf.data.
# The branch lists (perf script --itrace=b -F tid,flags,ip,addr against
# ptdump --branches) and the call sequences (perf script --call-trace against
# ptdump's call trace: thread, binary, depth, symbol, in order) must be the
# same.
#
# perf and ptdump print some things differently; the comparison maps these
# and nothing else:
#  - A trace begin: ptdump "tr strt IP", perf "tr strt 0 => IP".
#  - A syscall (user-only trace ends there): ptdump shows "syscall IP => 0"
#    then "tr end IP"; perf one line "tr end syscall IP => 0".
#  - A trace end at an asynchronous event (a signal arriving, or a pause in
#    the middle of user code: FUP + TIP.PGD) is "tr end async" in perf,
#    "tr end" in ptdump.
#  - ptdump names indirect jumps "ind jmp", perf "jmp"; ptdump prints
#    trigger samples ("-- resume by ...") in its branch view, perf prints
#    them as events of their own (not branches).
#  - perf's --call-trace shows calls and trace ends (a syscall is one), ptdump's
#    calls and one "[syscall]" line a syscall: calls are compared (with
#    perf's flags column, -F +flags, and ptdump --call-ret-trace, whose call
#    lines are its --call-trace lines), and the line counts of a real
#    program's call traces.
#  - PLT stubs: perf 6.1 names them wrongly or not at all ("@plt" for every
#    entry of libc's mixed IRELATIVE/JUMP_SLOT .plt, "_init" for the first
#    entry of a small .plt, nothing for .plt.got); ptdump agrees with objdump.
#    For calls into PLT stubs only the depth is compared (the branch lists
#    still compare their addresses).
#  - Streams of different threads interleave by time and equal times may
#    order either way: each thread's lines are compared in their own order.
# perf runs with --symfs DIR (the directory the export made), so it sees no
# system debug info and finds every binary through the export's build-id
# cache: the same symbols ptdump has.
. "$(dirname "$0")/lib.sh"
B=${B:-build}
DRV=${DRV:-$B/tests/test_perfexport}
PROGS=${PROGS:-$B/progs}
export PTREC_PLUGIN=${PTREC_PLUGIN:-$PWD/$B/ptrec-emu.so}

if ! command -v perf >/dev/null; then
	t_skip "perf.data export" "perf is not installed"
	t_done
	exit
fi
if [ ! -x "$DRV" ] || [ ! -x "$PROGS/calls" ]; then
	t_fail "test binaries" "build with make tests first ($DRV, $PROGS/calls)"
	t_done
	exit
fi

# ptdump --to-perf-data once the CLI has it, else the test driver.
to_perf() {
	if "$PTDUMP" --help 2>&1 | grep -q -- '--to-perf-data'; then
		"$PTDUMP" --to-perf-data "$2" "$1"
	else
		"$DRV" --export "$1" "$2"
	fi
}

# The normalising and comparing helpers (norm_*, by_tid, cmp_calls).
. "$(dirname "$0")/src/perfcalls.sh"

# peer NAME KNOWN -- RECORD-ARGS...: records, exports and compares.
# KNOWN non-empty: a difference is a known one (reported as a skip with it).
peer() {
	local name=$1 known=$2 d="$T_TMP/$1" rc n
	shift 3
	mkdir -p "$d"
	"$PTREC" record --emulate -q -o "$d/x.ptrec" "$@" >"$d/rec.out" 2>&1
	if [ ! -s "$d/x.ptrec" ]; then
		t_fail "$name: record" "$(cat "$d/rec.out")"
		return
	fi
	t_run "$name: export" 0 to_perf "$d/x.ptrec" "$d/x.data"
	[ -s "$d/x.data" ] || return
	perf script -i "$d/x.data" --symfs "$d/x.data.debug" --itrace=be -F tid,flags,ip,addr \
		>"$d/perf.br" 2>"$d/perf.err"
	rc=$?
	t_eq "$name: perf script --itrace=b decodes" 0 "$rc"
	n=$(grep -c 'instruction trace error' "$d/perf.br")
	if [ "$n" != 0 ] && [ -n "$known" ]; then
		t_skip "$name: perf reports no decode errors" "$n errors: $known"
	else
		t_eq "$name: perf reports no decode errors" 0 "$n"
	fi
	perf script -i "$d/x.data" --symfs "$d/x.data.debug" --call-trace -F +flags \
		>"$d/perf.ct" 2>>"$d/perf.err"
	"$PTDUMP" --branches "$d/x.ptrec" 2>/dev/null | norm_ptdump_br | by_tid 1 >"$d/ptdump.brn"
	norm_perf_br <"$d/perf.br" | by_tid 1 >"$d/perf.brn"
	"$PTDUMP" --call-ret-trace "$d/x.ptrec" 2>/dev/null | norm_calls | unnamed >"$d/ptdump.cl"
	"$PTDUMP" --call-trace "$d/x.ptrec" 2>/dev/null | norm_calls_noflags | unnamed >"$d/ptdump.ct"
	norm_calls <"$d/perf.ct" | unnamed | grep '^call|' | by_tid 2 >"$d/perf.c"
	grep '^call|' "$d/ptdump.cl" | by_tid 2 >"$d/ptdump.c"
	# ptdump's own views agree: --call-trace is --call-ret-trace without
	# returns and trace begins and ends, and with one line a syscall
	t_eq "$name: ptdump --call-trace = --call-ret-trace without returns, begins, ends" \
		"$(grep -v '^\(return\|tr strt\|tr end\)|' "$d/ptdump.cl" | cut -d'|' -f2-)" \
		"$(grep -v '|  *\(\[+[0-9]*\] \)\?\[syscall\]$' "$d/ptdump.ct")"
	t_eq "$name: ptdump --call-trace: a [syscall] line for each syscall of --branches" \
		"$(grep -c '|tr end syscall|' "$d/ptdump.brn")" "$(grep -c '|  *\(\[+[0-9]*\] \)\?\[syscall\]$' "$d/ptdump.ct")"
	n=$(wc -l <"$d/ptdump.brn")
	if cmp -s "$d/perf.brn" "$d/ptdump.brn" && [ "$n" -gt 0 ]; then
		t_pass "$name: branches equal ($n)"
	elif [ -n "$known" ]; then
		t_skip "$name: branches" "$known"
	else
		t_fail "$name: branches equal" "perf $(wc -l <"$d/perf.brn"), ptdump $n
$(diff "$d/perf.brn" "$d/ptdump.brn" | head -n 12)"
	fi
	# at most one depth restart per exec after the first of each process
	execs=$("$PTDUMP" --sideband "$d/x.ptrec" 2>/dev/null | grep -c 'COMM .*(exec)$')
	if out=$(cmp_calls "$d/perf.c" "$d/ptdump.c" "$execs"); then
		t_pass "$name: call sequence equal ($(printf '%s' "$out" | tail -n 1))"
	elif [ -n "$known" ]; then
		t_skip "$name: calls" "$known"
	else
		t_fail "$name: call sequence equal" "$out"
	fi
}

P=$PROGS
peer calls "" -- "$P/calls" 3
peer calls-noretcomp "" -- -e pt/noretcomp/u "$P/calls" 2
peer calls-timing "" -- -e pt/cyc,mtc_period=0/u "$P/calls" 1
peer forkexec "" -- "$P/forkexec" 50
peer longjmp "" -- "$P/longjmp"
peer loop "" -- "$P/loop" 5
# Several AUXTRACE records (over 4 MiB of trace without return compression):
# no packet may be split between two, which a 64-bit perf reports as "Bad
# packet" and "Trace doesn't match instruction" at each such boundary.
d=$T_TMP/chunks
mkdir -p "$d"
"$PTREC" record --emulate -q -o "$d/x.ptrec" -e pt/noretcomp/u -- "$P/loop" 200 >/dev/null 2>&1
t_run "multi-record: export" 0 to_perf "$d/x.ptrec" "$d/x.data"
n=$(python3 - "$d/x.data" <<'PY'
import struct, sys
b = open(sys.argv[1], 'rb').read()
off, size = struct.unpack_from('<QQ', b, 40)
p, n = off, 0
while p < off + size:
    typ, misc, rsz = struct.unpack_from('<IHH', b, p)
    step = rsz
    if typ == 71:                                # PERF_RECORD_AUXTRACE
        step += struct.unpack_from('<Q', b, p + 8)[0]
        n += 1
    p += step
print(n)
PY
)
t_match "multi-record: the trace is in several AUXTRACE records ($n)" '^([2-9]|[1-9][0-9]+)$' "$n"
t_eq "multi-record: perf reports no decode errors" 0 \
	"$(perf script -i "$d/x.data" --symfs "$d/x.data.debug" --itrace=be -F ip 2>/dev/null |
		grep -c 'instruction trace error')"
peer spawn "" -- "$P/spawn"
peer threads "" -- "$P/threads" 300
peer window "" -- "$P/window" 2
# Signals: with return compression the two decoders part after the first
# handler (see the comment at the end); without it they must agree.
peer signals-noretcomp "" -- -e pt/noretcomp/u "$P/signals"
peer signals "perf 6.1 pops its return stack on the handler's uncompressed RET, the trace (and libipt) does not: compressed RETs after a signal differ" \
	-- "$P/signals"
# Pause/resume windows: counters, uprobes, syscalls.
peer counter-window "" -- -e pt/aux-action=start-paused/u \
	-e instructions/period=50000,aux-action=resume,name=Resume/u \
	-e instructions/period=100000,aux-action=pause,name=Pause/u "$P/calls" 3
peer uprobe-window "" -- -e pt/aux-action=start-paused/u \
	-e "uprobe:$P/window:window_fn/aux-action=resume/" \
	-e "uretprobe:$P/window:window_fn/aux-action=pause/" "$P/window" 2
peer syscall-window "" -- \
	-e "{pt/aux-action=start-paused/u,syscalls:sys_enter_getpid/aux-action=resume/,syscalls:sys_exit_newuname/aux-action=pause/}" \
	"$P/window" 2

# A real program: the call traces of ptdump and perf have as many lines
# (perf's other lines, PSB and CBR events, left out), within 0.3%.
d=$T_TMP/ls
mkdir -p "$d"
"$PTREC" record --emulate -q -o "$d/x.ptrec" -- ls -l /usr/bin >/dev/null 2>"$d/rec.err"
if [ -s "$d/x.ptrec" ] && to_perf "$d/x.ptrec" "$d/x.data" >/dev/null 2>&1; then
	np=$(perf script -i "$d/x.data" --symfs "$d/x.data.debug" --call-trace 2>/dev/null | grep -c $'\t')
	nd=$("$PTDUMP" --call-trace "$d/x.ptrec" 2>/dev/null | grep -c $'\t')
	ns=$("$PTDUMP" --call-trace "$d/x.ptrec" 2>/dev/null | grep -c $'\t *\\[syscall\\]')
	if [ "$np" -gt 1000 ] && [ $(((nd > np ? nd - np : np - nd) * 1000)) -le $((np * 3)) ]; then
		t_pass "ls -l /usr/bin: --call-trace lines: ptdump $nd, perf $np ($ns syscalls)"
	else
		t_fail "ls -l /usr/bin: --call-trace lines within 0.3% of perf's" "ptdump $nd, perf $np ($ns syscalls)"
	fi
else
	t_fail "ls -l /usr/bin: record and export" "$(head -n 5 "$d/rec.err")"
fi

# What perf reads from the header.
d=$T_TMP/calls
h=$(perf report -i "$d/x.data" --header-only 2>&1)
t_match "header: cpuid" '# cpuid : GenuineIntel,6,94,3' "$h"
t_match "header: tracer attr with the recorded PMU type" "# event : name = pt//u, .*type = $("$PTDUMP" --info "$d/x.ptrec" | sed -n 's/^intel_pt: *type \([0-9]*\).*/\1/p')" "$h"
t_match "header: AUX area data" 'contains AUX area data' "$h"
t_match "header: hostname" "# hostname : $(hostname)" "$h"
t_eq "header: the program's build id" 1 "$(perf buildid-list -i "$d/x.data" 2>/dev/null | grep -c "$(cd "$P" && pwd)/calls\$")"
# Symbols come from the export's cache (perf runs with --symfs): main is named.
t_match "symbols from the export's build-id cache" ' main$' \
	"$(perf script -i "$d/x.data" --symfs "$d/x.data.debug" --call-trace 2>/dev/null | sed 's/ *$//')"
# perf time = recorded time (identity conversion despite the TSC epoch trick)
first_ptdump=$("$PTDUMP" --branches "$d/x.ptrec" 2>/dev/null | sed -n 's/^ *[^ ]* *[0-9]* *\([0-9.]*\):.*/\1/p' | head -n 1)
first_perf=$(perf script -i "$d/x.data" --symfs "$d/x.data.debug" --itrace=b -F time --ns 2>/dev/null | sed -n 's/^ *\([0-9.]*\):.*/\1/p' | head -n 1)
t_eq "perf's first time is the recorded one" "$first_ptdump" "$first_perf"

# A binary missing on this machine: its code still decodes (the export puts
# the embedded bytes into the cache), but perf has no symbols for it.
d=$T_TMP/gone
mkdir -p "$d"
cp "$P/calls" "$d/calls-copy"
"$PTREC" record --emulate -q -o "$d/x.ptrec" -- "$d/calls-copy" 1 >/dev/null 2>&1
rm -f "$d/calls-copy"
out=$("$DRV" --export "$d/x.ptrec" "$d/x.data" 2>&1)
t_match "missing binary: embedded code goes to the cache" 'code-only 1' "$out"
t_match "missing binary: a note says so" 'not on this machine' "$out"
perf script -i "$d/x.data" --symfs "$d/x.data.debug" --itrace=be -F tid,flags,ip,addr 2>/dev/null |
	norm_perf_br | by_tid 1 >"$d/perf.brn"
"$PTDUMP" --branches "$d/x.ptrec" 2>/dev/null | norm_ptdump_br | by_tid 1 >"$d/ptdump.brn"
if cmp -s "$d/perf.brn" "$d/ptdump.brn" && [ -s "$d/perf.brn" ]; then
	t_pass "missing binary: branches still equal"
else
	t_fail "missing binary: branches still equal" "$(diff "$d/perf.brn" "$d/ptdump.brn" | head)"
fi

# Bad input: clear errors, non-zero exit, no output left behind.
printf 'not a trace file\n' >"$T_TMP/bad.ptrec"
t_run "not a ptrec file: fails" 1 "$DRV" --export "$T_TMP/bad.ptrec" "$T_TMP/bad.data"
t_match "not a ptrec file: says so" 'ptrec|trace file|format' "$err"
t_eq "not a ptrec file: no output" "no" "$([ -e "$T_TMP/bad.data" ] && echo yes || echo no)"
t_run "missing input: fails" 1 "$DRV" --export "$T_TMP/none.ptrec" "$T_TMP/none.data"
t_run "unwritable output: fails" 1 "$DRV" --export "$T_TMP/calls/x.ptrec" /nonexistent/dir/x.data
t_match "unwritable output: names it" '/nonexistent/dir' "$err"
head -c 3000 "$T_TMP/calls/x.ptrec" >"$T_TMP/cut.ptrec"
"$DRV" --export "$T_TMP/cut.ptrec" "$T_TMP/cut.data" >/dev/null 2>&1
rc=$?
t_match "file cut inside its chunks: exports or fails cleanly" '^[01]$' "$rc"

# Why "signals" (with return compression) is a known difference: after a
# signal handler returns through the kernel-pushed restorer (an uncompressed
# RET, TIP), the trace compresses a later RET whose CALL came before the
# signal. libipt pops its return stack only for compressed RETs and follows
# the trace (matching the emulator's ground truth); perf 6.1 pops for every
# RET and goes one frame too far. Which rule hardware follows decides whether
# the software tracer or perf is right: see the report to the lead.
t_done
