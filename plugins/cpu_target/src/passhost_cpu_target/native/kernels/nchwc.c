/* Convolutions over channel-blocked data: NCHW{ib}c in (ib = 1 is plain NCHW), NCHW{ob}c
 * out, OIHW weights prepared into vectors of output channels. Direct sums: a register tile
 * holds TV vectors of output channels at up to PT positions (along the plane, or along one
 * output row), and for each input channel of each tap takes TV weight vectors and one
 * broadcast input float per position; a position's ib channels of one tap lie in one cache
 * line (ib = 16), where NCHW data spreads them a plane apart. 3x3 stride-1 layers go
 * through Winograd F(2x2, 3x3), its products the direct sums of a 1x1 layer.
 *
 * Measured inside ResNet-50 (one thread, every convolution in NCHW16c, against the NCHW
 * kernels): its 1x1 layers took 0.94x-1.3x the time, its Winograd layers at 14x14
 * 0.74x-0.85x and at 56x56 and 28x28 1.0x-1.2x; the model as a whole 0.97x-1.03x at one
 * thread, 1.07x-1.09x at two. So the cpu target keeps NCHW, its 3x3 layers at 14x14 going
 * through this Winograd (conv.h's CONV_BLOCKED); ConvertLayout to NCHW16c runs here too.
 *
 * Geometry g: n, c, h, w, o, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, ib, ob, threads.
 * Data x[n][c / ib][h][w][ib]; output y (and a residual) [n][o / ob][oh][ow][ob], ob a
 * multiple of VW; bias[o]. */
#include "conv.h"

/* Output-channel vectors and positions of a register tile: TV * PT accumulators and TV
 * weight vectors in the registers (32 with AVX-512, whose multiply-adds take the broadcast
 * input from memory; 16 otherwise). With AVX-512, 4 x 7 took 0.93x-0.99x the time of 4 x 6
 * on ResNet-50's 1x1 layers, 3 x 8 and 2 x 12 1.0x-1.2x (C harness, one thread, warm). */
#if VW == 16
#define TV 4
#define PT 7
#else
#define TV 2
#define PT 6
#endif

/* The most channels a block of the data may hold: a border position's missing taps read a
 * block of zeros. */
#define IB_MAX 64
static const float zero_block[IB_MAX] __attribute__((aligned(64)));

typedef struct {
  i64 n, c, h, w, o, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, ib, ob;
  i64 vecs, groups, cblocks, k; /* output vectors, tile groups of TV, input blocks, taps */
  i64 ox_lo, ox_hi;             /* the outputs whose every tap column lies in the data */
} nchwc_geom;

static nchwc_geom nchwc_geometry(const i64 *g) {
  nchwc_geom cv = {g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9],
                   g[10], g[11], g[12], g[13], g[14], g[15], g[16],
                   0, 0, 0, 0, 0, 0};
  cv.vecs = cv.o / VW;
  cv.groups = (cv.vecs + TV - 1) / TV;
  cv.cblocks = cv.c / cv.ib;
  cv.k = cv.c * cv.kh * cv.kw;
  i64 lo0, hi0, lo1, hi1;
  valid_range(cv.ow, cv.sw, -cv.pl, cv.w, &lo0, &hi0);
  valid_range(cv.ow, cv.sw, (cv.kw - 1) * cv.dw - cv.pl, cv.w, &lo1, &hi1);
  cv.ox_lo = max64(lo0, lo1);
  cv.ox_hi = max64(cv.ox_lo, min64(hi0, hi1));
  return cv;
}

/* The most taps a kernel may have: a tile whose positions are not evenly spaced in the data
 * (across rows, or with taps in the padding) looks each one's taps up in a table. */
#define TAPS_MAX 64

/* One register tile: positions [p0, p0 + np) of image b's output plane, the vectors of
 * tile group q, over input blocks [cb0, cb1). Position i's tap (ky, kx) lies at
 * off[(ky * kw + kx) * PT + i] in a block's plane (-1: in the padding), or, without a
 * table (off NULL), at base + (ky * dh * w + kx * dw) * ib + i * step, the taps of rows
 * [ky0, ky1) inside the data and the others in the padding. */
