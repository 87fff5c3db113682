/* Convolutions on the wide grid of the input's phase planes (see conv.h). */
#include "conv.h"

/* ---------------------------------------------------------------------------------------
 * Undilated, ungrouped convolutions with a kernel larger than 1x1 that do not take Winograd are
 * computed on the "wide" output grid of the input's zero-padded phase planes (see phase_planes: one
 * plane at stride 1, four at stride 2): tap (ky, kx) of wide output p = oy * wq + ox is a plane
 * element at p plus a fixed offset, so every row k = (c, ky, kx) of the column matrix is a
 * contiguous stretch of the planes, found through a table of row offsets: nothing is gathered ahead
 * (copy_block copies a block's rows as it goes). Outputs with ox >= OW are computed and dropped,
 * which costs little where the wide grid rounds up to at most a twentieth more column blocks than
 * the plane (14x14 at stride 1: 14 x 16 = 224, 7 blocks like 196; the 112x112 output of a 224x224
 * stem at stride 2: 396 blocks against 392); elsewhere, and at larger strides, the packed path
 * runs.
 */
static window_geom implicit_geometry(const conv_geom *cv) {
  const i64 g[12] = {cv->h, cv->w, cv->oh, cv->ow, cv->kh, cv->kw,
                     cv->sh, cv->sw, cv->dh, cv->dw, cv->pt, cv->pl};
  return window_geometry(g);
}

static i64 implicit_blocks(const window_geom *wg) { return (wg->wide + NR - 1) / NR; }

/* Whether the wide grid fits (path_of takes Winograd first). */
int use_implicit(const conv_geom *cv) {
  if (cv->groups != 1 || cv->sh != cv->sw || cv->sh > 2 || cv->dh != 1 || cv->dw != 1 ||
      cv->kh * cv->kw == 1)
    return 0;
  const window_geom wg = implicit_geometry(cv);
  return implicit_blocks(&wg) * 20 <= cv->blocks * 21;
}

/* Whether the row tiles take cv (see ROW_TILE): a reduction of at most one slab, on a wide
 * grid with dropped outputs. */
static int implicit_rowwise(const conv_geom *cv, const window_geom *wg) {
  return cv->k <= KC && wg->wq > cv->ow;
}

/* Floats of one channel's phase planes. */
static i64 implicit_channel(const window_geom *wg) { return wg->sh * wg->sw * wg->phase; }

/* Floats of the scratch: C channels of phase planes, then slack for the taps of the last
 * block's dropped outputs; none for the row tiles, whose bands' planes are their threads'. */
i64 implicit_floats(const conv_geom *cv) {
  const window_geom wg = implicit_geometry(cv);
  if (implicit_rowwise(cv, &wg)) return 0;
  return cv->c * implicit_channel(&wg) + implicit_blocks(&wg) * NR + wg.phase;
}

/* Whether wide block blk is whole and holds no dropped outputs (it lies within one output
 * row, or the wide grid is the output grid: a 2x2 stride-2 layer's): its tiles then go
 * through the epilogue straight from the registers. */
static int implicit_in_row(const conv_geom *cv, const window_geom *wg, i64 blk) {
  return (wg->wq == cv->ow || blk * NR % wg->wq + NR <= cv->ow) &&
         (blk + 1) * NR <= wg->wide;
}

/* Whether the tiles of wide block blk of a layer with (or without) a residual go through
 * the epilogue in implicit_task: those within one row into the output, the other whole
 * blocks of a layer without a residual into a staged tile, whose outputs are then copied
 * out (implicit_scatter). The rest (the partial last block, a residual's blocks across a
 * row end) are left raw for implicit_store. Staging the blocks across a row end took the
 * 224x224 stems of MobileNetV2 and EfficientNet-B0 (ReLU6, SiLU: 113 wide columns a row,
 * a block in four across a row end) from 0.36 to 0.29 ms and 0.51 to 0.42 ms (C harness,
 * one thread), ResNet-50's 7x7 stem from 2.37 to 2.2 ms. */
static int implicit_finished(const conv_geom *cv, const window_geom *wg, i64 blk,
                             const float *res) {
  return implicit_in_row(cv, wg, blk) || (!res && (blk + 1) * NR <= wg->wide);
}

/* The stretches of wide block blk's positions that are outputs (ox < OW): each one's first
 * lane in the block, output index oy * OW + ox and length, in order (one stretch of the
 * output plane together); returns how many. */
