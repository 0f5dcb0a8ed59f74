#!/usr/bin/env bash
# Per-CPU recording through the model of the kernel (--emulate with
# --emulate-cpus N): the model gives the k-th thread of the workload CPU
# k mod N and switches threads that share a CPU as the scheduler would.
# Checked against the software tracer's ground truth:
#  - the threaded and forking programs on 2 and 3 CPUs decode, thread by
#    thread, to the whole of each thread's truth (per-CPU AUX areas, the
#    per-thread split);
#  - every record of a thread carries the CPU the model gave it (sample_id
#    cpu), in the order the threads were created;
#  - the switch records (PERF_RECORD_SWITCH of the task events, and
#    PERF_RECORD_SWITCH_CPU_WIDE with -a) follow each other on every CPU as a
#    CPU's switches do: out of the running thread, in of the one named next;
#    every thread that ran switched in, and every CPU ends idle. (The other
#    records keep the time of their process's own clock, so the time order
#    of --sideband does not put them between their thread's switches.)
#  - -C LIST traces the threads on those CPUs only, and their trace decodes
#    because the side-band of the other CPUs (the mmaps of the thread that
#    loaded the program) is recorded too;
#  - the software cs_etm gets perf's per-CPU defaults (timestamp, contextid)
#    and its trace decodes to the truth, per CPU and per thread;
#  - the time slice (--emulate-slice): CPU-bound threads that share a CPU
#    take turns, each run that ends in a PREEMPT switch-out lasts at least
#    the slice of emulated time (on one CPU at most a block more), and they
#    still decode to their truth; with the default slice, longer than their
#    work, none is preempted. --emulate-slice's bad values are usage errors.
. "$(dirname "$0")/src/paths.sh"

model_suite "per-CPU model recordings" "$PROGS/threads" "$PROGS/forkexec" "$PROGS/pingpong" "$PROGS/spin" || { t_done; exit; }
. "$SRC/truth.sh"
truth_build || { t_done; exit; }

# rec NAME CPUS STATUS [ptrec options] -- PROG ARGS: records NAME.data with its
# truth (ptrec exits with the program's STATUS), dumps its side-band (NAME.sb),
# the truth's calls (NAME.exp) and ptdump's (NAME.got).
rec() {
	local name=$1 ncpu=$2 status=$3
	shift 3
	"$PTREC" record -q --emulate --emulate-cpus "$ncpu" -o "$name.data" \
		--emulate-truth "$name.truth" "$@" >"$name.out" 2>"$name.err"
	[ "$?" = "$status" ] && "$PTDUMP" --sideband "$name.data" >"$name.sb" 2>"$name.sb.err" &&
		./decode_truth "$name.sb" "$name.truth" >"$name.exp" 2>"$name.dt.err" &&
		"$PTDUMP" --call-trace "$name.data" >"$name.got" 2>"$name.got.err"
}

# per_thread NAME [TIDS]: each thread's decoded calls against its truth. With
# TIDS (comma-separated) only those threads must have trace (all of their
# truth) and every other thread none. Prints "threads N calls M" or what differs.
per_thread() {
	python3 - "$1.exp" "$1.got" "${2:-}" <<'EOF'
import sys
def calls(path, decoded):
    out = {}
    for line in open(path):
        if "\t" not in line:
            continue
        left, right = line.rstrip("\n").split("\t", 1)
        tid = left.split()[1] if decoded else left
        out.setdefault(tid, []).append(right.strip())
    return out
exp, got = calls(sys.argv[1], False), calls(sys.argv[2], True)
want = set(sys.argv[3].split(",")) if sys.argv[3] else set(exp)
bad = []
for tid in sorted(set(exp) | set(got)):
    e = exp.get(tid, []) if tid in want else []
    g = got.get(tid, [])
    if e != g:
        bad.append("thread %s: %d calls decoded, %d in the truth%s" %
                   (tid, len(g), len(e), "" if tid in want else " (not traced)"))
if bad or not want:
    print("; ".join(bad) or "no thread")
    sys.exit(1)
print("threads %d calls %d" % (len(want), sum(len(exp[t]) for t in want)))
EOF
}

