#!/usr/bin/env bash
# The views over the decoded event stream: --report, --windows, --diff,
# --folded, --perfetto, their JSON lines (validated against
# docs/ptdump-json.schema.json) and exit statuses.
#
# Numbers are checked against the software tracer's ground truth: per
# function the calls and the instructions that ran in it, per window the
# instructions and calls, as tests/cli/src/decode_truth.c -p derives them
# from the truth file and the binaries on disk alone (no ptdump code). The
# views are also checked against each other and against --stats.
. "$(dirname "$0")/src/paths.sh"
SCHEMA=$TOP/docs/ptdump-json.schema.json

if ! command -v qemu-x86_64 >/dev/null; then
	t_skip "view tests" "qemu-x86_64 is not installed (apt-get install qemu-user)"
	t_done; exit
fi
for f in "$PTREC" "$PTDUMP" "$PTREC_PLUGIN" "$PROGS/calls" "$PROGS/window"; do
	if [ ! -e "$f" ]; then
		t_fail "view tests: $f is missing (run make B=$B tests first)"
		t_done; exit
	fi
done
cd "$T_TMP" || exit 1
if ! cc -O2 -g -Wall -Wextra -Werror -o decode_truth "$SRC/decode_truth.c" -lcapstone -lelf 2>cc.err; then
	t_fail "build decode_truth" "$(cat cc.err)"
	t_done; exit
fi

# record NAME [-e SPEC]... -- PROG ARGS: NAME.data, NAME.truth, NAME.sb
record() {
	local name=$1
	shift
	local args=()
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	shift
	"$PTREC" record --emulate -q "${args[@]}" --emulate-truth "$name.truth" -o "$name.data" \
		-- "$@" >"$name.out" 2>"$name.rec.err" &&
		"$PTDUMP" --sideband "$name.data" >"$name.sb" 2>>"$name.rec.err"
}

# jfield VIEWFILE TYPE FIELD...: tab-separated FIELDs of the JSON lines of TYPE
jfield() {
	python3 - "$@" <<'EOF'
import json, os, sys
path, typ, fields = sys.argv[1], sys.argv[2], sys.argv[3:]
for line in open(path):
    o = json.loads(line)
    if o.get("type") != typ:
        continue
    vals = []
    for f in fields:
        v = o[f]
        vals.append(os.path.basename(v) if f == "object" else str(v))
    print("\t".join(vals))
EOF
}

record calls -- "$PROGS/calls" 2 || { t_fail "record calls" "$(cat calls.rec.err)"; t_done; exit; }
./decode_truth -p calls.sb calls.truth >calls.prof 2>calls.dt.err ||
	{ t_fail "decode_truth -p calls" "$(cat calls.dt.err)"; t_done; exit; }

# ---- --report ----

t_run "--report" 0 "$PTDUMP" --report calls.data
echo "$out" >calls.report
t_run "--report --format=json" 0 "$PTDUMP" --report --format=json calls.data
echo "$out" >calls.rj
awk -F'\t' '$1 == "F" { print $2 "\t" $3 "\t" $4 "\t" $5 }' calls.prof | sort >truth.fn
jfield calls.rj function object name calls insns_self | sort >got.fn
t_eq "--report: calls and self instructions of every function = truth ($(wc -l <truth.fn) functions)" \
	"$(cat truth.fn)" "$(cat got.fn)"
for f in leaf rec sw cmp main; do
	t_match "--report: $f is in the truth" "calls	$f	[1-9]" "$(cat truth.fn)"
done
"$PTDUMP" --stats calls.data >calls.stats
t_eq "--report: total instructions and calls = --stats" \
	"$(awk '$1 == "instructions:" { i = $2 } $1 == "calls:" { c = $2 } END { print i, c }' calls.stats)" \
	"$(jfield calls.rj total insns calls | tr '\t' ' ')"
t_eq "--report: the text rows = the JSON rows" \
	"$(jfield calls.rj function calls insns_total insns_self name | tr '\t' ' ')" \
	"$(grep -v '^#' calls.report | awk '{ print $1, $2, $3, $(NF-1) }')"
t_eq "--report: leaf calls nothing: its total is its self" \
	"$(jfield calls.rj function name insns_self | awk -F'\t' '$1 == "leaf" { print $2 }')" \
	"$(jfield calls.rj function name insns_total | awk -F'\t' '$1 == "leaf" { print $2 }')"
t_eq "--report: sorted by total instructions" \
	"$(jfield calls.rj function insns_total | sort -rn)" "$(jfield calls.rj function insns_total)"
t_run "--report --sort calls" 0 "$PTDUMP" --report --sort calls --format=json calls.data
echo "$out" >calls.rc
t_eq "--sort calls: sorted by calls" "$(jfield calls.rc function calls | sort -rn)" \
	"$(jfield calls.rc function calls)"
