/* Depthwise convolutions over NCHW data, and what the window kernels share (max pooling is in
 * max_pool.c, the NHWC kernels in window_nhwc.c). */
#include "window.h"

/* for_each_plane's job. */
typedef struct {
  plane_fn plane;
  const void *ctx;
  float **bufs; /* one per thread, NULL until its first task */
  i64 planes, floats, tasks;
  float fill;
  _Atomic int failed;
} plane_job;

static void plane_task(void *arg, i64 t) {
  plane_job *job = arg;
  float **buf = &job->bufs[ph_worker_index()];
  if (!*buf) {
    *buf = aligned_floats(job->floats, job->fill == 0.0f);
    if (!*buf) {
      atomic_store(&job->failed, 1);
      return;
    }
    if (job->fill != 0.0f)
      for (i64 i = 0; i < job->floats; i++) (*buf)[i] = job->fill;
  }
  i64 p0, p1;
  part_range(job->planes, job->tasks, t, &p0, &p1);
  for (i64 p = p0; p < p1; p++) job->plane(job->ctx, p, *buf);
}

int for_each_plane(i64 planes, i64 work, int nt, i64 floats, plane_fn plane, const void *ctx,
                   float fill) {
  plane_job job = {.plane = plane, .ctx = ctx, .planes = planes, .floats = floats,
                   .tasks = split_tasks(planes, work, nt), .fill = fill};
  atomic_init(&job.failed, 0);
  job.bufs = calloc((size_t)nt, sizeof(float *));
  if (!job.bufs) return -1;
  ph_parallel(job.tasks, nt, plane_task, &job);
  for (int i = 0; i < nt; i++) free(job.bufs[i]);
  free(job.bufs);
  return atomic_load(&job.failed) ? -1 : 0;
}

window_job *window_job_new(const i64 *g, i64 c) {
  const window_geom wg = window_geometry(g);
  window_job *job = malloc(sizeof(window_job) + sizeof(i64) * (size_t)(wg.kh * wg.kw));
  if (!job) return NULL;
  memset(job, 0, sizeof(window_job));
  job->wg = wg;
  job->c = c;
  tap_offsets(job->off, &wg);
  return job;
}

/* Output rows [oy, oy + nr) (nr <= DW_ROWS), columns [ox, ox + n) with n <= nv * VW, of one
 * plane from its phase planes, through the epilogue straight from the registers: nr x nv
 * independent sums keep the multiply-add units busy where one row's few sums would wait on
 * each other. `src`, `dst` and `res` point at (oy, ox) in the phase-plane grid (row stride
 * wq) and in the output (row stride ow). A partial last vector is stored whole when the
 * `room` floats from its row's start in dst (the rest of this output plane, which later
 * rows and segments overwrite) have space for it, else it goes through `tmp`. Inlined with
 * constant nr and nv so that the sums stay in registers. */
#define DW_ROWS 4

/* Output rows dst + r * ow (r < rows <= DW_ROWS) of sums a[r][0..nv), through the epilogue
 * (see depthwise_block). */
static inline __attribute__((always_inline)) void depthwise_store(
    const window_job *job, vf a[][4], i64 n, float *dst, const float *bias, const float *res,
    float *tmp, i64 room, int rows, const int nv) {
  const i64 ow = job->wg.ow;
  const vf lo = (vf){0} + job->lo, hi = (vf){0} + job->hi;
  const vf b = (vf){0} + (bias ? *bias : 0.0f);
  for (int r = 0; r < rows; r++) {
    float *d = dst + r * ow;
    const float *rs = res ? res + r * ow : NULL;
    for (int v = 0; v < nv; v++) {
      const i64 left = n - v * VW;
      if (left < VW && room - r * ow < (v + 1) * VW) {
        *(vf *)tmp = a[r][v];
        epilogue(d + v * VW, tmp, left, bias, 0, rs ? rs + v * VW : NULL, job->lo, job->hi);
        break;
      }
      vf y = a[r][v] + b;
      if (rs) y += *(const vf *)(rs + v * VW);
      *(vf *)(d + v * VW) = vclamp(y, lo, hi);
    }
  }
}

