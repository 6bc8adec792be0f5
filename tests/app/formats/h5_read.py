# SPDX-License-Identifier: BSD-3-Clause
"""Checks the HDF5 sets test_hdf5_h5py.c writes, as a user reads them with
h5py: h5_read.py F32.h5 U16.h5. Exit 0 when all is as written."""
import sys

import h5py
import numpy as np

K, M, J = 37, 16, 3


def check_common(f):
    assert f.attrs["psfsim_format"] == "psfsim image set"
    assert f.attrs["psfsim_format_version"] == 1
    assert f.attrs["complete"] == 1
    assert f.attrs["nimages"] == K and f.attrs["npix"] == M
    assert f.attrs["pixel_scale_lod"] == 0.5
    assert f.attrs["conventions"] == "images[k, y, x]; row 0 first"
    assert f.attrs["psfsim_version"] == "0.1.0"
    assert f.attrs["nwavelengths"] == 1
    assert f["images"].attrs["units"] == "peak = 1"
    assert f["written"].shape == (K,) and f["written"][...].all()
    assert f["flushing"][()] == 0
    k = np.arange(K)
    lab = f["labels"]
    z = lab["zernike"]
    assert z.shape == (K, J) and z.dtype == np.float64
    assert list(z.attrs["noll_j"]) == [4, 5, 6] and z.attrs["units"] == "waves"
    assert np.array_equal(z[...], 0.01 * k[:, None] + np.arange(J)[None, :])
    assert np.array_equal(lab["wavelength_nm"][...], 500.0 + k)
    assert lab["wavelength_nm"].attrs["units"] == "nm"
    assert np.array_equal(lab["defocus"][...], 0.1 * k)
    assert np.array_equal(lab["focus_shift_um"][...], -2.0 * k)
    assert np.array_equal(lab["strehl"][...], 1.0 / (k + 1))
    assert lab["strehl"].attrs["description"] == "Strehl ratio"
    assert np.array_equal(lab["axial_intensity"][...], 100.0 * k)
    draw = lab["draw"]
    assert draw.dtype == np.int64 and np.array_equal(draw[...], 10 * k)
    backend = lab["backend"]
    assert backend.dtype == np.dtype("S8")
    assert list(backend[...]) == [b"gpu" if i % 2 else b"cpu" for i in k]
    assert all(lab[name].shape[0] == K for name in lab)


def main(f32_path, u16_path):
    pix = np.arange(M * M).reshape(M, M)
    with h5py.File(f32_path, "r") as f:
        check_common(f)
        img = f["images"]
        assert img.shape == (K, M, M) and img.dtype == np.dtype("<f4")
        assert img.chunks == (8, M, M)
        assert img.compression == "gzip" and img.compression_opts == 4 and img.shuffle
        assert f.attrs["dtype"] == "float32" and f.attrs["compression"] == "gzip"
        want = (np.arange(K)[:, None, None] * 1000 + pix[None]).astype(np.float32)
        assert np.array_equal(img[...], want)
        assert np.array_equal(img[36], want[36])  # the edge chunk
    with h5py.File(u16_path, "r") as f:
        check_common(f)
        img = f["images"]
        assert img.shape == (K, M, M) and img.dtype == np.dtype("<u2")
        assert img.chunks == (K, M, M) and img.compression is None
        assert f.attrs["dtype"] == "uint16" and f.attrs["compression"] == "none"
        want = ((np.arange(K)[:, None, None] * 256 + pix[None]) % 65536).astype(np.uint16)
        assert np.array_equal(img[...], want)
    print("h5py reads both sets as written")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
