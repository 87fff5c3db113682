/* Convolutions, NCHW: packed columns and transposed paths, and the entry points (the wide
 * grid in implicit.c, Winograd in winograd.c). */
#include "conv.h"

/* ---------------------------------------------------------------------------------------
 * Convolution, NCHW data, OIHW weights: per batch item and group, the matrix product
 * out[O/G, OH*OW] = W[O/G, K] x cols[K, OH*OW] with K = C/G*KH*KW. Weight rows are read in
 * place. Columns are gathered (im2col) into packed panels of NR columns: when one chunk of
 * MCP micro-panels covers every output channel, each task packs its own KC x NR panel just
 * before using it; otherwise the threads first pack all panels into the `cols` scratch
 * (conv2d_nchw_scratch floats) so that the chunks of output channels share them.
 * The work items (chunk of output channels, span of column blocks) of every image and group
 * go to the pool (pool.c) in contiguous runs (split_tasks), each of many multiply-adds, so
 * that claiming one (its cache line moving between the cores) costs next to nothing; on two
 * threads the caller's and the worker's shares are then the two halves of the items, equal
 * work by construction (spans_for), as a static split would give them.
 */

/* Column blocks per span of a task of direct_rows (uses_direct_rows), NB for the others. */
#define DIRECT_NB 16

/* Whether a convolution's whole column blocks go to direct_rows: 1x1 convolutions whose
 * reduction fits one slab, over rows that can be read in place. Over longer ones, the slabs'
 * panels staying in L1 (conv_task) do better: ResNet-50's 512 -> 128 at 28x28 and
 * 1024 -> 256 at 14x14 took 1.02x the time. Rows that start off a vector boundary go
 * through conv_task's copied tiles (its 256 -> 1024 at 14x14: 0.935x the time). */
static int uses_direct_rows(const conv_geom *cv) {
  return direct_conv(cv) && cv->k <= KC && aligned_rows(cv);
}

/* The spans for nt threads: a multiple of nt where there are blocks enough, so that the
 * items split into equal shares of equal work. */
static i64 spans_for(const conv_geom *cv, int nt) {
  const i64 per_span = uses_direct_rows(cv) ? DIRECT_NB : NB;
  const i64 spans = (cv->blocks + per_span - 1) / per_span;
  const i64 even = (spans + nt - 1) / nt * nt;
  return even <= cv->blocks ? even : spans;
}

/* bp[kk * ld + j] = cols[k0 + kk][p0 + j] for kk < kc, j < ld (zero past `width` and in
 * the padding). */
static void pack_cols(float *restrict bp, i64 ld, const float *restrict xg, const conv_geom *cv,
                      i64 k0, i64 kc, i64 p0, i64 width) {
  const i64 taps = cv->kh * cv->kw, plane = cv->h * cv->w, sw = cv->sw;
  const int direct = direct_conv(cv);
  i64 c = k0 / taps, ky = (k0 % taps) / cv->kw, kx = k0 % cv->kw;
  for (i64 kk = 0; kk < kc; kk++) {
    float *dst = bp + kk * ld;
    const float *src = xg + c * plane;
    if (direct) {
      memcpy(dst, src + p0, (size_t)width * sizeof(float));
    } else {
      const i64 xlo = cv->ox_range[2 * kx], xhi = cv->ox_range[2 * kx + 1];
      const i64 ylo = cv->oy_range[2 * ky], yhi = cv->oy_range[2 * ky + 1];
      const i64 shift = kx * cv->dw - cv->pl;
      i64 oy = p0 / cv->ow, ox = p0 % cv->ow, j = 0;
      while (j < width) {
        const i64 run = min64(width - j, cv->ow - ox), end = ox + run;
        float *d = dst + j - ox;
        if (oy < ylo || oy >= yhi) {
          for (i64 t = ox; t < end; t++) d[t] = 0.0f;
        } else {
          const i64 a = max64(ox, min64(xlo, end)), b = max64(a, min64(end, xhi));
          const float *row = src + (oy * cv->sh + ky * cv->dh - cv->pt) * cv->w;
          for (i64 t = ox; t < a; t++) d[t] = 0.0f;
          strided_copy(d + a, row + a * sw + shift, b - a, sw);
          for (i64 t = b; t < end; t++) d[t] = 0.0f;
        }
        j += run;
        oy++;
        ox = 0;
      }
    }
    for (i64 j = width; j < ld; j++) dst[j] = 0.0f;
    if (++kx == cv->kw) {
      kx = 0;
      if (++ky == cv->kh) { ky = 0; c++; }
    }
  }
}

void pack_panels(float *restrict ap, const float *restrict w, i64 m, i64 k) {
  for (i64 q = 0; q < (m + MR - 1) / MR; q++) {
    float *panel = ap + q * k * MR;
    for (i64 i = 0; i < MR; i++) {
      const i64 r = q * MR + i;
      for (i64 j = 0; j < k; j++) panel[j * MR + i] = r < m ? w[r * k + j] : 0.0f;
    }
  }
}