/* The sums of depthwise_block. Generic (step = 0): tap by tap, rows `stride` apart from
 * `src`, the tap offsets from job->off. ks x ks undilated with stride `step` (ks = 3, 5 or
 * 7 with step 1, ks = 3 with step 2): input row by input row (rows `stride` apart), so that
 * each vector loaded feeds every output row whose window covers it. Step 1 reads columns
 * one apart; step 2 reads the row's even and odd columns split in two halves of
 * stride / 2 floats (see depthwise_s2_plane). The sums are those of nr rows; the first
 * `rows` are stored (the row paths sum DW_ROWS rows at the bottom too, from zero rows
 * below the plane: one variant fewer to compile per width). */
static inline __attribute__((always_inline)) void depthwise_block(
    const window_job *job, const float *src, i64 stride, const float *wc, i64 n, float *dst,
    const float *bias, const float *res, float *tmp, i64 room, const int nr, int rows,
    const int nv, const int step, const int ks) {
  vf a[DW_ROWS][4];
  for (int r = 0; r < nr; r++)
    for (int v = 0; v < nv; v++) a[r][v] = (vf){0};
  if (step) {
    /* Input row j's taps into the sums of the rows whose windows cover it. Its weights are
     * read anew for each row: kept in registers from one row to the next (up to ks - 1 rows
     * on), a 7x7's 49 spill. */
#define DW_ROW_TAPS(j)                                                                   \
  do {                                                                                   \
    const float *wj = wc;                                                                \
    __asm__("" : "+r"(wj));                                                              \
    _Pragma("GCC unroll 8") for (int kx = 0; kx < ks; kx++) {                           \
      const i64 col = step == 1 ? kx : split_column(stride / 2, kx);                    \
      vf in[4];                                                                          \
      for (int v = 0; v < nv; v++) in[v] = *(const vf *)(src + (j) * stride + col + v * VW); \
      _Pragma("GCC unroll 4") for (int r = 0; r < nr; r++) {                            \
        const int ky = (j) - step * r;                                                   \
        if (ky < 0 || ky >= ks) continue;                                                \
        const vf wt = (vf){0} + wj[ky * ks + kx];                                        \
        for (int v = 0; v < nv; v++) a[r][v] += wt * in[v];                              \
      }                                                                                  \
    }                                                                                    \
  } while (0)
    /* 3x3: the rows unrolled; 5x5 and 7x7 in a loop (unrolled, they took most of the
     * library's compile time, ten times that under the sanitizers) */
    if (ks == 3) {
#pragma GCC unroll 16
      for (int j = 0; j < (nr - 1) * step + ks; j++) DW_ROW_TAPS(j);
    } else {
#pragma GCC unroll 1
      for (int j = 0; j < (nr - 1) * step + ks; j++) DW_ROW_TAPS(j);
    }
#undef DW_ROW_TAPS
  } else {
    const i64 taps = job->wg.kh * job->wg.kw;
    for (i64 tap = 0; tap < taps; tap++) {
      const float *s = src + job->off[tap];
      const vf wt = (vf){0} + wc[tap];
      for (int r = 0; r < nr; r++)
        for (int v = 0; v < nv; v++) a[r][v] += wt * *(const vf *)(s + r * stride + v * VW);
    }
  }
  depthwise_store(job, a, n, dst, bias, res, tmp, room, rows, nv);
}

/* depthwise_block with nr (DW_ROWS, or 1 on the generic path), nv, `step` and `ks` as
 * constants; inlined into one function per (step, ks) (DW_BLOCKS), each holding only its
 * own variants and loading its taps' weights per call (inlined into a loop over blocks, GCC
 * kept all 49 of a 7x7's broadcast weights live across it and spilled). */
static inline __attribute__((always_inline)) void depthwise_block_any(
    const window_job *job, const float *src, i64 stride, const float *wc, i64 n, float *dst,
    const float *bias, const float *res, float *tmp, i64 room, int rows, int step, int ks) {
#define DW_CASE(R, V, S, K) \
  depthwise_block(job, src, stride, wc, n, dst, bias, res, tmp, room, R, rows, V, S, K)
#define DW_CASES(R, S, K)                \
  switch (nv) {                          \
    case 1: DW_CASE(R, 1, S, K); break;  \
    case 2: DW_CASE(R, 2, S, K); break;  \
    case 3: DW_CASE(R, 3, S, K); break;  \
    default: DW_CASE(R, 4, S, K);        \
  }
  const int nv = (int)((n + VW - 1) / VW);
  if (step == 1 && ks == 3) {
    DW_CASES(DW_ROWS, 1, 3)
  } else if (step == 1 && ks == 5) {
    DW_CASES(DW_ROWS, 1, 5)
  } else if (step == 1 && ks == 7) {
    DW_CASES(DW_ROWS, 1, 7)
  } else if (step == 2 && ks == 3) {
    DW_CASES(DW_ROWS, 2, 3)
  } else if (step == 2 && ks == 5) {
    DW_CASES(DW_ROWS, 2, 5)
  } else if (rows == DW_ROWS) {
    DW_CASES(DW_ROWS, 0, 0)
  } else {
    DW_CASES(1, 0, 0)
  }
#undef DW_CASES
#undef DW_CASE
}