t_run "--report=caller" 0 "$PTDUMP" --report=caller --format=json calls.data
echo "$out" >calls.caller
# every call of a function has one caller: the edges into it add up to its calls
t_eq "--report=caller: the callers' calls add up to each function's calls" \
	"$(jfield calls.rj function name object calls | awk -F'\t' '$3 > 0 { print $1 "\t" $2 "\t" $3 }' | sort)" \
	"$(jfield calls.caller edge callee callee_object calls |
		awk -F'\t' '{ k = $1 "\t" $2; n[k] += $3 } END { for (k in n) print k "\t" n[k] }' |
		python3 -c 'import os,sys
for l in sys.stdin:
    a,b,c=l.rstrip("\n").split("\t"); print(a+"\t"+os.path.basename(b)+"\t"+c)' | sort)"
t_match "--report=callee: sw calls leaf" 'leaf' \
	"$("$PTDUMP" --report=callee calls.data | sed -n '/  sw (calls)$/,/^ *[0-9]/p')"

# --by-thread: a row per function and thread, adding up to the flat report
record thr -- "$PROGS/threads" 50 || t_fail "record threads" "$(cat thr.rec.err)"
"$PTDUMP" --report --format=json thr.data >thr.rj
t_run "--report --by-thread" 0 "$PTDUMP" --report --by-thread --format=json thr.data
echo "$out" >thr.bt
t_eq "--by-thread: mix runs in the four worker threads" 4 \
	"$(jfield thr.bt function name tid | awk -F'\t' '$1 == "mix" { print $2 }' | sort -u | wc -l)"
t_eq "--by-thread: each function's rows add up to its flat row" \
	"$(jfield thr.rj function object name calls insns_self | sort)" \
	"$(jfield thr.bt function object name calls insns_self |
		awk -F'\t' '{ k = $1 "\t" $2; c[k] += $3; s[k] += $4 } END { for (k in c) print k "\t" c[k] "\t" s[k] }' | sort)"

# --no-plt and --hide-dso
t_run "--report --no-plt" 0 "$PTDUMP" --report --no-plt --format=json calls.data
echo "$out" >calls.noplt
t_nomatch "--no-plt: no PLT stub of the program is a row" '@plt|\.plt' \
	"$(jfield calls.noplt function object name | awk -F'\t' '$1 == "calls"')"
t_eq "--no-plt: qsort's one call through qsort@plt is qsort's" "1" \
	"$(jfield calls.noplt function name calls | awk -F'\t' '$1 == "qsort" { print $2 }')"
t_eq "--no-plt: the instructions in all stay the same" "$(jfield calls.rj total insns)" \
	"$(jfield calls.noplt total insns)"
t_run "--report --hide-dso libc" 0 "$PTDUMP" --report --hide-dso 'libc\.so' --format=json calls.data
t_nomatch "--hide-dso: no libc function" 'libc\.so' "$out"
t_match "--hide-dso: the program's functions stay" '"name":"leaf"' "$out"

# ---- --windows ----

record win -e "intel_pt/aux-action=start-paused/u" \
	-e "uprobe:$PROGS/window:window_fn/aux-action=resume,name=enter/" \
	-e "uretprobe:$PROGS/window:window_fn/aux-action=pause,name=leave/" -- "$PROGS/window" 5 ||
	t_fail "record uprobe windows" "$(cat win.rec.err)"
record cw -e "intel_pt/aux-action=start-paused/u" \
	-e "instructions/period=7000,aux-action=resume,name=Resume/u" \
	-e "instructions/period=11000,aux-action=pause,name=Pause/u" -- "$PROGS/calls" 2 ||
	t_fail "record counter windows" "$(cat cw.rec.err)"
for n in win cw calls; do
	opts=()
	[ $n = cw ] && opts=(-t Resume -t Pause)
	./decode_truth -p "${opts[@]}" $n.sb $n.truth >$n.prof 2>$n.dt.err || t_fail "decode_truth -p $n" "$(cat $n.dt.err)"
	t_run "--windows ($n)" 0 "$PTDUMP" --windows --format=json $n.data
	echo "$out" >$n.wj
	"$PTDUMP" --windows $n.data >$n.wt
	t_eq "--windows ($n): instructions and calls per window = truth ($(grep -c ^W $n.prof) windows)" \
		"$(awk -F'\t' '$1 == "W" { print $3 "\t" $4 }' $n.prof)" "$(jfield $n.wj window insns calls)"
	t_eq "--windows ($n): the text rows = the JSON rows" "$(jfield $n.wj window insns calls | tr '\t' ' ')" \
		"$(grep -v '^#' $n.wt | awk '{ print $7, $8 }')"
	# count, mean, median, p95, max: computed here from the rows
	t_eq "--windows ($n): the summary of instructions" \
		"$(jfield $n.wj window insns | sort -n | awk '{ v[NR] = $1; s += $1 }
			END { m = NR % 2 ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)
			      r = int(0.95 * NR); if (r < 0.95 * NR) r++
			      printf "%d %.2f %d %d %d\n", NR, s / NR, m, v[r], v[NR] }')" \
		"$(jfield $n.wj summary of count mean median p95 max | awk '$1 == "insns" { printf "%d %.2f %d %d %d\n", $2, $3, $4, $5, $6 }')"
