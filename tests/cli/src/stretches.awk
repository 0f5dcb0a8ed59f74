# awk -F'\t' -f stretches.awk TRUTH.exp PTDUMP.out
# Matches each stretch of ptdump's call trace (the lines between its gap
# lines) with a contiguous run of the ground truth's calls, each stretch
# after the one before. Names only: a stretch starts at some depth of the
# truth's stack, so indentation and the truth's "[+N]" depth marks go.
# Prints "STRETCH CALLS FIRST LAST" (truth line numbers) or
# "STRETCH CALLS miss" per stretch, then "truth N".
function name(s) {
	sub(/^[^\t]*\t */, "", s)
	sub(/^\[\+[0-9]+\] /, "", s)
	sub(/ +$/, "", s)
	return s
}
FNR == NR { t[++nt] = name($0); next }
/^\[gap/ { flush(); next }
index($0, "\t") {
	r = $0
	sub(/  \((resumed|paused) by .*\)$/, "", r)
	split(r, f, "\t")
	g[++ng] = name("x\t" f[2])
}
END { flush(); print "truth", nt }
function flush(   p, i) {
	if (!ng)
		return
	k++
	for (p = from + 1; p + ng - 1 <= nt; p++) {
		for (i = 1; i <= ng && t[p + i - 1] == g[i]; i++)
			;
		if (i > ng)
			break
	}
	if (p + ng - 1 <= nt) {
		print k, ng, p, p + ng - 1
		from = p + ng - 1
	} else
		print k, ng, "miss"
	ng = 0
}
