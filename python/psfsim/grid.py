# SPDX-License-Identifier: BSD-3-Clause
"""PSF grids in NAME.h5 (docs/config.md, "PSF grids"): a field set written
with output.psf_grid and output.hdf5 holds every position's PSF (any
number of them, beyond the 100 of a FITS grid file) with its detector
position (labels/field_x_px, labels/field_y_px). These read it as
photutils' GriddedPSFModel takes a grid: an NDData of the [n_psf, ny, nx]
images with meta grid_xypos (x, y per PSF) and oversampling; the images
of a flux normalisation ("sum", "pupil") oversampled s > 1 times are
multiplied by s^2 (photutils' ePSF, as WebbPSF's psf_grid and psfsim's
FITS grid write them). Needs h5py and astropy (photutils for
psf_grid_model)."""
import numpy as np


def psf_grid_nddata(path):
    """NAME.h5's grid as an astropy NDData: data [n_psf, M, M] float64,
    meta {"grid_xypos": [n_psf, 2] (x, y) pixels, "oversampling": s}.
    ValueError when the file is no PSF grid (written without
    output.psf_grid) or its images are uint16 levels."""
    import h5py
    from astropy.nddata import NDData

    with h5py.File(path, "r") as f:
        if int(f.attrs.get("psf_grid", 0)) != 1:
            raise ValueError("%s: not a PSF grid (written without output.psf_grid)" % path)
        if f["images"].dtype != np.float32:
            raise ValueError("%s: uint16 images are PNG levels, not a PSF (give "
                             "output.hdf5.dtype = \"float32\")" % path)
        s = int(f.attrs["psf_grid_oversampling"])
        data = f["images"][:].astype(np.float64)
        xy = np.column_stack([f["labels/field_x_px"][:], f["labels/field_y_px"][:]])
        norm = str(f.attrs["normalization"]).split(":")[0]
    if s > 1 and norm in ("sum", "pupil"):
        data *= s * s
    return NDData(data, meta={"grid_xypos": xy, "oversampling": s})


def psf_grid_model(path):
    """photutils.psf.GriddedPSFModel of NAME.h5's grid (psf_grid_nddata)."""
    from photutils.psf import GriddedPSFModel

    return GriddedPSFModel(psf_grid_nddata(path))


