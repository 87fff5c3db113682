/* Dense layers and matrix products. */
#include "kernels.h"

/* ---------------------------------------------------------------------------------------
 * Dense: y[M][U] = act(clamp(x[M][K] . w[U][K] + bias[U], lo, hi)), in tasks of units. The
 * unpacked form reads DENSE_UNITS weight rows side by side: eight streams keep more of the
 * memory's latency in flight than four (a 1280 x 1000 layer's weights from memory 0.84x the
 * time, from the caches 0.97x), sixteen spill the sums.
 */
#define DENSE_UNITS 8

static float hsum(vf v) {
  float s = 0.0f;
  for (int l = 0; l < VW; l++) s += v[l];
  return s;
}

/* Packed weights: panels of DENSE_PANEL units, each holding for every input k the panel's
 * weights side by side ([panel][k][unit], units past the last zero), so that a panel is one
 * sequential stream (the eight row streams of the unpacked form reach ~0.7x the speed on
 * weights read from L3: a 784 x 512 layer 30 us against 21). */
#define DENSE_PANEL (4 * VW)
/* Below this many multiply-adds the packed kernel runs on one thread (the pool's hand-off
 * costs a few microseconds). */
#define DENSE_POOL_MIN_WORK ((i64)1 << 17)

i64 ph_dense_packed(const i64 *g) {
  return (g[2] + DENSE_PANEL - 1) / DENSE_PANEL * DENSE_PANEL * g[1];
}

void ph_dense_pack(const float *w, float *wp, const i64 *g) {
  const i64 k = g[1], u = g[2], panels = (u + DENSE_PANEL - 1) / DENSE_PANEL;
  for (i64 p = 0; p < panels; p++)
    for (i64 j = 0; j < k; j++)
      for (i64 l = 0; l < DENSE_PANEL; l++) {
        const i64 unit = p * DENSE_PANEL + l;
        wp[(p * k + j) * DENSE_PANEL + l] = unit < u ? w[unit * k + j] : 0.0f;
      }
}

typedef struct {
  const float *x, *wp, *bias;
  float *y;
  i64 m, k, u;
  float lo, hi;
  int act;
} dense_job;

/* Panel p of the packed form for every row: even and odd inputs in separate sums, so eight
 * chains of additions are in flight; then the epilogue and the activation of its units. */
static void dense_panel(void *arg, i64 p) {
  const dense_job *job = arg;
  const float *x = job->x, *panel = job->wp + p * job->k * DENSE_PANEL, *bias = job->bias;
  float *y = job->y;
  const i64 m = job->m, k = job->k, u = job->u, u0 = p * DENSE_PANEL;
  const float lo = job->lo, hi = job->hi;
  const i64 nu = min64(DENSE_PANEL, u - u0);
  for (i64 r = 0; r < m; r++) {
    const float *xr = x + r * k;
    vf acc[2][4];
    for (int v = 0; v < 4; v++) acc[0][v] = acc[1][v] = (vf){0};
    i64 j = 0;
    for (; j + 1 < k; j += 2) {
      const vf x0 = (vf){0} + xr[j], x1 = (vf){0} + xr[j + 1];
      const float *w0 = panel + j * DENSE_PANEL, *w1 = w0 + DENSE_PANEL;
      for (int v = 0; v < 4; v++) {
        acc[0][v] += *(const vf *)(w0 + v * VW) * x0;
        acc[1][v] += *(const vf *)(w1 + v * VW) * x1;
      }
    }
    if (j < k) {
      const vf x0 = (vf){0} + xr[j];
      for (int v = 0; v < 4; v++) acc[0][v] += *(const vf *)(panel + j * DENSE_PANEL + v * VW) * x0;
    }
    float dots[DENSE_PANEL];
    for (int v = 0; v < 4; v++) *(vf *)(dots + v * VW) = acc[0][v] + acc[1][v];
    epilogue(y + r * u + u0, dots, nu, bias ? bias + u0 : NULL, 1, NULL, lo, hi);
  }
  if (job->act) activate(y + u0, m, u, nu, job->act);
}

typedef struct {
  const float *x, *w, *bias;
  float *y;
  i64 m, k, u, groups, tasks;
  float lo, hi;
  int act;
} dense_rows_job;

/* Task t of the unpacked form: a contiguous share of the groups of DENSE_UNITS units, every
 * row; then the activation of its units. */
