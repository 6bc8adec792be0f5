#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Reference for app/set/draws.h: the random set's draws in Python.

Regenerates the labels of a sweep.random set from its seed, bit for bit
(the normal draws need the same libm as psfsim: Python's math module on the
same machine; the uniform draws and choices are exact everywhere).

    python3 draws_reference.py          lines that tests/app/set/test_draws.c
                                        compares bit for bit with its own values
    python3 draws_reference.py --c      the same values as the C initialisers
                                        embedded in test_draws.c
    python3 draws_reference.py --demo   the first draws of an example set

Needs Python 3 only; NumPy for the vectorised Philox (random_set, --demo),
which the plain-int one checks when NumPy is there.
"""
import math
import sys

try:
    import numpy as np
except ImportError:  # the plain-int reference needs none
    np = None

M0, M1 = 0xD2511F53, 0xCD9E8D57  # Philox4x32 multipliers (Random123)
W0, W1 = 0x9E3779B9, 0xBB67AE85  # Weyl key increments (Random123)
MASK = 0xFFFFFFFF
ROUNDS = 10
TAU = math.tau  # 2 pi rounded to binary64
PURPOSE = {"zernike": 0, "focus_shift": 1, "wavelength": 2}


def philox4x32_10(ctr, key):
    """Random123's philox4x32 (10 rounds) on 4 + 2 words as plain ints."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for r in range(ROUNDS):
        if r > 0:
            k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & MASK, (p0 >> 32) ^ c3 ^ k1, p0 & MASK)
    return c0, c1, c2, c3


def words(seed, d, term, purpose):
    """Step 1: key {seed lo, seed hi}, counter {d lo, d hi, term, purpose}."""
    return philox4x32_10((d & MASK, d >> 32, term, purpose), (seed & MASK, seed >> 32))


def u01(hi, lo):
    """Step 2: (2 k + 1) / 2^53, k the top 26 bits of hi then of lo (exact)."""
    k = ((hi >> 6) << 26) | (lo >> 6)
    return (2 * k + 1) / 2**53


def normal(seed, d, term, purpose, sigma):
    x = words(seed, d, term, purpose)
    u1, u2 = u01(x[0], x[1]), u01(x[2], x[3])
    z = math.sqrt(-2.0 * math.log(u1)) * math.cos(TAU * u2)
    return sigma * z


def uniform(seed, d, term, purpose, half_width):
    x = words(seed, d, term, purpose)
    return half_width * (2.0 * u01(x[0], x[1]) - 1.0)


def choice(seed, d, term, purpose, n):
    x = words(seed, d, term, purpose)
    return min(n - 1, math.floor(u01(x[0], x[1]) * n))


# sweep.random.segment_zernike: segment s's term j of draw d is
# normal(seed, d, segment_term(s, j), SEGMENT_ZERNIKE, sigma) (or uniform).
SEGMENT_ZERNIKE = 16


def segment_term(segment, j):
    """The counter's term word of segment's term j (j in the config's convention)."""
    return segment * 256 + j


def words_np(seed, d, term, purpose):
    """Step 1 vectorised over d (an array of draw indices): 4 uint64 arrays."""
    d = np.asarray(d, dtype=np.uint64)
    m32 = np.uint64(MASK)
    c = [d & m32, d >> np.uint64(32), np.full_like(d, term), np.full_like(d, purpose)]
    k0, k1 = seed & MASK, seed >> 32
    for r in range(ROUNDS):
        if r > 0:
            k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
        p0, p1 = np.uint64(M0) * c[0], np.uint64(M1) * c[2]  # < 2^64: no wrap
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & m32,
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & m32]
    return c


def u01_np(hi, lo):
    k = ((hi >> np.uint64(6)) << np.uint64(26)) | (lo >> np.uint64(6))
    return (np.uint64(2) * k + np.uint64(1)).astype(np.float64) * 2.0**-53


def random_set(seed, count, zernike):
    """Labels of sweep.random { count; seed; zernike = ((j, dist, width), ...) }:
    an array [count, len(zernike)], column t the coefficient of zernike[t][0].
    Exact for the uniform terms; the normal terms use math.log and math.cos
    (libm) per value, as psfsim does, rather than NumPy's own log/cos."""
    d = np.arange(count, dtype=np.uint64)
    out = np.empty((count, len(zernike)))
    for t, (j, dist, width) in enumerate(zernike):
        x = words_np(seed, d, j, PURPOSE["zernike"])
        u1 = u01_np(x[0], x[1])
        if dist == "uniform":
            out[:, t] = width * (2.0 * u1 - 1.0)
        else:
            u2 = u01_np(x[2], x[3])
            z = [math.sqrt(-2.0 * math.log(a)) * math.cos(TAU * b) for a, b in zip(u1, u2)]
            out[:, t] = width * np.array(z)
    return out


