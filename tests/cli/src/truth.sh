# Helpers for suites that compare ptdump's call trace with the software
# tracer's ground truth (tests/cli/src/decode_truth.c). Source it after
# lib.sh, from the suite's work directory; it builds ./decode_truth.

TRUTH_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# truth_build: builds ./decode_truth; returns 1 (with a failure) if it cannot.
truth_build() {
	if ! cc -O2 -g -Wall -Wextra -Werror -o decode_truth \
		"$TRUTH_SRC/decode_truth.c" -lcapstone -lelf 2>cc.err; then
		t_fail "build decode_truth" "$(cat cc.err)"
		return 1
	fi
}

# ptdump --call-trace lines -> "tid TAB indent name" (other lines dropped).
truth_norm() {
	awk 'BEGIN { FS = "\t" }
	index($0, "\t") == 0 { next }
	{
		right = $2
		sub(/ +$/, "", right)
		sub(/  \((resumed|paused) by .*\)$/, "", right)
		split($1, f, " ")
		printf "%s\t%s\n", f[2], right
	}'
}

# truth_calls NAME: NAME.exp, the call trace the truth of NAME.data gives,
# and NAME.got, the one ptdump decodes (both sorted stably by thread);
# ptdump's other lines in NAME.odd. Returns 1 if either cannot be made.
truth_calls() {
	local n=$1
	"$PTDUMP" --sideband "$n.data" >"$n.sb" 2>"$n.sb.err" &&
		./decode_truth "$n.sb" "$n.truth" >"$n.exp.raw" 2>"$n.dt.err" || return 1
	sort -s -n -k1,1 "$n.exp.raw" >"$n.exp"
	"$PTDUMP" --call-trace "$n.data" >"$n.out" 2>"$n.err"
	truth_norm <"$n.out" | sort -s -n -k1,1 >"$n.got"
	grep -v $'\t' "$n.out" >"$n.odd"
	return 0
}

# truth_prefix NAME: ptdump's calls are the truth's first ones (the file
# may end before the truth does); prints how many, or the first difference.
truth_prefix() {
	local n=$1 k
	k=$(wc -l <"$1.got")
	if head -n "$k" "$n.exp" | cmp -s - "$n.got"; then
		echo "$k"
	else
		diff <(head -n "$k" "$n.exp") "$n.got" | head -n 8
		return 1
	fi
}

# The suites that check whole call traces (decode.sh and others) use these,
# with ./decode_truth built (truth_build) in the current directory.

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

# Call lines without their indentation and padding.
strip_indent() { sed 's/\t */\t/; s/ *$//' "$@"; }

# First differing lines of two files, for failure reports.
first_diff() { diff "$1" "$2" | head -n 12; }

# record NAME SPEC... -- PROG ARGS: records NAME.data and NAME.truth (with
# the suite's backend, t_rec); the
# command's exit status is in $rec_status.
record() {
	local name=$1 args=()
	shift
	while [ "$1" != -- ]; do args+=(-e "$1"); shift; done
	shift
	t_rec -q "${args[@]}" --emulate-truth "$name.truth" -o "$name.data" -- "$@" \
		>"$name.rec.out" 2>"$name.rec.err"
	rec_status=$?
}

# expect NAME [decode_truth options]: NAME.exp (call trace) and NAME.expr
# (call-ret trace) from the truth, sorted stably by thread.
expect() {
	local name=$1
	shift
	"$PTDUMP" --sideband "$name.data" >"$name.sb" 2>"$name.sb.err" || return 1
	# (decode_truth -u for a trace without timestamps: no restart at exec)
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

