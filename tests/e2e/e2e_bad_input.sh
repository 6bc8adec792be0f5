# SPDX-License-Identifier: BSD-3-Clause
# Bad input: each kind of mistake gives exit 2, a message naming the file,
# line and key, and writes nothing at all.
source "$(dirname "$0")/lib_e2e.sh"
good() { # a valid config text, with $1 appended to the optics group
  cat <<CFG
name = "bad";
optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; $1 };
sampling: { pupil_samples = 32; };
CFG
}
nothing_written() {
  if [ -z "$(ls -A "$SCRATCH/out" 2>/dev/null)" ]; then pass "$1: nothing written"; else
    fail "$1: files were written:"; ls -la "$SCRATCH/out"; fi
}

good 'wavelenght_nm = 500.0;' | sed 's/wavelength_nm = 550.0; //' >unknown.cfg
expect_exit 2 "unknown key" -- "$PSFSIM" -c unknown.cfg -o out
expect_stderr 'unknown.cfg:2: optics.wavelenght_nm: unknown key \(did you mean optics.wavelength_nm\?\)' "unknown key: message with line and suggestion"
nothing_written "unknown key"

good '' | sed 's/pupil_samples = 32/pupil_samples = "many"/' >type.cfg
expect_exit 2 "wrong type" -- "$PSFSIM" -c type.cfg -o out
expect_stderr 'type.cfg:3: sampling.pupil_samples: ' "wrong type: message names line and key"
nothing_written "wrong type"

good '' | sed 's/pupil_samples = 32;/pupil_samples = 32; padding = 0.5;/' >range.cfg
expect_exit 2 "out of range" -- "$PSFSIM" -c range.cfg -o out
expect_stderr 'range.cfg:3: sampling.padding: must be >= 1 \(got 0.5\)' "out of range: message"
nothing_written "out of range"

good '' | sed 's/diameter_m = 1.0;/diameter_m = 1.0; shape = "file"; file = "nope.png";/' >missing.cfg
expect_exit 2 "missing aperture file" -- "$PSFSIM" -c missing.cfg -o out
expect_stderr 'missing.cfg:2: optics.aperture.file: .*nope.png' "missing file: message names key and file"
nothing_written "missing file"

expect_exit 2 "missing config" -- "$PSFSIM" -c does-not-exist.cfg -o out
expect_stderr 'does-not-exist.cfg' "missing config: message names the file"
nothing_written "missing config"

# An integer past 32 bits: libconfig 1.5 kept its low 32 bits (j = 4).
{ good ''; echo 'aberrations: { zernike = ( (4294967300, 0.1) ); };'; } >wide.cfg
expect_exit 2 "integer past 32 bits" -- "$PSFSIM" -c wide.cfg -o out
expect_stderr '^psfsim: wide.cfg:4: aberrations.zernike\[0\]\[0\]: integer 4294967300 is out of the 32-bit range' "integer past 32 bits: message"
nothing_written "integer past 32 bits"

# Configs that are not regular files: read once, into memory, with a cap.
good '' >ok.cfg
expect_exit 2 "config /dev/zero" -- timeout 20 "$PSFSIM" -c /dev/zero -o out
expect_stderr '^psfsim: /dev/zero: cannot read: larger than the 16 MiB cap on a config' "/dev/zero: the cap"
nothing_written "/dev/zero"
truncate -s 17M big.cfg
expect_exit 2 "config past the cap" -- "$PSFSIM" -c big.cfg -o out
expect_stderr 'big.cfg: cannot read: larger than the 16 MiB cap on a config \(17825792 bytes\)' "big config: message"
nothing_written "big config"
expect_exit 2 "config on standard input" -- "$PSFSIM" -c - -o out <range.cfg
expect_stderr '^psfsim: <stdin>:3: sampling.padding: must be >= 1 \(got 0.5\)' "-c -: message names <stdin>"
nothing_written "-c -"
expect_exit 0 "config by process substitution" -- "$PSFSIM" -q -c <(cat ok.cfg) -o subst
[ -f subst/bad_0.png ] && pass "process substitution: the set written" || fail "no subst/bad_0.png"
mkdir -p incdir
echo '@include "ok.cfg"' >incdir/top.cfg
expect_exit 0 "piped config: @include from the current directory" -- "$PSFSIM" -q -c <(cat incdir/top.cfg) -o subst2
mkfifo cfg.fifo
(cat range.cfg >cfg.fifo &)
expect_exit 2 "config from a FIFO" -- timeout 20 "$PSFSIM" -c cfg.fifo -o out
expect_stderr '^psfsim: cfg.fifo:3: sampling.padding: must be >= 1' "FIFO: read as a stream, message"
nothing_written "FIFO"

touch afile
expect_exit 2 "unusable output dir" -- "$PSFSIM" -c ok.cfg -o afile/out
expect_stderr 'output directory afile/out: .*afile.* not a directory' "unusable output dir: message"
[ -f afile ] && [ ! -s afile ] && pass "unusable output dir: nothing written" || fail "afile changed"

# Output directories and names that cannot work: refused before any work.
expect_exit 2 "-o \"\"" -- "$PSFSIM" -c ok.cfg -o ""
expect_stderr '^psfsim: --output: expected a directory \(got ""\)' "-o \"\": message"
if [ -d /proc/self ]; then # mounted: nothing can be created in /proc, even by root
  expect_exit 2 "-o /proc" -- "$PSFSIM" -c ok.cfg -o /proc
  expect_stderr '^psfsim: output directory /proc: not writable: ' "-o /proc: message"