static int implicit_stretches(const conv_geom *cv, const window_geom *wg, i64 blk,
                              i64 lane[NR], i64 at[NR], i64 len[NR]) {
  int count = 0;
  for (i64 p = blk * NR; p < min64((blk + 1) * NR, wg->wide);) {
    const i64 oy = p / wg->wq, ox = p % wg->wq;
    if (ox >= cv->ow) {
      p += wg->wq - ox;
      continue;
    }
    const i64 n = min64(cv->ow - ox, (blk + 1) * NR - p);
    lane[count] = p - blk * NR;
    at[count] = oy * cv->ow + ox;
    len[count++] = n;
    p += n;
  }
  return count;
}

/* The outputs of a staged tile (rows of NR lanes, the epilogue applied) of wide block blk,
 * output channels from m0 on, into image b's output. */
static void implicit_scatter(const conv_geom *cv, const window_geom *wg, const float *stage,
                             i64 rows, float *y, i64 b, i64 m0, i64 blk) {
  i64 lane[NR], at[NR], len[NR];
  const int count = implicit_stretches(cv, wg, blk, lane, at, len);
  for (i64 i = 0; i < rows; i++) {
    float *row = y + (b * cv->o + m0 + i) * cv->p;
    for (int s = 0; s < count; s++)
      memcpy(row + at[s], stage + i * NR + lane[s], (size_t)len[s] * sizeof(float));
  }
}

/* Sums of micro-panels [q0, q1) x wide blocks [blk0, blk1) of image b: through proto's
 * epilogue into the output or a staged tile for the blocks implicit_finished takes, else
 * raw into cb. Row k of the column matrix starts at planes + boff[k], copied a block at a
 * time (copy_block). */
static void implicit_task(const conv_geom *cv, const window_geom *wg, const float *planes,
                          const i64 *boff, const float *wp, float *cb, i64 q0, i64 q1,
                          i64 blk0, i64 blk1, const tile_out *proto, i64 b) {
  float stage[MR * NR] __attribute__((aligned(64)));
  float tile[KC * NR] __attribute__((aligned(64)));
  for (i64 k0 = 0; k0 < cv->k; k0 += KC) {
    const i64 kc = min64(KC, cv->k - k0);
    for (i64 blk = blk0; blk < blk1; blk++) {
      const int last = k0 + kc == cv->k;
      const int direct = last && implicit_in_row(cv, wg, blk);
      const int staged = last && !direct && implicit_finished(cv, wg, blk, proto->res);
      const i64 at = blk * NR / wg->wq * cv->ow + blk * NR % wg->wq;
      copy_block(tile, planes + blk * NR, boff + k0, 0, kc);
      for (i64 q = q0; q < q1; q++) {
        const i64 rows = min64(MR, cv->o - q * MR);
        tile_out out = *proto;
        out.m0 = q * MR;
        if (staged) {
          out.y = stage;
          out.ldy = NR;
        } else {
          out.y += (b * cv->o + out.m0) * cv->p + at;
          if (out.res) out.res += (b * cv->o + out.m0) * cv->p + at;
        }
        micro_tile(wp + (q * cv->k + k0) * MR, rows, tile, NR, kc,
                   cb + ((blk - blk0) * MCP + q - q0) * MR * NR, k0 > 0,
                   direct || staged ? &out : NULL, 0);
        if (staged) implicit_scatter(cv, wg, stage, rows, proto->y, b, q * MR, blk);
      }
    }
  }
}

/* The raw tiles of a task (the blocks implicit_finished leaves) through the epilogue into
 * image b's output, wide outputs with ox >= OW dropped. */
static void implicit_store(const conv_geom *cv, const window_geom *wg, const float *cb,
                           float *y, const float *bias, const float *res, i64 b, i64 q0,
                           i64 q1, i64 blk0, i64 blk1, float lo, float hi, int act) {
  i64 lane[NR], at[NR], len[NR];
  for (i64 blk = blk0; blk < blk1; blk++) {
    if (implicit_finished(cv, wg, blk, res)) continue;
    const int count = implicit_stretches(cv, wg, blk, lane, at, len);
    i64 kept = 0; /* the block's outputs: one stretch of each output plane */
    for (int s = 0; s < count; s++) kept += len[s];
    for (i64 q = q0; q < q1; q++) {
      const float *tile = cb + ((blk - blk0) * MCP + q - q0) * MR * NR;
      const i64 rows = min64(MR, cv->o - q * MR);
      for (i64 i = 0; i < rows; i++) {
        const i64 m = q * MR + i, plane = (b * cv->o + m) * cv->p;
        for (int s = 0; s < count; s++)
          epilogue(y + plane + at[s], tile + i * NR + lane[s], len[s], bias ? bias + m : NULL,
                   0, res ? res + plane + at[s] : NULL, lo, hi);
      }
      if (act && kept)
        activate(y + (b * cv->o + q * MR) * cv->p + at[0], rows, cv->p, kept, act);
    }
  }
}

