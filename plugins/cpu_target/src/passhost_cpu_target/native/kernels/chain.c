/* A pointwise (1x1) convolution and the depthwise convolution of its result, NCHW, as one
 * kernel: the middle tensor never leaves the thread's caches.
 *
 * MobileNetV2's and EfficientNet-B0's blocks widen their data with a 1x1 layer and filter
 * the wide result with a depthwise one; taken apart, the first writes the wide tensor to
 * memory (4.8 MB at 112x112) and the second reads it back. Here each task takes MR middle
 * channels of an image: their planes, through the 1x1 layer's epilogue, into a buffer of
 * its thread (wide tiles over the data read in place), then each plane through the
 * depthwise path that takes planes one at a time (depthwise_plane_path), straight from that
 * buffer. The sums are the two kernels' own, in the same order, so the results are theirs
 * bit for bit. C harness, against the 1x1 kernel then the depthwise one, alternating:
 * 16 -> 96 channels at 112x112 then a 3x3 at stride 2 0.80x-0.85x the time; 24 -> 144 at
 * 56x56 then a 3x3 0.83x-0.93x (stride 1) and 0.78x-0.89x (stride 2), then a 5x5 at stride 2
 * 0.88x-0.94x, at one and two threads. Smaller planes stay in the caches anyway, and the
 * layers' own paths do better there (a plane at a time, at 14x14 the chain took 1.4x the
 * time; at 7x7, where the depthwise layer takes VW channels at a time, 3.6x-4x). At 28x28
 * it took 1.0x in the harness, and inside the models, one process, the steps timed, the
 * chain against the two kernels: MobileNetV2's three 28x28 pairs 0.91x-0.95x at one thread
 * and 0.96x-0.99x at two, EfficientNet-B0's 0.94x-0.96x at one thread and 0.92x-1.0x at
 * two; at 14x14, 1.1x-1.12x. Depthwise layers with few enough outputs (small_outputs:
 * 14x14, 7x7) go through the small-plane chain below, whatever their input plane; other
 * planes of fewer than CHAIN_MIN_PLANE floats (28x28) through the two kernels, the middle
 * tensor in a buffer of the calling thread that every chain reuses, so that it stays in
 * the caches as the memory plan's buffers do.
 *
 * g: the depthwise layer's window geometry (window_geometry: h, w, oh, ow, kh, kw, strides,
 * dilations, top and left padding, images n, middle channels c, threads), then the
 * pointwise layer's input channels. */
#include "conv.h"
#include "window.h"

#define CHAIN_MIN_PLANE 784

/* Whether the chain goes through the small-plane depthwise path's channels-last groups
 * (see small_chain). */
static int small_chained(const i64 *g) {
  const window_geom wg = window_geometry(g);
  return small_outputs(&wg);
}

/* Whether the chain takes a plane at a time. */
static int chained(const i64 *g) { return !small_chained(g) && g[0] * g[1] >= CHAIN_MIN_PLANE; }

/* The pointwise layer's geometry for ph_conv2d_nchw: 1x1, stride 1, unpadded, ungrouped. */
static void pointwise_geometry(const i64 *g, i64 *pg) {
  const i64 values[17] = {g[12], g[15], g[0], g[1], g[13], g[0], g[1], 1, 1, 1, 1, 1, 1,
                          0, 0, 1, g[14]};
  memcpy(pg, values, sizeof(values));
}

/* Floats of the pointwise weights as the chain takes them: micro_tile's panels (c x cin,
 * pack_panels), or ph_conv2d_nchw's prepared weights when the layers run apart. */
i64 ph_pointwise_depthwise_prepared(const i64 *g) {
  i64 pg[17];
  pointwise_geometry(g, pg);
  if (small_chained(g)) return (g[13] + TO - 1) / TO * TO * g[15];
  return chained(g) ? (g[13] + MR - 1) / MR * MR * g[15] : ph_conv2d_nchw_prepared(pg);
}

/* Prepares the pointwise weights w ([c][cin], OIHW 1x1) into `prep` as the chain takes
 * them (ph_pointwise_depthwise_prepared floats). Returns 0, or -1 when memory runs out. */
