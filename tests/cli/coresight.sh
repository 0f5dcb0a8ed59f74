#!/usr/bin/env bash
# ptdump on CoreSight snapshot directories (ETMv4/ETE, decoded with OpenCSD):
# instruction ranges against OpenCSD's own trc_pkt_lister, call traces,
# branches, instructions, statistics, damaged trace and bad directories.
# The snapshots are written here, byte by byte: an A64 program and the ETMv4
# packets of its run (A-sync, trace info, trace on, address with context,
# atoms, addresses).
. "$(dirname "$0")/lib.sh"
SCHEMA=$(cd "$(dirname "$0")/../.." && pwd)/docs/ptdump-json.schema.json

if ! "$PTDUMP" --help 2>&1 | grep -q -- '--snapshot'; then
	t_skip "coresight" "ptdump has no --snapshot option in this build"
	t_done; exit
fi
# OpenCSD 1.3 leaks the 32-byte callback object of every decode tree it destroys,
# and the address element a mispredict erases from its stack (mispredictAtom()).
printf 'leak:ocsd_dt_set_gen_elem_outfn\nleak:EtmV4P0Stack::createAddrElem\n' >"$T_TMP/lsan.supp"
export LSAN_OPTIONS="suppressions=$T_TMP/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
cd "$T_TMP" || exit 1

# mov x0,#0; bl f; cmp x0,#2; b.ne 400004; b .; f: add x0,x0,#1; ret  (at 0x400000)
code='\x00\x00\x80\xd2\x04\x00\x00\x94\x1f\x08\x00\xf1\xc1\xff\xff\x54\x00\x00\x00\x14\x00\x04\x00\x91\xc0\x03\x5f\xd6'
async='\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80'
start="$async"'\x01\x00\x04\x85\x00\x00\x40\x00\x00\x00\x00\x00\x30'
# bl E, ret E + addr 400008, b.ne E, bl E, ret E + addr, b.ne N, b E
atoms='\xf7\xf7\x95\x02\xf7\xf7\xf7\x95\x02\xf6\xf7'

# mksnap DIR FORMAT TYPE TRACE-BYTES [TRCIDR8 (the speculation depth)]
mksnap() {
	mkdir -p "$1"
	printf '[snapshot]\nversion=1.0\n\n[device_list]\ndevice0=cpu_0.ini\ndevice1=ETM_0.ini\n\n[trace]\nmetadata=trace.ini\n' >"$1/snapshot.ini"
	printf '[device]\nname=cpu_0\nclass=core\ntype=Cortex-A53\n\n[dump1]\nfile=mem.bin\naddress=0x400000\nlength=0x1c\n' >"$1/cpu_0.ini"
	printf '[device]\nname=ETM_0\nclass=trace_source\ntype=%s\n\n[regs]\nTRCCONFIGR=0x1\nTRCTRACEIDR=0x10\nTRCIDR0=0x28000EA1\nTRCIDR1=0x4100F403\nTRCIDR2=0x488\nTRCIDR8=%s\nTRCDEVARCH=0x47705A13\n' "$3" "${5:-0x0}" >"$1/ETM_0.ini"
	printf '[trace_buffers]\nbuffers=buffer0\n\n[buffer0]\nname=ETB_0\nfile=trace.bin\nformat=%s\n\n[source_buffers]\nETM_0=ETB_0\n\n[core_trace_sources]\ncpu_0=ETM_0\n' "$2" >"$1/trace.ini"
	printf "$code" >"$1/mem.bin"
	printf "$4" >"$1/trace.bin"
}

# trc_pkt_lister's decoded ranges in ptdump --ranges form.
lister() {
	{ (cd "$1" && trc_pkt_lister -ss_dir . -decode -logstdout 2>/dev/null); } 2>/dev/null |
		sed -nE 's/^(Idx:[0-9]+; ID:[0-9a-f]+;) OCSD_GEN_TRC_ELEM_INSTR_RANGE\((exec range=0x[0-9a-f]+:\[0x[0-9a-f]+\] num_i\([0-9]+\)).*/\1 \2/p'
}

mksnap raw source_data ETM4 "$start$atoms"
mksnap ete source_data ETE "$start$atoms"

# 1. Instruction ranges: the same as OpenCSD's own lister.
t_run "ranges" 0 "$PTDUMP" --snapshot raw --ranges
t_eq "ranges: 7 ranges" 7 "$(grep -c 'exec range' <<<"$out")"
t_match "ranges: the call" '^Idx:25; ID:10; exec range=0x400000:\[0x400008\] num_i\(2\)$' "$out"
if command -v trc_pkt_lister >/dev/null; then
	t_eq "ranges: as trc_pkt_lister" "$(lister raw)" "$out"
	t_run "ranges ETE" 0 "$PTDUMP" --snapshot ete --ranges
	t_eq "ranges ETE: as trc_pkt_lister" "$(lister ete)" "$out"
else
	t_skip "ranges: as trc_pkt_lister" "trc_pkt_lister (libopencsd-bin) is not installed"
fi

