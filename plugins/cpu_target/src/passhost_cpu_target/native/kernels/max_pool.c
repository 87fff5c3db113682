/* Max pooling over NCHW data (the NHWC kernel is in window_nhwc.c): a window kernel, on the
 * planes of window.c's loop. */
#include "window.h"

/* Plane t through the tap-by-tap path: the plane's phase planes (-inf outside the data),
 * then the largest tap of every wide output, taps in order. */
static void max_pool_plane(const void *ctx, i64 t, float *buf) {
  const window_job *job = ctx;
  const window_geom *wg = &job->wg;
  float *restrict acc = buf + wg->acc;
  phase_planes(buf, job->x + t * wg->h * wg->w, wg, -INFINITY);
  memcpy(acc, buf + job->off[0], (size_t)wg->wide * sizeof(float));
  for (i64 tap = 1; tap < wg->kh * wg->kw; tap++) {
    const float *restrict s = buf + job->off[tap];
    for (i64 p = 0; p < wg->wide; p++) {
      const float a = acc[p], v = s[p];
      acc[p] = (a != a || a > v) ? a : v;
    }
  }
  for (i64 oy = 0; oy < wg->oh; oy++)
    memcpy(job->y + (t * wg->oh + oy) * wg->ow, acc + oy * wg->wq,
           (size_t)wg->ow * sizeof(float));
}

/* 3x3 stride-2 pooling (ResNet's), padded by at most one at the top and left, reads the plane
 * split into even and odd columns as depthwise_s2 does, the padding -inf: each output vector
 * is the largest of nine whole vectors. ResNet's pool (64 channels, 112 -> 56): 0.65x the
 * time of the tap-by-tap path, which copied four phase planes. The largest of each input
 * row's three taps (row_max) serves the two output rows that row is a tap row of, going
 * down a column of vectors: six vectors loaded per output vector instead of nine (0.94x the
 * time warm, 1.0x with the caches evicted, C harness). Taking each row's taps, then the
 * rows, in order keeps the taps' order (the last of equal values wins, so a -0 and a +0
 * tie as in the tap-by-tap path, and the first NaN). */
static int max_pool_s2(const window_geom *wg) {
  return wg->kh == 3 && wg->kw == 3 && wg->sh == 2 && wg->sw == 2 && wg->dh == 1 &&
         wg->dw == 1 && wg->pt >= 0 && wg->pt <= 1 && wg->pl >= 0 && wg->pl <= 1 &&
         wg->ow >= VW - VW / 4;
}

/* The largest of a split row's three taps (kx = 0, 1, 2) for the outputs at `row`, in the
 * taps' order. */
static inline vf row_max(const float *row, i64 half) {
  vf acc = *(const vf *)(row + split_column(half, 0));
  for (int kx = 1; kx < 3; kx++) acc = vmax_nan(acc, *(const vf *)(row + split_column(half, kx)));
  return acc;
}

static void max_pool_s2_plane(const void *ctx, i64 t, float *buf) {
  const window_job *job = ctx;
  const window_geom *wg = &job->wg;
  const i64 half = depthwise_s2_half(wg), stride = 2 * half;
  float *dst = job->y + t * wg->oh * wg->ow;
  split_rows(job, job->x + t * wg->h * wg->w, buf, -INFINITY);
  for (i64 ox = 0; ox < wg->ow; ox += VW) {
    const float *col = buf + VW - 1 + ox;
    vf top = row_max(col, half);
    for (i64 oy = 0; oy < wg->oh; oy++) {
      const float *row = col + 2 * oy * stride;
      const vf mid = row_max(row + stride, half), low = row_max(row + 2 * stride, half);
      store_first(dst + oy * wg->ow + ox, vmax_nan(vmax_nan(top, mid), low),
                  min64(VW, wg->ow - ox));
      top = low;
    }
  }
}

/* Max pooling, NCHW: the largest tap of each window (padding never wins; NaN propagates). */
int ph_max_pool_nchw(const float *x, float *y, const i64 *g) {
  window_job *job = window_job_new(g, 1);
  if (!job) return -1;
  job->x = x;
  job->y = y;
  const int s2 = max_pool_s2(&job->wg);
  const i64 work = g[12] * job->wg.oh * job->wg.ow * job->wg.kh * job->wg.kw;
  const int status = for_each_plane(
      g[12], work, num_threads(g[13]), s2 ? depthwise_s2_floats(&job->wg) : job->wg.floats,
      s2 ? max_pool_s2_plane : max_pool_plane, job, s2 ? -INFINITY : 0.0f);
  free(job);
  return status;
}