/* proto's epilogue for the tile of micro-panel q at column p0 of image b, group grp. */
static tile_out tile_at(const conv_geom *cv, const tile_out *proto, i64 b, i64 grp, i64 q,
                        i64 p0) {
  tile_out out = *proto;
  out.m0 = grp * cv->og + q * MR;
  out.y += (b * cv->o + out.m0) * cv->p + p0;
  if (out.res) out.res += (b * cv->o + out.m0) * cv->p + p0;
  return out;
}

/* The whole column blocks [blk0, blk1) of a 1x1 convolution's task (uses_direct_rows), read
 * straight from the data: each micro-panel of output channels in turn, q0 to q1, runs along
 * the blocks over the whole reduction, its weights staying in L1 and the span's columns in
 * L2. Each output row (and a residual's) is then written in runs of DIRECT_NB blocks, which
 * the hardware prefetcher follows, where taking every panel of one block before the next
 * cut the rows into NR-column pieces (ResNet-50 3% faster at one thread; its 64 -> 256 layer
 * at 56x56 with its residual, data in L3, 0.92x the time). The first panel's sums fetch the
 * next block's columns: a block's rows are K streams a plane apart, more than the hardware
 * prefetcher follows (its 1x1 layers at 56x56, data out of cache, 1.27 -> 0.89 ms). */
static void direct_rows(const conv_geom *cv, const float *xg, const float *wg, i64 q0, i64 q1,
                        i64 blk0, i64 blk1, const tile_out *proto, i64 b, i64 grp) {
  for (i64 q = q0; q < q1; q++)
    for (i64 blk = blk0; blk < blk1; blk++) {
      const i64 p0 = blk * NR;
      const i64 ahead = q == q0 && p0 + 2 * NR <= cv->p ? NR : 0;
      const tile_out out = tile_at(cv, proto, b, grp, q, p0);
      micro_tile(wg + q * cv->k * MR, min64(MR, cv->og - q * MR), xg + p0, cv->p, cv->k, NULL,
                 0, &out, ahead);
    }
}

/* The first column block of a task [blk0, blk1) whose sums go through conv_task's slabs:
 * past the whole blocks that go to direct_rows, the partial last one. */
static i64 slab_first(const conv_geom *cv, i64 blk0, i64 blk1) {
  return uses_direct_rows(cv) ? max64(blk0, min64(blk1, cv->p / NR)) : blk0;
}

/* One task of image b, group grp (whose weights wg are packed into panels, pack_panels):
 * output channels of micro-panels [q0, q1), column blocks [blk0, blk1). Full blocks go
 * through the epilogue into `proto`'s output straight from the registers; a partial last
 * block is left raw in cb (tile (blk - first, q - q0), first = slab_first). Columns come
 * from `cols` (packed, blk-major K x NR each), straight from the data (a 1x1 convolution's
 * whole blocks over aligned rows, the first micro-panel's sums fetching the next one's), or
 * are copied (copy_block) or packed into bp, slab by slab. Whole blocks that fit go to
 * direct_rows instead. */
static void conv_task(const conv_geom *cv, const float *xg, const float *wg, const float *cols,
                      float *bp, float *cb, i64 q0, i64 q1, i64 blk0, i64 blk1,
                      const tile_out *proto, i64 b, i64 grp) {
  const int direct = direct_conv(cv);
  const i64 first = slab_first(cv, blk0, blk1);
  if (first > blk0) direct_rows(cv, xg, wg, q0, q1, blk0, first, proto, b, grp);
  for (i64 k0 = 0; k0 < cv->k && first < blk1; k0 += KC) {
    const i64 kc = min64(KC, cv->k - k0);
    for (i64 blk = first; blk < blk1; blk++) {
      const i64 p0 = blk * NR, width = min64(NR, cv->p - p0);
      const float *panel = bp;
      i64 ldb = NR;
      if (cols) {
        panel = cols + (blk * cv->k + k0) * NR;
      } else if (direct && width == NR && aligned_rows(cv)) {
        panel = xg + k0 * cv->p + p0;
        ldb = cv->p;
      } else if (direct && width == NR) {
        copy_block(bp, xg + k0 * cv->p + p0, NULL, cv->p, kc);
      } else {
        pack_cols(bp, NR, xg, cv, k0, kc, p0, width);
      }
      const i64 ahead = ldb == cv->p && p0 + 2 * NR <= cv->p ? NR : 0;
      for (i64 q = q0; q < q1; q++) {
        const tile_out out = tile_at(cv, proto, b, grp, q, p0);
        float *raw = cb + ((blk - first) * MCP + q - q0) * MR * NR;
        if (width <= VW)
          micro_tile_narrow(wg + (q * cv->k + k0) * MR, panel, ldb, kc, raw, k0 > 0);
        else
          micro_tile(wg + (q * cv->k + k0) * MR, min64(MR, cv->og - q * MR), panel, ldb, kc,
                     raw, k0 > 0, k0 + kc == cv->k && width == NR ? &out : NULL,
                     q == q0 ? ahead : 0);
      }
    }
  }
}