int ph_pointwise_depthwise_prepare(const float *w, float *prep, const i64 *g) {
  i64 pg[17];
  pointwise_geometry(g, pg);
  if (small_chained(g)) {
    pack_transposed(prep, w, g[13], g[15]);
    return 0;
  }
  if (!chained(g)) return ph_conv2d_nchw_prepare(w, prep, pg);
  pack_panels(prep, w, g[13], g[15]);
  return 0;
}

/* What a chain's tasks share, whichever its kind: its items (image, group of middle
 * channels), its tasks, each thread's buffer (NULL until its first task) and a failure. */
typedef struct {
  i64 items, tasks;
  float **bufs;
  _Atomic int failed;
} chain_run;

/* Runs `task` over run->items items on the threads of g (the depthwise layer dw's planes
 * times their share of the pointwise and depthwise sums, cin input channels, in work) with
 * run->bufs allocated, each thread's buffer freed after; 0, or -1 when memory runs out. */
static int run_chain(chain_run *run, const window_job *dw, i64 cin, const i64 *g,
                     ph_task_fn task, void *job) {
  const window_geom *wg = &dw->wg;
  const int nt = num_threads(g[14]);
  const i64 work = dw->planes * (wg->h * wg->w * cin + wg->oh * wg->ow * wg->kh * wg->kw);
  run->tasks = split_tasks(run->items, work, nt);
  atomic_init(&run->failed, 0);
  run->bufs = calloc((size_t)nt, sizeof(float *));
  if (!run->bufs) return -1;
  ph_parallel(run->tasks, nt, task, job);
  for (int i = 0; i < nt; i++) free(run->bufs[i]);
  free(run->bufs);
  return atomic_load(&run->failed) ? -1 : 0;
}

typedef struct {
  const window_job *dw;          /* the depthwise layer; its x is NULL */
  dw_plane_fn plane;             /* its path, a plane at a time */
  const float *x, *prep;         /* the data [n][cin][p], the pointwise panels */
  tile_out proto;                /* the pointwise epilogue; y, ldy and m0 set per tile */
  i64 cin, c, p, groups, floats; /* groups of MR middle channels; the path's buffer floats */
  chain_run run; /* each thread's buffer the path's, zero where no plane writes */
} chain_job;

/* The floats of a thread's chain buffer: MR middle planes, then the last block's panel
 * and sums (middle_planes). */
static i64 chain_floats(const chain_job *job) { return MR * job->p + (job->cin + MR) * NR; }

/* Columns of a middle-plane tile: three vectors, where micro_tile takes two. Over the 1x1
 * layers' short reductions (16-40 input channels) its 24 sums take fewer loads per
 * multiply-add, and a plane fewer tiles, each with its own set-up and fetches. Against
 * tiles of NR columns, one thread: pairs alone, EfficientNet-B0's 16 -> 96 with SiLU at
 * 56x56 0.420 -> 0.297 ms and at 112x112 1.518 -> 1.374; inside the models, where the
 * data comes from L3, MobileNetV2's large-plane pairs 0.96x-0.97x the time (the model 7.70
 * -> 7.58 ms), EfficientNet-B0's and two threads' unchanged. */
#define WIDE_V 3
#define WIDE_COLS (WIDE_V * VW)

/* The MR middle channels of a panel a (cin reductions, micro_tile's layout) at the WIDE_COLS
 * columns of the data b (rows ldb apart) through bias and clamp into y (rows ldy apart; the
 * first `rows` channels): micro_tile's sums, in its order, and its epilogue. */