typedef struct {
  const nchwc_geom *cv;
  const float *x, *wq, *bias, *res;
  float *y;
  const i64 *off;
  i64 b, q, p0, base, step, ky0, ky1, cb0, cb1;
  const float *fetch; /* this tile's share of the next pass's weights, fetched into cache */
  i64 fetch_lines;    /* lines of it per input block */
  int first, last; /* the first pass over the input blocks, the last */
  float lo, hi;
  int act;
} nchwc_tile;

/* The offset in y (and a residual) of output vector v at position p of image b. */
static inline i64 out_offset(const nchwc_geom *cv, i64 b, i64 v, i64 p) {
  const i64 ch = v * VW;
  return ((b * (cv->o / cv->ob) + ch / cv->ob) * cv->oh * cv->ow + p) * cv->ob + ch % cv->ob;
}

/* acc[j][i] += sum over ii < ib of src(i)[ii] * wk[ii * tv * VW + j * VW], src(i) the data of
 * position i at one tap (a block of ib channels). */
#define TAP_SUMS(src)                                                                 \
  for (i64 ii = 0; ii < ib; ii++) {                                                   \
    vf wv[TV];                                                                        \
    for (int j = 0; j < tv; j++) wv[j] = *(const vf *)(wk + ii * wstep + j * VW);     \
    for (int i = 0; i < np; i++) {                                                    \
      const float s = (src)[ii];                                                      \
      for (int j = 0; j < tv; j++) acc[j][i] += s * wv[j];                            \
    }                                                                                 \
  }

/* The tile's sums, tv vectors at np positions, added to the partial sums in y unless
 * `first`, through the epilogue if `last` (else stored as they are). */
static inline __attribute__((always_inline)) void tile_core(const nchwc_tile *t, const int tv,
                                                            const int np, const int table) {
  const nchwc_geom *cv = t->cv;
  const i64 ib = cv->ib, taps = cv->kh * cv->kw, wstep = (i64)tv * VW;
  const i64 plane = cv->h * cv->w * ib;
  vf acc[TV][PT];
  for (int j = 0; j < tv; j++) {
    const float *part = t->y + out_offset(cv, t->b, t->q * TV + j, t->p0);
    for (int i = 0; i < np; i++)
      acc[j][i] = t->first ? (vf){0} : *(const vf *)(part + i * cv->ob);
  }
  const float *xc = t->x + (t->b * cv->cblocks + t->cb0) * plane;
  for (i64 cb = t->cb0; cb < t->cb1; cb++, xc += plane) {
    for (i64 l = 0; l < t->fetch_lines; l++)
      __builtin_prefetch(t->fetch + ((cb - t->cb0) * t->fetch_lines + l) * LINE_FLOATS, 0, 2);
    if (table) {
      const float *wk = t->wq + cb * taps * ib * wstep;
      for (i64 tap = 0; tap < taps; tap++, wk += ib * wstep) {
        const float *src[PT];
        for (int i = 0; i < np; i++) {
          const i64 at = t->off[tap * PT + i];
          src[i] = at < 0 ? zero_block : xc + at;
        }
        TAP_SUMS(src[i])
      }
    } else {
      for (i64 ky = t->ky0; ky < t->ky1; ky++) {
        const float *row = xc + t->base + ky * cv->dh * cv->w * ib;
        const float *wk = t->wq + (cb * cv->kh + ky) * cv->kw * ib * wstep;
        if (ib == 1 && cv->dw == 1) { /* a row's taps, one float each, are one run of kw */
          const i64 ib = cv->kw;
          TAP_SUMS(row + i * t->step)
          continue;
        }
        for (i64 kx = 0; kx < cv->kw; kx++, wk += ib * wstep) {
          const float *s0 = row + kx * cv->dw * ib;
          TAP_SUMS(s0 + i * t->step)
        }
      }
    }
  }
  if (!t->last) {
    for (int j = 0; j < tv; j++) {
      float *part = t->y + out_offset(cv, t->b, t->q * TV + j, t->p0);
      for (int i = 0; i < np; i++) *(vf *)(part + i * cv->ob) = acc[j][i];
    }
    return;
  }
  const vf lo = (vf){0} + t->lo, hi = (vf){0} + t->hi;
  for (int j = 0; j < tv; j++) {
    const i64 v = t->q * TV + j, at = out_offset(cv, t->b, v, t->p0);
    const vf bias = t->bias ? *(const vf *)(t->bias + v * VW) : (vf){0};
    for (int i = 0; i < np; i++) {
      vf r = acc[j][i] + bias;
      if (t->res) r += *(const vf *)(t->res + at + i * cv->ob);
      *(vf *)(t->y + at + i * cv->ob) = vclamp(r, lo, hi);
    }
    if (t->act) activate(t->y + at, np, cv->ob, VW, t->act);
  }
}

