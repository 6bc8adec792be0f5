# SPDX-License-Identifier: BSD-3-Clause
"""Montage of a field set's PNGs laid out as on the detector
(samples/*_montage.png of field configs): reads DIR/NAME_manifest.csv (png,
field_x_px, field_y_px), puts each image at its position's place in the grid
(x to the right, y up: the first row of the montage is the largest y), each
tile its central 40 x 40 pixels scaled up 3x (nearest) and framed by 2 black
pixels (8-bit grey, montage.py's PNG)."""
import argparse
import csv
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from montage import read_png, write_png  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("out", metavar="OUT.png", help="the montage to write")
ap.add_argument("dir", metavar="DIR", help="the set's output directory (psfsim -o DIR)")
ap.add_argument("name", metavar="NAME", help="the set's name (DIR/NAME_manifest.csv)")
args = ap.parse_args()
out, d, name = args.out, args.dir, args.name
rows = list(csv.DictReader(open(os.path.join(d, name + "_manifest.csv"))))
xs = sorted({float(r["field_x_px"]) for r in rows})
ys = sorted({float(r["field_y_px"]) for r in rows}, reverse=True)
tiles = {}
for r in rows:
    im = read_png(os.path.join(d, r["png"]))
    o = max(0, (im.shape[0] - 40) // 2)
    im = np.kron(im[o:o + 40, o:o + 40], np.ones((3, 3)))[::-1]  # y up: the PNG's top row is y's first
    t = np.zeros((im.shape[0] + 4, im.shape[1] + 4))
    t[2:-2, 2:-2] = im
    tiles[(float(r["field_x_px"]), float(r["field_y_px"]))] = t
img = np.vstack([np.hstack([tiles[(x, y)] for x in xs]) for y in ys])
write_png(out, np.clip(img * 255 + 0.5, 0, 255).astype(np.uint8))
