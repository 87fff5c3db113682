/* Window kernels over NHWC data, vectors along the channels: depthwise convolution and max
 * pooling (the NCHW ones are in window.c and max_pool.c). */
#include "kernels.h"

typedef struct {
  const float *x, *w, *bias, *res;
  float *y;
  const i64 *g;
  i64 tasks;
  float lo, hi;
  int act;
} nhwc_job;

/* Task t of NHWC max pooling: a contiguous share of the output rows (of every image). Each
 * output's channels, a vector at a time, start at -inf and take the window's taps inside
 * the data in order, as ph_max_pool_nchw's padded planes give them (the padding never wins,
 * the first NaN does, and of equal values the last: a -0 and a +0 tie the same way). */
static void max_pool_nhwc_rows(void *arg, i64 task) {
  const nhwc_job *job = arg;
  const window_geom wg = window_geometry(job->g);
  const i64 c = job->g[13];
  i64 t0, t1;
  part_range(job->g[12] * wg.oh, job->tasks, task, &t0, &t1);
  for (i64 t = t0; t < t1; t++) {
    const i64 b = t / wg.oh, oy = t % wg.oh;
    const i64 ky0 = max64(0, (wg.pt - oy * wg.sh + wg.dh - 1) / wg.dh);
    const i64 ky1 = min64(wg.kh, (wg.h + wg.pt - oy * wg.sh + wg.dh - 1) / wg.dh);
    for (i64 ox = 0; ox < wg.ow; ox++) {
      const i64 kx0 = max64(0, (wg.pl - ox * wg.sw + wg.dw - 1) / wg.dw);
      const i64 kx1 = min64(wg.kw, (wg.w + wg.pl - ox * wg.sw + wg.dw - 1) / wg.dw);
      /* the window's first tap, which may lie outside the data */
      const i64 origin = ((b * wg.h + oy * wg.sh - wg.pt) * wg.w + ox * wg.sw - wg.pl) * c;
      for (i64 c0 = 0; c0 < c; c0 += VW) {
        const i64 nc = min64(VW, c - c0);
        vf acc = (vf){0} - INFINITY;
        for (i64 ky = ky0; ky < ky1; ky++)
          for (i64 kx = kx0; kx < kx1; kx++) {
            const float *tap = job->x + (origin + (ky * wg.dh * wg.w + kx * wg.dw) * c + c0);
            acc = vmax_nan(acc, nc == VW ? *(const vf *)tap : load_first(tap, nc));
          }
        store_first(job->y + (t * wg.ow + ox) * c + c0, acc, nc);
      }
    }
  }
}

/* Max pooling, NHWC: the largest tap of each window (padding never wins; NaN propagates),
 * vectors along the channels. */
void ph_max_pool_nhwc(const float *x, float *y, const i64 *g) {
  const int nt = num_threads(g[14]);
  const i64 rows = g[12] * g[2], work = rows * g[3] * g[4] * g[5] * g[13];
  nhwc_job job = {.x = x, .y = y, .g = g, .tasks = split_tasks(rows, work, nt)};
  ph_parallel(job.tasks, nt, max_pool_nhwc_rows, &job);
}

/* Task t of an NHWC depthwise convolution: a contiguous share of the output rows (of every
 * image), each then through the activation. */
static void depthwise_nhwc_rows(void *arg, i64 task) {
  const nhwc_job *job = arg;
  const i64 *g = job->g;
  const i64 h = g[0], wd = g[1], oh = g[2], ow = g[3], kh = g[4], kw = g[5], sh = g[6];
  const i64 sw = g[7], dh = g[8], dw = g[9], pt = g[10], pl = g[11], n = g[12], c = g[13];
  const float *x = job->x, *w = job->w, *bias = job->bias, *res = job->res;
  float *y = job->y;
  i64 t0, t1;
  part_range(n * oh, job->tasks, task, &t0, &t1);
  for (i64 t = t0; t < t1; t++) {
    const i64 b = t / oh, oy = t % oh;
    for (i64 ox = 0; ox < ow; ox++) {
      float *dst = y + (t * ow + ox) * c;
      memset(dst, 0, (size_t)c * sizeof(float));
      for (i64 ky = 0; ky < kh; ky++) {
        const i64 iy = oy * sh + ky * dh - pt;
        if (iy < 0 || iy >= h) continue;
        for (i64 kx = 0; kx < kw; kx++) {
          const i64 ix = ox * sw + kx * dw - pl;
          if (ix < 0 || ix >= wd) continue;
          const float *restrict s = x + ((b * h + iy) * wd + ix) * c;
          const float *restrict wt = w + (ky * kw + kx) * c;
          for (i64 ch = 0; ch < c; ch++) dst[ch] += wt[ch] * s[ch];
        }
      }
      epilogue(dst, dst, c, bias, 1, res ? res + (t * ow + ox) * c : NULL, job->lo, job->hi);
    }
    if (job->act) activate(y + t * ow * c, 1, 0, ow * c, job->act); /* the output row */
  }
}

/* Depthwise convolution, NHWC data, weights [KH][KW][C]: vectors run along the channels. */
static void depthwise_nhwc(const float *x, const float *w, float *y, const float *bias,
                           const float *res, const i64 *g, const float *bounds) {
  const int nt = num_threads(g[14]);
  const i64 rows = g[12] * g[2], work = rows * g[3] * g[4] * g[5] * g[13];
  nhwc_job job = {x, w, bias, res, y, g, split_tasks(rows, work, nt), bounds[0], bounds[1],
                  activation_of(bounds)};
  ph_parallel(job.tasks, nt, depthwise_nhwc_rows, &job);
}

/* Depthwise convolution, NHWC data, weights [KH][KW][C] (vectors along the channels),
 * subnormals flushed. */
void ph_depthwise_nhwc(const float *x, const float *w, float *y, const float *bias,
                       const float *res, const i64 *g, const float *bounds) {
  const fp_mode mode = flush_subnormals();
  depthwise_nhwc(x, w, y, bias, res, g, bounds);
  set_fp_mode(mode);
}
