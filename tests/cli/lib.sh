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
