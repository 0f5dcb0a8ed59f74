#!/usr/bin/env bash
# The decoder cores (ptdump(1), --core): ptdump's walk over libipt's query
# decoder (the default) gives every view the bytes libipt's block decoder
# gives, standard output and standard error, on clean, damaged and cut
# recordings of programs with calls, threads, signals, a crash, longjmp,
# exec and timing packets, with and without return compression. The one
# difference allowed is where --events blocks end (libipt's block cache
# adds ends of its own): between two other events, the walk's blocks must
# cover the same instructions from the same first to the same last one,
# and each of its block ends must be one of libipt's.
. "$(dirname "$0")/src/paths.sh"
model_suite core "$PROGS/calls" "$PROGS/loop" || { t_done; exit; }

emu_rec calls 'intel_pt//' "$PROGS/calls"
emu_rec threads 'intel_pt/noretcomp/' "$PROGS/threads"
emu_rec signals 'intel_pt//' "$PROGS/signals"
# Workloads that crash or exit non-zero: their recordings are whole all the same.
"$PTREC" record --emulate -q -o crash.data -e 'intel_pt//' -- "$PROGS/crash" >/dev/null 2>&1
emu_rec longjmp 'intel_pt/cyc/' "$PROGS/longjmp"
emu_rec window 'intel_pt/mtc,cyc/' "$PROGS/window"
"$PTREC" record --emulate -q -o spawn.data -e 'intel_pt//' -- "$PROGS/spawn" >/dev/null 2>&1
for f in crash spawn; do [ -s $f.data ] || t_fail "record $f"; done
RECOPTS='-m 256K,64K --chunk-size 64K' emu_rec loop 'intel_pt/noretcomp/' "$PROGS/loop" 25
python3 "$SRC/damage_aux.py" loop.data damaged.data cut.data 1::3
"$PTDUMP" --to-perf-data calls.perf calls.data >/dev/null 2>&1 || t_fail "calls: --to-perf-data"

views=(--call-trace --call-ret-trace --insn-trace --branches --stats "--format=json --stats"
	"--format=json --call-trace" --report --windows --folded "--call-trace --durations"
	"--call-trace --no-plt" --sideband)
for f in calls threads signals crash longjmp window spawn loop damaged cut calls.perf; do
	in=$f.data
	case $f in *.perf) in=$f ;; esac
	[ -e "$in" ] || continue
	for v in "${views[@]}"; do
		# shellcheck disable=SC2086
		a=$("$PTDUMP" -j1 $v "$in" 2>walk.err | cksum)
		# shellcheck disable=SC2086
		b=$("$PTDUMP" -j1 --core libipt $v "$in" 2>libipt.err | cksum)
		if [ "$a" = "$b" ] && cmp -s walk.err libipt.err; then
			t_pass "$f $v: walk = libipt (${a#* } bytes)"
		else
			t_fail "$f $v: walk = libipt" "$a / $b
$(diff walk.err libipt.err | head -5)"
		fi
	done
	# --events: the same events; the same instructions in the blocks between them.
	"$PTDUMP" -j1 --events "$in" >walk.ev 2>walk.err
	"$PTDUMP" -j1 --core libipt --events "$in" >libipt.ev 2>libipt.err
	ok=0
	out=$(python3 - walk.ev libipt.ev <<'EOF'
import re, sys
blk = re.compile(r"block (0x[0-9a-f]+)-(0x[0-9a-f]+) ninsn (\d+)")
def groups(path):
    other, gs, cur = [], [], []
    for line in open(path):
        m = blk.search(line)
        if m:
            cur.append((int(m[1], 16), int(m[2], 16), int(m[3])))
            continue
        other.append(line)
        gs.append(cur)
        cur = []
    gs.append(cur)
    return other, gs
wo, wg = groups(sys.argv[1])
lo, lg = groups(sys.argv[2])
if wo != lo:
    print("other events differ"); sys.exit(1)
nw = nl = 0
for k, (w, l) in enumerate(zip(wg, lg)):
    nw += len(w); nl += len(l)
    if sum(b[2] for b in w) != sum(b[2] for b in l):
        print("instructions differ before event", k); sys.exit(1)
    if w and (w[0][0] != l[0][0] or w[-1][1] != l[-1][1]):
        print("first or last instruction differs before event", k); sys.exit(1)
    ends = iter(b[1] for b in l)
    if not all(any(e == x for x in ends) for e in [b[1] for b in w]):
        print("a block end of the walk is not libipt's before event", k); sys.exit(1)
print("events", len(wo), "blocks", nw, "libipt blocks", nl)
EOF
) || ok=1
	if [ $ok -eq 0 ] && cmp -s walk.err libipt.err; then
		t_pass "$f --events: walk = libipt but for block ends ($out)"
	else
		t_fail "$f --events: walk = libipt but for block ends" "$out"
	fi
done

# libipt's block decoder reads the code from a memory file ptdump writes;
# where that write fails (a file size limit here), ptdump says so once
# instead of leaving only "no code image" errors, and the walk, which reads
# the code itself, decodes the same trace as without the limit.
(trap '' XFSZ; ulimit -f 16; "$PTDUMP" --core libipt --call-trace calls.data 2>err.txt | cat >/dev/null)
t_match "--core libipt, the memory file cannot be written: a warning says why" \
	"cannot hand the code to libipt's block decoder .*File too large" "$(cat err.txt)"
t_eq "--core libipt, the memory file cannot be written: said once" 1 \
	"$(grep -c 'cannot hand the code' err.txt)"
want=$("$PTDUMP" --call-trace calls.data 2>/dev/null | cksum)
t_eq "--core walk under the same limit: the same call trace" "$want" \
	"$( (trap '' XFSZ; ulimit -f 16; "$PTDUMP" --call-trace calls.data 2>/dev/null | cksum) )"

# A bad --core is a usage error.
"$PTDUMP" --core fast --stats calls.data >/dev/null 2>err.txt
t_eq "--core fast: exit 2" 2 $?
t_match "--core fast: says what it takes" "walk or libipt" "$(cat err.txt)"
t_done