#define TILE_FN(tv, np)                                                                      \
  static void tile_##tv##_##np(const nchwc_tile *t) {                                        \
    if (t->off)                                                                              \
      tile_core(t, tv, np, 1);                                                               \
    else                                                                                     \
      tile_core(t, tv, np, 0);                                                               \
  }
#if PT == 7
#define TILE_ROW(tv) TILE_FN(tv, 1) TILE_FN(tv, 2) TILE_FN(tv, 3) TILE_FN(tv, 4) \
  TILE_FN(tv, 5) TILE_FN(tv, 6) TILE_FN(tv, 7)
#define TILE_ENTRIES(tv) {tile_##tv##_1, tile_##tv##_2, tile_##tv##_3, tile_##tv##_4, \
                          tile_##tv##_5, tile_##tv##_6, tile_##tv##_7}
#else
#define TILE_ROW(tv) TILE_FN(tv, 1) TILE_FN(tv, 2) TILE_FN(tv, 3) TILE_FN(tv, 4) \
  TILE_FN(tv, 5) TILE_FN(tv, 6)
#define TILE_ENTRIES(tv) {tile_##tv##_1, tile_##tv##_2, tile_##tv##_3, tile_##tv##_4, \
                          tile_##tv##_5, tile_##tv##_6}
#endif

typedef void (*tile_fn)(const nchwc_tile *);
#if TV == 4
TILE_ROW(1) TILE_ROW(2) TILE_ROW(3) TILE_ROW(4)
static const tile_fn tiles[TV][PT] = {TILE_ENTRIES(1), TILE_ENTRIES(2), TILE_ENTRIES(3),
                                      TILE_ENTRIES(4)};
#else
TILE_ROW(1) TILE_ROW(2)
static const tile_fn tiles[TV][PT] = {TILE_ENTRIES(1), TILE_ENTRIES(2)};
#endif

typedef struct {
  const nchwc_geom *cv;
  const float *x, *prep, *bias, *res;
  float *y;
  i64 tasks;
  float lo, hi;
  int act;
} nchwc_job;

/* Floats of a tile group's weights per pass (SLAB_FLOATS / (TV * VW) reductions): the
 * passes over input blocks keep them in L1 while they take every row of the task. */

#define SLAB_FLOATS 8192

/* Whether a layer's taps of consecutive positions are consecutive blocks of the data:
 * 1x1, stride 1, no padding. */
static int pointwise(const nchwc_geom *cv) {
  return cv->kh == 1 && cv->kw == 1 && cv->sh == 1 && cv->sw == 1 && cv->pt == 0 &&
         cv->pl == 0 && cv->oh == cv->h && cv->ow == cv->w;
}

/* Whether the positions of a tile run along the whole plane (else along one row): where
 * looking taps up costs little beside a position's ib multiply-adds per tap, or where they
 * are evenly spaced anyway (pointwise). Small planes then take whole tiles: 7x7 cut per row
 * into tiles of 4 and 3 positions took 1.2x-1.3x the time. */
static int plane_tiles(const nchwc_geom *cv) { return pointwise(cv) || cv->ib >= 8; }

/* Sets up tile t for positions [p0, p0 + np): evenly spaced taps (no table) where the
 * positions lie in one row, clear of the padding's columns, or the layer is pointwise; else
 * the table `off`. */
static void place_tile(nchwc_tile *t, i64 p0, i64 np, i64 *off) {
  const nchwc_geom *cv = t->cv;
  const i64 oy = p0 / cv->ow, ox = p0 % cv->ow, ib = cv->ib;
  t->p0 = p0;
  const int one_row = ox + np <= cv->ow;
  if (one_row && ox >= cv->ox_lo && ox + np <= cv->ox_hi) {
    const i64 iy = oy * cv->sh - cv->pt;
    valid_range(cv->kh, cv->dh, iy, cv->h, &t->ky0, &t->ky1);
    t->base = (iy * cv->w + ox * cv->sw - cv->pl) * ib;
    t->step = cv->sw * ib;
    t->off = NULL;
    return;
  }
  if (pointwise(cv)) {
    t->ky0 = 0;
    t->ky1 = 1;
    t->base = p0 * ib;
    t->step = ib;
    t->off = NULL;
    return;
  }
  for (i64 i = 0; i < np; i++) {
    const i64 iy = (p0 + i) / cv->ow * cv->sh - cv->pt, ix = (p0 + i) % cv->ow * cv->sw - cv->pl;
    for (i64 ky = 0; ky < cv->kh; ky++)
      for (i64 kx = 0; kx < cv->kw; kx++) {
        const i64 y = iy + ky * cv->dh, x = ix + kx * cv->dw;
        const int inside = y >= 0 && y < cv->h && x >= 0 && x < cv->w;
        off[(ky * cv->kw + kx) * PT + i] = inside ? (y * cv->w + x) * ib : -1;
      }
  }
  t->off = off;
}

