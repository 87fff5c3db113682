/* Convolutions, NHWC data (channels last): the transposed tiles of conv.c over positions. */
#include "conv.h"

/* ---------------------------------------------------------------------------------------
 * Ungrouped convolution, NHWC data, OHWI weights: out[P, O] = X[P, K] x W^T[K, O] with K =
 * KH * KW * C in (ky, kx, c) order, taken as transposed_tile's tiles: vectors along the
 * output channels (the weights prepared as panels of TO channels, pack_transposed of the
 * O x K matrix OHWI is), each tile's rows up to TP_MAX output positions, so that each tile
 * row is the output's own row of channels, stored as it is (no transpose back). A task
 * takes a tile of positions and a chunk of panels. Tiles run along one output row (its
 * positions' windows are a fixed stride apart): the task first packs the tile's columns of
 * X, [K][VW] (position i of row k at k * VW + i), by VW x VW transposes of the positions'
 * channel runs, then multiplies them by each panel of the chunk. A 1x1 stride-1 unpadded
 * convolution, whose positions are the input's, has its tiles run along the whole plane
 * and read in place (direct_tile: each position's channels are one row of the data), two
 * panels at a time: against packed tiles of 14, 0.79x-1.07x the time (C harness, one
 * thread; 0.79x-0.85x for MobileNetV2's projections to 16 and 24 channels and its 384 -> 64
 * at 14x14, 0.89x for ResNet-50's 2048 -> 512 at 7x7, 1.04x-1.07x for its expansions at
 * 56x56 and 28x28). A padded convolution reads a zero-padded copy of each image (the `pad`
 * scratch: its rows and columns the windows read), so that every tap is in the data.
 */

/* Positions per tile of a 1x1 layer read in place (direct_tile). */
#define DIRECT_POSITIONS 7 /* two panels' sums fill a transposed tile: 2 x 7 = TP_MAX */

/* Floats of the weights a chunk of panels covers, at most (1 MB): the chunk's weights stay
 * in L2 while its tiles run along the positions. With 512 KB, ResNet-50's 2048 -> 512 at 7x7
 * (four tiles, each packed again for every chunk) took 1.18x the NCHW kernel's time, with
 * 1 MB 1.14x (C harness, one thread). */
#define NHWC_CHUNK_FLOATS ((i64)1 << 18)

typedef struct {
  conv_geom cv;
  i64 hp, wp;        /* rows and columns of the (padded) input the windows read */
  i64 tp, row_tiles; /* positions per tile; tiles per output row (0: tiles along the plane) */
  i64 tiles, panels, per_chunk, chunks;
} nhwc_geom;

/* Whether the windows read outside the data: padding, or an output larger than the data
 * gives (the bottom and right padding). */
static int nhwc_padded(const conv_geom *cv) {
  return cv->pt > 0 || cv->pl > 0 || (cv->oh - 1) * cv->sh + (cv->kh - 1) * cv->dh >= cv->h ||
         (cv->ow - 1) * cv->sw + (cv->kw - 1) * cv->dw >= cv->w;
}

/* Positions per packed tile of an output row of ow: transposed_rows', but a packed tile
 * holds at most a vector of them (nhwc_pack), fewer than TP_MAX with AVX2's 8 lanes: then
 * the fewest tiles of at most VW, as even as they come. (With TP_MAX, positions past the
 * vector were read past the packed columns: ResNet-18 in NHWC gave wrong numbers.) */
static i64 packed_rows(i64 ow) {
  if (transposed_rows(ow) <= VW) return transposed_rows(ow);
  const i64 tiles = (ow + VW - 1) / VW;
  return (ow + tiles - 1) / tiles;
}

static nhwc_geom nhwc_geometry(const i64 *g) {
  nhwc_geom ng = {.cv = conv_geometry(g)};
  const conv_geom *cv = &ng.cv;
  ng.hp = cv->h;
  ng.wp = cv->w;
  if (nhwc_padded(cv)) {
    ng.hp = max64(cv->h + cv->pt, (cv->oh - 1) * cv->sh + (cv->kh - 1) * cv->dh + 1);
    ng.wp = max64(cv->w + cv->pl, (cv->ow - 1) * cv->sw + (cv->kw - 1) * cv->dw + 1);
  }
  const int flat = direct_conv(cv);
  ng.tp = flat ? DIRECT_POSITIONS : packed_rows(cv->ow);
  ng.row_tiles = flat ? 0 : (cv->ow + ng.tp - 1) / ng.tp;
  ng.tiles = flat ? (cv->p + ng.tp - 1) / ng.tp : cv->oh * ng.row_tiles;
  ng.panels = (cv->o + TO - 1) / TO;
  ng.per_chunk = min64(ng.panels, max64(1, NHWC_CHUNK_FLOATS / (cv->k * TO)));
  ng.chunks = (ng.panels + ng.per_chunk - 1) / ng.per_chunk;
  return ng;
}