static inline __attribute__((always_inline)) void wide_tile(const float *restrict a, i64 rows,
                                                            const float *restrict b, i64 ldb,
                                                            i64 cin, float *y, i64 ldy,
                                                            const tile_out *out) {
  vf acc[MR][WIDE_V];
  for (int i = 0; i < MR; i++)
    for (int v = 0; v < WIDE_V; v++) acc[i][v] = (vf){0};
  for (i64 k = 0; k < cin; k++) {
    const float *bk = b + k * ldb;
    for (int v = 0; v < WIDE_V; v++) __builtin_prefetch(bk + WIDE_COLS + v * VW, 0, 2);
    vf x[WIDE_V];
    for (int v = 0; v < WIDE_V; v++) x[v] = *(const vf *)(bk + v * VW);
    for (int i = 0; i < MR; i++) {
      const float s = a[k * MR + i];
      for (int v = 0; v < WIDE_V; v++) acc[i][v] += s * x[v];
    }
  }
  const vf lo = (vf){0} + out->lo, hi = (vf){0} + out->hi;
  for (i64 i = 0; i < rows; i++) {
    const vf bias = (vf){0} + (out->bias ? out->bias[out->m0 + i] : 0.0f);
    for (int v = 0; v < WIDE_V; v++)
      *(vf *)(y + i * ldy + v * VW) = vclamp(acc[i][v] + bias, lo, hi);
  }
}

/* Middle channels [grp * MR, grp * MR + rows) of the image whose data is xb, through the
 * pointwise epilogue, into the planes `mid` (p floats apart): WIDE_COLS columns at a time,
 * then NR, then the last fewer than NR through `tail` (their panel, zero past the data,
 * then their raw sums). The activation goes over the finished planes in one stretch: tile
 * by tile, staged, it took EfficientNet-B0's 16 -> 96 pair at 112x112 (SiLU) 1.03x the
 * time, its 24 -> 144 pairs at 56x56 1.05x. */
static void middle_planes(const chain_job *job, const float *xb, i64 grp, i64 rows, float *mid,
                          float *tail) {
  const i64 p = job->p, cin = job->cin, wide = p / WIDE_COLS * WIDE_COLS;
  const i64 p0 = wide + (p - wide) / NR * NR, left = p - p0;
  const float *a = job->prep + grp * cin * MR;
  float *panel = tail, *sums = tail + cin * NR; /* (the whole blocks' sums go to `out`) */
  tile_out out = job->proto;
  out.m0 = grp * MR;
  out.ldy = p;
  out.act = ACT_NONE;
  for (i64 c0 = 0; c0 < wide; c0 += WIDE_COLS)
    wide_tile(a, rows, xb + c0, p, cin, mid + c0, p, &out);
  for (i64 c0 = wide; c0 < p0; c0 += NR) {
    out.y = mid + c0;
    micro_tile(a, rows, xb + c0, p, cin, sums, 0, &out, 0);
  }
  if (left > 0) {
    for (i64 k = 0; k < cin; k++) {
      memcpy(panel + k * NR, xb + k * p + p0, (size_t)left * sizeof(float));
      memset(panel + k * NR + left, 0, (size_t)(NR - left) * sizeof(float));
    }
    micro_tile(a, rows, panel, NR, cin, sums, 0, NULL, 0);
    for (i64 i = 0; i < rows; i++)
      epilogue(mid + i * p + p0, sums + i * NR, left,
               out.bias ? out.bias + out.m0 + i : NULL, 0, NULL, out.lo, out.hi);
  }
  activate(mid, rows, p, p, job->proto.act);
}

/* Task t: a contiguous share of the (image, group of MR middle channels) items. */
static void chain_task(void *arg, i64 t) {
  chain_job *job = arg;
  float **path_buf = &job->run.bufs[ph_worker_index()];
  if (!*path_buf) *path_buf = aligned_floats(job->floats, 1);
  float *mid = thread_buffer(THREAD_STAGE, chain_floats(job));
  if (!*path_buf || !mid) {
    atomic_store(&job->run.failed, 1);
    return;
  }
  float *tail = mid + MR * job->p;
  i64 u0, u1;
  part_range(job->run.items, job->run.tasks, t, &u0, &u1);
  for (i64 u = u0; u < u1; u++) {
    const i64 b = u / job->groups, grp = u % job->groups, rows = min64(MR, job->c - grp * MR);
    middle_planes(job, job->x + b * job->cin * job->p, grp, rows, mid, tail);
    for (i64 i = 0; i < rows; i++)
      job->plane(job->dw, b * job->c + grp * MR + i, mid + i * job->p, *path_buf);
  }
}

/* The pointwise layer (prepared weights, bias, clamp and activation in `bounds`) and the
 * depthwise one (weights [C][KH][KW], bias, residual, `dbounds`) of data x into y. */