done
t_eq "--windows (win): five windows, opened by enter, closed by leave, all in window_fn" \
	"5 enter leave window_fn" \
	"$(grep -v '^#' win.wt | awk '{ o[$3 " " $4 " " $(NF-1)]++; n++ } END { for (k in o) print n, k }')"
t_match "--windows (cw): several windows" '^([3-9]|[1-9][0-9]+)$' "$(jfield cw.wj window insns | wc -l)"
t_eq "--windows (calls): one window, the whole run, = --report's instructions" \
	"$(jfield calls.rj total insns)" "$(jfield calls.wj window insns)"
t_eq "--report (win): window_fn ran 5 x its instructions in the windows" \
	"$(awk -F'\t' '$1 == "W" { s += $3 } END { print s }' win.prof)" \
	"$("$PTDUMP" --report --format=json win.data | grep '"name":"window_fn"' | sed 's/.*"insns_self":\([0-9]*\).*/\1/')"

# ---- --diff ----

record calls3 -- "$PROGS/calls" 3 || t_fail "record calls 3" "$(cat calls3.rec.err)"
t_run "--diff" 0 "$PTDUMP" --diff calls.data calls3.data --format=json
echo "$out" >diff.j
"$PTDUMP" --report --format=json calls3.data >calls3.rj
t_eq "--diff: each function's change = the difference of the two reports" \
	"$(python3 - calls.rj calls3.rj <<'EOF'
import json, os, sys
def load(p):
    d = {}
    for l in open(p):
        o = json.loads(l)
        if o.get("type") == "function":
            d[(os.path.basename(o["object"]), o["name"])] = o["insns_total"]
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
for k in sorted(set(a) | set(b)):
    print(k[0], k[1], b.get(k, 0) - a.get(k, 0))
EOF
)" "$(jfield diff.j function object name delta_insns | tr '\t' ' ' | sort -k1,1 -k2,2)"
sw_old=$(awk -F'\t' '$3 == "sw" { print $4 }' calls.prof) sw_new=$(./decode_truth -p calls3.sb calls3.truth | awk -F'\t' '$3 == "sw" { print $4 }')
t_eq "--diff: sw's calls old and new = truth" "$sw_old $sw_new" \
	"$(jfield diff.j function name old_calls new_calls | awk -F'\t' '$1 == "sw" { print $2, $3 }')"
t_run "--diff --fail-above 20: sw grew 50 %, exit 3" 3 "$PTDUMP" --diff calls.data calls3.data --fail-above 20
t_match "--diff --fail-above: says what grew" 'grew by' "$err"
t_run "--diff --fail-above 1000: exit 0" 0 "$PTDUMP" --diff calls.data calls3.data --fail-above 1000
t_run "--diff of a recording with itself: no change" 0 "$PTDUMP" --diff win.data win.data --fail-above 0 --format=json
t_eq "--diff of itself: every window's change is 0" "0" \
	"$(echo "$out" >self.j; jfield self.j window delta_insns | sort -u)"

# ---- --folded ----

t_run "--folded" 0 "$PTDUMP" --folded calls.data
echo "$out" >calls.folded
t_eq "--folded: the weights add up to all instructions" "$(jfield calls.rj total insns)" \
	"$(awk '{ s += $NF } END { print s }' calls.folded)"
t_eq "--folded: the stacks ending in each function add up to its self instructions" \
	"$(jfield calls.rj function name insns_self | awk -F'\t' '$1 ~ /^(leaf|rec|sw|cmp|main|tail_a|tail_b)$/' | sort)" \
	"$(awk '{ n = split($1, f, ";"); w[f[n]] += $2 } END { for (k in w) if (k ~ /^(leaf|rec|sw|cmp|main|tail_a|tail_b)$/) print k "\t" w[k] }' calls.folded | sort)"
t_match "--folded: main calls sw calls leaf" '(^|;)main;sw;leaf [0-9]+$' "$(cat calls.folded)"
t_eq "--folded --weight=calls: leaf's calls = truth" "$(awk -F'\t' '$3 == "leaf" { print $4 }' calls.prof)" \
	"$("$PTDUMP" --folded --weight=calls calls.data | awk '{ n = split($1, f, ";"); if (f[n] == "leaf") s += $2 } END { print s }')"

# ---- --perfetto ----

t_run "--perfetto" 0 "$PTDUMP" --perfetto win.json win.data
t_eq "--perfetto: JSON with five window slices and ten trigger instants" "5 10" \
	"$(python3 -c 'import json,sys; e=json.load(open("win.json"))["traceEvents"]
print(sum(1 for x in e if x.get("cat")=="window"), sum(1 for x in e if x["ph"]=="i" and x["cat"] in ("pause","resume")))')"
t_run "--perfetto (calls)" 0 "$PTDUMP" --perfetto calls.json calls.data
t_eq "--perfetto: a call slice for each of leaf's calls (truth)" "$(awk -F'\t' '$3 == "leaf" { print $4 }' calls.prof)" \
	"$(python3 -c 'import json; print(sum(1 for x in json.load(open("calls.json"))["traceEvents"] if x.get("cat")=="call" and x["name"]=="leaf"))')"
