#!/usr/bin/env bash
# Peak resident memory of ptdump against the size of the trace: records
# tests/progs/loop without return compression (about 0.39 bytes of Intel PT
# per instruction, so the trace grows with the loop's size) at each size
# asked for, then decodes each trace with every view listed and reports the
# peak RSS (GNU time's maximum resident set size) next to the trace's bytes.
# Not part of make check: the 2 GB trace takes minutes to record and decode.
#   bench/rss.sh [MB...]      trace sizes in MB of Intel PT (default: 100 2000)
# B names the build directory (default build); DIR (default: a new directory
# in /var/tmp) holds the trace files while it runs; VIEWS the ptdump views
# (default: --stats --call-trace).
# The issue's bounds: under 100 MB resident for a 100 MB trace, under 300 MB
# for a 2 GB one. The report says for each row whether it holds.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
case $B in /*) BD=$B ;; *) BD=$PWD/$B ;; esac
VIEWS=${VIEWS:---stats --call-trace}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100 2000)
export PTREC_PLUGIN=${PTREC_PLUGIN:-$BD/ptrec-emu.so}
for f in "$BD/ptrec" "$BD/ptdump" "$PTREC_PLUGIN" "$BD/progs/loop"; do
	[ -e "$f" ] || { echo "missing $f: run 'make B=$B tests' first" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found: apt-get install time" >&2; exit 2; }
DIR=${DIR:-$(mktemp -d /var/tmp/ptrec-rss.XXXXXX)} || exit 2
mkdir -p "$DIR" || exit 2
trap 'rm -rf "$DIR"' EXIT
echo "machine: $(nproc) CPUs, $(uname -r); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %-14s %10s %9s %8s %s\n' trace view "PT MB" "file MB" "RSS MB" bound
for mb in "${sizes[@]}"; do
	# loop N: about 31 KB of noretcomp PT per unit of N (110 MB at 3500)
	n=$(( (mb * 3500 + 109) / 110 ))
	f=$DIR/loop-$mb.data
	if ! "$BD/ptrec" record -q --emulate -e intel_pt/noretcomp/u -o "$f" -- \
		"$BD/progs/loop" "$n" >/dev/null 2>"$DIR/rec.err"; then
		echo "recording loop $n failed: $(head -n 3 "$DIR/rec.err")" >&2
		exit 1
	fi
	pt=$("$BD/ptdump" --info --format=json "$f" |
		sed -n 's/.*"kind":"AUX","count":[0-9]*,"raw_bytes":\([0-9]*\).*/\1/p')
	fmb=$(( $(stat -c %s "$f") / 1000000 ))
	bound=$(( mb <= 100 ? 100 : 300 ))
	for v in $VIEWS; do
		/usr/bin/time -f '%M' -o "$DIR/rss" "$BD/ptdump" "$v" "$f" >/dev/null 2>"$DIR/dec.err" ||
			{ echo "ptdump $v failed: $(head -n 3 "$DIR/dec.err")" >&2; exit 1; }
		rss=$(( $(tail -n 1 "$DIR/rss") / 1024 ))
		printf '%-10s %-14s %10.1f %9s %8s %s\n' "loop $n" "$v" "$(awk -v b="$pt" 'BEGIN { print b / 1e6 }')" \
			"$fmb" "$rss" "$([ "$rss" -lt "$bound" ] && echo "under $bound MB" || echo "OVER $bound MB")"
	done
	rm -f "$f"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
