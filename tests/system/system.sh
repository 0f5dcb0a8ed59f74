#!/usr/bin/env bash
# The whole-system software tracer (ptrec record --emulate=system): a Linux
# guest under qemu-system-x86_64 with the plugin writing Intel PT for the
# workload's user and kernel code. Each recording boots the guest (about
# 15 s of CPU under TCG), so this suite is `make check-system`, apart from
# `make check`.
#
# The decoded instruction trace must equal the tracer's ground truth (the
# blocks the guest CPU executed for the workload while tracing ran), block
# by block: every block starts where the truth says, runs its number of
# instructions and ends at its last instruction.
. "$(dirname "$0")/../cli/src/paths.sh"
unset PTREC_PLUGIN_SYS PTREC_GUEST_INIT

if ! command -v qemu-system-x86_64 >/dev/null; then
	t_skip "whole-system tracer" "qemu-system-x86_64 is not installed (make deps-system)"
	t_done; exit
fi
if [ -z "${PTREC_GUEST_KERNEL:-}" ] && ! ls /boot/vmlinuz-* >/dev/null 2>&1; then
	t_skip "whole-system tracer" "no guest kernel in /boot (make deps-system)"
	t_done; exit
fi
for f in "$PTREC" "$PTDUMP" "$BD/ptrec-emu-sys.so" "$BD/ptrec-guest"; do
	if [ ! -e "$f" ]; then
		t_fail "whole-system tracer: $f is missing (run make B=$B first)"
		t_done; exit
	fi
done
cd "$T_TMP" || exit 1

# insn_vs_truth NAME [TID]: ptdump --insn-trace of NAME.data against
# NAME.truth (with TID: that thread's blocks and decoded instructions only;
# the decode is made once).
insn_vs_truth() {
	if [ -z "${2:-}" ] || [ ! -s "$1.insn" ]; then
		"$PTDUMP" -q --insn-trace "$1.data" >"$1.insn" 2>"$1.err" || return 1
	fi
	awk -v tid="${2:-}" 'FNR == NR {
		if ($1 == "B" && (tid == "" || $2 == tid)) { n++; s[n] = $3; l[n] = $4; c[n] = $5 }
		next
	}
	tid != "" && $2 != tid { next }
	{
		for (i = 1; i < NF; i++)
			if ($i ~ /:$/ && $(i + 1) ~ /^[0-9a-f]+$/ && length($(i + 1)) <= 16) { a[++m] = $(i + 1); break }
	}
	END {
		j = 1
		for (i = 1; i <= n; i++) {
			if (a[j] != s[i]) {
				printf "block %d: truth starts at %s, trace has %s (insn %d)\n", i, s[i], a[j], j
				exit 1
			}
			j += c[i]
			if (a[j - 1] != l[i]) {
				printf "block %d (%s): truth ends at %s after %d, trace has %s\n", i, s[i], l[i], c[i], a[j - 1]
				exit 1
			}
		}
		if (j != m + 1) { printf "%d instructions decoded, %d in the truth\n", m, j - 1; exit 1 }
		printf "%d blocks, %d instructions\n", n, m
	}' "$1.truth" "$1.insn"
}

# grown_follow NAME VIEW: ptdump --follow -v VIEW over a copy of NAME.data
# that grows a twentieth at a time under an exclusive flock(2), as ptrec
# holds one while it writes; the output in NAME.fol, stderr in NAME.fol.err.
grown_follow() {
	local src=$1.data g=$1.grow.data size step off=4096 pid rc
	size=$(stat -c %s "$src")
	step=$(( (size + 19) / 20 ))
	head -c "$off" "$src" >"$g"
	exec 8<"$g"
	flock -x 8
	"$PTDUMP" --follow -v "$2" "$g" >"$1.fol" 2>"$1.fol.err" 8<&- &
	pid=$!
	while [ "$off" -lt "$size" ]; do
		sleep 0.5
		tail -c +$((off + 1)) "$src" | head -c "$step" >>"$g"
		off=$((off + step))
	done
	exec 8<&-
	wait "$pid"
	rc=$?
	return "$rc"
}

# perf_agrees NAME: NAME.data exported with --to-perf-data decodes in perf
# script (with the guest's kallsyms and kernel text from the export) to the
# same calls as ptdump's, kernel and user. Names are compared by their
# kallsyms address: perf and ptdump may pick different aliases (memset,
# __memset) of one function.
perf_agrees() {
	local d=$1.perf.debug
	"$PTDUMP" -q --to-perf-data "$1.perf" "$1.data" 2>"$1.exp.err" || { cat "$1.exp.err"; return 1; }
	[ -s "$d/kcore_dir/kcore" ] && [ -s "$d/kcore_dir/kallsyms" ] || { echo "no kcore_dir in $d"; return 1; }
	perf script -i "$1.perf" --symfs "$d" --kallsyms "$d/kcore_dir/kallsyms" --call-trace -F +flags \
		2>"$1.perf.err" | norm_calls | grep '^call|' | canon_calls "$d/kcore_dir/kallsyms" >"$1.pc"
	"$PTDUMP" --call-ret-trace "$1.data" 2>/dev/null | norm_calls | grep '^call|' |
		canon_calls "$d/kcore_dir/kallsyms" >"$1.dc"
	[ -s "$1.dc" ] || { echo "ptdump shows no calls"; return 1; }
	cmp_calls "$1.pc" "$1.dc"
}
canon_calls() {
	awk -F'|' 'NR == FNR { if (NF == 1 && $0 ~ / [tTwW] /) { split($0, f, " "); a[f[3]] = f[1] } next }
		{ match($4, /^ */); ind = substr($4, 1, RLENGTH); nm = substr($4, RLENGTH + 1)
		  if (nm in a) nm = a[nm]; print $1 "|" $2 "|" $3 "|" ind nm }' "$1" -
}
. "$SRC/perfcalls.sh"