# recorded WHAT NAME NCPU STATUS RECORD-ARGS...: records NAME (rec), checks
# that it decodes without errors and that every thread decodes to its whole
# truth. Fails when there is nothing to check further.
recorded() {
	local what=$1 name=$2 res
	shift 2
	if rec "$name" "$@" && [ ! -s "$name.got.err" ]; then
		t_pass "$what: records and decodes without errors"
	else
		t_fail "$what: records and decodes" "$(head -n 3 "$name.err" "$name.got.err" "$name.dt.err" 2>/dev/null)"
		return 1
	fi
	if res=$(per_thread "$name"); then
		t_pass "$what: every thread decodes to its whole truth ($res)"
	else
		t_fail "$what: every thread decodes to its whole truth" "$res"
	fi
}

# sched NAME NCPUS: the threads in the order they were created (the workload's
# first thread, then each FORK's) and the CPU each was given, "tid cpu" lines.
sched() {
	awk -v n="$2" '
		$3 !~ /\// { next }
		{ split($3, a, "/"); t = a[2] }
		t == 0 || (t in got) || ($4 != "FORK" && k) { next }
		{ got[t] = 1; order[k++] = t }
		END { for (i = 0; i < k; i++) print order[i], i % n }' "$1.sb"
}

# cpus_right NAME NCPUS: every record of a thread but its FORK (written by
# the parent) carries the thread's CPU. Prints the records checked, or the first wrong one.
cpus_right() {
	sched "$1" "$2" >"$1.sched"
	awk 'NR == FNR { cpu[$1] = $2; next }
		$4 == "FORK" || $3 !~ /\// { next }
		{ split($3, a, "/"); t = a[2]; if (t == 0) next
		  c = substr($2, 2, 3) + 0
		  if (!(t in cpu) || cpu[t] != c) { print "wrong CPU: " $0; bad = 1; exit 1 } n++ }
		END { if (!bad) print n + 0 }' "$1.sched" "$1.sb"
}

# switches NAME NCPUS: the switch records on each CPU against what a CPU does.
switches() {
	python3 - "$1.sb" "$1.exp" "$2" <<'EOF'
import sys, re
ncpu = int(sys.argv[3])
cur = {c: "0" for c in range(ncpu)}   # running thread per CPU; "0" idle
pending = {}                         # CPU -> thread named next by an out
ins = {}
nsw = npre = nblk = 0
last = {}                            # CPU -> time of its latest switch
exited = set()                       # threads whose EXIT was seen
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 4 or "/" not in f[2]:
        continue
    cpu = int(f[1].strip("[]"))
    tid = f[2].split("/")[1]
    kind = f[3]
    if kind == "EXIT":
        exited.add(tid)
    if kind == "SWITCH":
        nsw += 1
        t = float(f[0])
        if t < last.get(cpu, 0):
            sys.exit("CPU %d: a switch back in time: %s" % (cpu, line.strip()))
        last[cpu] = t
        out = f[4] == "out"
        if out and tid != "0":
            if "(preempted)" in line:
                npre += 1
            else:
                nblk += 1
        m = re.search(r"(next|prev) \d+/(\d+)", line)
        if out:
            if cur[cpu] != tid:
                sys.exit("CPU %d: out of %s while %s runs: %s" % (cpu, tid, cur[cpu], line.strip()))
            pending[cpu] = m.group(2) if m else None
            # A CPU never picks a thread that exited.
            if m and m.group(2) in exited:
                sys.exit("CPU %d: %s picked after its exit: %s" % (cpu, m.group(2), line.strip()))
            cur[cpu] = None
        else:
            if cur[cpu] is not None and not (cur[cpu] == "0" and tid != "0"):
                sys.exit("CPU %d: in of %s while %s runs: %s" % (cpu, tid, cur[cpu], line.strip()))
            if pending.get(cpu) not in (None, tid):
                sys.exit("CPU %d: in of %s, the out named %s: %s" % (cpu, tid, pending[cpu], line.strip()))
            if tid in exited:
                sys.exit("CPU %d: in of %s after its exit: %s" % (cpu, tid, line.strip()))
            cur[cpu] = tid
            ins[tid] = ins.get(tid, 0) + 1
        continue
ran = {l.split("\t", 1)[0] for l in open(sys.argv[2])}
missing = [t for t in ran if t not in ins]
if missing:
    sys.exit("threads that ran but never switched in: %s" % " ".join(missing))
busy = [c for c in cur if cur[c] not in ("0", None)]
if busy:
    sys.exit("CPUs not idle at the end: %s" % busy)
print("switches %d threads %d, outs preempted %d, not preempted %d" % (nsw, len(ins), npre, nblk))
EOF
}

