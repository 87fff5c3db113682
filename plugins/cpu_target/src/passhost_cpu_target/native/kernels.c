/* Native float32 kernels of the passhost cpu target, loaded with ctypes.
 *
 * Every array is C-contiguous float32. Each kernel takes its static geometry as one int64
 * array (the last entry is the thread count, 0 for all cores) and, where it has an epilogue,
 * `bounds` = {lo, hi, activation}: the result is act(clamp(acc + bias + residual, lo, hi)),
 * where bias (one value per output channel) and residual (shaped like the output) may be
 * NULL, an unbounded side is +-inf, and the activation, a float holding a whole number, is
 * 0.0f (none: act(v) = v), 1.0f (sigmoid) or 2.0f (SiLU: v * sigmoid(v)); see activate().
 * Kernels that allocate return 0, or -1 when memory runs out.
 *
 * The build puts passhost.backend.vector_math's C source (ph_sigmoid_f32, ...) before this
 * file, so that the activations round as the compiled loops do.
 *
 * The vector code uses GCC/Clang vector extensions, so the same source builds for any
 * instruction set; -march=native picks the widest one.
 */
#include <math.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Bumped whenever a signature changes; the loader refuses a library with another value. */
int ph_abi_version(void) { return 5; }

#if defined(__AVX512F__)
#define VW 16
#define MR 8
#elif defined(__AVX__)
#define VW 8
#define MR 6
#else
#define VW 4
#define MR 6
#endif
#define NV 2                 /* vectors per micro-tile row */
#define NR (NV * VW)         /* micro-tile columns */
#define KC 256               /* reduction block (its B panel, 32 KB, stays in L1/L2) */
#define MCP 16               /* micro-panels (of MR rows) per task */
#define NB 4                 /* column blocks (of NR columns) per task */

typedef float vf __attribute__((vector_size(VW * 4), aligned(4)));
typedef int32_t vi __attribute__((vector_size(VW * 4), aligned(4)));
typedef int64_t i64;

/* Below this many multiply-adds a kernel runs on one thread: waking a second thread costs
 * more than it saves, and with another process busy on a core it can stall for a whole
 * scheduler time slice (milliseconds) waiting for that core. */
#define PARALLEL_MIN_WORK ((i64)1 << 20)

static int num_threads(i64 requested) {
#ifdef _OPENMP
  return requested > 0 ? (int)requested : omp_get_max_threads();
#else
  (void)requested;
  return 1;
#endif
}

/* n floats aligned to a cache line (so that no vector access splits across two), zeroed
 * when `zero`; NULL when memory runs out. Released with free(). */
static float *aligned_floats(i64 n, int zero) {
  const size_t bytes = ((size_t)n * sizeof(float) + 63) / 64 * 64;
  float *p = aligned_alloc(64, bytes ? bytes : 64);
  if (p && zero) memset(p, 0, bytes);
  return p;
}

/* A work buffer of at least n floats owned by the calling thread, kept for its next call
 * (the pool's threads live as long as the process: allocating and releasing 128 KB on every
 * call went through mmap and munmap, whose TLB shootdowns stalled the other thread); NULL
 * when memory runs out. */
static float *thread_scratch(i64 n) {
  static __thread float *buffer;
  static __thread i64 size;
  if (size < n) {
    free(buffer);
    buffer = aligned_floats(n, 0);
    size = buffer ? n : 0;
  }
  return buffer;
}

static i64 min64(i64 a, i64 b) { return a < b ? a : b; }
static i64 max64(i64 a, i64 b) { return a > b ? a : b; }
static i64 floor_div(i64 a, i64 b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static i64 ceil_div(i64 a, i64 b) { return -floor_div(-a, b); }

/* First and last+1 output index o in [0, n) whose tap o * stride + shift lies in [0, size). */
static void valid_range(i64 n, i64 stride, i64 shift, i64 size, i64 *lo, i64 *hi) {
  *lo = min64(n, max64(0, ceil_div(-shift, stride)));
  *hi = max64(*lo, min64(n, floor_div(size - 1 - shift, stride) + 1));
}

/* d[j] = s[j * stride] for j < n, with the common strides as constants (they vectorise). */
static void strided_copy(float *restrict d, const float *restrict s, i64 n, i64 stride) {
  if (stride == 1) {
    memcpy(d, s, (size_t)n * sizeof(float));
  } else if (stride == 2) {
    for (i64 j = 0; j < n; j++) d[j] = s[2 * j];
  } else {
    for (i64 j = 0; j < n; j++) d[j] = s[j * stride];
  }
}

/* The first n (< = VW) floats at p as a vector, the rest zero; and the first n lanes of v
 * stored at p, nothing past them. */
static inline vf load_first(const float *p, i64 n) {
#if defined(__AVX512F__)
  return (vf)_mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), p);
#else
  vf v = {0};
  memcpy(&v, p, (size_t)n * sizeof(float));
  return v;
#endif
}

static inline void store_first(float *p, vf v, i64 n) {
#if defined(__AVX512F__)
  _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1), (__m512)v);
#else
  memcpy(p, &v, (size_t)n * sizeof(float));
#endif
}

/* The activations of `bounds`[2]. */
enum { ACT_NONE = 0, ACT_SIGMOID = 1, ACT_SILU = 2 };

static int activation_of(const float *bounds) { return (int)bounds[2]; }

/* The activation of v: ph_sigmoid_f32(v), times v for SiLU (silu = 1), which rounds as the
 * compiled loops' sigmoid and product (times 1 changes nothing, NaN included). */
static inline float activation(float v, uint32_t silu) {
  return ph_sigmoid_f32(v) * ph_f32_select(silu, v, 1.0f);
}

/* y[j] = act(y[j]) for j < n (silu: SiLU, else sigmoid), whole vectors at a time, the last
 * one loaded and stored in part, so that every element takes the vectorised code. Four
 * vectors per step first: their independent chains (exp, division, corrections) keep the
 * units busy where one vector's chain waits on itself (0.8 -> 0.55 ns per element). Inlined
 * into activate() only, whose options it takes. */
static inline __attribute__((always_inline)) void activate_stretch(float *y, i64 n,
                                                                   uint32_t silu) {
  i64 j = 0;
  for (; j + 4 * VW <= n; j += 4 * VW) {
#pragma GCC unroll 64
    for (int l = 0; l < 4 * VW; l++) y[j + l] = activation(y[j + l], silu);
  }
  for (; j + VW <= n; j += VW)
    for (int l = 0; l < VW; l++) y[j + l] = activation(y[j + l], silu);
  if (j < n) {
    vf last = load_first(y + j, n - j);
    for (int l = 0; l < VW; l++) last[l] = activation(last[l], silu);
    store_first(y + j, last, n - j);
  }
}

/* Rows shorter than four vectors are activated as one stretch from a copy of at most
 * ACT_STAGE floats (a micro-tile's rows of NR), so that they take the four-vector steps. */
#define ACT_STAGE 1024

/* y[r * ld + j] = act(y[r * ld + j]) for r < rows, j < n, act one of the activations of
 * `bounds` (nothing for ACT_NONE): what the caller has just stored (a tile, a band of rows,
 * a plane: still in L1), in as few stretches as it lies in (its cost, the sigmoid's math,
 * is about that of the loops' own pass). The compiled loops are compiled with
 * -ffp-contract=off, so this function is too (GCC applies a function's own options to what
 * is inlined into it; it is never inlined itself, which would subject it to its caller's
 * options, nor cloned for constant arguments, whose clones GCC vectorised for 4 lanes). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((noinline, noclone, optimize("fp-contract=off")))
#else
__attribute__((noinline))
#endif
static void activate(float *y, i64 rows, i64 ld, i64 n, int act) {
  if (act != ACT_SIGMOID && act != ACT_SILU) return;
  const uint32_t silu = act == ACT_SILU;
  if (ld == n) { /* one stretch */
    activate_stretch(y, n * rows, silu);
    return;
  }
  if (rows > 1 && n < 4 * VW && rows * n <= ACT_STAGE) {
    float stage[ACT_STAGE] __attribute__((aligned(64)));
    for (i64 r = 0; r < rows; r++) memcpy(stage + r * n, y + r * ld, sizeof(float) * (size_t)n);
    activate_stretch(stage, rows * n, silu);
    for (i64 r = 0; r < rows; r++) memcpy(y + r * ld, stage + r * n, sizeof(float) * (size_t)n);
    return;
  }
  for (i64 r = 0; r < rows; r++) activate_stretch(y + r * ld, n, silu);
}

/* y[r * ld + j] *= gate[r * ld + j] for r < rows, j < n: a gated product after the
 * activation, as SwiGLU's silu(x W) * (x V), on what the caller has just stored. */
static void gate_rows(float *y, i64 rows, i64 ld, i64 n, const float *gate) {
  for (i64 r = 0; r < rows; r++)
    for (i64 j = 0; j < n; j++) y[r * ld + j] *= gate[r * ld + j];
}

/* dst[j] = clamp(src[j] + bias[j * bias_step] (+ res[j]), lo, hi) for j < n (no bias when
 * bias is NULL; dst may be src); NaN passes through. Callers apply the activation to what
 * they have stored (activate()), a whole tile, band of rows or plane at a time. */
