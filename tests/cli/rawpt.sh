#!/usr/bin/env bash
# Raw Intel PT out and back in: a recording exported with --to-raw (trace
# bytes, images, decoder parameters, argument files) and decoded again from
# the raw files alone (--pt with the arguments the export wrote) must give
# the same call trace and branch list as the recording itself. Only the
# command name and thread id differ by design (a raw trace has no sideband:
# the import names thread 1 after its first ELF file), so those two columns
# are left out of the comparison; times, binaries, depths and symbols are
# compared. Without sideband there are no trigger samples either: the
# recording's "-- resume trigger" lines and "(paused by X)" notes are left
# out too (the trace ends and begins themselves remain). Each raw stream is
# also decoded by bench/ipt_floor, libipt's block decoder configured as
# ptdump's: instructions, no errors, and tick events (their number, and a
# checksum of their IPs and times).
. "$(dirname "$0")/lib.sh"
B=${B:-build}
DRV=${DRV:-$B/tests/test_perfexport}
PROGS=${PROGS:-$B/progs}
export PTREC_PLUGIN=${PTREC_PLUGIN:-$PWD/$B/ptrec-emu.so}
DRV=$(cd "$(dirname "$DRV")" && pwd)/$(basename "$DRV")
FLOOR=${FLOOR:-$B/bench/ipt_floor}
FLOOR=$(cd "$(dirname "$FLOOR")" 2>/dev/null && pwd)/$(basename "$FLOOR")
PTDUMP=$(cd "$(dirname "$PTDUMP")" && pwd)/$(basename "$PTDUMP")

if [ ! -x "$DRV" ] || [ ! -x "$PROGS/calls" ]; then
	t_fail "test binaries" "build with make tests first ($DRV, $PROGS/calls)"
	t_done
	exit
fi

# ptdump's own options once the CLI has them, else the test driver.
to_raw() {
	if "$PTDUMP" --help 2>&1 | grep -q -- '--to-raw'; then
		"$PTDUMP" --to-raw "$2" "$1"
	else
		"$DRV" --to-raw "$1" "$2"
	fi
}
from_raw() {
	local view=$1
	shift
	if "$PTDUMP" --help 2>&1 | grep -q -- '--pt '; then
		"$PTDUMP" "--$view" "$@"
	else
		"$DRV" --from-raw "$view" "$@"
	fi
}
strip_ids() {
	sed -E -e 's/^ *[^ ]+ +[0-9]+ +//' -e '/: -- (resume|pause) trigger /d' \
		-e 's/  \((paused|resumed) by [^)]*\)$//' -e 's/ +$//'
}

# roundtrip NAME RECORD-ARGS...
roundtrip() {
	local name=$1 d="$T_TMP/$1" pt args view
	shift
	mkdir -p "$d"
	"$PTREC" record --emulate -q -o "$d/x.ptrec" "$@" >"$d/rec.out" 2>&1
	if [ ! -s "$d/x.ptrec" ]; then
		t_fail "$name: record" "$(cat "$d/rec.out")"
		return
	fi
	t_run "$name: export raw" 0 to_raw "$d/x.ptrec" "$d/raw"
	pt=$(cd "$d/raw" && ls tid-*.pt 2>/dev/null)
	t_eq "$name: one stream file" 1 "$(printf '%s\n' "$pt" | grep -c .)"
	t_eq "$name: manifest written" yes "$([ -s "$d/raw/manifest.txt" ] && echo yes)"
	[ -n "$pt" ] || return
	args=$(cat "$d/raw/${pt%.pt}.ptdump.args")
	for view in call-trace branches; do
		# shellcheck disable=SC2086 # the args file is a word list
		(cd "$d/raw" && from_raw "$view" $args) 2>"$d/$view.err" | strip_ids >"$d/raw.$view"
		"$PTDUMP" "--$view" "$d/x.ptrec" 2>/dev/null | strip_ids >"$d/orig.$view"
		if cmp -s "$d/raw.$view" "$d/orig.$view" && [ -s "$d/orig.$view" ]; then
			t_pass "$name: --$view from the raw files equals the recording's ($(wc -l <"$d/orig.$view") lines)"
		else
			t_fail "$name: --$view from the raw files equals the recording's" \
				"$(cat "$d/$view.err"; diff "$d/orig.$view" "$d/raw.$view" | head -n 10)"
		fi
	done
	# libipt's block decoder (bench/ipt_floor) on the same raw files:
	# instructions, no errors.
	local want
	if [ ! -x "$FLOOR" ]; then
		t_skip "$name: the block decoder" "no $FLOOR (make tests builds it)"
		return
	fi
	args=$(cat "$d/raw/${pt%.pt}.ptxed.args")
	# shellcheck disable=SC2086 # the args file is a word list
	want=$(cd "$d/raw" && "$FLOOR" --ptdump-config 1 $args | awk '{ print $2, $6, $14, $15 }')
	t_match "$name: the block decoder decodes the raw stream ($want: instructions, errors, ticks)" \
		'^[1-9][0-9]* 0 [0-9]+ [0-9a-f]{16}$' "$want"
}

