# Sourced by the end-to-end suites (tests/cli/*.sh, tests/hw/*.sh): where the project and its build are
# (TOP, B, BD), the binaries as absolute paths (PTREC, PTDUMP, PTREC_PLUGIN),
# the test programs (PROGS) and the suites' helper sources (SRC); then the
# suite library (lib.sh). $0 is the suite script.
TOP=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BD=$B ;; *) BD=$TOP/$B ;; esac
PTREC=${PTREC:-$BD/ptrec}
PTDUMP=${PTDUMP:-$BD/ptdump}
case $PTREC in /*) ;; *) PTREC=$PWD/$PTREC ;; esac
case $PTDUMP in /*) ;; *) PTDUMP=$PWD/$PTDUMP ;; esac
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
PROGS=$BD/progs
export PTREC_PLUGIN=${PTREC_PLUGIN:-$BD/ptrec-emu.so}
SRC=$TOP/tests/cli/src

# model_suite NAME FILE...: the common start of a suite that records with the
# software tracer: a skip without qemu-x86_64, a failure when a FILE is
# missing (both end the suite), then into the work directory. Returns 1 when
# the suite must end.
model_suite() {
	local name=$1 f
	shift
	if ! command -v qemu-x86_64 >/dev/null; then
		t_skip "$name" "qemu-x86_64 is not installed (apt-get install qemu-user)"
		return 1
	fi
	for f in "$PTREC" "$PTDUMP" "$PTREC_PLUGIN" "$@"; do
		if [ ! -e "$f" ]; then
			t_fail "$name: $f is missing (run make B=$B tests first)"
			return 1
		fi
	done
	cd "$T_TMP" || return 1
}

# emu_rec NAME SPEC PROG ARGS...: records PROG with the software tracer and the
# event SPEC into NAME.data (RECOPTS: more record options); a failure says why.
emu_rec() {
	local name=$1 spec=$2
	shift 2
	"$PTREC" record --emulate ${RECOPTS:-} -o "$name.data" -e "$spec" -- "$@" >/dev/null 2>"$name.rec.err" ||
		t_fail "record $name" "$(cat "$name.rec.err")"
}