static void epilogue(float *dst, const float *src, i64 n, const float *bias, i64 bias_step,
                     const float *res, float lo, float hi) {
  for (i64 j = 0; j < n; j++) {
    float v = src[j];
    if (bias) v = v + bias[j * bias_step];
    if (res) v = v + res[j];
    v = v < lo ? lo : v;
    dst[j] = v > hi ? hi : v;
  }
}

/* ---------------------------------------------------------------------------------------
 * Window planes (depthwise convolution and max pooling, NCHW). One H x W input plane is copied
 * into SH x SW phases of Hq x Wq elements, `fill` outside the data:
 *   pp[(ry * SW + rx) * Hq * Wq + i * Wq + j] = x[i * SH + ry - PT][j * SW + rx - PL],
 * so that, on the "wide" output grid p = oy * Wq + ox, the tap (ky, kx) of every output is
 * pp[off(ky, kx) + p]: each tap is one contiguous multiply-add (or max) over the whole
 * plane. Outputs with ox >= OW are computed and dropped.
 */
#define BLOCK (4 * VW) /* wide outputs per register block */

typedef struct {
  i64 h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
  i64 hq, wq, phase, wide, acc, floats; /* phase rows, cols, size; wide outputs; buffer */
} window_geom;

static window_geom window_geometry(const i64 *g) {
  window_geom wg = {g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11],
                    0, 0, 0, 0, 0, 0};
  wg.hq = wg.oh + (wg.kh - 1) * wg.dh / wg.sh;
  wg.wq = wg.ow + (wg.kw - 1) * wg.dw / wg.sw;
  wg.phase = wg.hq * wg.wq;
  wg.wide = wg.oh * wg.wq;
  /* taps of dropped outputs (and of the rounding to BLOCK) read up to wq + BLOCK past */
  wg.acc = wg.sh * wg.sw * wg.phase + wg.wq + BLOCK;
  wg.floats = wg.acc + (wg.wide + BLOCK - 1) / BLOCK * BLOCK;
  return wg;
}

static void phase_planes(float *restrict pp, const float *restrict x, const window_geom *wg,
                         float fill) {
  for (i64 ry = 0; ry < wg->sh; ry++) {
    for (i64 rx = 0; rx < wg->sw; rx++) {
      float *phase = pp + (ry * wg->sw + rx) * wg->phase;
      i64 lo, hi;
      valid_range(wg->wq, wg->sw, rx - wg->pl, wg->w, &lo, &hi);
      for (i64 i = 0; i < wg->hq; i++) {
        float *d = phase + i * wg->wq;
        const i64 iy = i * wg->sh + ry - wg->pt;
        if (iy < 0 || iy >= wg->h) {
          for (i64 j = 0; j < wg->wq; j++) d[j] = fill;
          continue;
        }
        for (i64 j = 0; j < lo; j++) d[j] = fill;
        strided_copy(d + lo, x + iy * wg->w + lo * wg->sw + rx - wg->pl, hi - lo, wg->sw);
        for (i64 j = hi; j < wg->wq; j++) d[j] = fill;
      }
    }
  }
}

/* Offset in the phase planes of tap t = ky * kw + kx, for wide output 0. */
static void tap_offsets(i64 *off, const window_geom *wg) {
  for (i64 ky = 0; ky < wg->kh; ky++)
    for (i64 kx = 0; kx < wg->kw; kx++) {
      const i64 row = ky * wg->dh, col = kx * wg->dw;
      off[ky * wg->kw + kx] = ((row % wg->sh) * wg->sw + col % wg->sw) * wg->phase +
                              row / wg->sh * wg->wq + col / wg->sw;
    }
}

/* ---------------------------------------------------------------------------------------
 * Convolution, NCHW data, OIHW weights: per batch item and group, the matrix product
 * out[O/G, OH*OW] = W[O/G, K] x cols[K, OH*OW] with K = C/G*KH*KW. Weight rows are read in
 * place. Columns are gathered (im2col) into packed panels of NR columns: when one chunk of
 * MCP micro-panels covers every output channel, each task packs its own KC x NR panel just
 * before using it; otherwise the threads first pack all panels into the `cols` scratch
 * (conv2d_nchw_scratch floats) so that the chunks of output channels share them.
 * Tasks (chunk of output channels, span of column blocks) are split statically: the
 * threads' shares are equal by construction, and a shared counter handing out tasks one at
 * a time (dynamic scheduling) cost more than the imbalance it saves, its cache line moving
 * between the cores on every task.
 */
typedef struct {
  i64 n, c, h, w, o, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, groups;
  i64 cg, og, k, p, panels, chunks, blocks, spans;
  i64 *ox_range, *oy_range;
} conv_geom;

static conv_geom conv_geometry(const i64 *g) {
  conv_geom cv = {g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7],
                  g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15],
                  0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL};
  cv.cg = cv.c / cv.groups;
  cv.og = cv.o / cv.groups;
  cv.k = cv.cg * cv.kh * cv.kw;
  cv.p = cv.oh * cv.ow;
  cv.panels = (cv.og + MR - 1) / MR;
  cv.chunks = (cv.panels + MCP - 1) / MCP;
  cv.blocks = (cv.p + NR - 1) / NR;
  cv.spans = (cv.blocks + NB - 1) / NB;
  return cv;
}

static int direct_conv(const conv_geom *cv) {
  return cv->kh == 1 && cv->kw == 1 && cv->sh == 1 && cv->sw == 1 && cv->pt == 0 &&
         cv->pl == 0 && cv->oh == cv->h && cv->ow == cv->w;
}

/* Item i of n near-equal parts of [0, total): [*lo, *hi). Chunks of output channels are parts
 * of the panels (at most MCP each), spans parts of the column blocks (at most NB each). */
static void part_range(i64 total, i64 n, i64 i, i64 *lo, i64 *hi) {
  *lo = total * i / n;
  *hi = total * (i + 1) / n;
}

/* The spans for nt threads: a multiple of nt where there are blocks enough, so that the
 * threads' equal shares of the tasks are equal work. */
static i64 spans_for(const conv_geom *cv, int nt) {
  const i64 even = (cv->spans + nt - 1) / nt * nt;
  return even <= cv->blocks ? even : cv->spans;
}

/* bp[kk][j] = cols[k0 + kk][p0 + j] for kk < kc (zero past `width` and in the padding). */
static void pack_cols(float *restrict bp, const float *restrict xg, const conv_geom *cv,
                      i64 k0, i64 kc, i64 p0, i64 width) {
  const i64 taps = cv->kh * cv->kw, plane = cv->h * cv->w, sw = cv->sw;
  const int direct = direct_conv(cv);
  i64 c = k0 / taps, ky = (k0 % taps) / cv->kw, kx = k0 % cv->kw;
  for (i64 kk = 0; kk < kc; kk++) {
    float *dst = bp + kk * NR;
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
    for (i64 j = width; j < NR; j++) dst[j] = 0.0f;
    if (++kx == cv->kw) {
      kx = 0;
      if (++ky == cv->kh) { ky = 0; c++; }
    }
  }
}

/* Where a micro-tile goes through the epilogue: rows of `y` (stride ldy) starting at output
 * channel m0, with `res` laid out like y (or NULL) and bias[m0 + i] (or no bias); matrix
 * products add a bias per column, cbias[j], then multiply by cscale[j] (each NULL when
 * absent; both point at the tile's first column); `act` after the clamp, then the product
 * with `gate` (laid out like y, or NULL). */
typedef struct {
  float *y;
  const float *res, *bias;
  i64 ldy, m0;
  float lo, hi;
  const float *cbias, *cscale;
  int act;
  const float *gate;
} tile_out;

static vf vclamp(vf v, vf lo, vf hi) {
  const vi below = v < lo;
  v = (vf)(((vi)lo & below) | ((vi)v & ~below));
  const vi above = v > hi;
  return (vf)(((vi)hi & above) | ((vi)v & ~above));
}

/* acc = a x b[kc rows][NR], plus c[MR][NR] when `accumulate`, where a is a packed panel of MR
 * rows: a[k * MR + i] is row i, column k, and row k of b starts at b + k * ldb, or at
 * b + boff[k] when boff is given. The result goes raw into c, or, when `out` is set,
 * through the epilogue into out->y (only the first `rows` rows). */
