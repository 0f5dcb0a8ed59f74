# Shared helpers for the shell test suites. Source it, call the checks, end
# with t_done. Every check counts as one test.
#   t_pass NAME / t_fail NAME [DETAIL] / t_skip NAME WHY
#   t_eq NAME EXPECTED ACTUAL      t_match NAME REGEX TEXT     t_nomatch NAME REGEX TEXT
#   t_run NAME EXPECTED_STATUS CMD...   (stdout in $out, stderr in $err)
set -u
T_P=0 T_F=0 T_S=0
PTREC=${PTREC:-build/ptrec}
PTDUMP=${PTDUMP:-build/ptdump}
T_TMP=$(mktemp -d /tmp/ptrec-cli.XXXXXX)
trap 't_cleanup' EXIT
t_cleanup() { rm -rf "$T_TMP"; }

t_pass() { T_P=$((T_P + 1)); echo "ok     $1"; }
t_fail() { T_F=$((T_F + 1)); echo "FAIL   $1"; [ $# -gt 1 ] && printf '%s\n' "$2" | sed 's/^/    /' | head -n 40; return 0; }
t_skip() { T_S=$((T_S + 1)); echo "skip   $1: $2"; }
t_eq() {
	if [ "$2" = "$3" ]; then t_pass "$1"; else
		t_fail "$1" "expected: $2
got:      $3"; fi
}
t_match() {
	if printf '%s' "$3" | grep -Eq -- "$2"; then t_pass "$1"; else
		t_fail "$1" "no match for /$2/ in:
$3"; fi
}
t_nomatch() {
	if printf '%s' "$3" | grep -Eq -- "$2"; then t_fail "$1" "unexpected match for /$2/ in:
$3"; else t_pass "$1"; fi
}
# t_run NAME STATUS CMD... : runs CMD, checks its exit status; output in $out/$err.
t_run() {
	local name=$1 want=$2 rc
	shift 2
	out=$("$@" 2>"$T_TMP/.err")
	rc=$?
	err=$(cat "$T_TMP/.err")
	if [ "$rc" = "$want" ]; then t_pass "$name"; else
		t_fail "$name" "exit status $rc, expected $want
stdout: $out
stderr: $err"; fi
}
t_is_root() { [ "$(id -u)" = 0 ]; }
t_done() {
	echo "# counts: $T_P $T_F $T_S"
	[ "$T_F" -eq 0 ]
}

# The recording backend of the end-to-end suites, from PTREC_BACKEND:
#   emulate (the default)  the software tracer (ptrec record --emulate), with
#                          its ground truth (--emulate-truth)
#   hw                     the machine's tracer, intel_pt or else cs_etm (root)
# PTREC_HW_FORCE_EMULATE=1 takes the hw path (its checks, no ground truth)
# over the software tracer, so the hw checks run where no tracer exists.
# t_backend_init sets T_BACKEND, T_TRACER (the PMU name for specs),
# T_REC_OPTS (the record options the backend needs), T_HAS_TRUTH (1 or 0);
# it returns 1 with the reason in T_BACKEND_WHY when the backend cannot
# record here. t_rec ARGS... runs "$PTREC record" with the backend's
# options; --emulate-truth FILE is dropped where there is no truth.
t_backend_init() {
	T_BACKEND=${PTREC_BACKEND:-emulate} T_BACKEND_WHY= T_TRACER=intel_pt T_REC_OPTS=() T_HAS_TRUTH=0
	case $T_BACKEND in
	emulate)
		T_REC_OPTS=(--emulate) T_HAS_TRUTH=1 ;;
	hw)
		if [ "${PTREC_HW_FORCE_EMULATE:-0}" = 1 ]; then
			T_REC_OPTS=(--emulate)
		elif [ -e /sys/bus/event_source/devices/intel_pt ]; then
			T_TRACER=intel_pt
		elif [ -e /sys/bus/event_source/devices/cs_etm ]; then
			T_TRACER=cs_etm
		else
			T_BACKEND_WHY="no intel_pt or cs_etm PMU on this machine"
		fi
		if [ -z "$T_BACKEND_WHY" ] && [ ${#T_REC_OPTS[@]} = 0 ] && ! t_is_root; then
			T_BACKEND_WHY="recording with $T_TRACER needs root"
		fi ;;
	*)
		T_BACKEND_WHY="PTREC_BACKEND=$T_BACKEND: not emulate or hw" ;;
	esac
	[ -z "$T_BACKEND_WHY" ]
}
t_rec() {
	local a=() drop=0 x
	# A suite that never chose a backend records with the software tracer.
	[ -n "${T_BACKEND:-}" ] || t_backend_init
	for x in "$@"; do
		if [ "$drop" = 1 ]; then drop=0; continue; fi
		if [ "$T_HAS_TRUTH" = 0 ] && [ "$x" = --emulate-truth ]; then drop=1; continue; fi
		a+=("$x")
	done
	"$PTREC" record "${T_REC_OPTS[@]}" "${a[@]}"
}