/* Floats of the scratch: one image's zero-padded copy, if the windows read padding. */
i64 ph_conv2d_nhwc_scratch(const i64 *g) {
  const nhwc_geom ng = nhwc_geometry(g);
  return nhwc_padded(&ng.cv) ? ng.hp * ng.wp * ng.cv.c : 0;
}

/* Floats of the prepared weights: the panels of TO output channels (the last one padded). */
i64 ph_conv2d_nhwc_prepared(const i64 *g) {
  const nhwc_geom ng = nhwc_geometry(g);
  return ng.panels * TO * ng.cv.k;
}

/* Prepares OHWI weights w for ph_conv2d_nhwc into `prep`. Returns 0. */
int ph_conv2d_nhwc_prepare(const float *w, float *prep, const i64 *g) {
  const conv_geom cv = conv_geometry(g);
  pack_transposed(prep, w, cv.o, cv.k);
  return 0;
}

typedef struct {
  nhwc_geom ng;
  const float *x, *wt, *bias, *res; /* x: the image (or its padded copy) being taken */
  float *y;
  i64 image, tasks;
  float lo, hi;
  int act;
  _Atomic int failed;
} nhwc_job;

/* Task t of copying one image into its zero-padded form: a share of the padded rows. */
static void nhwc_pad_rows(void *arg, i64 t) {
  const input_copy_job *job = arg;
  const conv_geom *cv = job->cv;
  const i64 c = cv->c, row = job->wp * c;
  i64 y0, y1;
  part_range(job->hp, job->tasks, t, &y0, &y1);
  for (i64 y = y0; y < y1; y++) {
    float *dst = job->dst + y * row;
    const i64 iy = y - cv->pt;
    if (iy < 0 || iy >= cv->h) {
      memset(dst, 0, (size_t)row * sizeof(float));
      continue;
    }
    const i64 before = cv->pl * c, data = cv->w * c; /* wp >= pl + w (nhwc_geometry) */
    memset(dst, 0, (size_t)before * sizeof(float));
    memcpy(dst + before, job->x + iy * cv->w * c, (size_t)data * sizeof(float));
    memset(dst + before + data, 0, (size_t)(row - before - data) * sizeof(float));
  }
}

/* The tile's columns packed as cols[k * VW + i] = X[position i][k], for i < tp (zero for
 * tp <= i < VW), where position i's window starts at src + i * step (a row of C channels per
 * input position, rows `ld` floats apart), k = (ky, kx, c). */
static void nhwc_pack(float *restrict cols, const float *src, i64 step, i64 ld,
                      const conv_geom *cv, i64 tp) {
  const i64 c = cv->c;
  for (i64 ky = 0, k0 = 0; ky < cv->kh; ky++)
    for (i64 kx = 0; kx < cv->kw; kx++, k0 += c) {
      const float *tap = src + ky * cv->dh * ld + kx * cv->dw * c;
      if (c < VW) { /* a stem's few channels: one by one */
        for (i64 j = 0; j < c; j++) {
          float *dst = cols + (k0 + j) * VW;
          for (i64 i = 0; i < VW; i++) dst[i] = i < tp ? tap[i * step + j] : 0.0f;
        }
        continue;
      }
      for (i64 c0 = 0; c0 < c; c0 += VW) {
        const i64 n = min64(VW, c - c0);
        vf r[VW];
        for (i64 i = 0; i < VW; i++)
          r[i] = i < tp ? load_first(tap + i * step + c0, n) : (vf){0};
        transpose_block(r);
        for (i64 j = 0; j < n; j++) *(vf *)(cols + (k0 + c0 + j) * VW) = r[j];
      }
    }
}

