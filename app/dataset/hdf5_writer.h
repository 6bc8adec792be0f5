/* SPDX-License-Identifier: BSD-3-Clause */
/* output.hdf5: the whole set as one NAME.h5 (app/formats/h5set.h), written
 * by a thread of its own in blocks of whole batches: as each batch
 * retires (in any order with several lanes), its images (float32, or the
 * uint16 stretch levels the writer pool made) and labels are copied into a
 * block and queued (or, hdf5_writer_add_held, the images are written from
 * the caller's batch buffer in place, which it keeps until
 * hdf5_writer_wait_slot); the thread gives each block to h5set_write, one call
 * per run of consecutive indices (the module stages chunks given in part).
 * The queue holds at most HDF5_QUEUE_BATCHES batches: a lane that would
 * pass it waits, so memory stays bounded (app/run/set_limits.c counts it).
 * NAME.h5 appears, renamed from its temp file, only complete; an
 * interrupted or failed run keeps the temp file for --resume. */
#ifndef PSFSIM_HDF5_WRITER_H
#define PSFSIM_HDF5_WRITER_H

#include <stddef.h>

#include "app/dataset/hdf5_labels.h"
#include "app/base/host_pool.h"
#include "app/select/gpu_list.h"
#include "app/output/writer_pool.h"

/* Batches of images the queue holds beyond the one being written. */
#define HDF5_QUEUE_BATCHES 2

typedef struct hdf5_writer hdf5_writer;

/* 1 when NAME.h5 in the directory dirfd (dir: for messages) is a finished
 * set of s under provenance pv's config hash: its layout, attributes and
 * flags as h5set_check_complete checks them (the file is opened, not
 * trusted on its sidecar's word). Else 0 with the reason in why. */
int hdf5_writer_check_complete(const image_set *s, int dirfd, const char *dir,
                               const hdf5_provenance *pv, char *why, size_t whylen);

/* Open NAME.h5's temp file in the directory dirfd (dir: its name for
 * messages; the file is made through that descriptor) for set s (resume: continue the temp file
 * an interrupted run of the same config fingerprint left, else start
 * afresh) and start the thread. batch: the most images one add gives (the
 * queue's unit). info (may be NULL) says whether a temp file was resumed.
 * NULL with err ("cannot write DIR/NAME.h5: ..."). */
hdf5_writer *hdf5_writer_open(const image_set *s, int dirfd, const char *dir,
                              const hdf5_provenance *pv, int resume, int batch, h5set_info *info,
                              char *err, size_t errlen);

/* [K]: 1 where image k was in the file when it was opened (a resumed temp
 * file's images). Images given again are skipped: the file keeps its own. */
const unsigned char *hdf5_writer_written(const hdf5_writer *w);

/* Queue the images of jobs[0..n-1] written by the writer pool (status 0;
 * the others are left out), with their labels; jobs ascend in k; the rows
 * are copied in parts on pool's threads (NULL: on this one). Waits
 * while the queue is full. 0, or -1 with err when the thread has failed
 * (its message: the run then stops). */
int hdf5_writer_add(hdf5_writer *w, host_pool *pool, const write_job *jobs, int n, char *err,
                    size_t errlen);

/* Slots hdf5_writer_add_held tells apart: every lane's (run_state.slots). */
#define HDF5_MAX_SLOTS (GPU_LIST_MAX * WRITER_SLOTS)

/* As hdf5_writer_add, but the rows that lie in place (each job's image,
 * or uint16 levels, right after the last one's; likewise the float32
 * oversampled images) are written from the caller's memory, not copied:
 * it belongs to slot (0 .. HDF5_MAX_SLOTS-1; another is copied as
 * hdf5_writer_add does) and must not change until hdf5_writer_wait_slot
 * for it returns. What cannot be taken in place is copied (the noisy and
 * uint16 oversampled images, made here; the labels); a chunk given in
 * part is kept by the module (h5set.h), so the slot's bytes are not
 * needed once its rows are written; rows the file had are skipped. */
