#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lists the GPU code inside an object or binary built by nvcc (no cuobjdump needed).

    fatbin_archs.py FILE      prints e.g. `sm_80 sm_90 compute_90`, one word per
                              entry of the .nv_fatbin section (sm_NN: machine
                              code, compute_NN: PTX), sorted, duplicates removed.

Exits 1 when FILE has no fatbin. Used by tools/cuda_archs_test.sh to check that
//tools:cuda_archs reaches nvcc, and useful on any binary: which GPUs will it run on?
"""

import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_ELF = 1, 2


def section(data, name):
    """The bytes of the named section of a 64-bit little-endian ELF file, or None."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(i):
        # name offset, type, flags, addr, offset, size
        return struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)

    names_off = header(shstrndx)[4]
    for i in range(shnum):
        name_off, _, _, _, off, size = header(i)
        end = data.index(b"\0", names_off + name_off)
        if data[names_off + name_off:end].decode() == name:
            return data[off:off + size]
    return None


def archs(fatbin):
    """(kind, arch) of every entry: several fatbins may follow one another."""
    found = set()
    off = 0
    while off + 16 <= len(fatbin):
        magic, _, header_size, size = struct.unpack_from("<IHHQ", fatbin, off)
        if magic != FATBIN_MAGIC:
            off += 8  # padding between fatbins
            continue
        entry, end = off + header_size, off + header_size + size
        while entry < end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", fatbin, entry)
            arch, = struct.unpack_from("<I", fatbin, entry + 28)
            if kind == KIND_PTX:
                found.add("compute_%d" % arch)
            elif kind == KIND_ELF:
                found.add("sm_%d" % arch)
            entry += entry_header + payload
        off = end
    return found


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(argv[1], "rb") as f:
        data = f.read()
    fatbin = section(data, ".nv_fatbin")
    if not fatbin:
        print("%s: no .nv_fatbin section" % argv[1], file=sys.stderr)
        return 1
    print(" ".join(sorted(archs(fatbin), key=lambda a: (int(a.split("_")[1]), a))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