/* ---------------------------------------------------------------------------------------
 * Short reductions (k <= KC: a stem's few input channels) on a wide grid with dropped
 * outputs take the output in row tiles instead of wide blocks: panel q's MR output channels
 * at ROW_TILE output rows and VW columns, each tap row read in place from the phase planes
 * of its band of rows (see BAND_ROWS; row r of the tap starts at planes + boff[k] + r * wq),
 * the sums through the epilogue straight into the output rows. Nothing is copied into a
 * tile, staged across a row end or computed for the dropped columns. Against the wide
 * blocks (one process, alternating with onnxruntime, one thread): MobileNetV2's 3x3 stem
 * with ReLU6 0.325 -> 0.299 ms (onnxruntime 0.310; two threads 0.219 -> 0.205, 0.207),
 * EfficientNet-B0's with SiLU 0.608 -> 0.493, ResNet-50's 7x7 stem 2.44 -> 2.27; bit for
 * bit the same sums. */
#define ROW_TILE 2

/* The first n (<= VW) lanes of v stored at p: a whole vector when n is VW. */
static inline void store_lanes(float *p, vf v, i64 n) {
  if (n == VW)
    *(vf *)p = v;
  else
    store_first(p, v, n);
}

/* Panel q's tile at output rows oy .. oy + ROW_TILE (those past OH dropped) and columns
 * ox0 .. ox0 + VW (those past OW dropped) of image b, through proto's epilogue, from the
 * phase planes at src: row oy, column ox0 of the planes, their rows `step` floats apart. */
static inline __attribute__((always_inline)) void row_tile(
    const conv_geom *cv, const float *src, i64 step, const i64 *boff, const float *wp,
    const tile_out *proto, i64 b, i64 q, i64 oy, i64 ox0) {
  const i64 rows = min64(MR, cv->o - q * MR), lines = min64(ROW_TILE, cv->oh - oy);
  const i64 cols = min64(VW, cv->ow - ox0);
  const float *a = wp + q * cv->k * MR;
  float *y = proto->y + (b * cv->o + q * MR) * cv->p + oy * cv->ow + ox0;
  /* the output lines of the next tile along the rows, fetched for writing while the sums
   * are taken: a stem's output is too large to stay in the caches from one inference to the
   * next, and its 2 * MR rows are more streams than the hardware prefetcher follows (in the
   * models, one thread: MobileNetV2's stem 0.428 -> 0.390 ms, EfficientNet-B0's 0.625 ->
   * 0.520; fetching two or four lines ahead did no better) */
  for (int i = 0; i < rows; i++)
    for (int r = 0; r < ROW_TILE; r++) __builtin_prefetch(y + i * cv->p + r * cv->ow + VW, 1, 3);
  vf acc[MR][ROW_TILE];
  for (int i = 0; i < MR; i++)
    for (int r = 0; r < ROW_TILE; r++) acc[i][r] = (vf){0};
  for (i64 k = 0; k < cv->k; k++) {
    vf xv[ROW_TILE];
    for (int r = 0; r < ROW_TILE; r++) xv[r] = *(const vf *)(src + boff[k] + r * step);
    for (int i = 0; i < MR; i++) {
      const float s = a[k * MR + i];
      for (int r = 0; r < ROW_TILE; r++) acc[i][r] += s * xv[r];
    }
  }
  /* with an activation, the tile is finished in `staged` (L1), then stored */
  float staged[MR * ROW_TILE * VW] __attribute__((aligned(64)));
  const vf lo = (vf){0} + proto->lo, hi = (vf){0} + proto->hi;
  for (i64 i = 0; i < rows; i++) {
    const vf bias = (vf){0} + (proto->bias ? proto->bias[q * MR + i] : 0.0f);
    for (i64 r = 0; r < lines; r++) {
      const i64 at = i * cv->p + r * cv->ow;
      vf v = acc[i][r] + bias;
      if (proto->res) v += load_first(proto->res + (y - proto->y) + at, cols);
      v = vclamp(v, lo, hi);
      if (proto->act)
        *(vf *)(staged + (i * ROW_TILE + r) * VW) = v;
      else
        store_lanes(y + at, v, cols);
    }
  }
  if (!proto->act) return;
  activate(staged, rows * ROW_TILE, VW, VW, proto->act);
  for (i64 i = 0; i < rows; i++)
    for (i64 r = 0; r < lines; r++)
      store_lanes(y + i * cv->p + r * cv->ow, *(const vf *)(staged + (i * ROW_TILE + r) * VW),
                  cols);
}