typedef void (*dw_block_fn)(const window_job *job, const float *src, i64 stride,
                            const float *wc, i64 n, float *dst, const float *bias,
                            const float *res, float *tmp, i64 room, int rows);

#define DW_BLOCK(NAME, S, K)                                                               \
  static __attribute__((noinline)) void NAME(const window_job *job, const float *src,      \
                                             i64 stride, const float *wc, i64 n, float *dst, \
                                             const float *bias, const float *res, float *tmp, \
                                             i64 room, int rows) {                         \
    depthwise_block_any(job, src, stride, wc, n, dst, bias, res, tmp, room, rows, S, K);   \
  }
DW_BLOCK(depthwise_block_taps, 0, 0)
DW_BLOCK(depthwise_block_s1k3, 1, 3)
DW_BLOCK(depthwise_block_s1k5, 1, 5)
DW_BLOCK(depthwise_block_s1k7, 1, 7)
DW_BLOCK(depthwise_block_s2k3, 2, 3)
DW_BLOCK(depthwise_block_s2k5, 2, 5)
#undef DW_BLOCK

/* K x K (K = 3, 5 or 7), stride-1, undilated depthwise convolutions padded by K / 2 on
 * every side keep the output's size; they read the plane from a copy in `buf` with K / 2
 * zero rows above and below and each row's data from column VW of a row of
 * depthwise_same_stride floats, zero around it (written once per buffer: every plane writes
 * the same places). Rows of at least three quarters of a vector take this path whatever
 * the plane's size (a 3x3 at 14x14 ran 0.8x the time of the small-plane path); narrower
 * ones waste too much of each vector. Each vector loaded feeds every output row of a block
 * whose window covers it; 5x5 and 7x7 take it for rows of two vectors less a quarter or
 * more (at 14x14, 7x7 ran 1.25x and 5x5 with SiLU 1.2x the time of the generic path).
 * Measured against that path with the same buffers: 7x7 at 56x56 (ConvNeXt-T, 96
 * channels) 0.63 -> 0.40 ms, at 28x28 0.34 -> 0.23 ms; 5x5 with SiLU (EfficientNet-B0) at
 * 56x56 0.63 -> 0.49 ms, at 28x28 0.47 -> 0.34 ms. */
static int depthwise_same(const window_geom *wg) {
  const i64 k = wg->kh, min_row = k == 3 ? VW - VW / 4 : 2 * VW - VW / 4;
  return wg->kw == k && (k == 3 || k == 5 || k == 7) && wg->sh == 1 && wg->sw == 1 &&
         wg->dh == 1 && wg->dw == 1 && wg->pt == k / 2 && wg->pl == k / 2 &&
         wg->oh == wg->h && wg->ow == wg->w && wg->ow >= min_row;
}

static i64 depthwise_same_stride(const window_geom *wg) {
  return (wg->w + VW - 1) / VW * VW + 2 * VW;
}

/* Rows of depthwise_same_plane's padded copy: K / 2 zero rows above and below the plane,
 * and DW_ROWS - 1 more below for the sums of a last block's rows past the plane. */
static i64 depthwise_same_rows(const window_geom *wg) { return wg->h + wg->kh - 1 + DW_ROWS - 1; }

/* Floats of depthwise_same_plane's buffer: the padded copy, then VW for the epilogue. */
static i64 depthwise_same_floats(const window_geom *wg) {
  return depthwise_same_rows(wg) * depthwise_same_stride(wg) + VW;
}