fi
ln -s "$SCRATCH/nowhere/target" dangling
expect_exit 2 "a dangling symbolic link as the output directory" -- "$PSFSIM" -c ok.cfg -o dangling
expect_stderr "^psfsim: output directory dangling: a symbolic link to $SCRATCH/nowhere/target, which does not exist" "dangling link: message"
expect_exit 2 "a dangling symbolic link above the output directory" -- "$PSFSIM" -c ok.cfg -o dangling/sub
expect_stderr '^psfsim: output directory dangling/sub: dangling is a symbolic link to' "dangling link above: message"
[ -L dangling ] && [ ! -e nowhere ] && pass "dangling link: nothing created" || fail "dangling link: $(ls -la)"
long=$(printf 'n%.0s' $(seq 231))
good '' | sed "s/name = \"bad\"/name = \"$long\"/" >long.cfg
expect_exit 2 "a name too long for its files" -- "$PSFSIM" -c long.cfg -o out
expect_stderr '^psfsim: long.cfg:1: name: must be at most 230 characters: .*\(got 231\)' "long name: message"
nothing_written "long name"
# The longest name accepted makes every file, NAME.h5 and the cube too (a
# name past 197 passed validation, then the HDF5 writer refused it: exit 3).
long=$(printf 'n%.0s' $(seq 230))
{ good ''; echo 'output: { png: { enabled = false; }; fits: { enabled = true; cube = true; }; hdf5: { enabled = true; }; };'; } |
  sed "s/name = \"bad\"/name = \"$long\"/" >long230.cfg
expect_exit 0 "a name of 230 characters, HDF5 and the cube" -- "$PSFSIM" -c long230.cfg -o long230
[ -s "long230/$long.h5" ] && [ -s "long230/${long}_cube.fits" ] && [ -s "long230/${long}_manifest.csv" ] &&
  pass "230 characters: NAME.h5, NAME_cube.fits and the manifest written" || fail "230 characters: $(ls long230 | cut -c 225-)"

expect_exit 0 "first run" -- "$PSFSIM" -c ok.cfg -o out
cp out/bad_0.png first.png
expect_exit 2 "existing outputs without --force" -- "$PSFSIM" -c ok.cfg -o out
expect_stderr 'already holds image set "bad".*--force' "existing outputs: message"
cmp -s first.png out/bad_0.png && pass "existing outputs untouched" || fail "existing outputs changed"
expect_exit 0 "existing outputs with --force" -- "$PSFSIM" --force -c ok.cfg -o out
# --force with a smaller set: the earlier set's extra images go.
{ good ''; echo 'sweep: { defocus = [0.0, 0.1, 0.2, 0.3]; };'; } >four.cfg
sed -i 's/name = "bad"/name = "sm"/' four.cfg
sed 's/, 0.2, 0.3//' four.cfg >two.cfg
expect_exit 0 "a set of 4" -- "$PSFSIM" -q -c four.cfg -o small
expect_exit 0 "--force with a set of 2" -- "$PSFSIM" -q --force -c two.cfg -o small
[ "$(ls small | grep -c '\.png$')" -eq 2 ] && [ ! -e small/sm_2.png ] &&
  pass "--force: the earlier set's extra images removed" || fail "--force left: $(ls small)"

{ good ''; echo 'output: { png: { compression = 12; }; };'; } >level.cfg
expect_exit 2 "PNG compression out of range" -- "$PSFSIM" -c level.cfg -o out3
expect_stderr 'level.cfg:4: output.png.compression: must be' "compression: message"
{ good ''; echo 'output: { fits: { enabled = true; cube = 1; }; };'; } >cube.cfg
expect_exit 2 "fits.cube not a boolean" -- "$PSFSIM" -c cube.cfg -o out3
expect_stderr 'cube.cfg:4: output.fits.cube: expected true or false' "cube: message"
expect_exit 2 "--jobs 0" -- "$PSFSIM" -j 0 -c ok.cfg -o out3
expect_stderr 'jobs: expected a number of threads' "--jobs: message"
expect_exit 2 "--gpus x" -- "$PSFSIM" --gpus x -c ok.cfg -o out3
expect_stderr 'gpus: expected "all" or device indices like 0,2 \(bad entry "x"\)' "--gpus x: message"
expect_exit 2 "--gpus 0,0" -- "$PSFSIM" --gpus 0,0 -c ok.cfg -o out3
expect_stderr 'gpus: device 0 listed twice' "--gpus 0,0: message"
expect_exit 2 "--gpus 1,,2" -- "$PSFSIM" --gpus 1,,2 -c ok.cfg -o out3
expect_stderr 'bad entry ""' "--gpus 1,,2: message"
[ ! -e out3 ] && pass "new keys and options: nothing written" || fail "out3 was created"

expect_exit 2 "--probe with -c" -- "$PSFSIM" --probe -c ok.cfg
expect_stderr 'probe.*-c' "--probe with -c: message"

expect_exit 2 "bad --backend" -- "$PSFSIM" --backend tpu -c ok.cfg -o out2
expect_stderr 'backend: expected auto, cpu or gpu' "bad --backend: message"
expect_exit 2 "unknown option" -- "$PSFSIM" --frobnicate -c ok.cfg
expect_exit 2 "no config" -- "$PSFSIM"
expect_exit 0 "--help" -- "$PSFSIM" --help
expect_exit 0 "--version" -- "$PSFSIM" --version
grep -q '^psfsim [0-9]' "$SCRATCH/stdout" && pass "--version prints the version" || fail "--version output"
[ ! -e out2 ] && pass "bad option: nothing written" || fail "out2 was created"
# Waves over several wavelengths: the same phase at each, a warning (stderr
# and the timing log), the images written all the same.
{ good '' | sed 's/wavelength_nm = 550.0; //'
  echo 'aberrations: { zernike = ((4, 0.05)); };'
  echo 'sweep: { wavelength_nm = [1000.0, 1650.0, 2200.0]; };'; } >waves.cfg
expect_exit 0 "waves over a wavelength sweep" -- "$PSFSIM" -c waves.cfg -o waves
expect_stderr 'waves.cfg:4: aberrations.zernike: coefficients in waves .*same phase at every wavelength of sweep.wavelength_nm' "waves over a wavelength sweep: warned"
grep -q '^warning,,,,,,,"waves.cfg:4: aberrations.zernike: coefficients in waves' waves/bad_timing.csv &&
  pass "waves over a wavelength sweep: a timing log row" || fail "no warning row in waves/bad_timing.csv"