P=$(cd "$PROGS" && pwd)
roundtrip calls "$P/calls" 3
roundtrip calls-noretcomp -e pt/noretcomp/u "$P/calls" 1
roundtrip calls-timing -e pt/cyc,mtc_period=0/u "$P/calls" 1
roundtrip longjmp "$P/longjmp"
roundtrip window "$P/window" 2
roundtrip loop "$P/loop" 2
roundtrip signals "$P/signals"
roundtrip counter-window -e pt/aux-action=start-paused/u \
	-e instructions/period=50000,aux-action=resume,name=Resume/u \
	-e instructions/period=100000,aux-action=pause,name=Pause/u "$P/calls" 2

# A fork child runs its parent's code, mapped before the fork: its argument
# file names the program, and its raw trace decodes to what the recording
# shows for that thread.
d=$T_TMP/fork
mkdir -p "$d"
"$PTREC" record --emulate -q -o "$d/x.ptrec" "$P/forkexec" 20 >"$d/rec.out" 2>&1
child=$("$PTDUMP" --sideband "$d/x.ptrec" 2>/dev/null |
	awk '$4 == "FORK" && $5 == "from" { split($3, a, "/"); split($6, p, "/"); if (a[1] != p[1]) { print a[2]; exit } }')
if [ -n "$child" ] && to_raw "$d/x.ptrec" "$d/raw" >/dev/null 2>&1 && [ -s "$d/raw/tid-$child.pt" ]; then
	args=$(cat "$d/raw/tid-$child.ptdump.args")
	t_match "fork child $child: its args name the inherited program" "(--elf|--image) [^ ]*forkexec" "$args"
	# shellcheck disable=SC2086 # the args file is a word list
	(cd "$d/raw" && from_raw call-trace $args) 2>"$d/ct.err" | strip_ids >"$d/raw.ct"
	"$PTDUMP" --call-trace --tid "$child" "$d/x.ptrec" 2>/dev/null | strip_ids >"$d/orig.ct"
	if cmp -s "$d/raw.ct" "$d/orig.ct" && [ -s "$d/orig.ct" ]; then
		t_pass "fork child: --call-trace from the raw files equals the recording's ($(wc -l <"$d/orig.ct") lines)"
	else
		t_fail "fork child: --call-trace from the raw files equals the recording's" \
			"$(head -n 3 "$d/ct.err"; diff "$d/orig.ct" "$d/raw.ct" | head -n 10)"
	fi
else
	t_fail "fork child: record and export" "child '$child' $(head -n 3 "$d/rec.out")"
fi

