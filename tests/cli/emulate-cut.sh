#!/usr/bin/env bash
# A recording cut short still decodes: ptrec killed (SIGKILL) at eleven moments
# of a recording, and the disk full at five sizes. Each file decodes without
# a missing code image, its calls are the ground truth's first ones (up to
# the last whole trace chunk), nothing of the recording runs on, and a full
# disk says up to what time the file is complete, with exit status 1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/src/truth.sh"
B=${B:-build}
PROGS=${PTREC_TOP:-.}/$B/progs
cd "$T_TMP" || exit 1
if ! command -v qemu-x86_64 >/dev/null; then
	t_skip "cut tests" "qemu-x86_64 is not installed"; t_done; exit
fi
truth_build || { t_done; exit; }
cp "$PROGS/calls" cut-calls

# check_cut NAME: NAME.data (maybe cut) against NAME.truth (maybe cut mid-line).
check_cut() {
	local n=$1 k
	# A truth cut inside a line loses that line.
	[ -n "$(tail -c 1 "$n.truth")" ] && sed -i '$d' "$n.truth"
	"$PTDUMP" --call-trace "$n.data" >"$n.out" 2>"$n.err"
	if grep -q "no code image\|no image" "$n.out" "$n.err"; then
		t_fail "$n: every code mapped before the cut is in the file" "$(grep -m 3 "no code image\|no image" "$n.out" "$n.err")"
		return
	fi
	t_pass "$n: every code mapped before the cut is in the file"
	if [ "$(truth_norm <"$n.out" | wc -l)" = 0 ]; then
		t_pass "$n: cut before the first trace chunk (nothing to compare)"
		return
	fi
	if ! truth_calls "$n"; then
		t_fail "$n: truth" "$(cat "$n.sb.err" "$n.dt.err" | head -n 5)"; return
	fi
	if k=$(truth_prefix "$n"); then
		t_pass "$n: the calls are the truth's first $k"
		decoded=$((decoded + k))
	else
		t_fail "$n: the calls are the truth's first ones" "$k"
	fi
}

# aux_chunks FILE: the AUX chunks a (partly written) trace file holds so far.
aux_chunks() { "$PTDUMP" --info "$1" 2>/dev/null | awk '$1 == "AUX" { n = $2 } END { print n + 0 }'; }

# ---- ptrec killed at eleven moments ----
decoded=0
for i in $(seq 0 10); do
	n=kill$i
	"$PTREC" record --emulate -q --chunk-size 16K --emulate-truth "$n.truth" -o "$n.data" -- \
		"$T_TMP/cut-calls" 1000 >/dev/null 2>&1 &
	rp=$!
	# Ten moments: when the truth has grown by another 400 KB (or the run
	# ended); the eleventh when the file holds two trace chunks, however
	# slow the machine (a sanitizer build under load writes its first trace
	# late).
	for _ in $(seq 300); do
		if [ "$i" -lt 10 ]; then
			[ "$(stat -c %s "$n.truth" 2>/dev/null || echo 0)" -gt $(((i + 1) * 400000)) ] && break
		else
			[ "$(aux_chunks "$n.data")" -ge 2 ] && break
		fi
		kill -0 "$rp" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$rp" 2>/dev/null
	wait "$rp" 2>/dev/null
	for _ in $(seq 50); do pgrep -f -- "$T_TMP/cut-calls" >/dev/null || break; sleep 0.1; done
	left=$(pgrep -af -- "$T_TMP/cut-calls")
	t_eq "$n: no process of the recording remains" "" "$left"
	[ -n "$left" ] && pkill -KILL -f -- "$T_TMP/cut-calls"
	check_cut "$n"
done
if [ "$decoded" -gt 0 ]; then t_pass "the cut files hold $decoded calls in all"; else
	t_fail "the cut files hold some calls" "none decoded"; fi

# ---- the disk full at five sizes ----
if ! t_is_root; then
	t_skip "full disk" "needs root to mount a tmpfs"; t_done; exit
fi
# The disk sizes: what the file takes before its trace (the images, stored
# as they are), the writer's reserve (256 KiB) and 50 to 300 KiB more (the
# whole recording takes about 650 KiB more than the base).
"$PTREC" record --emulate -q -z 0 -o base.data -- "$T_TMP/cut-calls" 1 >/dev/null 2>&1
base=$(($(stat -c %s base.data) / 1024))
for more in 50 100 150 200 300; do
	kb=$((base + 256 + more))
	n=full$more
	mkdir -p "mnt$kb"
	if ! mount -t tmpfs -o size=${kb}k tmpfs "mnt$kb"; then
		t_skip "$n" "cannot mount a tmpfs"; continue
	fi
	"$PTREC" record --emulate -z 0 --chunk-size 16K --emulate-truth "$n.truth" -o "mnt$kb/$n.data" -- \
		"$T_TMP/cut-calls" 4000 >"$n.rec.out" 2>"$n.rec.err"
	rc=$?
	cp "mnt$kb/$n.data" "$n.data"
	umount "mnt$kb"
	t_eq "$n: exit status 1" 1 "$rc"
	t_match "$n: says the disk is full and up to when the file is complete" \
		"the disk is full: recording stopped; the file is complete up to time [0-9]+\.[0-9]{9}" \
		"$(cat "$n.rec.err")"
	# That time is the last trace the file holds (its last AUX record).
	want=$(sed -n 's/.*complete up to time \([0-9.]*\).*/\1/p' "$n.rec.err")
	got=$("$PTDUMP" --sideband "$n.data" 2>/dev/null | awk '$0 ~ / AUX / { t = $1 } END { print t }')
	t_eq "$n: the time named is the file's last trace" "$want" "$got"
	decoded=0
	check_cut "$n"
	[ "$decoded" -gt 0 ] || t_fail "$n: the file holds trace" "no call decoded"
done
t_done
