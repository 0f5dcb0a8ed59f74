#!/usr/bin/env python3
"""Damaged copies of a ptrec trace file, for the decode tests.

    damage_aux.py SRC DAMAGED CUT WHICH...

Walks SRC's chunks (ptrec-file(5): a 32-byte file header, then chunks of a
40-byte header and a payload padded to 8 bytes; type 5 is AUX). DAMAGED is
SRC with the middle payload byte of the chosen AUX chunks flipped; CUT is
SRC cut a third of the way into its last AUX chunk's payload.
WHICH chooses AUX chunks by position: an index ("1"), a slice ("1::3"), or
"mid" (the middle one). Each chunk is flipped once however often chosen;
positions past the last chunk choose nothing, but something must be chosen.
"""
import struct
import sys

HDR, CHUNK_HDR, AUX = 32, 40, 5


def aux_chunks(src):
    pos, aux = HDR, []
    while pos + CHUNK_HDR <= len(src):
        _magic, typ, _flags, _raw, stored = struct.unpack_from('<IHHII', src, pos)
        if typ == AUX:
            aux.append((pos, stored))
        pos += CHUNK_HDR + (stored + 7) // 8 * 8
    return aux


def chosen(aux, which):
    out = set()
    for w in which:
        if w == 'mid':
            out.add(aux[len(aux) // 2])
        elif ':' in w:
            parts = [int(x) if x else None for x in w.split(':')]
            out.update(aux[slice(*parts)])
        elif -len(aux) <= int(w) < len(aux):
            out.add(aux[int(w)])
    return out


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    src_path, damaged, cut = sys.argv[1:4]
    src = open(src_path, 'rb').read()
    aux = aux_chunks(src)
    pick = chosen(aux, sys.argv[4:])
    if not pick:
        sys.exit('%s: %d AUX chunks, none of them is %s' % (src_path, len(aux), ' '.join(sys.argv[4:])))
    d = bytearray(src)
    for p, st in pick:
        d[p + CHUNK_HDR + st // 2] ^= 0xff
    open(damaged, 'wb').write(d)
    p, st = aux[-1]
    open(cut, 'wb').write(src[:p + CHUNK_HDR + st // 3])


main()
