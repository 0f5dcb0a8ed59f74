#!/usr/bin/env bash
# ptrec record --emulate from the command line: exit status, file contents,
# truth output, --no-embed and --compress giving the same decode, signals,
# and the errors a user can meet.
. "$(dirname "$0")/lib.sh"
progs=$PWD/${B:-build}/progs
cd "$T_TMP" || exit 1
if ! command -v qemu-x86_64 >/dev/null; then
	t_skip "emulate" "qemu-user is not installed"
	t_done; exit
fi

t_run "record calls" 0 "$PTREC" record --emulate -q -o c.data --emulate-truth c.truth -- "$progs/calls"
t_match "info: made by the software tracer" 'made by the software tracer' "$("$PTDUMP" --info c.data)"
t_match "truth: header line" '^# ptrec-emulate truth 1$' "$(head -n1 c.truth)"
t_match "truth: blocks" '^B [0-9]+ [0-9a-f]+ [0-9a-f]+ [0-9]+$' "$(sed -n 2,5p c.truth)"
# Call traces of two runs compare without comm/tid (column 2) and with code
# addresses of unnamed functions masked: QEMU maps the guest at other places
# from run to run.
norm() { awk '{ $1 = ""; $2 = ""; print }' | sed -E 's/\b[0-9a-f]{8,}\b/ADDR/g'; }
t_run "decode calls" 0 "$PTDUMP" --call-trace c.data
full=$out
t_match "call trace: main of the program" ' main$' "$(sed 's/ *$//' <<<"$full")"

# Self-contained: the program is gone when the file is decoded, yet its
# code and symbols come from the file (run through a relative path, too).
mkdir gone && cp "$progs/calls" gone/calls
t_run "record a copy" 0 "$PTREC" record --emulate -q -o g.data -- gone/calls
rm -r gone
t_run "decode without the program on disk" 0 "$PTDUMP" --call-trace g.data
t_match "symbols come from the embedded file" '^ +calls +[0-9]+ .*\(/.*/gone/calls +\)\s+ +tail_b' "$out"
t_nomatch "no missing code" 'no code image' "$err"

t_run "workload exit status passes through" 3 "$PTREC" record --emulate -q -o f.data -- "$progs/forkexec"

t_run "--no-embed" 0 "$PTREC" record --emulate -q --no-embed -o n.data -- "$progs/calls"
t_match "--no-embed: references only" 'IMAGE +[0-9]+ chunks? +[0-9.]+ (B|KiB) raw' "$("$PTDUMP" --info n.data)"
[ "$(stat -c %s n.data)" -lt "$(stat -c %s c.data)" ] && t_pass "--no-embed: smaller file" || t_fail "--no-embed: not smaller"
t_eq "--no-embed: same call trace from the files on disk" "$(norm <<<"$full" | md5sum)" "$("$PTDUMP" --call-trace n.data | norm | md5sum)"

t_run "--compress=0" 0 "$PTREC" record --emulate -q -z 0 -o z.data -- "$progs/calls"
[ "$(stat -c %s z.data)" -gt "$(stat -c %s c.data)" ] && t_pass "--compress=0: larger file" || t_fail "--compress=0: not larger"
t_eq "--compress=0: same call trace" "$(norm <<<"$full" | md5sum)" "$("$PTDUMP" --call-trace z.data | norm | md5sum)"

# SIGINT: the workload is stopped, the file is complete and decodes.
"$PTREC" record --emulate -q -o i.data -- "$progs/loop" 100000 &
rp=$!
sleep 2
kill -INT "$rp"
wait "$rp"
rc=$?
[ "$rc" -ge 128 ] && t_pass "SIGINT: the workload was stopped (status $rc)" || t_fail "SIGINT: status $rc"
t_match "SIGINT: the file is complete" 'complete \(' "$("$PTDUMP" --info i.data)"
t_run "SIGINT: decodes" 0 "$PTDUMP" --stats i.data
t_match "SIGINT: instructions were traced" 'instructions: [1-9]' "$out"

# A function window in a real program (the demo's): syscalls inside the
# window are not pauses, and only the window's own begin and end are named.
UNAME=$(command -v uname)
LIBC=$(ldd "$UNAME" | awk '/libc\.so/ { print $3; exit }')
t_run "setlocale window" 0 "$PTREC" record --emulate -q -o sl.data -e pt/aux-action=start-paused/u \
	-e "uprobe:$LIBC:setlocale/aux-action=resume,name=in/" -e "uretprobe:$LIBC:setlocale/aux-action=pause,name=out/" -- "$UNAME"
# (the trace begins and ends that name them are lines of --call-ret-trace)
ct=$("$PTDUMP" --call-ret-trace sl.data)
t_eq "window: one resume named" 1 "$(grep -c '(resumed by in)' <<<"$ct")"
t_eq "window: one pause named" 1 "$(grep -c '(paused by out)' <<<"$ct")"
t_match "window: starts in setlocale" '^ .*\)\s+setlocale  \(resumed by in\)' "$(grep -v -- '-- resume trigger' <<<"$ct" | head -n1)"
st=$("$PTDUMP" --stats sl.data)
t_match "window: one paused period" '^paused periods: 1$' "$st"
t_match "window: syscalls inside it are counted as syscalls" '^syscalls: [1-9]' "$st"