# Numbers past where the computation means anything (they gave Strehl 1 or
# all-NaN images with exit 0): refused before any work.
{ good ''; echo 'aberrations: { zernike = ((4, 1e300)); };'; } >huge.cfg
expect_exit 2 "a coefficient of 1e300 waves" -- "$PSFSIM" -c huge.cfg -o out4
expect_stderr 'huge.cfg:4: aberrations.zernike\[0\]: the coefficient must be in \[-1000000, 1000000\] \(waves RMS\) \(got 1e\+300\)' "1e300 waves: message"
good '' | sed 's/diameter_m = 1.0;/diameter_m = 1e200;/' >wide.cfg
expect_exit 2 "a diameter of 1e200 m" -- "$PSFSIM" -c wide.cfg -o out4
expect_stderr 'wide.cfg:2: optics.aperture.diameter_m: must be <= 10000 \(got 1e\+200\)' "1e200 m: message"
good '' | sed 's/diameter_m = 1.0;/diameter_m = 1e-310;/' >denormal.cfg
expect_exit 2 "a denormal diameter" -- "$PSFSIM" -c denormal.cfg -o out4
expect_stderr 'denormal.cfg:2: optics.aperture.diameter_m: must be >= 1e-06' "denormal diameter: message"
[ ! -e out4 ] && pass "out-of-bound numbers: nothing written" || fail "out4 was created"
# Aliasing and sampling: a tilt past the field, Q < 2, a slow FFT size:
# warned (stderr and the timing log), the images written all the same.
{ good ''; echo 'aberrations: { zernike = ((2, 10.0)); };'; } >tilt.cfg
expect_exit 0 "a tilt past the field" -- "$PSFSIM" -c tilt.cfg -o tilt
expect_stderr 'tilt.cfg:3: sampling.pupil_samples: the wavefront may step by up to 1.25 waves between neighbouring pupil samples' "a tilt past the field: warned"
grep -q '^warning,,,,,,,"tilt.cfg:3: sampling.pupil_samples: the wavefront may step' tilt/bad_timing.csv &&
  pass "a tilt past the field: a timing log row" || fail "no warning row in tilt/bad_timing.csv"
good '' | sed 's/pupil_samples = 32;/pupil_samples = 32; padding = 1.5;/' >q.cfg
expect_exit 0 "padding 1.5" -- "$PSFSIM" -c q.cfg -o q
expect_stderr 'q.cfg:3: sampling.padding: Q = N/n = 48/32 = 1.5 < 2: the intensity is undersampled' "padding 1.5: warned"
good '' | sed 's/pupil_samples = 32;/pupil_samples = 515; padding = 2.002;/' >prime.cfg
expect_exit 0 "N = 1031" -- "$PSFSIM" -c prime.cfg -o prime
expect_stderr 'prime.cfg:3: sampling.padding: the FFT size N = 1031 has the prime factor 1031 \(above 7\)' "N = 1031: warned"
# Decidable before any work (they failed at run time, exit 3, with the
# directory made): a closed aperture, a map that is 0 or NaN everywhere.
good '' | sed 's/diameter_m = 1.0;/diameter_m = 1.0; spiders: { count = 1000; width_m = 0.9; };/' >closed.cfg
expect_exit 2 "an aperture closed by its spiders" -- "$PSFSIM" -c closed.cfg -o out5
expect_stderr 'closed.cfg:2: optics.aperture: the 64x64 pupil grid \(pitch .* m\) has 0 sample\(s\) of open area, less than one: the aperture \(circle, .*1000 spider\(s\) 0.9 m wide.*\) is closed at this sampling' "closed aperture: message"
# Less than a sample's worth of open area is closed too, whatever the shape
# (a segmented aperture's outer stop gave a flat image, exit 0).
good '' | sed 's/diameter_m = 1.0;/diameter_m = 4.7; shape = "segmented"; segments: { flat_to_flat_m = 1.5588; gap_m = 0.003; rings = 1; outer_diameter_m = 1e-9; };/' >stop.cfg
expect_exit 2 "a segmented aperture closed by its outer stop" -- "$PSFSIM" -c stop.cfg -o out5
expect_stderr 'stop.cfg:2: optics.aperture: the 64x64 pupil grid .* has [0-9.e+-]* sample\(s\) of open area, less than one: the aperture \(segmented, .*outer stop 1e-09 m.*\) is closed' "closed segmented aperture: message"
# fits4 FILE WORD: a 4 x 4 float32 FITS image, every pixel the 4 bytes WORD.
fits4() {
  { printf '%-80s' 'SIMPLE  =                    T' 'BITPIX  =                  -32' 'NAXIS   =                    2' \
      'NAXIS1  =                    4' 'NAXIS2  =                    4' 'END'
    head -c $((2880 - 6 * 80)) /dev/zero | tr '\0' ' '
    for _ in $(seq 16); do printf "$2"; done
    head -c $((2880 - 64)) /dev/zero; } >"$1"
}
fits4 zero.fits '\0\0\0\0'
fits4 nan.fits '\177\300\0\0'
fits4 faint.fits '\060\211\160\137' # 1e-9 everywhere: 3e-6 samples' worth open
good '' | sed 's/diameter_m = 1.0;/diameter_m = 1.0; shape = "file"; file = "zero.fits";/' >zeromap.cfg
expect_exit 2 "a transmission map of zeros" -- "$PSFSIM" -c zeromap.cfg -o out5
expect_stderr 'zeromap.cfg:2: optics.aperture.file: .*zero.fits: every transmission of the map is 0' "zero transmission map: message"
good '' | sed 's/diameter_m = 1.0;/diameter_m = 1.0; shape = "file"; file = "faint.fits";/' >faint.cfg
expect_exit 2 "a transmission map of 1e-9" -- "$PSFSIM" -c faint.cfg -o out5
expect_stderr 'faint.cfg:2: optics.aperture: .* sample\(s\) of open area, less than one: the aperture \(transmission map, .*\) is closed' "faint transmission map: message"
{ good ''; echo 'aberrations: { opd_map: { file = "nan.fits"; }; };'; } >nanopd.cfg
expect_exit 2 "an OPD map of NaN" -- "$PSFSIM" -c nanopd.cfg -o out5
expect_stderr 'nanopd.cfg:4: aberrations.opd_map.file: .*nan.fits: every OPD value of the map is 0 \(NaN and BLANK pixels read as 0' "NaN OPD map: message"
[ ! -e out5 ] && pass "closed aperture, empty maps: nothing written" || fail "out5 was created"
# Segmented apertures (optics.aperture.segments): each bad value names its
# file, line and key, and nothing is written.
segcfg() { # $1: the segments group's body; $2: more aperture keys
  cat <<CFG
name = "bad";
optics: { wavelength_nm = 550.0; aperture: { shape = "segmented"; ${2:-}
  segments: { $1 }; }; };
sampling: { pupil_samples = 32; };
CFG
}
segcfg 'flat_to_flat_m = 1.32; gap_m = 0.007; rings = 1; missing = [0];' >segok.cfg
expect_exit 0 "a segmented aperture" -- "$PSFSIM" -c segok.cfg -o segok -q
segcfg 'flat_to_flat_m = 1.32; gap_m = -0.01; rings = 1;' >segovl.cfg
expect_exit 2 "overlapping segments" -- "$PSFSIM" -c segovl.cfg -o out6
expect_stderr 'segovl.cfg:3: optics.aperture.segments.gap_m: must be >= 0: neighbouring segments would overlap \(got -0.01\)' "overlapping segments: message"
segcfg 'flat_to_flat_m = 1.32; gap_m = 1.5; rings = 1;' >seggap.cfg
expect_exit 2 "a gap larger than the segment" -- "$PSFSIM" -c seggap.cfg -o out6
expect_stderr 'seggap.cfg:3: optics.aperture.segments.gap_m: must be < optics.aperture.segments.flat_to_flat_m \(1.32\) \(got 1.5\)' "gap larger than the segment: message"
segcfg 'flat_to_flat_m = 1.32; rings = 2;
  missing = [0, 19];' >segidx.cfg