def write_fits_grids(path, outdir, tile=10, yx_keywords="webbpsf"):
    """NAME.h5's grid as FITS grid files for readers that need FITS
    (photutils' GriddedPSFModel.read(..., format="webbpsf"), WebbPSF's
    layout, as psfsim's NAME_cube.fits grid): a field.grid set's nx x ny
    positions cut into rectangular tiles of at most tile x tile positions
    (tile <= 10: a file holds DET_YX0 .. DET_YX99) that share their edge
    rows and columns, so that every point between grid points lies inside
    one tile. Files outdir/NAME_grid_<ty>_<tx>.fits (NAME from the h5 file's
    name): a [n, M, M] float32 primary image (psf_grid_nddata's data) with
    OVERSAMP, NUM_PSFS, FOVPIXEL, DET_YX<i> and the tile's XMIN_PX,
    XMAX_PX, YMIN_PX, YMAX_PX. Returns the files' paths.
    yx_keywords: "webbpsf" (the default): DET_YX<i> = '(y, x)', as WebbPSF
    writes it; "photutils": '(x, y)', for photutils' webbpsf reader up to
    at least 1.12 (the version tested), which takes the first value as x
    and so reads WebbPSF's layout transposed when the grid's x and y
    positions differ (a reader that swaps them, as WebbPSF means, needs
    "webbpsf").
    ValueError for a set without field.grid (field_grid_nx, field_grid_ny),
    a tile outside 2..10 or another yx_keywords."""
    import os

    import h5py
    from astropy.io import fits

    if not 2 <= tile <= 10:
        raise ValueError("tile must be in 2..10 (a FITS grid file holds 100 PSFs)")
    if yx_keywords not in ("webbpsf", "photutils"):
        raise ValueError("yx_keywords must be \"webbpsf\" ('(y, x)') or \"photutils\" "
                         "('(x, y)') (got %r)" % (yx_keywords,))
    swap = yx_keywords == "photutils"
    what = ("(x,y) detector pixel position of this PSF" if swap else
            "(y,x) detector pixel position of this PSF")
    nd = psf_grid_nddata(path)
    with h5py.File(path, "r") as f:
        if "field_grid_nx" not in f.attrs:
            raise ValueError("%s: not a field.grid set (no field_grid_nx)" % path)
        nx, ny = int(f.attrs["field_grid_nx"]), int(f.attrs["field_grid_ny"])
    name = os.path.basename(str(path))
    name = name[:-3] if name.endswith(".h5") else name
    xy, s = nd.meta["grid_xypos"], nd.meta["oversampling"]

    def starts(n):  # tile starts, sharing an edge: step tile - 1
        if n <= tile:
            return [0]
        out = list(range(0, n - 1, tile - 1))
        return [a for a in out if a < n - 1]

    files = []
    for ty, y0 in enumerate(starts(ny)):
        for tx, x0 in enumerate(starts(nx)):
            iy = range(y0, min(y0 + tile, ny))
            ix = range(x0, min(x0 + tile, nx))
            idx = [j * nx + i for j in iy for i in ix]  # positions x fastest (field.grid)
            hdr = fits.Header()
            hdr["OVERSAMP"] = (s, "this image's pixels per detector pixel")
            hdr["NUM_PSFS"] = (len(idx), "the number of fiducial PSFs")
            hdr["FOVPIXEL"] = (nd.data.shape[-1] // s, "field of view of each PSF [pixels]")
            for i, k in enumerate(idx):
                a, b = (xy[k][0], xy[k][1]) if swap else (xy[k][1], xy[k][0])
                hdr["DET_YX%d" % i] = ("(%.17g, %.17g)" % (a, b), what)
            hdr["XMIN_PX"], hdr["XMAX_PX"] = xy[idx[0]][0], xy[idx[-1]][0]
            hdr["YMIN_PX"], hdr["YMAX_PX"] = xy[idx[0]][1], xy[idx[-1]][1]
            out = os.path.join(str(outdir), "%s_grid_%d_%d.fits" % (name, ty, tx))
            fits.PrimaryHDU(nd.data[idx].astype(np.float32), hdr).writeto(out, overwrite=True)
            files.append(out)
    return files


def eigen_psfs(path, count, write=True):
    """The grid's principal components (eigen-PSFs): the thin SVD of the
    [K, M*M] matrix X of NAME.h5's images (float64, as stored; numpy's
    svd, LAPACK's gesdd), X = U S V^T, kept to count terms: basis
    [count, M, M] (rows of V^T, orthonormal), weights [K, count] (U S: image k
    ~ sum_i weights[k, i] basis[i]) and the singular values [min(K, M*M)];
    the reconstruction's Frobenius error is sqrt(sum of the dropped
    singular values squared) (Eckart-Young). write: also NAME_eigen.h5
    beside NAME.h5 (datasets basis, weights, singular_values; attributes
    count, source). Returns (basis, weights, singular_values)."""
    import h5py

    with h5py.File(path, "r") as f:
        if f["images"].dtype != np.float32:
            raise ValueError("%s: uint16 images are PNG levels, not PSFs" % path)
        x = f["images"][:].astype(np.float64)
    k, m = x.shape[0], x.shape[1:]
    if not 1 <= count <= min(k, x[0].size):
        raise ValueError("count must be in 1..%d" % min(k, x[0].size))
    u, sv, vt = np.linalg.svd(x.reshape(k, -1), full_matrices=False)
    basis = vt[:count].reshape((count,) + m)
    weights = u[:, :count] * sv[:count]
    if write:
        p = str(path)
        out = (p[:-3] if p.endswith(".h5") else p) + "_eigen.h5"
        with h5py.File(out, "w") as f:
            f["basis"] = basis
            f["weights"] = weights
            f["singular_values"] = sv
            f.attrs["count"] = count
            f.attrs["source"] = p
    return basis, weights, sv