/* ---------------------------------------------------------------------------------------
 * Ungrouped convolutions with long reductions over planes that whole NR-column blocks would
 * overshoot by an eighth or more (a 7x7 plane is 49 columns of 64 computed, a 14x14 one 196 of
 * 224): the product is taken transposed, out^T[P, O] = X^T[P, K] x W^T[K, O], with vectors along
 * the output channels (the weights, prepared as panels of TO channels: wt[(q * K + k) * TO + j] =
 * W[q * TO + j][k]) and each tile's rows TP consecutive positions whose inputs are broadcast from
 * the column matrix: the data itself for a 1x1 convolution, gathered once per image otherwise.
 * Tiles are as few as TP_MAX rows allow and as even as the plane allows (transposed_rows); each
 * tile is transposed back through the epilogue, which is what the long reduction pays for. At 14x14
 * (TRANSPOSED_MIN_WASTE), against packed columns, whole models in one process in rounds (the median
 * ratio to onnxruntime's time): MobileNetV2 1.034 -> 1.0 at one thread and 1.077 -> 1.06, 1.027 ->
 * 1.014 at two, its 384 -> 64 projections 0.107 -> 0.092 ms at one thread and 0.063 -> 0.052 at two
 * (the 1x1 layers after them up to 0.006 ms slower at two threads); ResNet-50 0.947 -> 0.929 and
 * 0.958 -> 0.937; EfficientNet-B0 1.028 -> 1.021 and 1.016 -> 1.02. Gathering columns pays from 256
 * output channels on, for the layers the wide grid does not take (path_of asks it first), dilated
 * ones (strided 1x1 layers are direct once subsampled: see subsampled; gathered, ResNet-50's 1024
 * -> 2048 at stride 2, 14x14 to 7x7, took 1.78 ms against packed columns' 2.35, C harness, one
 * thread). The wide grid beats it on strided 3x3 layers, whose gathered columns and weight panels
 * together outgrow L2: ResNet-50's 512-channel one at stride 2 took 2.0 ms there against 2.43-2.49
 * gathered, 1024 input channels 4.1 against 9.1. (3x3 stride-1 layers of more than 128 channels on
 * such planes take Winograd, whose products use this path's tile kernel: see conv.h.)
 */
#define TRANSPOSED_MIN_K 128 /* reductions at least this long */
#define TRANSPOSED_MIN_WASTE 8 /* whole blocks overshooting the plane by 1/8 or more */

#define TRANSPOSED_MIN_GATHERED 256 /* output channels, at least, of one gathering columns */

static int use_transposed(const conv_geom *cv) {
  const i64 computed = cv->blocks * NR;
  return cv->groups == 1 && cv->k >= TRANSPOSED_MIN_K &&
         (computed - cv->p) * TRANSPOSED_MIN_WASTE >= computed &&
         (direct_conv(cv) || cv->o >= TRANSPOSED_MIN_GATHERED);
}

/* acc[i][v] = sum over k < kc of x[k * ldx + i] * wt[k * TO + v * VW], for i < tp, fetching
 * the `lines` cache lines from `next` (or none) into L2 spread over the reduction. */
static inline __attribute__((always_inline)) void transposed_sums(
    vf acc[TP_MAX][TNV], const float *restrict wt, const float *restrict x, i64 ldx, i64 kc,
    const int tp, const float *next, i64 lines) {
  for (int i = 0; i < tp; i++)
    for (int v = 0; v < TNV; v++) acc[i][v] = (vf){0};
  for (i64 k = 0; k < kc; k++) {
    if (next) __builtin_prefetch(next + k * lines / kc * LINE_FLOATS, 0, 2);
    vf wk[TNV];
    for (int v = 0; v < TNV; v++) wk[v] = *(const vf *)(wt + k * TO + v * VW);
    for (int i = 0; i < tp; i++) {
      const float s = x[k * ldx + i];
      for (int v = 0; v < TNV; v++) acc[i][v] += s * wk[v];
    }
  }
}

/* The tile's sums into tile[i * TO + j] (tp rows, 1 <= tp <= TP_MAX), with tp a constant.
 * TP_MAX is the default case, so that every path writes the tile. */