static void dense_groups(void *arg, i64 t) {
  const dense_rows_job *job = arg;
  const float *x = job->x, *w = job->w, *bias = job->bias;
  float *y = job->y;
  const i64 m = job->m, k = job->k, u = job->u, kv = k / (2 * VW) * (2 * VW);
  i64 g0, g1;
  part_range(job->groups, job->tasks, t, &g0, &g1);
  for (i64 gr = g0; gr < g1; gr++) {
    const i64 u0 = gr * DENSE_UNITS, nu = min64(DENSE_UNITS, u - u0);
    const float *wr[DENSE_UNITS];
    for (i64 i = 0; i < DENSE_UNITS; i++) wr[i] = w + (u0 + min64(i, nu - 1)) * k;
    for (i64 r = 0; r < m; r++) {
      const float *xr = x + r * k;
      vf acc[DENSE_UNITS][2];
      for (int i = 0; i < DENSE_UNITS; i++) acc[i][0] = acc[i][1] = (vf){0};
      for (i64 j = 0; j < kv; j += 2 * VW) {
        const vf x0 = *(const vf *)(xr + j), x1 = *(const vf *)(xr + j + VW);
        for (int i = 0; i < DENSE_UNITS; i++) {
          acc[i][0] += *(const vf *)(wr[i] + j) * x0;
          acc[i][1] += *(const vf *)(wr[i] + j + VW) * x1;
        }
      }
      float dots[DENSE_UNITS];
      for (i64 i = 0; i < nu; i++) {
        dots[i] = hsum(acc[i][0] + acc[i][1]);
        for (i64 j = kv; j < k; j++) dots[i] += wr[i][j] * xr[j];
      }
      epilogue(y + r * u + u0, dots, nu, bias ? bias + u0 : NULL, 1, NULL, job->lo, job->hi);
    }
  }
  if (job->act && g1 > g0) { /* the task's units of every row, a stretch per row */
    const i64 u0 = g0 * DENSE_UNITS;
    activate(y + u0, m, u, min64(u, g1 * DENSE_UNITS) - u0, job->act);
  }
}

/* The dense layer y = act(clamp(x . w^T + bias, lo, hi)) (see above); w packed in wp when
 * wp is given. */
static void dense(const float *x, const float *w, const float *wp, float *y, const float *bias,
                  const i64 *g, const float *bounds) {
  const i64 m = g[0], k = g[1], u = g[2];
  const float lo = bounds[0], hi = bounds[1];
  const int act = activation_of(bounds);
  if (wp) { /* tasks of one panel each: a late thread cannot stall it (pool.c) */
    dense_job job = {x, wp, bias, y, m, k, u, lo, hi, act};
    ph_parallel((u + DENSE_PANEL - 1) / DENSE_PANEL,
                m * k * u < DENSE_POOL_MIN_WORK ? 1 : num_threads(g[3]), dense_panel, &job);
    return;
  }
  const int nt = m * k * u < PARALLEL_MIN_WORK ? 1 : num_threads(g[3]);
  const i64 groups = (u + DENSE_UNITS - 1) / DENSE_UNITS;
  dense_rows_job job = {x, w, bias, y, m, k, u, groups, split_tasks(groups, m * k * u, nt),
                        lo, hi, act};
  ph_parallel(job.tasks, nt, dense_groups, &job);
}

/* ---------------------------------------------------------------------------------------
 * Matrix products y[bt][M][N] = a[bt] (M x K) x b[bt] (K x N), batched, with transposes
 * folded into strides: element (r, k) of a[bt] is a[bt * sa + r * ra + k * ca] and element
 * (k, n) of b[bt] is b[bt * sb + k * rb + n * cb] (a batch stride of 0 broadcasts). The
 * epilogue is y = act(clamp((acc + bias[n]) * scale[n] + res[bt * sr + r * N + n], lo, hi)),
 * each of bias, scale and res skipped when NULL (sr = 0 broadcasts the residual over the
 * batch).
 * Geometry g: {batch, M, N, K, sa, ra, ca, sb, rb, cb, packed, threads, sr}. b is used in
 * panels of NR columns (ph_matmul_pack_b): when `packed` is 1, `bp` already holds them
 * (constant weights, packed once); otherwise the threads pack b on every call into `bp`
 * (ph_matmul_packed floats), or into memory of their own when bp is NULL. Each task packs
 * its rows of a into row panels of mm_height rows once (mm_pack_rows). Returns 0, or -1 when
 * memory runs out.
 */