/* Input planes of at least this many floats have the next plane's input fetched into L2
 * while their own outputs are computed, a share after each band of rows: the depthwise row
 * paths copy a plane before they compute it, and the copy otherwise waits on the memory
 * (inside a model, a layer's input has mostly left the caches). C harness, each layer's
 * input just written by a 1x1 layer after the caches were evicted, alternating with a build
 * without it, both orders, at one and two threads: MobileNetV2's 96 channels from 112x112 at
 * stride 2 0.67x-0.79x the time, its 32 at 112x112 0.85x-0.98x, its 144 at 56x56
 * 0.94x-0.97x. Smaller planes (28x28 and 14x14: 1.03x-1.15x) stay in the caches and leave it
 * out, and so does the stride-2 max pool, whose sums are too short to hide the fetch behind
 * (ResNet's, 64 channels from 112x112: 1.1x the time at one thread). */
#define FETCH_MIN_PLANE 2048

/* The input plane after plane t when it is to be fetched while t is computed (see
 * FETCH_MIN_PLANE), else NULL. */
static const float *plane_to_fetch(const window_job *job, i64 t) {
  const i64 in_plane = job->wg.h * job->wg.w;
  return job->x && in_plane >= FETCH_MIN_PLANE && t + 1 < job->planes
             ? job->x + (t + 1) * in_plane
             : NULL;
}

/* Fetches into L2 parts [part, part + count) of `parts` equal parts of the cache lines of
 * input plane `next` (from plane_to_fetch; nothing when NULL). */
static void fetch_share(const window_job *job, const float *next, i64 part, i64 count,
                        i64 parts) {
  if (!next) return;
  const i64 lines = (job->wg.h * job->wg.w + LINE_FLOATS - 1) / LINE_FLOATS;
  for (i64 l = part * lines / parts; l < (part + count) * lines / parts; l++)
    __builtin_prefetch(next + l * LINE_FLOATS, 0, 2);
}

/* Runs the output rows of plane t (its padded input at `src`, rows `stride` apart, output
 * row oy at row oy * max(step, 1)) in blocks of DW_ROWS rows and BLOCK columns, each by
 * `block`, then each band of rows (one stretch of the plane) through the activation. */
static void depthwise_rows(const window_job *job, i64 t, const float *src, i64 stride,
                           float *tmp, int step, dw_block_fn block) {
  const window_geom *wg = &job->wg;
  const i64 ch = t % job->c;
  const float *wc = job->w + ch * wg->kh * wg->kw, *bias = job->bias ? job->bias + ch : NULL;
  const float *next = plane_to_fetch(job, t);
  for (i64 oy = 0; oy < wg->oh;) {
    /* the row paths end with the rows left, the generic one with single rows */
    const int rows = wg->oh - oy >= DW_ROWS ? DW_ROWS : step ? (int)(wg->oh - oy) : 1;
    const i64 at = (t * wg->oh + oy) * wg->ow;
    const float *res = job->res ? job->res + at : NULL;
    /* the next band's output lines, fetched for writing: a large plane's output has left
     * the caches since the last inference, and its stores otherwise wait on each line (in
     * the models, one thread: the 3x3 layers at 112x112 of MobileNetV2 0.219 -> 0.184 ms,
     * of EfficientNet-B0 0.348 -> 0.280; two bands ahead did no better) */
    for (i64 l = 0; l < rows * wg->ow; l += LINE_FLOATS)
      __builtin_prefetch(job->y + at + DW_ROWS * wg->ow + l, 1, 3);
    /* right to left: a partial vector's spill into the next row's start is overwritten */
    for (i64 ox = (wg->ow - 1) / BLOCK * BLOCK; ox >= 0; ox -= BLOCK)
      block(job, src + oy * (step ? step : 1) * stride + ox, stride, wc,
            min64(BLOCK, wg->ow - ox), job->y + at + ox, bias, res ? res + ox : NULL, tmp,
            (wg->oh - oy) * wg->ow - ox, rows);
    fetch_share(job, next, oy, rows, wg->oh);
    if (job->act) activate(job->y + at, 1, 0, rows * wg->ow, job->act);
    oy += rows;
  }
}

static void depthwise_same_plane(const window_job *job, i64 t, const float *x, float *buf) {
  const window_geom *wg = &job->wg;
  const i64 stride = depthwise_same_stride(wg), w = wg->w, whole = w / VW * VW;
  const i64 half = wg->kh / 2;
  for (i64 iy = 0; iy < wg->h; iy++) {
    float *d = buf + (iy + half) * stride + VW;
    const float *s = x + iy * w;
    for (i64 j = 0; j < whole; j += VW) *(vf *)(d + j) = *(const vf *)(s + j);
    if (whole < w) store_first(d + whole, load_first(s + whole, w - whole), w - whole);
  }
  depthwise_rows(job, t, buf + VW - half, stride, buf + depthwise_same_rows(wg) * stride, 1,
                 wg->kh == 3   ? depthwise_block_s1k3
                 : wg->kh == 5 ? depthwise_block_s1k5
                               : depthwise_block_s1k7);
}

