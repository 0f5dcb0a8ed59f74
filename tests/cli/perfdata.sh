#!/usr/bin/env bash
# ptdump on perf.data: files recorded here by `perf record` (file form, pipe
# form on stdin, zstd-compressed) give the same samples and sideband as
# `perf script` shows for the same file, the same header facts as
# `perf report --header-only`, every view runs, and damaged files fail with a
# message and status 1.
. "$(dirname "$0")/lib.sh"

if ! command -v perf >/dev/null 2>&1; then
	t_skip "perf.data" "perf is not installed"
	t_done; exit
fi
cd "$T_TMP" || exit 1
LOOP='i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done'
# perf record, tried three times (suites running beside this one may close tracefs a moment)
rec() { for _ in 1 2 3; do perf record -q -N "$@" 2>/dev/null && return 0; sleep 1; done; return 1; }
if ! rec -o tp.data -e syscalls:sys_enter_newuname,syscalls:sys_exit_newuname -- uname >/dev/null
then
	t_skip "perf.data" "perf record cannot trace syscalls here (needs root)"
	t_done; exit
fi
if ! "$PTDUMP" --info tp.data 2>/dev/null | grep -q 'perf.data'; then
	t_skip "perf.data" "this ptdump does not read perf.data yet (input detection not wired)"
	t_done; exit
fi
rec -o clk.data -e cpu-clock -c 100000 -- sh -c "$LOOP" >/dev/null
rec -z -o z.data -e cpu-clock -c 100000 -- sh -c "$LOOP" >/dev/null
rec -o - -e syscalls:sys_enter_newuname -e cpu-clock -c 20000 -- sh -c "$LOOP; uname" >tp.pipe
files="tp.data clk.data z.data tp.pipe"
# perf record --threads writes a directory (data + data.N)
rec --threads -o thr.data -e cpu-clock -c 20000 -- sh -c "$LOOP" >/dev/null &&
	[ -d thr.data ] && files="$files thr.data"

