# SPDX-License-Identifier: BSD-3-Clause
# Montage of psfsim PNGs (samples/*_montage.png): usage montage.py OUT.png IN.png ...
# Each 8/16-bit grey PNG is decoded, its central 320 x 320 averaged 2 x 2 to
# 160 x 160, framed by 2 black pixels, and the tiles put side by side (8-bit).
import sys, zlib, struct
import numpy as np
def read_png(p):
    d = open(p, 'rb').read(); pos = 8; idat = b''
    while pos < len(d):
        n, t = struct.unpack('>I4s', d[pos:pos+8]); body = d[pos+8:pos+8+n]; pos += 12 + n
        if t == b'IHDR': w, h, bits, ct = struct.unpack('>IIBB', body[:10])
        elif t == b'IDAT': idat += body
    assert ct == 0
    bpp = bits // 8; raw = zlib.decompress(idat); stride = w * bpp
    out = np.zeros((h, stride), np.uint8); prev = np.zeros(stride, np.int32)
    for y in range(h):
        f = raw[y*(stride+1)]; line = np.frombuffer(raw, np.uint8, stride, y*(stride+1)+1).astype(np.int32)
        cur = np.zeros(stride, np.int32)
        for x in range(stride):
            a = cur[x-bpp] if x >= bpp else 0; b = prev[x]; c = prev[x-bpp] if x >= bpp else 0
            if f == 0: v = 0
            elif f == 1: v = a
            elif f == 2: v = b
            elif f == 3: v = (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2*c)
                v = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (line[x] + v) & 255
        out[y] = cur; prev = cur
    img = out.astype(np.float64)
    if bpp == 2: img = img[:, 0::2] * 256 + img[:, 1::2]; img /= 65535.0
    else: img /= 255.0
    return img
def write_png(p, img):
    h, w = img.shape
    raw = b''.join(b'\0' + img[y].tobytes() for y in range(h))
    def chunk(t, b): return struct.pack('>I', len(b)) + t + b + struct.pack('>I', zlib.crc32(t + b) & 0xffffffff)
    open(p, 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 0, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw, 9)) + chunk(b'IEND', b''))
if __name__ == "__main__":
    tiles = []
    for p in sys.argv[2:]:
        im = read_png(p); f = 2; o = (im.shape[0] - 320) // 2; im = im[o:o+320, o:o+320]
        im = im[:160*f, :160*f].reshape(160, f, 160, f).mean(axis=(1, 3))
        t = np.zeros((164, 164)); t[2:162, 2:162] = im; tiles.append(t)
    write_png(sys.argv[1], np.clip(np.hstack(tiles) * 255 + 0.5, 0, 255).astype(np.uint8))
