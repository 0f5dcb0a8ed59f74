#!/usr/bin/env bash
# The recorder's kernel path through the model of the kernel (--emulate):
# what a machine with trace hardware does when things go wrong or are cut
# short, checked against the software tracer's ground truth.
#  - a small AUX area overruns: the model disables the tracer (TRUNCATED),
#    the recorder re-enables it, the report counts the overruns, ptdump shows
#    the gaps, and every call decoded between two gaps is the truth's;
#  - a full data ring loses records: the LOST records and the report agree,
#    and what was kept plus what was lost is what a big ring holds;
#  - -d 1 on an endless program ends with a complete file; so do SIGINT and
#    SIGTERM in the middle of a recording;
#  - -a and -C 0 with a workload record it (its one thread runs on CPU 0;
#    more CPUs: kmodel-cpus.sh).
. "$(dirname "$0")/src/paths.sh"

model_suite "model recordings" "$PROGS/calls" "$PROGS/loop" || { t_done; exit; }
. "$SRC/truth.sh"
truth_build || { t_done; exit; }

# The truth's call trace of NAME, per thread: "tid TAB indent name" lines.
# truth_calls NAME [decode_truth options]: NAME.exp from NAME.truth.
truth_calls() {
	local name=$1
	shift
	"$PTDUMP" --sideband "$name.data" >"$name.sb" 2>/dev/null &&
		./decode_truth "$@" "$name.sb" "$name.truth" >"$name.exp" 2>"$name.dt.err"
}

# segments NAME: checks ptdump's call trace of NAME.data piece by piece. The
# lines between two gaps (or errors) of a thread must be consecutive lines
# of that thread's truth, by name (the call depth starts afresh after a gap).
# With "depth" (for a trace without gaps) the call depths must agree too.
# Prints "segments N matched M" or the first mismatch.
segments() {
	"$PTDUMP" --call-trace "$1.data" >"$1.got" 2>"$1.got.err" || return 1
	python3 - "$1.exp" "$1.got" "${2:-}" <<'EOF'
import sys, re
depth = sys.argv[3] == "depth"
norm = (lambda s: s.rstrip()) if depth else (lambda s: s.strip())
exp = {}
for line in open(sys.argv[1]):
    tid, name = line.rstrip("\n").split("\t", 1)
    exp.setdefault(tid, []).append(norm(name))
segs, cur = [], {}
for line in open(sys.argv[2]):
    if "\t" not in line:
        m = re.search(r"tid (\d+)", line)
        if m and m.group(1) in cur:
            segs.append((m.group(1), cur.pop(m.group(1))))
        continue
    left, right = line.rstrip("\n").split("\t", 1)
    tid = left.split()[1]
    right = re.sub(r"  \((resumed|paused) by .*\)$", "", right.rstrip())
    cur.setdefault(tid, []).append(norm(right))
segs += list(cur.items())
matched = 0
for tid, names in segs:
    t = exp.get(tid, [])
    n = len(names)
    if not any(t[i:i + n] == names for i in range(len(t) - n + 1)):
        # Where it parts from the truth: the longest run from a start that matches.
        best, at = -1, 0
        for i in range(len(t)):
            k = 0
            while k < n and i + k < len(t) and t[i + k] == names[k]:
                k += 1
            if k > best:
                best, at = k, i
        print("thread %s: a piece of %d calls is not in the truth (%d calls): from truth line %d"
              " the first %d agree; then got %s, truth %s" %
              (tid, n, len(t), at, best, names[best:best + 4], t[at + best:at + best + 4]))
        sys.exit(1)
    matched += n
print("segments %d matched %d" % (len(segs), matched))
EOF
}

# ---- a small AUX area overruns ----

"$PTREC" record --emulate -e 'intel_pt/psb_period=0/u' -m ,8K -o ov.data --emulate-truth ov.truth \
	-- "$PROGS/calls" 3000 >ov.out 2>ov.err