/* Rows [r0, r1) of the output rows of every image and tile group (in that order, so that a
 * task's rows mostly share their group's weights). Over each run of rows of
 * one group, the input blocks go in passes of at most SLAB_FLOATS floats of weights, the
 * partial sums kept in y. The run's positions (or each row's, plane_tiles) are cut into the
 * fewest tiles of at most PT positions, as even as they come (56 on PT = 6: four of 5, six of
 * 6). */
static void nchwc_range(const nchwc_job *job, i64 r0, i64 r1) {
  const nchwc_geom *cv = job->cv;
  const i64 per_group = cv->groups * cv->oh;
  const i64 slab = max64(1, SLAB_FLOATS / (cv->ib * cv->kh * cv->kw * TV * VW));
  const int along_plane = plane_tiles(cv);
  i64 off[TAPS_MAX * PT];
  nchwc_tile t = {.cv = cv, .x = job->x, .bias = job->bias, .res = job->res, .y = job->y,
                  .lo = job->lo, .hi = job->hi, .act = job->act};
  for (i64 run = r0, end; run < r1; run = end) {
    end = min64(r1, (run / cv->oh + 1) * cv->oh); /* the run's rows share b and q */
    t.b = run / per_group;
    t.q = run / cv->oh % cv->groups;
    t.wq = job->prep + t.q * TV * VW * cv->k;
    const int tv = (int)min64(TV, cv->vecs - t.q * TV);
    /* stretches of positions cut into tiles: the run's, or each row's */
    const i64 first = run % cv->oh * cv->ow, last = ((end - 1) % cv->oh + 1) * cv->ow;
    const i64 stretch = along_plane ? last - first : cv->ow;
    const i64 count = (stretch + PT - 1) / PT;
    for (t.cb0 = 0; t.cb0 < cv->cblocks; t.cb0 = t.cb1) {
      t.cb1 = min64(cv->cblocks, t.cb0 + slab);
      t.first = t.cb0 == 0;
      t.last = t.cb1 == cv->cblocks;
      /* the tiles fetch the next pass's weights (the next group's after the last), each a
       * share, spread over its input blocks */
      const i64 next = (t.cb1 - t.cb0) * cv->kh * cv->kw * cv->ib * tv * VW;
      const i64 tiles_in_pass = count * ((last - first) / stretch);
      const i64 share = (next / LINE_FLOATS + tiles_in_pass - 1) / tiles_in_pass;
      t.fetch_lines = (share + (t.cb1 - t.cb0) - 1) / (t.cb1 - t.cb0);
      t.fetch = t.wq + (t.cb1 * cv->kh * cv->kw * cv->ib) * tv * VW;
      for (i64 s0 = first; s0 < last; s0 += stretch)
        for (i64 k = 0; k < count; k++, t.fetch += share * LINE_FLOATS) {
          const i64 p0 = s0 + stretch * k / count, p1 = s0 + stretch * (k + 1) / count;
          place_tile(&t, p0, p1 - p0, off);
          tiles[tv - 1][p1 - p0 - 1](&t);
        }
    }
  }
}

/* Task `task` of a direct convolution: a contiguous share of the rows (nchwc_range). */
static void nchwc_rows(void *arg, i64 task) {
  const nchwc_job *job = arg;
  i64 r0, r1;
  part_range(job->cv->n * job->cv->groups * job->cv->oh, job->tasks, task, &r0, &r1);
  nchwc_range(job, r0, r1);
}