void transposed_tile(float *tile, const float *wt, const float *x, i64 ldx, i64 kc, i64 tp,
                     const float *next, i64 next_floats) {
  const i64 lines = (next_floats * (i64)sizeof(float) + 63) / 64;
  vf acc[TP_MAX][TNV];
#define TP_SUMS(T)                                   \
  transposed_sums(acc, wt, x, ldx, kc, T, next, lines); \
  for (int i = 0; i < T; i++)                        \
    for (int v = 0; v < TNV; v++) *(vf *)(tile + i * TO + v * VW) = acc[i][v];
#define TP_CASE(T) case T: TP_SUMS(T) break;
  switch (tp) {
    TP_CASE(1) TP_CASE(2) TP_CASE(3) TP_CASE(4) TP_CASE(5) TP_CASE(6) TP_CASE(7)
    TP_CASE(8) TP_CASE(9) TP_CASE(10) TP_CASE(11) TP_CASE(12) TP_CASE(13)
    default: TP_SUMS(TP_MAX)
  }
#undef TP_CASE
#undef TP_SUMS
}

/* Packs the O x K matrix w into panels of TO rows, transposed (see above); rows past O are
 * zero. */
void pack_transposed(float *restrict wt, const float *restrict w, i64 o, i64 k) {
  for (i64 q = 0; q < (o + TO - 1) / TO; q++)
    for (i64 kk = 0; kk < k; kk++)
      for (i64 j = 0; j < TO; j++)
        wt[(q * k + kk) * TO + j] = q * TO + j < o ? w[(q * TO + j) * k + kk] : 0.0f;
}

typedef struct {
  const conv_geom *cv;
  const float *x, *wt, *bias, *res;
  float *y, *cols;
  i64 tp, groups, tiles; /* positions per tile; tiles per panel of TO channels, per image */
  i64 image, items;      /* the job's first image, and its items (tiles, or rows of cols) */
  i64 tasks;
  float lo, hi;
  int act;
} transposed_job;

/* Task t of gathering image `image`'s columns: a contiguous share of the rows. */
static void transposed_gather(void *arg, i64 t) {
  const transposed_job *job = arg;
  const conv_geom *cv = job->cv;
  i64 k0, k1;
  part_range(cv->k, job->tasks, t, &k0, &k1);
  if (k1 > k0)
    pack_cols(job->cols + k0 * cv->p, cv->p, job->x + job->image * cv->c * cv->h * cv->w, cv,
              k0, k1 - k0, 0, cv->p);
}

/* Tile `tile` of image b, its columns at xb, through the epilogue. */
static void transposed_output(const transposed_job *job, i64 b, i64 tile, const float *xb) {
  const conv_geom *cv = job->cv;
  const float *bias = job->bias, *res = job->res;
  float *y = job->y;
  const int act = job->act;
  const vf vlo = (vf){0} + job->lo, vhi = (vf){0} + job->hi;
  float out_tile[TP_MAX * TO] __attribute__((aligned(64)));
  float staged[TO * VW] __attribute__((aligned(64)));
  const i64 q = tile / job->groups, p0 = tile % job->groups * job->tp;
  const i64 rows = min64(job->tp, cv->p - p0), channels = min64(TO, cv->o - q * TO);
  const i64 slice = cv->k * TO / job->groups; /* of the next panel, for this tile to fetch */
  const float *next = (q + 1) * TO < cv->o ? job->wt + ((q + 1) * TO * cv->k) +
                                                 tile % job->groups * slice : NULL;
  transposed_tile(out_tile, job->wt + q * cv->k * TO, xb + p0, cv->p, cv->k, rows, next, slice);
  for (i64 i0 = 0; i0 < rows; i0 += VW) {
    const i64 n = min64(VW, rows - i0);
    for (int v = 0; v < TNV; v++) {
      vf r[VW];
      for (i64 i = 0; i < VW; i++)
        r[i] = i < n ? *(const vf *)(out_tile + (i0 + i) * TO + v * VW) : (vf){0};
      transpose_block(r);
      for (i64 j = 0; j < VW; j++) {
        const i64 oc = q * TO + v * VW + j, at = (b * cv->o + oc) * cv->p + p0 + i0;
        if (oc >= cv->o) break;
        vf out = r[j] + (bias ? bias[oc] : 0.0f);
        if (res) out += load_first(res + at, n);
        out = vclamp(out, vlo, vhi);
        if (act) /* the channels' n outputs side by side (each vector's spill overwritten) */
          *(vf *)(staged + (v * VW + j) * n) = out;
        else
          store_first(y + at, out, n);
      }
    }
    if (act) { /* activated together: each channel has fewer outputs than a vector */
      activate(staged, 1, 0, channels * n, act);
      for (i64 c = 0; c < channels; c++)
        store_first(y + (b * cv->o + q * TO + c) * cv->p + p0 + i0,
                    *(const vf *)(staged + c * n), n);
    }
  }
}

/* Task t of the tiles: a contiguous share of the job's items, tiles of its images in order;
 * a 1x1 convolution's read the data in place, the others the gathered columns. */