t_eq "overrun: record exits 0" 0 "$?"
n=$(sed -n 's/.*the AUX area filled \([0-9]*\) time.*re-enabled it after reading (\([0-9]*\) enable.*/\1 \2/p' ov.err)
read -r filled enables <<<"${n:-0 0}"
if [ "$filled" -ge 2 ] && [ "$enables" -ge "$filled" ]; then
	t_pass "overrun: the report counts $filled overruns and $enables re-enables"
else
	t_fail "overrun: the report counts the overruns and re-enables" "$(cat ov.err)"
fi
trunc=$("$PTDUMP" --sideband ov.data | grep -c 'AUX .* truncated' || true)
t_eq "overrun: the file holds one TRUNCATED record per overrun" "$filled" "$trunc"
gaps=$("$PTDUMP" --stats ov.data | sed -n 's/^gaps: \([0-9]*\).*/\1/p')
if [ "${gaps:-0}" -ge 1 ]; then t_pass "overrun: ptdump shows $gaps gaps"; else
	t_fail "overrun: ptdump shows the gaps" "$("$PTDUMP" --stats ov.data | tail -n 6)"; fi
if truth_calls ov && res=$(segments ov); then
	read -r _ nseg _ ncalls <<<"$res"
	if [ "$nseg" -ge 2 ] && [ "$ncalls" -ge 100 ]; then
		t_pass "overrun: every call decoded between gaps is the truth's ($res)"
	else
		t_fail "overrun: calls decoded after the re-enables" "$res"
	fi
else
	t_fail "overrun: every call decoded between gaps is the truth's" "$res $(head -n 3 ov.got.err ov.dt.err)"
fi

# ---- windows while the AUX area keeps filling ----

# A one-instruction window on every call of step() (40000 of them) into an 8
# KiB AUX area: the area fills again and again and the model disables the
# tracer each time. Whatever the tracer did, every pause and resume it made
# has its trigger's sample (the overflow handler writes the sample of each
# firing), and no sample is without one.
# The data ring is large (16 MiB against 3.7 MiB of samples) so that a slow
# drain loses none; where it still loses some (LOST), no more samples are
# missing than records were lost.
"$PTREC" record --emulate -m 16M,8K -o win.data --emulate-truth win.truth \
	-e 'pt/aux-action=start-paused/u' -e "uprobe:$PROGS/loop:step/aux-action=resume/" \
	-e "uretprobe:$PROGS/loop:step/aux-action=pause/" -- "$PROGS/loop" 5 >win.out 2>win.err
t_match "windows, small AUX area: the area filled" 'the AUX area filled [1-9]' "$(cat win.err)"
st=$("$PTDUMP" --stats win.data)
nres=$(sed -n 's/^trigger uprobe:.*(resume): \([0-9]*\) samples$/\1/p' <<<"$st")
npau=$(sed -n 's/^trigger uretprobe:.*(pause): \([0-9]*\) samples$/\1/p' <<<"$st")
nlost=$(sed -n 's/^recording: .* \([0-9]*\) sideband records lost.*/\1/p' <<<"$st")
if [ "${nlost:-x}" = 0 ]; then
	t_eq "windows, small AUX area: a resume sample for each resume" "$(grep -c '^R ' win.truth)" "$nres"
	t_eq "windows, small AUX area: a pause sample for each pause" "$(grep -c '^P ' win.truth)" "$npau"
else
	# The lost records may be of any kind (AUX, ITRACE_START too), so they
	# bound the missing samples rather than equal them.
	fired=$(grep -c '^[RP] ' win.truth)
	missing=$(( fired - ${nres:-0} - ${npau:-0} ))
	if [ "$missing" -ge 0 ] && [ "$missing" -le "${nlost:-0}" ]; then
		t_pass "windows, small AUX area: $fired firings, $((fired - missing)) samples, the $missing missing within the $nlost lost records"
	else
		t_fail "windows, small AUX area: samples and lost records account for every firing" \
			"firings $fired, resume samples ${nres:-?}, pause samples ${npau:-?}, lost records ${nlost:-?}"
	fi
fi

# ---- a full data ring ----