static int pointwise_depthwise(const float *x, const float *prep, const float *bias,
                               const float *wd, const float *dbias, const float *res,
                               float *y, const i64 *g, const float *bounds,
                               const float *dbounds) {
  window_job *dw = depthwise_job_new(g, NULL, wd, y, dbias, res, dbounds);
  if (!dw) return -1;
  const window_geom *wg = &dw->wg;
  chain_job job = {.dw = dw, .x = x, .prep = prep, .cin = g[15], .c = g[13],
                   .p = wg->h * wg->w};
  job.plane = depthwise_plane_path(wg, &job.floats);
  job.proto = (tile_out){.bias = bias, .lo = bounds[0], .hi = bounds[1],
                         .act = activation_of(bounds)};
  job.groups = (job.c + MR - 1) / MR;
  job.run.items = g[12] * job.groups;
  const int status = run_chain(&job.run, dw, job.cin, g, chain_task, &job);
  free(dw);
  return status;
}

/* ---------------------------------------------------------------------------------------
 * Small planes: where the depthwise layer has at most SMALL_PLANE outputs (small_outputs),
 * the chain takes its channels-last path, VW channels at a time, and the 1x1 layer's sums
 * transposed (transposed_tile: positions along the rows, TO middle channels along the
 * vectors), which is that path's own layout: each tile goes through the pointwise epilogue
 * and its rows straight into the groups' padded inputs, and each group then through the
 * depthwise sums and epilogue (small_group_output). Taken apart, the 1x1 layer transposed its
 * tiles back to planes, and the depthwise layer either transposed them again or, on its own
 * faster path for 3x3 layers at 14x14, copied each plane. Each task takes TO middle channels
 * of an image; the sums are the two kernels' own, in the same order, so the results are
 * theirs bit for bit. Inside the models, one process, the steps timed, against the two
 * kernels at one thread: MobileNetV2's 14x14 pairs 0.89x-0.95x the time, its stride-2 one
 * into 7x7 0.91x, its 7x7 ones 0.98x-1.0x (the model 0.98x); EfficientNet-B0's 14x14 pairs
 * 0.82x-0.9x, its stride-2 one into 7x7 0.89x (the model 0.96x). The stride-2 pairs from
 * 28x28 into 14x14, against the chain a plane at a time: MobileNetV2's 0.89x,
 * EfficientNet-B0's (5x5) 0.92x.
 */
typedef struct {
  const window_job *dw;
  const float *x, *prep, *bias; /* the data [n][cin][p], the panels (pack_transposed) */
  float lo, hi;
  int act;
  i64 cin, c, p, panels, floats; /* floats: of one group's buffer */
  chain_run run;                  /* each thread's buffer its TNV groups' */
} small_chain_job;

/* Middle channels [q * TO, q * TO + TO) of the image whose data is xb into the TNV group
 * buffers at `groups` (job->floats apart), through the pointwise epilogue. */
static void small_middle(const small_chain_job *job, const float *xb, i64 q, float *groups) {
  const window_geom *wg = &job->dw->wg;
  const i64 p = job->p, tp = transposed_rows(p), wp = small_cols(wg), hp = small_rows(wg);
  const vf lo = (vf){0} + job->lo, hi = (vf){0} + job->hi;
  float tile[TP_MAX * TO] __attribute__((aligned(64)));
  vf bias[TNV];
  for (int v = 0; v < TNV; v++) {
    const i64 c0 = q * TO + v * VW;
    bias[v] = job->bias ? load_first(job->bias + c0, max64(0, min64(VW, job->c - c0)))
                        : (vf){0};
  }
  /* each tile fetches its share of the next panel's weights into L2, as the 1x1 layer's
   * transposed tiles do (conv.c): the weights come from memory once per inference (in the
   * models, one thread: MobileNetV2's 7x7 pairs 0.91x the time, EfficientNet-B0's
   * 0.93x-0.95x) */
  const i64 tiles = (p + tp - 1) / tp, slice = job->cin * TO / tiles;
  const float *next = (q + 1) * TO < job->c ? job->prep + (q + 1) * job->cin * TO : NULL;
  for (i64 p0 = 0; p0 < p; p0 += tp) {
    const i64 rows = min64(tp, p - p0);
    transposed_tile(tile, job->prep + q * job->cin * TO, xb + p0, p, job->cin, rows,
                    next ? next + p0 / tp * slice : NULL, slice);
    for (i64 i = 0; i < rows; i++)
      for (int v = 0; v < TNV; v++) {
        vf *r = (vf *)(tile + i * TO + v * VW);
        *r = vclamp(*r + bias[v], lo, hi);
      }
    if (job->act) activate(tile, 1, 0, rows * TO, job->act);
    for (i64 i = 0; i < rows; i++) {
      const i64 iy = (p0 + i) / wg->w + wg->pt, ix = (p0 + i) % wg->w + wg->pl;
      if (iy < 0 || iy >= hp || ix < 0 || ix >= wp) continue; /* read by no window */
      for (int v = 0; v < TNV; v++)
        *(vf *)(groups + v * job->floats + (iy * wp + ix) * VW) =
            *(const vf *)(tile + i * TO + v * VW);
    }
  }
}