typedef struct {
  const conv_geom *cv;
  const window_geom *wg;
  const float *x, *wp, *bias, *res;
  float *y, *planes;
  const i64 *boff;         /* the row offsets in the image's planes, or a band's */
  const window_geom *band; /* the row tiles' band (band_geometry) */
  const tile_out *proto;
  i64 b, blocks, spans, tasks; /* the image; wide blocks, spans of them; the job's tasks */
  float lo, hi;
  int act;
  _Atomic int failed;
} implicit_job;

/* The items of image b's phase planes: each channel's phases, then the slack past the last
 * channel. Per phase, not per channel: a stem's three channels in two tasks gave one thread
 * twice the other's share. */
static i64 implicit_plane_items(const conv_geom *cv) { return cv->c * cv->sh * cv->sw + 1; }

/* Task t of image b's phase planes: a contiguous share of the items (a channel's phase, or
 * the slack past the last channel, zeroed). */
static void implicit_planes(void *arg, i64 t) {
  const implicit_job *job = arg;
  const conv_geom *cv = job->cv;
  const window_geom *wg = job->wg;
  const i64 phases = cv->sh * cv->sw, slack = cv->c * phases;
  i64 u0, u1;
  part_range(implicit_plane_items(cv), job->tasks, t, &u0, &u1);
  for (i64 u = u0; u < u1; u++) {
    if (u == slack)
      memset(job->planes + u * wg->phase, 0,
             (size_t)(implicit_floats(cv) - u * wg->phase) * sizeof(float));
    else
      phase_plane(job->planes + u * wg->phase,
                  job->x + (job->b * cv->c + u / phases) * cv->h * cv->w, wg, 0.0f,
                  u % phases / cv->sw, u % phases % cv->sw);
  }
}

/* Task t of image b's products: a contiguous share of its items (chunk of output channels,
 * span of wide blocks), in the thread's own buffer of raw tiles. */
static void implicit_products(void *arg, i64 t) {
  implicit_job *job = arg;
  const conv_geom *cv = job->cv;
  float *cb = thread_scratch(NB * MCP * MR * NR);
  if (!cb) {
    atomic_store(&job->failed, 1);
    return;
  }
  i64 u0, u1;
  part_range(cv->chunks * job->spans, job->tasks, t, &u0, &u1);
  for (i64 u = u0; u < u1; u++) {
    i64 blk0, blk1, q0, q1;
    part_range(job->blocks, job->spans, u % job->spans, &blk0, &blk1);
    part_range(cv->panels, cv->chunks, u / job->spans, &q0, &q1);
    implicit_task(cv, job->wg, job->planes, job->boff, job->wp, cb, q0, q1, blk0, blk1,
                  job->proto, job->b);
    implicit_store(cv, job->wg, cb, job->y, job->bias, job->res, job->b, q0, q1, blk0, blk1,
                   job->lo, job->hi, job->act);
  }
}

/* Output rows per band of the row tiles: each band first copies the phase planes of its
 * input rows, with the rows its windows share with the next band, into a buffer of its
 * thread (phase_plane with the band's top padding), where its tiles then find them. The
 * image's planes copied whole ahead (613 KB for a 224x224 stem) had left L1 and L2, which
 * the output's lines go through, by the time a tile read them. Inside the models, one
 * process, the steps timed, against the whole planes: MobileNetV2's stem 0.350 -> 0.324 ms
 * at one thread, 0.173 -> 0.160 at two; EfficientNet-B0's 0.515 -> 0.472 and 0.284 ->
 * 0.231; ResNet-50's 7x7 stem 2.37-2.58 -> 2.33-2.37. Bands of 16 rows did as well at one
 * thread, of 4 rows a little better at two (0.210 against 0.216 ms for MobileNetV2's). */
#define BAND_ROWS (4 * ROW_TILE)

/* The geometry of a band's phase planes: BAND_ROWS output rows' worth (hq), as wide as the
 * image's (wq). */
static window_geom band_geometry(const conv_geom *cv, const window_geom *wg) {
  window_geom band = *wg;
  band.hq = BAND_ROWS + (cv->kh - 1) * cv->dh / cv->sh;
  band.phase = band.hq * band.wq;
  return band;
}