# Samples every 50 instructions into a one-page data ring, against a 4 MiB one.
lost_rec() { # NAME DATA-SIZE
	"$PTREC" record --emulate -e intel_pt//u -e 'instructions/period=50/u' -m "$2,1M" \
		-o "$1.data" -- "$PROGS/calls" 30 >"$1.out" 2>"$1.err"
}
records() { # NAME: the records of the file other than LOST
	"$PTDUMP" --sideband "$1.data" | awk '$4 != "LOST" && $4 != "" { n++ } END { print n + 0 }'
}
lost_rec big 4M && lost_rec small 4K
t_eq "full data ring: both record" 0 "$?"
lost_sum=$("$PTDUMP" --sideband small.data | awk '$4 == "LOST" { s += $5 } END { print s + 0 }')
reported=$(sed -n 's/.*warning: \([0-9]*\) sideband records\{0,1\} lost.*/\1/p' small.err)
# Records lost at the very end have no LOST record after them: the recorder
# counts them from the kernel's PERF_FORMAT_LOST counts and says so.
at_end=$(sed -n 's/.*lost (\([0-9]*\) at the end.*/\1/p' small.err)
if [ "$lost_sum" = 0 ] && [ -z "$reported" ] && grep -q 'was throttled' small.err; then
	# Throttled, the counter's samples came slowly enough for the drain (one
	# run of CI's, on a loaded machine): no loss to compare.
	t_skip "full data ring: the LOST records and the report agree" \
		"the counter was throttled and the one-page ring kept up: $(grep -o 'was throttled [0-9]* time' small.err)"
elif [ "$lost_sum" -gt 0 ] && [ "$(( lost_sum + ${at_end:-0} ))" = "${reported:-x}" ]; then
	t_pass "full data ring: $lost_sum records lost in LOST records, ${at_end:-0} at the end; the report agrees"
else
	t_fail "full data ring: the LOST records and the report agree" "LOST records: $lost_sum; report: $(cat small.err)"
fi
t_eq "full data ring: kept + lost = what a big ring holds" "$(records big)" "$(( $(records small) + ${reported:-0} ))"
t_eq "big data ring: nothing lost" 0 "$("$PTDUMP" --sideband big.data | grep -c ' LOST ' || true)"

# ---- the recording cut short ----

complete() { "$PTDUMP" --info "$1" 2>&1 | grep -q '; complete ('; }
decodes() { "$PTDUMP" --call-trace "$1" >/dev/null 2>"$1.dec.err" && [ ! -s "$1.dec.err" ]; }

start=$(date +%s)
"$PTREC" record --emulate -d 1 -o dur.data -- "$PROGS/loop" 200000 >dur.out 2>dur.err
rc=$?
took=$(( $(date +%s) - start ))
if [ "$took" -lt 30 ] && complete dur.data; then
	t_pass "-d 1 on an endless program: ends (status $rc) with a complete file"
else
	t_fail "-d 1 on an endless program ends with a complete file" "took ${took}s; $(tail -n 3 dur.err)"
fi
# What the tracer had sent before the end decodes (a tracer killed early may have sent none).
if ! "$PTDUMP" --info dur.data | grep -q '^  AUX '; then
	t_skip "-d 1: the file decodes" "the tracer sent no trace within the second"
elif decodes dur.data; then t_pass "-d 1: the file decodes"; else
	t_fail "-d 1: the file decodes" "$(head -n 3 dur.data.dec.err)"; fi

for sig in INT TERM; do
	"$PTREC" record --emulate -o "sig$sig.data" -- "$PROGS/loop" 200000 >"sig$sig.out" 2>"sig$sig.err" &
	rp=$!
	sleep 2
	kill -"$sig" "$rp"
	wait "$rp"
	if complete "sig$sig.data" && decodes "sig$sig.data"; then
		t_pass "SIG$sig in the middle: a complete file that decodes"
	else
		t_fail "SIG$sig in the middle: a complete file that decodes" \
			"$(tail -n 3 "sig$sig.err"; head -n 3 "sig$sig.data.dec.err" 2>/dev/null)"
	fi
done