/* ---------------------------------------------------------------------------------------
 * Winograd F(2x2, 3x3) over channel-blocked data (3x3, stride 1, undilated; blocks of one
 * vector): the arithmetic of winograd.c, each 4x4 input tile's transform B^T d B taken on
 * vectors of the block's channels, so that V[xi] (C x tiles) is a 1x1 layer's data in the
 * blocked layout, M[xi] = U[xi] V[xi] is that layer (nchwc_range, the weights U[xi] packed
 * as its), and A^T m A goes through the epilogue straight into the blocked output. A task
 * takes a chunk of tile rows of one image through all three, its V and M in the thread's
 * scratch.
 */

/* The most floats of a chunk's V and M (1 MB: in L2 with the weights passing through). */
#define WINO_CHUNK_FLOATS ((i64)1 << 18)

static int winograd(const nchwc_geom *cv) {
  return cv->kh == 3 && cv->kw == 3 && cv->sh == 1 && cv->sw == 1 && cv->dh == 1 &&
         cv->dw == 1 && cv->ib == VW && cv->ob == VW;
}

/* The geometry of the products of a chunk of `tiles` tiles: the 1x1 layer C -> O over a
 * row of that many positions. */
static nchwc_geom products_geometry(const nchwc_geom *cv, i64 tiles) {
  const i64 g[18] = {1, cv->c, 1, tiles, cv->o, 1, tiles, 1, 1, 1, 1, 1, 1, 0, 0, VW, VW, 1};
  return nchwc_geometry(g);
}

typedef struct {
  const nchwc_geom *cv;
  const float *x, *u, *bias, *res;
  float *y;
  i64 tw, tiles, per, chunks, tasks; /* tiles across, in all; tiles per chunk; chunks */
  float lo, hi;
  int act;
  _Atomic int failed;
} wino_job;

/* v[((xi * C / VW + cb) * tiles + t) * VW + l] = (B^T d B)[xi] of tile t0 + t (t < tiles),
 * channel cb * VW + l, of image b. */
static void wino_inputs(const wino_job *job, float *v, i64 b, i64 t0, i64 tiles) {
  const nchwc_geom *cv = job->cv;
  for (i64 cb = 0; cb < cv->cblocks; cb++) {
    const float *xc = job->x + (b * cv->cblocks + cb) * cv->h * cv->w * VW;
    for (i64 t = 0; t < tiles; t++) {
      const i64 iy = (t0 + t) / job->tw * 2 - cv->pt, ix = (t0 + t) % job->tw * 2 - cv->pl;
      vf e[4][4];
      for (int a = 0; a < 4; a++) {
        vf d[4];
        for (int c = 0; c < 4; c++) {
          const int inside = iy + a >= 0 && iy + a < cv->h && ix + c >= 0 && ix + c < cv->w;
          d[c] = inside ? *(const vf *)(xc + ((iy + a) * cv->w + ix + c) * VW) : (vf){0};
        }
        e[a][0] = d[0] - d[2];
        e[a][1] = d[1] + d[2];
        e[a][2] = d[2] - d[1];
        e[a][3] = d[1] - d[3];
      }
      float *dst = v + (cb * tiles + t) * VW;
      const i64 xs = cv->c * tiles; /* floats per xi */
      for (int c = 0; c < 4; c++) {
        *(vf *)(dst + (0 + c) * xs) = e[0][c] - e[2][c];
        *(vf *)(dst + (4 + c) * xs) = e[1][c] + e[2][c];
        *(vf *)(dst + (8 + c) * xs) = e[2][c] - e[1][c];
        *(vf *)(dst + (12 + c) * xs) = e[1][c] - e[3][c];
      }
    }
  }
}

/* The outputs of tiles [t0, t0 + tiles) of image b, A^T m A of the products m through the
 * epilogue. */