static void transposed_tiles(void *arg, i64 t) {
  const transposed_job *job = arg;
  const conv_geom *cv = job->cv;
  i64 u0, u1;
  part_range(job->items, job->tasks, t, &u0, &u1);
  for (i64 u = u0; u < u1; u++) {
    const i64 b = job->image + u / job->tiles;
    transposed_output(job, b, u % job->tiles,
                      direct_conv(cv) ? job->x + b * cv->c * cv->h * cv->w : job->cols);
  }
}

/* Convolution by transposed tiles (see above). A 1x1 convolution reads its data in place,
 * all images' tiles in one job; any other first gathers each image's columns, [K][P], into
 * `cols` (K x P floats), then takes its tiles. */
static void conv2d_transposed(const conv_geom *cv, const float *x, const float *wt, float *y,
                              const float *bias, const float *res, float *cols, int nt,
                              float lo, float hi, int act) {
  const i64 tp = transposed_rows(cv->p), groups = (cv->p + tp - 1) / tp;
  const i64 tiles = (cv->o + TO - 1) / TO * groups, tile_work = tp * TO * cv->k;
  transposed_job job = {.cv = cv, .x = x, .wt = wt, .bias = bias, .res = res, .y = y,
                        .cols = cols, .tp = tp, .groups = groups, .tiles = tiles,
                        .lo = lo, .hi = hi, .act = act};
  if (direct_conv(cv)) {
    job.items = cv->n * tiles;
    job.tasks = split_tasks(job.items, job.items * tile_work, nt);
    ph_parallel(job.tasks, nt, transposed_tiles, &job);
    return;
  }
  for (i64 b = 0; b < cv->n; b++) {
    job.image = b;
    job.items = cv->k;
    job.tasks = split_tasks(cv->k, cv->k * cv->p * COPY_WORK, nt);
    ph_parallel(job.tasks, nt, transposed_gather, &job);
    job.items = tiles;
    job.tasks = split_tasks(tiles, tiles * tile_work, nt);
    ph_parallel(job.tasks, nt, transposed_tiles, &job);
  }
}

/* Whether the threads pack all columns first (several chunks of output channels share them);
 * never for 1x1 convolutions, whose full column blocks are read straight from the data. */
static int shared_cols(const conv_geom *cv) { return cv->chunks > 1 && !direct_conv(cv); }

typedef struct {
  const conv_geom *cv;
  const float *x, *prep, *bias, *res;
  float *y, *cols;
  const tile_out *proto;
  i64 image, items, tasks; /* the job's first image (b * groups + group), items, tasks */
  i64 kslabs;              /* slabs of KC rows of the columns */
  float lo, hi;
  int act;
  _Atomic int failed;
} packed_job;

/* Task t of packing image `image`'s columns into `cols`: a contiguous share of the (column
 * block, slab of rows) panels. */
static void packed_columns(void *arg, i64 t) {
  const packed_job *job = arg;
  const conv_geom *cv = job->cv;
  const i64 b = job->image / cv->groups, grp = job->image % cv->groups;
  const float *xg = job->x + (b * cv->c + grp * cv->cg) * cv->h * cv->w;
  i64 u0, u1;
  part_range(job->items, job->tasks, t, &u0, &u1);
  for (i64 u = u0; u < u1; u++) {
    const i64 blk = u / job->kslabs, k0 = (u % job->kslabs) * KC;
    pack_cols(job->cols + (blk * cv->k + k0) * NR, NR, xg, cv, k0, min64(KC, cv->k - k0),
              blk * NR, min64(NR, cv->p - blk * NR));
  }
}

/* Task t of the products: a contiguous share of the job's items, each a chunk of output
 * channels and a span of column blocks of one image and group, in the thread's own buffer
 * of raw tiles; the partial last block through the epilogue from there. */