expect_exit 2 "a segment index out of range" -- "$PSFSIM" -c segidx.cfg -o out6
expect_stderr 'segidx.cfg:4: optics.aperture.segments.missing\[1\]: must be a segment index, an integer in \[0, 18\] for 2 rings \(got 19\)' "segment index out of range: message"
segcfg 'flat_to_flat_m = 1.32; rings = 1; missing = [2, 2];' >segdup.cfg
expect_exit 2 "a segment left out twice" -- "$PSFSIM" -c segdup.cfg -o out6
expect_stderr 'segdup.cfg:3: optics.aperture.segments.missing\[1\]: segment 2 is already listed' "segment listed twice: message"
segcfg 'flat_to_flat_m = 1.32; rings = 0; missing = [0];' >segnone.cfg
expect_exit 2 "every segment left out" -- "$PSFSIM" -c segnone.cfg -o out6
expect_stderr 'segnone.cfg:3: optics.aperture.segments.missing: leaves out every segment' "every segment left out: message"
segcfg 'flat_to_flat_m = 1.32; rings = 18;' >segrings.cfg
expect_exit 2 "too many rings" -- "$PSFSIM" -c segrings.cfg -o out6
expect_stderr 'segrings.cfg:3: optics.aperture.segments.rings: ' "too many rings: message"
segcfg 'gap_m = 0.007; rings = 1;' >segf.cfg
expect_exit 2 "no segment size" -- "$PSFSIM" -c segf.cfg -o out6
expect_stderr 'segf.cfg: optics.aperture.segments.flat_to_flat_m: required key missing \(shape = "segmented"\)' "no segment size: message"
segcfg 'flat_to_flat_m = 1.32; rings = 2;' 'diameter_m = 6.0;' >segdiam.cfg
expect_exit 2 "a diameter smaller than the segments" -- "$PSFSIM" -c segdiam.cfg -o out6
expect_stderr 'segdiam.cfg:2: optics.aperture.diameter_m: must hold every segment: >= 6.64' "diameter smaller than the segments: message"
good 'aperture: { diameter_m = 1.0; segments: { flat_to_flat_m = 0.1; rings = 1; }; };' |
  sed 's/aperture: { diameter_m = 1.0; }; //' >segshape.cfg
expect_exit 2 "segments with a circular shape" -- "$PSFSIM" -c segshape.cfg -o out6
expect_stderr 'segshape.cfg:2: optics.aperture.segments: only used with shape = "segmented"' "segments without shape = segmented: message"
segcfg 'flat_to_flat_m = 900.0; rings = 10;' >segbig.cfg
expect_exit 2 "segments spanning more than 10 km" -- "$PSFSIM" -c segbig.cfg -o out6
expect_stderr 'segbig.cfg:3: optics.aperture.segments.flat_to_flat_m: the segments span .* m: the aperture.s diameter must be in \[1e-06, 10000\] m' "segments spanning more than 10 km: message"
# An outer stop that closes the segments (no diameter_m): the stop's key
# named, with its diameter and the segments' true span (once the message
# named flat_to_flat_m with the stop's 1e-09 m as the segments' span).
segcfg 'flat_to_flat_m = 1.32; gap_m = 0.007; rings = 2; outer_diameter_m = 1e-9;' >segstop.cfg
expect_exit 2 "an outer stop closing the segments" -- "$PSFSIM" -c segstop.cfg -o out6
expect_stderr "segstop.cfg:3: optics.aperture.segments.outer_diameter_m: the outer stop's diameter 1e-09 m \\(inside the segments' span, 6.6[0-9]* m\\) is the aperture's: it must be in \\[1e-06, 10000\\] m" \
  "outer stop closing the segments: message"
grep -q 'segments span' "$SCRATCH/stderr" && fail "outer stop: blames the segments' span" ||
  pass "outer stop: the segments' span not blamed"
