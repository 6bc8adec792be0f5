# SPDX-License-Identifier: BSD-3-Clause
"""NAME.h5 as a user reads it with h5py, for e2e_hdf5.sh:

  h5_check.py check DIR NAME fits|png|none   shapes, dtypes, attributes;
      labels equal to DIR/NAME_manifest.csv row for row; images equal to
      the run's FITS files (float32) or PNG levels (uint16), each read here
      with NumPy alone (none: not compared)
  h5_check.py same A.h5 B.h5            the images and every labels dataset
      of two files equal byte for byte (written and flushing too)
  h5_check.py sidecar DIR NAME          DIR/NAME.json parses and holds the
      keys app/dataset/sidecar.h lists, agreeing with NAME.h5

Exit 0 when all holds; an AssertionError says what did not."""
import csv
import json
import re
import struct
import sys
import zlib

import h5py
import numpy as np


def read_fits(path):
    """The primary image of a FITS file: 2880-byte header blocks up to END,
    then big-endian BITPIX -32 data, NAXIS1 the columns."""
    with open(path, "rb") as f:
        data = f.read()
    cards, at = {}, 0
    while True:
        block = data[at:at + 2880]
        at += 2880
        done = False
        for i in range(0, 2880, 80):
            card = block[i:i + 80].decode("ascii")
            if card.startswith("END"):
                done = True
                break
            if card[8:10] == "= ":
                cards[card[:8].strip()] = card[10:].split("/")[0].strip()
        if done:
            break
    assert cards["BITPIX"] == "-32", cards["BITPIX"]
    nx, ny = int(cards["NAXIS1"]), int(cards["NAXIS2"])
    return np.frombuffer(data, ">f4", nx * ny, at).reshape(ny, nx)


def read_png(path):
    """A grayscale 8- or 16-bit non-interlaced PNG's levels, row 0 the top
    row (PNG 1.2: the five filter types undone row by row)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat = 8, b""
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + n]
        if kind == b"IHDR":
            w, h, bits, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert colour == 0 and interlace == 0
        elif kind == b"IDAT":
            idat += body
        at += 12 + n
    raw = zlib.decompress(idat)
    bpp = bits // 8
    stride = w * bpp
    out = np.zeros((h, stride), np.uint8)
    prev = np.zeros(stride, np.int32)
    for y in range(h):
        ftype = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, np.int32)
        for x in range(stride):
            a = cur[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ftype == 0:
                p = 0
            elif ftype == 1:
                p = a
            elif ftype == 2:
                p = b
            elif ftype == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                p = a if pa <= pb and pa <= pc else b if pb <= pc else c
            cur[x] = (line[x] + p) & 0xFF
        out[y] = cur
        prev = cur
    if bits == 16:
        return out.view(">u2").reshape(h, w).astype(np.uint16)
    return out.reshape(h, w).astype(np.uint16)


def number(cell):
    return float(cell) if cell != "" else float("nan")


def close(a, b):
    """Equal as the manifest's %.10g writes them (NaN for an empty cell)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    both_nan = np.isnan(a) & np.isnan(b)
    return bool(np.all(both_nan | (np.abs(a - b) <= 1e-9 * np.maximum(np.abs(b), 1e-300))))


def focus(a, r):
    """The focus shift's Noll 4 coefficient (docs/design.md, "Aberrations"):
    W020 = dz / (8 F^2) peak to valley, W020 / (2 sqrt 3) RMS, in the set's
    Zernike units (waves at the image's wavelength, or nm)."""
    if not r["focus_shift_um"]:
        return 0.0
    nm = float(r["focus_shift_um"]) * 1e3 / (8 * a["f_number"] ** 2) / (2 * 3 ** 0.5)
    return nm if a["zernike_units"].startswith("nm") else nm / float(r["wavelength_nm"])