# ---- CPU-wide recordings of a workload ----

for mode in "-a" "-C 0"; do
	name=cpu${mode// /}
	# shellcheck disable=SC2086
	"$PTREC" record --emulate $mode -o "$name.data" --emulate-truth "$name.truth" \
		-- "$PROGS/calls" 2 >"$name.out" 2>"$name.err"
	rc=$?
	if [ "$rc" = 0 ] && truth_calls "$name" && res=$(segments "$name" depth) &&
		[ "$(wc -l <"$name.exp")" = "${res##* }" ] && [ ! -s "$name.got.err" ]; then
		t_pass "$mode with a workload: the whole call trace is the truth's ($res)"
	else
		t_fail "$mode with a workload records it" "status $rc; $res; $(head -n 3 "$name.err" "$name.got.err")"
	fi
done

# ---- throttling ----

# Counter windows far above the sample rate: resume every 1000 instructions,
# pause every 1500 (about 1 ns an instruction: a million overflows a second).
# The model throttles the group at the max_samples_per_tick-th overflow of a
# tick (DIV_ROUND_UP(perf_event_max_sample_rate, HZ)): THROTTLE from the
# leader, then no sample of the group until UNTHROTTLE at the next tick. The
# sample rate is the host's, read before and after the recording.
rate=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
"$PTREC" record --emulate -e '{intel_pt/aux-action=start-paused/u,instructions/period=1000,aux-action=resume,name=Resume/u,instructions/period=1500,aux-action=pause,name=Pause/u}' \
	-o thr.data --emulate-truth thr.truth -- "$PROGS/loop" 300 >thr.out 2>thr.err
rc=$?
if [ "$rate" != "$(cat /proc/sys/kernel/perf_event_max_sample_rate)" ]; then
	t_skip "throttling" "perf_event_max_sample_rate changed during the recording"
elif [ "$rc" != 0 ]; then
	t_fail "throttling: records" "status $rc: $(head -n 3 thr.err)"
else
	"$PTDUMP" --sideband thr.data >thr.sb
	nthr=$(awk '$4 == "THROTTLE" { n++ } END { print n + 0 }' thr.sb)
	t_match "throttling: THROTTLE records in --sideband ($nthr)" '^[1-9][0-9]*$' "$nthr"
	t_eq "throttling: the report counts them on the group's leader" "$nthr" \
		"$(sed -n 's/.*warning: the group of intel_pt\/aux-action=start-paused\/u was throttled \([0-9]*\) times.*/\1/p' thr.err)"
	# Per tick: the samples up to THROTTLE (the one that throttles comes
	# right after it, at its time), none until UNTHROTTLE, which comes at a
	# tick's time. Resume's samples per tick are max_samples_per_tick,
	# DIV_ROUND_UP(rate, HZ) with HZ = 1e9 / tick.
	res=$(python3 "$SRC/throttle_check.py" "$rate" thr.sb)
	t_match "throttling: samples stop at the limit and go on at the next tick ($res)" '^ok ' "$res"
	st=$("$PTDUMP" --stats thr.data)
	t_eq "throttling: --stats counts the Resume samples --sideband shows" \
		"$(grep -c ' SAMPLE   Resume ' thr.sb)" \
		"$(sed -n 's/^trigger Resume (resume): \([0-9]*\) samples$/\1/p' <<<"$st")"
	# The tracer acted on each firing that has a sample and on no other:
	# the windows decode to the truth. A firing that changed nothing (a
	# resume while tracing) still trapped into the kernel, which the trace
	# shows as an end and a begin (-t places them by their samples); a
	# begin at the return address of a call whose return went untraced
	# ends that call, so the depths depend on them.
	if truth_calls thr -t Resume -t Pause && res=$(segments thr depth) &&
		[[ "$res" == "segments 1 "* ]]; then
		t_pass "throttling: the whole call trace is the truth's ($res)"
	else
		t_fail "throttling: the call trace is the truth's" "$res $(head -n 3 thr.dt.err thr.got.err 2>/dev/null)"
	fi
fi

t_done
