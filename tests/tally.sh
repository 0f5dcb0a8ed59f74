# The closing tally of tests/run-all.sh and tests/run-arm64.sh (sourced).
# tally NAME RC LOG SECS: counts a suite from its log's last "# counts: P F S"
# line; a suite that exited non-zero without failures counts as one failure.
# tally_end: prints the failed checks (a few lines each, and the head of any
# sanitizer report), then "N passed, N failed, N skipped"; fails if any failed.
total_p=0 total_f=0 total_s=0
failed_suites=()
failed_lines=()

tally() {
	local name=$1 rc=$2 log=$3 secs=$4 line p f sk
	line=$(grep -a '^# counts: ' "$log" | tail -n 1)
	if [ -n "$line" ]; then
		read -r _ _ p f sk <<<"$line"
	else
		p=0 f=0 sk=0
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "   suite $name exited with status $rc"
		f=1
	fi
	total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + sk))
	if [ "$f" -ne 0 ]; then
		failed_suites+=("$name")
		# The failed checks, repeated at the end where a cut log still has them.
		# A sanitizer's report comes before its FAIL: its first lines and frames too.
		mapfile -t -O "${#failed_lines[@]}" failed_lines < <(grep -a -A 3 '^FAIL' "$log" | head -n 40 | sed "s|^|   $name: |")
		mapfile -t -O "${#failed_lines[@]}" failed_lines < <(grep -a -A 14 -E '^==[0-9]+==ERROR: |runtime error: ' "$log" | head -n 45 | sed "s|^|   $name: |")
	fi
	echo "   $name: $p passed, $f failed, $sk skipped (${secs}s)"
}

tally_end() {
	if [ "${#failed_suites[@]}" -ne 0 ]; then
		printf '%s\n' "${failed_lines[@]}"
		echo "failing suites: ${failed_suites[*]}"
	fi
	echo "$total_p passed, $total_f failed, $total_s skipped"
	[ "$total_f" -eq 0 ]
}
