# SPDX-License-Identifier: BSD-3-Clause
# A set's files and what psfsim trusts about them: one run at a time on a
# set (its lock), which files are the set's (--force and the existence check
# touch nothing else), the manifest's rows on --resume, what the
# fingerprint covers, and rows and headers written whole. (Faults of the
# directory itself, links planted in it or its removal, are in
# e2e_faults.sh.)
source "$(dirname "$0")/lib_e2e.sh"

# rows FILE: the manifest's data rows.
rows() { tail -n +2 "$1" | wc -l; }

# ---- one run at a time on a set: the lock ----
# A run holds the set's lock while it runs: a second run on the same set,
# --resume or --force with another config, exits 2 naming the holder and
# touches nothing; the first one's set is whole.
cfg l 300 64 '' >l.cfg
sed 's/obscuration = 0.2/obscuration = 0.3/' l.cfg >l2.cfg
rm -rf lk
"$PSFSIM" -q -j 1 -c l.cfg -o lk 2>"$SCRATCH/first.err" &
pid=$!
for _ in $(seq 3000); do [ -s lk/l_manifest.csv ] && break; sleep 0.01; done
stop_all $pid
before=$(ls -A lk | sort | md5sum)
expect_exit 2 "--resume while another run writes the set" -- "$PSFSIM" -q -j 1 --resume -c l.cfg -o lk
expect_stderr "set l in lk is in use by psfsim pid $pid on host $(hostname)" "--resume: names the holder"
expect_exit 2 "--force with another config while another run writes the set" -- \
  "$PSFSIM" -q -j 1 --force -c l2.cfg -o lk
expect_stderr "set l in lk is in use by psfsim pid $pid" "--force: names the holder"
expect_exit 2 "a plain run while another run writes the set" -- "$PSFSIM" -q -j 1 -c l.cfg -o lk
expect_stderr "is in use by psfsim pid $pid" "plain run: names the holder"
[ "$(ls -A lk | sort | md5sum)" = "$before" ] && pass "the refused runs touched nothing" ||
  fail "the refused runs changed the directory"
kill -CONT $pid
wait $pid
rc=$?
[ $rc -eq 0 ] && pass "the first run ends well (exit 0)" || fail "the first run: exit $rc"
[ "$(rows lk/l_manifest.csv)" -eq 300 ] && pass "its manifest lists all 300 images" ||
  fail "its manifest lists $(rows lk/l_manifest.csv) images"
[ ! -e lk/.l.lock ] && pass "the lock file is removed at the end" || fail "lock file left"
expect_exit 0 "--resume once the set is free" -- "$PSFSIM" -v -j 1 --resume -c l.cfg -o lk
expect_stderr "resuming: 300 image\(s\) done earlier" "--resume once free: every image kept"

# A lock file a killed run left (not locked) is taken over.
echo "psfsim pid 1 on host gone" >lk/.l.lock
expect_exit 0 "a stale lock file does not stop a run" -- "$PSFSIM" -q -j 1 --force -c l.cfg -o lk

# ---- a set's files are its own: another set's and the user's stay ----
# Set hst beside set hst_wide (hst_wide_0.png), the user's hst_notes.png and
# hst_calibration.fits, hst_wide's temp file (a run of it in progress) and a
# leftover temp file of hst's own.
cfg hst 3 16 '' >hst.cfg
cfg hst 12 16 '' >hst12.cfg
cfg hst_wide 1 16 '' >wide.cfg
rm -rf own && mkdir own
"$PSFSIM" -q -c wide.cfg -o own || fail "could not write set hst_wide"
echo notes >own/hst_notes.png
echo calibration >own/hst_calibration.fits
echo running >own/.hst_wide_0.png.tmp.AbC123
echo leftover >own/.hst_0.png.tmp.XyZ789
others="hst_wide_0.png hst_wide_manifest.csv hst_wide_timing.csv hst_notes.png hst_calibration.fits .hst_wide_0.png.tmp.AbC123"
sums() { (cd own && md5sum $others 2>&1); }
want=$(sums)
others_kept() { [ "$(sums)" = "$want" ] && pass "$1: the other files are untouched" ||
  { fail "$1: other files changed"; diff <(echo "$want") <(sums) | sed 's/^/  /'; }; }
expect_exit 0 "set hst beside another set's and the user's files" -- "$PSFSIM" -q -c hst.cfg -o own
others_kept "set hst"
[ ! -e own/.hst_0.png.tmp.XyZ789 ] && pass "hst's own leftover temp file removed" ||
  fail "hst's leftover temp file stays"
[ -f own/hst_2.png ] && [ "$(rows own/hst_manifest.csv)" -eq 3 ] && pass "set hst written" ||
  fail "set hst not written"