static inline __attribute__((always_inline)) void micro_core(
    const float *restrict a, i64 rows, const float *restrict b, i64 ldb, const i64 *boff,
    i64 kc, float *restrict c, int accumulate, const tile_out *out) {
  vf acc[MR][NV];
  for (int i = 0; i < MR; i++)
    for (int v = 0; v < NV; v++)
      acc[i][v] = accumulate ? *(const vf *)(c + i * NR + v * VW) : (vf){0};
  for (i64 k = 0; k < kc; k++) {
    vf bk[NV];
    const float *bk0 = boff ? b + boff[k] : b + k * ldb;
    for (int v = 0; v < NV; v++) bk[v] = *(const vf *)(bk0 + v * VW);
    for (int i = 0; i < MR; i++) {
      const float s = a[k * MR + i];
      for (int v = 0; v < NV; v++) acc[i][v] += s * bk[v];
    }
  }
  if (!out) {
    for (int i = 0; i < MR; i++)
      for (int v = 0; v < NV; v++) *(vf *)(c + i * NR + v * VW) = acc[i][v];
    return;
  }
  /* With an activation or a gate, the tile is finished in `staged` (L1) and then stored:
   * reading back out->y just stored stalls on its cache misses. */
  float staged[MR * NR] __attribute__((aligned(64)));
  const int finish = out->act || out->gate;
  const vf lo = (vf){0} + out->lo, hi = (vf){0} + out->hi;
  for (int i = 0; i < rows; i++) {
    const vf bias = (vf){0} + (out->bias ? out->bias[out->m0 + i] : 0.0f);
    for (int v = 0; v < NV; v++) {
      vf r = acc[i][v] + bias;
      if (out->cbias) r = r + *(const vf *)(out->cbias + v * VW);
      if (out->cscale) r = r * *(const vf *)(out->cscale + v * VW);
      if (out->res) r = r + *(const vf *)(out->res + i * out->ldy + v * VW);
      *(vf *)(finish ? staged + i * NR + v * VW : out->y + i * out->ldy + v * VW) =
          vclamp(r, lo, hi);
    }
  }
  if (!finish) return;
  if (out->act) activate(staged, rows, NR, NR, out->act);
  for (int i = 0; i < rows; i++)
    for (int v = 0; v < NV; v++) {
      vf r = *(const vf *)(staged + i * NR + v * VW);
      if (out->gate) r *= *(const vf *)(out->gate + i * out->ldy + v * VW);
      *(vf *)(out->y + i * out->ldy + v * VW) = r;
    }
}

static void micro_tile(const float *restrict a, i64 rows, const float *restrict b, i64 ldb,
                       i64 kc, float *restrict c, int accumulate, const tile_out *out) {
  micro_core(a, rows, b, ldb, NULL, kc, c, accumulate, out);
}


/* Packs the m x k matrix w (row stride k) into panels of MR rows for micro_tile: element
 * (r, j) goes to ap[((r / MR) * k + j) * MR + r % MR]; the rows that fill up the last panel
 * are zero. */
static void pack_panels(float *restrict ap, const float *restrict w, i64 m, i64 k) {
  for (i64 q = 0; q < (m + MR - 1) / MR; q++) {
    float *panel = ap + q * k * MR;
    for (i64 i = 0; i < MR; i++) {
      const i64 r = q * MR + i;
      for (i64 j = 0; j < k; j++) panel[j * MR + i] = r < m ? w[r * k + j] : 0.0f;
    }
  }
}

/* One task of image b, group grp (whose weights wg are packed into panels, pack_panels):
 * output channels of micro-panels [q0, q1), column blocks [blk0, blk1). Full blocks go through the epilogue into `proto`'s output straight from the
 * registers; a partial last block is left raw in cb (tile (blk - blk0, q - q0)). Columns come
 * from `cols` (packed, blk-major K x NR each), straight from the data (1x1 convolutions), or
 * are packed into bp. */
static void conv_task(const conv_geom *cv, const float *xg, const float *wg, const float *cols,
                      float *bp, float *cb, i64 q0, i64 q1, i64 blk0, i64 blk1,
                      const tile_out *proto, i64 b, i64 grp) {
  const int direct = direct_conv(cv);
  for (i64 k0 = 0; k0 < cv->k; k0 += KC) {
    const i64 kc = min64(KC, cv->k - k0);
    for (i64 blk = blk0; blk < blk1; blk++) {
      const i64 p0 = blk * NR, width = min64(NR, cv->p - p0);
      const float *panel = bp;
      i64 ldb = NR;
      if (cols) {
        panel = cols + (blk * cv->k + k0) * NR;
      } else if (direct && width == NR) {
        panel = xg + k0 * cv->p + p0;
        ldb = cv->p;
      } else {
        pack_cols(bp, xg, cv, k0, kc, p0, width);
      }
      for (i64 q = q0; q < q1; q++) {
        tile_out out = *proto;
        out.m0 = grp * cv->og + q * MR;
        out.y += (b * cv->o + out.m0) * cv->p + p0;
        if (out.res) out.res += (b * cv->o + out.m0) * cv->p + p0;
        micro_tile(wg + (q * cv->k + k0) * MR, min64(MR, cv->og - q * MR), panel, ldb, kc,
                   cb + ((blk - blk0) * MCP + q - q0) * MR * NR, k0 > 0,
                   k0 + kc == cv->k && width == NR ? &out : NULL);
      }
    }
  }
}

/* ---------------------------------------------------------------------------------------
 * Winograd F(2x2, 3x3) for 3x3, stride-1, undilated, ungrouped convolutions with at least
 * WINO_MIN_OUTPUTS outputs per channel: each 2x2 output tile is A^T [(G g G^T) . (B^T d B)] A
 * over its 4x4 input tile d, so the 36 multiplies per tile and channel pair become 16, done
 * as 16 matrix products M[xi] = U[xi] (O x C) x V[xi] (C x tiles). The prepared weights
 * hold U (ph_conv2d_nchw_prepare), the `cols` scratch the input's 2x2 phase planes: element
 * (a, b) of tile (ty, tx) is phase (a % 2, b % 2) at (ty + a / 2, tx + b / 2). A task
 * transforms `rows` tile rows (at most NR tiles) into V, multiplies them for one chunk of
 * output channels, and transforms the products back through the epilogue. From 100 outputs
 * per channel on (a 14x14 plane's 196 takes 2.43 -> 1.6 ms for ResNet-50's 256-channel
 * layers; at 7x7 its 16 tiles fill half the columns and it is slower than the direct path).
 */
#define WINO_MIN_OUTPUTS 100

typedef struct {
  i64 th, tw, twv, rows, row_groups; /* tiles down and across (padded to twv), rows per task */
  i64 ts;                            /* columns of a tile row in V and M: twv, or tw packed */
  window_geom wg;
} wino_geom;

static int use_winograd(const conv_geom *cv) {
  return cv->kh == 3 && cv->kw == 3 && cv->sh == 1 && cv->sw == 1 && cv->dh == 1 &&
         cv->dw == 1 && cv->groups == 1 && cv->c >= 16 && cv->p >= WINO_MIN_OUTPUTS &&
         ((cv->ow + 1) / 2 + VW - 1) / VW * VW <= NR;
}