typedef struct {
  i64 batch, m, n, k, sa, ra, ca, sb, rb, cb, packed, sr;
  i64 mr, panels, mcp, chunks, blocks, spans, bbatch;
} mm_geom;

/* The heights a row panel may have, in order of preference. With 32 vector registers a
 * tile of 14 or 7 rows keeps its sums in registers as one of 8 does; the products take the
 * height that pads the fewest rows (C harness, alternating with 8 rows, one thread:
 * ConvNeXt-T's 196-row products in 7 rows 0.99x the time, in 14 rows 0.97x; its 49-row ones
 * in 7 rows 0.90x-0.91x, in 14 0.94x-0.97x; with no padding to save, 7 rows took 1.05x-1.15x
 * the time and 14 rows 1.02x-1.07x, so 8 goes first). */
#if MR_MAX == 14
static const int mm_heights[] = {MR, 14, 7};
#else
static const int mm_heights[] = {MR};
#endif

/* The row panels' height for m rows (see mm_heights). */
static i64 mm_height(i64 m) {
  i64 best = mm_heights[0], waste = -1;
  for (size_t i = 0; i < sizeof(mm_heights) / sizeof(mm_heights[0]); i++) {
    const i64 h = mm_heights[i], padded = (m + h - 1) / h * h - m;
    if (waste < 0 || padded < waste) {
      best = h;
      waste = padded;
    }
  }
  return best;
}

/* Row panels per chunk (mcp): as many as fill MM_CHUNK_BYTES of packed rows (in L2 beside
 * a panel of b), at least MCP and at most MM_CHUNK_MAX. Each chunk reads all of b, so
 * ViT-B/16's 197 rows in one chunk rather than two took its products 0.97x the time. */
#define MM_CHUNK_BYTES ((i64)1 << 20)
#define MM_CHUNK_MAX (4 * MCP)

static mm_geom mm_geometry(const i64 *g) {
  mm_geom mg = {g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[12],
                0, 0, 0, 0, 0, 0, 0};
  mg.mr = mm_height(mg.m);
  mg.panels = (mg.m + mg.mr - 1) / mg.mr;
  const i64 panel_bytes = max64(mg.k, 1) * mg.mr * (i64)sizeof(float);
  mg.mcp = min64(MM_CHUNK_MAX, max64(MCP, MM_CHUNK_BYTES / panel_bytes));
  mg.chunks = (mg.panels + mg.mcp - 1) / mg.mcp;
  mg.blocks = (mg.n + NR - 1) / NR;
  mg.spans = (mg.blocks + NB - 1) / NB;
  mg.bbatch = mg.sb ? mg.batch : 1;
  return mg;
}

/* Floats of b in panels: per batch item of b, `blocks` panels of K x NR. */
i64 ph_matmul_packed(const i64 *g) {
  const mm_geom mg = mm_geometry(g);
  return mg.bbatch * mg.blocks * mg.k * NR;
}

/* Panel blk of b's batch item bt: bp[(bt * blocks + blk) * K * NR + k * NR + j] =
 * b(k, blk * NR + j), zero past column N. */
static void mm_pack_panel(float *restrict bp, const float *restrict b, const mm_geom *mg,
                          i64 bt, i64 blk) {
  const i64 n0 = blk * NR, width = min64(NR, mg->n - n0);
  const float *src = b + bt * mg->sb + n0 * mg->cb;
  float *dst = bp + (bt * mg->blocks + blk) * mg->k * NR;
  for (i64 kk = 0; kk < mg->k; kk++, dst += NR) {
    const float *row = src + kk * mg->rb;
    if (mg->cb == 1) {
      memcpy(dst, row, (size_t)width * sizeof(float));
    } else {
      for (i64 j = 0; j < width; j++) dst[j] = row[j * mg->cb];
    }
    for (i64 j = width; j < NR; j++) dst[j] = 0.0f;
  }
}

/* Packs all of b into panels (one thread). */
void ph_matmul_pack_b(const float *b, float *bp, const i64 *g) {
  const mm_geom mg = mm_geometry(g);
  for (i64 bt = 0; bt < mg.bbatch; bt++)
    for (i64 blk = 0; blk < mg.blocks; blk++) mm_pack_panel(bp, b, &mg, bt, blk);
}