/* 3x3 and 5x5, stride-2, undilated depthwise convolutions padded by at most K / 2 at the
 * top and at the left (PyTorch pads 3x3 layers by one on every side; TensorFlow's "same"
 * padding, as in Hugging Face's EfficientNet, puts K / 2 - 1 at the top and left and the
 * rest at the bottom and right) read each padded input row from `buf` split into its even
 * columns and its odd ones, halves of depthwise_s2_half floats, so that the taps of a row
 * are whole vectors: output column ox reads even[ox], odd[ox], even[ox + 1], odd[ox + 1],
 * even[ox + 2]. Rows of the padded plane beyond the data are zero, so the bottom and right
 * padding is whatever the output's size asks. Taken for output rows of at least three
 * quarters of a vector whatever the plane's size (a 3x3's 14x14 output from 28x28 ran
 * 0.65x-0.8x the time of the small-plane path); the tap-by-tap path, which it replaces,
 * spent half its time copying the plane's four phases. */
static int depthwise_s2(const window_geom *wg) {
  const i64 k = wg->kh;
  return (k == 3 || k == 5) && wg->kw == k && wg->sh == 2 && wg->sw == 2 && wg->dh == 1 &&
         wg->dw == 1 && wg->pt >= 0 && wg->pt <= k / 2 && wg->pl >= 0 && wg->pl <= k / 2 &&
         wg->ow >= VW - VW / 4;
}

/* Floats of each half-row: the columns the outputs read and the data's, rounded up to
 * whole vectors, and a vector for reads past them. */
i64 depthwise_s2_half(const window_geom *wg) {
  const i64 cols = max64(wg->ow + wg->kw / 2, (wg->w + wg->pl) / 2 + 1);
  return (cols + VW - 1) / VW * VW + VW;
}

/* Rows of depthwise_s2_plane's buffer: the padded plane (the rows the outputs read and the
 * data's), and 2 (DW_ROWS - 1) zero rows below it for the sums of a last block's rows past
 * the plane. */
static i64 depthwise_s2_rows(const window_geom *wg) {
  return max64(wg->h + wg->pt, 2 * (wg->oh - 1) + wg->kh) + 2 * (DW_ROWS - 1);
}

i64 depthwise_s2_floats(const window_geom *wg) {
  return depthwise_s2_rows(wg) * 2 * depthwise_s2_half(wg) + VW;
}

/* The input plane x split into `buf` as depthwise_s2 reads it: each data row at its padded
 * row, its columns in the even and odd halves of depthwise_s2_half floats. The padding keeps
 * the buffer's fill, `fill`, which the lanes stored past a row's last columns hold too. */
void split_rows(const window_job *job, const float *x, float *buf, float fill) {
  const window_geom *wg = &job->wg;
  const i64 half = depthwise_s2_half(wg), w = wg->w, pl = wg->pl;
  vi even, odd, lane;
  for (int j = 0; j < VW; j++) {
    even[j] = 2 * j;
    odd[j] = 2 * j + 1;
    lane[j] = j;
  }
  /* Padded column p (data column p - pl) is even[p / 2] at e + p / 2 for even p, odd[p / 2]
   * at e + half + 1 + p / 2 for odd p: data column 2j goes to index j + pl / 2 of the half
   * of pl's parity, data column 2j + 1 to index j + (pl + 1) / 2 of the other. */
  const i64 to_even = (pl % 2 ? half + 1 : 0) + pl / 2;
  const i64 to_odd = (pl % 2 ? 0 : half + 1) + (pl + 1) / 2;
  const float *end = x + wg->h * w;
  /* Each row ends with `left` (< 2 VW) columns: read as two whole vectors where they lie
   * within the plane (else in part), their halves stored whole with the lanes past the data
   * holding `fill`, the buffer's (each half-row has room for it: depthwise_s2_half).
   * Loading and storing in part took half the copy's time at 28 columns. */
  const i64 whole = w / (2 * VW) * VW, left = w - 2 * whole;
  const vi keep_even = lane < (vi){0} + (int)((left + 1) / 2);
  const vi keep_odd = lane < (vi){0} + (int)(left / 2);
  for (i64 iy = 0; iy < wg->h; iy++) {
    float *e = buf + (iy + wg->pt) * 2 * half + VW - 1;
    float *de = e + to_even, *dodd = e + to_odd;
    const float *s = x + iy * w;
    for (i64 j = 0; j < whole; j += VW) {
      const vf lo = *(const vf *)(s + 2 * j), hi = *(const vf *)(s + 2 * j + VW);
      *(vf *)(de + j) = __builtin_shuffle(lo, hi, even);
      *(vf *)(dodd + j) = __builtin_shuffle(lo, hi, odd);
    }
    if (left == 0) continue;
    const float *tail = s + 2 * whole;
    vf lo, hi;
    if (tail + 2 * VW <= end) {
      lo = *(const vf *)tail;
      hi = *(const vf *)(tail + VW);
    } else {
      lo = load_first(tail, min64(VW, left));
      hi = left > VW ? load_first(tail + VW, left - VW) : (vf){0};
    }
    const vi pad = (vi)((vf){0} + fill);
    *(vf *)(de + whole) =
        (vf)(((vi)__builtin_shuffle(lo, hi, even) & keep_even) | (pad & ~keep_even));
    *(vf *)(dodd + whole) =
        (vf)(((vi)__builtin_shuffle(lo, hi, odd) & keep_odd) | (pad & ~keep_odd));
  }
}