# What the argument files say, checked against the recording's own data.
d=$T_TMP/calls/raw
info=$("$PTDUMP" --info "$T_TMP/calls/x.ptrec")
xa=$(cat "$d"/tid-*.ptxed.args)
t_match "ptxed args: cpu from the file" "--cpu $(sed -n 's/.*family \([0-9]*\) model \([0-9]*\) stepping \([0-9]*\).*/\1\/\2\/\3/p' <<<"$info")" "$xa"
t_match "ptxed args: nominal frequency" "--nom-freq $(sed -n 's/.*max non-turbo ratio \([0-9]*\).*/\1/p' <<<"$info")" "$xa"
t_match "ptxed args: cpuid 0x15" "--cpuid-0x15.eax $(sed -n 's/^cpuid 0x15: *eax \([0-9]*\) ebx \([0-9]*\).*/\1 --cpuid-0x15.ebx \2/p' <<<"$info")" "$xa"
# The main program's load address: its first mapping minus the file offset (PIE, first segment at 0).
map=$("$PTDUMP" --sideband "$T_TMP/calls/x.ptrec" | grep -m1 "MMAP .*progs/calls ")
start=$(sed -n 's/.*MMAP *\(0x[0-9a-f]*\)-.*/\1/p' <<<"$map")
pgoff=$(sed -n 's/.*pgoff \(0x[0-9a-f]*\).*/\1/p' <<<"$map")
t_match "ptxed args: the program at its load address" \
	"--elf $P/calls:$(printf '0x%x' $((start - pgoff)))( |$)" "$xa"
t_match "ptxed args: its own syntax for the trace" '--pt tid-[0-9]+\.pt$' "$xa"
t_match "manifest: names the embedded images" 'images/00-' "$(cat "$d/manifest.txt")"
if command -v ptxed >/dev/null; then
	# shellcheck disable=SC2086
	t_run "ptxed decodes the export" 0 sh -c "cd '$d' && ptxed --quiet $xa"
else
	t_skip "ptxed" "libipt's ptxed is not installed (Debian ships only libipt2 and libipt-dev)"
fi

# A binary gone from the system: the args use the embedded bytes (--raw /
# --image), and the branch list (addresses) still matches.
d=$T_TMP/gone
mkdir -p "$d"
cp "$P/calls" "$d/calls-copy"
"$PTREC" record --emulate -q -o "$d/x.ptrec" -- "$d/calls-copy" 1 >/dev/null 2>&1
rm -f "$d/calls-copy"
t_run "binary gone: export raw" 0 to_raw "$d/x.ptrec" "$d/raw"
args=$(cat "$d"/raw/tid-*.ptdump.args)
t_match "binary gone: ptdump args use its embedded bytes" '--image images/[0-9]+-calls-copy:0x[0-9a-f]+:0x[0-9a-f]+@0x4000001000' "$args"
t_match "binary gone: ptxed args likewise" '--raw images/[0-9]+-calls-copy:0x[0-9a-f]+-0x[0-9a-f]+:0x4000001000' "$(cat "$d"/raw/tid-*.ptxed.args)"
# shellcheck disable=SC2086
(cd "$d/raw" && from_raw branches $args) 2>/dev/null | strip_ids | awk '{print $2, $3, $4}' >"$d/raw.br"
"$PTDUMP" --branches "$d/x.ptrec" 2>/dev/null | strip_ids | awk '{print $2, $3, $4}' >"$d/orig.br"
if cmp -s "$d/raw.br" "$d/orig.br" && [ -s "$d/orig.br" ]; then
	t_pass "binary gone: branches from the raw files equal ($(wc -l <"$d/orig.br"))"
else
	t_fail "binary gone: branches from the raw files equal" "$(diff "$d/orig.br" "$d/raw.br" | head)"
fi

