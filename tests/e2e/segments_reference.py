# SPDX-License-Identifier: BSD-3-Clause
# An independent NumPy rasterisation of a segmented aperture and its PSF,
# for e2e_segments_numpy.sh. usage: segments_reference.py IMAGE.fits EDGE
# (binary | grey). The aperture is the one of that script's config: 1.32 m
# flat-to-flat segments, 7 mm gaps, 2 rings without the centre, three
# 0.1 m vanes at 90, 210, 330 deg, 128 samples across DIAM (from the FITS
# header), N = 256. Binary: the sample centre's point test; grey: the mean
# of 16 x 16 points in the sample's cell. PSF = |FFT|^2 with the axis at
# (N/2, N/2) (sample (i, j) of the pupil at ((j - N/2) dx, (i - N/2) dx)),
# peak-normalised as psfsim's normalization = "peak" for an unaberrated
# pupil. Prints the relative L2 difference ||psfsim - numpy|| / ||numpy||.
import sys
import numpy as np

def read_fits(path):
    raw = open(path, 'rb').read()
    hdr, pos = {}, 0
    while True:
        card = raw[pos:pos + 80].decode('ascii'); pos += 80
        if card.startswith('END'): break
        if '=' in card[:10]:
            hdr[card[:8].strip()] = card[10:].split('/')[0].strip()
    pos = (pos + 2879) // 2880 * 2880
    n1, n2 = int(hdr['NAXIS1']), int(hdr['NAXIS2'])
    assert hdr['BITPIX'] == '-32'
    return hdr, np.frombuffer(raw, '>f4', n1 * n2, pos).reshape(n2, n1).astype(np.float64)

def inside(x, y):
    f, p = 1.32, 1.327
    ok = np.zeros(x.shape, bool)
    normals = [(np.cos(np.radians(30 + 60 * k)), np.sin(np.radians(30 + 60 * k))) for k in range(6)]
    for q in range(-2, 3):
        for r in range(-2, 3):
            if max(abs(q), abs(r), abs(q + r)) not in (1, 2): continue
            cx, cy = np.sqrt(3) / 2 * p * q, p * (0.5 * q + r)
            seg = np.ones(x.shape, bool)
            for nx, ny in normals:
                seg &= nx * (x - cx) + ny * (y - cy) <= 0.5 * f
            ok |= seg
    for a in (90.0, 210.0, 330.0):
        ux, uy = np.cos(np.radians(a)), np.sin(np.radians(a))
        if a == 90.0: ux, uy = 0.0, 1.0
        t, s = x * ux + y * uy, y * ux - x * uy
        ok &= ~((t >= 0) & (np.abs(s) < 0.05))
    return ok

hdr, img = read_fits(sys.argv[1])
edge = sys.argv[2]
N, n, D = 256, int(hdr['NPUPIL']), float(hdr['DIAM'])
dx = D / n
c = (np.arange(N) - N // 2) * dx
X, Y = np.meshgrid(c, c)
if edge == 'binary':
    amp = inside(X, Y).astype(np.float64)
else:
    K = 16
    amp = np.zeros((N, N))
    for a in range(K):
        for b in range(K):
            amp += inside(X + ((b + 0.5) / K - 0.5) * dx, Y + ((a + 0.5) / K - 0.5) * dx)
    amp /= K * K
field = np.fft.fft2(np.fft.ifftshift(amp))
psf = np.fft.fftshift(np.abs(field) ** 2)
psf /= psf.max()
print('%.3e' % (np.linalg.norm(img - psf) / np.linalg.norm(psf)))