int hdf5_writer_add_held(hdf5_writer *w, host_pool *pool, const write_job *jobs, int n, int slot,
                         char *err, size_t errlen);

/* Wait until the writer thread is done with slot's memory (every block
 * hdf5_writer_add_held gave from it written, copied into a group, or
 * dropped after a failure). At once for w NULL or a slot it holds no
 * rows of. */
void hdf5_writer_wait_slot(hdf5_writer *w, int slot);

/* Write what is queued, stop the thread and close: complete (every image
 * given) renames NAME.h5 into place with its attributes, else the temp
 * file is kept for --resume, unless it was an earlier run's, resumed, and
 * this run failed to write it: then it is removed (a damaged file would
 * fail every later --resume) and err says so. Frees w (NULL is fine). 0,
 * or -1 with err (the thread's failure, or the close's). */
int hdf5_writer_close(hdf5_writer *w, int complete, char *err, size_t errlen);

/* The batch (images per backend run) for set s, which the backend would
 * run in batches of batch images, todo of them: batch, unless the set
 * writes NAME.h5 and the writer's group (16 MiB of rows) would hold several
 * batches; then one image more than a group holds, so that each batch is
 * written from the caller's memory in place (hdf5_writer_add_held) rather
 * than copied into a block and from it into the group (the CPU's 64
 * images of 64^2, 1 MiB: 1,025; 100,000 of them into tmpfs on 2 cores took
 * 1.37 s instead of 1.88), at most todo / 4 so that computing and writing
 * still overlap. No errors. */
int hdf5_writer_batch(const image_set *s, int batch, long long todo);

/* Bytes of one image of set s in NAME.h5 (M^2 float32 or uint16 values). */
unsigned long long hdf5_writer_image_bytes(const image_set *s);

/* Bytes of one image of the oversampled dataset (detector.write = "both":
 * s M x s M float32 or uint16), else 0. */
unsigned long long hdf5_writer_over_bytes(const image_set *s);

/* Images per chunk of NAME.h5's image datasets: output.hdf5.chunk_images,
 * or unset the module's rule, h5set_auto_chunk_images (app/formats/h5set.h:
 * the whole images of the largest image dataset in 64 KiB, at least 1), at
 * most K (nimages), at least 1. */
unsigned long long hdf5_writer_chunk_images(const image_set *s);

/* Host memory writing NAME.h5 takes for set s with batches of batch images
 * on lanes computing devices, bytes (saturating): the queue
 * (HDF5_QUEUE_BATCHES batches of images, the oversampled and noisy images
 * when written, and labels, as copied: blocks given in place hold only
 * their labels and what is made here, so this bounds them too), the batch
 * the writer thread is writing, and its group (up to 16 MiB of rows, where
 * that holds more than a batch); the module's stages (every image
 * dataset's chunk), a chunk given in part each (at most one per batch buffer, WRITER_SLOTS per
 * lane, and two more), its gzip threads' buffers (at most 8 threads, each a chunk shuffled and
 * its run deflated: 2 max(chunk, H5SET_GZIP_RUN_BYTES), with zlib's margin); the written flags
 * (3 bytes an image); for uint16 the slots' stretch levels (WRITER_SLOTS batches of 2 M^2 per
 * lane). A chunk is hdf5_writer_chunk_images's c images of every image dataset. */
unsigned long long hdf5_writer_memory_need(const image_set *s, int batch, int lanes);

/* Disk space of NAME.h5 for set s, bytes (saturating), as if uncompressed
 * (gzip stores a chunk deflate cannot shrink as it is): K images (and
 * their oversampled and noisy ones when written), the
 * labels ((J + columns) doubles and the written flag an image), and
 * HDF5's metadata (256 bytes a chunk for the chunk index, 1 MiB for the
 * rest); plus 1 MiB for the sidecar NAME.json. */
unsigned long long hdf5_writer_disk_need(const image_set *s);

#endif