/* ap[(q - q0) * K * mr + kk * mr + i] = a(q * mr + i, kk) for every kk < K, zero past
 * row M: the task's rows packed once for all its column blocks, in panels of mr rows (a
 * constant: inlined into mm_task_of). */
static inline __attribute__((always_inline)) void mm_pack_rows(
    const int mr, float *restrict ap, const float *restrict a, const mm_geom *mg, i64 q0,
    i64 q1) {
  for (i64 q = q0; q < q1; q++) {
    float *panel = ap + (q - q0) * mg->k * mr;
    if (mg->ca == 1 && (q + 1) * mr <= mg->m) { /* a whole panel of rows, each contiguous */
      const float *rows[MR_MAX];
      for (i64 i = 0; i < mr; i++) rows[i] = a + (q * mr + i) * mg->ra;
      for (i64 kk = 0; kk < mg->k; kk++)
        for (i64 i = 0; i < mr; i++) panel[kk * mr + i] = rows[i][kk];
      continue;
    }
    for (i64 i = 0; i < mr; i++) {
      const i64 r = q * mr + i;
      if (r >= mg->m) {
        for (i64 kk = 0; kk < mg->k; kk++) panel[kk * mr + i] = 0.0f;
        continue;
      }
      const float *row = a + r * mg->ra;
      if (mg->ca == 1) {
        for (i64 kk = 0; kk < mg->k; kk++) panel[kk * mr + i] = row[kk];
      } else {
        for (i64 kk = 0; kk < mg->k; kk++) panel[kk * mr + i] = row[kk * mg->ca];
      }
    }
  }
}

typedef struct {
  const float *bias, *scale, *res, *gate;
  float lo, hi;
  int act;
} mm_epilogue;

/* The rows x width corner of the raw tile c (row stride NR) through the epilogue into y
 * (and res and gate, laid out like y) at row stride ldy, for columns starting at n0. */
static void mm_store(float *restrict y, const float *restrict c, i64 rows, i64 width,
                     i64 ldy, const float *res, const float *gate, i64 n0,
                     const mm_epilogue *ep) {
  for (i64 i = 0; i < rows; i++) {
    const float *ci = c + i * NR;
    float *yi = y + i * ldy;
    const float *ri = res ? res + i * ldy : NULL;
    for (i64 j = 0; j < width; j++) {
      float v = ci[j];
      if (ep->bias) v = v + ep->bias[n0 + j];
      if (ep->scale) v = v * ep->scale[n0 + j];
      if (ri) v = v + ri[j];
      v = v < ep->lo ? ep->lo : v;
      yi[j] = v > ep->hi ? ep->hi : v;
    }
  }
  if (ep->act) activate(y, rows, ldy, width, ep->act);
  if (gate) gate_rows(y, rows, ldy, width, gate);
}

/* The matrix products' reduction block: both operands are packed whole, so it sets only how
 * often a tile's raw sums go to cbuf and back (a 1024-deep block took ViT-B/16's and BERT's
 * products 0.96x-0.98x the time of the convolutions' 256). */
#define MM_KC 1024

/* One task: batch item bt, row panels [q0, q1), column blocks [blk0, blk1), in groups of
 * NB blocks. Full tiles go through the epilogue from the registers on the last slab of K;
 * partial ones are left raw in cbuf and stored by mm_store. The first tile of a slab fetches
 * the slab the task reads next into L2 (the next block's, or after a group's last block the
 * group's next slab of K): constant weights come from memory once per inference, and the
 * tiles otherwise wait on them (ViT-B/16 0.88x the time, GPT-2 0.91x; 768 x 3072 weights
 * with the caches evicted 0.86x-0.90x). Fetching the next block's slab even after a group's
 * last block left the next slab of K unfetched: products 3072 deep took 1.03x-1.05x the time
 * (49 x 3072 x 768, 128 x 3072 x 768, at one and two threads). */