# Samples as "pid tid time event ip", from ptdump --sideband and from perf script.
pt_samples() {
	"$PTDUMP" -q --sideband "$@" | awk '$0 ~ / SAMPLE / {
		i = 2; if ($2 ~ /^\[/) i = 3
		split($i, pt, "/"); ip = $(i+4); sub(/^0x/, "", ip)
		print pt[1], pt[2], $1, $(i+2), ip }' | sort
}
perf_samples() {
	perf script -i "$1" -G -F pid,tid,time,event,ip --ns 2>/dev/null | awk '{
		split($1, pt, "/"); t = $2; sub(/:$/, "", t); ev = $3; sub(/:$/, "", ev)
		ip = $4; sub(/^0+/, "", ip); if (ip == "") ip = "0"
		print pt[1], pt[2], t, ev, ip }' | sort
}
# Task and mmap records as "TYPE time pid tid facts".
pt_sideband() {
	"$PTDUMP" -q --sideband "$@" | while read -r t a b c d e f g h rest; do
		[[ $a == \[* ]] || { rest="$h $rest"; h=$g; g=$f; f=$e; e=$d; d=$c; c=$b; b=$a; }
		pid=${b%/*} tid=${b#*/}
		case $c in
		MMAP) # MMAP start-end pgoff P prot path
			s=${d%-*} en=${d#*-}
			printf 'MMAP %s %s %s %#x %#x %#x %s\n' "$t" "$pid" "$tid" "$s" $((en - s)) "$f" "$h" ;;
		COMM) echo "COMM $t $pid $tid $d${e:+ exec}" ;;
		FORK) echo "FORK $t $pid $tid ${e}" ;;
		EXIT) echo "EXIT $t $pid $tid ${e#(}" ;;
		esac
	done | sed 's/)$//' | sort
}
perf_sideband() {
	perf script -i "$1" --show-mmap-events --show-task-events -F time,event --ns 2>/dev/null |
	grep PERF_RECORD_ | while read -r t rec rest; do
		t=${t%:}
		case $rec in
		PERF_RECORD_MMAP|PERF_RECORD_MMAP2)
			# -1/0: [0xffffffff81000000(0x1209988) @ 0xffffffff81000000]: x [kernel.kallsyms]_text
			pt=${rest%%:*} r=${rest#*\[} s=${r%%(*} r=${r#*(} l=${r%%)*} r=${r#*@ } pg=${r%% *}
			pg=${pg%]:}; path=${rest##*]: }; path=${path#* }
			printf 'MMAP %s %s %s %#x %#x %#x %s\n' "$t" "${pt%/*}" "${pt#*/}" "$s" "$l" "$pg" "$path" ;;
		PERF_RECORD_COMM:|PERF_RECORD_COMM)
			[[ $rec == PERF_RECORD_COMM ]] && { ex=" exec"; rest=${rest#exec: }; } || ex=
			c=${rest%:*} pt=${rest##*:}
			echo "COMM $t ${pt%/*} ${pt#*/} $c$ex" ;;
		PERF_RECORD_FORK*|PERF_RECORD_EXIT*)
			k=${rec#PERF_RECORD_}; k=${k%%(*}
			r=${rec#*(}; pt=${r%%)*}; pp=${r#*:(}; pp=${pp%)}
			echo "$k $t ${pt%:*} ${pt#*:} ${pp%:*}/${pp#*:}" ;;
		esac
	done | sort
}

# 1. samples and sideband against perf script
for f in $files; do
	# perf script has been seen to print nothing once under load: ask again
	b=$(perf_samples "$f"); [ -n "$b" ] || { sleep 1; b=$(perf_samples "$f"); }
	if [ -z "$b" ]; then
		t_skip "$f: compare with perf script" "perf script printed nothing for it"
		continue
	fi
	a=$(pt_samples "$f")
	if [ -n "$b" ] && [ "$a" = "$b" ]; then t_pass "$f: samples as perf script ($(wc -l <<<"$b"))"
	else t_fail "$f: samples as perf script" "$(diff <(echo "$a") <(echo "$b") | head -n 20)"; fi
	a=$(pt_sideband "$f") b=$(perf_sideband "$f")
	if [ -n "$b" ] && [ "$a" = "$b" ]; then t_pass "$f: mmap/comm/fork/exit as perf script ($(wc -l <<<"$b"))"
	else t_fail "$f: mmap/comm/fork/exit as perf script" "$(diff <(echo "$a") <(echo "$b") | head -n 20)"; fi
done

# 2. the pipe form on stdin: a redirected file and a real pipe
ref=$("$PTDUMP" -q --sideband tp.pipe)
t_eq "pipe form from stdin (file)" "$ref" "$("$PTDUMP" -q --sideband - <tp.pipe)"
t_eq "pipe form from stdin (pipe)" "$ref" "$(cat tp.pipe | "$PTDUMP" -q --sideband -)"
t_eq "file form from stdin (pipe)" "$("$PTDUMP" -q --sideband tp.data)" \
	"$(cat tp.data | "$PTDUMP" -q --sideband -)"

# 3. --info against perf report --header-only
info=$("$PTDUMP" --info tp.data)
hdr=$(perf report -i tp.data --header-only 2>/dev/null)
for k in hostname "os release" "perf version" arch cpuid; do
	v=$(sed -n "s/^# $k : //p" <<<"$hdr")
	if [ -n "$v" ] && grep -qF -- "$v" <<<"$info"; then t_pass "info: $k ($v)"
	else t_fail "info: $k" "perf says '$v'; ptdump says:
$info"; fi
done
for ev in $(sed -n 's/^# event : name = \([^,]*\),.*/\1/p' <<<"$hdr"); do
	t_match "info: event $ev" "\\] $ev +type 2" "$info"
done
t_match "info: sample count" 'SAMPLE +2$' "$info"
t_match "info: compressed file" 'compressed: +zstd' "$("$PTDUMP" --info z.data)"
t_match "info: pipe form" 'pipe form' "$("$PTDUMP" --info tp.pipe)"
[ -d thr.data ] && t_match "info: directory" 'threads layout, [0-9]+ data files' \
	"$("$PTDUMP" --info thr.data)"

# 4. every view runs on perf.data. No AUX trace: the decoded views have
#    nothing to show, say why, and exit 3 (ptdump(1), EXIT STATUS); --stats
#    describes the file.
for v in --call-trace --call-ret-trace --insn-trace --branches --events; do
	t_run "view $v on perf.data: empty, exit 3" 3 "$PTDUMP" "$v" clk.data
	t_match "view $v on perf.data: says there is no trace" 'no trace data: .*see --sideband' "$err"
done
t_run "view --stats on perf.data" 0 "$PTDUMP" --stats clk.data
t_match "no-trace note" 'no AUX area trace' "$err"
t_run "quiet: no notes" 0 "$PTDUMP" -q --stats clk.data
t_eq "quiet: stderr empty" "" "$err"

# 5. filters on perf.data
pid=$(perf script -i tp.data -F pid 2>/dev/null | head -n 1 | tr -d ' ')
s=$("$PTDUMP" -q --sideband --pid "$pid" tp.data)
t_eq "--pid keeps only that pid" "" "$(awk -v p="$pid" '{ i = 2; if ($2 ~ /^\[/) i = 3; split($i, pt, "/"); if (pt[1] != p) print }' <<<"$s")"
t_match "--pid keeps its samples" 'SAMPLE +syscalls:sys_enter_newuname' "$s"
t_run "--symfs accepted" 0 "$PTDUMP" -q --sideband --symfs /nonexistent tp.data

# 6. damaged files: status 1, a message, no crash
size=$(stat -c %s tp.data)
head -c $((size - 100)) tp.data >cut.data
t_run "cut file: fails" 1 "$PTDUMP" --sideband cut.data
t_match "cut file: says so" 'cut short' "$err"
head -c 104 tp.data >hdr.data
t_run "header only: fails" 1 "$PTDUMP" --call-trace hdr.data
t_nomatch "header only: no crash" 'Sanitizer|Segmentation|core dumped' "$err"
{ printf 'PERFILE2'; head -c 4000 /dev/urandom; } >junk.data
t_run "junk after the magic: fails" 1 "$PTDUMP" --call-trace junk.data
t_match "junk: a message" 'ptdump: ' "$err"
t_run "junk --info: fails" 1 "$PTDUMP" --info junk.data
psize=$(stat -c %s tp.pipe)
head -c $((psize - 13)) tp.pipe >cut.pipe
t_run "cut pipe: loads what is whole" 0 "$PTDUMP" --sideband cut.pipe
t_match "cut pipe: says so" 'ends inside a record' "$err"
t_done