/* Floats of a band's planes (every channel's phases), then VW for the reads of a last
 * vector's dropped outputs. */
static i64 band_floats(const conv_geom *cv, const window_geom *band) {
  return cv->c * cv->sh * cv->sw * band->phase + VW;
}

/* Task t of image b's row tiles: a contiguous share of its bands, every panel of each. */
static void implicit_row_tiles(void *arg, i64 t) {
  implicit_job *job = arg;
  const conv_geom *cv = job->cv;
  const window_geom *band = job->band;
  const i64 phases = cv->sh * cv->sw;
  const i64 floats = band_floats(cv, band);
  float *planes = thread_scratch(floats);
  if (!planes) {
    atomic_store(&job->failed, 1);
    return;
  }
  memset(planes + floats - VW, 0, VW * sizeof(float));
  i64 band0, band1;
  part_range((cv->oh + BAND_ROWS - 1) / BAND_ROWS, job->tasks, t, &band0, &band1);
  for (i64 oy0 = band0 * BAND_ROWS; oy0 < min64(band1 * BAND_ROWS, cv->oh); oy0 += BAND_ROWS) {
    window_geom at = *band; /* the band's rows: its top padding moved up by oy0 rows */
    at.pt = band->pt - oy0 * cv->sh;
    for (i64 u = 0; u < cv->c * phases; u++)
      phase_plane(planes + u * band->phase,
                  job->x + (job->b * cv->c + u / phases) * cv->h * cv->w, &at, 0.0f,
                  u % phases / cv->sw, u % phases % cv->sw);
    for (i64 oy = oy0; oy < min64(oy0 + BAND_ROWS, cv->oh); oy += ROW_TILE)
      for (i64 ox0 = 0; ox0 < cv->ow; ox0 += VW)
        for (i64 q = 0; q < (cv->o + MR - 1) / MR; q++)
          row_tile(cv, planes + (oy - oy0) * band->wq + ox0, band->wq, job->boff, job->wp,
                   job->proto, job->b, q, oy, ox0);
  }
}

/* `planes`: implicit_floats floats; `wp`: the weights in panels (pack_panels). Per image,
 * one job copies the phase planes, the next one takes the products; or one job takes the
 * row tiles, band by band. */
int conv2d_implicit(const conv_geom *cv, const float *x, const float *wp, float *y,
                           const float *bias, const float *res, float *planes, int nt,
                           float lo, float hi, int act) {
  const window_geom wg = implicit_geometry(cv), band = band_geometry(cv, &wg);
  const int rowwise = implicit_rowwise(cv, &wg);
  const i64 blocks = implicit_blocks(&wg);
  const i64 channel = rowwise ? cv->sh * cv->sw * band.phase : implicit_channel(&wg);
  const i64 spans = min64(blocks, ((blocks + NB - 1) / NB + nt - 1) / nt * nt);
  const i64 items = cv->chunks * spans, taps = cv->kh * cv->kw;
  const i64 work = cv->o * blocks * NR * cv->k;
  const tile_out proto = {.y = y, .res = res, .bias = bias, .ldy = cv->p, .lo = lo, .hi = hi,
                          .act = act};
  i64 *boff = malloc(sizeof(i64) * (size_t)(cv->k + taps));
  if (!boff) return -1;
  tap_offsets(boff + cv->k, rowwise ? &band : &wg);
  for (i64 k = 0; k < cv->k; k++) boff[k] = k / taps * channel + boff[cv->k + k % taps];
  implicit_job job = {.cv = cv, .wg = &wg, .band = &band, .x = x, .wp = wp, .bias = bias,
                      .res = res, .y = y, .planes = planes, .boff = boff, .proto = &proto,
                      .blocks = blocks, .spans = spans, .lo = lo, .hi = hi, .act = act};
  atomic_init(&job.failed, 0);
  for (i64 b = 0; b < cv->n && !atomic_load(&job.failed); b++) {
    job.b = b;
    if (rowwise) {
      job.tasks = split_tasks((cv->oh + BAND_ROWS - 1) / BAND_ROWS, work, nt);
      ph_parallel(job.tasks, nt, implicit_row_tiles, &job);
      continue;
    }
    job.tasks = split_tasks(implicit_plane_items(cv), implicit_floats(cv) * COPY_WORK, nt);
    ph_parallel(job.tasks, nt, implicit_planes, &job);
    job.tasks = split_tasks(items, work, nt);
    ph_parallel(job.tasks, nt, implicit_products, &job);
  }
  free(boff);
  return atomic_load(&job.failed) ? -1 : 0;
}
