#!/usr/bin/env bash
# --switch-output: a new trace file on SIGUSR2, at a size, or at a time, each
# named FILE.YYYYmmddHHMMSSmmm and complete on its own (header, the side-band
# of the tasks and their code so far, code images). Recorded with the
# software tracer; the files' call traces, each decoded alone, are runs of
# the ground truth in order, the first from its start, the last to its end.
. "$(dirname "$0")/src/paths.sh"
if ! command -v qemu-x86_64 >/dev/null; then
	t_skip "switch-output" "qemu-x86_64 is not installed (apt-get install qemu-user)"
	t_done; exit
fi
cd "$T_TMP" || exit 1
. "$SRC/truth.sh"
truth_build || { t_done; exit; }
SP=$PROGS/snapshot

# files NAME: the files of recording NAME, oldest first.
files() { ls "$1".data.2* 2>/dev/null | grep -Ev '\.(out|err)$' | sort; }
# check NAME: each file decodes alone; NAME.st matches them with the truth.
check() {
	local n=$1 f bad=0 first
	first=$(files "$n" | head -n 1)
	for f in $(files "$n"); do
		"$PTDUMP" --call-trace "$f" >"$f.out" 2>"$f.err" || bad=1
		[ -s "$f.err" ] && bad=1
		grep -v $'\t' "$f.out" | grep -q . && bad=1
		printf '[gap: end of %s]\n' "$f" >>"$f.out"
	done
	t_eq "$n: each file decodes alone, no errors, no gaps" 0 "$bad"
	[ "$bad" = 0 ] || head -n 3 $(files "$n" | sed 's/$/.err/') | sed 's/^/    /'
	"$PTDUMP" --sideband "$first" >"$n.sb" && ./decode_truth "$n.sb" "$n.truth" >"$n.exp.raw" ||
		{ t_fail "$n: truth" "$(cat "$n".exp.raw | head)"; return 1; }
	sort -s -n -k1,1 "$n.exp.raw" >"$n.exp"
	cat $(files "$n" | sed 's/$/.out/') >"$n.all"
	awk -F'\t' -f "$SRC/stretches.awk" "$n.exp" "$n.all" >"$n.st"
	t_nomatch "$n: each file's calls are a run of the truth's, in order" 'miss' "$(cat "$n.st")"
	t_eq "$n: the first file starts at the truth's start" 1 "$(awk 'NR == 1 { print $3 }' "$n.st")"
	t_eq "$n: the last one ends at the truth's end" "$(awk '$1 == "truth" { print $2 }' "$n.st")" \
		"$(awk '$1 != "truth" { l = $4 } END { print l }' "$n.st")"
	bad=0
	for f in $(files "$n"); do
		"$PTDUMP" --info "$f" | grep -Eq '^  IMAGE +[1-9]' || bad=1
	done
	t_eq "$n: every file embeds the code images" 0 "$bad"
}

# ---- SIGUSR2 (the default) ----
t_run "signal: records" 0 "$PTREC" record --emulate --switch-output -m ,1M -o s.data \
	--emulate-truth s.truth -- "$SP" 100000 3 300
t_eq "signal: three files (two signals, the end), none left as s.data" "3 0" \
	"$(files s | wc -l) $(ls s.data 2>/dev/null | wc -l)"
t_match "signal: the report names the last" "ptrec: 3 files \(--switch-output\), the last $(files s | tail -n 1)" "$err"
check s

# ---- a size: trace and side-band per file ----
t_run "size: records" 0 "$PTREC" record --emulate --switch-output=200K -m ,1M -o z.data \
	--emulate-truth z.truth -- "$SP" 60000 4 100 quiet
n=$(files z | wc -l)
[ "$n" -ge 3 ] && t_pass "size: $n files of at least 200K" || t_fail "size: files" "$(files z)"
small=0
for f in $(files z | head -n -1); do
	kib=$("$PTDUMP" --info "$f" | awk '$1 == "AUX" { print int($4) }')
	[ "${kib:-0}" -ge 190 ] || small=1
done
t_eq "size: each file but the last holds at least ~200K of trace" 0 "$small"
check z

# ---- a time ----
# 2 s of pauses: at least one switch at 1 s whatever the machine's load.
t_run "time: records" 0 "$PTREC" record --emulate --switch-output=1s -m ,1M -o t.data \
	-- "$SP" 1000 3 1000 quiet
[ "$(files t | wc -l)" -ge 2 ] && t_pass "time: $(files t | wc -l) files" || t_fail "time: files" "$(files t)"

# ---- with -S: SIGUSR2 takes the snapshot into the file, then switches ----
t_run "-S and signal: records" 0 "$PTREC" record --emulate -S --switch-output -m ,64K -o v.data \
	-- "$SP" 100000 3 300
t_eq "-S and signal: three files, one snapshot each" "3 ptrec: 3 snapshots, 192.0 KiB of trace" \
	"$(files v | wc -l) $(printf '%s' "$err" | grep -o 'ptrec: [0-9]* snapshots, .* of trace')"
bad=0
for f in $(files v); do
	"$PTDUMP" --info "$f" | grep -Eq '^  AUX +1 chunk +64\.00 KiB raw' || bad=1
done
t_eq "-S and signal: 64 KiB of trace in each" 0 "$bad"
bad=0
for f in $(files v); do
	# each file counts its snapshots from 1, and decodes its one alone
	[ "$("$PTDUMP" --info "$f" | grep -c '^  #1  .* of trace, ')" = 1 ] || bad="$f: --info"
	[ "$("$PTDUMP" --call-trace --snapshot-index 1 "$f" | md5sum)" = "$("$PTDUMP" --call-trace "$f" | md5sum)" ] ||
		bad="$f: --snapshot-index 1"
done
t_eq "-S and signal: each file lists its snapshot as #1 and decodes it alone" 0 "$bad"

# ---- refusals ----
t_run "a bad value is a usage error" 2 "$PTREC" record --emulate --switch-output=5x -o d.data -- true
t_run "-o - is refused" 1 "$PTREC" record --emulate --switch-output -o - -- true
t_match "...and says so" 'needs a file to rename' "$err"
t_done
