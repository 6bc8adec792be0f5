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