/* Task t: a contiguous share of the (image, panel of TO middle channels) items. */
static void small_chain_task(void *arg, i64 t) {
  small_chain_job *job = arg;
  float **groups = &job->run.bufs[ph_worker_index()];
  if (!*groups) *groups = aligned_floats(TNV * job->floats, 1);
  if (!*groups) {
    atomic_store(&job->run.failed, 1);
    return;
  }
  const i64 dw_groups = (job->c + VW - 1) / VW;
  i64 u0, u1;
  part_range(job->run.items, job->run.tasks, t, &u0, &u1);
  for (i64 u = u0; u < u1; u++) {
    const i64 b = u / job->panels, q = u % job->panels;
    small_middle(job, job->x + b * job->cin * job->p, q, *groups);
    for (int v = 0; v < TNV && (q * TNV + v) * VW < job->c; v++)
      small_group_output(job->dw, b * dw_groups + q * TNV + v, *groups + v * job->floats);
  }
}

/* pointwise_depthwise's chain on small planes (see above). */
static int small_chain(const float *x, const float *prep, const float *bias, const float *wd,
                       const float *dbias, const float *res, float *y, const i64 *g,
                       const float *bounds, const float *dbounds) {
  window_job *dw = depthwise_job_new(g, NULL, wd, y, dbias, res, dbounds);
  if (!dw) return -1;
  const window_geom *wg = &dw->wg;
  small_chain_job job = {.dw = dw, .x = x, .prep = prep, .bias = bias, .lo = bounds[0],
                         .hi = bounds[1], .act = activation_of(bounds), .cin = g[15],
                         .c = g[13], .p = wg->h * wg->w, .floats = small_group_floats(wg)};
  job.panels = (job.c + TO - 1) / TO;
  job.run.items = g[12] * job.panels;
  const int status = run_chain(&job.run, dw, job.cin, g, small_chain_task, &job);
  free(dw);
  return status;
}

/* The chain of data x into y, subnormals flushed: a plane at a time on large planes,
 * through the depthwise layer's channels-last groups where it has few outputs, else the two
 * kernels through the calling thread's buffer. Returns 0, or -1 when memory runs out. */
int ph_pointwise_depthwise(const float *x, const float *prep, const float *bias,
                           const float *wd, const float *dbias, const float *res, float *y,
                           const i64 *g, const float *bounds, const float *dbounds) {
  if (chained(g))
    return FLUSHED_STATUS(
        pointwise_depthwise(x, prep, bias, wd, dbias, res, y, g, bounds, dbounds));
  if (small_chained(g))
    return FLUSHED_STATUS(small_chain(x, prep, bias, wd, dbias, res, y, g, bounds, dbounds));
  i64 pg[17];
  pointwise_geometry(g, pg);
  float *mid = thread_buffer(THREAD_STAGE, g[12] * g[13] * g[0] * g[1]);
  if (!mid) return -1;
  const int status = ph_conv2d_nchw(x, prep, mid, bias, NULL, NULL, pg, bounds);
  return status ? status : ph_depthwise_nchw(mid, wd, y, dbias, res, g, dbounds);
}