[ ! -e out6 ] && pass "bad segmented apertures: nothing written" || fail "out6 was created"
# Listed spider vanes (optics.aperture.spiders.vanes).
good 'aperture: { diameter_m = 1.0; spiders: { vanes = ( { angle_deg = 90.0; width_m = 0.02; },
  { angle_deg = 0.0; width_m = 0.02; offset_m = 0.1; r_start_m = 0.1; r_end_m = 0.4; } ); }; };' |
  sed 's/aperture: { diameter_m = 1.0; }; //' >vaneok.cfg
expect_exit 0 "listed vanes" -- "$PSFSIM" -c vaneok.cfg -o vaneok -q
good 'aperture: { diameter_m = 1.0; spiders: { vanes = ( { angle_deg = 90.0; width_m = 0.02; },
  { angle_deg = 0.0; width_m = 0.02; offset_m = 0.6; } ); }; };' |
  sed 's/aperture: { diameter_m = 1.0; }; //' >vaneout.cfg
expect_exit 2 "a vane outside the aperture" -- "$PSFSIM" -c vaneout.cfg -o out7
expect_stderr 'vaneout.cfg:3: optics.aperture.spiders.vanes\[1\].offset_m: the vane lies outside the aperture: \|offset_m\| - width_m / 2 must be < diameter_m / 2 = 0.5 \(got 0.6\)' "vane outside the aperture: message"
good 'aperture: { diameter_m = 1.0; spiders: { vanes = ( { angle_deg = 90.0; } ); }; };' |
  sed 's/aperture: { diameter_m = 1.0; }; //' >vanew.cfg
expect_exit 2 "a vane without a width" -- "$PSFSIM" -c vanew.cfg -o out7
expect_stderr 'vanew.cfg:2: optics.aperture.spiders.vanes\[0\].width_m: required key missing' "vane without a width: message"
good 'aperture: { diameter_m = 1.0; spiders: { vanes = ( { angle_deg = 90.0; width_m = 0.02; length_m = 1.0; } ); }; };' |
  sed 's/aperture: { diameter_m = 1.0; }; //' >vanekey.cfg
expect_exit 2 "an unknown vane key" -- "$PSFSIM" -c vanekey.cfg -o out7
expect_stderr 'vanekey.cfg:2: optics.aperture.spiders.vanes\[0\].length_m: unknown key' "unknown vane key: message"
good 'aperture: { diameter_m = 1.0; spiders: { vanes = ( { angle_deg = 9.0; width_m = 0.02; r_start_m = 0.3; r_end_m = 0.2; } ); }; };' |
  sed 's/aperture: { diameter_m = 1.0; }; //' >vaneend.cfg
expect_exit 2 "a vane ending before its start" -- "$PSFSIM" -c vaneend.cfg -o out7
expect_stderr 'vaneend.cfg:2: optics.aperture.spiders.vanes\[0\].r_end_m: must be > r_start_m, or 0 for no end \(got 0.2\)' "vane ending before its start: message"
[ ! -e out7 ] && pass "bad vanes: nothing written" || fail "out7 was created"
# optics.aperture.angle_deg (hexagon only) and obscuration_shape.
good 'aperture: { shape = "hexagon"; diameter_m = 1.0; angle_deg = 30.0; obscuration = 0.3; obscuration_shape = "hexagon"; };' |
  sed 's/aperture: { diameter_m = 1.0; }; //' >hexok.cfg
expect_exit 0 "a rotated hexagon with a hexagonal obscuration" -- "$PSFSIM" -c hexok.cfg -o hexok -q
good 'aperture: { diameter_m = 1.0; angle_deg = 30.0; };' | sed 's/aperture: { diameter_m = 1.0; }; //' >hexang.cfg
expect_exit 2 "angle_deg on a circle" -- "$PSFSIM" -c hexang.cfg -o out8
expect_stderr 'hexang.cfg:2: optics.aperture.angle_deg: only used with shape = "hexagon"' "angle_deg on a circle: message"
good 'aperture: { diameter_m = 1.0; obscuration = 0.2; obscuration_shape = "square"; };' | sed 's/aperture: { diameter_m = 1.0; }; //' >obsshape.cfg
expect_exit 2 "an unknown obscuration shape" -- "$PSFSIM" -c obsshape.cfg -o out8
expect_stderr 'obsshape.cfg:2: optics.aperture.obscuration_shape: must be "circle" or "hexagon" \(got "square"\)' "unknown obscuration shape: message"
[ ! -e out8 ] && pass "bad hexagon keys: nothing written" || fail "out8 was created"