static void wino_outputs(const wino_job *job, const float *m, i64 b, i64 t0, i64 tiles) {
  const nchwc_geom *cv = job->cv;
  const i64 xs = cv->o * tiles, plane = cv->oh * cv->ow;
  const vf lo = (vf){0} + job->lo, hi = (vf){0} + job->hi;
  for (i64 v = 0; v < cv->vecs; v++) {
    const vf bias = job->bias ? *(const vf *)(job->bias + v * VW) : (vf){0};
    const i64 base = (b * cv->vecs + v) * plane * VW;
    for (i64 t = 0; t < tiles; t++) {
      const float *src = m + (v * tiles + t) * VW;
      vf s[2][4];
      for (int c = 0; c < 4; c++) {
        const vf m0 = *(const vf *)(src + c * xs), m1 = *(const vf *)(src + (4 + c) * xs);
        const vf m2 = *(const vf *)(src + (8 + c) * xs), m3 = *(const vf *)(src + (12 + c) * xs);
        s[0][c] = m0 + m1 + m2;
        s[1][c] = m1 - m2 - m3;
      }
      const i64 oy = (t0 + t) / job->tw * 2, ox = (t0 + t) % job->tw * 2;
      for (int r = 0; r < 2 && oy + r < cv->oh; r++) {
        const vf out[2] = {s[r][0] + s[r][1] + s[r][2], s[r][1] - s[r][2] - s[r][3]};
        for (int c = 0; c < 2 && ox + c < cv->ow; c++) {
          const i64 at = base + ((oy + r) * cv->ow + ox + c) * VW;
          vf value = out[c] + bias;
          if (job->res) value += *(const vf *)(job->res + at);
          *(vf *)(job->y + at) = vclamp(value, lo, hi);
          if (job->act) activate(job->y + at, 1, VW, VW, job->act);
        }
      }
    }
  }
}

/* Task `task`: a contiguous share of the chunks of tile rows of every image. */
static void wino_chunks(void *arg, i64 task) {
  wino_job *job = arg;
  const nchwc_geom *cv = job->cv;
  i64 c0, c1;
  part_range(cv->n * job->chunks, job->tasks, task, &c0, &c1);
  for (i64 chunk = c0; chunk < c1; chunk++) {
    const i64 b = chunk / job->chunks, t0 = chunk % job->chunks * job->per;
    const i64 tiles = min64(job->tiles, t0 + job->per) - t0;
    float *v = thread_scratch(16 * (cv->c + cv->o) * tiles);
    if (!v) {
      atomic_store(&job->failed, 1);
      return;
    }
    float *m = v + 16 * cv->c * tiles;
    wino_inputs(job, v, b, t0, tiles);
    const nchwc_geom pg = products_geometry(cv, tiles);
    for (i64 xi = 0; xi < 16; xi++) {
      const nchwc_job products = {.cv = &pg, .x = v + xi * cv->c * tiles,
                                  .prep = job->u + xi * cv->o * cv->c,
                                  .y = m + xi * cv->o * tiles, .lo = -INFINITY, .hi = INFINITY};
      nchwc_range(&products, 0, pg.groups);
    }
    wino_outputs(job, m, b, t0, tiles);
  }
}

/* Winograd over channel-blocked data, in chunks of tiles (along the rows) whose V and M fit
 * WINO_CHUNK_FLOATS, as many chunks per image as make a multiple of the threads. Returns 0,
 * or -1 when a thread's scratch cannot be allocated. */
static int nchwc_winograd(const nchwc_geom *cv, const float *x, const float *u, float *y,
                          const float *bias, const float *res, int nt, const float *bounds) {
  wino_job job = {.cv = cv, .x = x, .u = u, .bias = bias, .res = res, .y = y,
                  .tw = (cv->ow + 1) / 2, .lo = bounds[0], .hi = bounds[1],
                  .act = activation_of(bounds)};
  job.tiles = (cv->oh + 1) / 2 * job.tw;
  const i64 most = max64(1, WINO_CHUNK_FLOATS / (16 * (cv->c + cv->o)));
  job.chunks = (job.tiles + most - 1) / most;
  if (cv->n % nt) job.chunks = (job.chunks + nt - 1) / nt * nt;
  job.per = (job.tiles + job.chunks - 1) / job.chunks;
  job.chunks = (job.tiles + job.per - 1) / job.per;
  job.tasks = split_tasks(cv->n * job.chunks, cv->n * cv->o * cv->oh * cv->ow * cv->k, nt);
  atomic_init(&job.failed, 0);
  ph_parallel(job.tasks, nt, wino_chunks, &job);
  return atomic_load(&job.failed) ? -1 : 0;
}

/* Whether the kernel takes geometry cv: whole blocks of channels (an output block of whole
 * vectors, input blocks of at most IB_MAX), at most TAPS_MAX taps, one group. */
static int takes(const nchwc_geom *cv, const i64 *g) {
  return cv->ib >= 1 && cv->ib <= IB_MAX && cv->c % cv->ib == 0 && cv->ob >= VW &&
         cv->ob % VW == 0 && cv->o % cv->ob == 0 && cv->kh * cv->kw <= TAPS_MAX && g[17] >= 0;
}