static inline __attribute__((always_inline)) void mm_task_of(
    const int mr, const mm_geom *mg, const float *a, const float *bp, float *y,
    const mm_epilogue *ep, float *ap, float *cbuf, i64 bt, i64 q0, i64 q1, i64 blk0,
    i64 blk1) {
  const float *bpt = bp + (mg->sb ? bt : 0) * mg->blocks * mg->k * NR;
  const i64 base = bt * mg->m * mg->n;
  mm_pack_rows(mr, ap, a + bt * mg->sa, mg, q0, q1);
  for (i64 g0 = blk0; g0 < blk1; g0 += NB) {
    const i64 g1 = min64(blk1, g0 + NB);
    for (i64 k0 = 0; k0 < mg->k; k0 += MM_KC) {
      const i64 kc = min64(MM_KC, mg->k - k0);
      const int last = k0 + kc == mg->k;
      for (i64 blk = g0; blk < g1; blk++) {
        const float *panel = bpt + (blk * mg->k + k0) * NR;
        const i64 n0 = blk * NR;
        /* the slab this task reads next: the next block's, the group's next one, the next
         * group's first (or past the task, the next block's first) */
        const i64 next_blk = blk + 1 < g1 || last ? blk + 1 : g0;
        const i64 next_k0 = blk + 1 < g1 ? k0 : last ? 0 : k0 + kc;
        const i64 ahead =
            next_blk < mg->blocks ? ((next_blk - blk) * mg->k + next_k0 - k0) * NR : 0;
        for (i64 q = q0; q < q1; q++) {
          const i64 r0 = q * mr;
          tile_out out = {.y = y + base + r0 * mg->n + n0,
                          .res = ep->res ? ep->res + bt * mg->sr + r0 * mg->n + n0 : NULL,
                          .ldy = mg->n, .lo = ep->lo, .hi = ep->hi,
                          .cbias = ep->bias ? ep->bias + n0 : NULL,
                          .cscale = ep->scale ? ep->scale + n0 : NULL, .act = ep->act,
                          .gate = ep->gate ? ep->gate + base + r0 * mg->n + n0 : NULL};
          float *raw = cbuf + ((blk - g0) * mg->mcp + q - q0) * mr * NR;
          const float *rows = ap + ((q - q0) * mg->k + k0) * mr;
          if (mg->n - n0 <= VW) /* micro_tile_narrow's */
            micro_core(rows, mr, mr, panel, NR, kc, raw, k0 > 0, NULL, 0, 1);
          else
            micro_core(rows, mr, min64(mr, mg->m - r0), panel, NR, kc, raw, k0 > 0,
                       last && mg->n - n0 >= NR ? &out : NULL,
                       q == q0 ? ahead : 0, NV);
        }
      }
    }
    if (g1 * NR <= mg->n) continue;  /* every tile was full */
    const i64 blk = g1 - 1, n0 = blk * NR;
    for (i64 q = q0; q < q1; q++) {
      const i64 r0 = q * mr, at = base + r0 * mg->n + n0;
      mm_store(y + at, cbuf + ((blk - g0) * mg->mcp + q - q0) * mr * NR, min64(mr, mg->m - r0),
               mg->n - n0, mg->n, ep->res ? ep->res + bt * mg->sr + r0 * mg->n + n0 : NULL,
               ep->gate ? ep->gate + at : NULL, n0, ep);
    }
  }
}

/* mm_task_of for the height of mg's row panels (mm_height), a constant in each. */
static void mm_task(const mm_geom *mg, const float *a, const float *bp, float *y,
                    const mm_epilogue *ep, float *ap, float *cbuf, i64 bt, i64 q0, i64 q1,
                    i64 blk0, i64 blk1) {
#if MR_MAX == 14
  if (mg->mr == 14) {
    mm_task_of(14, mg, a, bp, y, ep, ap, cbuf, bt, q0, q1, blk0, blk1);
    return;
  }
  if (mg->mr == 7) {
    mm_task_of(7, mg, a, bp, y, ep, ap, cbuf, bt, q0, q1, blk0, blk1);
    return;
  }
#endif
  mm_task_of(MR, mg, a, bp, y, ep, ap, cbuf, bt, q0, q1, blk0, blk1);
}

typedef struct {
  const mm_geom *mg;
  const float *a, *b;
  float *bp, *y;
  const mm_epilogue *ep;
  i64 items, tasks;
  _Atomic int failed;
} mm_job;

/* Task t of packing b: a contiguous share of its panels. */
static void mm_pack_task(void *arg, i64 t) {
  const mm_job *job = arg;
  i64 p0, p1;
  part_range(job->items, job->tasks, t, &p0, &p1);
  for (i64 p = p0; p < p1; p++)
    mm_pack_panel(job->bp, job->b, job->mg, p / job->mg->blocks, p % job->mg->blocks);
}