/* acc[i][v] = sum over k < c of x[i * c + k] * w[v / TNV][k * TO + v % TNV * VW] for
 * i < tp, v < nv (TNV: one panel, w[0]; 2 TNV: two panels): position i's inputs are its
 * own row of the data. */
static inline __attribute__((always_inline)) void direct_sums(
    vf acc[DIRECT_POSITIONS][2 * TNV], const float *restrict w0, const float *restrict w1,
    const float *restrict x, i64 c, const int tp, const int nv) {
  const float *xi[DIRECT_POSITIONS];
  for (int i = 0; i < tp; i++) {
    xi[i] = x + i * c;
    for (int v = 0; v < nv; v++) acc[i][v] = (vf){0};
  }
  for (i64 k = 0; k < c; k++) {
    vf wk[2 * TNV];
    for (int v = 0; v < nv; v++)
      wk[v] = *(const vf *)((v < TNV ? w0 : w1) + k * TO + v % TNV * VW);
    for (int i = 0; i < tp; i++) {
      const float s = xi[i][k];
      for (int v = 0; v < nv; v++) acc[i][v] += s * wk[v];
    }
  }
}

/* The sums of tp (<= DIRECT_POSITIONS) positions of a 1x1 layer, read in place at x (rows
 * of c channels), for the panel at w0 into tile[i * TO + j] and, unless w1 is NULL, for the
 * panel at w1 into tile[(DIRECT_POSITIONS + i) * TO + j]; tp a constant in each case. */
static void direct_tile(float *tile, const float *w0, const float *w1, const float *x, i64 c,
                        i64 tp) {
  vf acc[DIRECT_POSITIONS][2 * TNV];
  const int nv = w1 ? 2 * TNV : TNV;
#define DT_SUMS(T)                                                                  \
  if (w1)                                                                           \
    direct_sums(acc, w0, w1, x, c, T, 2 * TNV);                                     \
  else                                                                              \
    direct_sums(acc, w0, w0, x, c, T, TNV);                                         \
  for (int i = 0; i < T; i++)                                                       \
    for (int v = 0; v < nv; v++)                                                    \
      *(vf *)(tile + (v / TNV * DIRECT_POSITIONS + i) * TO + v % TNV * VW) = acc[i][v];
#define DT_CASE(T) case T: DT_SUMS(T) break;
  switch (tp) {
    DT_CASE(1) DT_CASE(2) DT_CASE(3) DT_CASE(4) DT_CASE(5) DT_CASE(6)
    default: DT_SUMS(DIRECT_POSITIONS)
  }
#undef DT_CASE
#undef DT_SUMS
}

/* A tile's products for panel q (tile[i * TO + j]), through the epilogue into the tp output
 * rows starting at `at` (rows O floats apart; the residual laid out alike). */
static void nhwc_store(const nhwc_job *job, const float *tile, i64 q, i64 tp, i64 at) {
  const conv_geom *cv = &job->ng.cv;
  const vf lo = (vf){0} + job->lo, hi = (vf){0} + job->hi;
  const i64 channels = min64(TO, cv->o - q * TO);
  for (int v = 0; v < TNV && v * VW < channels; v++) {
    const i64 oc = q * TO + v * VW, n = min64(VW, channels - v * VW);
    const vf bias = job->bias ? load_first(job->bias + oc, n) : (vf){0};
    for (i64 i = 0; i < tp; i++) {
      const i64 pos = at + i * cv->o + oc;
      vf r = *(const vf *)(tile + i * TO + v * VW) + bias;
      if (job->res) r += load_first(job->res + pos, n);
      store_first(job->y + pos, vclamp(r, lo, hi), n);
    }
  }
  if (job->act)
    activate(job->y + at + q * TO, tp, cv->o, channels, job->act);
}

/* Task t: a contiguous share of the (chunk, tile) items of image `image`, chunk-major, each
 * multiplying its tile's columns (read in place, or packed into the thread's scratch) by
 * the chunk's panels. `src` is the image's data, or its padded copy. */