/* Floats of the prepared weights (ph_conv2d_nchwc_prepare) for geometry g; 0 for a
 * geometry the kernel does not take. */
i64 ph_conv2d_nchwc_prepared(const i64 *g) {
  const nchwc_geom cv = nchwc_geometry(g);
  return !takes(&cv, g) ? 0 : winograd(&cv) ? 16 * cv.o * cv.c : cv.vecs * VW * cv.k;
}

/* Floats of the scratch ph_conv2d_nchwc needs: none. */
i64 ph_conv2d_nchwc_scratch(const i64 *g) {
  (void)g;
  return 0;
}

/* Packs the weights w[o][c][kh * kw] of geometry cv into prep as the tiles read them: per
 * tile group of tv (at most TV) output vectors, [c / ib][kh][kw][ib][tv * VW]. */
static void pack_weights(float *restrict prep, const float *restrict w, const nchwc_geom *cv) {
  const i64 taps = cv->kh * cv->kw;
  for (i64 q = 0; q < cv->groups; q++) {
    const i64 tv = min64(TV, cv->vecs - q * TV), width = tv * VW;
    float *dst = prep + q * TV * VW * cv->k;
    for (i64 cb = 0; cb < cv->cblocks; cb++)
      for (i64 tap = 0; tap < taps; tap++)
        for (i64 ii = 0; ii < cv->ib; ii++) {
          const i64 ic = cb * cv->ib + ii;
          float *d = dst + ((cb * taps + tap) * cv->ib + ii) * width;
          for (i64 j = 0; j < width; j++)
            d[j] = w[((q * TV * VW + j) * cv->c + ic) * taps + tap];
        }
  }
}

/* Prepares OIHW weights w for ph_conv2d_nchwc: packed (pack_weights), or for Winograd the
 * 16 matrices (G g G^T)[xi], each O x C packed as a 1x1 layer's. Returns 0, or -1 when
 * memory runs out. */
int ph_conv2d_nchwc_prepare(const float *w, float *prep, const i64 *g) {
  const nchwc_geom cv = nchwc_geometry(g);
  if (!winograd(&cv)) {
    pack_weights(prep, w, &cv);
    return 0;
  }
  const i64 oc = cv.o * cv.c;
  float *u = malloc(sizeof(float) * (size_t)(16 * oc + VW));
  if (!u) return -1;
  for (i64 j = 0; j < oc; j += VW) wino_weights(u + j, oc, w + 9 * j, min64(VW, oc - j));
  const nchwc_geom pg = products_geometry(&cv, 1);
  for (i64 xi = 0; xi < 16; xi++) pack_weights(prep + xi * oc, u + xi * oc, &pg);
  free(u);
  return 0;
}

/* Convolution over channel-blocked data with weights prepared by ph_conv2d_nchwc_prepare,
 * subnormals flushed (`cols` is unused). Returns 0, or -1 for a geometry it does not take
 * (ph_conv2d_nchwc_prepared gives 0 for it). */
int ph_conv2d_nchwc(const float *x, const float *prep, float *y, const float *bias,
                    const float *res, float *cols, const i64 *g, const float *bounds) {
  (void)cols;
  const nchwc_geom cv = nchwc_geometry(g);
  if (!takes(&cv, g)) return -1;
  const fp_mode mode = flush_subnormals();
  const int nt = num_threads(g[17]);
  const i64 rows = cv.n * cv.groups * cv.oh, work = cv.n * cv.o * cv.oh * cv.ow * cv.k;
  if (winograd(&cv)) {
    const int status = nchwc_winograd(&cv, x, prep, y, bias, res, nt, bounds);
    set_fp_mode(mode);
    return status;
  }
  nchwc_job job = {.cv = &cv, .x = x, .prep = prep, .bias = bias, .res = res, .y = y,
                   .tasks = split_tasks(rows, work, nt), .lo = bounds[0], .hi = bounds[1],
                   .act = activation_of(bounds)};
  ph_parallel(job.tasks, nt, nchwc_rows, &job);
  set_fp_mode(mode);
  return 0;
}

/* ---------------------------------------------------------------------------------------
 * NCHW layers through the blocked Winograd (conv.c's CONV_BLOCKED path): the data copied
 * into NCHW{VW}c, the products into an NCHW{VW}c scratch, then back through the epilogue.
 */