/* Task t of the products: a contiguous share of the items (batch item, chunk of row panels,
 * span of column blocks), with the thread's own buffer for the packed rows and raw tiles. */
static void mm_products(void *arg, i64 t) {
  mm_job *job = arg;
  const mm_geom *mg = job->mg;
  float *ap = thread_scratch(mg->mcp * mg->mr * (mg->k + NB * NR));
  if (!ap) {
    atomic_store(&job->failed, 1);
    return;
  }
  float *cbuf = ap + mg->mcp * mg->mr * mg->k;
  const i64 per_item = mg->chunks * mg->spans;
  i64 u0, u1;
  part_range(job->items, job->tasks, t, &u0, &u1);
  for (i64 u = u0; u < u1; u++) {
    i64 q0, q1, blk0, blk1;
    const i64 item = u % per_item;
    part_range(mg->blocks, mg->spans, item % mg->spans, &blk0, &blk1);
    part_range(mg->panels, mg->chunks, item / mg->spans, &q0, &q1);
    mm_task(mg, job->a, job->bp, job->y, job->ep, ap, cbuf, u / per_item, q0, q1, blk0, blk1);
  }
}

/* The matrix product of geometry g through its epilogue (see above). */
static int matmul(const float *a, const float *b, float *bp, float *y, const float *bias,
                  const float *scale, const float *res, const float *gate, const i64 *g,
                  const float *bounds) {
  mm_geom mg = mm_geometry(g);
  const int nt = mg.batch * mg.m * mg.n * mg.k < PARALLEL_MIN_WORK ? 1 : num_threads(g[11]);
  const mm_epilogue ep = {bias, scale, res, gate, bounds[0], bounds[1], activation_of(bounds)};
  if (mg.k == 0) {
    float zero[NR * MR] = {0};
    for (i64 bt = 0; bt < mg.batch; bt++)
      for (i64 r = 0; r < mg.m; r++)
        for (i64 n0 = 0; n0 < mg.n; n0 += NR) {
          const i64 at = (bt * mg.m + r) * mg.n + n0;
          mm_store(y + at, zero, 1, min64(NR, mg.n - n0), mg.n,
                   res ? res + bt * mg.sr + r * mg.n + n0 : NULL, gate ? gate + at : NULL, n0,
                   &ep);
        }
    return 0;
  }
  float *own = NULL;
  if (!mg.packed && !bp) {
    bp = own = aligned_floats(ph_matmul_packed(g), 0);
    if (!own) return -1;
  }
  /* Each item packs its rows once, so a span takes all column blocks unless the threads'
   * shares of the items would be unequal: then spans of fewer blocks. */
  mg.spans = 1;
  while ((mg.batch * mg.chunks * mg.spans) % nt != 0 && mg.batch * mg.chunks * mg.spans < 8 * nt
         && mg.spans < mg.blocks)
    mg.spans++;
  const i64 items = mg.batch * mg.chunks * mg.spans;
  mm_job job = {.mg = &mg, .a = a, .b = b, .bp = bp, .y = y, .ep = &ep};
  atomic_init(&job.failed, 0);
  if (!mg.packed) {
    job.items = mg.bbatch * mg.blocks;
    job.tasks = split_tasks(job.items, ph_matmul_packed(g) * COPY_WORK, nt);
    ph_parallel(job.tasks, nt, mm_pack_task, &job);
  }
  job.items = items;
  job.tasks = split_tasks(items, mg.batch * mg.m * mg.n * mg.k, nt);
  ph_parallel(job.tasks, nt, mm_products, &job);
  free(own);
  return atomic_load(&job.failed) ? -1 : 0;
}

/* The dense layer (dense), subnormals flushed (flush_subnormals). */
void ph_dense(const float *x, const float *w, const float *wp, float *y, const float *bias,
              const i64 *g, const float *bounds) {
  const fp_mode mode = flush_subnormals();
  dense(x, w, wp, y, bias, g, bounds);
  set_fp_mode(mode);
}

/* The matrix product (matmul), subnormals flushed (flush_subnormals). */
int ph_matmul(const float *a, const float *b, float *bp, float *y, const float *bias,
              const float *scale, const float *res, const float *gate, const i64 *g,
              const float *bounds) {
  return FLUSHED_STATUS(matmul(a, b, bp, y, bias, scale, res, gate, g, bounds));
}