static void depthwise_s2_plane(const window_job *job, i64 t, const float *x, float *buf) {
  const window_geom *wg = &job->wg;
  const i64 half = depthwise_s2_half(wg);
  split_rows(job, x, buf, 0.0f);
  depthwise_rows(job, t, buf + VW - 1, 2 * half, buf + depthwise_s2_rows(wg) * 2 * half, 2,
                 wg->kh == 3 ? depthwise_block_s2k3 : depthwise_block_s2k5);
}

static void depthwise_plane(const window_job *job, i64 t, const float *x, float *buf) {
  phase_planes(buf, x, &job->wg, 0.0f);
  depthwise_rows(job, t, buf, job->wg.wq, buf + job->wg.acc, 0, depthwise_block_taps);
}

dw_plane_fn depthwise_plane_path(const window_geom *wg, i64 *floats) {
  if (depthwise_same(wg)) {
    *floats = depthwise_same_floats(wg);
    return depthwise_same_plane;
  }
  if (depthwise_s2(wg)) {
    *floats = depthwise_s2_floats(wg);
    return depthwise_s2_plane;
  }
  *floats = wg->floats;
  return depthwise_plane;
}

/* Plane t of a depthwise job from its input (for_each_plane's plane function). */
static void depthwise_input_plane(const void *ctx, i64 t, float *buf) {
  const window_job *job = ctx;
  job->path(job, t, job->x + t * job->wg.h * job->wg.w, buf);
}

/* Small planes (at most SMALL_PLANE outputs) go VW channels at a time, channels last: the
 * group's padded input as [Hp][Wp][VW] (zero padding, written once per buffer), the taps as
 * vector multiply-adds over the channels, and the result transposed back through the
 * epilogue. Job t is channel group t % groups of image t / groups. */
#define SMALL_PLANE 256

/* Outputs of a row, at most, whose sums depthwise_small_group takes together: eight
 * independent sums keep both multiply-add units busy where four wait on their latency (C
 * harness, one thread, alternating with four in both orders: ConvNeXt-T's 7x7 layers at
 * 14x14 and 7x7 0.90x-0.95x the time, EfficientNet-B0's 5x5 ones 0.94x-0.96x, MobileNetV2's
 * 3x3 at 7x7 0.96x). */
#define SMALL_SUMS 8

i64 small_rows(const window_geom *wg) {
  return (wg->oh - 1) * wg->sh + (wg->kh - 1) * wg->dh + 1;
}

i64 small_cols(const window_geom *wg) {
  return (wg->ow - 1) * wg->sw + (wg->kw - 1) * wg->dw + 1;
}

i64 small_group_floats(const window_geom *wg) {
  const i64 floats = (small_rows(wg) * small_cols(wg) + wg->oh * wg->ow + wg->kh * wg->kw) * VW +
                     wg->oh * wg->ow;
  return (floats + VW - 1) / VW * VW;
}

/* Outputs (oy, ox + j), j < n, of depthwise_small_group's channels-last vectors: the taps of
 * `in` ([Hp][Wp][VW]) times those of `wt` ([taps][VW]) into `out` ([OH][OW][VW]), n independent
 * sums (inlined with constant n). */