# waits_right NAME ROUNDS: pingpong's threads leave their CPU without PREEMPT
# (asleep) once per call that waits and once at their exit: the first
# worker ROUNDS reads of its pipe and a nanosleep, the others ROUNDS reads;
# the main thread, waiting in pthread_join() and a read, at least twice.
# Prints the counts, or what differs.
waits_right() {
	awk -v r="$2" 'NR == FNR { ord[FNR] = $1; n = FNR; next }
		$4 == "SWITCH" && $5 == "out" && $0 !~ /preempted/ {
			split($3, a, "/"); blk[a[2]]++ }
		END {
			want[ord[1]] = 2; want[ord[2]] = r + 2; want[ord[3]] = r + 1; want[ord[4]] = r + 1
			for (i = 1; i <= n; i++) {
				t = ord[i]; s = s sep t ":" blk[t] + 0; sep = " "
				if (i == 1 ? blk[t] < want[t] : blk[t] != want[t]) bad = 1
			}
			print s; exit bad || n != 4 }' "$1.sched" "$1.sb"
}

# ---- threads and forks on 2 and 3 CPUs, per-CPU rings of the workload's task events ----

for run in "th2 2 0 threads 300" "th3 3 0 threads 300" "fk3 3 3 forkexec 200" \
	"pp2 2 0 pingpong 20" "pp3 3 0 pingpong 20"; do
	read -r name ncpu status prog arg <<<"$run"
	recorded "$prog on $ncpu CPUs" "$name" "$ncpu" "$status" -- "$PROGS/$prog" "$arg" || continue
	if res=$(cpus_right "$name" "$ncpu"); then
		t_pass "$prog on $ncpu CPUs: $res records on the CPU their thread was given ($(awk '{ print $2 }' "$name.sched" | sort | uniq -c | awk '{ printf "%s%d on CPU %d", s, $1, $2; s = ", " }'))"
	else
		t_fail "$prog on $ncpu CPUs: each thread's records on its CPU" "$res"
	fi
	if res=$(switches "$name" "$ncpu" 2>&1); then
		t_pass "$prog on $ncpu CPUs: PERF_RECORD_SWITCH of the task events consistent ($res)"
	else
		t_fail "$prog on $ncpu CPUs: PERF_RECORD_SWITCH consistent" "$res"
	fi
	[ "$prog" = pingpong ] || continue
	if res=$(waits_right "$name" "$arg"); then
		t_pass "$prog on $ncpu CPUs: a switch out without PREEMPT at each call that waits, and at the exit (tid:outs $res)"
	else
		t_fail "$prog on $ncpu CPUs: a switch out without PREEMPT at each call that waits" "tid:outs $res; want main >= 3, workers $((arg + 2)) $((arg + 1)) $((arg + 1))"
	fi
done
nsw=$(grep -c ' SWITCH ' th2.sb)
ncw=$(grep -c ' SWITCH .* \(next\|prev\) ' th2.sb)
if [ "$nsw" -gt 0 ] && [ "$ncw" = 0 ]; then
	t_pass "task events get PERF_RECORD_SWITCH without next/prev ($nsw)"
else
	t_fail "task events get PERF_RECORD_SWITCH without next/prev" "switches $nsw, with next/prev $ncw"
fi

# ---- the time slice: more CPU-bound threads than CPUs ----

