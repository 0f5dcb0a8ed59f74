# Helpers that put perf script's and ptdump's branch lists and call traces
# in one form, and compare call lists (sourced by tests/cli/perfexport.sh
# and tests/hw/check-hw.sh; perfexport.sh says what is mapped and why).
# perf script --itrace=b -F tid,flags,ip,addr -> tid|kind|from|to
norm_perf_br() {
	awk '{ n = 0; for (i = 1; i <= NF; i++) if ($i == "=>") n = i;
	       if (!n) next; k = $2; for (i = 3; i < n - 1; i++) k = k " " $i;
	       if (k == "tr end async") k = "tr end";
	       printf "%s|%s|%s|%s\n", $1, k, $(n - 1), $(n + 1) }'
}
# ptdump --branches -> the same (a syscall pairs with its thread's next tr end)
norm_ptdump_br() {
	awk 'function flush(t) { if (t in pend) { print t "|syscall|" pend[t] "|0"; delete pend[t] } }
	     { for (i = 1; i <= NF; i++) if ($i ~ /:$/) break; tid = $(i - 1); k = $(i + 1); j = i + 2;
	       if (k == "tr" || k == "ind" || k == "hw" || k == "tx") { k = k " " $(i + 2); j++ }
	       from = $j; to = ""; for (m = j; m <= NF; m++) if ($m == "=>") to = $(m + 1);
	       if (k == "--") next;
	       if (k == "ind jmp") k = "jmp";
	       if (k == "tr end" && (tid in pend) && pend[tid] == from) {
		       print tid "|tr end syscall|" from "|0"; delete pend[tid]; next }
	       flush(tid);
	       if (k == "tr strt") { print tid "|tr strt|0|" from; next }
	       if (k == "tr end") { print tid "|tr end|" from "|0"; next }
	       if (k == "syscall" && to == "0") { pend[tid] = from; next }
	       print tid "|" k "|" from "|" to }
	     END { for (t in pend) print t "|syscall|" pend[t] "|0" }'
}
# call-trace lines with a flags column -> flags|tid|binary|indent+name
norm_calls() {
	sed -nE 's/^ *[^ ]+ +([0-9]+) +(\[[-0-9]+\] +)?[0-9.]+: +([a-z][a-z ]*[a-z]) +\((.*[^ ]) *\)\t(.*[^ ]) *$/\3|\1|\4|\5/p;
		 s/^ *[^ ]+ +([0-9]+) +(\[[-0-9]+\] +)?[0-9.]+: +([a-z][a-z ]*[a-z]) +\((.*[^ ]) *\)\t *$/\3|\1|\4|/p'
}
# Code no symbol names: perf shows its address, ptdump object+0xOFF; both
# become "[unnamed]" for comparison. perf right-aligns an address shorter
# than 16 digits in a 16-column field: that padding is not call depth.
unnamed() {
	awk 'BEGIN { FS = OFS = "|" }
	{ f = $NF; match(f, /^ */); ind = RLENGTH; nm = substr(f, ind + 1)
	  if (nm ~ /^[0-9a-f]+$/ && length(nm) >= 8) {
		if (length(nm) < 16) ind -= 16 - length(nm)
		$NF = sprintf("%*s[unnamed]", ind, "")
	  } else if (nm ~ /^[^ |]+\+0x[0-9a-f]+$/) {
		$NF = sprintf("%*s[unnamed]", ind, "")
	  }
	  print }'
}
# call-trace lines without flags -> tid|binary|indent+name
norm_calls_noflags() {
	sed -nE 's/^ *[^ ]+ +([0-9]+) +(\[[-0-9]+\] +)?[0-9.]+: +\((.*[^ ]) *\)\t(.*[^ ]) *$/\1|\3|\4/p'
}
# Regroups lines by thread (field $1), each thread's lines in their order.
by_tid() { awk -F'|' -v k="$1" '{print $k "|" NR "|" $0}' | sort -t'|' -k1,1n -k2,2n | cut -d'|' -f3-; }
# Compares two call lists: depth always, names unless a side names a PLT stub.
# ptdump writes frames deeper than 40 levels at 40 with "[+N] " before the name.
# Where a thread execs, ptdump's depth restarts at 0 and perf's goes on over
# the old program's frames: a call ptdump shows at depth 1 where perf shows
# it deeper sets that thread's offset (an exec restart); the lines after it
# compare with the offset. The summary counts the restarts; @3 (default 0)
# is the most allowed (the execs of the recording).
cmp_calls() {
	awk -F'|' -v maxr="${3:-0}" 'NR == FNR { a[FNR] = $0; na = FNR; next }
	function depth(s,   n, nm, k) { match(s, /^ */); n = RLENGTH; nm = substr(s, n + 1);
		if (match(nm, /^\[\+[0-9]+\] /)) { k = substr(nm, 3, RLENGTH - 4) + 0; return n / 4 + k }
		if (nm ~ /^[0-9a-f]+$/ && length(nm) < 16) n -= 16 - length(nm); return n / 4 }
	function name(s) { sub(/^ */, "", s); sub(/^\[\+[0-9]+\] */, "", s); return s }
	{ nb = FNR; split(a[FNR], p, "|"); t = $2
	  if (p[1] == $1 && p[2] == $2 && p[3] == $3 && depth($4) == 1 && depth(p[4]) > 1 + off[t] &&
	      name(p[4]) == name($4) && restarts < maxr) { off[t] = depth(p[4]) - 1; restarts++ }
	  if (p[1] != $1 || p[2] != $2 || p[3] != $3 || depth(p[4]) != depth($4) + off[t]) { bad++; if (bad <= 5) print "line " FNR ": perf " a[FNR] " / ptdump " $0; next }
	  if (name(p[4]) ~ /@plt$/ || name($4) ~ /@plt$/) { plt++; next }
	  if (name(p[4]) != name($4)) { bad++; if (bad <= 5) print "line " FNR ": perf " a[FNR] " / ptdump " $0; next }
	  same++ }
	END { if (na != nb) { print "lengths differ: perf " na ", ptdump " nb; bad++ }
	      printf "%d calls: %d same, %d PLT calls compared by depth, %d exec restarts, %d differ\n", nb, same, plt, restarts, bad; exit bad != 0 }' "$1" "$2"
}