t_run "--perfetto --max-events 10" 0 "$PTDUMP" --perfetto calls10.json --max-events 10 calls.data
t_match "--max-events: says how many were left out" 'left out' "$err"
t_eq "--max-events 10: the ten longest calls are kept" \
	"$(python3 -c 'import json; print(sorted((x["dur"] for x in json.load(open("calls.json"))["traceEvents"] if x.get("cat")=="call"), reverse=True)[:10])')" \
	"$(python3 -c 'import json; print(sorted((x["dur"] for x in json.load(open("calls10.json"))["traceEvents"] if x.get("cat")=="call"), reverse=True))')"

# ---- --format=json: every line of every view against the schema ----

head -c 600000 calls.data >cut.data
for v in call-trace call-ret-trace branches stats sideband report windows info; do
	for n in calls win; do
		"$PTDUMP" --$v --format=json $n.data >$n.$v.json 2>$n.$v.err ||
			t_fail "--$v --format=json ($n)" "$(cat $n.$v.err)"
	done
done
"$PTDUMP" --diff calls.data calls3.data --format=json >calls.diff.json
"$PTDUMP" --report=caller --by-thread --format=json calls.data >calls.rcaller.json
"$PTDUMP" --info --format=json cut.data >calls.cut-info.json
"$PTDUMP" -q --to-perf-data calls.perf calls.data
"$PTDUMP" --info --format=json calls.perf >calls.perf-info.json
if /usr/bin/python3 -c 'import jsonschema' 2>/dev/null; then
	t_run "--format=json: every line of every view is valid (JSON Schema)" 0 /usr/bin/python3 -c '
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
defs = schema["$defs"]
n = 0
for path in sys.argv[2:]:
    lines = open(path).read().splitlines()
    if not lines:
        sys.exit("%s: empty" % path)
    head = json.loads(lines[0])
    jsonschema.validate(head, schema)
    view = jsonschema.Draft202012Validator({"$ref": "#/$defs/" + head["view"], "$defs": defs})
    for i, line in enumerate(lines[1:], 2):
        try:
            view.validate(json.loads(line))
        except Exception as e:
            sys.exit("%s:%d: %s\n%s" % (path, i, str(e).splitlines()[0], line))
        n += 1
print("%d lines" % n)' "$SCHEMA" calls.*.json win.*.json
	t_match "--format=json: lines were checked" '^[1-9][0-9]+ lines' "$out"
	# the schema holds: an address as a number, a count as a string, an
	# unknown field are each refused
	t_run "--format=json: the schema refuses wrong lines" 0 /usr/bin/python3 -c '
import json, sys
import jsonschema
defs = json.load(open(sys.argv[1]))["$defs"]
ok = json.loads(open(sys.argv[2]).read().splitlines()[1])
v = jsonschema.Draft202012Validator({"$ref": "#/$defs/call-trace", "$defs": defs})
v.validate(ok)
for bad in ({**ok, "from": int(ok["from"], 16)}, {**ok, "depth": str(ok["depth"])}, {**ok, "x": 1}):
    if v.is_valid(bad):
        sys.exit("accepted: %s" % json.dumps(bad))' "$SCHEMA" calls.call-trace.json
else
	t_skip "--format=json: JSON Schema validation" "python3-jsonschema is not installed"
fi

# ct_lines FILE: thread, indent and name of each line of a text call trace
ct_lines() {
	awk -F'\t' 'index($0, "\t") { n = split($1, f, " "); r = $2; sub(/ +$/, "", r); print f[2] "\t" r }' "$1"
}
# jct_lines FILE [OBJECT-REGEX]: the same from JSON call-trace lines, without
# the calls into objects (system calls made in objects) that match
jct_lines() {
	python3 -c 'import json, re, sys
hide = re.compile(sys.argv[2]) if len(sys.argv) > 2 else None
for l in open(sys.argv[1]).read().splitlines()[1:]:
    o = json.loads(l)
    if o["type"] in ("call", "syscall"):
        obj = o["from_object"] if o["type"] == "syscall" else o["to_object"]
        if hide and hide.search(obj or "[unknown]"):
            continue
        name = "[syscall]" if o["type"] == "syscall" else o["to_name"] or "%16x" % int(o["to"], 16)
        d = o["depth"]
        ind = " " * 4 * d if d <= 40 else " " * 160 + "[+%d] " % (d - 40)
        print("%d\t%s%s" % (o["tid"], ind, name))' "$@"
}

# the JSON lines carry the text views' values
"$PTDUMP" --call-trace calls.data >calls.ct
t_eq "--call-trace --format=json: the text view's threads, depths and names" \
	"$(ct_lines calls.ct)" "$(jct_lines calls.call-trace.json)"