# slices NAME SLICE EXACT MIN: on every CPU, each run of one of spin's
# workers that ends in a switch-out with PREEMPT lasted at least SLICE
# nanoseconds of the emulated clock (an instruction each); with EXACT (one
# CPU: only that thread's instructions move the clock) it ended within 1000
# ns after the end of one of its slices (a slice ends at a block's end; a
# thread alone at the end of a slice runs on: a worker still starting in
# QEMU when another's slice ends is not waiting yet). Every worker runs in at least 3
# stretches, and at least MIN switch-outs say PREEMPT. Prints the counts,
# or what is wrong.
slices() {
	python3 - "$1.sb" "$2" "$3" "$4" <<'EOF'
import sys
sb, sl, exact, least = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
since = {}                           # CPU -> (thread, time it switched in)
runs, lens = {}, []
for line in open(sb):
    f = line.split()
    if len(f) < 5 or f[3] != "SWITCH" or "/" not in f[2]:
        continue
    cpu, t = int(f[1].strip("[]")), round(float(f[0]) * 1e9)
    p, tid = f[2].split("/")
    if tid == "0":
        continue
    if f[4] == "in":
        since[cpu] = (tid, t)
        if tid != p:
            runs[tid] = runs.get(tid, 0) + 1
        continue
    if "(preempted)" not in line or tid == p:
        continue
    who, t0 = since.get(cpu, (None, 0))
    if who != tid:
        sys.exit("CPU %d: out of %s, which did not switch in: %s" % (cpu, tid, line.strip()))
    n = t - t0
    k = n // sl                      # slices it ran (alone when the first k - 1 ended)
    if n < sl or (exact and n - k * sl > 1000 * k):
        sys.exit("CPU %d: %s preempted after %d ns, the slice is %d: %s" % (cpu, tid, n, sl, line.strip()))
    lens.append(n)
few = [t for t in runs if runs[t] < 3]
if len(runs) < 2 or few:
    sys.exit("workers that ran in fewer than 3 stretches: %s (of %s)" % (" ".join(few), runs))
if len(lens) < least:
    sys.exit("%d switch-outs with PREEMPT, fewer than %d" % (len(lens), least))
print("%d preempted after %d-%d ns, stretches per worker %d-%d" %
      (len(lens), min(lens), max(lens), min(runs.values()), max(runs.values())))
EOF
}

# spin's workers (about a million instructions each) with a slice of
# 100000 instructions: 3 on 1 CPU take turns, the main thread asleep in
# pthread_join(); 4 on 2 CPUs, two on each (the main thread, asleep, on
# CPU 0); -a gives SWITCH_CPU_WIDE. The least PREEMPT switch-outs: each
# worker ends about 10 slices, and a slice that ends with no other worker
# waiting preempts nothing (the last worker's last ones, a worker's first
# while the others still reach the barrier): 3 workers give 27 to 30 (28 and
# 29 seen), so 24; the model without the slice gives none.
for run in "sl1 1 3 24" "sl2 2 4 10" "sa2 2 4 10 -a"; do
	read -r name ncpu nt least opt <<<"$run"
	what="spin's $nt workers on $ncpu CPUs ${opt:+($opt) }with a slice"
	# shellcheck disable=SC2086
	recorded "$what" "$name" "$ncpu" 0 --emulate-slice 100000 $opt -- "$PROGS/spin" "$nt" 200 ||
		continue
	if res=$(switches "$name" "$ncpu" 2>&1); then
		t_pass "$what: switches consistent per CPU ($res)"
	else
		t_fail "$what: switches consistent per CPU" "$res"
	fi
	exact=0
	[ "$ncpu" = 1 ] && exact=1
	if res=$(slices "$name" 100000 "$exact" "$least" 2>&1); then
		t_pass "$what: the workers take turns, preempted at the end of their slice ($res)"
	else
		t_fail "$what: the workers take turns, preempted at the end of their slice" "$res"
	fi
done
# The default slice (2 million instructions) is longer than a worker's run:
# on one CPU none of them is preempted, they run one after the other.
np=
if rec sd1 1 0 -- "$PROGS/spin" 3 200 && res=$(per_thread sd1) &&
	np=$(grep -c 'SWITCH.*(preempted)' sd1.sb); [ "$np" = 0 ]; then
	t_pass "spin on 1 CPU with the default slice: no worker preempted, all decoded ($res)"
else
	t_fail "spin on 1 CPU with the default slice: no worker preempted" "$res; preempted $np"
fi

# ---- -a: CPU-wide events, PERF_RECORD_SWITCH_CPU_WIDE ----

if recorded "-a on 3 CPUs" all3 3 0 -a -- "$PROGS/threads" 300; then
	nw=$(grep -c ' SWITCH .* \(next\|prev\) ' all3.sb)
	ni=$(grep -c ' 0/0 .* SWITCH ' all3.sb)
	if res=$(switches all3 3 2>&1) && [ "$nw" = "$(grep -c ' SWITCH ' all3.sb)" ] && [ "$ni" -gt 0 ]; then
		t_pass "-a on 3 CPUs: SWITCH_CPU_WIDE with next/prev, the idle task's too, consistent ($res, $ni of idle)"
	else
		t_fail "-a on 3 CPUs: SWITCH_CPU_WIDE consistent" "$res; with next/prev $nw; of idle $ni"
	fi
	t_match "-a on 3 CPUs: the file says 3 CPUs" ', 3 CPUs,' "$("$PTDUMP" --info all3.data)"
fi