static void packed_products(void *arg, i64 t) {
  packed_job *job = arg;
  const conv_geom *cv = job->cv;
  const float *bias = job->bias, *res = job->res;
  float *y = job->y;
  const int act = job->act;
  const i64 per_image = cv->chunks * cv->spans;
  float bp[KC * NR] __attribute__((aligned(64)));
  float *cb = thread_scratch(NB * MCP * MR * NR);
  if (!cb) {
    atomic_store(&job->failed, 1);
    return;
  }
  i64 u0, u1;
  part_range(job->items, job->tasks, t, &u0, &u1);
  for (i64 u = u0; u < u1; u++) {
    const i64 image = job->image + u / per_image, item = u % per_image;
    const i64 b = image / cv->groups, grp = image % cv->groups;
    const float *xg = job->x + (b * cv->c + grp * cv->cg) * cv->h * cv->w;
    const float *wg = job->prep + grp * cv->panels * MR * cv->k;
    i64 blk0, blk1, q0, q1;
    part_range(cv->blocks, cv->spans, item % cv->spans, &blk0, &blk1);
    part_range(cv->panels, cv->chunks, item / cv->spans, &q0, &q1);
    conv_task(cv, xg, wg, shared_cols(cv) ? job->cols : NULL, bp, cb, q0, q1, blk0, blk1,
              job->proto, b, grp);
    const i64 first = slab_first(cv, blk0, blk1), last = blk1 - 1, p0 = last * NR;
    if (cv->p - p0 < NR) {
      for (i64 q = q0; q < q1; q++) {
        const i64 rows = min64(MR, cv->og - q * MR), m0 = grp * cv->og + q * MR;
        for (i64 i = 0; i < rows; i++) {
          const i64 m = m0 + i, at = (b * cv->o + m) * cv->p + p0;
          const float *tile = cb + ((last - first) * MCP + q - q0) * MR * NR;
          epilogue(y + at, tile + i * NR, cv->p - p0, bias ? bias + m : NULL, 0,
                   res ? res + at : NULL, job->lo, job->hi);
        }
        if (act) activate(y + (b * cv->o + m0) * cv->p + p0, rows, cv->p, cv->p - p0, act);
      }
    }
  }
}

/* The path of a convolution, one choice for every entry point (its scratch, its prepared
 * weights, the product): Winograd where it fits, else the wide grid, else the transposed
 * form, else packed columns. (Where both Winograd and the transposed form fit, a 3x3 layer
 * at 10x10 with 256 outputs or more, the weights were once prepared for the one and used
 * by the other.) */
typedef enum {
  CONV_BLOCKED, CONV_WINOGRAD, CONV_TRANSPOSED, CONV_IMPLICIT, CONV_PACKED
} conv_path;

static conv_path path_of(const conv_geom *cv) {
  if (use_blocked_winograd(cv)) return CONV_BLOCKED;
  if (use_winograd(cv)) return CONV_WINOGRAD;
  if (use_implicit(cv)) return CONV_IMPLICIT;
  if (use_transposed(cv)) return CONV_TRANSPOSED;
  return CONV_PACKED;
}

/* ---------------------------------------------------------------------------------------
 * A convolution whose windows do not overlap (each tap row and column at most a stride
 * long and undilated: a 1x1 convolution that is not direct, strided as ResNet's downsampling
 * layers or padded; the patch embeddings of ConvNeXt, 4x4 and 2x2 at their strides, and of
 * ViT, 16x16 at stride 16) reads each input element at most once: it is taken as the direct
 * 1x1 convolution of its input rearranged into the scratch, one plane per input channel
 * and tap (x'[c * KH * KW + ky * KW + kx][oy][ox] = x[c][oy * sh + ky - pt][ox * sw + kx -
 * pl], zero outside the data: the OIHW weights are then that 1x1 convolution's as they
 * are), one pass over its outputs' worth of data, so that it takes every path of direct
 * 1x1 layers (columns read in place, the transposed form without a gather).
 * Gathering each column block's strided rows run by run instead cost more than the products
 * of a short reduction: ResNet-18's 64 -> 128 at 56x56 to 28x28 took 2.8x-3.7x
 * onnxruntime's time in the model, its 128 -> 256 to 14x14 2.3x-2.5x. ConvNeXt-T's patch
 * layers, against the wide grid or packed columns (C harness, same buffers, alternating):
 * its 4x4 stem 0.82x the time, 2x2 to 14x14 0.95x-0.96x, to 7x7 0.79x; ViT's 16x16 1.0x. The
 * wide grid keeps the layers it fits with more than SUBSAMPLED_MAX_WIDE outputs: ConvNeXt's
 * 2x2 to 28x28 took 1.02x-1.03x the time rearranged.
 */
#define SUBSAMPLED_MAX_WIDE 512 /* outputs, at most, of one the wide grid fits */

static int subsampled(const conv_geom *cv) {
  return !direct_conv(cv) && (cv->kh == 1 || (cv->dh == 1 && cv->kh <= cv->sh)) &&
         (cv->kw == 1 || (cv->dw == 1 && cv->kw <= cv->sw)) &&
         (cv->p <= SUBSAMPLED_MAX_WIDE || !use_implicit(cv));
}

/* The geometry the products take for geometry g: for a subsampled convolution, that of
 * the direct 1x1 convolution of its rearranged input; else g's. */
static conv_geom product_geometry(const i64 *g) {
  const conv_geom cv = conv_geometry(g);
  if (!subsampled(&cv)) return cv;
  const i64 direct[16] = {cv.n, cv.c * cv.kh * cv.kw, cv.oh, cv.ow, cv.o, cv.oh, cv.ow, 1,
                          1,    1,    1,    1,    1,    0,    0,    cv.groups};
  return conv_geometry(direct);
}