typedef struct {
  const conv_geom *cv;
  const float *x, *bias, *res;
  float *y, *xc, *yc;
  i64 tasks;
  float lo, hi;
  int act;
} blocked_job;

/* The geometry of cv in channel blocks of one vector, as ph_conv2d_nchwc reads it. */
static void blocked_geometry(i64 *g, const conv_geom *cv, i64 threads) {
  const i64 values[18] = {cv->n, cv->c, cv->h, cv->w, cv->o, cv->oh, cv->ow, cv->kh, cv->kw,
                          cv->sh, cv->sw, cv->dh, cv->dw, cv->pt, cv->pl, VW, VW, threads};
  memcpy(g, values, sizeof values);
}

int use_blocked_winograd(const conv_geom *cv) {
  if (!use_winograd(cv) || cv->c % VW || cv->o % VW || cv->groups != 1) return 0;
  const wino_geom wn = wino_geometry(cv);
  return !wn.transposed && NR % wn.ts * 8 >= NR;
}

i64 blocked_winograd_floats(const conv_geom *cv) {
  return cv->n * (cv->c * cv->h * cv->w + cv->o * cv->oh * cv->ow);
}

int blocked_winograd_prepare(const float *w, float *prep, const conv_geom *cv) {
  i64 g[18];
  blocked_geometry(g, cv, 1);
  return ph_conv2d_nchwc_prepare(w, prep, g);
}

/* Task t: a share of the data's channel blocks (of every image) into NCHW{VW}c. */
static void block_inputs(void *arg, i64 t) {
  const blocked_job *job = arg;
  const conv_geom *cv = job->cv;
  const i64 plane = cv->h * cv->w;
  i64 b0, b1;
  part_range(cv->n * cv->c / VW, job->tasks, t, &b0, &b1);
  for (i64 blk = b0; blk < b1; blk++) {
    const float *src = job->x + blk * VW * plane;
    float *dst = job->xc + blk * VW * plane;
    for (i64 q = 0; q < plane; q++)
      for (i64 l = 0; l < VW; l++) dst[q * VW + l] = src[l * plane + q];
  }
}

/* Task t: a share of the output's channel blocks (of every image) back into NCHW through
 * the epilogue, each channel's row then through the activation. */
static void unblock_outputs(void *arg, i64 t) {
  const blocked_job *job = arg;
  const conv_geom *cv = job->cv;
  i64 b0, b1;
  part_range(cv->n * cv->o / VW, job->tasks, t, &b0, &b1);
  for (i64 blk = b0; blk < b1; blk++) {
    const float *src = job->yc + blk * VW * cv->p;
    const i64 o0 = blk * VW % cv->o;
    for (i64 l = 0; l < VW; l++) {
      float *row = job->y + (blk * VW + l) * cv->p;
      for (i64 q = 0; q < cv->p; q++) row[q] = src[q * VW + l];
      epilogue(row, row, cv->p, job->bias ? job->bias + o0 + l : NULL, 0,
               job->res ? job->res + (blk * VW + l) * cv->p : NULL, job->lo, job->hi);
      activate(row, 1, cv->p, cv->p, job->act);
    }
  }
}

int conv2d_blocked_winograd(const conv_geom *cv, const float *x, const float *prep, float *y,
                            const float *bias, const float *res, float *cols, int nt, float lo,
                            float hi, int act) {
  blocked_job job = {.cv = cv, .x = x, .bias = bias, .res = res, .y = y, .xc = cols,
                     .yc = cols + cv->n * cv->c * cv->h * cv->w, .lo = lo, .hi = hi,
                     .act = act};
  job.tasks = split_tasks(cv->n * cv->c / VW, cv->n * cv->c * cv->h * cv->w * COPY_WORK, nt);
  ph_parallel(job.tasks, nt, block_inputs, &job);
  i64 g[18];
  blocked_geometry(g, cv, nt);
  const nchwc_geom bg = nchwc_geometry(g);
  const float raw[3] = {-INFINITY, INFINITY, 0.0f};
  if (nchwc_winograd(&bg, job.xc, prep, job.yc, NULL, NULL, nt, raw)) return -1;
  job.tasks = split_tasks(cv->n * cv->o / VW, cv->n * cv->o * cv->p * COPY_WORK, nt);
  ph_parallel(job.tasks, nt, unblock_outputs, &job);
  return 0;
}