static wino_geom wino_geometry(const conv_geom *cv) {
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

/* u[xi * stride + j] = (G g G^T)[xi] for the 3x3 kernels g = w[9 j : 9 j + 9], j < VW
 * (kernels past n are zero). */
static void wino_weights(float *u, i64 stride, const float *restrict w, i64 n) {
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

/* u: the transformed weights, 16 matrices (O x C) in panels (winograd_prepare). */
static int conv2d_winograd(const conv_geom *cv, const float *x, const float *u, float *y,
                           const float *bias, const float *res, float *planes, int nt,
                           float lo, float hi, int act) {
  const wino_geom wn = wino_geometry(cv);
  const i64 c = cv->c, o = cv->o, tasks = wn.row_groups * cv->chunks;
  int failed = 0;
#pragma omp parallel num_threads(nt)
  {
    float *v = aligned_floats(16 * c * NR + 16 * MCP * MR * NR + 8 * wn.twv + 16 * wn.twv, 1);
    float *m = v ? v + 16 * c * NR : NULL, *rows = v ? m + 16 * MCP * MR * NR : NULL;
    float *tin = v ? rows + 8 * wn.twv : NULL; /* one tile row's transform, packed rows */
    if (!v) {
#pragma omp atomic write
      failed = 1;
    }
    for (i64 b = 0; b < cv->n; b++) {
#pragma omp for schedule(static)
      for (i64 ch = 0; ch < c; ch++)
        phase_planes(planes + ch * 4 * wn.wg.phase, x + (b * c + ch) * cv->h * cv->w, &wn.wg,
                     0.0f);
#pragma omp for schedule(static)
      for (i64 t = 0; t < tasks; t++) {
        if (!v) continue;
        const i64 ty0 = (t % wn.row_groups) * wn.rows, chunk = t / wn.row_groups;
        const i64 nrows = min64(wn.rows, wn.th - ty0);
        i64 q0, q1;
        part_range(cv->panels, cv->chunks, chunk, &q0, &q1);
        for (i64 ch = 0; ch < c; ch++)
          for (i64 r = 0; r < nrows; r++) {
            const float *plane = planes + ch * 4 * wn.wg.phase;
            if (wn.ts == wn.twv) {
              wino_input_row(v + ch * NR + r * wn.twv, c * NR, plane, &wn, ty0 + r);
              continue;
            }
            wino_input_row(tin, wn.twv, plane, &wn, ty0 + r);
            for (i64 xi = 0; xi < 16; xi++)
              memcpy(v + xi * c * NR + ch * NR + r * wn.ts, tin + xi * wn.twv,
                     sizeof(float) * (size_t)wn.ts);
          }
        for (i64 xi = 0; xi < 16; xi++)
          for (i64 q = q0; q < q1; q++)
            for (i64 c0 = 0; c0 < c; c0 += KC)
              micro_tile(u + ((xi * cv->panels + q) * c + c0) * MR, min64(MR, o - q * MR),
                         v + (xi * c + c0) * NR, NR, min64(KC, c - c0),
                         m + (xi * MCP + q - q0) * MR * NR, c0 > 0, NULL);
        for (i64 q = q0; q < q1; q++) {
          for (i64 i = 0; i < min64(MR, o - q * MR); i++) {
            const i64 oc = q * MR + i;
            const float *mo = m + (q - q0) * MR * NR + i * NR;
            for (i64 r = 0; r < nrows; r++) {
              wino_output_row(rows, rows + 2 * wn.twv, rows + 4 * wn.twv, mo + r * wn.ts,
                              MCP * MR * NR, wn.twv);
              for (i64 dy = 0; dy < 2 && 2 * (ty0 + r) + dy < cv->oh; dy++) {
                const i64 at = ((b * o + oc) * cv->oh + 2 * (ty0 + r) + dy) * cv->ow;
                epilogue(y + at, rows + dy * 2 * wn.twv, cv->ow, bias ? bias + oc : NULL, 0,
                         res ? res + at : NULL, lo, hi);
              }
            }
            if (act) { /* the task's output rows of this channel, one stretch */
              const i64 oy = 2 * ty0, ny = min64(cv->oh, 2 * (ty0 + nrows)) - oy;
              activate(y + ((b * o + oc) * cv->oh + oy) * cv->ow, 1, 0, ny * cv->ow, act);
            }
          }
        }
      }
    }
    free(v);
  }
  return failed ? -1 : 0;
}

/* Transposes the VW x VW block of rows r in place (r[i][k] becomes r[k][i]): log2(VW)
 * rounds, each exchanging the off-diagonal halves of d x d sub-blocks. */
static inline __attribute__((always_inline)) void transpose_block(vf *r) {
#if defined(__clang__)
  float t[VW][VW];
  for (int i = 0; i < VW; i++)
    for (int k = 0; k < VW; k++) t[k][i] = r[i][k];
  for (int i = 0; i < VW; i++)
    for (int k = 0; k < VW; k++) r[i][k] = t[i][k];
#else
#pragma GCC unroll 4
  for (int d = VW / 2; d >= 1; d /= 2) {
    vi ma, mb;
#pragma GCC unroll 16
    for (int k = 0; k < VW; k++) {
      ma[k] = (k & d) ? VW + k - d : k;
      mb[k] = (k & d) ? VW + k : k + d;
    }
#pragma GCC unroll 16
    for (int i = 0; i < VW; i++) {
      if (i & d) continue;
      const vf a = r[i], b = r[i + d];
      r[i] = __builtin_shuffle(a, b, ma);
      r[i + d] = __builtin_shuffle(a, b, mb);
    }
  }
#endif
}

/* ---------------------------------------------------------------------------------------
 * Pointwise (1x1, stride 1, unpadded, ungrouped) convolutions with long reductions over
 * planes that whole NR-column blocks would overshoot by a fifth or more (a 7x7 plane is 49
 * columns of 64 computed): the product is taken transposed, out^T[P, O] = X^T[P, K] x
 * W^T[K, O], with vectors along the output channels (the weights, prepared as panels of TO
 * channels: wt[(q * K + k) * TO + j] = W[q * TO + j][k]) and each tile's rows TP
 * consecutive positions whose inputs are broadcast straight from the data. TP divides the
 * plane where it can, so nothing is computed for nothing; each tile is transposed back
 * through the epilogue, which is what the long reduction pays for. (At 14x14, where blocks
 * waste an eighth, the transposed form ran slower inside MobileNetV2 at 2 threads.)
 */
#define TNV 2                /* vectors of output channels per tile */
#define TO (TNV * VW)        /* output channels per tile */
#define TP_MAX 14            /* positions per tile, at most */
#define TRANSPOSED_MIN_K 256 /* reductions at least this long */

static int use_transposed(const conv_geom *cv) {
  const i64 computed = cv->blocks * NR;
  return direct_conv(cv) && cv->groups == 1 && cv->k >= TRANSPOSED_MIN_K &&
         (computed - cv->p) * 5 >= computed;
}

/* Positions per tile: the largest count up to TP_MAX that leaves the fewest positions over
 * in the last tile. */
static i64 transposed_rows(i64 p) {
  i64 best = TP_MAX, waste = -1;
  for (i64 tp = TP_MAX; tp >= TP_MAX / 2; tp--) {
    const i64 w = (p + tp - 1) / tp * tp - p;
    if (waste < 0 || w < waste) { best = tp; waste = w; }
  }
  return best;
}

/* acc[i][v] = sum over k < kc of x[k * ldx + i] * wt[k * TO + v * VW], for i < tp. */
static inline __attribute__((always_inline)) void transposed_sums(
    vf acc[TP_MAX][TNV], const float *restrict wt, const float *restrict x, i64 ldx, i64 kc,
    const int tp) {
  for (int i = 0; i < tp; i++)
    for (int v = 0; v < TNV; v++) acc[i][v] = (vf){0};
  for (i64 k = 0; k < kc; k++) {
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
static void transposed_tile(float *tile, const float *wt, const float *x, i64 ldx, i64 kc,
                            i64 tp) {
  vf acc[TP_MAX][TNV];
#define TP_SUMS(T)                                   \
  transposed_sums(acc, wt, x, ldx, kc, T);           \
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
static void pack_transposed(float *restrict wt, const float *restrict w, i64 o, i64 k) {
  for (i64 q = 0; q < (o + TO - 1) / TO; q++)
    for (i64 kk = 0; kk < k; kk++)
      for (i64 j = 0; j < TO; j++)
        wt[(q * k + kk) * TO + j] = q * TO + j < o ? w[(q * TO + j) * k + kk] : 0.0f;
}

static void conv2d_transposed(const conv_geom *cv, const float *x, const float *wt, float *y,
                              const float *bias, const float *res, int nt, float lo,
                              float hi, int act) {
  const i64 tp = transposed_rows(cv->p), groups = (cv->p + tp - 1) / tp;
  const i64 panels = (cv->o + TO - 1) / TO, tiles = cv->n * panels * groups;
  const vf vlo = (vf){0} + lo, vhi = (vf){0} + hi;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (i64 t = 0; t < tiles; t++) {
    float tile[TP_MAX * TO] __attribute__((aligned(64)));
    float staged[TO * VW] __attribute__((aligned(64)));
    const i64 b = t / (panels * groups), q = t / groups % panels, p0 = t % groups * tp;
    const i64 rows = min64(tp, cv->p - p0), channels = min64(TO, cv->o - q * TO);
    transposed_tile(tile, wt + q * cv->k * TO, x + b * cv->c * cv->p + p0, cv->p, cv->k,
                    rows);
    for (i64 i0 = 0; i0 < rows; i0 += VW) {
      const i64 n = min64(VW, rows - i0);
      for (int v = 0; v < TNV; v++) {
        vf r[VW];
        for (i64 i = 0; i < VW; i++)
          r[i] = i < n ? *(const vf *)(tile + (i0 + i) * TO + v * VW) : (vf){0};
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
}

/* ---------------------------------------------------------------------------------------
 * Undilated, ungrouped convolutions with a kernel larger than 1x1 that take neither Winograd
 * nor the transposed form are computed on the "wide" output grid of the input's zero-padded
 * phase planes (see phase_planes: one plane at stride 1, four at stride 2): tap (ky, kx) of
 * wide output p = oy * wq + ox is a plane element at p plus a fixed offset, so every row
 * k = (c, ky, kx) of the column matrix is a contiguous stretch of the planes, read in place
 * through a table of row offsets: nothing is packed. Outputs with ox >= OW are computed and
 * dropped, which costs little where the wide grid rounds up to at most a twentieth more
 * column blocks than the plane (14x14 at stride 1: 14 x 16 = 224, 7 blocks like 196; the
 * 112x112 output of a 224x224 stem at stride 2: 396 blocks against 392); elsewhere, and at
 * larger strides, the packed path runs.
 */
static window_geom implicit_geometry(const conv_geom *cv) {
  const i64 g[12] = {cv->h, cv->w, cv->oh, cv->ow, cv->kh, cv->kw,
                     cv->sh, cv->sw, cv->dh, cv->dw, cv->pt, cv->pl};
  return window_geometry(g);
}

static i64 implicit_blocks(const window_geom *wg) { return (wg->wide + NR - 1) / NR; }

static int use_implicit(const conv_geom *cv) {
  if (cv->groups != 1 || cv->sh != cv->sw || cv->sh > 2 || cv->dh != 1 || cv->dw != 1 ||
      cv->kh * cv->kw == 1 || use_winograd(cv) || use_transposed(cv))
    return 0;
  const window_geom wg = implicit_geometry(cv);
  return implicit_blocks(&wg) * 20 <= cv->blocks * 21;
}

/* Floats of one channel's phase planes. */
static i64 implicit_channel(const window_geom *wg) { return wg->sh * wg->sw * wg->phase; }

/* Floats of the scratch: C channels of phase planes, then slack for the taps of the last
 * block's dropped outputs. */
static i64 implicit_floats(const conv_geom *cv) {
  const window_geom wg = implicit_geometry(cv);
  return cv->c * implicit_channel(&wg) + implicit_blocks(&wg) * NR + wg.phase;
}

/* Raw sums of micro-panels [q0, q1) x wide blocks [blk0, blk1) into cb; row k of the column
 * matrix starts at planes + boff[k]. */
/* Whether wide block blk lies within one output row: its tiles then go through the
 * epilogue straight from the registers. */
static int implicit_in_row(const conv_geom *cv, const window_geom *wg, i64 blk) {
  return blk * NR % wg->wq + NR <= cv->ow && (blk + 1) * NR <= wg->wide;
}

/* Sums of micro-panels [q0, q1) x wide blocks [blk0, blk1) of image b: into the output
 * through proto's epilogue for blocks within one row, else raw into cb. Row k of the
 * column matrix starts at planes + boff[k]. */
static void implicit_task(const conv_geom *cv, const window_geom *wg, const float *planes,
                          const i64 *boff, const float *wp, float *cb, i64 q0, i64 q1,
                          i64 blk0, i64 blk1, const tile_out *proto, i64 b) {
  for (i64 k0 = 0; k0 < cv->k; k0 += KC) {
    const i64 kc = min64(KC, cv->k - k0);
    for (i64 blk = blk0; blk < blk1; blk++) {
      const int direct = k0 + kc == cv->k && implicit_in_row(cv, wg, blk);
      const i64 at = blk * NR / wg->wq * cv->ow + blk * NR % wg->wq;
      for (i64 q = q0; q < q1; q++) {
        tile_out out = *proto;
        out.m0 = q * MR;
        out.y += (b * cv->o + out.m0) * cv->p + at;
        if (out.res) out.res += (b * cv->o + out.m0) * cv->p + at;
        micro_core(wp + (q * cv->k + k0) * MR, min64(MR, cv->o - q * MR), planes + blk * NR,
                   0, boff + k0, kc, cb + ((blk - blk0) * MCP + q - q0) * MR * NR, k0 > 0,
                   direct ? &out : NULL);
      }
    }
  }
}

/* The raw tiles of a task (blocks across a row end) through the epilogue into image b's
 * output, wide outputs with ox >= OW dropped. */
static void implicit_store(const conv_geom *cv, const window_geom *wg, const float *cb,
                           float *y, const float *bias, const float *res, i64 b, i64 q0,
                           i64 q1, i64 blk0, i64 blk1, float lo, float hi, int act) {
  for (i64 blk = blk0; blk < blk1; blk++) {
    if (implicit_in_row(cv, wg, blk)) continue;
    for (i64 q = q0; q < q1; q++) {
      const float *tile = cb + ((blk - blk0) * MCP + q - q0) * MR * NR;
      const i64 rows = min64(MR, cv->o - q * MR);
      i64 first = -1, kept = 0; /* the block's outputs: one stretch of each output plane */
      for (i64 i = 0; i < rows; i++) {
        const i64 m = q * MR + i;
        kept = 0;
        for (i64 p = blk * NR; p < min64((blk + 1) * NR, wg->wide);) {
          const i64 oy = p / wg->wq, ox = p % wg->wq;
          if (ox >= cv->ow) {
            p += wg->wq - ox;
            continue;
          }
          const i64 n = min64(cv->ow - ox, (blk + 1) * NR - p);
          const i64 at = (b * cv->o + m) * cv->p + oy * cv->ow + ox;
          if (kept == 0) first = oy * cv->ow + ox;
          epilogue(y + at, tile + i * NR + p - blk * NR, n, bias ? bias + m : NULL, 0,
                   res ? res + at : NULL, lo, hi);
          kept += n;
          p += n;
        }
      }
      if (act && kept)
        activate(y + (b * cv->o + q * MR) * cv->p + first, rows, cv->p, kept, act);
    }
  }
}

/* `planes`: implicit_floats floats; `wp`: the weights in panels (pack_panels). */
static int conv2d_implicit(const conv_geom *cv, const float *x, const float *wp, float *y,
                           const float *bias, const float *res, float *planes, int nt,
                           float lo, float hi, int act) {
  const window_geom wg = implicit_geometry(cv);
  const i64 blocks = implicit_blocks(&wg), channel = implicit_channel(&wg);
  const i64 spans = min64(blocks, ((blocks + NB - 1) / NB + nt - 1) / nt * nt);
  const i64 tasks = cv->chunks * spans, taps = cv->kh * cv->kw;
  const tile_out proto = {.y = y, .res = res, .bias = bias, .ldy = cv->p, .lo = lo, .hi = hi,
                          .act = act};
  i64 *boff = malloc(sizeof(i64) * (size_t)(cv->k + taps));
  if (!boff) return -1;
  tap_offsets(boff + cv->k, &wg);
  for (i64 k = 0; k < cv->k; k++) boff[k] = k / taps * channel + boff[cv->k + k % taps];
  int failed = 0;
#pragma omp parallel num_threads(nt)
  {
    float *cb = aligned_floats(NB * MCP * MR * NR, 0);
    if (!cb) {
#pragma omp atomic write
      failed = 1;
    }
    for (i64 b = 0; b < cv->n; b++) {
#pragma omp for schedule(static)
      for (i64 c = 0; c <= cv->c; c++) {
        if (c == cv->c) /* the slack past the last channel */
          memset(planes + c * channel, 0,
                 (size_t)(implicit_floats(cv) - c * channel) * sizeof(float));
        else
          phase_planes(planes + c * channel, x + (b * cv->c + c) * cv->h * cv->w, &wg, 0.0f);
      }
#pragma omp for schedule(static)
      for (i64 t = 0; t < tasks; t++) {
        if (!cb) continue;
        i64 blk0, blk1, q0, q1;
        part_range(blocks, spans, t % spans, &blk0, &blk1);
        part_range(cv->panels, cv->chunks, t / spans, &q0, &q1);
        implicit_task(cv, &wg, planes, boff, wp, cb, q0, q1, blk0, blk1, &proto, b);
        implicit_store(cv, &wg, cb, y, bias, res, b, q0, q1, blk0, blk1, lo, hi, act);
      }
    }
    free(cb);
  }
  free(boff);
  return failed ? -1 : 0;
}

/* Whether the threads pack all columns first (several chunks of output channels share them);
 * never for 1x1 convolutions, whose full column blocks are read straight from the data. */
static int shared_cols(const conv_geom *cv) { return cv->chunks > 1 && !direct_conv(cv); }

/* Floats of the `cols` scratch ph_conv2d_nchw needs for geometry g (0: none). */
i64 ph_conv2d_nchw_scratch(const i64 *g) {
  const conv_geom cv = conv_geometry(g);
  if (use_winograd(&cv)) {
    const wino_geom wn = wino_geometry(&cv);
    return cv.c * 4 * wn.wg.phase + NR; /* slack: whole-vector reads */
  }
  if (use_implicit(&cv)) return implicit_floats(&cv);
  return shared_cols(&cv) ? cv.blocks * cv.k * NR : 0;
}

/* Floats of the prepared weights (ph_conv2d_nchw_prepare) for geometry g. */
i64 ph_conv2d_nchw_prepared(const i64 *g) {
  const conv_geom cv = conv_geometry(g);
  if (use_winograd(&cv)) return 16 * cv.panels * MR * cv.c;
  if (use_transposed(&cv)) return (cv.o + TO - 1) / TO * TO * cv.k;
  return cv.groups * cv.panels * MR * cv.k;
}

/* Prepares OIHW weights w for ph_conv2d_nchw into `prep`: per group, the O/G x K weight
 * matrix in panels (pack_panels); for Winograd, the 16 transformed matrices (G g G^T)[xi],
 * each O x C in panels. Returns 0, or -1 when memory runs out. */
int ph_conv2d_nchw_prepare(const float *w, float *prep, const i64 *g) {
  const conv_geom cv = conv_geometry(g);
  if (use_transposed(&cv)) {
    pack_transposed(prep, w, cv.o, cv.k);
    return 0;
  }
  if (!use_winograd(&cv)) {
    for (i64 grp = 0; grp < cv.groups; grp++)
      pack_panels(prep + grp * cv.panels * MR * cv.k, w + grp * cv.og * cv.k, cv.og, cv.k);
    return 0;
  }
  const i64 oc = cv.o * cv.c;
  float *u = malloc(sizeof(float) * (size_t)(16 * oc + VW));
  if (!u) return -1;
  for (i64 j = 0; j < oc; j += VW) wino_weights(u + j, oc, w + 9 * j, min64(VW, oc - j));
  for (i64 xi = 0; xi < 16; xi++)
    pack_panels(prep + xi * cv.panels * MR * cv.c, u + xi * oc, cv.o, cv.c);
  free(u);
  return 0;
}

/* Convolution with weights prepared by ph_conv2d_nchw_prepare. */
int ph_conv2d_nchw(const float *x, const float *prep, float *y, const float *bias,
                   const float *res, float *cols, const i64 *g, const float *bounds) {
  conv_geom cv = conv_geometry(g);
  const int nt = num_threads(g[16]);
  const float lo = bounds[0], hi = bounds[1];
  const int act = activation_of(bounds);
  if (use_winograd(&cv)) return conv2d_winograd(&cv, x, prep, y, bias, res, cols, nt, lo, hi,
                                                act);
  if (use_transposed(&cv)) {
    conv2d_transposed(&cv, x, prep, y, bias, res, nt, lo, hi, act);
    return 0;
  }
  if (use_implicit(&cv)) return conv2d_implicit(&cv, x, prep, y, bias, res, cols, nt, lo, hi,
                                               act);
  const int shared = shared_cols(&cv);
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
  cv.spans = spans_for(&cv, nt);
  const i64 kslabs = (cv.k + KC - 1) / KC, tasks = cv.chunks * cv.spans;
  const tile_out proto = {.y = y, .res = res, .bias = bias, .ldy = cv.p, .lo = lo, .hi = hi,
                          .act = act};
  int failed = 0;
#pragma omp parallel num_threads(nt)
  {
    float bp[KC * NR] __attribute__((aligned(64)));
    float *cb = aligned_floats(NB * MCP * MR * NR, 0);
    if (!cb) {
#pragma omp atomic write
      failed = 1;
    }
    for (i64 image = 0; image < cv.n * cv.groups; image++) {
      const i64 b = image / cv.groups, grp = image % cv.groups;
      const float *xg = x + (b * cv.c + grp * cv.cg) * cv.h * cv.w;
      const float *wg = prep + grp * cv.panels * MR * cv.k;
      if (shared) {
#pragma omp for schedule(static)
        for (i64 t = 0; t < cv.blocks * kslabs; t++) {
          const i64 blk = t / kslabs, k0 = (t % kslabs) * KC;
          pack_cols(cols + (blk * cv.k + k0) * NR, xg, &cv, k0, min64(KC, cv.k - k0), blk * NR,
                    min64(NR, cv.p - blk * NR));
        }
      }
#pragma omp for schedule(static)
      for (i64 t = 0; t < tasks; t++) {
        if (!cb) continue;
        i64 blk0, blk1, q0, q1;
        part_range(cv.blocks, cv.spans, t % cv.spans, &blk0, &blk1);
        part_range(cv.panels, cv.chunks, t / cv.spans, &q0, &q1);
        conv_task(&cv, xg, wg, shared ? cols : NULL, bp, cb, q0, q1, blk0, blk1, &proto, b,
                  grp);
        const i64 last = blk1 - 1, p0 = last * NR;
        if (cv.p - p0 < NR) {
          for (i64 q = q0; q < q1; q++) {
            const i64 rows = min64(MR, cv.og - q * MR), m0 = grp * cv.og + q * MR;
            for (i64 i = 0; i < rows; i++) {
              const i64 m = m0 + i, at = (b * cv.o + m) * cv.p + p0;
              const float *tile = cb + ((last - blk0) * MCP + q - q0) * MR * NR;
              epilogue(y + at, tile + i * NR, cv.p - p0, bias ? bias + m : NULL, 0,
                       res ? res + at : NULL, lo, hi);
            }
            if (act) activate(y + (b * cv.o + m0) * cv.p + p0, rows, cv.p, cv.p - p0, act);
          }
        }
      }
    }
    free(cb);
  }
  free(ranges);
  return failed ? -1 : 0;
}

/* Calls plane(ctx, t, buf) for every plane t in [0, planes) on nt threads, in equal
 * contiguous shares (planes are equal work), each with a zeroed buffer of `floats` floats;
 * 0, or -1 when a buffer cannot be allocated. */
typedef void (*plane_fn)(const void *ctx, i64 t, float *buf);

static int for_each_plane(i64 planes, int nt, i64 floats, plane_fn plane, const void *ctx) {
  int failed = 0;
#pragma omp parallel num_threads(nt)
  {
    float *buf = aligned_floats(floats, 1);
    if (!buf) {
#pragma omp atomic write
      failed = 1;
    }
#pragma omp for schedule(static)
    for (i64 t = 0; t < planes; t++)
      if (buf) plane(ctx, t, buf);
    free(buf);
  }
  return failed ? -1 : 0;
}

typedef struct {
  window_geom wg;
  const float *x, *w, *bias, *res;
  float *y;
  float lo, hi;
  int act;
  i64 c, off[];
} window_job;

static window_job *window_job_new(const i64 *g, i64 c) {
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
 * stride / 2 floats (see depthwise3s2_plane). The sums are those of nr rows; the first
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
    const i64 s2[3] = {0, stride / 2 + 1, 1}; /* step 2: even, odd, next even column */
#pragma GCC unroll 16
    for (int j = 0; j < (nr - 1) * step + ks; j++) {
      /* The weights are read anew for each input row: kept in registers from one row to
       * the next (up to ks - 1 rows on), a 7x7's 49 spill. */
      const float *wj = wc;
      __asm__("" : "+r"(wj));
#pragma GCC unroll 8
      for (int kx = 0; kx < ks; kx++) {
        const i64 col = step == 1 ? kx : s2[kx];
        vf in[4];
        for (int v = 0; v < nv; v++) in[v] = *(const vf *)(src + j * stride + col + v * VW);
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
          const int ky = j - step * r;
          if (ky < 0 || ky >= ks) continue;
          const vf wt = (vf){0} + wj[ky * ks + kx];
          for (int v = 0; v < nv; v++) a[r][v] += wt * in[v];
        }
      }
    }
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
 * constants; inlined into
 * one function per (step, ks) (DW_BLOCKS), each holding only its own variants and loading
 * its taps' weights per call (inlined into a loop over blocks, GCC kept all 49 of a 7x7's
 * broadcast weights live across it and spilled). */
static inline __attribute__((always_inline)) void depthwise_block_any(const window_job *job, const float *src, i64 stride,
                                const float *wc, i64 n, float *dst, const float *bias,
                                const float *res, float *tmp, i64 room, int rows, int step,
                                int ks) {
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
  } else if (step == 2) {
    DW_CASES(DW_ROWS, 2, 3)
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
 * channels) 0.65 -> 0.52 ms, at 28x28 0.36 -> 0.25 ms; 5x5 with SiLU (EfficientNet-B0) at
 * 56x56 0.62 -> 0.51 ms, at 28x28 0.41 -> 0.31 ms. */
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

/* Runs the output rows of plane t (its padded input at `src`, rows `stride` apart, output
 * row oy at row oy * max(step, 1)) in blocks of DW_ROWS rows and BLOCK columns, each by
 * `block`, then each band of rows (one stretch of the plane) through the activation. */
static void depthwise_rows(const window_job *job, i64 t, const float *src, i64 stride,
                           float *tmp, int step, dw_block_fn block) {
  const window_geom *wg = &job->wg;
  const i64 ch = t % job->c;
  const float *wc = job->w + ch * wg->kh * wg->kw, *bias = job->bias ? job->bias + ch : NULL;
  for (i64 oy = 0; oy < wg->oh;) {
    /* the row paths end with the rows left, the generic one with single rows */
    const int rows = wg->oh - oy >= DW_ROWS ? DW_ROWS : step ? (int)(wg->oh - oy) : 1;
    const i64 at = (t * wg->oh + oy) * wg->ow;
    const float *res = job->res ? job->res + at : NULL;
    /* right to left: a partial vector's spill into the next row's start is overwritten */
    for (i64 ox = (wg->ow - 1) / BLOCK * BLOCK; ox >= 0; ox -= BLOCK)
      block(job, src + oy * (step ? step : 1) * stride + ox, stride, wc,
            min64(BLOCK, wg->ow - ox), job->y + at + ox, bias, res ? res + ox : NULL, tmp,
            (wg->oh - oy) * wg->ow - ox, rows);
    if (job->act) activate(job->y + at, 1, 0, rows * wg->ow, job->act);
    oy += rows;
  }
}

static void depthwise_same_plane(const void *ctx, i64 t, float *buf) {
  const window_job *job = ctx;
  const window_geom *wg = &job->wg;
  const i64 stride = depthwise_same_stride(wg), w = wg->w, whole = w / VW * VW;
  const i64 half = wg->kh / 2;
  const float *x = job->x + t * wg->h * w;
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

/* 3x3, stride-2, undilated depthwise convolutions padded by one at the top and left (and
 * by what the last window needs at the bottom and right) read each padded input row from
 * `buf` split into its even columns (from the left padding on) and its odd ones, halves of
 * depthwise3s2_half floats, so that the three taps of a row are whole vectors: output
 * column ox reads even[ox], odd[ox] and even[ox + 1]. Rows as in depthwise3_plane, and
 * like it for output rows of at least three quarters of a vector whatever the plane's
 * size (a 14x14 output from 28x28 ran 0.65x-0.8x the time of the small-plane path). */
static int depthwise3s2(const window_geom *wg) {
  return wg->kh == 3 && wg->kw == 3 && wg->sh == 2 && wg->sw == 2 && wg->dh == 1 &&
         wg->dw == 1 && wg->pt == 1 && wg->pl == 1 && wg->oh == (wg->h + 1) / 2 &&
         wg->ow == (wg->w + 1) / 2;
}

static i64 depthwise3s2_half(const window_geom *wg) {
  return (wg->ow + 1 + VW - 1) / VW * VW + VW;
}

/* Rows of depthwise3s2_plane's buffer: the padded plane, and 2 (DW_ROWS - 1) zero rows
 * below it for the sums of a last block's rows past the plane. */
static i64 depthwise3s2_rows(const window_geom *wg) { return wg->h + 2 + 2 * (DW_ROWS - 1); }

static i64 depthwise3s2_floats(const window_geom *wg) {
  return depthwise3s2_rows(wg) * 2 * depthwise3s2_half(wg) + VW;
}

static void depthwise3s2_plane(const void *ctx, i64 t, float *buf) {
  const window_job *job = ctx;
  const window_geom *wg = &job->wg;
  const i64 half = depthwise3s2_half(wg), w = wg->w;
  vi even, odd;
  for (int j = 0; j < VW; j++) {
    even[j] = 2 * j;
    odd[j] = 2 * j + 1;
  }
  const float *x = job->x + t * wg->h * w;
  for (i64 iy = 0; iy < wg->h; iy++) {
    /* padded column 2j is data column 2j - 1 (odd), padded column 2j + 1 data column 2j */
    float *e = buf + (iy + 1) * 2 * half + VW - 1, *o = e + half + 1;
    const float *s = x + iy * w;
    i64 j = 0;
    for (; 2 * j + 2 * VW <= w; j += VW) {
      const vf lo = *(const vf *)(s + 2 * j), hi = *(const vf *)(s + 2 * j + VW);
      *(vf *)(o + j) = __builtin_shuffle(lo, hi, even);
      *(vf *)(e + 1 + j) = __builtin_shuffle(lo, hi, odd);
    }
    const i64 left = w - 2 * j; /* fewer than 2 VW: the last vectors, partly */
    if (left > 0) {
      const vf lo = load_first(s + 2 * j, min64(VW, left));
      const vf hi = left > VW ? load_first(s + 2 * j + VW, left - VW) : (vf){0};
      store_first(o + j, __builtin_shuffle(lo, hi, even), (left + 1) / 2);
      if (left > 1) store_first(e + 1 + j, __builtin_shuffle(lo, hi, odd), left / 2);
    }
  }
  depthwise_rows(job, t, buf + VW - 1, 2 * half, buf + depthwise3s2_rows(wg) * 2 * half, 2,
                 depthwise_block_s2k3);
}

static void depthwise_plane(const void *ctx, i64 t, float *buf) {
  const window_job *job = ctx;
  phase_planes(buf, job->x + t * job->wg.h * job->wg.w, &job->wg, 0.0f);
  depthwise_rows(job, t, buf, job->wg.wq, buf + job->wg.acc, 0, depthwise_block_taps);
}

/* Small planes (at most SMALL_PLANE outputs) go VW channels at a time, channels last: the
 * group's padded input as [Hp][Wp][VW] (zero padding, written once per buffer), the taps as
 * vector multiply-adds over the channels, and the result transposed back through the
 * epilogue. Job t is channel group t % groups of image t / groups. */
#define SMALL_PLANE 256

static i64 small_rows(const window_geom *wg) {
  return (wg->oh - 1) * wg->sh + (wg->kh - 1) * wg->dh + 1;
}

static i64 small_cols(const window_geom *wg) {
  return (wg->ow - 1) * wg->sw + (wg->kw - 1) * wg->dw + 1;
}

static void depthwise_small_group(const void *ctx, i64 t, float *buf) {
  const window_job *job = ctx;
  const window_geom *wg = &job->wg;
  const i64 groups = (job->c + VW - 1) / VW, c0 = (t % groups) * VW, b = t / groups;
  const i64 nc = min64(VW, job->c - c0), taps = wg->kh * wg->kw;
  const i64 hp = small_rows(wg), wp = small_cols(wg), plane = wg->h * wg->w;
  const i64 outs = wg->oh * wg->ow;
  float *in = buf, *out = buf + hp * wp * VW, *wt = out + outs * VW, *column = wt + taps * VW;
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
    for (i64 tap = 0; tap < taps; tap++) wt[tap * VW + j] = job->w[(c0 + j) * taps + tap];
  }
  const i64 step = wg->sw * VW; /* from one output's window to the next one's */
  for (i64 oy = 0; oy < wg->oh; oy++) {
    i64 ox = 0;
    for (; ox + 4 <= wg->ow; ox += 4) { /* four independent sums hide the latency */
      vf acc[4] = {{0}, {0}, {0}, {0}};
      for (i64 ky = 0; ky < wg->kh; ky++) {
        const float *row = in + ((oy * wg->sh + ky * wg->dh) * wp + ox * wg->sw) * VW;
        for (i64 kx = 0; kx < wg->kw; kx++) {
          const vf wv = *(const vf *)(wt + (ky * wg->kw + kx) * VW);
          const float *tap = row + kx * wg->dw * VW;
          for (int j = 0; j < 4; j++) acc[j] += wv * *(const vf *)(tap + j * step);
        }
      }
      for (int j = 0; j < 4; j++) *(vf *)(out + (oy * wg->ow + ox + j) * VW) = acc[j];
    }
    for (; ox < wg->ow; ox++) {
      vf acc = {0};
      for (i64 ky = 0; ky < wg->kh; ky++) {
        const float *row = in + ((oy * wg->sh + ky * wg->dh) * wp + ox * wg->sw) * VW;
        for (i64 kx = 0; kx < wg->kw; kx++)
          acc += *(const vf *)(wt + (ky * wg->kw + kx) * VW) *
                 *(const vf *)(row + kx * wg->dw * VW);
      }
      *(vf *)(out + (oy * wg->ow + ox) * VW) = acc;
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

/* Depthwise convolution, NCHW data, weights [C][KH][KW]. */
int ph_depthwise_nchw(const float *x, const float *w, float *y, const float *bias,
                      const float *res, const i64 *g, const float *bounds) {
  window_job *job = window_job_new(g, g[13]);
  if (!job) return -1;
  job->x = x;
  job->w = w;
  job->y = y;
  job->bias = bias;
  job->res = res;
  job->lo = bounds[0];
  job->hi = bounds[1];
  job->act = activation_of(bounds);
  const window_geom *wg = &job->wg;
  const int nt = num_threads(g[14]);
  int status;
  if (depthwise_same(wg)) {
    status = for_each_plane(g[12] * g[13], nt, depthwise_same_floats(wg), depthwise_same_plane,
                            job);
  } else if (depthwise3s2(wg) && wg->ow >= VW - VW / 4) {
    status = for_each_plane(g[12] * g[13], nt, depthwise3s2_floats(wg), depthwise3s2_plane, job);
  } else if (wg->oh * wg->ow <= SMALL_PLANE) {
    const i64 floats = (small_rows(wg) * small_cols(wg) + wg->oh * wg->ow + wg->kh * wg->kw) * VW +
                       wg->oh * wg->ow;
    status = for_each_plane(g[12] * ((g[13] + VW - 1) / VW), nt, floats, depthwise_small_group,
                            job);
  } else {
    status = for_each_plane(g[12] * g[13], nt, wg->floats, depthwise_plane, job);
  }
  free(job);
  return status;
}

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

/* Max pooling, NCHW: the largest tap of each window (padding never wins; NaN propagates). */
int ph_max_pool_nchw(const float *x, float *y, const i64 *g) {
  window_job *job = window_job_new(g, 1);
  if (!job) return -1;
  job->x = x;
  job->y = y;
  const int status = for_each_plane(g[12], num_threads(g[13]), job->wg.floats,
                                    max_pool_plane, job);
  free(job);
  return status;
}

/* Depthwise convolution, NHWC data, weights [KH][KW][C]: vectors run along the channels. */
void ph_depthwise_nhwc(const float *x, const float *w, float *y, const float *bias,
                       const float *res, const i64 *g, const float *bounds) {
  const i64 h = g[0], wd = g[1], oh = g[2], ow = g[3], kh = g[4], kw = g[5], sh = g[6];
  const i64 sw = g[7], dh = g[8], dw = g[9], pt = g[10], pl = g[11], n = g[12], c = g[13];
  const int nt = num_threads(g[14]);
  const float lo = bounds[0], hi = bounds[1];
  const int act = activation_of(bounds);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (i64 t = 0; t < n * oh; t++) {
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
      epilogue(dst, dst, c, bias, 1, res ? res + (t * ow + ox) * c : NULL, lo, hi);
    }
    if (act) activate(y + t * ow * c, 1, 0, ow * c, act); /* the output row */
  }
}

/* ---------------------------------------------------------------------------------------
 * Dense: y[M][U] = act(clamp(x[M][K] . w[U][K] + bias[U], lo, hi)). Units are split
 * statically over the threads, so each thread reads the same weight rows on every call (they
 * stay in its cache when they fit).
 */
static float hsum(vf v) {
  float s = 0.0f;
  for (int l = 0; l < VW; l++) s += v[l];
  return s;
}

void ph_dense(const float *x, const float *w, float *y, const float *bias, const i64 *g,
              const float *bounds) {
  const i64 m = g[0], k = g[1], u = g[2];
  const int nt = m * k * u < PARALLEL_MIN_WORK ? 1 : num_threads(g[3]);
  const i64 kv = k / (2 * VW) * (2 * VW), quads = (u + 3) / 4;
  const float lo = bounds[0], hi = bounds[1];
  const int act = activation_of(bounds);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (i64 qd = 0; qd < quads; qd++) {
    const i64 u0 = qd * 4, nu = min64(4, u - u0);
    const float *wr[4];
    for (i64 i = 0; i < 4; i++) wr[i] = w + (u0 + min64(i, nu - 1)) * k;
    for (i64 r = 0; r < m; r++) {
      const float *xr = x + r * k;
      vf acc[4][2];
      for (int i = 0; i < 4; i++) acc[i][0] = acc[i][1] = (vf){0};
      for (i64 j = 0; j < kv; j += 2 * VW) {
        const vf x0 = *(const vf *)(xr + j), x1 = *(const vf *)(xr + j + VW);
        for (int i = 0; i < 4; i++) {
          acc[i][0] += *(const vf *)(wr[i] + j) * x0;
          acc[i][1] += *(const vf *)(wr[i] + j + VW) * x1;
        }
      }
      float dots[4];
      for (i64 i = 0; i < nu; i++) {
        dots[i] = hsum(acc[i][0] + acc[i][1]);
        for (i64 j = kv; j < k; j++) dots[i] += wr[i][j] * xr[j];
      }
      epilogue(y + r * u + u0, dots, nu, bias ? bias + u0 : NULL, 1, NULL, lo, hi);
    }
  }
  if (act) { /* afterwards, row by row: the quads are a few units each */
#pragma omp parallel for num_threads(nt) schedule(static)
    for (i64 r = 0; r < m; r++) activate(y + r * u, 1, 0, u, act);
  }
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
 * its rows of a into MR-row panels once (mm_pack_rows). Returns 0, or -1 when memory runs
 * out.
 */
typedef struct {
  i64 batch, m, n, k, sa, ra, ca, sb, rb, cb, packed, sr;
  i64 panels, chunks, blocks, spans, bbatch;
} mm_geom;

static mm_geom mm_geometry(const i64 *g) {
  mm_geom mg = {g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[12],
                0, 0, 0, 0, 0};
  mg.panels = (mg.m + MR - 1) / MR;
  mg.chunks = (mg.panels + MCP - 1) / MCP;
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

/* ap[(q - q0) * K * MR + kk * MR + i] = a(q * MR + i, kk) for every kk < K, zero past
 * row M: the task's rows packed once for all its column blocks. */
static void mm_pack_rows(float *restrict ap, const float *restrict a, const mm_geom *mg,
                         i64 q0, i64 q1) {
  for (i64 q = q0; q < q1; q++) {
    float *panel = ap + (q - q0) * mg->k * MR;
    if (mg->ca == 1 && (q + 1) * MR <= mg->m) { /* a whole panel of rows, each contiguous */
      const float *rows[MR];
      for (i64 i = 0; i < MR; i++) rows[i] = a + (q * MR + i) * mg->ra;
      for (i64 kk = 0; kk < mg->k; kk++)
        for (i64 i = 0; i < MR; i++) panel[kk * MR + i] = rows[i][kk];
      continue;
    }
    for (i64 i = 0; i < MR; i++) {
      const i64 r = q * MR + i;
      if (r >= mg->m) {
        for (i64 kk = 0; kk < mg->k; kk++) panel[kk * MR + i] = 0.0f;
        continue;
      }
      const float *row = a + r * mg->ra;
      if (mg->ca == 1) {
        for (i64 kk = 0; kk < mg->k; kk++) panel[kk * MR + i] = row[kk];
      } else {
        for (i64 kk = 0; kk < mg->k; kk++) panel[kk * MR + i] = row[kk * mg->ca];
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

/* One task: batch item bt, row panels [q0, q1), column blocks [blk0, blk1), in groups of
 * NB blocks. Full tiles go through the epilogue from the registers on the last slab of K;
 * partial ones are left raw in cbuf and stored by mm_store. */
static void mm_task(const mm_geom *mg, const float *a, const float *bp, float *y,
                    const mm_epilogue *ep, float *ap, float *cbuf, i64 bt, i64 q0, i64 q1,
                    i64 blk0, i64 blk1) {
  const float *bpt = bp + (mg->sb ? bt : 0) * mg->blocks * mg->k * NR;
  const i64 base = bt * mg->m * mg->n;
  mm_pack_rows(ap, a + bt * mg->sa, mg, q0, q1);
  for (i64 g0 = blk0; g0 < blk1; g0 += NB) {
    const i64 g1 = min64(blk1, g0 + NB);
    for (i64 k0 = 0; k0 < mg->k; k0 += KC) {
      const i64 kc = min64(KC, mg->k - k0);
      const int last = k0 + kc == mg->k;
      for (i64 blk = g0; blk < g1; blk++) {
        const float *panel = bpt + (blk * mg->k + k0) * NR;
        const i64 n0 = blk * NR;
        for (i64 q = q0; q < q1; q++) {
          const i64 r0 = q * MR;
          tile_out out = {.y = y + base + r0 * mg->n + n0,
                          .res = ep->res ? ep->res + bt * mg->sr + r0 * mg->n + n0 : NULL,
                          .ldy = mg->n, .lo = ep->lo, .hi = ep->hi,
                          .cbias = ep->bias ? ep->bias + n0 : NULL,
                          .cscale = ep->scale ? ep->scale + n0 : NULL, .act = ep->act,
                          .gate = ep->gate ? ep->gate + base + r0 * mg->n + n0 : NULL};
          micro_tile(ap + (q - q0) * mg->k * MR + k0 * MR, min64(MR, mg->m - r0), panel, NR,
                     kc, cbuf + ((blk - g0) * MCP + q - q0) * MR * NR, k0 > 0,
                     last && mg->n - n0 >= NR ? &out : NULL);
        }
      }
    }
    if (g1 * NR <= mg->n) continue;  /* every tile was full */
    const i64 blk = g1 - 1, n0 = blk * NR;
    for (i64 q = q0; q < q1; q++) {
      const i64 r0 = q * MR, at = base + r0 * mg->n + n0;
      mm_store(y + at, cbuf + ((blk - g0) * MCP + q - q0) * MR * NR, min64(MR, mg->m - r0),
               mg->n - n0, mg->n, ep->res ? ep->res + bt * mg->sr + r0 * mg->n + n0 : NULL,
               ep->gate ? ep->gate + at : NULL, n0, ep);
    }
  }
}

int ph_matmul(const float *a, const float *b, float *bp, float *y, const float *bias,
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
  /* Each task packs its rows once, so a span takes all column blocks unless the threads'
   * shares of the tasks would be unequal: then spans of fewer blocks. */
  mg.spans = 1;
  while ((mg.batch * mg.chunks * mg.spans) % nt != 0 && mg.batch * mg.chunks * mg.spans < 8 * nt
         && mg.spans < mg.blocks)
    mg.spans++;
  const i64 per_item = mg.chunks * mg.spans, tasks = mg.batch * per_item;
  int failed = 0;
#pragma omp parallel num_threads(nt)
  {
    float *ap = thread_scratch(MCP * MR * mg.k + NB * MCP * MR * NR);
    float *cbuf = ap ? ap + MCP * MR * mg.k : NULL;
    if (!ap) {
#pragma omp atomic write
      failed = 1;
    }
    if (!mg.packed) {
#pragma omp for schedule(static)
      for (i64 t = 0; t < mg.bbatch * mg.blocks; t++)
        mm_pack_panel(bp, b, &mg, t / mg.blocks, t % mg.blocks);
    }
#pragma omp for schedule(static)
    for (i64 t = 0; t < tasks; t++) {
      if (!ap) continue;
      i64 q0, q1, blk0, blk1;
      const i64 item = t % per_item;
      part_range(mg.blocks, mg.spans, item % mg.spans, &blk0, &blk1);
      part_range(mg.panels, mg.chunks, item / mg.spans, &q0, &q1);
      mm_task(&mg, a, bp, y, &ep, ap, cbuf, t / per_item, q0, q1, blk0, blk1);
    }
  }
  free(own);
  return failed ? -1 : 0;
}

/* ---------------------------------------------------------------------------------------
 * Steps: each kernel in packed form, int32_t f(void *const *args) with its arguments in
 * order (0, or the kernel's failure status), and a runner calling packed functions of this
 * library and of generated units in order, so that a model's native steps run in one call.
 */
typedef int32_t (*ph_packed_fn)(void *const *);

int32_t ph_conv2d_nchw__packed(void *const *a) {
  return ph_conv2d_nchw(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
}
int32_t ph_depthwise_nchw__packed(void *const *a) {
  return ph_depthwise_nchw(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
}
int32_t ph_depthwise_nhwc__packed(void *const *a) {
  ph_depthwise_nhwc(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
  return 0;
}
int32_t ph_max_pool_nchw__packed(void *const *a) { return ph_max_pool_nchw(a[0], a[1], a[2]); }
int32_t ph_dense__packed(void *const *a) {
  ph_dense(a[0], a[1], a[2], a[3], a[4], a[5]);
  return 0;
}
int32_t ph_matmul__packed(void *const *a) {
  return ph_matmul(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]);
}

/* Calls fns[i](args[i]) for i < n in order; on a failure, stores i in *failed and returns
 * the status. */
int32_t ph_run_steps(int64_t n, const ph_packed_fn *fns, void *const *const *args,
                     int64_t *failed) {
  for (int64_t i = 0; i < n; ++i) {
    const int32_t status = fns[i](args[i]);
    if (status != 0) {
      *failed = i;
      return status;
    }
  }
  return 0;
}