# Random and listed sets (sweep.random, sweep.table): every bad key, table
# and combination gives exit 2, FILE:LINE: KEY (and the table's
# PATH:LINE:COLUMN), and writes nothing.
dataset() { # name, sweep text, extra optics keys, pattern, [table text]
  local name=$1 sweep=$2 optics=$3 pattern=$4
  [ $# -ge 5 ] && printf '%b' "$5" >"ds_$name.csv"
  cat >"ds_$name.cfg" <<CFG
name = "ds";
optics: { $optics aperture: { diameter_m = 1.0; }; };
sampling: { pupil_samples = 32; };
sweep: { $sweep };
CFG
  sed -i "s/@T/ds_$name.csv/" "ds_$name.cfg"
  expect_exit 2 "dataset $name" -- "$PSFSIM" -c "ds_$name.cfg" -o out4
  expect_stderr "$pattern" "dataset $name: message"
  [ ! -e out4 ] || { fail "dataset $name: out4 was created"; rm -rf out4; }
}
W='wavelength_nm = 550.0;'
R='count = 4; seed = 1;'
dataset count0 "random: { count = 0; seed = 1; zernike = ((4, \"normal\", 0.1)); };" "$W" \
  'ds_count0.cfg:4: sweep.random.count: must be >= 1 \(got 0\)'
dataset countbig "random: { count = 20000000; seed = 1; zernike = ((4, \"normal\", 0.1)); };" "$W" \
  'ds_countbig.cfg:4: sweep.random.count: must be <= 10000000'
dataset countlists "defocus = [0.0, 0.1]; random: { count = 6000000; seed = 1; zernike = ((4, \"normal\", 0.1)); };" "$W" \
  'ds_countlists.cfg:4: sweep.random.count: makes 12000000 images .*limit of 10000000'
dataset nocount "random: { seed = 1; zernike = ((4, \"normal\", 0.1)); };" "$W" \
  'ds_nocount.cfg: sweep.random.count: required key missing'
dataset noseed "random: { count = 4; zernike = ((4, \"normal\", 0.1)); };" "$W" \
  'ds_noseed.cfg: sweep.random.seed: required key missing'
dataset seedneg "random: { count = 4; seed = -3; zernike = ((4, \"normal\", 0.1)); };" "$W" \
  'ds_seedneg.cfg:4: sweep.random.seed: must be >= 0 \(got -3\)'
dataset seedfloat "random: { count = 4; seed = 1.5; zernike = ((4, \"normal\", 0.1)); };" "$W" \
  'ds_seedfloat.cfg:4: sweep.random.seed: expected an integer \(got a float\)'
dataset dist "random: { $R zernike = ((4, \"gauss\", 0.1)); };" "$W" \
  'ds_dist.cfg:4: sweep.random.zernike\[0\]: the distribution must be "normal" or "uniform" \(got "gauss"\)'
dataset sigma "random: { $R zernike = ((4, \"normal\", -0.1)); };" "$W" \
  'ds_sigma.cfg:4: sweep.random.zernike\[0\]: the sigma must be >= 0'
dataset halfwidth "random: { $R zernike = ((4, \"uniform\", 2e6)); };" "$W" \
  'ds_halfwidth.cfg:4: sweep.random.zernike\[0\]: the half-width must be at most 1e6'
dataset rj "random: { $R zernike = ((0, \"normal\", 0.1)); };" "$W" \
  'ds_rj.cfg:4: sweep.random.zernike\[0\]: j must be >= 1 in the noll convention \(got 0\)'
dataset rdup "random: { $R zernike = ((4, \"normal\", 0.1), (4, \"uniform\", 0.1)); };" "$W" \
  'ds_rdup.cfg:4: sweep.random.zernike\[1\]: duplicate term j = 4'
dataset triple "random: { $R zernike = ((4, \"normal\")); };" "$W" \
  'ds_triple.cfg:4: sweep.random.zernike\[0\]: expected a triple .*\(got 2 elements\)'
dataset nothing "random: { $R };" "$W" 'ds_nothing.cfg:4: sweep.random: draws nothing'
dataset piston "random: { $R spectrum: { j_min = 1; j_max = 8; total_rms = 0.1; power = -2.0; }; };" "$W" \
  'ds_piston.cfg:4: sweep.random.spectrum.j_min: j = 1 is piston'
dataset jorder "random: { $R spectrum: { j_min = 9; j_max = 8; total_rms = 0.1; power = -2.0; }; };" "$W" \
  'ds_jorder.cfg:4: sweep.random.spectrum.j_max: must be >= j_min \(9\) \(got 8\)'
dataset rms "random: { $R spectrum: { j_min = 4; j_max = 8; total_rms = -1.0; power = -2.0; }; };" "$W" \
  'ds_rms.cfg:4: sweep.random.spectrum.total_rms: must be >= 0'
dataset power "random: { $R spectrum: { j_min = 4; j_max = 8; total_rms = 0.1; power = 99.0; }; };" "$W" \
  'ds_power.cfg:4: sweep.random.spectrum.power: must be <= 50'
dataset nopower "random: { $R spectrum: { j_min = 4; j_max = 8; total_rms = 0.1; }; };" "$W" \
  'ds_nopower.cfg: sweep.random.spectrum.power: required key missing'
dataset overlap "random: { $R zernike = ((6, \"normal\", 0.1)); spectrum: { j_min = 4; j_max = 8; total_rms = 0.1; power = -2.0; }; };" "$W" \
  'ds_overlap.cfg:4: sweep.random.zernike\[0\]: term j = 6 is also drawn by sweep.random.spectrum'
dataset fsnof "random: { $R focus_shift_um = [10.0]; };" "$W" \
  'ds_fsnof.cfg:4: sweep.random.focus_shift_um: needs optics.f_number'
dataset fsboth "focus_shift_um = [0.0]; random: { $R focus_shift_um = [10.0]; };" "$W f_number = 10.0;" \
  'ds_fsboth.cfg:4: sweep.random.focus_shift_um: cannot be used with sweep.focus_shift_um'
dataset wlboth "wavelength_nm = [500.0]; random: { $R wavelength_nm = [600.0]; };" "" \
  'ds_wlboth.cfg:4: sweep.random.wavelength_nm: cannot be used with sweep.wavelength_nm'
dataset wlbroad "random: { $R wavelength_nm = [600.0]; };" "wavelengths_nm = [500.0, 600.0];" \
  'ds_wlbroad.cfg:4: sweep.random.wavelength_nm: cannot be used with optics.wavelengths_nm'
dataset wlneg "random: { $R wavelength_nm = [600.0, 0.0]; };" "" \
  'ds_wlneg.cfg:4: sweep.random.wavelength_nm\[1\]: must be > 0'
dataset wltiny "random: { $R wavelength_nm = [600.0, 1e-300]; };" "" \
  'ds_wltiny.cfg:4: sweep.random.wavelength_nm\[1\]: must be >= 1 \(got 1e-300\)'
dataset wlhuge "random: { $R wavelength_nm = [1e300]; };" "" \
  'ds_wlhuge.cfg:4: sweep.random.wavelength_nm\[0\]: must be <= 1000000 \(got 1e\+300\)'
dataset fsbig "random: { $R focus_shift_um = [1e300]; };" "$W f_number = 10.0;" \
  'ds_fsbig.cfg:4: sweep.random.focus_shift_um\[0\]: must be in \[-1524200000, 1524200000\] \(a defocus of 1e\+06 waves RMS at 550 nm, the shortest wavelength, through f_number 10\) \(got 1e\+300\)'
dataset rkey "random: { $R zernike = ((4, \"normal\", 0.1)); sigma = 1.0; };" "$W" \
  'ds_rkey.cfg:4: sweep.random.sigma: unknown key'
# More terms than a FITS header holds: refused with FITS output only.
cat >ds_fitsterms.cfg <<CFG
name = "ds";
optics: { $W aperture: { diameter_m = 1.0; }; };
sampling: { pupil_samples = 32; };
output: { fits: { enabled = true; }; };
sweep: { random: { $R spectrum: { j_min = 2; j_max = 300; total_rms = 0.1; power = -2.0; }; }; };
CFG
expect_exit 2 "dataset fitsterms" -- "$PSFSIM" -c ds_fitsterms.cfg -o out4
expect_stderr 'ds_fitsterms.cfg:5: sweep.random.spectrum: the set has 299 Zernike terms, more than the 256' "fitsterms: message"
[ ! -e out4 ] && pass "fitsterms: nothing written" || fail "fitsterms: out4 was created"
# The table: its file, its cells and columns, and what it may not repeat.
T='table = "@T";'
dataset tmissing 'table = "nope.csv";' "$W" 'ds_tmissing.cfg:4: sweep.table: cannot read nope.csv'
# A FIFO as the table: refused, not waited on (open blocked for a writer).
mkfifo ds_tfifo.csv
cat >ds_tfifo.cfg <<CFG
name = "ds";
optics: { $W aperture: { diameter_m = 1.0; }; };
sampling: { pupil_samples = 32; };
sweep: { table = "ds_tfifo.csv"; };
CFG
expect_exit 2 "dataset tfifo" -- timeout 20 "$PSFSIM" -c ds_tfifo.cfg -o out4
expect_stderr 'ds_tfifo.cfg:4: sweep.table: cannot read ds_tfifo.csv: not a regular file \(a FIFO, a device or a socket\)' "dataset tfifo: message"
[ ! -e out4 ] && pass "dataset tfifo: nothing written" || fail "dataset tfifo: out4 was created"
dataset tempty "$T" "$W" 'ds_tempty.cfg:4: sweep.table: ds_tempty.csv: empty file' ''
dataset theader "$T" "$W" 'ds_theader.cfg:4: sweep.table: ds_theader.csv: no data rows' 'z4,z7\n'
dataset tunknown "$T" "$W" 'ds_tunknown.cfg:4: sweep.table: ds_tunknown.csv:1:2 \(zz\): unknown column' 'z4,zz\n0.1,0.2\n'
dataset tconv "$T" "$W" 'ds_tconv.cfg:4: sweep.table: ds_tconv.csv:1:1 \(z0\): unknown column' 'z0\n0.1\n'
dataset textra "$T" "$W" 'ds_textra.cfg:4: sweep.table: ds_textra.csv:3:2: extra cell' 'z4\n0.1\n0.2,0.3\n'
dataset tshort "$T" "$W" 'ds_tshort.cfg:4: sweep.table: ds_tshort.csv:2:2 \(z5\): missing cell' 'z4,z5\n0.1\n'
dataset tnan "$T" "$W" 'ds_tnan.cfg:4: sweep.table: ds_tnan.csv:3:1 \(z4\): "abc" is not a number' 'z4\n0.1\nabc\n'
dataset tnowl "$T" "" 'ds_tnowl.cfg: optics.wavelength_nm: required key missing .*a wavelength_nm column' 'z4\n0.1\n'
dataset twlneg "$T" "" 'ds_twlneg.cfg:4: sweep.table: ds_twlneg.csv:3:1 \(wavelength_nm\): must be >= 1 \(nm\) \(got -5\)' \
  'wavelength_nm\n500\n-5\n'
# Every cell within the bounds of the config's keys (1e300 gave Strehl 1, exit 0).
dataset twltiny "$T" "" 'ds_twltiny.cfg:4: sweep.table: ds_twltiny.csv:3:1 \(wavelength_nm\): must be >= 1 \(nm\) \(got 1e-300\)' \
  'wavelength_nm\n500\n1e-300\n'
dataset twlhuge "$T" "" 'ds_twlhuge.cfg:4: sweep.table: ds_twlhuge.csv:2:1 \(wavelength_nm\): must be <= 1e\+06 \(nm\) \(got 1e\+300\)' \
  'wavelength_nm\n1e300\n'
dataset tdefbig "$T" "$W" 'ds_tdefbig.cfg:4: sweep.table: ds_tdefbig.csv:3:1 \(defocus\): must be in \[-1e\+06, 1e\+06\] \(waves RMS\) \(got 1e\+300\)' \
  'defocus,z11\n0.1,0\n1e300,0\n'
dataset tz11big "$T" "$W" 'ds_tz11big.cfg:4: sweep.table: ds_tz11big.csv:2:2 \(z11\): must be in \[-1e\+06, 1e\+06\] \(waves RMS\) \(got -1e\+300\)' \
  'defocus,z11\n0,-1e300\n'
dataset tfsbig "$T" "$W f_number = 10.0;" 'ds_tfsbig.cfg:4: sweep.table: ds_tfsbig.csv:2:1 \(focus_shift_um\): must be in \[-1.524.*e\+09, 1.524.*e\+09\] \(a defocus of 1e\+06 waves RMS at 550 nm' \
  'focus_shift_um\n1e300\n'
dataset twlswept "wavelength_nm = [500.0]; $T" "" \
  'ds_twlswept.cfg:4: sweep.table: ds_twlswept.csv:1:1 \(wavelength_nm\): the column is also given by sweep.wavelength_nm' \
  'wavelength_nm\n500\n'
dataset twlrandom "$T random: { $R wavelength_nm = [500.0]; };" "" \
  'ds_twlrandom.cfg:4: sweep.table: ds_twlrandom.csv:1:1 \(wavelength_nm\): the column is also given by sweep.random.wavelength_nm' \
  'wavelength_nm\n500\n'
dataset twlbroad "$T" "wavelengths_nm = [500.0, 600.0];" \
  'ds_twlbroad.cfg:4: sweep.table: ds_twlbroad.csv:1:1 \(wavelength_nm\): cannot be used with optics.wavelengths_nm' \
  'wavelength_nm\n500\n'
dataset tdefocus "defocus = [0.0]; $T" "$W" \
  'ds_tdefocus.cfg:4: sweep.table: ds_tdefocus.csv:1:2 \(defocus\): the column is also given by sweep.defocus' \
  'z4,defocus\n0.1,0.2\n'
dataset tfsnof "$T" "$W" 'ds_tfsnof.cfg:4: sweep.table: ds_tfsnof.csv:1:1 \(focus_shift_um\): needs optics.f_number' \
  'focus_shift_um\n1\n'
dataset tfsrandom "$T random: { $R focus_shift_um = [1.0]; };" "$W f_number = 10.0;" \
  'ds_tfsrandom.cfg:4: sweep.table: ds_tfsrandom.csv:1:1 \(focus_shift_um\): the column is also given by sweep.random.focus_shift_um' \
  'focus_shift_um\n1\n'
dataset tzswept "zernike = ((7, [0.0, 0.1])); $T" "$W" \
  'ds_tzswept.cfg:4: sweep.table: ds_tzswept.csv:1:2 \(z7\): the column is also given by sweep.zernike' \
  'z4,z7\n0.1,0.2\n'
awk 'BEGIN { print "z4"; for (i = 0; i < 2500001; ++i) print 0 }' >ds_trows.csv
dataset trows "defocus = [0.0, 0.1]; table = \"ds_trows.csv\"; random: { count = 2; seed = 1; zernike = ((5, \"normal\", 0.1)); };" "$W" \
  'ds_trows.cfg:4: sweep.table: ds_trows.csv: 2500001 rows make 10000004 images .*limit of 10000000'
# The detector group (docs/config.md, "Detector"): every key's bad value
# names FILE:LINE:KEY, exit 2, nothing written.
detector() { # name, the group's body, the message's pattern (after the file name)
  { good ''; echo "detector: { $2 };"; } >det_$1.cfg
  rm -rf out
  expect_exit 2 "detector $1" -- "$PSFSIM" -c det_$1.cfg -o out
  expect_stderr "det_$1.cfg:4: $3" "detector $1: message"
  nothing_written "detector $1"
}
detector os0 'oversample = 0;' 'detector.oversample: must be >= 1 \(got 0\)'
detector os17 'oversample = 17;' 'detector.oversample: must be <= 16 \(got 17\)'
detector osf 'oversample = 2.5;' 'detector.oversample: expected an integer'
detector pr 'pixel_response = 1;' 'detector.pixel_response: expected true or false'
detector jneg 'jitter_mas = -1.0;' 'detector.jitter_mas: must be >= 0 \(got -1\)'
detector j3 'jitter_mas = [1.0, 2.0, 3.0];' 'detector.jitter_mas: must be one sigma or two, \[x, y\] \(got 3 values\)'
detector jy 'jitter_lambda_d = [0.1, -0.2];' 'detector.jitter_lambda_d\[1\]: must be finite and >= 0 \(got -0.2\)'
detector jstr 'jitter_mas = "5";' 'detector.jitter_mas: expected a number or a list of numbers'
detector jboth 'jitter_mas = 1.0; jitter_lambda_d = 0.1;' 'detector.jitter_lambda_d: give only one of detector.jitter_mas and detector.jitter_lambda_d'
detector cd 'charge_diffusion_px = -0.1;' 'detector.charge_diffusion_px: must be >= 0 \(got -0.1\)'
# Sanity bounds (1e300 and +-1e308 passed, then exit 3 with NaN images).
detector cdbig 'charge_diffusion_px = 1e300;' 'detector.charge_diffusion_px: must be <= 65536 \(the widest image, 65536 pixels: .*\) \(got 1e\+300\)'
detector ipcbig 'ipc = [1e308, -1e308, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];' 'detector.ipc\[0\]: must be in \[-2, 2\] \(a kernel that moves charge; .*\) \(got 1e\+308\)'
detector jldbig 'jitter_lambda_d = 1e300;' 'detector.jitter_lambda_d: must be <= 1000000000 \(.*\) \(got 1e\+300\)'
detector jmasbig 'jitter_mas = [0.0, 1e300];' 'detector.jitter_mas\[1\]: must be <= 1296000000 \(a turn of the sky\) \(got 1e\+300\)'
detector ipc8 'ipc = [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];' 'detector.ipc: must be the 3x3 kernel, 9 values row-major \(got 8\)'
detector ipcsum 'ipc = [0.0, 0.1, 0.0, 0.1, 1.0, 0.1, 0.0, 0.1, 0.0];' 'detector.ipc: must sum to 1 within 1e-6: it moves charge, it makes none \(got 1.4'
detector ipcstr 'ipc = (0.0, "a", 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0);' 'detector.ipc\[1\]: expected a number'
detector write 'write = "all";' 'detector.write: must be "detector", "oversampled" or "both" \(got "all"\)'
detector unk 'oversampling = 4;' 'detector.oversampling: unknown key \(did you mean detector.oversample\?\)'
# The computed grid past 65536 per side: refused before any work.
{ good ''; echo 'output: { npix = 8192; };'; echo 'detector: { oversample = 16; };'; } >det_osbig.cfg
rm -rf out
expect_exit 2 "detector grid too big" -- "$PSFSIM" -c det_osbig.cfg -o out
expect_stderr 'det_osbig.cfg:5: detector.oversample: the computed grid would be 131072 x 131072 \(8192 x 8192 detector pixels times 16\), more than 65536 per side' "grid too big: message"
nothing_written "grid too big"
# A wavelength sweep at the FFT's pixel: the pixel's angle differs per image.
{ good ''; echo 'sweep: { wavelength_nm = [500.0, 600.0]; };'; echo 'detector: { jitter_mas = 5.0; };'; } >det_jsweep.cfg
rm -rf out
expect_exit 2 "detector jitter_mas over a wavelength sweep" -- "$PSFSIM" -c det_jsweep.cfg -o out
expect_stderr 'det_jsweep.cfg:5: detector.jitter_mas: the detector pixel.s angle differs between the set.s wavelengths' "jitter over a sweep: message"
nothing_written "jitter over a sweep"
finish