# timed VAR CMD...: runs CMD; its wall-clock milliseconds in VAR, its status returned.
timed() {
	local v=$1 s e r
	shift
	s=$(date +%s%N)
	"$@"
	r=$?
	e=$(date +%s%N)
	printf -v "$v" '%s' $(( (e - s) / 1000000 ))
	return $r
}

# newuname_window NAME LABEL SPEC RESUMER: records uname(1) with the window
# SPEC around the kernel's newuname handler, opened by event RESUMER; the
# decoded instructions equal the truth, the call trace starts at the handler
# and names its calls, and perf decodes the export to the same calls.
newuname_window() {
	local n=$1 l=$2
	if ! "$PTREC" record --emulate=system --kcore -q -o "$n.data" --emulate-truth "$n.truth" \
		-e "$3" uname >"$n.out" 2>"$n.err"; then
		t_fail "$l records" "$(cat "$n.err")"
		return 1
	fi
	t_pass "$l records"
	if r=$(insn_vs_truth "$n"); then
		t_pass "$l: instruction trace = truth ($r)"
	else
		t_fail "$l: instruction trace = truth" "$r"
	fi
	"$PTDUMP" --call-trace "$n.data" >"$n.calls" 2>&1
	t_match "$l: the trace is resumed at the handler's entry" \
		"resume trigger $4.* __x64_sys_newuname\\+0x0 \\(\\[kernel.kallsyms\\]\\)" "$(cat "$n.calls")"
	# The handler's calls, at depth 1, by kernel symbol name.
	t_match "$l: __x64_sys_newuname calls down_read" '^    down_read$' \
		"$(awk -F'\t' 'NF > 1 { sub(/ +$/, "", $2); print $2 }' "$n.calls" | grep -v '^        ')"
	if ! command -v perf >/dev/null; then
		t_skip "$l: perf script on the export" "perf is not installed"
	elif r=$(perf_agrees "$n"); then
		t_pass "$l: perf script on the export shows the same calls ($r)"
	else
		t_fail "$l: perf script on the export shows the same calls" "$r"
	fi
}

# ---- the seed example: uname(2) in the kernel, as written ----
if newuname_window seed "seed example" \
	'{intel_pt/aux-start-paused/k,syscalls:sys_enter_newuname/aux-resume/,syscalls:sys_exit_newuname/aux-pause/}' \
	syscalls:sys_enter_newuname; then
	t_eq "seed example: the workload's output reaches stdout" "Linux" "$(cat seed.out)"
	t_nomatch "seed example: every call has a kernel symbol" '0x[0-9a-f]|unknown' \
		"$(awk -F'\t' 'NF > 1 { print $2 }' seed.calls)"
	info=$("$PTDUMP" --info seed.data 2>&1)
	t_match "seed example: kallsyms and kernel text recorded" 'KSYMS .*KCORE' "$(echo $info)"
	# Recorded through the model of the kernel: every event has the id the
	# model gave it, the tracking event too, and its ring has the workload's
	# mappings (at the exit, dated at the exec) and the switches of its CPU:
	# in at the exec, then each of the guest's switches of the workload's
	# task (the truth's S lines), and out at the end if the guest's last
	# switch was not.
	t_match "seed example: the tracking event has its id from the model" \
		'ptrec:tracking +pmu software .* 1 id' "$info"
	sb=$("$PTDUMP" --sideband seed.data 2>&1)
	t_match "seed example: the workload's mappings reach the file" 'MMAP .* r-x .*/uname' "$sb"
	want=$(awk 'BEGIN { w = "in" } $1 == "S" { w = w " " $3 } END { if (w ~ /in$/) w = w " out"; print w }' seed.truth)
	t_eq "seed example: the model's CPU switches as the guest's ($(grep -c '^S .* out' seed.truth) switches out)" \
		"$want" "$(awk '$4 == "SWITCH" { printf "%s%s", n++ ? " " : "", $5 }' <<<"$sb")"

fi

# ---- the same window with kernel function probes ----
newuname_window kp "kprobe window" \
	'{intel_pt/aux-start-paused/k,kprobe:__x64_sys_newuname/aux-action=resume/,kretprobe:__x64_sys_newuname/aux-action=pause/}' \
	kprobe:__x64_sys_newuname