"$PTDUMP" --branches win.data >win.br
t_eq "--branches --format=json: the text view's addresses" \
	"$(awk '{ for (i = 1; i <= NF; i++) if ($i == "=>") { print $(i - 3), $(i + 1); break } }' win.br)" \
	"$(python3 -c 'import json,sys
for l in open(sys.argv[1]).read().splitlines()[1:]:
    o = json.loads(l)
    if o["type"] == "branch":
        print("%x %x" % (int(o["from"], 16), int(o.get("to", "0x0"), 16)))' win.branches.json)"
t_eq "--stats --format=json: the text view's totals" \
	"$(awk '$1 == "instructions:" || $1 == "branches:" || $1 == "calls:" || $1 == "returns:" { printf "%s ", $2 }' calls.stats)" \
	"$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o.get("type") == "total": print(o["insns"], o["branches"], o["calls"], o["returns"], end=" ")' calls.stats.json)"
t_eq "--sideband --format=json: a line per record of the text view, of the same kinds" \
	"$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[A-Z_]+$/) { print tolower($i); break } }' calls.sb)" \
	"$(python3 -c 'import json,sys
for l in open(sys.argv[1]).read().splitlines()[1:]: print(json.loads(l)["type"])' calls.sideband.json)"

# --info --format=json: the text view's facts
info_text() { # FILE: events, chunks by kind, the file's state as the text view says them
	awk '/^  \[[0-9]+\] / { print "event", $2, $4 } /^  [A-Z]+ +[0-9]+ chunks? / { print "chunks", $1, $2 }
	     /^size: / { sub(/^size: +[^;]*; /, ""); print "status", $0 }
	     /^machine: / { sub(/,$/, "", $2); print "machine", $2, $3 }' "$1"
}
info_json() {
	python3 -c 'import json, sys
for l in open(sys.argv[1]).read().splitlines()[1:]:
    o = json.loads(l)
    t = o["type"]
    if t == "event": print("event", o["name"], o["pmu"])
    elif t == "chunks": print("chunks", o["kind"], o["count"])
    elif t == "status": print("status", o["text"])
    elif t == "machine": print("machine", o["arch"], o["vendor"])' "$1"
}
for n in calls win; do
	"$PTDUMP" --info $n.data >$n.info
	t_eq "--info --format=json ($n): the text view's events, chunks, machine and state" \
		"$(info_text $n.info | sort)" "$(info_json $n.info.json | sort)"
done
t_match "--info --format=json (win): the three events with their aux-actions" \
	'start-paused.*resume.*pause' "$(jfield win.info.json event aux_action | tr '\n' ' ')"
"$PTDUMP" --info cut.data >cut.info 2>/dev/null
t_eq "--info --format=json of a file cut short: the text view's state, cut_short true" \
	"$(info_text cut.info | grep ^status) True False" \
	"$(info_json calls.cut-info.json | grep ^status) $(jfield calls.cut-info.json status cut_short complete | tr '\t' ' ')"
# perf.data: the text view's events, build ids, record counts and trace bytes
"$PTDUMP" --info calls.perf >calls.perf-info
t_eq "--info --format=json of perf.data: the text view's events" \
	"$(awk '/^events:/ { e = 1; next } e && /^  \[/ { print $2 } e && !/^  / { e = 0 }' calls.perf-info)" \
	"$(jfield calls.perf-info.json perf_event name)"
t_eq "--info --format=json of perf.data: the text view's build ids" \
	"$(awk '/^build ids:/ { b = 1; next } b && /^  / { print $1 "\t" $2; next } { b = 0 }' calls.perf-info)" \
	"$(jfield calls.perf-info.json build_id build_id path)"
t_eq "--info --format=json of perf.data: the text view's record counts" \
	"$(awk '/^records:/ { r = 1; next } r && /^  / { print $1 "\t" $2; next } { r = 0 }' calls.perf-info | sort)" \
	"$(python3 -c 'import json, sys
for l in open(sys.argv[1]).read().splitlines()[1:]:
    o = json.loads(l)
    if o["type"] == "records":
        for k, v in o["counts"].items(): print("%s\t%d" % (k, v))
        print("total\t%d" % o["total"])' calls.perf-info.json | sort)"
t_eq "--info --format=json of perf.data: the trace bytes the text view counts" \
	"$(sed -n 's/^trace: *\([0-9]*\) bytes in \([0-9]*\) AUXTRACE records/\1 \2/p' calls.perf-info)" \
	"$(jfield calls.perf-info.json records trace_bytes auxtrace_records | tr '\t' ' ')"
t_eq "--info --format=json of perf.data: on a pipe, the same but the path" \
	"$(tail -n +3 calls.perf-info.json)" "$(cat calls.perf | "$PTDUMP" --info --format=json - | tail -n +3)"

# ---- --call-trace --durations, --max-depth ----