# 2. The views above the decoder.
t_run "branches" 0 "$PTDUMP" --snapshot raw --branches
t_eq "branches: 2 calls" 2 "$(grep -c '^ *cpu_0 .* call ' <<<"$out")"
t_eq "branches: 2 returns" 2 "$(grep -c ' return ' <<<"$out")"
t_match "branches: the taken b.ne" '40000c .*=> +400004' "$out"
t_run "call trace" 0 "$PTDUMP" --snapshot raw --call-ret-trace
t_eq "call trace: calls and returns" 4 "$(grep -cE ' (call|return) ' <<<"$out")"
t_run "stats" 0 "$PTDUMP" --snapshot raw --stats
t_match "stats: 12 instructions" 'instructions: 12$' "$out"
# --info, as text and as JSON lines (the schema's info view): the same numbers.
t_run "info" 0 "$PTDUMP" --info --snapshot raw
info_txt=$out
t_run "info --format=json" 0 "$PTDUMP" --info --format=json --snapshot raw
t_eq "info --format=json: the text view's devices, sources, buffers and dumps" \
	"$(sed -nE 's/^devices: +([0-9]+) device files, ([0-9]+) trace sources.*/\1 \2/p; s/^buffers: +([0-9]+),.*/\1/p; s/^memory: +([0-9]+) dump regions.*/\1/p' <<<"$info_txt" | tr '\n' ' ')" \
	"$(python3 -c 'import json, sys
for l in sys.stdin.read().splitlines()[1:]:
    o = json.loads(l)
    if o["type"] == "snapshot":
        print(o["devices"], o["sources"], o["buffers"], o["dumps"], end=" ")' <<<"$out")"
if /usr/bin/python3 -c 'import jsonschema' 2>/dev/null; then
	t_run "info --format=json: valid against the schema" 0 /usr/bin/python3 -c 'import json, sys, jsonschema
defs = json.load(open(sys.argv[1]))["$defs"]
lines = sys.stdin.read().splitlines()
assert json.loads(lines[0]) == {"schema": "ptdump/1", "view": "info"}
v = jsonschema.Draft202012Validator({"$ref": "#/$defs/info", "$defs": defs})
for l in lines[1:]:
    v.validate(json.loads(l))' "$SCHEMA" <<<"$out"
fi
t_run "insn trace" 0 "$PTDUMP" --snapshot raw --insn-trace
t_match "insn trace: A64 bl" 'bl[[:space:]]+#?0x400014' "$out"
t_match "insn trace: A64 ret" '[[:space:]]ret' "$out"

# 3. Damage: a reserved header at offset 26; decoding resumes at the next A-sync.
mksnap dmg source_data ETM4 "$start"'\xf7\x08\x08\xf7'"$async"'\x01\x00\x85\x00\x00\x40\x00\x00\x00\x00\x00\x30\xf7'
t_run "damaged: decodes" 0 "$PTDUMP" --snapshot dmg --ranges
t_match "damaged: the error and its offset" '^Idx:26; ID:10; ERROR: malformed ETM packet' "$out"
t_match "damaged: the range after the A-sync" '^Idx:53; ID:10; exec range=0x400000:\[0x400008\]' "$out"

# 3b. Damage that crashes OpenCSD 1.3's ETMv4 decoder (coresight_guard.h): a
# mispredict with an address but no atom behind it (offset 29), and an
# exception committed without its address (offset 28). ptdump says so at the
# packet and decodes on from the next A-sync.
mksnap mispred source_data ETM4 "$start"'\xf7\xf7\x95\x02\x30'"$async"'\x01\x00\x85\x00\x00\x40\x00\x00\x00\x00\x00\x30\xf7'
t_run "mispredict without an atom: decodes" 0 "$PTDUMP" --snapshot mispred --ranges
t_eq "mispredict without an atom: the ranges, the error at its packet, the range after the A-sync" \
	"Idx:25; ID:10; exec range=0x400000:[0x400008] num_i(2)
Idx:26; ID:10; exec range=0x400014:[0x40001c] num_i(2)
Idx:29; ID:10; ERROR: malformed ETM packet (a mispredict packet with no atom to correct): waiting for A-sync
Idx:54; ID:10; exec range=0x400000:[0x400008] num_i(2)" "$out"
if command -v trc_pkt_lister >/dev/null; then
	t_eq "mispredict without an atom: the ranges before it as trc_pkt_lister's (which stops there)" \
		"$(lister mispred | grep -v '^Idx:54;')" "$(grep 'exec range' <<<"$out" | grep -v '^Idx:54;')"
fi
# The same mispredict from a unit that speculates (TRCIDR8 4): the atom is
# still there to correct, OpenCSD decodes it, and so does ptdump, unguarded.
mksnap spec source_data ETM4 "$start"'\xf7\xf7\x95\x02\x30\xf7\xf7\xf7\xf7\xf7\xf7' 0x4
t_run "speculation: a mispredict of an atom behind an address" 0 "$PTDUMP" --snapshot spec --ranges
t_nomatch "speculation: nothing kept from the decoder" 'malformed' "$out"
if command -v trc_pkt_lister >/dev/null; then
	t_eq "speculation: the ranges of trc_pkt_lister ($(lister spec | wc -l))" "$(lister spec)" \
		"$(grep 'exec range' <<<"$out")"
