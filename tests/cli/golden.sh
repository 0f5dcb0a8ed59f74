#!/usr/bin/env bash
# Golden tests: ptdump's views of small traces that ptrec makes at test time
# with the software tracer, compared with the expected outputs checked in
# under tests/golden/, so that any change of an output format is deliberate.
#
#   tests/cli/golden.sh            regenerate the traces and diff every view
#   UPDATE=1 tests/cli/golden.sh   rewrite the expected files instead (then
#                                  review them with git diff)
#
# The traced program is tests/cli/src/decode_tiny.c: hand-written machine
# code without libc or loader, linked static at a fixed address with a fixed
# build id, and the emulated clock counts instructions, so the traces are
# the same on every run. What still varies is normalised: the thread and
# parent ids (replaced by TID and PPID, with the spaces around them made
# one, since their padding depends on the number of digits), the temporary
# directory, the wall-clock duration and date, host and kernel in --info.
. "$(dirname "$0")/src/paths.sh"
GOLDEN=$TOP/tests/golden
UPDATE=${UPDATE:-0}

if ! command -v qemu-x86_64 >/dev/null; then
	t_skip "golden tests" "qemu-x86_64 is not installed (apt-get install qemu-user)"
	t_done; exit
fi
for f in "$PTREC" "$PTDUMP" "$PTREC_PLUGIN"; do
	if [ ! -e "$f" ]; then
		t_fail "golden tests: $f is missing (run make B=$B first)"
		t_done; exit
	fi
done
cd "$T_TMP" || exit 1

TINY=$T_TMP/decode_tiny
if ! cc -static -nostdlib -no-pie -Wl,--build-id=0x707464756d702d676f6c64656e2d74696e792e31 \
	-o "$TINY" "$TOP/tests/cli/src/decode_tiny.c" 2>cc.err; then
	t_fail "build decode_tiny" "$(cat cc.err)"
	t_done; exit
fi

# The random part of the work directory, as X's (the same length, so that
# padded columns stay as they are).
TMPNAME=$(printf '%s' "$T_TMP" | sed 's/\.[^./]*$/.XXXXXX/')

# normalise TID PPID: stdin to stdout.
normalise() {
	awk -v tid="$1" -v ppid="$2" -v tmp="$T_TMP" -v tmpname="$TMPNAME" -v ptrec="$PTREC" '
	# Replaces the number num (a whole word) by tok. The spaces around it
	# become one: how many pad a column depends on the number of digits.
	function rep(s, num, tok,    out, i, L, k, c, before, after) {
		out = ""
		L = length(num)
		while ((i = index(s, num)) > 0) {
			before = substr(s, i - 1, 1)
			after = substr(s, i + L, 1)
			if ((i > 1 && before ~ /[0-9a-zA-Z]/) || after ~ /[0-9a-zA-Z]/) {
				out = out substr(s, 1, i + L - 1)
				s = substr(s, i + L)
				continue
			}
			for (k = 0; i - k > 1 && substr(s, i - k - 1, 1) == " "; k++)
				;
			for (c = 0; substr(s, i + L + c, 1) == " "; c++)
				;
			out = out substr(s, 1, i - k - 1) (k ? " " : "") tok (c ? " " : "")
			s = substr(s, i + L + c)
		}
		return out s
	}
	{
		line = $0
		while ((i = index(line, tmp)) > 0)
			line = substr(line, 1, i - 1) tmpname substr(line, i + length(tmp))
		while ((i = index(line, ptrec " ")) > 0)
			line = substr(line, 1, i - 1) "ptrec " substr(line, i + length(ptrec) + 1)
		if (tid != "")
			line = rep(line, tid, "TID")
		if (ppid != "")
			line = rep(line, ppid, "PPID")
		sub(/^recording: [0-9.]+ s/, "recording: N s", line)
		if (line ~ /^recorded: /)
			sub(/[0-9-]+ [0-9:]+ UTC on .* by ptrec/, "DATE on HOST (kernel K) by ptrec", line)
		if (line ~ /^  INFO / || line ~ /^size: /)
			gsub(/[0-9.]+ (B|KiB)/, "N B", line)
		print line
	}'
}

# golden NAME: compares stdin, normalised, with tests/golden/NAME.
golden() {
	local name=$1 f=$GOLDEN/$1
	normalise "$TID" "$PPID_" >"$name.out"
	if [ "$UPDATE" = 1 ]; then
		mkdir -p "$GOLDEN"
		cp "$name.out" "$f"
		t_pass "$name (expected output rewritten)"
	elif [ ! -e "$f" ]; then
		t_fail "$name" "no expected output $f: run UPDATE=1 $0 and review it"
	elif cmp -s "$f" "$name.out"; then
		t_pass "$name ($(wc -l <"$f") lines)"
	else
		t_fail "$name" "differs from tests/golden/$name (- expected, + now):
$(diff -u "$f" "$name.out" | sed -n '3,40p')"
	fi
}

# view NAME FILE OPTIONS...: ptdump OPTIONS FILE, golden-compared as NAME.
view() {
	local name=$1 file=$2
	shift 2
	if "$PTDUMP" "$@" "$file" >"$name.raw" 2>"$name.err"; then
		golden "$name" <"$name.raw"
		if [ -s "$name.err" ]; then
			t_fail "$name: nothing on stderr" "$(head -n 5 "$name.err")"
		fi
	else
		t_fail "$name" "ptdump $* exited with status $?: $(head -n 5 "$name.err")"
	fi
}

# ids TRACE: the workload's thread id and ptrec's pid, from the sideband.
ids() {
	"$PTDUMP" --sideband "$1" | awk '
		/ COMM / && !tid { split($3, a, "/"); tid = a[2] }
		/ EXIT / && /parent/ { s = $0; sub(/.*\(parent /, "", s); split(s, a, "/"); ppid = a[1] }
		END { print tid, ppid }'
}

# 1. A full trace of three iterations, with cycle-accurate timing.
"$PTREC" record --emulate -q -z 0 -e intel_pt/cyc/u -o tiny.data -- "$TINY" 3 >rec.out 2>rec.err
t_eq "tiny: records" 0 "$?"
read -r TID PPID_ <<<"$(ids tiny.data)"
view tiny.call-trace tiny.data --call-trace
view tiny.call-ret-trace tiny.data --call-ret-trace
view tiny.branches tiny.data --branches
"$PTDUMP" --insn-trace tiny.data 2>/dev/null | head -n 60 | golden tiny.insn-trace-60
view tiny.stats tiny.data --stats
view tiny.sideband tiny.data --sideband
view tiny.info tiny.data --info

# 2. Windows: resumed when leaf is entered (uprobe), paused when it returns
# (uretprobe); the trigger samples show between the trace lines.
"$PTREC" record --emulate -q -z 0 -o window.data -e intel_pt/aux-action=start-paused/u \
	-e "uprobe:$TINY:leaf/aux-action=resume,name=enter-leaf/" \
	-e "uretprobe:$TINY:leaf/aux-action=pause,name=leave-leaf/" -- "$TINY" 2 >rec.out 2>rec.err
t_eq "window: records" 0 "$?"
read -r TID PPID_ <<<"$(ids window.data)"
view window.call-trace window.data --call-trace
view window.call-ret-trace window.data --call-ret-trace
view window.branches window.data --branches
view window.stats window.data --stats
view window.sideband window.data --sideband
t_done