t_run "--call-trace --durations" 0 "$PTDUMP" --call-trace --durations calls.data
echo "$out" >calls.dur
t_eq "--durations: the calls of --call-trace, at its depths, in its order" \
	"$(awk -F'\t' 'index($0, "\t") { n = split($1, f, " "); r = $2; sub(/ +$/, "", r)
		# a frame past 40 levels ("[+N] name" at 40) at its full depth
		if (match(r, /\[\+[0-9]+\] /)) r = substr(r, 1, RSTART - 1) sprintf("%*s", 4 * substr(r, RSTART + 2, RLENGTH - 4), "") substr(r, RSTART + RLENGTH)
		if (r !~ /\[syscall\]$/) print f[2] "\t" r }' calls.ct)" \
	"$(awk -F'[|]' '{ n = split($1, f, " "); r = substr($2, 2); if (r ~ /^ *} /) next; sub(/\(\)( \{|;)$/, "", r); print f[2] "\t" r }' calls.dur)"
t_eq "--durations: leaf's instructions, call by call, add up to --report's" \
	"$(jfield calls.rj function name insns_total | awk -F'\t' '$1 == "leaf" { print $2 }')" \
	"$(awk -F'[|]' '$2 ~ /^ *leaf\(\);$/ { n = split($1, f, " "); s += f[n - 1] } END { print s }' calls.dur)"
t_run "--call-trace --durations --max-depth 2" 0 "$PTDUMP" --call-trace --durations --max-depth 2 calls.data
t_eq "--max-depth 2: the lines of depth 1 and 2, no others" \
	"$(awk -F'[|]' '{ r = substr($2, 2); match(r, /^ */); n = RLENGTH; name = substr(r, n + 1)
		# an unnamed function is its address padded to 16 columns, as in --call-trace
		if (name ~ /^[0-9a-f]+\(/) { sub(/\(.*/, "", name); n -= 16 - length(name) }
		if (n <= 8) print }' calls.dur)" "$out"

# --max-depth in the other call views: their lines of depth <= N; the
# profiles count a deeper call in its caller at depth N
# jdepth FILE N: the JSON lines (after the header) of depth <= N
jdepth() {
	python3 -c 'import json, sys
for l in open(sys.argv[1]).read().splitlines()[1:]:
    o = json.loads(l)
    if o.get("depth", 0) <= int(sys.argv[2]): print(l)' "$@"
}
t_run "--call-trace --max-depth 4" 0 "$PTDUMP" --call-trace --max-depth 4 calls.data
echo "$out" >calls.md4
t_eq "--call-trace --max-depth 4: the lines of --call-trace of depth <= 4" \
	"$(ct_lines calls.ct | awk -F'\t' '{ r = $2; match(r, /^ */); n = RLENGTH
		if (r ~ /^ *[0-9a-f]+$/) n -= 16 - (length(r) - RLENGTH)
		if (n <= 16) print }')" "$(ct_lines calls.md4)"
t_match "--call-trace --max-depth 4: main's calls of sw are there" $'\t                sw$' "$(ct_lines calls.md4)"
"$PTDUMP" --call-ret-trace --format=json calls.data >calls.crt.json
t_run "--call-ret-trace --format=json --max-depth 4" 0 "$PTDUMP" --call-ret-trace --format=json --max-depth 4 calls.data
t_eq "--call-ret-trace --format=json --max-depth 4: the lines of depth <= 4" \
	"$(jdepth calls.crt.json 4)" "$(echo "$out" | tail -n +2)"
# call lines per function name (named functions only)
ct_calls() { ct_lines "$1" | awk -F'\t' '{ n = split($2, w, " "); if (w[n] !~ /^([0-9a-f]+|\[syscall\])$/) print w[n] }' | sort | uniq -c | awk '{ print $2 "\t" $1 }'; }
rj_calls() { jfield "$1" function name calls | awk -F'\t' '$1 != "[unknown]" && $2 > 0 { c[$1] += $2 } END { for (k in c) print k "\t" c[k] }' | sort; }
"$PTDUMP" --report --format=json --max-depth 4 calls.data >calls.rj4
t_eq "--report --max-depth 4: each function's calls = its lines in --call-trace --max-depth 4" \
	"$(ct_calls calls.md4)" "$(rj_calls calls.rj4)"
t_eq "--report --max-depth 4: all instructions count, each once as some function's self" \
	"$(jfield calls.rj total insns) $(jfield calls.rj total insns)" \
	"$(jfield calls.rj4 total insns) $(jfield calls.rj4 function insns_self | awk '{ s += $1 } END { print s }')"
t_eq "--report --max-depth 4: main's total instructions as without it" \
	"$(jfield calls.rj function name insns_total | awk -F'\t' '$1 == "main" { print $2 }')" \
	"$(jfield calls.rj4 function name insns_total | awk -F'\t' '$1 == "main" { print $2 }')"
"$PTDUMP" --folded --max-depth 4 calls.data >calls.folded4
t_eq "--folded --max-depth 4: the stacks ending in each function add up to its self in --report --max-depth 4" \
	"$(jfield calls.rj4 function name insns_self | awk -F'\t' '$1 ~ /^(leaf|rec|sw|cmp|main)$/' | sort)" \
	"$(awk '{ n = split($1, f, ";"); w[f[n]] += $2 } END { for (k in w) if (k ~ /^(leaf|rec|sw|cmp|main)$/) print k "\t" w[k] }' calls.folded4 | sort)"