/* Task t of rearranging the input (see subsampled): a contiguous share of the input planes
 * (images x channels), each to its taps' planes. */
static void subsample_planes(void *arg, i64 t) {
  const input_copy_job *job = arg;
  const conv_geom *cv = job->cv;
  const i64 taps = cv->kh * cv->kw;
  i64 c0, c1;
  part_range(cv->n * cv->c, job->tasks, t, &c0, &c1);
  for (i64 c = c0; c < c1; c++)
    for (i64 tap = 0; tap < taps; tap++) {
      const i64 ky = tap / cv->kw * cv->dh - cv->pt, kx = tap % cv->kw * cv->dw - cv->pl;
      i64 ylo, yhi, xlo, xhi;
      valid_range(cv->oh, cv->sh, ky, cv->h, &ylo, &yhi);
      valid_range(cv->ow, cv->sw, kx, cv->w, &xlo, &xhi);
      const float *plane = job->x + c * cv->h * cv->w;
      float *dst = job->dst + (c * taps + tap) * cv->p;
      for (i64 oy = 0; oy < cv->oh; oy++) {
        float *row = dst + oy * cv->ow;
        if (oy < ylo || oy >= yhi) {
          memset(row, 0, (size_t)cv->ow * sizeof(float));
          continue;
        }
        for (i64 ox = 0; ox < xlo; ox++) row[ox] = 0.0f;
        strided_copy(row + xlo, plane + (oy * cv->sh + ky) * cv->w + xlo * cv->sw + kx,
                     xhi - xlo, cv->sw);
        for (i64 ox = xhi; ox < cv->ow; ox++) row[ox] = 0.0f;
      }
    }
}

/* Floats of the rearranged input a convolution of geometry cv needs first (0: none). */
static i64 subsampled_floats(const conv_geom *cv) {
  return subsampled(cv) ? cv->n * cv->c * cv->kh * cv->kw * cv->p : 0;
}

/* Floats of the `cols` scratch ph_conv2d_nchw needs for geometry g (0: none): the
 * subsampled input, if any, then what the products' path asks. */
i64 ph_conv2d_nchw_scratch(const i64 *g) {
  const conv_geom given = conv_geometry(g), cv = product_geometry(g);
  const i64 sub = subsampled_floats(&given);
  switch (path_of(&cv)) {
  case CONV_BLOCKED:
    return sub + blocked_winograd_floats(&cv);
  case CONV_WINOGRAD:
    return sub + wino_scratch_floats(&cv);
  case CONV_TRANSPOSED:
    return sub + (direct_conv(&cv) ? 0 : cv.k * cv.p);
  case CONV_IMPLICIT:
    return sub + implicit_floats(&cv);
  default:
    return sub + (shared_cols(&cv) ? cv.blocks * cv.k * NR : 0);
  }
}

/* Floats of the prepared weights (ph_conv2d_nchw_prepare) for geometry g. */
i64 ph_conv2d_nchw_prepared(const i64 *g) {
  const conv_geom cv = product_geometry(g);
  switch (path_of(&cv)) {
  case CONV_BLOCKED:
    return 16 * cv.o * cv.c;
  case CONV_WINOGRAD:
    return 16 * wino_rows(&cv) * cv.c;
  case CONV_TRANSPOSED:
    return (cv.o + TO - 1) / TO * TO * cv.k;
  default:
    return cv.groups * cv.panels * MR * cv.k;
  }
}

i64 prepared_lanes(const i64 *g) {
  const conv_geom cv = product_geometry(g);
  if (cv.groups != 1 || !direct_conv(&cv)) return 0;
  switch (path_of(&cv)) {
  case CONV_TRANSPOSED:
    return TO;
  case CONV_PACKED:
    return MR;
  default:
    return 0;
  }
}

/* Prepares OIHW weights w for ph_conv2d_nchw into `prep`: per group, the O/G x K weight
 * matrix in panels (pack_panels); for Winograd, the 16 transformed matrices (G g G^T)[xi],
 * each O x C in panels. Returns 0, or -1 when memory runs out. */
int ph_conv2d_nchw_prepare(const float *w, float *prep, const i64 *g) {
  const conv_geom cv = product_geometry(g);
  const conv_path path = path_of(&cv);
  if (path == CONV_BLOCKED) return blocked_winograd_prepare(w, prep, &cv);
  if (path == CONV_TRANSPOSED) {
    pack_transposed(prep, w, cv.o, cv.k);
    return 0;
  }
  if (path != CONV_WINOGRAD) {
    for (i64 grp = 0; grp < cv.groups; grp++)
      pack_panels(prep + grp * cv.panels * MR * cv.k, w + grp * cv.og * cv.k, cv.og, cv.k);
    return 0;
  }
  const i64 oc = cv.o * cv.c;
  float *u = malloc(sizeof(float) * (size_t)(16 * oc + VW));
  if (!u) return -1;
  for (i64 j = 0; j < oc; j += VW) wino_weights(u + j, oc, w + 9 * j, min64(VW, oc - j));
  const int transposed = wino_geometry(&cv).transposed;
  const i64 rows = wino_rows(&cv);
  for (i64 xi = 0; xi < 16; xi++) {
    float *dst = prep + xi * rows * cv.c;
    if (transposed)
      pack_transposed(dst, u + xi * oc, cv.o, cv.c);
    else
      pack_panels(dst, u + xi * oc, cv.o, cv.c);
  }
  free(u);
  return 0;
}

