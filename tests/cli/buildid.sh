#!/usr/bin/env bash
# Build ids of every style: programs linked here with --build-id=sha1 (20
# bytes), md5 and uuid (16 bytes), recorded with their code by reference
# (--no-embed), decoded from the trace file and from its perf.data export.
# perf.data keeps build ids in 20-byte slots: a 16-byte id comes either with
# its size (PERF_RECORD_MISC_BUILD_ID_SIZE, as ptdump writes it) or, from older
# writers, zero-padded without it; both must find the program on disk.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v qemu-x86_64 >/dev/null; then
	t_skip "build ids" "qemu-user is not installed (the software tracer)"
	t_done; exit
fi
cd "$T_TMP" || exit 1

# Makes the export look like an older writer's: MMAP2 records without their
# build id (PERF_RECORD_MISC_MMAP_BUILD_ID cleared: the same bytes read as
# device and inode numbers), and PERF_RECORD_MISC_BUILD_ID_SIZE cleared in
# every record of the build-id feature section (HEADER_BUILD_ID, feature
# bit 2), leaving zero-padded ids there as the only ones.
unsize() {
	python3 - "$1" "$2" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
data_off, data_size = struct.unpack_from('<QQ', b, 40)
p = data_off
while p < data_off + data_size:
    typ, misc, rsz = struct.unpack_from('<IHH', b, p)
    if typ == 10:                                # PERF_RECORD_MMAP2
        struct.pack_into('<H', b, p + 4, misc & ~(1 << 14))
    step = rsz
    if typ == 71:                                # PERF_RECORD_AUXTRACE: data follows
        step += struct.unpack_from('<Q', b, p + 8)[0]
    p += step
feats = int.from_bytes(b[72:104], 'little')
assert feats & (1 << 2), 'no build-id section'
idx = bin(feats & 0b11).count('1')            # sections before bit 2
off, size = struct.unpack_from('<QQ', b, data_off + data_size + 16 * idx)
p, n = off, 0
while p < off + size:
    typ, misc, rsz = struct.unpack_from('<IHH', b, p)
    struct.pack_into('<H', b, p + 4, misc & 0x7fff)
    p += rsz; n += 1
open(sys.argv[2], 'wb').write(b)
print(n)
PY
}

for style in sha1 md5 uuid; do
	cc -O1 -g -o "prog_$style" -Wl,--build-id=$style "$top/tests/progs/calls.c" 2>/dev/null ||
		{ t_fail "$style: build"; continue; }
	len=$(readelf -n "prog_$style" | awk '/Build ID:/ { print length($3) / 2 }')
	t_eq "$style: the build id's length" "$([ $style = sha1 ] && echo 20 || echo 16)" "$len"
	t_run "$style: recorded by reference" 0 "$PTREC" record -q --emulate --no-embed -o "$style.ptrec" -- "./prog_$style"
	t_run "$style: decoded from the trace file" 0 "$PTDUMP" --call-trace "$style.ptrec"
	t_nomatch "$style: no build-id complaint" 'build id|no code' "$err"
	calls=$(printf '%s\n' "$out" | grep -c "prog_$style")
	t_match "$style: calls in the program ($calls)" '^[1-9][0-9]*$' "$calls"
	t_run "$style: exported to perf.data" 0 "$PTDUMP" -q --to-perf-data "$style.perf" "$style.ptrec"
	t_run "$style: perf.data decoded" 0 "$PTDUMP" --call-trace "$style.perf"
	t_nomatch "$style: perf.data: no build-id complaint" 'build id|no code' "$err"
	t_eq "$style: perf.data: the same calls" "$calls" "$(printf '%s\n' "$out" | grep -c "prog_$style")"
	n=$(unsize "$style.perf" "$style.pad.perf")
	t_match "$style: ids without their size ($n records)" '^[1-9]' "$n"
	t_run "$style: zero-padded ids decoded" 0 "$PTDUMP" --call-trace "$style.pad.perf"
	t_nomatch "$style: zero-padded ids: no build-id complaint" 'build id|no code' "$err"
	t_eq "$style: zero-padded ids: the same calls" "$calls" "$(printf '%s\n' "$out" | grep -c "prog_$style")"
done
t_done