expect_exit 2 "hst again without --force" -- "$PSFSIM" -q -c hst.cfg -o own
expect_stderr 'already holds image set "hst"' "hst again: the set is found"
# --force: the earlier set is what its manifest names; nothing else goes.
expect_exit 0 "--force: 12 images over 3" -- "$PSFSIM" -q --force -c hst12.cfg -o own
others_kept "--force 12 over 3"
[ ! -e own/hst_0.png ] && [ -f own/hst_00.png ] && [ -f own/hst_11.png ] &&
  pass "--force 12 over 3: the earlier set's hst_0..2 replaced by hst_00..11" ||
  fail "--force 12 over 3: files: $(ls own | grep '^hst_[0-9]' | tr '\n' ' ')"
expect_exit 0 "--force: 3 images over 12" -- "$PSFSIM" -q --force -c hst.cfg -o own
others_kept "--force 3 over 12"
[ -z "$(ls own | grep -E '^hst_[0-9]{2}\.png$')" ] && [ -f own/hst_2.png ] &&
  pass "--force 3 over 12: hst_00..11 removed" ||
  fail "--force 3 over 12: files: $(ls own | grep '^hst_[0-9]' | tr '\n' ' ')"
# Without a manifest: NAME_<k> of this set's digit count and k < K only
# (the files the set writes; issue 26: --force removed a user's hst_7.png).
rm own/hst_manifest.csv
echo seven >own/hst_7.png
echo padded >own/hst_07.png
expect_exit 2 "no manifest: hst_0..2.png are of the set" -- "$PSFSIM" -q -c hst.cfg -o own
expect_exit 0 "no manifest: --force" -- "$PSFSIM" -q --force -c hst.cfg -o own
others_kept "no manifest, --force"
[ "$(cat own/hst_7.png)" = seven ] && [ "$(cat own/hst_07.png)" = padded ] &&
  pass "no manifest: hst_7.png (beyond the set) and hst_07.png (another digit count) kept" ||
  fail "no manifest: hst_7.png / hst_07.png wrong"
# A manifest row naming another file gives it no claim: it is not removed.
sed -i '2s/^0,hst_0\.png,/0,hst_notes.png,/' own/hst_manifest.csv
expect_exit 0 "--force over a manifest naming hst_notes.png" -- "$PSFSIM" -q --force -c hst12.cfg -o own
others_kept "manifest naming hst_notes.png"

# ---- --resume trusts only rows that name the set's own files ----
# Row 3 names ../../../../../../etc/passwd (a file that exists), row 4 the
# user's rs_notes.fits, and rs_2.png is a link to a file outside: none of
# them is the set's, so those images are computed again and the manifest
# names the set's own files.
cfg rs 6 16 'fits: { enabled = true; };' >rs.cfg
rm -rf rsd outside_rs && mkdir outside_rs && echo outside >outside_rs/img.png
expect_exit 0 "a set to resume" -- "$PSFSIM" -q -j 1 -c rs.cfg -o rsd
rm rsd/rs_3.png rsd/rs_2.png
ln -s "$SCRATCH/outside_rs/img.png" rsd/rs_2.png
echo notes >rsd/rs_notes.fits
sed -i -e '4,$s/^3,rs_3\.png,/3,..\/..\/..\/..\/..\/..\/etc\/passwd,/' \
  -e '4,$s/^4,rs_4\.png,rs_4\.fits,/4,rs_4.png,rs_notes.fits,/' rsd/rs_manifest.csv
expect_exit 0 "--resume over rows naming other files" -- "$PSFSIM" -v -j 1 --resume -c rs.cfg -o rsd
expect_stderr "resuming: 3 image\(s\) done earlier" "untrusted rows: images 2, 3 and 4 computed again"
expect_stderr "2 row\(s\) name files that are not this set's .*not trusted" "untrusted rows: a warning"
[ -f rsd/rs_3.png ] && [ ! -L rsd/rs_2.png ] && [ -f rsd/rs_2.png ] &&
  pass "untrusted rows: rs_2.png and rs_3.png written" || fail "untrusted rows: images missing"
[ "$(cat outside_rs/img.png)" = outside ] && pass "the link's target untouched" ||
  fail "the link's target changed"
[ "$(awk -F, 'NR > 1 { print $1 ":" $2 ":" $3 }' rsd/rs_manifest.csv | tr '\n' ' ')" = \
  "0:rs_0.png:rs_0.fits 1:rs_1.png:rs_1.fits 2:rs_2.png:rs_2.fits 3:rs_3.png:rs_3.fits 4:rs_4.png:rs_4.fits 5:rs_5.png:rs_5.fits " ] &&
  pass "untrusted rows: the manifest names the set's own files" ||
  fail "untrusted rows: manifest: $(cut -d, -f1-3 rsd/rs_manifest.csv | tr '\n' ' ')"
[ "$(cat rsd/rs_notes.fits)" = notes ] && pass "rs_notes.fits untouched" || fail "rs_notes.fits changed"

