#!/usr/bin/env bash
# ptdump --perfetto and --folded in a real viewer: speedscope (npm package,
# installed into the build directory from npm's cache or registry) loaded in
# headless Chromium opens both outputs of a software-tracer recording, and
# the page's DOM must name the program's functions. The screenshots stay in
# $B/test-artifacts/ for a look. Skips where chromium or npm is missing
# (scripts/install-deps.sh installs both and fills npm's cache).
. "$(dirname "$0")/src/paths.sh"
SPEEDSCOPE_VERSION=1.25.0
ART=$BD/test-artifacts
VIEWER=$BD/viewer

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
	t_skip "viewer tests" "chromium is not installed (apt-get install chromium)"
	t_done; exit
fi
if ! command -v qemu-x86_64 >/dev/null || ! command -v npm >/dev/null; then
	t_skip "viewer tests" "qemu-x86_64 or npm is not installed"
	t_done; exit
fi
SS=$VIEWER/node_modules/speedscope/dist/release
if [ ! -f "$SS/index.html" ]; then
	mkdir -p "$VIEWER"
	if ! npm install --prefer-offline --no-audit --no-fund --prefix "$VIEWER" \
		"speedscope@$SPEEDSCOPE_VERSION" >"$T_TMP/npm.log" 2>&1; then
		t_skip "viewer tests" "speedscope $SPEEDSCOPE_VERSION could not be installed: $(tail -n 2 "$T_TMP/npm.log")"
		t_done; exit
	fi
fi
mkdir -p "$ART"
cd "$T_TMP" || exit 1

"$PTREC" record --emulate -q -o calls.data -- "$PROGS/calls" 2 >/dev/null 2>rec.err ||
	{ t_fail "record calls" "$(cat rec.err)"; t_done; exit; }
t_run "--perfetto" 0 "$PTDUMP" --perfetto calls.json calls.data
t_run "--folded" 0 "$PTDUMP" --folded calls.data
echo "$out" >calls.folded

# show NAME FILE: speedscope's page with FILE loaded (as its command-line
# tool does it: a script that hands the file over, named in the URL), in
# the sandwich view, whose table lists the functions as DOM rows. Writes
# NAME.dom and $ART/viewer-NAME.png.
show() {
	local name=$1 file=$2 url
	: >"$name.chrome.err"
	printf 'speedscope.loadFileFromBase64(%s, "%s")\n' "\"$file\"" "$(base64 -w0 "$file")" >"$name.js"
	url="file://$SS/index.html#localProfilePath=$T_TMP/$name.js&view=sandwich"
	# a profile of its own for the browser, and no sandbox (we run as root)
	local flags=(--headless --no-sandbox --disable-gpu --allow-file-access-from-files
		--user-data-dir="$T_TMP/chrome-$name" --virtual-time-budget=20000)
	# a tall window: the table renders only the rows in view. On a busy
	# machine the DOM can be taken while speedscope still shows its loading
	# clock, or its table's heading without its rows yet; then take it again
	# (a few times at most) until a row names main.
	local try
	for try in 1 2 3 4 5; do
		timeout 120 "$CHROMIUM" "${flags[@]}" --window-size=1400,6000 --dump-dom "$url" >"$name.dom" 2>>"$name.chrome.err"
		sed 's/<[^>]*>/\n/g' "$name.dom" | grep -qE '^main( \{.*)?$' && break
		sleep "$try"
	done
	timeout 120 "$CHROMIUM" "${flags[@]}" --window-size=1400,900 --screenshot="$ART/viewer-$name.png" "$url" \
		>/dev/null 2>>"$name.chrome.err"
}

for v in perfetto:calls.json folded:calls.folded; do
	name=${v%%:*} file=${v#*:}
	show "$name" "$file"
	text=$(sed 's/<[^>]*>/\n/g' "$name.dom" | grep -v '^[[:space:]]*$')
	t_match "speedscope opens the --$name output: its file name is the title" "$file" "$text"
	for f in main sw leaf rec cmp; do
		# (speedscope appends a Chrome event's args to its name)
		t_match "speedscope shows $f from the --$name output" "^$f( \\{.*)?\$" "$text"
	done
	if [ "$name" = folded ]; then
		# the sandwich table's rows: total, self, name; the weights are instructions
		t_eq "speedscope: total and self instructions of main, sw, rec, leaf = --report's" \
			"$("$PTDUMP" --report --format=json calls.data | python3 -c 'import json,sys
r = {o["name"]: o for o in map(json.loads, sys.stdin) if o.get("type") == "function"}
print(" ".join("%s:%d/%d" % (f, r[f]["insns_total"], r[f]["insns_self"]) for f in ("main", "sw", "rec", "leaf")))')" \
			"$(printf '%s\n' "$text" | python3 -c 'import sys
t = [l.strip() for l in sys.stdin]
rows = {t[i + 2]: (t[i], t[i + 1]) for i in range(t.index("Symbol Name") + 1, len(t) - 2, 3)}
num = lambda s: int(s.split(" ")[0].replace(",", ""))
print(" ".join("%s:%d/%d" % (f, num(rows[f][0]), num(rows[f][1])) for f in ("main", "sw", "rec", "leaf")))')"
	fi
	t_nomatch "speedscope: no import error for --$name" 'Something went wrong|Unrecognized format|Failed to' "$text"
	if [ -s "$ART/viewer-$name.png" ]; then
		t_pass "screenshot of the --$name view kept: $ART/viewer-$name.png"
	else
		t_fail "screenshot of the --$name view" "$(tail -n 5 "$name.chrome.err")"
	fi
done
t_done