static inline __attribute__((always_inline)) void small_sums(const window_geom *wg,
                                                             const float *in, const float *wt,
                                                             float *out, i64 wp, i64 oy, i64 ox,
                                                             const int n) {
  const i64 step = wg->sw * VW; /* from one output's window to the next one's */
  vf acc[SMALL_SUMS];
  for (int j = 0; j < n; j++) acc[j] = (vf){0};
  for (i64 ky = 0; ky < wg->kh; ky++) {
    const float *row = in + ((oy * wg->sh + ky * wg->dh) * wp + ox * wg->sw) * VW;
    for (i64 kx = 0; kx < wg->kw; kx++) {
      const vf wv = *(const vf *)(wt + (ky * wg->kw + kx) * VW);
      const float *tap = row + kx * wg->dw * VW;
      for (int j = 0; j < n; j++) acc[j] += wv * *(const vf *)(tap + j * step);
    }
  }
  for (int j = 0; j < n; j++) *(vf *)(out + (oy * wg->ow + ox + j) * VW) = acc[j];
}

/* Group t's padded channels-last input (the start of `buf`) from the job's data. */
static void small_group_input(const window_job *job, i64 t, float *buf) {
  const window_geom *wg = &job->wg;
  const i64 groups = (job->c + VW - 1) / VW, c0 = (t % groups) * VW, b = t / groups;
  const i64 nc = min64(VW, job->c - c0);
  const i64 hp = small_rows(wg), wp = small_cols(wg), plane = wg->h * wg->w;
  float *in = buf;
  const float *x = job->x + (b * job->c + c0) * plane;
  /* when every input element is used: whole vectors of positions, then one by one */
  const int all = hp - wg->pt >= wg->h && wp - wg->pl >= wg->w;
  const i64 direct = all ? plane / VW * VW : 0;
  for (i64 p = 0, iy = 0, ix = 0; p < direct; p += VW) {
    vf r[VW];
    for (i64 j = 0; j < VW; j++) r[j] = j < nc ? *(const vf *)(x + j * plane + p) : (vf){0};
    transpose_block(r);
    for (i64 k = 0; k < VW; k++) {
      *(vf *)(in + ((iy + wg->pt) * wp + ix + wg->pl) * VW) = r[k];
      if (++ix == wg->w) { ix = 0; iy++; }
    }
  }
  for (i64 j = 0; j < nc; j++) {
    const float *src = x + j * plane;
    for (i64 p = direct; all && p < plane; p++)
      in[((p / wg->w + wg->pt) * wp + p % wg->w + wg->pl) * VW + j] = src[p];
    for (i64 iy = max64(0, -wg->pt); !all && iy < min64(wg->h, hp - wg->pt); iy++)
      for (i64 ix = max64(0, -wg->pl); ix < min64(wg->w, wp - wg->pl); ix++)
        in[((iy + wg->pt) * wp + ix + wg->pl) * VW + j] = src[iy * wg->w + ix];
  }
}

