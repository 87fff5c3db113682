/* Winograd F(2x2, 3x3) convolutions (see conv.h). */
#include "conv.h"

int use_winograd(const conv_geom *cv) {
  return cv->kh == 3 && cv->kw == 3 && cv->sh == 1 && cv->sw == 1 && cv->dh == 1 &&
         cv->dw == 1 && cv->groups == 1 && cv->c >= 16 &&
         (cv->p >= WINO_MIN_OUTPUTS ||
          ((cv->oh + 1) / 2 * ((cv->ow + 1) / 2) <= VW && cv->o > MCP * MR)) &&
         ((cv->ow + 1) / 2 + VW - 1) / VW * VW <= NR;
}

wino_geom wino_geometry(const conv_geom *cv) {
  wino_geom wn;
  memset(&wn, 0, sizeof wn);
  wn.th = (cv->oh + 1) / 2;
  wn.tw = (cv->ow + 1) / 2;
  wn.twv = (wn.tw + VW - 1) / VW * VW;
  /* Tile rows side by side at their own width where more of them fit in NR columns (7
   * tiles across a 14x14 plane: 4 rows instead of 2, 28 of 32 columns used). */
  wn.ts = NR / wn.tw > NR / wn.twv ? wn.tw : wn.twv;
  wn.rows = max64(1, NR / wn.ts);
  wn.row_groups = (wn.th + wn.rows - 1) / wn.rows;
  wn.transposed = min64(wn.rows, wn.th) * wn.ts <= VW;
  wn.wg.h = cv->h;
  wn.wg.w = cv->w;
  wn.wg.sh = wn.wg.sw = 2;
  wn.wg.pt = cv->pt;
  wn.wg.pl = cv->pl;
  wn.wg.hq = wn.th + 1;
  wn.wg.wq = wn.tw + 1;
  wn.wg.phase = wn.wg.hq * wn.wg.wq;
  return wn;
}

i64 wino_scratch_floats(const conv_geom *cv) {
  const wino_geom wn = wino_geometry(cv);
  /* slack: whole-vector reads; then a small plane's V */
  return cv->c * 4 * wn.wg.phase + NR + (wn.transposed ? 16 * cv->c * NR : 0);
}

i64 wino_rows(const conv_geom *cv) {
  return wino_geometry(cv).transposed ? (cv->o + TO - 1) / TO * TO : cv->panels * MR;
}

/* u[xi * stride + j] = (G g G^T)[xi] for the 3x3 kernels g = w[9 j : 9 j + 9], j < VW
 * (kernels past n are zero). */
void wino_weights(float *u, i64 stride, const float *restrict w, i64 n) {
  float g[9][VW];
  for (i64 j = 0; j < VW; j++)
    for (int k = 0; k < 9; k++) g[k][j] = j < n ? w[9 * j + k] : 0.0f;
  vf t[4][3];
  for (int k = 0; k < 3; k++) {
    const vf g0 = *(const vf *)g[k], g1 = *(const vf *)g[3 + k], g2 = *(const vf *)g[6 + k];
    t[0][k] = g0;
    t[1][k] = 0.5f * (g0 + g1 + g2);
    t[2][k] = 0.5f * (g0 - g1 + g2);
    t[3][k] = g2;
  }
  for (int i = 0; i < 4; i++) {
    const vf r[4] = {t[i][0], 0.5f * (t[i][0] + t[i][1] + t[i][2]),
                     0.5f * (t[i][0] - t[i][1] + t[i][2]), t[i][2]};
    for (int k = 0; k < 4; k++) {
      float *dst = u + (4 * i + k) * stride;
      if (n >= VW) {
        *(vf *)dst = r[k];
      } else {
        for (i64 j = 0; j < n; j++) dst[j] = r[k][j];
      }
    }
  }
}

/* v[xi * vs + tx] = (B^T d B)[xi] of tile (ty, tx) for tx < twv (tiles past tw read the
 * planes' slack), from one channel's phase planes. */