fi
mksnap exc source_data ETM4 "$start"'\xf7\x95\x00\x06\x02\x2d\x01'"$async"'\x01\x00\x85\x00\x00\x40\x00\x00\x00\x00\x00\x30\xf7'
t_run "exception committed without its address: decodes" 0 "$PTDUMP" --snapshot exc --call-ret-trace
t_match "exception committed without its address: the error at its packet" \
	'offset 0x1e .*malformed ETM packet \(an exception packet without its address\)' "$out"
t_run "exception committed without its address: every view" 0 sh -c \
	'for v in --call-trace --branches --insn-trace --stats --events --ranges; do "$0" --snapshot exc $v >/dev/null || exit 1; done' "$PTDUMP"

# 4. Bad input: a clear message and a failure exit, never a crash.
mkdir -p empty
t_run "no snapshot.ini" 1 "$PTDUMP" --snapshot empty --call-trace
t_match "no snapshot.ini: says which file" 'snapshot\.ini' "$err"
t_nomatch "no snapshot.ini: no crash" 'Segmentation|Sanitizer|core dumped' "$err"
mksnap bad source_data ETM4 "$start$atoms"
printf '[trace_buffers]\nbuffers=buffer0\n[buffer0]\nname=ETB_0\nfile=trace.bin\nformat=zip\n' >bad/trace.ini
t_run "unknown buffer format" 1 "$PTDUMP" --snapshot bad --call-trace
t_match "unknown buffer format: named" 'unknown format "zip"' "$err"
mksnap junk source_data ETM4 '\xf6\xf7\xf6\xf7\xf6\xf7\xf6\xf7'
t_run "no A-sync: still exits 0" 0 "$PTDUMP" --snapshot junk --ranges
t_match "no A-sync: reported" 'no A-sync in 8 bytes' "$out"

# 7. One file named by many dumps is read and held once (ptdump(1), RESOURCES):
#    a 4 MiB file at 1020 addresses costs about 4 MiB, not 4 GiB, and the
#    ranges are those of the snapshot without it.
cp -r raw many
head -c 4194304 /dev/zero >many/big.bin
for i in $(seq 1 1020); do
	printf '\n[dump_big%d]\nfile=big.bin\naddress=0x%x\n' "$i" $((0x10000000 + i * 0x1000000)) >>many/cpu_0.ini
done
/usr/bin/time -f '%M %e' -o many.time "$PTDUMP" --snapshot many --ranges >many.out 2>many.err
t_eq "1020 dumps of one file: ranges as without them" "$("$PTDUMP" --snapshot raw --ranges 2>/dev/null)" "$(cat many.out)"
read -r rss secs <many.time
t_match "1020 dumps of one 4 MiB file: peak memory under 256 MiB ($rss KiB)" '^[0-9]+$' "$rss"
[ "${rss:-0}" -lt 262144 ] && t_pass "memory bounded by the distinct files" || t_fail "memory bounded by the distinct files" "$rss KiB"

# 8. Directories as OpenCSD's own tools accept them: trace.ini naming a
#    source no device .ini defines (skipped with a note), a dump without
#    length= (to the end of the file); and a dump with offset= and no length=
#    (trc_pkt_lister 1.3 cannot read that one: it takes the whole file's length
#    from the offset on, past the end; compared with the plain snapshot).
cp -r raw lax
sed -i 's/^ETM_0=ETB_0$/ETM_0=ETB_0\nETM_1=ETB_0/; s/^cpu_0=ETM_0$/cpu_0=ETM_0\ncpu_1=ETM_1/' lax/trace.ini
sed -i '/^length=/d' lax/cpu_0.ini
t_run "undefined source, dump without length: decoded" 0 "$PTDUMP" --snapshot lax --ranges
t_eq "... the same ranges as the plain snapshot" "$("$PTDUMP" --snapshot raw --ranges 2>/dev/null)" "$out"
t_match "... the undefined source is named in a note" 'ETM_1 skipped' "$err"
if command -v trc_pkt_lister >/dev/null; then
	t_eq "... as trc_pkt_lister decodes it" "$(lister lax)" "$out"
else
	t_skip "undefined source: as trc_pkt_lister" "trc_pkt_lister (libopencsd-bin) is not installed"
fi
cp -r lax lax16
{ printf 'sixteen bytes...'; cat raw/mem.bin; } >lax16/mem.bin
sed -i 's/^file=mem.bin$/file=mem.bin\noffset=16/' lax16/cpu_0.ini
t_run "dump with offset= and no length=: decoded" 0 "$PTDUMP" --snapshot lax16 --ranges
t_eq "... the same ranges as the plain snapshot" "$("$PTDUMP" --snapshot raw --ranges 2>/dev/null)" "$out"

t_done
