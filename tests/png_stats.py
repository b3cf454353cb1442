#!/usr/bin/env python3
"""Statistics of a PNG screenshot, for tests/test_report.cpp (stdlib only).

Usage: png_stats.py FILE [#RRGGBB ...]
Prints one line: WIDTH HEIGHT DISTINCT_COLOURS LUMA_STDDEV NON_WHITE_FRACTION COUNT...
where each COUNT is the number of pixels of exactly that colour. Handles what
Chromium writes: 8-bit RGB or RGBA, non-interlaced.
"""
import math
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise SystemExit(f"{path}: unsupported PNG (depth {depth}, colour type {colour}, interlace {interlace})")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows, previous, i = [], bytearray(stride), 0
    for _ in range(height):
        kind = raw[i]
        i += 1
        line = bytearray(raw[i:i + stride])
        i += stride
        if kind == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif kind == 2:
            for x in range(stride):
                line[x] = (line[x] + previous[x]) & 255
        elif kind == 3:
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((left + previous[x]) >> 1)) & 255
        elif kind == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b = previous[x]
                c = previous[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, bpp, rows


def main():
    path, wanted = sys.argv[1], [c.lstrip("#").upper() for c in sys.argv[2:]]
    width, height, bpp, rows = read_png(path)
    counts = {}
    total = total_sq = 0.0
    non_white = 0
    for row in rows:
        for x in range(0, len(row), bpp):
            rgb = row[x:x + 3]
            counts[rgb] = counts.get(rgb, 0) + 1
    for rgb, n in counts.items():
        luma = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
        total += luma * n
        total_sq += luma * luma * n
        if rgb != b"\xff\xff\xff":
            non_white += n
    pixels = width * height
    mean = total / pixels
    stddev = math.sqrt(max(0.0, total_sq / pixels - mean * mean))
    found = [counts.get(bytes.fromhex(c), 0) for c in wanted]
    print(width, height, len(counts), f"{stddev:.3f}", f"{non_white / pixels:.4f}", *found)


if __name__ == "__main__":
    main()