# ---- user and kernel: a whole run of a small static program, intel_pt//uk ----
# ptdump prints user addresses without leading zeros: an address is any hex
# field after the time.
if ! cc -static -nostdlib -no-pie -o tiny "$TOP/tests/cli/src/decode_tiny.c" 2>cc.err; then
	t_fail "build decode_tiny" "$(cat cc.err)"
elif ! cc -static -nostdlib -no-pie -o tiny "$TOP/tests/cli/src/decode_tiny.c" 2>cc.err; then
	t_fail "build decode_tiny" "$(cat cc.err)"
elif timed base_ms "$PTREC" record --emulate=system --kcore -q -o uk.data --emulate-truth uk.truth \
	-e 'intel_pt//uk' ./tiny 2 >uk.out 2>uk.err; then
	t_pass "uk: records"
	if r=$(insn_vs_truth uk); then
		t_pass "uk: instruction trace = truth ($r)"
	else
		t_fail "uk: instruction trace = truth" "$r"
	fi
	# The instruction after each SYSCALL is the kernel's entry; after SYSRET, user code.
	tr=$(awk '{ for (i = 1; i < NF; i++) if ($i ~ /:$/ && $(i + 1) ~ /^[0-9a-f]+$/ && length($(i + 1)) <= 16) {
			if (prev ~ /\tsyscall/) print "syscall->" ($(i + 2) ~ /^entry_SYSCALL_64/ ? "entry" : $(i + 1))
			if (prev ~ /\tsysretq/) print "sysret->" (length($(i + 1)) < 16 || $(i + 1) ~ /^0000/ ? "user" : $(i + 1))
			prev = $0; break } }' uk.insn | sort | uniq -c)
	t_match "uk: each syscall enters the kernel at entry_SYSCALL_64" ' syscall->entry$' "$tr"
	t_nomatch "uk: no syscall lands elsewhere" 'syscall->[0-9a-f]+$' "$tr"
	t_match "uk: the kernel returns to user code with SYSRET" ' sysret->user$' "$tr"
	t_nomatch "uk: no SYSRET lands elsewhere" 'sysret->[0-9a-f]+$' "$tr"
	# Exceptions and interrupts (page faults, the timer) are asynchronous branches:
	# every entry to a handler in the instruction trace is a 'hw int' branch.
	entries=$(grep -Ec ' asm_(exc|sysvec)_[a-z_]+\+0x0 ' uk.insn)
	ints=$("$PTDUMP" --branches uk.data 2>/dev/null |
		grep -Ec 'hw int .*=> *ffffffff[0-9a-f]+ asm_(exc|sysvec)_[a-z_]+\+0x0 ')
	if [ "$entries" -ge 1 ]; then
		t_eq "uk: each of the $entries handler entries is an asynchronous branch" "$entries" "$ints"
	else
		t_fail "uk: the run takes page faults and interrupts" "no handler entry in uk.insn"
	fi
	if ! command -v perf >/dev/null; then
		t_skip "uk: perf script on the export" "perf is not installed"
	elif r=$(perf_agrees uk); then
		t_pass "uk: perf script on the export shows the same calls ($r)"
	else
		t_fail "uk: perf script on the export shows the same calls" "$r"
	fi
	# A counter of the workload's user instructions: one sample per period.
	if "$PTREC" record --emulate=system -q -o cnt.data --emulate-truth cnt.truth \
		-e '{intel_pt//u,instructions/period=1000/u}' ./tiny 500 >cnt.out 2>cnt.err; then
		n=$(awk '$1 == "B" && length($3) < 16 { s += $5 } END { print s + 0 }' cnt.truth)
		t_eq "counter: one sample per 1000 user instructions ($n in the truth)" \
			"$(( n / 1000 ))" "$("$PTDUMP" --sideband cnt.data | grep -c ' SAMPLE .*instructions')"
	else
		t_fail "counter: records" "$(cat cnt.err)"
	fi
	# Traced all along (u and k), the workload leaves trace at each of the
	# guest's switches out: the kernel's order at a sched-out is SWITCH out,
	# then the AUX record of the piece it ends (perf_event_task_sched_out(),
	# then pt_event_stop()'s perf_aux_output_end()); and at its exit (the
	# truth's X), where perf_event_exit_task() schedules its events out.
	sb=$("$PTDUMP" --sideband uk.data 2>&1)
	t_eq "uk: each of the guest's switches out, and the exit, ends an AUX piece" \
		"$(grep -c '^\(S .* out\|X \)' uk.truth)" \
		"$(awk '$4 == "SWITCH" && $5 == "out" { o = 1; next } o && $4 == "AUX" { n++ } { o = 0 } END { print n + 0 }' <<<"$sb")"
	t_match "uk: user code is traced (_start)" '_start\+0x0 \(.*tiny\)' "$(cat uk.insn)"
	# uprobes in the guest's workload (a static non-PIE program; PIE programs
	# and libraries below): a window on outer(), one per iteration.
	if "$PTREC" record --emulate=system -q -o up.data --emulate-truth up.truth \
		-e '{intel_pt/aux-start-paused/u,uprobe:./tiny:outer/aux-resume/,uretprobe:./tiny:outer/aux-pause/}' \
		./tiny 3 >up.out 2>up.err; then
		if r=$(insn_vs_truth up); then
			t_pass "uprobe window: instruction trace = truth ($r)"
		else
			t_fail "uprobe window: instruction trace = truth" "$r"
		fi
		calls=$("$PTDUMP" --call-trace up.data 2>&1)
		t_eq "uprobe window: resumed at outer's entry once per iteration" 3 \
			"$(grep -c 'resume trigger uprobe:.* outer+0x0 ' <<<"$calls")"
		t_eq "uprobe window: paused at the return to _start once per iteration" 3 \
			"$(grep -c 'pause trigger uretprobe:.* _start+0x' <<<"$calls")"
		t_eq "uprobe window: the truth has 3 resumes" 3 "$(grep -c '^R ' up.truth)"
	else
		t_fail "uprobe window: records" "$(cat up.err)"
	fi
	# Snapshot mode through the model: the AUX area in overwrite mode, one
	# snapshot at the end; the whole run's trace fits in 64 KiB, so the
	# snapshot decodes to the whole truth.
	if "$PTREC" record --emulate=system -S64K --kcore -q -o snap.data --emulate-truth snap.truth \
		-e 'intel_pt/psb_period=0/uk' ./tiny 2 >snap.out 2>snap.err; then
		t_eq "-S: one snapshot, at the end" "1 at the end" \
			"$("$PTDUMP" --info snap.data | awk '/^snapshots:/ { on = 1; next }
				on && $1 ~ /^#/ { n++; w = $(NF - 2) " " $(NF - 1) " " $NF } END { print n " " w }')"
		if r=$(insn_vs_truth snap); then
			t_pass "-S: the snapshot's instruction trace = truth ($r)"
		else
			t_fail "-S: the snapshot's instruction trace = truth" "$r"
		fi
	else
		t_fail "-S: records" "$(cat snap.err)"
	fi
