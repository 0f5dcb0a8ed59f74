#!/usr/bin/env bash
# Names in stripped programs. tests/progs/calls.c is built here with symbols
# (the reference), then stripped, and recorded once; its call trace is
# decoded with the symfs root holding, in turn: the unstripped program (the
# reference names), the stripped one alone (every callee of the program named
# "prog+0xOFF", OFF being its address in nm's list of the unstripped build),
# and the stripped one with its symbols elsewhere as gdb finds them: a
# separate debug file by build id under usr/lib/debug/.build-id, one named by
# .gnu_debuglink beside the program and in .debug/ (and refused when its CRC
# does not match), and MiniDebugInfo (.gnu_debugdata, an xz-compressed
# symbol table). Each of those must give the reference names line for line.
. "$(dirname "$0")/src/paths.sh"
if ! command -v qemu-x86_64 >/dev/null; then
	t_skip "stripped programs" "qemu-user is not installed (the software tracer)"
	t_done; exit
fi
for tool in objcopy strip xz nm; do
	if ! command -v $tool >/dev/null; then
		t_skip "stripped programs" "$tool is not installed"
		t_done; exit
	fi
done
cd "$T_TMP" || exit 1
W=$T_TMP/w
mkdir -p "$W"
cc -O1 -g -o "$W/prog.full" "$TOP/tests/progs/calls.c" || { t_fail "build"; t_done; exit; }
strip -o "$W/prog" "$W/prog.full"
bid=$(readelf -n "$W/prog" | awk '/Build ID:/ { print $3 }')
t_match "the stripped program keeps its build id" '^[0-9a-f]{40}$' "$bid"
t_eq "the stripped program has no .symtab" "" "$(readelf -S "$W/prog" | grep -w '.symtab')"
t_run "recorded" 0 "$PTREC" record -q --emulate -o s.ptrec -- "$W/prog" 3

# The callee names of the program's own lines, one a line ([+N] cut off).
names() {
	printf '%s\n' "$1" | awk -F'\t' -v p="($W/prog" 'index($1, p) {
		n = split($2, w, " "); print w[n] }'
}
# A fresh symfs root holding the program at its recorded path.
root() {
	rm -rf "$T_TMP/R"
	mkdir -p "$T_TMP/R$W"
	cp "$1" "$T_TMP/R$W/prog"
}

root "$W/prog.full"
t_run "decoded with the unstripped program" 0 "$PTDUMP" --symfs "$T_TMP/R" --call-trace s.ptrec
ref=$(names "$out")
nref=$(printf '%s\n' "$ref" | grep -c .)
t_match "reference: calls in the program ($nref)" '^[1-9][0-9]+$' "$nref"
t_eq "reference: rec is named" rec "$(printf '%s\n' "$ref" | grep -m1 -x rec)"

# Stripped alone: object+offset, the offset being nm's address of the name.
root "$W/prog"
t_run "decoded with the stripped program only" 0 "$PTDUMP" --symfs "$T_TMP/R" --call-trace s.ptrec
got=$(names "$out")
want=$(printf '%s\n' "$ref" | awk -v nm="$(nm "$W/prog.full")" 'BEGIN {
	n = split(nm, l, "\n")
	for (i = 1; i <= n; i++) { split(l[i], f, " "); if (f[3] != "") a[f[3]] = f[1] }
}
{ if ($0 in a) { x = a[$0]; sub(/^0+/, "", x); print "prog+0x" x } else print $0 }')
t_eq "stripped: the same number of calls" "$nref" "$(printf '%s\n' "$got" | grep -c .)"
t_eq "stripped: each callee is prog+0xOFF at nm's address of its name" "$want" "$got"
t_match "stripped: object+offset names are left-aligned" \
	$'\t *prog\\+0x[0-9a-f]+ *$' "$(printf '%s\n' "$out" | grep -m1 'prog+0x')"

# check NAME: the call trace with the symfs root as it is now gives $ref.
check() {
	t_run "$1: decoded" 0 "$PTDUMP" --symfs "$T_TMP/R" --call-trace s.ptrec
	t_eq "$1: the unstripped build's names" "$ref" "$(names "$out")"
}

objcopy --only-keep-debug "$W/prog.full" "$W/prog.debug"
root "$W/prog"
mkdir -p "$T_TMP/R/usr/lib/debug/.build-id/${bid:0:2}"
cp "$W/prog.debug" "$T_TMP/R/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug"
check "debug file by build id"

# .gnu_debuglink: objcopy records the CRC of the debug file it is given.
(cd "$W" && objcopy --add-gnu-debuglink=prog.debug prog prog.link)
root "$W/prog.link"
cp "$W/prog.debug" "$T_TMP/R$W/prog.debug"
check "debuglink beside the program"
root "$W/prog.link"
mkdir -p "$T_TMP/R$W/.debug"
cp "$W/prog.debug" "$T_TMP/R$W/.debug/prog.debug"
check "debuglink in .debug/"
root "$W/prog.link"
mkdir -p "$T_TMP/R/usr/lib/debug$W"
cp "$W/prog.debug" "$T_TMP/R/usr/lib/debug$W/prog.debug"
check "debuglink under usr/lib/debug"
root "$W/prog.link"
{ cat "$W/prog.debug"; printf x; } >"$T_TMP/R$W/prog.debug"
t_run "debuglink, CRC mismatch: decoded" 0 "$PTDUMP" --symfs "$T_TMP/R" --call-trace s.ptrec
t_eq "debuglink, CRC mismatch: the file is not used" "$got" "$(names "$out")"

# MiniDebugInfo as distributions make it: the function symbols .dynsym lacks,
# in a debug file without DWARF, xz-compressed into .gnu_debugdata.
nm -D --format=posix --defined-only "$W/prog.full" | awk '{ print $1 }' | sort >"$W/dyn"
nm --format=posix --defined-only "$W/prog.full" | awk '$2 ~ /^[Tt]$/ { print $1 }' | sort >"$W/funcs"
comm -13 "$W/dyn" "$W/funcs" >"$W/keep"
objcopy -S --remove-section .gdb_index --remove-section .comment \
	--keep-symbols="$W/keep" "$W/prog.debug" "$W/mini"
xz -f "$W/mini"
objcopy --add-section .gnu_debugdata="$W/mini.xz" "$W/prog" "$W/prog.mini"
root "$W/prog.mini"
check "MiniDebugInfo"
# A damaged xz stream is no symbol source and no failure.
head -c 200 "$W/mini.xz" >"$W/bad.xz"
objcopy --add-section .gnu_debugdata="$W/bad.xz" "$W/prog" "$W/prog.bad"
root "$W/prog.bad"
t_run "damaged MiniDebugInfo: decoded" 0 "$PTDUMP" --symfs "$T_TMP/R" --call-trace s.ptrec
t_eq "damaged MiniDebugInfo: object+offset names" "$got" "$(names "$out")"
t_done