void small_group_output(const window_job *job, i64 t, float *buf) {
  const window_geom *wg = &job->wg;
  const i64 groups = (job->c + VW - 1) / VW, c0 = (t % groups) * VW, b = t / groups;
  const i64 nc = min64(VW, job->c - c0), taps = wg->kh * wg->kw;
  const i64 wp = small_cols(wg), outs = wg->oh * wg->ow;
  const float *in = buf;
  float *out = buf + small_rows(wg) * wp * VW, *wt = out + outs * VW, *column = wt + taps * VW;
  for (i64 j = 0; j < nc; j++)
    for (i64 tap = 0; tap < taps; tap++) wt[tap * VW + j] = job->w[(c0 + j) * taps + tap];
  /* Each row in pieces of at most SMALL_SUMS outputs, as even as they go (a 14-wide row in
   * two of seven: in pieces of eight, ending with the eight that end it, two outputs were
   * computed twice; EfficientNet-B0's 5x5 layer of 672 channels at 14x14 then took 1.03x
   * the time, one layer in one process against onnxruntime in rounds). The last piece ends
   * with the row, recomputing some outputs (the same sums) where the pieces overlap: one
   * at a time, the last three outputs of a 7-wide row took most of the time, each a chain of
   * dependent multiply-adds. Rows narrower than four go one output at a time. */
  const i64 pieces = (wg->ow + SMALL_SUMS - 1) / SMALL_SUMS;
  const i64 piece = (wg->ow + pieces - 1) / pieces;
  for (i64 oy = 0; oy < wg->oh; oy++) {
    if (piece < 4) {
      for (i64 ox = 0; ox < wg->ow; ox++) small_sums(wg, in, wt, out, wp, oy, ox, 1);
      continue;
    }
    for (i64 start = 0; start < wg->ow; start += piece) {
      const i64 ox = min64(start, wg->ow - piece);
      switch (piece) {
        case 8: small_sums(wg, in, wt, out, wp, oy, ox, 8); break;
        case 7: small_sums(wg, in, wt, out, wp, oy, ox, 7); break;
        case 6: small_sums(wg, in, wt, out, wp, oy, ox, 6); break;
        case 5: small_sums(wg, in, wt, out, wp, oy, ox, 5); break;
        default: small_sums(wg, in, wt, out, wp, oy, ox, 4); break;
      }
    }
  }
  const i64 whole = outs / VW * VW, at0 = (b * job->c + c0) * outs;
  const vf lo = (vf){0} + job->lo, hi = (vf){0} + job->hi;
  for (i64 p = 0; p < whole; p += VW) { /* whole vectors of positions, transposed back */
    vf r[VW];
    for (i64 k = 0; k < VW; k++) r[k] = *(const vf *)(out + (p + k) * VW);
    transpose_block(r);
    for (i64 j = 0; j < nc; j++) {
      const i64 at = at0 + j * outs + p;
      vf v = r[j] + (job->bias ? job->bias[c0 + j] : 0.0f);
      if (job->res) v += *(const vf *)(job->res + at);
      *(vf *)(job->y + at) = vclamp(v, lo, hi);
    }
  }
  for (i64 j = 0; j < nc && whole < outs; j++) {
    const i64 ch = c0 + j, at = at0 + j * outs + whole;
    for (i64 p = whole; p < outs; p++) column[p - whole] = out[p * VW + j];
    epilogue(job->y + at, column, outs - whole, job->bias ? job->bias + ch : NULL, 0,
             job->res ? job->res + at : NULL, job->lo, job->hi);
  }
  if (job->act) activate(job->y + at0, 1, 0, nc * outs, job->act); /* the group's planes */
}

static void depthwise_small_group(const void *ctx, i64 t, float *buf) {
  small_group_input(ctx, t, buf);
  small_group_output(ctx, t, buf);
}

int small_outputs(const window_geom *wg) { return wg->oh * wg->ow <= SMALL_PLANE; }

window_job *depthwise_job_new(const i64 *g, const float *x, const float *w, float *y,
                              const float *bias, const float *res, const float *bounds) {
  window_job *job = window_job_new(g, g[13]);
  if (!job) return NULL;
  job->x = x;
  job->w = w;
  job->y = y;
  job->bias = bias;
  job->res = res;
  job->lo = bounds[0];
  job->hi = bounds[1];
  job->act = activation_of(bounds);
  job->planes = g[12] * g[13];
  return job;
}

/* Depthwise convolution, NCHW data, weights [C][KH][KW]. */
static int depthwise_nchw(const float *x, const float *w, float *y, const float *bias,
                          const float *res, const i64 *g, const float *bounds) {
  window_job *job = depthwise_job_new(g, x, w, y, bias, res, bounds);
  if (!job) return -1;
  const window_geom *wg = &job->wg;
  const int nt = num_threads(g[14]);
  const i64 planes = job->planes, work = planes * wg->oh * wg->ow * wg->kh * wg->kw;
  i64 floats;
  job->path = depthwise_plane_path(wg, &floats);
  int status;
  if (job->path == depthwise_plane && small_outputs(wg)) {
    status = for_each_plane(g[12] * ((g[13] + VW - 1) / VW), work, nt, small_group_floats(wg),
                            depthwise_small_group, job, 0.0f);
  } else {
    status = for_each_plane(planes, work, nt, floats, depthwise_input_plane, job, 0.0f);
  }
  free(job);
  return status;
}

/* Depthwise convolution, NCHW data, weights [C][KH][KW], subnormals flushed. */
int ph_depthwise_nchw(const float *x, const float *w, float *y, const float *bias,
                      const float *res, const i64 *g, const float *bounds) {
  return FLUSHED_STATUS(depthwise_nchw(x, w, y, bias, res, g, bounds));
}
