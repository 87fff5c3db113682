/* What the NCHW window kernels (window.c, max_pool.c) share with each other and with the
 * chained pointwise-depthwise kernel (chain.c): a window job, the loop over planes, the
 * split rows of stride-2 windows, and the depthwise paths that take a plane at a time. */
#ifndef PH_WINDOW_H
#define PH_WINDOW_H

#include "kernels.h"

typedef struct window_job window_job;

/* Plane t (image t / c, channel t % c) of a depthwise job's output from the input plane x,
 * with `buf` the path's buffer: the job's floats of it, zero where no plane writes. */
typedef void (*dw_plane_fn)(const window_job *job, i64 t, const float *x, float *buf);

struct window_job {
  window_geom wg;
  const float *x, *w, *bias, *res; /* a chained job's x is NULL: its planes come one by one */
  float *y;
  float lo, hi;
  int act;
  i64 c;           /* channels (a depthwise job's weights and biases are per channel) */
  i64 planes;      /* a depthwise job's input planes (images x channels) */
  dw_plane_fn path; /* a depthwise job's plane at a time, when it takes one */
  i64 off[];
};

/* Calls plane(ctx, t, buf) for every plane t in [0, planes) on nt threads (planes are equal
 * work, `work` multiply-adds in all), in contiguous shares (split_tasks), each with a
 * buffer of `floats` floats filled with `fill`: one per thread (ph_worker_index), made and
 * filled by its thread on its first task, so that what a plane leaves unwritten keeps the
 * fill; 0, or -1 when a buffer cannot be allocated. */
typedef void (*plane_fn)(const void *ctx, i64 t, float *buf);
PH_HIDDEN int for_each_plane(i64 planes, i64 work, int nt, i64 floats, plane_fn plane,
                             const void *ctx, float fill);

/* A job over the window geometry g (window_geometry) of c channels, its tap offsets set;
 * NULL when out of memory. */
PH_HIDDEN window_job *window_job_new(const i64 *g, i64 c);

/* Stride-2 windows of at most three columns read each padded input row split into its even
 * and odd columns (split_rows, into halves of depthwise_s2_half floats; a buffer of
 * depthwise_s2_floats for a plane): the depthwise layers' stride-2 path and the 3x3 max
 * pool's. Tap column kx of a window starting at even column 0 lies at split_column: even
 * columns at kx / 2, odd ones in the second half, one float further on. */
static inline i64 split_column(i64 half, int kx) {
  return (kx % 2 ? half + 1 : 0) + kx / 2;
}
PH_HIDDEN i64 depthwise_s2_half(const window_geom *wg);
PH_HIDDEN i64 depthwise_s2_floats(const window_geom *wg);
PH_HIDDEN void split_rows(const window_job *job, const float *x, float *buf, float fill);

/* A depthwise job over geometry g (n images of c channels: g[12], g[13]) from data x (NULL
 * for a chain's, whose planes come one by one) with weights [C][KH][KW] into y, the
 * epilogue's bias, residual and bounds as ph_depthwise_nchw takes them; NULL when out of
 * memory. */
PH_HIDDEN window_job *depthwise_job_new(const i64 *g, const float *x, const float *w, float *y,
                                        const float *bias, const float *res,
                                        const float *bounds);

/* The depthwise path taking planes one at a time for geometry wg (stride-1 "same", stride
 * 2, or tap by tap), and the floats of its buffer. */
PH_HIDDEN dw_plane_fn depthwise_plane_path(const window_geom *wg, i64 *floats);

/* Whether a depthwise layer of geometry wg can take its planes VW channels at a time (at
 * most SMALL_PLANE outputs; on its own it does so where no row path takes them): each
 * group's input padded and channels last, [small_rows][small_cols][VW] floats at the start
 * of a buffer of small_group_floats, zero where no data goes. */
PH_HIDDEN int small_outputs(const window_geom *wg);
PH_HIDDEN i64 small_rows(const window_geom *wg);
PH_HIDDEN i64 small_cols(const window_geom *wg);
PH_HIDDEN i64 small_group_floats(const window_geom *wg);

/* Group t (image t / groups, channels from t % groups * VW on) of a small-plane depthwise
 * job from its input, already in `buf`, into the job's output through its epilogue. */
PH_HIDDEN void small_group_output(const window_job *job, i64 t, float *buf);

#endif /* PH_WINDOW_H */