t_run "--perfetto --max-depth 4" 0 "$PTDUMP" --perfetto calls4.json --max-depth 4 calls.data
t_eq "--perfetto --max-depth 4: a slice per line of sw and of leaf in --call-trace --max-depth 4" \
	"$(ct_calls calls.md4 | awk -F'\t' '$1 == "sw" || $1 == "leaf" { print $2 }' | tr '\n' ' ')" \
	"$(python3 -c 'import json; e = json.load(open("calls4.json"))["traceEvents"]
print(*(sum(1 for x in e if x.get("cat") == "call" and x["name"] == n) for n in ("leaf", "sw")), end=" ")')"
t_run "--max-depth with --branches: usage error" 2 "$PTDUMP" --branches --max-depth 2 calls.data

# --hide-dso and --no-plt in the call traces
t_run "--call-trace --hide-dso libc" 0 "$PTDUMP" --call-trace --hide-dso 'libc\.so' calls.data
echo "$out" >calls.hd
t_eq "--call-trace --hide-dso libc: --call-trace without the calls into libc (and its system calls)" \
	"$(jct_lines calls.call-trace.json 'libc\.so')" "$(ct_lines calls.hd)"
"$PTDUMP" --report --format=json --hide-dso 'libc\.so' calls.data >calls.rjhd
t_eq "--call-trace --hide-dso libc: each function's lines = its calls in --report --hide-dso libc" \
	"$(ct_calls calls.hd)" "$(rj_calls calls.rjhd)"
t_run "--call-trace --no-plt" 0 "$PTDUMP" --call-trace --no-plt calls.data
echo "$out" >calls.np
t_eq "--call-trace --no-plt: each function's lines = its calls in --report --no-plt" \
	"$(ct_calls calls.np)" "$(rj_calls calls.noplt)"
t_eq "--call-trace --no-plt: qsort's calls = qsort@plt's (truth), no stub line of the program" \
	"$(awk -F'\t' '$3 == "qsort@plt" { print $4 }' calls.prof) 0" \
	"$(ct_calls calls.np | awk -F'\t' '$1 == "qsort" { print $2 }') $(grep -c '/calls  *)'$'\t'' *[^ ]*@plt' calls.np)"
t_match "--call-trace: qsort@plt is a line without --no-plt" 'qsort@plt' "$(cat calls.ct)"
t_run "--call-ret-trace --no-plt --hide-dso libc --max-depth 6" 0 "$PTDUMP" --call-ret-trace --no-plt --hide-dso 'libc\.so' --max-depth 6 calls.data
t_eq "--call-ret-trace with all three: its call lines = --call-trace's with all three" \
	"$("$PTDUMP" --call-trace --no-plt --hide-dso 'libc\.so' --max-depth 6 calls.data | ct_lines /dev/stdin | grep -v '\[syscall\]$')" \
	"$(echo "$out" | grep '^ *[^ ]* *[0-9]* *[0-9.]*:   call ' | ct_lines /dev/stdin)"
t_run "--call-trace --format=json --hide-dso libc" 0 "$PTDUMP" --call-trace --format=json --hide-dso 'libc\.so' calls.data
echo "$out" >calls.hd.json
t_eq "--call-trace --format=json --hide-dso libc: the text view's lines with --hide-dso libc" \
	"$(ct_lines calls.hd)" "$(jct_lines calls.hd.json)"
t_nomatch "--call-trace --format=json --hide-dso libc: no call into libc" '"to_object":"[^"]*libc\.so' "$(cat calls.hd.json)"
t_run "--call-trace --no-plt --format=json" 0 "$PTDUMP" --call-trace --no-plt --format=json calls.data
echo "$out" >calls.np.json
t_eq "--call-trace --no-plt --format=json: the text view's lines with --no-plt ($(wc -l <calls.np))" \
	"$(ct_lines calls.np)" "$(jct_lines calls.np.json)"
t_nomatch "--call-trace --no-plt --format=json: no call to a PLT stub of the program" \
	'"to_name":"[^"]*@plt","to_object":"[^"]*/calls"' "$(cat calls.np.json)"
"$PTDUMP" --call-ret-trace --no-plt --hide-dso 'libc\.so' --max-depth 6 calls.data >calls.np3
t_run "--call-ret-trace --no-plt --hide-dso libc --max-depth 6 --format=json" 0 \
	"$PTDUMP" --call-ret-trace --no-plt --hide-dso 'libc\.so' --max-depth 6 --format=json calls.data