static void wino_input_row(float *v, i64 vs, const float *planes, const wino_geom *wn, i64 ty) {
  const i64 wq = wn->wg.wq, phase = wn->wg.phase;
  const float *row[4][4];
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++)
      row[a][b] = planes + ((a % 2) * 2 + b % 2) * phase + (ty + a / 2) * wq + b / 2;
  for (i64 tx = 0; tx < wn->twv; tx += VW) {
    vf e[4][4];
    for (int a = 0; a < 4; a++) {
      const vf d0 = *(const vf *)(row[a][0] + tx), d1 = *(const vf *)(row[a][1] + tx);
      const vf d2 = *(const vf *)(row[a][2] + tx), d3 = *(const vf *)(row[a][3] + tx);
      e[a][0] = d0 - d2;
      e[a][1] = d1 + d2;
      e[a][2] = d2 - d1;
      e[a][3] = d1 - d3;
    }
    for (int b = 0; b < 4; b++) {
      *(vf *)(v + (0 + b) * vs + tx) = e[0][b] - e[2][b];
      *(vf *)(v + (4 + b) * vs + tx) = e[1][b] + e[2][b];
      *(vf *)(v + (8 + b) * vs + tx) = e[2][b] - e[1][b];
      *(vf *)(v + (12 + b) * vs + tx) = e[1][b] - e[3][b];
    }
  }
}

/* The two output rows of a tile row (A^T m A of m[xi * ms + tx]) into row0 and row1, each
 * 2 * twv long; `tmp` holds 4 * twv floats. */
static void wino_output_row(float *restrict row0, float *restrict row1, float *restrict tmp,
                            const float *m, i64 ms, i64 twv) {
  for (i64 tx = 0; tx < twv; tx += VW) {
    vf s[2][4];
    for (int b = 0; b < 4; b++) {
      const vf m0 = *(const vf *)(m + b * ms + tx), m1 = *(const vf *)(m + (4 + b) * ms + tx);
      const vf m2 = *(const vf *)(m + (8 + b) * ms + tx);
      const vf m3 = *(const vf *)(m + (12 + b) * ms + tx);
      s[0][b] = m0 + m1 + m2;
      s[1][b] = m1 - m2 - m3;
    }
    for (int r = 0; r < 2; r++) {
      *(vf *)(tmp + (2 * r) * twv + tx) = s[r][0] + s[r][1] + s[r][2];
      *(vf *)(tmp + (2 * r + 1) * twv + tx) = s[r][1] - s[r][2] - s[r][3];
    }
  }
  for (i64 tx = 0; tx < twv; tx++) {
    row0[2 * tx] = tmp[tx];
    row0[2 * tx + 1] = tmp[twv + tx];
    row1[2 * tx] = tmp[2 * twv + tx];
    row1[2 * tx + 1] = tmp[3 * twv + tx];
  }
}

typedef struct {
  const conv_geom *cv;
  const wino_geom *wn;
  const float *x, *u, *bias, *res;
  float *y, *planes;
  i64 b, tasks; /* the image; the job's tasks */
  float lo, hi;
  int act;
  _Atomic int failed;
} wino_job;

/* Task t of image b's phase planes: a contiguous share of the channels. */
static void wino_planes(void *arg, i64 t) {
  const wino_job *job = arg;
  const conv_geom *cv = job->cv;
  const wino_geom *wn = job->wn;
  i64 c0, c1;
  part_range(cv->c, job->tasks, t, &c0, &c1);
  for (i64 ch = c0; ch < c1; ch++)
    phase_planes(job->planes + ch * 4 * wn->wg.phase,
                 job->x + (job->b * cv->c + ch) * cv->h * cv->w, &wn->wg, 0.0f);
}

/* Floats of a thread's buffer: V (16 x C x NR), M (16 panels' chunk), two output rows and
 * their transform, one tile row's transform. */
static i64 wino_scratch(const conv_geom *cv, const wino_geom *wn) {
  return 16 * cv->c * NR + 16 * MCP * MR * NR + 8 * wn->twv + 16 * wn->twv;
}

/* V (16 x C x NR: v[xi * C * NR + ch * NR + column]) for channels [ch0, ch1) and tile rows
 * [ty0, ty0 + nrows), each tile row's columns at (ty - ty0) * ts; `tin` holds 16 * twv floats
 * for rows packed at their own width. */
static void wino_inputs(const wino_job *job, float *v, float *tin, i64 ch0, i64 ch1, i64 ty0,
                        i64 nrows) {
  const conv_geom *cv = job->cv;
  const wino_geom *wn = job->wn;
  const i64 c = cv->c;
  for (i64 ch = ch0; ch < ch1; ch++) {
    const float *plane = job->planes + ch * 4 * wn->wg.phase;
    for (i64 r = 0; r < nrows; r++) {
      if (wn->ts == wn->twv) {
        wino_input_row(v + ch * NR + r * wn->twv, c * NR, plane, wn, ty0 + r);
        continue;
      }
      /* packed rows are narrower than a vector (twv == VW) */
      wino_input_row(tin, wn->twv, plane, wn, ty0 + r);
      for (i64 xi = 0; xi < 16; xi++)
        store_first(v + xi * c * NR + ch * NR + r * wn->ts, *(const vf *)(tin + xi * wn->twv),
                    wn->ts);
    }
  }
}