/* Convolution with weights prepared by ph_conv2d_nchw_prepare. */
static int conv2d_nchw(const float *x, const float *prep, float *y, const float *bias,
                       const float *res, float *cols, const i64 *g, const float *bounds) {
  conv_geom cv = conv_geometry(g);
  const int nt = num_threads(g[16]);
  if (subsampled(&cv)) {
    input_copy_job sub = {.cv = &cv, .x = x, .dst = cols,
                          .tasks = split_tasks(cv.n * cv.c, subsampled_floats(&cv) * COPY_WORK,
                                               nt)};
    ph_parallel(sub.tasks, nt, subsample_planes, &sub);
    x = cols;
    cols += subsampled_floats(&cv);
    cv = product_geometry(g);
  }
  const float lo = bounds[0], hi = bounds[1];
  const int act = activation_of(bounds);
  const conv_path path = path_of(&cv);
  if (path == CONV_BLOCKED)
    return conv2d_blocked_winograd(&cv, x, prep, y, bias, res, cols, nt, lo, hi, act);
  if (path == CONV_WINOGRAD)
    return conv2d_winograd(&cv, x, prep, y, bias, res, cols, nt, lo, hi, act);
  if (path == CONV_IMPLICIT)
    return conv2d_implicit(&cv, x, prep, y, bias, res, cols, nt, lo, hi, act);
  i64 *ranges = malloc(sizeof(i64) * 2 * (size_t)(cv.kw + cv.kh));
  if (!ranges) return -1;
  cv.ox_range = ranges;
  cv.oy_range = ranges + 2 * cv.kw;
  for (i64 t = 0; t < cv.kw; t++)
    valid_range(cv.ow, cv.sw, t * cv.dw - cv.pl, cv.w, &cv.ox_range[2 * t],
                &cv.ox_range[2 * t + 1]);
  for (i64 t = 0; t < cv.kh; t++)
    valid_range(cv.oh, cv.sh, t * cv.dh - cv.pt, cv.h, &cv.oy_range[2 * t],
                &cv.oy_range[2 * t + 1]);
  if (path == CONV_TRANSPOSED) {
    conv2d_transposed(&cv, x, prep, y, bias, res, cols, nt, lo, hi, act);
    free(ranges);
    return 0;
  }
  cv.spans = spans_for(&cv, nt);
  const tile_out proto = {.y = y, .res = res, .bias = bias, .ldy = cv.p, .lo = lo, .hi = hi,
                          .act = act};
  const i64 per_image = cv.chunks * cv.spans, work = cv.og * cv.blocks * NR * cv.k;
  packed_job job = {.cv = &cv, .x = x, .prep = prep, .bias = bias, .res = res, .y = y,
                    .cols = cols, .proto = &proto, .kslabs = (cv.k + KC - 1) / KC,
                    .lo = lo, .hi = hi, .act = act};
  atomic_init(&job.failed, 0);
  if (!shared_cols(&cv)) { /* every image and group in one job */
    job.items = cv.n * cv.groups * per_image;
    job.tasks = split_tasks(job.items, cv.n * cv.groups * work, nt);
    ph_parallel(job.tasks, nt, packed_products, &job);
  } else { /* per image and group, a job packing its columns, then one taking the products */
    for (i64 image = 0; image < cv.n * cv.groups && !atomic_load(&job.failed); image++) {
      job.image = image;
      job.items = cv.blocks * job.kslabs;
      job.tasks = split_tasks(job.items, cv.blocks * NR * cv.k * COPY_WORK, nt);
      ph_parallel(job.tasks, nt, packed_columns, &job);
      job.items = per_image;
      job.tasks = split_tasks(per_image, work, nt);
      ph_parallel(job.tasks, nt, packed_products, &job);
    }
  }
  free(ranges);
  return atomic_load(&job.failed) ? -1 : 0;
}

/* Convolution with weights prepared by ph_conv2d_nchw_prepare, subnormals flushed. */
int ph_conv2d_nchw(const float *x, const float *prep, float *y, const float *bias,
                   const float *res, float *cols, const i64 *g, const float *bounds) {
  return FLUSHED_STATUS(conv2d_nchw(x, prep, y, bias, res, cols, g, bounds));
}