else
	t_fail "uk: records" "$(cat uk.err)"
fi

# ---- a dynamic program's user code, the vDSO included ----
# uname(1) calls into the vDSO; the decoder has the guest kernel's image
# (ptrec-guest copies its own, the one every guest process maps), not the
# host's, so the decode equals the truth through those calls too.
if "$PTREC" record --emulate=system -q -o dyn.data --emulate-truth dyn.truth -e 'intel_pt//u' \
	uname >dyn.out 2>dyn.err; then
	if r=$(insn_vs_truth dyn); then
		t_pass "uname, user code: instruction trace = truth ($r)"
	else
		t_fail "uname, user code: instruction trace = truth" "$r"
	fi
	t_match "uname, user code: the guest's vDSO is decoded" ' __vdso_[a-z_]+\+0x[0-9a-f]+ \(\[vdso\]\)' \
		"$(grep -m1 '\[vdso\]' dyn.insn)"
else
	t_fail "uname, user code: records" "$(cat dyn.err)"
fi

# ---- -d: the end of the duration reaches the guest's workload ----
# The model's kill() writes SIGTERM into the guest's mailbox; the guest's
# first process sends it to the workload, which sleeps a second at a time
# forever. -d counts from the workload's exec, after the boot: the workload
# makes at most 3 one-second sleeps (guest time runs with the host's clock
# under TCG), the last one cut short by the signal, and the whole run takes
# a boot and about a second more (against the uk run above, a boot and a
# short workload; the bound is generous for a busy machine).
if ! cc -static -nostdlib -no-pie -O1 -fno-stack-protector -o sleeper \
	"$TOP/tests/system/src/sleeper.c" 2>cc.err; then
	t_fail "build sleeper" "$(cat cc.err)"