/* The V that every task of a small plane's layer reads: after the phase planes in the
 * scratch (see wino_scratch_floats). */
static float *wino_shared(const wino_job *job) {
  return job->planes + job->cv->c * 4 * job->wn->wg.phase + NR;
}

/* Task t of a small plane's V: a contiguous share of the channels, every tile row. */
static void wino_shared_inputs(void *arg, i64 t) {
  const wino_job *job = arg;
  float tin[16 * VW] __attribute__((aligned(64)));
  i64 c0, c1;
  part_range(job->cv->c, job->tasks, t, &c0, &c1);
  wino_inputs(job, wino_shared(job), tin, c0, c1, 0, job->wn->th);
}

/* The 16 products of a task's tiles (the first `cols` columns of V, at most VW) for output
 * channels of micro-panels [q0, q1), as transposed tiles of TO channels (the weights in
 * transposed panels, wino_rows rows a matrix), each written into M as the output transform
 * reads it. The tiles are split into near-equal groups of at most TP_MAX. */
static void wino_products_transposed(const wino_job *job, const float *v, float *m, i64 q0,
                                     i64 q1, i64 cols) {
  const conv_geom *cv = job->cv;
  const i64 c = cv->c, rows = wino_rows(cv), o0 = q0 * MR, o1 = min64(cv->o, q1 * MR);
  const i64 groups = (cols + TP_MAX - 1) / TP_MAX;
  float tile[TP_MAX * TO] __attribute__((aligned(64)));
  const i64 slice = TO * c / groups; /* of the next panel, for each group to fetch */
  for (i64 xi = 0; xi < 16; xi++)
    for (i64 p = o0 / TO; p * TO < o1; p++) {
      const float *panel = job->u + (xi * rows + p * TO) * c;
      const float *next = (p + 1) * TO < o1 ? panel + TO * c
                          : xi < 15         ? job->u + ((xi + 1) * rows + o0 / TO * TO) * c
                                            : NULL;
      for (i64 g = 0; g < groups; g++) {
        i64 t0, t1;
        part_range(cols, groups, g, &t0, &t1);
        transposed_tile(tile, panel, v + xi * c * NR + t0, NR, c, t1 - t0,
                        next ? next + g * slice : NULL, slice);
        for (i64 j = max64(0, o0 - p * TO); j < min64(TO, o1 - p * TO); j++)
          for (i64 i = 0; i < t1 - t0; i++)
            m[(xi * MCP * MR + p * TO + j - o0) * NR + t0 + i] = tile[i * TO + j];
      }
    }
}

/* Item `item` of image b (rows of tiles, chunk of output channels): the tiles' transforms
 * into V, the 16 products into M, and their transforms back through the epilogue. */