static void nhwc_tiles(void *arg, i64 t) {
  nhwc_job *job = arg;
  const nhwc_geom *ng = &job->ng;
  const conv_geom *cv = &ng->cv;
  float *cols = ng->row_tiles ? thread_scratch(cv->k * VW) : NULL; /* packed columns */
  if (ng->row_tiles && !cols) {
    atomic_store(&job->failed, 1);
    return;
  }
  const i64 items = ng->chunks * ng->tiles, c = cv->c;
  const float *src = job->x;
  i64 u0, u1;
  part_range(items, job->tasks, t, &u0, &u1);
  for (i64 u = u0; u < u1; u++) {
    const i64 chunk = u / ng->tiles, tile = u % ng->tiles;
    i64 p0, tp, step;
    const float *window;
    if (ng->row_tiles == 0) { /* along the plane: position p reads input position p */
      p0 = tile * ng->tp;
      tp = min64(ng->tp, cv->p - p0);
      window = src + p0 * c;
      step = c;
    } else {
      const i64 oy = tile / ng->row_tiles, ox = tile % ng->row_tiles * ng->tp;
      p0 = oy * cv->ow + ox;
      tp = min64(ng->tp, cv->ow - ox);
      window = src + (oy * cv->sh * ng->wp + ox * cv->sw) * c;
      step = cv->sw * c;
    }
    const i64 q1 = min64(ng->panels, (chunk + 1) * ng->per_chunk);
    const i64 at = (job->image * cv->p + p0) * cv->o;
    float sums[TP_MAX * TO] __attribute__((aligned(64)));
    if (ng->row_tiles == 0) {
      for (i64 q = chunk * ng->per_chunk; q < q1; q += 2) {
        const float *w0 = job->wt + q * cv->k * TO;
        direct_tile(sums, w0, q + 1 < q1 ? w0 + cv->k * TO : NULL, window, c, tp);
        nhwc_store(job, sums, q, tp, at);
        if (q + 1 < q1) nhwc_store(job, sums + DIRECT_POSITIONS * TO, q + 1, tp, at);
      }
      continue;
    }
    nhwc_pack(cols, window, step, ng->wp * c, cv, tp);
    for (i64 q = chunk * ng->per_chunk; q < q1; q++) {
      transposed_tile(sums, job->wt + q * cv->k * TO, cols, VW, cv->k, tp, NULL, 0);
      nhwc_store(job, sums, q, tp, at);
    }
  }
}

/* Convolution with weights prepared by ph_conv2d_nhwc_prepare (groups must be 1): per image,
 * its padded copy into `pad` when the windows read padding, then the tiles. Returns 0, or
 * -1 when memory runs out. */
static int conv2d_nhwc(const float *x, const float *prep, float *y, const float *bias,
                       const float *res, float *pad, const i64 *g, const float *bounds) {
  nhwc_job job = {.ng = nhwc_geometry(g), .wt = prep, .bias = bias, .res = res, .y = y,
                  .lo = bounds[0], .hi = bounds[1], .act = activation_of(bounds)};
  atomic_init(&job.failed, 0);
  const nhwc_geom *ng = &job.ng;
  const conv_geom *cv = &ng->cv;
  const int nt = num_threads(g[16]);
  const i64 items = ng->chunks * ng->tiles, work = cv->p * ng->panels * TO * cv->k;
  for (i64 b = 0; b < cv->n && !atomic_load(&job.failed); b++) {
    const float *image = x + b * cv->h * cv->w * cv->c;
    job.x = image;
    if (pad) {
      input_copy_job pj = {.cv = cv, .x = image, .dst = pad, .hp = ng->hp, .wp = ng->wp,
                           .tasks = split_tasks(ng->hp, ng->hp * ng->wp * cv->c * COPY_WORK,
                                                nt)};
      ph_parallel(pj.tasks, nt, nhwc_pad_rows, &pj);
      job.x = pad;
    }
    job.image = b;
    job.tasks = split_tasks(items, work, nt);
    ph_parallel(job.tasks, nt, nhwc_tiles, &job);
  }
  return atomic_load(&job.failed) ? -1 : 0;
}

/* Convolution, NHWC, with weights prepared by ph_conv2d_nhwc_prepare and the scratch
 * ph_conv2d_nhwc_scratch asks for (NULL when it asks for none), subnormals flushed. */
int ph_conv2d_nhwc(const float *x, const float *prep, float *y, const float *bias,
                   const float *res, float *pad, const i64 *g, const float *bounds) {
  return FLUSHED_STATUS(conv2d_nhwc(x, prep, y, bias, res, pad, g, bounds));
}