def manifest(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def check(d, name, against):
    rows = manifest(f"{d}/{name}_manifest.csv")
    with h5py.File(f"{d}/{name}.h5", "r") as f:
        k = len(rows)
        a = f.attrs
        assert a["psfsim_format"] == "psfsim image set" and a["complete"] == 1
        assert a["nimages"] == k, (a["nimages"], k)
        m = int(rows[0]["npix"])
        img = f["images"]
        assert img.shape == (k, m, m), img.shape
        u16 = a["dtype"] == "uint16"
        assert img.dtype == np.dtype("<u2" if u16 else "<f4"), img.dtype
        assert f["written"][...].all() and f["flushing"][()] == 0
        for key in ("psfsim_version", "fftw_version", "hdf5_version", "config_hash", "date",
                    "zernike_convention", "zernike_units", "centring", "orientation",
                    "propagation", "propagation_sign", "normalization", "pupil_samples",
                    "fft_size", "diameter_m", "axis_row", "axis_column"):
            assert key in a, key
        assert a["config_hash"] == rows[0]["config_hash"] == a["resume_key"]
        assert a["axis_row"] == m // 2 and a["axis_column"] == m // 2
        assert a["pupil_samples"] == int(rows[0]["pupil_samples"])
        lab = f["labels"]
        assert list(lab["index"][...]) == [int(r["index"]) for r in rows]
        for col in ("wavelength_nm", "defocus", "focus_shift_um", "pixel_scale_lambda_d",
                    "pixel_scale_arcsec", "pixel_scale_um", "strehl", "axial_intensity"):
            got = lab[col][...]
            assert got.dtype == np.float64 and got.shape == (k,), col
            assert close(got, [number(r[col]) for r in rows]), col
        assert [b.decode() for b in lab["backend"][...]] == [r["backend"] for r in rows]
        # Segment label terms (segmented apertures): labels/s<k>_z<j>, exactly
        # the manifest's full-precision cells.
        for col in [c for c in rows[0] if re.fullmatch(r"s[0-9]+_z[0-9]+", c)]:
            assert list(lab[col][...]) == [float(r[col]) for r in rows], col
        z = lab["zernike"]
        assert z.shape[0] == k and z.shape[1] == len(z.attrs["noll_j"])
        # Each swept value is in its term's total (Noll j here): the total
        # less the swept value is the config's coefficient, the same in
        # every row; likewise Noll 4 less the defocus.
        noll = list(z.attrs["noll_j"])
        diffs = {}
        for r, zrow in zip(rows, z[...]):
            swept = []
            if r["zernike_j"]:
                swept = list(zip(r["zernike_j"].split(";"), r["zernike_coeff"].split(";")))
            if r["defocus"] or r["focus_shift_um"]:
                swept.append(("4", str(number(r["defocus"] or "0") + focus(a, r))))
            for j, v in swept:
                diffs.setdefault(j, []).append(zrow[noll.index(int(j))] - float(v))
        for j, ds in diffs.items():
            assert max(ds) - min(ds) < 1e-8, f"labels/zernike Noll {j}: totals less swept values vary"
        for i, r in enumerate(rows if against != "none" else []):
            if against == "fits":
                want = read_fits(f"{d}/{r['fits']}").astype("<f4")
            else:
                want = read_png(f"{d}/{r['png']}")
            assert np.array_equal(img[i], want), f"image {i} differs from {against}"
    what = f"{k} images equal to the {against} files" if against != "none" else f"{k} images"
    print(f"{name}.h5: {what}, labels equal to the manifest")


def same(pa, pb):
    with h5py.File(pa, "r") as a, h5py.File(pb, "r") as b:
        names = []
        a.visit(names.append)
        other = []
        b.visit(other.append)
        assert names == other, (names, other)
        for n in names:
            if isinstance(a[n], h5py.Dataset):
                assert a[n].dtype == b[n].dtype and a[n].shape == b[n].shape, n
                assert a[n][()].tobytes() == b[n][()].tobytes(), f"{n} differs"
        for key in ("nimages", "npix", "dtype", "compression", "chunk_images"):
            assert a.attrs[key] == b.attrs[key], key
    print(f"{pa} and {pb}: every dataset equal byte for byte")


def sidecar(d, name):
    with open(f"{d}/{name}.json") as f:
        s = json.load(f)
    for key in ("format", "format_version", "name", "config_file", "config_hash", "date",
                "files", "config", "conventions", "versions", "machine", "backend", "set",
                "labels"):
        assert key in s, key
    assert s["format"] == "psfsim image set sidecar" and s["name"] == name
    cfg = s["config"]
    for group in ("optics", "sampling", "aberrations", "sweep", "output"):
        assert isinstance(cfg[group], dict), group
    assert cfg["output"]["hdf5"]["enabled"] is True
    for key in ("zernike_convention", "zernike_units", "zernike_normalisation", "normalization",
                "centring", "orientation", "propagation", "propagation_sign"):
        assert isinstance(s["conventions"][key], str), key
    for key in ("psfsim", "fftw", "hdf5", "cuda"):
        assert key in s["versions"], key
    for key in ("hostname", "cpu", "cpus", "gpus"):
        assert key in s["machine"], key
    for key in ("nimages", "pupil_samples", "fft_size", "npix", "diameter_m", "wavelengths_nm",
                "pixel_scale_lambda_d", "pixel_scale_arcsec", "pixel_scale_um"):
        assert key in s["set"], key
    with h5py.File(f"{d}/{name}.h5", "r") as f:
        assert s["config_hash"] == f.attrs["config_hash"]
        assert s["set"]["nimages"] == f.attrs["nimages"]
        assert s["set"]["npix"] == f.attrs["npix"]
        assert s["versions"]["hdf5"] == f.attrs["hdf5_version"]
        noll = list(f["labels/zernike"].attrs["noll_j"]) if "zernike" in f["labels"] else []
        assert s["labels"]["zernike_noll_j"] == noll
        assert sorted(s["labels"]["columns"]) == sorted(n for n in f["labels"] if n != "zernike")
        # Images of their own wavelengths (swept, drawn, listed) have their
        # own pixels: then the set states none, and says so; else it does.
        own = len(set(f["labels/wavelength_nm"][:].tolist())) > 1
        for key in ("pixel_scale_lambda_d", "pixel_scale_arcsec", "wavelengths_nm"):
            assert (key in f.attrs) != own, f"{key} in the root attributes: {key in f.attrs}"
            assert (s["set"][key] is None) == own, f"set.{key} in the sidecar: {s['set'][key]}"
        assert ("per image" in f.attrs["pixel_scale"]) == own, f.attrs["pixel_scale"]
        draws = s["config"]["sweep"].get("random")
        if draws:
            assert f.attrs["random_count"] == draws["count"], "random_count"
            assert f.attrs["random_seed"] == draws["seed"], "random_seed"
        else:
            assert "random_count" not in f.attrs and "random_seed" not in f.attrs
    print(f"{name}.json: the keys are there and agree with {name}.h5")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "check":
        check(*sys.argv[2:5])
    elif cmd == "same":
        same(*sys.argv[2:4])
    elif cmd == "sidecar":
        sidecar(*sys.argv[2:4])
    else:
        sys.exit(f"unknown command {cmd}")