def radial_order(convention, j):
    """n of index j: Noll and Fringe from 1, ANSI from 0."""
    if convention == "ansi":  # j = (n (n + 2) + m) / 2
        n = 0
        while (n + 1) * (n + 2) // 2 <= j:
            n += 1
        return n
    if convention == "noll":  # n (n + 1) / 2 < j <= (n + 1) (n + 2) / 2
        n = 0
        while (n + 1) * (n + 2) // 2 < j:
            n += 1
        return n
    k = math.isqrt(j - 1)  # Fringe: (1 + (n + |m|)/2)^2 - 2|m| + (m < 0)
    a = ((k + 1) ** 2 - j + 1) // 2  # |m|
    return 2 * k - a


def spectrum_sigma(convention, j_min, j_max, total_rms, power):
    """sweep.random.spectrum's sigma_j, j = j_min..j_max (piston excluded)."""
    n = [float(radial_order(convention, j)) for j in range(j_min, j_max + 1)]
    s = 0.0
    for v in n:
        s += math.pow(v, 2.0 * power)
    scale = total_rms / math.sqrt(s)
    return [scale * math.pow(v, power) for v in n]


KAT = [  # Random123's kat_vectors for philox4x32_10: ctr, key, expected
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((MASK,) * 4, (MASK, MASK), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]
DRAWS = [  # seed, d, term, purpose
    (0, 0, 4, 0), (1, 0, 4, 0), (1, 1, 4, 0), (1, 0, 7, 0), (1, 99999, 36, 0),
    (42, 12345, 0, 1), (42, 12345, 0, 2), (0xFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 11, 0),
    (0x123456789ABCDEF0, (1 << 32) + 5, 22, 0), (7, 3, 0, 3),
]
CHOICE_N = (7, 1000003)
SPECTRA = [("noll", 4, 36, 0.1, -2.0), ("ansi", 1, 20, 0.25, -1.5), ("fringe", 4, 37, 0.05, 0.0),
           ("noll", 2, 11, 1.0, 1.0)]


def draw_row(seed, d, term, purpose):
    x = words(seed, d, term, purpose)
    if np is not None:
        xv = [int(a[0]) for a in words_np(seed, [d], term, purpose)]
        assert tuple(xv) == x, "the vectorised Philox disagrees with the scalar one"
    return (x, u01(x[0], x[1]), u01(x[2], x[3]), normal(seed, d, term, purpose, 1.0),
            uniform(seed, d, term, purpose, 1.0),
            [choice(seed, d, term, purpose, n) for n in CHOICE_N])


def check_random_set():
    """random_set (vectorised) against the plain-int draws, value for value."""
    terms = [(4, "normal", 0.05), (7, "uniform", 0.02)]
    labels = random_set(1, 50, terms)
    for d in range(50):
        assert labels[d, 0] == normal(1, d, 4, 0, 0.05), "random_set disagrees (normal)"
        assert labels[d, 1] == uniform(1, d, 7, 0, 0.02), "random_set disagrees (uniform)"


def print_lines():
    if np is not None:
        check_random_set()
    for ctr, key, want in KAT:
        got = philox4x32_10(ctr, key)
        assert got == want, "Philox4x32-10 fails a Random123 known answer"
        print("philox", *("%08x" % v for v in ctr + key + got))
    for seed, d, term, purpose in DRAWS:
        x, u1, u2, z, u, ch = draw_row(seed, d, term, purpose)
        print("draw %d %d %d %d" % (seed, d, term, purpose), *("%08x" % v for v in x),
              u1.hex(), u2.hex(), z.hex(), u.hex(), *ch)
    for conv, j0, j1, rms, power in SPECTRA:
        sig = spectrum_sigma(conv, j0, j1, rms, power)
        print("spectrum %s %d %d %s %s" % (conv, j0, j1, rms.hex(), power.hex()),
              *(s.hex() for s in sig))


def print_c():
    print("/* Made by tests/app/set/draws_reference.py --c */")
    print("/* clang-format off */")
    print("static const ref_draw ref_draws[] = {")
    for seed, d, term, purpose in DRAWS:
        x, u1, u2, z, u, ch = draw_row(seed, d, term, purpose)
        print("    {0x%xull, 0x%xull, %du, %du, {0x%08xu, 0x%08xu, 0x%08xu, 0x%08xu}," %
              ((seed, d, term, purpose) + x))
        print("     %s, %s, %s, %s, {%d, %d}}," % (u1.hex(), u2.hex(), z.hex(), u.hex(), *ch))
    print("};")
    for i, (conv, j0, j1, rms, power) in enumerate(SPECTRA):
        sig = spectrum_sigma(conv, j0, j1, rms, power)
        print("static const double ref_sigma%d[] = {" % i)
        for k in range(0, len(sig), 3):
            print("    " + ", ".join(s.hex() for s in sig[k:k + 3]) + ",")
        print("};")
    print("/* clang-format on */")


def demo():
    labels = random_set(1, 5, [(4, "normal", 0.05), (7, "uniform", 0.02)])
    print("d z4 z7 (seed 1)")
    for d, row in enumerate(labels):
        print(d, *("%.17g" % v for v in row))


if __name__ == "__main__":
    arg = sys.argv[1] if len(sys.argv) > 1 else ""
    {"--c": print_c, "--demo": demo}.get(arg, print_lines)()