# Threads that sleep: a CPU whose thread waits runs the idle task, or a
# runnable thread of that CPU (one back from its wait too); SWITCH_CPU_WIDE
# names it.
if recorded "-a, pingpong on 2 CPUs" pa2 2 0 -a -- "$PROGS/pingpong" 20; then
	sched pa2 2 >pa2.sched
	w=
	if res=$(switches pa2 2 2>&1) && w=$(waits_right pa2 20); then
		t_pass "-a, pingpong on 2 CPUs: SWITCH_CPU_WIDE consistent, out without PREEMPT at each wait ($res; tid:outs $w)"
	else
		t_fail "-a, pingpong on 2 CPUs: SWITCH_CPU_WIDE consistent, out at each wait" "$res; tid:outs $w"
	fi
	# out of a sleeping thread to the idle task, to another thread; the idle task's out
	ni=$(awk '$4 == "SWITCH" && $5 == "out" && $3 != "0/0" && !/preempted/ && / next 0\/0/' pa2.sb | wc -l)
	nt=$(awk '$4 == "SWITCH" && $5 == "out" && $3 != "0/0" && !/preempted/ && !/ next 0\/0/' pa2.sb | wc -l)
	no=$(awk '$4 == "SWITCH" && $5 == "out" && $3 == "0/0"' pa2.sb | wc -l)
	if [ "$ni" -gt 0 ] && [ "$no" -gt 1 ]; then
		t_pass "-a, pingpong on 2 CPUs: waits leave CPUs idle ($ni to the idle task, $nt to another thread, $no outs of the idle task)"
	else
		t_fail "-a, pingpong on 2 CPUs: waits leave CPUs idle" "$ni to idle, $nt to a thread, $no outs of idle"
	fi
fi

# ---- -C: the listed CPUs' threads, the side-band of every CPU ----

# The threads the model put on CPU 1 of 2: every other one from the second.
if rec c1 2 0 -C 1 -- "$PROGS/threads" 300; then
	sched c1 2 >c1.sched
	on1=$(awk '$2 == 1 { printf "%s%s", s, $1; s = "," }' c1.sched)
	main=$(awk 'NR == 1 { print $1 }' c1.sched)
	if res=$(per_thread c1 "$on1"); then
		t_pass "-C 1 of 2: the threads on CPU 1 decode to their whole truth, the others have no trace ($res)"
	else
		t_fail "-C 1 of 2: only CPU 1's threads, decoded to their truth" "$res"
	fi
	# The program and its libraries were mapped by the first thread, on CPU 0.
	nmap=$(awk -v m="$main" '$4 == "MMAP" && $2 == "[000]" && $3 == m "/" m' c1.sb | wc -l)
	if [ "$nmap" -ge 2 ]; then
		t_pass "-C 1 of 2: the mmaps made on CPU 0 are recorded ($nmap), by the tracking event of every CPU"
	else
		t_fail "-C 1 of 2: the mmaps made on CPU 0 are recorded" "$(head -n 8 c1.sb)"
	fi
else
	t_fail "-C 1 of 2: records" "$(head -n 3 c1.err)"
fi

# ---- cs_etm's per-CPU defaults through the model ----

# As perf's cs_etm_recording_options(): per-CPU rings get timestamp and
# contextid unless the spec sets them; per-thread rings do not. The trace the
# software ETMv4 tracer then writes (timestamps, context IDs, and TRCCONFIGR
# saying so) must decode through OpenCSD to the truth.
progs64=$BD/progs-arm64
export PTREC_PLUGIN_ETM=${PTREC_PLUGIN_ETM:-$(dirname "$PTREC_PLUGIN")/ptrec-emu-etm.so}
merge() { awk '{ if ($1 == e) { e = $2; next } if (s != "") print s, e; s = $1; e = $2 } END { if (s != "") print s, e }'; }
# etm_same NAME: the decoded ranges, merged, are each thread's truth, merged
# (as multisets), and the instruction counts agree. Prints the count.
etm_same() {
	local t want got
	"$PTDUMP" --ranges "$1.data" >"$1.rng" 2>"$1.rng.err" && [ ! -s "$1.rng.err" ] || return 1
	want=$(for t in $(awk '$1 == "B" { print $2 }' "$1.truth" | sort -u); do
		awk -v t="$t" '$1 == "B" && $2 == t { print $3, $4 }' "$1.truth" | merge; done | sort | md5sum)
	got=$(sed -n 's/.*exec range=0x\([0-9a-f]*\):\[0x\([0-9a-f]*\)\].*/\1 \2/p' "$1.rng" | merge | sort | md5sum)
	[ "$want" = "$got" ] || return 1
	want=$(awk '$1 == "B" { s += $5 } END { print s + 0 }' "$1.truth")
	got=$(sed -n 's/.*num_i(\([0-9]*\)).*/\1/p' "$1.rng" | awk '{ s += $1 } END { print s + 0 }')
	[ "$want" = "$got" ] && [ "$want" -gt 0 ] && echo "$want"
}
if ! command -v qemu-aarch64 >/dev/null || [ ! -x "$progs64/threads" ]; then
	t_skip "cs_etm per-CPU defaults" "qemu-aarch64 or the aarch64 test programs are missing"