# ---- the fingerprint covers every byte that decides the images ----
# An @include'd file, the OPD map and the aperture map: editing or replacing
# any of them makes --resume refuse the set (another config), as editing
# the config itself does; put back, the set resumes.
rm -rf fpd fpm && mkdir fpm
cfg m 2 16 'fits: { enabled = true; };' >fpm/m.cfg
"$PSFSIM" -q -c fpm/m.cfg -o fpm/out || fail "could not make the maps"
cp fpm/out/m_0.fits fpm/opd.fits && cp fpm/out/m_1.fits fpm/opd_other.fits
cp fpm/out/m_0.png fpm/pupil.png && cp fpm/out/m_1.png fpm/pupil_other.png
cat >fpm/optics.inc <<'INC'
optics: { wavelength_nm = 550.0; aperture: { shape = "file"; file = "pupil.png"; diameter_m = 1.0; }; };
INC
cat >fpm/fp.cfg <<'CFG'
name = "fp";
@include "optics.inc"
sampling: { pupil_samples = 16; };
aberrations: { opd_map: { file = "opd.fits"; scale = 10.0; }; };
sweep: { defocus = [0.0, 0.1, 0.2, 0.3]; };
CFG
expect_exit 0 "a set with an include and two maps" -- "$PSFSIM" -q -j 1 -c fpm/fp.cfg -o fpd
expect_exit 0 "--resume, nothing changed" -- "$PSFSIM" -v -j 1 --resume -c fpm/fp.cfg -o fpd
expect_stderr "resuming: 4 image\(s\) done earlier" "nothing changed: every image kept"
changed() { # WHAT FILE OTHER: with FILE replaced by OTHER, --resume refuses; then it is put back
  cp "fpm/$2" fpm/saved && cp "fpm/$3" "fpm/$2"
  expect_exit 2 "--resume after $1" -- "$PSFSIM" -q -j 1 --resume -c fpm/fp.cfg -o fpd
  expect_stderr "written for another config" "$1: another config"
  cp fpm/saved "fpm/$2"
}
sed 's/diameter_m = 1.0/diameter_m = 2.0/' fpm/optics.inc >fpm/optics_other.inc
changed "editing the included file" optics.inc optics_other.inc
changed "replacing the OPD map" opd.fits opd_other.fits
changed "replacing the aperture map" pupil.png pupil_other.png
expect_exit 0 "--resume with everything put back" -- "$PSFSIM" -v -j 1 --resume -c fpm/fp.cfg -o fpd
expect_stderr "resuming: 4 image\(s\) done earlier" "put back: every image kept"

# ---- rows and headers are written whole, or the set is refused ----
# 300 swept Zernike terms (j = 5..304, one value each: one image): the
# manifest's zernike_j and zernike_coeff cells list all 300 (they were cut
# after ~150), and --resume reads the 5 KB row back. With FITS output, more
# than 256 terms (one Z<j> keyword each) is refused before any work; 256 are
# written whole.
zcfg() { # NAME FIRST LAST OUTPUT
  local terms
  terms=$(awk -v a="$2" -v b="$3" 'BEGIN { for (j = a; j <= b; ++j) printf "%s(%d, [0.0123456789])", (j > a ? ", " : ""), j }')
  cat <<CFG
name = "$1";
optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };
sampling: { pupil_samples = 16; };
sweep: { zernike = ( $terms ); };
output: { $4 };
CFG
}
zcfg zt 5 304 '' >zt.cfg
zcfg ztf 5 304 'fits: { enabled = true; };' >ztf.cfg
zcfg z256 5 260 'fits: { enabled = true; };' >z256.cfg
rm -rf zd
expect_exit 0 "300 swept terms, PNG" -- "$PSFSIM" -q -c zt.cfg -o zd
cells=$(awk -F, 'NR == 2 { print split($7, a, ";") " " split($8, b, ";") }' zd/zt_manifest.csv)
[ "$cells" = "300 300" ] && pass "the manifest lists all 300 terms' j and values" ||
  fail "the manifest's cells hold $cells terms"
[ "$(awk -F, 'NR == 2 { print $7 }' zd/zt_manifest.csv | awk -F';' '{ print $NF }')" = 304 ] &&
  pass "the last term is j = 304" || fail "the last term is not j = 304"
expect_exit 0 "--resume of the 300-term set" -- "$PSFSIM" -v --resume -c zt.cfg -o zd
expect_stderr "resuming: 1 image\(s\) done earlier" "--resume reads the long row back"
expect_exit 2 "300 terms with FITS output" -- "$PSFSIM" -q -c ztf.cfg -o zdf
expect_stderr "ztf\.cfg:4: sweep\.zernike: the set has 300 Zernike terms .*at most 256" \
  "300 terms with FITS: the limit and the key"
[ ! -e zdf ] && pass "300 terms with FITS: nothing written" || fail "300 terms with FITS: files written"
expect_exit 0 "256 terms with FITS output" -- "$PSFSIM" -q -c z256.cfg -o zd256
nz=$(head -c 28800 zd256/z256_0.fits | fold -w 80 | sed '/^END /q' | grep -c '^Z[0-9]')
[ "$nz" -eq 256 ] && pass "256 terms: the header holds 256 Z<j> keywords" ||
  fail "256 terms: the header holds $nz Z<j> keywords"

finish
