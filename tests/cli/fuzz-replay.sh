#!/usr/bin/env bash
# Replays the fuzz corpus and every input that once crashed a target or blew
# up its memory, time or output (tests/fuzz/regress/TARGET/NAME) through the
# fuzz targets built with a plain main() ($B/fuzz-replay/): in make check and,
# with the sanitizers, in make check SANITIZE=1. Each file is one check; the
# target's own bounds apply (output: tests/fuzz/fuzz.h), and every input must
# finish within 20 s and 1 GiB.
. "$(dirname "$0")/lib.sh"
top=${PTREC_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${B:-build}
case $B in /*) BD=$B ;; *) BD=$top/$B ;; esac
export PTREC_SYSROOT=$T_TMP/sysroot
PTREC=${PTREC:-$BD/ptrec} "$top/tests/fixtures/mksysroot.sh" "$PTREC_SYSROOT" >/dev/null 2>&1 ||
	t_fail "fixture sysroot for the event-spec target"

n=0
for bin in "$BD"/fuzz-replay/fuzz_*; do
	[ -x "$bin" ] || continue
	name=${bin##*/}
	for f in "$top/tests/fuzz/corpus/$name"/* "$top/tests/fuzz/regress/$name"/*; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		kind=corpus
		case $f in */regress/*) kind=regression ;; esac
		if [ "${SANITIZE:-}" = 1 ]; then
			# ASan reserves terabytes of address space: bound allocations instead.
			ASAN_OPTIONS="$ASAN_OPTIONS:max_allocation_size_mb=1024:allocator_may_return_null=1" \
				timeout 20 "$bin" "$f" >"$T_TMP/out" 2>&1
		else
			( ulimit -v 4194304; timeout 20 "$bin" "$f" ) >"$T_TMP/out" 2>&1
		fi
		rc=$?
		if [ "$rc" -eq 0 ]; then
			t_pass "$name $kind ${f##*/}"
		else
			t_fail "$name $kind ${f##*/} (exit $rc)" "$(tail -n 15 "$T_TMP/out")"
		fi
	done
done
[ "$n" -gt 0 ] || t_fail "no fuzz replay binaries or inputs under $BD/fuzz-replay"
t_done