# ptdump: options the chosen view does nothing with are named, once each.
t_run "--srcline with --call-trace" 0 "$PTDUMP" --call-trace --srcline c.data
t_match "--srcline with --call-trace: warned" 'warning: --srcline does nothing with --call-trace' "$err"
t_run "--symbol with --packets" 0 "$PTDUMP" --packets --symbol main c.data
t_match "--symbol with --packets: warned" 'warning: --symbol does nothing with --packets' "$err"
t_run "--time with --info" 0 "$PTDUMP" --info --time 0,1 c.data
t_match "--time with --info: warned" 'warning: --time does nothing with --info' "$err"
t_run "--srcline with --insn-trace" 0 "$PTDUMP" --insn-trace --srcline --symbol main c.data
t_nomatch "--srcline and --symbol with --insn-trace: no warning" 'warning' "$err"
t_run "-q: no warning" 0 "$PTDUMP" -q --call-trace --srcline c.data
t_nomatch "-q: no warning about --srcline" 'srcline' "$err"
# Conversions into the wrong kind of target: what is wrong and what to do.
mkdir outdir
t_run "--to-perf-data into a directory" 1 "$PTDUMP" --to-perf-data outdir c.data
t_match "--to-perf-data into a directory: says so" '^ptdump: error: --to-perf-data outdir: that is a directory' "$err"
t_match "--to-perf-data into a directory: hint names a file in it" 'hint: .*--to-perf-data outdir/perf\.data' "$err"
t_nomatch "--to-perf-data into a directory: not blamed on the input" 'c\.data:' "$err"
t_run "--to-raw onto a file" 1 "$PTDUMP" --to-raw c.truth c.data
t_match "--to-raw onto a file: says so" 'to-raw c\.truth: that is a file' "$err"

# Errors.
t_run "k modifier refused" 2 "$PTREC" record --emulate -e intel_pt//k -o x.data -- "$progs/calls"
t_match "k modifier: says why and what to do" 'user space only' "$err"
# A 32-bit Arm executable: neither software tracer runs it.
printf '\177ELF\001\001\001\000\000\000\000\000\000\000\000\000\002\000\050\000' >arm.bin
head -c 200 /dev/zero >>arm.bin
chmod +x arm.bin
t_run "not an x86-64 or aarch64 program" 1 "$PTREC" record --emulate -o x.data -- ./arm.bin
t_match "not x86-64: says so" 'x86-64' "$err"
t_run "missing qemu" 1 "$PTREC" record --emulate --qemu /nonexistent/qemu -o x.data -- "$progs/calls"
t_match "missing qemu: names it" '/nonexistent/qemu' "$err"
t_run "not a qemu" 1 "$PTREC" record --emulate --qemu /bin/false -o x.data -- "$progs/calls"
t_match "not a qemu: says how it ended and what is needed" \
	'/bin/false ended \(exit status 1\) without loading it: .*QEMU 7.2' "$err"
t_nomatch "not a qemu: points at no message that is not there" "see QEMU's message above" "$err"
t_run "uprobe on a function that is not there" 2 "$PTREC" record --emulate -e "uprobe:$progs/calls:zzqqxxnothere" -o x.data -- "$progs/calls"
t_match "... the hint lists static functions too (nm without -D)" 'nm --defined-only' "$err"
PTREC_PLUGIN=/nonexistent/p.so t_run "missing plugin" 1 "$PTREC" record --emulate -o x.data -- "$progs/calls"
t_match "missing plugin: names it" '/nonexistent/p.so' "$err"
t_run "attach refused under --emulate" 1 "$PTREC" record --emulate -p 1 -o x.data
t_match "attach refused: says why" 'trace hardware' "$err"
t_run "-a without a workload refused under --emulate" 1 "$PTREC" record --emulate -a -o a.data
t_match "-a refused: says why" 'trace hardware' "$err"
t_eq "-a refused: nothing written" no "$([ -e a.data ] && echo yes || echo no)"
t_run "-C without a workload refused under --emulate" 1 "$PTREC" record --emulate -C 0 -o a.data
t_match "-C refused: says why" '-C without one, need trace hardware' "$err"
t_run "-o with an option for its name" 2 "$PTREC" record --emulate -o -- -- "$progs/calls"
t_match "-o --: says why" "'--' looks like an option" "$err"
t_eq "-o --: no file named --" no "$([ -e ./-- ] && echo yes || echo no)"
t_run "unknown option" 2 "$PTREC" record --emulate --bogus -- "$progs/calls"
t_match "unknown option: named by ptrec record" "^ptrec record: unrecognized option '--bogus'" "$err"
t_run "trigger the tracer cannot carry out" 2 "$PTREC" record --emulate -e intel_pt//u -e cpu-clock/aux-action=pause,period=1000/ -o x.data -- "$progs/calls"

# The end-of-run progress line: --progress shows it at once, terminal or
# not (the code images handled of all, as the report counts them), erased
# before the report; a pipe gets none by default.
"$PTREC" record --emulate --progress -o p.data -- "$progs/calls" >/dev/null 2>p.err
line=$(tr '\r' '\n' <p.err | grep '^\[ ptrec: finishing' | tail -n 1)
t_match "--progress: a line while the file is finished" \
	'^\[ ptrec: finishing p\.data: [0-9]+ of [0-9]+ code images, [0-9.]+ MB written \]' "$line"
t_eq "--progress: of as many code images as the report embedded" \
	"$(sed -n 's/.*, \([0-9]*\) images embedded.*/\1/p' p.err)" \
	"$(sed -n 's/.* of \([0-9]*\) code images.*/\1/p' <<<"$line")"
t_match "--progress: erased before the report" $'\r\e\\[K\\[ ptrec record: wrote' "$(cat p.err)"
"$PTREC" record --emulate -o p.data -- "$progs/calls" >/dev/null 2>np.err
t_nomatch "a pipe: no progress line" 'finishing' "$(cat np.err)"
t_run "--no-progress is taken" 0 "$PTREC" record --emulate --no-progress -q -o p.data -- "$progs/calls"
t_done