else
	timed dur_ms timeout 600 "$PTREC" record --emulate=system --kcore -q -o dur.data \
		--emulate-truth dur.truth -e 'intel_pt//uk' -d 1 ./sleeper >dur.out 2>dur.err
	rc=$?
	t_eq "-d 1: the workload ends by SIGTERM in the guest (ptrec exits 143)" 143 "$rc"
	if [ -n "${base_ms:-}" ]; then
		if [ "$dur_ms" -le $(( 2 * base_ms + 60000 )) ]; then
			t_pass "-d 1: the run takes ${dur_ms} ms, a boot and a short run ${base_ms} ms"
		else
			t_fail "-d 1: the run ends about a second after the boot" \
				"${dur_ms} ms, against ${base_ms} ms for a boot and a short run"
		fi
	fi
	t_match "-d 1: the file is complete" '^size: .*; complete' \
		"$("$PTDUMP" --info dur.data 2>&1)"
	if r=$(insn_vs_truth dur); then
		t_pass "-d 1: instruction trace = truth ($r)"
	else
		t_fail "-d 1: instruction trace = truth" "$r"
	fi
	n=$(grep -c ' __x64_sys_nanosleep+0x0 ' dur.insn)
	if [ "$n" -ge 1 ] && [ "$n" -le 3 ]; then
		t_pass "-d 1: the workload slept $n times (one second each at most) before the signal"
	else
		t_fail "-d 1: the workload slept 1 to 3 times before the signal" "$n sleeps"
	fi
	t_eq "-d 1: the signal ends the last sleep: get_signal, then do_group_exit" \
		"get_signal do_group_exit" \
		"$(grep -oE ' (get_signal|do_group_exit)\+0x0 ' dur.insn | sed 's/+0x0//' | tail -2 | xargs)"
	# --snapshot-limit ends the recording as -d does: the workload says it
	# sleeps, SIGUSR2 takes the one snapshot allowed, and its SIGTERM
	# reaches the guest.
	"$PTREC" record --emulate=system -S64K --snapshot-limit 1 -q -o lim.data \
		-e 'intel_pt//uk' ./sleeper >lim.out 2>lim.err &
	pid=$!
	for _ in $(seq 600); do
		grep -q sleeping lim.out 2>/dev/null && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	sleep 1
	kill -USR2 "$pid" 2>/dev/null
	for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
	if kill -0 "$pid" 2>/dev/null; then
		kill -INT "$pid"
		t_fail "--snapshot-limit 1: the guest's workload stops after the snapshot" "still running after 150 s"
	fi
	wait "$pid"
	t_eq "--snapshot-limit 1: the workload ends by SIGTERM in the guest (ptrec exits 143)" 143 "$?"
	t_eq "--snapshot-limit 1: one snapshot, on the signal" "1 on SIGUSR2" \
		"$("$PTDUMP" --info lim.data | awk '/^snapshots:/ { on = 1; next }
			on && $1 ~ /^#/ { n++; w = $(NF - 1) " " $NF } END { print n + 0 " " w }')"
fi

# ---- uprobes on a PIE program and on a shared library ----
# The guest's loader picks the bases (ASLR on); the probe is a file's page,
# wherever a process maps it. Each process of the program prints where the
# guest put work() and libc's getppid() in it; each probe's samples must be
# at that address: in the parent (3 calls), its forked child (1 call, the
# parent's mappings) and a child that execs the program again (1 call, its
# own mappings), and the windows they open and close must decode to the
# tracer's truth.
# uprobe_window NAME LABEL WANT SPEC: records pieprobe 3 with SPEC; WANT is
# the field of the program's lines naming the probed function's address.
uprobe_window() {
	local n=$1 l=$2 want at
	if ! "$PTREC" record --emulate=system -q -o "$n.data" --emulate-truth "$n.truth" -e "$4" \
		./pieprobe 3 >"$n.out" 2>"$n.err"; then
		t_fail "$l: records" "$(cat "$n.err")"
		return 1
	fi
	if r=$(insn_vs_truth "$n"); then
		t_pass "$l: instruction trace = truth ($r)"
	else
		t_fail "$l: instruction trace = truth" "$r"
	fi
	# "TID ADDRESS COUNT" of the resumes each process should see, by its own line.
	want=$(awk -v w="$3" '$1 == "proc" { for (i = 3; i < NF; i++) if ($i == w) a[$2] = $(i + 1)
			if (!p) p = $2; else x = $2 }
		$1 == "child" && $2 != x { c = $2 }
		END { sub(/^0x/, "", a[p]); sub(/^0x/, "", a[x]); print p, a[p], 3; print c, a[p], 1; print x, a[x], 1 }' "$n.out" |
		sort -n | paste -sd';')
	calls=$("$PTDUMP" --call-trace "$n.data" 2>&1)
	at=$(awk '/ resume trigger uprobe:/ { for (i = 1; i < NF; i++) if ($i == "at") print $2, $(i + 1) }' <<<"$calls" |
		sed 's/ 0x/ /' | sort -n | uniq -c | awk '{ print $2, $3, $1 }' | paste -sd';')
	t_eq "$l: resumed where the guest put $3 in each process (3 in the parent, 1 in each child)" \
		"$want" "$at"
	t_eq "$l: each window paused at the function's return" \
		"$(grep -c ' resume trigger uprobe:' <<<"$calls")" "$(grep -c ' pause trigger uretprobe:' <<<"$calls")"
	t_eq "$l: the truth's resumes are the same" "$want" \
		"$(awk '$1 == "R" { print $2, $3 }' "$n.truth" | sort -n | uniq -c | awk '{ print $2, $3, $1 }' | paste -sd';')"
}
if ! cc -O1 -fPIE -pie -o pieprobe "$TOP/tests/system/src/pieprobe.c" 2>cc.err; then
	t_fail "build pieprobe" "$(cat cc.err)"
