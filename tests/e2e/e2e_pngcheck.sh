# SPDX-License-Identifier: BSD-3-Clause
# The PNGs psfsim writes are valid PNG files: pngcheck (Debian package
# pngcheck) finds no error in any of them: 16-bit log at the default level
# (ISA-L's igzip), 8-bit linear and sqrt, levels 0 (stored), 2 and 9
# (libdeflate), an odd size (an MFT grid of 37 pixels) and 1 pixel's edge
# of it (npix 8); and each has one IDAT with a 32 KiB zlib window. Skips
# (77) without pngcheck.
source "$(dirname "$0")/lib_e2e.sh"
command -v pngcheck >/dev/null || { echo "skip: no pngcheck"; exit 77; }
base='optics: { wavelength_nm = 600; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 32; };
sweep: { defocus = [0.0, 0.5]; };'
i=0
for png in 'bits = 16;' 'bits = 8; stretch = "linear";' 'bits = 8; stretch = "sqrt";' \
  'compression = 0;' 'compression = 2;' 'compression = 9; bits = 8;'; do
  for grid in '' 'npix = 37; pixel_scale = 0.7;' 'npix = 8;'; do
    i=$((i + 1))
    printf 'name = "p%d";\n%s\noutput: { %s png: { %s }; };\n' $i "$base" "$grid" "$png" >p$i.cfg
    expect_exit 0 "set p$i ($png $grid)" -- "$PSFSIM" -q --backend cpu -c p$i.cfg -o out_$i
    for f in out_$i/*.png; do
      log=$(pngcheck -v "$f" 2>&1)
      if [ $? -eq 0 ] && [ "$(echo "$log" | grep -c "chunk IDAT")" = 1 ] &&
        echo "$log" | grep -q "32K window"; then
        pass "pngcheck: p$i $(basename "$f") valid, one IDAT, 32K window"
      else
        fail "pngcheck: p$i $(basename "$f")"; echo "$log" | tail -20
      fi
    done
  done
done
finish