else
	# Per-thread rings follow the workload's first thread only (no inherit): calls.
	for run in "e2|-e cs_etm//u|0x10004000|threads" "ep|--per-thread -e cs_etm//u|0|calls" \
		"eu|-e cs_etm/timestamp=0/u|0x4000|threads"; do
		IFS='|' read -r name opts want prog <<<"$run"
		# shellcheck disable=SC2086
		"$PTREC" record -q --emulate --emulate-cpus 2 -o "$name.data" --emulate-truth "$name.truth" \
			$opts -- "$progs64/$prog" >"$name.out" 2>"$name.err"
		rc=$?
		cfg=$("$PTDUMP" --info "$name.data" 2>/dev/null | sed -n 's/.*pmu cs_etm .* config \([0-9a-fx]*\),.*/\1/p')
		t_eq "cs_etm ($opts): config (timestamp 0x10000000, contextid 0x4000)" "0 $want" "$rc $cfg"
		if n=$(etm_same "$name"); then
			t_pass "cs_etm ($opts): decodes to every thread's truth ($n instructions)"
		else
			t_fail "cs_etm ($opts): decodes to every thread's truth" "$(head -n 3 "$name.err" "$name.rng.err")"
		fi
	done
	t_match "cs_etm on 2 CPUs: the file's machine has 2 CPUs" 'aarch64, .*, 2 CPUs,' \
		"$("$PTDUMP" --info e2.data)"
	"$PTREC" record -q --emulate -e cs_etm//u -o ex.data -- "$PROGS/threads" 1 >ex.out 2>ex.err
	rc=$?
	if [ "$rc" = 1 ] && grep -q 'not an aarch64 program: the software cs_etm traces those' ex.err; then
		t_pass "cs_etm on an x86-64 program: refused, named"
	else
		t_fail "cs_etm on an x86-64 program: refused" "status $rc: $(cat ex.err)"
	fi
fi

# ---- bad input ----

# bad_values OPTION MESSAGE VALUE...: each VALUE of OPTION is a usage error saying MESSAGE.
bad_values() {
	local opt=$1 msg=$2 bad rc
	shift 2
	for bad in "$@"; do
		"$PTREC" record --emulate "$opt" "$bad" -o bad.data -- "$PROGS/threads" 1 >bad.out 2>bad.err
		rc=$?
		if [ "$rc" = 2 ] && grep -q -- "$msg" bad.err; then
			t_pass "$opt '$bad': a usage error"
		else
			t_fail "$opt '$bad': a usage error" "status $rc: $(cat bad.err)"
		fi
	done
}
bad_values --emulate-cpus 'emulate-cpus takes a number of CPUs from 1 to 64' 0 65 x -1 ""
bad_values --emulate-slice 'emulate-slice takes a number of instructions from 1000 to 1000000000000' \
	999 1000000000001 x -5 ""
"$PTREC" record --emulate-slice 5000 -o bad.data -- true >bad.out 2>bad.err
t_eq "--emulate-slice without --emulate: a usage error" 2 "$?"
"$PTREC" record --emulate-cpus 2 -o bad.data -- true >bad.out 2>bad.err
t_eq "--emulate-cpus without --emulate: a usage error" 2 "$?"
"$PTREC" record --emulate --emulate-cpus 2 -C 2 -o bad.data -- "$PROGS/threads" 1 >bad.out 2>bad.err
rc=$?
if [ "$rc" = 1 ] && grep -q 'CPU 2 does not exist here (CPUs 0-1)' bad.err; then
	t_pass "-C 2 on 2 emulated CPUs: the model's EINVAL, named"
else
	t_fail "-C 2 on 2 emulated CPUs: refused" "status $rc: $(cat bad.err)"
fi

t_done