# --image FILE:OFFSET:SIZE@ADDR: the same code from one memory dump that holds
# every image after a page of other bytes, each piece mapped with its size
# (without sizes the pieces would run to the end of the dump and overlap),
# plus that first page mapped on its own.
head -c 4096 /dev/zero >"$d/raw/dump.bin"
dargs=" --image dump.bin:0:0x1000@0x1000"
for a in $args; do
	case $a in
	images/*:*:*@*)
		f=${a%%:*} rest=${a#*:}
		off=${rest%%:*} rest=${rest#*:}
		dargs="$dargs --image dump.bin:$(printf '0x%x' $(($(stat -c %s "$d/raw/dump.bin") + off))):${rest}"
		cat "$d/raw/$f" >>"$d/raw/dump.bin"
		;;
	images/*) ;;
	--image) ;;
	*) dargs="$dargs $a" ;;
	esac
done
t_match "dump: pieces mapped with sizes" '--image dump.bin:0x[0-9a-f]+:0x[0-9a-f]+@0x4000001000' "$dargs"
# shellcheck disable=SC2086
(cd "$d/raw" && "$PTDUMP" --branches $dargs) 2>"$d/dump.err" | strip_ids | awk '{print $2, $3}' >"$d/dump.br"
# addresses and kinds (symbols: the raw bytes of a dump carry none)
awk '{print $1, $2}' "$d/orig.br" >"$d/orig.br2"
if cmp -s "$d/dump.br" "$d/orig.br2" && [ -s "$d/orig.br2" ]; then
	t_pass "dump: branches from pieces of one dump equal ($(wc -l <"$d/orig.br"))"
else
	t_fail "dump: branches from pieces of one dump equal" "$(cat "$d/dump.err"; diff "$d/orig.br2" "$d/dump.br" | head)"
fi
t_run "dump: a piece past the end of the dump" 1 "$PTDUMP" --branches --pt "$d/raw/dump.bin" \
	--cpu 6/94/3 --image "$d/raw/dump.bin:0x1000:0x100000000@0x1000"
t_match "dump: says so" 'past the end of .*dump\.bin' "$err"
t_run "dump: size 0" 2 "$PTDUMP" --branches --pt "$d/raw/dump.bin" --image "$d/raw/dump.bin:0:0@0x1000"
t_match "dump: size 0 refused" 'size 0' "$err"

# A process that execs: the manifest says the raw files cannot describe it.
d=$T_TMP/forkexec
mkdir -p "$d"
"$PTREC" record --emulate -q -o "$d/x.ptrec" -- "$P/forkexec" 20 >/dev/null 2>&1
t_run "exec: export raw" 0 to_raw "$d/x.ptrec" "$d/raw"
t_match "exec: manifest warns about the address space change" 'changed its address space' "$(cat "$d/raw/manifest.txt")"
t_eq "exec: a stream file per thread" 2 "$(ls "$d/raw" | grep -c '^tid-.*\.pt$')"

# Bad input to the import: clear errors, non-zero exit, no crash.
d=$T_TMP/bad
mkdir -p "$d"
printf '\x02\x82\x02\x82' >"$d/t.pt"
t_run "import: missing trace file" 1 "$DRV" --from-raw call-trace --pt "$d/none.pt"
t_match "import: names the missing file" 'none\.pt' "$err"
t_run "import: --elf on a non-ELF file" 1 "$DRV" --from-raw call-trace --pt "$d/t.pt" --elf "$d/t.pt"
t_match "import: says to use --image" '--image' "$err"
t_run "import: --image without an address" 2 "$DRV" --from-raw call-trace --pt "$d/t.pt" --image "$d/t.pt"
t_match "import: says the form" 'ADDR' "$err$(printf '\n')"
t_run "import: bad cpu" 2 "$DRV" --from-raw call-trace --pt "$d/t.pt" --cpu 6
head -c 65536 /dev/urandom >"$d/junk.pt"
t_run "import: random bytes decode without a crash" 0 "$DRV" --from-raw branches --pt "$d/junk.pt" \
	--elf "$P/calls@0x4000000000"
t_run "export: not a ptrec file" 1 "$DRV" --to-raw "$d/t.pt" "$d/out"
t_done