else
	uprobe_window pie "uprobe on a PIE program" work \
		'{intel_pt/aux-start-paused/u,uprobe:./pieprobe:work/aux-resume/,uretprobe:./pieprobe:work/aux-pause/}'
	# The symbol's address in the ELF plus the load bias of the program's
	# executable MMAP2 record (its start less the page of its segment's
	# p_vaddr: the PT_LOAD whose file page is the record's pgoff) is the
	# probe, in each process that has such a record (the exec's).
	sym=$(nm pieprobe | awk '$3 == "work" { print "0x" $1 }')
	got=
	while read -r pid start pgoff; do
		vaddr=
		while read -r off va; do
			[ $(( off & ~4095 )) -eq $(( pgoff )) ] && { vaddr=$(( va & ~4095 )); break; }
		done < <(readelf -lW pieprobe | awk '$1 == "LOAD" { print $2, $3 }')
		got="$got$pid $(printf '%x' $(( start - ${vaddr:-0} + sym )));"
	done < <("$PTDUMP" --sideband pie.data 2>&1 |
		awk '$4 == "MMAP" && $8 == "r-x" && $9 ~ /\/pieprobe$/ { split($3, t, "/"); split($5, r, "-"); print t[1], r[1], $7 }')
	t_eq "uprobe on a PIE program: at the ELF's work plus the MMAP2 record's load bias, in both execs" \
		"$(awk '$1 == "proc" { sub(/^0x/, "", $4); printf "%s %s;", $2, $4 }' pie.out)" "$got"
	libc=$(ldd pieprobe | awk '$1 == "libc.so.6" { print $3 }')
	uprobe_window lc "uprobe on libc's getppid" getppid \
		"{intel_pt/aux-start-paused/u,uprobe:$libc:getppid/aux-resume/,uretprobe:$libc:getppid/aux-pause/}"
	# A library the workload never loads: the run says so at its end.
	libm=${libc%/*}/libm.so.6
	if [ -n "$libc" ] && [ -e "$libm" ]; then
		"$PTREC" record --emulate=system -o um.data \
			-e "{intel_pt/aux-start-paused/u,uprobe:$libm:cos/aux-resume/}" ./pieprobe 1 >um.out 2>um.err
		t_match "uprobe on a library never mapped: said at the end" \
			'uprobe never mapped .*: [^ ]*/libm\.so\.6\+0x[0-9a-f]+$' "$(cat um.err)"
	fi
fi

# ---- a uretprobe on a function entered through a handler ----
# far()'s first instruction takes a page fault after the CALL (first call),
# then a SIGSEGV whose handler makes calls of its own and returns through
# rt_sigreturn (fourth call). A uretprobe hijacks the return address the
# CALL pushed, whatever ran in between: each window must close where far()
# returns, in user code, and each resume must open one.
if ! cc -O1 -fPIE -pie -fno-toplevel-reorder -o farprobe "$TOP/tests/system/src/farprobe.c" 2>cc.err; then
	t_fail "build farprobe" "$(cat cc.err)"
elif "$PTREC" record --emulate=system -q -o far.data --emulate-truth far.truth \
	-e '{intel_pt/aux-start-paused/u,uprobe:./farprobe:far/aux-resume/,uretprobe:./farprobe:far/aux-pause/}' \
	./farprobe >far.out 2>far.err; then
	t_eq "entry after a fault: the program made 4 calls, one through its SIGSEGV handler" \
		"calls 4 segv 1" "$(grep '^calls' far.out)"
	if r=$(insn_vs_truth far); then
		t_pass "entry after a fault: instruction trace = truth ($r)"
	else
		t_fail "entry after a fault: instruction trace = truth" "$r"
	fi
	t_eq "entry after a fault: the truth has a resume and a pause per call" "4 4" \
		"$(awk '$1 == "R" { r++ } $1 == "P" && $3 !~ /^ffff/ { p++ } END { print r + 0, p + 0 }' far.truth)"
	calls=$("$PTDUMP" --call-trace far.data 2>&1)
	t_eq "entry after a fault: each pause is at far()'s return to call_far()" \
		"4 call_far" \
		"$(awk '/ pause trigger uretprobe:/ { for (i = 1; i < NF; i++) if ($i == "at") { n++; s = $(i + 2); sub(/\+.*/, "", s); w[s] = 1 } }
			END { for (k in w) l = l " " k; print n + 0 l }' <<<"$calls")"
else
	t_fail "entry after a fault: records" "$(cat far.err)"
fi

# ---- the workload's children: a thread, a forked child, a child that execs ----
# Traced as perf's inherited events trace them: each task has its own
# stream, and the sideband has what perf_event_task(), perf_event_comm()
# and perf_event_mmap() write for it. The program prints the pids and tids
# the guest gave it; each task's decoded instructions equal its truth.
if ! cc -O1 -no-pie -pthread -o forker "$TOP/tests/system/src/forker.c" 2>cc.err; then
	t_fail "build forker" "$(cat cc.err)"
elif "$PTREC" record --emulate=system --kcore -q -o fk.data --emulate-truth fk.truth -e 'intel_pt//uk' \
	./forker >fk.out 2>fk.err; then
	read -r _ P < <(grep '^parent ' fk.out)
	read -r _ TH TP _ < <(grep '^thread ' fk.out)
	read -r _ A AP _ < <(grep '^child ' fk.out)
	read -r _ X XP _ < <(grep '^exec ' fk.out)
	t_eq "children: the program's pids (thread of the parent, children of the parent)" \
		"$P $P $P statuses 7 5" "$TP $AP $XP $(grep '^statuses' fk.out)"
	sb=$("$PTDUMP" --sideband fk.data 2>&1)
	# pid/tid, type and what follows, without the times and the AUX, SWITCH and MMAP records.
	tasks=$(awk '$4 ~ /^(FORK|EXIT|COMM|ITRACE_START)$/ { $1 = $2 = ""; sub(/^ +/, ""); print }' <<<"$sb")
	t_eq "children: FORK, ITRACE_START, EXIT of the thread (an EXIT names the real parent: init)" \
		"$P/$TH FORK from $P/$P;$P/$TH ITRACE_START;$P/$TH EXIT (parent 1/1)" \
		"$(grep "^$P/$TH " <<<"$tasks" | paste -sd';')"
	t_eq "children: FORK, ITRACE_START, EXIT of the forked child" \
		"$A/$A FORK from $P/$P;$A/$A ITRACE_START;$A/$A EXIT (parent $P/$P)" \
		"$(grep "^$A/$A " <<<"$tasks" | paste -sd';')"
	t_eq "children: FORK, ITRACE_START, COMM of the exec, EXIT of the child that execs" \
		"$X/$X FORK from $P/$P;$X/$X ITRACE_START;$X/$X COMM forker (exec);$X/$X EXIT (parent $P/$P)" \
		"$(grep "^$X/$X " <<<"$tasks" | paste -sd';')"
	t_eq "children: the workload's own records, its EXIT last" \
		"$P/$P COMM forker (exec);$P/$P ITRACE_START;$P/$P EXIT (parent 1/1)" \
		"$(grep "^$P/$P " <<<"$tasks" | paste -sd';')"
	t_eq "children: the tracer's truth has the same forks (pid ppid tid ptid)" \
		"$P $P $TH $P;$A $P $A $P;$X $P $X $P" "$(awk '$1 == "F" { print $2, $3, $4, $5 }' fk.truth | paste -sd';')"
	# One CPU: the model's SWITCH records follow the guest's switches of
	# the traced tasks (the truth's S lines), in at the workload's exec and
	# out at each task's exit (X), where its events are scheduled out.
	want=$(awk -v p="$P" 'BEGIN { w = p " in" } $1 == "S" { w = w ";" $2 " " $3 }
		$1 == "X" { w = w ";" $2 " out" } END { print w }' fk.truth)
	t_eq "children: the model's CPU switches as the guest's, task by task ($(grep -c '^[SX] ' fk.truth) in the truth)" \
		"$want" "$(awk '$4 == "SWITCH" { split($3, a, "/"); printf "%s%s %s", n++ ? ";" : "", a[2], $5 }' <<<"$sb")"
	# The exec'd program's mappings, as the guest kernel mapped them, after its COMM.
	mm=$(awk -v t="$X/$X" '$3 == t && $4 == "COMM" { c = 1 } $3 == t && $4 == "MMAP" && c { print $NF ~ /^\[/ ? $NF : $(NF - 2) }' <<<"$sb" |
		sed 's|.*/||' | LC_ALL=C sort | paste -sd' ')
	t_match "children: MMAP2 of the exec'd program, its loader and libc, after its COMM" \
		'^\[vdso\] forker ld-linux-x86-64\.so\.2 libc\.so\.6$' "$mm"
	t_eq "children: no MMAP2 of the forked child (it has its parent's mappings)" 0 \
		"$(awk -v t="$A/$A" '$3 == t && $4 == "MMAP"' <<<"$sb" | wc -l)"
	for t in "$P" "$TH" "$A" "$X"; do
		if r=$(insn_vs_truth fk "$t") && [ "${r%% *}" != 0 ]; then
			t_pass "children: task $t's instruction trace = truth ($r)"
		else
			t_fail "children: task $t's instruction trace = truth" "$r"
		fi
	done
	n=$(awk -v t="$A" '$2 == t && / spin\+0x0 \(.*\/forker\)/' fk.insn | wc -l)
	if [ "$n" -ge 1 ]; then
		t_pass "children: the forked child's own trace runs spin() ($n instructions at its entry)"
	else
		t_fail "children: the forked child's own trace runs spin()" "no spin+0x0 in task $A's trace"
	fi
	# Per-CPU mode (no --per-thread): the guest's one CPU has one stream,
	# which every traced task writes while it runs there, as hardware's
	# per-CPU AUX area; the decode above found each task in it through the
	# SWITCH records.
	t_eq "children, per CPU: one stream, the CPU's" "per CPU;# stream cpu 0" \
		"$("$PTDUMP" --info fk.data | awk '$1 == "streams:" { print $2, $3 }');$("$PTDUMP" --packets fk.data | grep '^# stream' | sed 's/:.*//')"
	"$PTDUMP" --packets fk.data >fk.pkt 2>/dev/null
	# PIP: in each PSB+ (ring 0 traced: OS=1), and where a traced task
	# loads new page tables of its own (the exec's MOV to CR3: the truth's
	# C lines).
	t_eq "children, per CPU: a PIP in each PSB+ and one at each CR3 load of the truth" \
		"$(( $(grep -c ' psb$' fk.pkt) + $(grep -c '^C ' fk.truth) ))" "$(grep -c ' pip ' fk.pkt)"
	# The CR3 of each task as the PIPs give it, decoded (ptdump --events
	# names the task the SWITCH records say runs; it reports a CR3 once
	# until it changes): the page tables of a process, so the thread has
	# its parent's, each child its own, and the exec'd child new ones at
	# its exec; page-aligned and in the guest's RAM.
	"$PTDUMP" --events fk.data 2>/dev/null | awk '$5 == "paging" { print $2, $7 }' | sort -u >fk.cr3
	cr3() { awk -v t="$1" '$1 == t { print $2; exit }' fk.cr3; }
	x0=$(awk '$1 == "C" { print "0x" $3 }' fk.truth)
	t_eq "children, per CPU: one CR3 load in the truth, the exec's, decoded in the exec'd child's trace" \
		"$X $x0" "$(awk '$1 == "C" { print $2 }' fk.truth) $(awk -v t="$X" -v c="$x0" '$1 == t && $2 == c { print $2 }' fk.cr3)"
	bad=$(while read -r t v; do (( v % 4096 || v <= 0 || v >= 256 << 20 )) && echo "$t $v"; done <fk.cr3)
	t_eq "children, per CPU: each PIP's CR3 is a page of guest RAM" "" "$bad"
	if [ -n "$(cr3 "$P")" ] && [ -n "$(cr3 "$A")" ] && [ "$(cr3 "$P")" != "$(cr3 "$A")" ] &&
		[ "$(cr3 "$P")" != "$x0" ] && ! grep -q "^$TH " fk.cr3; then
		t_pass "children, per CPU: the parent's, the forked child's and the exec's CR3 differ; the thread's is its parent's ($(paste -sd' ' fk.cr3))"
	else
		t_fail "children, per CPU: the parent's, the forked child's and the exec's CR3 differ; the thread's is its parent's" "$(cat fk.cr3)"
	fi
	# User code only: the exec'd program's code comes after a stretch of
	# kernel code without packets; its trace still decodes against the
	# mappings of its exec.
	if "$PTREC" record --emulate=system -q -o fku.data --emulate-truth fku.truth -e 'intel_pt//u' \
		./forker >fku.out 2>fku.err; then
		bad=
		for t in $(awk '$1 == "B" { print $2 }' fku.truth | sort -u); do
			r=$(insn_vs_truth fku "$t") || bad="$bad task $t: $r;"
		done
		if [ -z "$bad" ] && [ "$(awk '$1 == "B" { print $2 }' fku.truth | sort -u | wc -l)" -eq 4 ]; then
			t_pass "children, user code: each of the 4 tasks' instruction trace = truth"
		else
			t_fail "children, user code: each of the 4 tasks' instruction trace = truth" "${bad:-not 4 tasks}"
		fi
		# Ring 0 not traced (OS=0): the SDM gives no PIP, in PSB+ or at a MOV to CR3.
		t_eq "children, user code: no PIP" 0 "$("$PTDUMP" --packets fku.data | grep -c ' pip ')"
		# --follow of the recording as it grows: ptrec embeds the guest's
		# programs and its vdso when the recording ends, so the rounds write
		# nothing at or after a call into code not in the file yet (its
		# name comes from that code), and the decode after the end writes
		# the rest: the same bytes as a decode of the whole file.
		for v in call-trace events; do
			grown_follow fku "--$v"
			t_eq "children, user code: --follow --$v of the growing file: exit status" 0 "$?"
			t_eq "children, user code: --follow --$v: the same bytes as a decode after the end" "" \
				"$("$PTDUMP" --$v fku.data 2>/dev/null | cmp - fku.fol 2>&1)"
			t_eq "children, user code: --follow --$v: rounds while the file grew" 1 \
				"$(($(grep -c '^ptdump: --follow: round' fku.fol.err) >= 3))"
		done
	else
		t_fail "children, user code: records" "$(cat fku.err)"
	fi
	# --per-thread (events not inherited, as ptrec opens them then): the
	# workload's own stream, from the guest's x86 machine as per CPU,
	# decoding to its truth; its children's trace reaches no event.
	if "$PTREC" record --emulate=system --per-thread --kcore -q -o fkt.data --emulate-truth fkt.truth \
		-e 'intel_pt//uk' ./forker >fkt.out 2>fkt.err; then
		read -r _ Q < <(grep '^parent ' fkt.out)
		t_eq "children, per thread: the workload's stream alone, the emulated machine's" \
			"per thread;GenuineIntel 1 CPUs;# stream tid $Q" \
			"$("$PTDUMP" --info fkt.data | awk '$1 == "streams:" { s = $2 " " $3 }
				$1 == "machine:" { m = $3 " " $(NF - 3) " " $(NF - 2) } END { print s ";" m }' |
				tr -d ,);$("$PTDUMP" --packets fkt.data | grep '^# stream' | sed 's/:.*//' | paste -sd';')"
		if r=$(insn_vs_truth fkt "$Q") && [ "${r%% *}" != 0 ]; then
			t_pass "children, per thread: the workload's instruction trace = truth ($r)"
		else
			t_fail "children, per thread: the workload's instruction trace = truth" "$r"
		fi
	else
		t_fail "children, per thread: records" "$(cat fkt.err)"
	fi
else
	t_fail "children: records" "$(cat fk.err)"
fi

t_done