t_eq "--call-ret-trace with all three as JSON: one object per text line, same kinds and depths" \
	"$(awk -F'\t' 'index($0, "\t") { split($1, f, ":   "); split(f[2], k, " "); r = $2; match(r, /^ */); print k[1] "\t" RLENGTH / 4 }' calls.np3 |
		sed 's/^tr\t/trace\t/')" \
	"$(echo "$out" | python3 -c 'import json, sys
names = {"call": "call", "return": "return", "trace_begin": "trace", "trace_end": "trace", "syscall": "syscall", "sysret": "sysret"}
for l in sys.stdin.read().splitlines()[1:]:
    o = json.loads(l)
    if o["type"] in names:
        print(names[o["type"]] + "\t" + str(o["depth"]))')"

# --symbol with JSON and --durations: the text view's lines
"$PTDUMP" --call-trace --symbol sw calls.data >calls.sym
t_run "--call-trace --symbol sw --format=json" 0 "$PTDUMP" --call-trace --symbol sw --format=json calls.data
echo "$out" >calls.sym.json
t_eq "--symbol sw --format=json: the lines of --call-trace --symbol sw ($(wc -l <calls.sym))" \
	"$(ct_lines calls.sym)" "$(jct_lines calls.sym.json)"
t_eq "--symbol rec: --call-ret-trace --format=json has a line per text line" \
	"$("$PTDUMP" --call-ret-trace --symbol rec calls.data | wc -l)" \
	"$("$PTDUMP" --call-ret-trace --symbol rec --format=json calls.data | tail -n +2 | wc -l)"
t_run "--call-trace --durations --symbol sw" 0 "$PTDUMP" --call-trace --durations --symbol sw calls.data
t_eq "--durations --symbol sw: the calls of --call-trace --symbol sw" \
	"$(ct_lines calls.sym | grep -v '\[syscall\]$')" \
	"$(echo "$out" | awk -F'[|]' '{ n = split($1, f, " "); r = substr($2, 2); if (r ~ /^ *} /) next; sub(/\(\)( \{|;)$/, "", r); print f[2] "\t" r }')"
# A call trace's lines as --durations has them: a frame past 40 levels
# ("[+N] name" at 40) at its full depth, no [syscall] lines.
ct_full() {
	awk -F'\t' 'index($0, "\t") { n = split($1, f, " "); r = $2; sub(/ +$/, "", r)
		if (match(r, /\[\+[0-9]+\] /)) r = substr(r, 1, RSTART - 1) sprintf("%*s", 4 * substr(r, RSTART + 2, RLENGTH - 4), "") substr(r, RSTART + RLENGTH)
		if (r !~ /\[syscall\]$/) print f[2] "\t" r }' "$1"
}
dur_lines() {
	awk -F'[|]' '{ n = split($1, f, " "); r = substr($2, 2); if (r ~ /^ *} /) next; sub(/\(\)( \{|;)$/, "", r); print f[2] "\t" r }'
}
for opts in "--no-plt" "--hide-dso libc\.so" "--no-plt --hide-dso libc\.so --max-depth 6"; do
	# shellcheck disable=SC2086
	"$PTDUMP" --call-trace $opts calls.data >calls.o.ct
	# shellcheck disable=SC2086
	t_run "--call-trace --durations $opts" 0 "$PTDUMP" --call-trace --durations $opts calls.data
	t_eq "--durations $opts: the calls of --call-trace $opts ($(grep -c . calls.o.ct))" \
		"$(ct_full calls.o.ct | sort -s -n -k1,1)" "$(echo "$out" | dur_lines | sort -s -n -k1,1)"
done
t_nomatch "--durations --no-plt: qsort@plt is no line (its call is qsort's)" ' qsort@plt' \
	"$("$PTDUMP" --call-trace --durations --no-plt calls.data)"
t_match "--durations: qsort@plt is a line without --no-plt" ' qsort@plt' "$(cat calls.dur)"
t_run "--symbol nosuch --format=json: exit 1" 1 "$PTDUMP" --call-trace --symbol nosuch_fn --format=json calls.data

# ---- exit statuses and bad options ----

t_run "--format=json with --insn-trace: usage error" 2 "$PTDUMP" --insn-trace --format=json calls.data
t_run "--format=yaml: usage error" 2 "$PTDUMP" --report --format=yaml calls.data
t_run "--sort bogus: usage error" 2 "$PTDUMP" --report --sort bogus calls.data
t_run "--report=bogus: usage error" 2 "$PTDUMP" --report=bogus calls.data
t_run "--weight with --report: usage error" 2 "$PTDUMP" --report --weight calls calls.data
t_run "--fail-above without --diff: usage error" 2 "$PTDUMP" --report --fail-above 5 calls.data
t_run "--hide-dso with a bad pattern: usage error" 2 "$PTDUMP" --report --hide-dso '(' calls.data
t_run "--diff with an unreadable OLD: exit 1" 1 "$PTDUMP" --diff nosuch.data calls.data
t_match "--diff with an unreadable OLD: names it" 'nosuch.data' "$err"
t_run "--perfetto into a missing directory: exit 1" 1 "$PTDUMP" --perfetto nodir/x.json calls.data
t_run "--report of a file with no trace: exit 3" 3 "$PTDUMP" --report --tid 999999 calls.data
t_done