static void wino_item(const wino_job *job, i64 item, float *v) {
  const conv_geom *cv = job->cv;
  const wino_geom *wn = job->wn;
  const float *u = job->u, *bias = job->bias, *res = job->res;
  float *y = job->y;
  const i64 c = cv->c, o = cv->o, b = job->b;
  float *m = v + 16 * c * NR, *rows = m + 16 * MCP * MR * NR;
  const i64 ty0 = (item % wn->row_groups) * wn->rows, chunk = item / wn->row_groups;
  const i64 nrows = min64(wn->rows, wn->th - ty0);
  i64 q0, q1;
  part_range(cv->panels, cv->chunks, chunk, &q0, &q1);
  if (wn->transposed) { /* one row group (th <= rows): V was taken once, for every chunk */
    wino_products_transposed(job, wino_shared(job), m, q0, q1, nrows * wn->ts);
  } else {
    wino_inputs(job, v, rows + 8 * wn->twv, 0, c, ty0, nrows);
    for (i64 xi = 0; xi < 16; xi++)
      for (i64 q = q0; q < q1; q++)
        for (i64 c0 = 0; c0 < c; c0 += KC)
          micro_tile(u + ((xi * cv->panels + q) * c + c0) * MR, min64(MR, o - q * MR),
                     v + (xi * c + c0) * NR, NR, min64(KC, c - c0),
                     m + (xi * MCP + q - q0) * MR * NR, c0 > 0, NULL, 0);
  }
  for (i64 q = q0; q < q1; q++) {
    for (i64 i = 0; i < min64(MR, o - q * MR); i++) {
      const i64 oc = q * MR + i;
      const float *mo = m + (q - q0) * MR * NR + i * NR;
      for (i64 r = 0; r < nrows; r++) {
        wino_output_row(rows, rows + 2 * wn->twv, rows + 4 * wn->twv, mo + r * wn->ts,
                        MCP * MR * NR, wn->twv);
        for (i64 dy = 0; dy < 2 && 2 * (ty0 + r) + dy < cv->oh; dy++) {
          const i64 at = ((b * o + oc) * cv->oh + 2 * (ty0 + r) + dy) * cv->ow;
          epilogue(y + at, rows + dy * 2 * wn->twv, cv->ow, bias ? bias + oc : NULL, 0,
                   res ? res + at : NULL, job->lo, job->hi);
        }
      }
      if (job->act) { /* the item's output rows of this channel, one stretch */
        const i64 oy = 2 * ty0, ny = min64(cv->oh, 2 * (ty0 + nrows)) - oy;
        activate(y + ((b * o + oc) * cv->oh + oy) * cv->ow, 1, 0, ny * cv->ow, job->act);
      }
    }
  }
}

/* Task t of image b's products: a contiguous share of its items, in the thread's own
 * buffer. */
static void wino_products(void *arg, i64 t) {
  wino_job *job = arg;
  float *v = thread_scratch(wino_scratch(job->cv, job->wn));
  if (!v) {
    atomic_store(&job->failed, 1);
    return;
  }
  const conv_geom *cv = job->cv;
  const wino_geom *wn = job->wn;
  /* The columns past the tiles of the item with the fewest rows (the last ones) are zeroed,
   * of V (the products read them) or, for transposed products, which write only the
   * tiles' columns, of M (the output transform reads whole vectors): their results are
   * never stored, and they are not to be values the buffer held before. */
  const i64 used = min64(wn->rows, wn->th - (wn->row_groups - 1) * wn->rows) * wn->ts;
  float *zeroed = wn->transposed ? v + 16 * cv->c * NR : v;
  const i64 zeroed_rows = wn->transposed ? 16 * MCP * MR : 16 * cv->c;
  for (i64 row = 0; row < zeroed_rows && used < NR; row++)
    memset(zeroed + row * NR + used, 0, sizeof(float) * (size_t)(NR - used));
  i64 u0, u1;
  part_range(wn->row_groups * cv->chunks, job->tasks, t, &u0, &u1);
  for (i64 item = u0; item < u1; item++) wino_item(job, item, v);
}

/* u: the transformed weights, 16 matrices (O x C) in panels (winograd_prepare). Per image,
 * one job copies the phase planes, the next one takes the products. */
int conv2d_winograd(const conv_geom *cv, const float *x, const float *u, float *y,
                    const float *bias, const float *res, float *planes, int nt, float lo,
                    float hi, int act) {
  const wino_geom wn = wino_geometry(cv);
  const i64 items = wn.row_groups * cv->chunks;
  /* the products' multiply-adds (the transforms add about a tenth) */
  const i64 work = 16 * cv->o * wn.row_groups * NR * cv->c;
  wino_job job = {.cv = cv, .wn = &wn, .x = x, .u = u, .bias = bias, .res = res, .y = y,
                  .planes = planes, .lo = lo, .hi = hi, .act = act};
  atomic_init(&job.failed, 0);
  for (i64 b = 0; b < cv->n && !atomic_load(&job.failed); b++) {
    job.b = b;
    job.tasks = split_tasks(cv->c, cv->c * 4 * wn.wg.phase * COPY_WORK, nt);
    ph_parallel(job.tasks, nt, wino_planes, &job);
    if (wn.transposed) {
      job.tasks = split_tasks(cv->c, cv->c * 16 * wn.th * wn.twv * COPY_WORK, nt);
      ph_parallel(job.tasks, nt, wino_shared_inputs, &job);
    }
    job.tasks = split_tasks(items, work, nt);
    ph_parallel(job.tasks, nt, wino_products, &job);
  }
  return atomic_load(&job.failed) ? -1 : 0;
}
