/* Native float32 kernels of the passhost cpu target, loaded with ctypes: what their
 * translation units (common.c, conv.c, implicit.c, winograd.c, nhwc.c, nchwc.c, window.c,
 * max_pool.c, window_nhwc.c, chain.c, scaled.c, matmul.c, pool.c, steps.c) share. Their
 * parallel loops run on the library's own thread pool (pool.c).
 *
 * Every array is C-contiguous float32. Each kernel takes its static geometry as one int64
 * array (the last entry is the thread count, 0 for all cores) and, where it has an epilogue,
 * `bounds` = {lo, hi, activation}: the result is act(clamp(acc + bias + residual, lo, hi)),
 * where bias (one value per output channel) and residual (shaped like the output) may be
 * NULL, an unbounded side is +-inf, and the activation, a float holding a whole number, is
 * 0.0f (none: act(v) = v), 1.0f (sigmoid) or 2.0f (SiLU: v * sigmoid(v)); see activate().
 * Kernels that allocate return 0, or -1 when memory runs out.
 *
 * The vector code uses GCC/Clang vector extensions, so the same source builds for any
 * instruction set; -march=native picks the widest one.
 */
#ifndef PH_KERNELS_H
#define PH_KERNELS_H

#include <math.h>
#include <stdatomic.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif
#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__AVX512F__)
#define VW 16
#define MR 8
#define MR_MAX 14 /* the tallest micro-tile (the matrix products' row panels, matmul.c) */
#elif defined(__AVX__)
#define VW 8
#define MR 6
#define MR_MAX MR
#else
#define VW 4
#define MR 6
#define MR_MAX MR
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

/* The threads a request means: `requested`, or for 0 (or less) OpenMP's default (every core,
 * or OMP_NUM_THREADS); 1 in a build without OpenMP. The kernels' threads are the pool's
 * (pool.c); OpenMP only answers this question. */
static inline int num_threads(i64 requested) {
#ifdef _OPENMP
  return requested > 0 ? (int)requested : omp_get_max_threads();
#else
  (void)requested;
  return 1;
#endif
}

/* A thread's floating-point control mode (x86's MXCSR, AArch64's FPCR). The pool runs a
 * job's tasks on every thread in the mode of the thread that called it (ph_parallel). */
typedef uint64_t fp_mode;

static inline fp_mode current_fp_mode(void) {
#if defined(__SSE__)
  return _mm_getcsr();
#elif defined(__aarch64__)
  uint64_t mode;
  __asm__ volatile("mrs %0, fpcr" : "=r"(mode));
  return mode;
#else
  return 0;
#endif
}

static inline void set_fp_mode(fp_mode mode) {
#if defined(__SSE__)
  _mm_setcsr((unsigned int)mode);
#elif defined(__aarch64__)
  __asm__ volatile("msr fpcr, %0" : : "r"(mode));
#else
  (void)mode;
#endif
}

/* The kernels' float products run with subnormals flushed to zero, as operands and as
 * results (FTZ and DAZ on x86, FZ on AArch64), as TensorFlow's threads do: every subnormal
 * operand or result costs a microcode assist of a hundred cycles or more. EfficientNet-B0's
 * SiLU leaves a few thousand activations below FLT_MIN (1.2e-38) in its last stage, where a
 * 1x1 convolution then took 1.7 ms instead of 0.3 (a tenth of its inputs subnormal: 25
 * times slower). Each float entry point (convolutions, depthwise, dense, matmul) sets it and
 * restores the caller's mode on return; generated loops keep the caller's (IEEE) mode, so
 * that conversions and elementwise operators keep subnormals exactly. Returns the mode to
 * restore. */
static inline fp_mode flush_subnormals(void) {
  const fp_mode mode = current_fp_mode();
#if defined(__SSE__)
  set_fp_mode(mode | 0x8040u); /* FTZ (bit 15) and DAZ (bit 6) */
#elif defined(__aarch64__)
  set_fp_mode(mode | (1u << 24)); /* FZ */
#endif
  return mode;
}

/* The int status `call` returns, taken with subnormals flushed and the caller's mode
 * restored after it: the body of each float entry point that returns a status. */
#define FLUSHED_STATUS(call)                           \
  __extension__({                                      \
    const fp_mode flushed_mode_ = flush_subnormals();  \
    const int flushed_status_ = (call);                \
    set_fp_mode(flushed_mode_);                        \
    flushed_status_;                                   \
  })

static inline i64 min64(i64 a, i64 b) { return a < b ? a : b; }
static inline i64 max64(i64 a, i64 b) { return a > b ? a : b; }

/* The least work of one pool task, in multiply-adds (~20-40 us), and what copying a float
 * (packing columns, phase planes) counts as. */
#define TASK_MIN_WORK ((i64)1 << 20)
#define COPY_WORK 4

/* How many tasks a parallel loop of `items` items and about `work` multiply-adds in all is
 * split into on nt threads, each task a contiguous range of the items (part_range): one on
 * one thread; else as many as keep TASK_MIN_WORK each, a multiple of nt, at least nt, at
 * most `items`. The pool hands tasks out one at a time, so more tasks than threads let the
 * others take over the share of a thread that starts late, and near-equal tasks, a
 * multiple of nt, give the threads equal shares when they run alike (on two threads the
 * pool's front and back shares are then the two halves); tasks of at least TASK_MIN_WORK
 * keep the cost of a claim (a shared cache line) under a percent. */
static inline i64 split_tasks(i64 items, i64 work, int nt) {
  if (nt <= 1) return min64(items, 1);
  const i64 tasks = (max64(1, work / TASK_MIN_WORK) + nt - 1) / nt * nt;
  return min64(items, tasks);
}

static inline i64 floor_div(i64 a, i64 b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static inline i64 ceil_div(i64 a, i64 b) { return -floor_div(-a, b); }

/* First and last+1 output index o in [0, n) whose tap o * stride + shift lies in [0, size). */
static inline void valid_range(i64 n, i64 stride, i64 shift, i64 size, i64 *lo, i64 *hi) {
  *lo = min64(n, max64(0, ceil_div(-shift, stride)));
  *hi = max64(*lo, min64(n, floor_div(size - 1 - shift, stride) + 1));
}

/* d[j] = s[j * stride] for j < n, with the common strides as constants (they vectorise). */
static inline void strided_copy(float *restrict d, const float *restrict s, i64 n, i64 stride) {
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

/* The larger of a and v, a NaN in either winning (as the max pools take the taps in order). */
static inline vf vmax_nan(vf a, vf v) {
  const vi keep = (a != a) | (a > v);
  return (vf)(((vi)a & keep) | ((vi)v & ~keep));
}

/* The activations of `bounds`[2]. */
enum { ACT_NONE = 0, ACT_SIGMOID = 1, ACT_SILU = 2 };

static inline int activation_of(const float *bounds) { return (int)bounds[2]; }

/* y[r * ld + j] *= gate[r * ld + j] for r < rows, j < n: a gated product after the
 * activation, as SwiGLU's silu(x W) * (x V), on what the caller has just stored. */
static inline void gate_rows(float *y, i64 rows, i64 ld, i64 n, const float *gate) {
  for (i64 r = 0; r < rows; r++)
    for (i64 j = 0; j < n; j++) y[r * ld + j] *= gate[r * ld + j];
}

/* dst[j] = clamp(src[j] + bias[j * bias_step] (+ res[j]), lo, hi) for j < n (no bias when
 * bias is NULL; dst may be src); NaN passes through. Callers apply the activation to what
 * they have stored (activate()), a whole tile, band of rows or plane at a time. */
static inline void epilogue(float *dst, const float *src, i64 n, const float *bias, i64 bias_step,
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
#define LINE_FLOATS (64 / (i64)sizeof(float)) /* floats per cache line */

typedef struct {
  i64 h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
  i64 hq, wq, phase, wide, acc, floats; /* phase rows, cols, size; wide outputs; buffer */
} window_geom;

/* Helpers defined in common.c (hidden: not exported from the library). */
#define PH_HIDDEN __attribute__((visibility("hidden")))
PH_HIDDEN float *aligned_floats(i64 n, int zero);
/* The calling thread's buffers (thread_buffer): the kernels' work buffer (thread_scratch,
 * for the tasks a kernel runs), and what one stage of a kernel made of two leaves for the
 * next: the middle tensor of a chain (chain.c), a scaled convolution's scaled weights or
 * data (scaled.c). */
enum { THREAD_WORK, THREAD_STAGE, THREAD_BUFFERS };
PH_HIDDEN float *thread_buffer(int slot, i64 n);
PH_HIDDEN float *thread_scratch(i64 n);
PH_HIDDEN void activate(float *y, i64 rows, i64 ld, i64 n, int act);
PH_HIDDEN window_geom window_geometry(const i64 *g);
PH_HIDDEN void phase_planes(float *restrict pp, const float *restrict x, const window_geom *wg,
                            float fill);
/* Phase (ry, rx) of phase_planes alone, into `phase` (its Hq x Wq floats). */
PH_HIDDEN void phase_plane(float *restrict phase, const float *restrict x, const window_geom *wg,
                           float fill, i64 ry, i64 rx);
PH_HIDDEN void tap_offsets(i64 *off, const window_geom *wg);

/* The library's entry points (see each one's definition). */
int ph_abi_version(void);
i64 ph_conv2d_nchw_scratch(const i64 *g);
i64 ph_conv2d_nchw_prepared(const i64 *g);
int ph_conv2d_nchw_prepare(const float *w, float *prep, const i64 *g);
int ph_conv2d_nchw(const float *x, const float *prep, float *y, const float *bias,
                   const float *res, float *cols, const i64 *g, const float *bounds);
i64 ph_conv2d_nhwc_scratch(const i64 *g);
i64 ph_conv2d_nhwc_prepared(const i64 *g);
int ph_conv2d_nhwc_prepare(const float *w, float *prep, const i64 *g);
int ph_conv2d_nhwc(const float *x, const float *prep, float *y, const float *bias,
                   const float *res, float *pad, const i64 *g, const float *bounds);
i64 ph_conv2d_nchwc_scratch(const i64 *g);
i64 ph_conv2d_nchwc_prepared(const i64 *g);
int ph_conv2d_nchwc_prepare(const float *w, float *prep, const i64 *g);
int ph_conv2d_nchwc(const float *x, const float *prep, float *y, const float *bias,
                    const float *res, float *cols, const i64 *g, const float *bounds);
i64 ph_conv2d_nchw_scaled_scratch(const i64 *g);
int ph_conv2d_nchw_scaled(const float *x, const float *s, const float *prep, float *y,
                          const float *bias, const float *res, float *cols, const i64 *g,
                          const float *bounds);
int ph_depthwise_nchw(const float *x, const float *w, float *y, const float *bias,
                      const float *res, const i64 *g, const float *bounds);
void ph_depthwise_nhwc(const float *x, const float *w, float *y, const float *bias,
                       const float *res, const i64 *g, const float *bounds);
i64 ph_pointwise_depthwise_prepared(const i64 *g);
int ph_pointwise_depthwise_prepare(const float *w, float *prep, const i64 *g);
int ph_pointwise_depthwise(const float *x, const float *prep, const float *bias,
                           const float *wd, const float *dbias, const float *res, float *y,
                           const i64 *g, const float *bounds, const float *dbounds);
int ph_max_pool_nchw(const float *x, float *y, const i64 *g);
void ph_max_pool_nhwc(const float *x, float *y, const i64 *g);
/* The kernels' thread pool (pool.c): fn(ctx, t) for every t < tasks on the caller and up to
 * threads - 1 workers; the caller never waits for a worker that has not started a task.
 * ph_worker_index() is the number of the thread running a task: 0 on the caller (and in a
 * job run on the calling thread alone), 1 .. threads - 1 on the workers taking part. */
typedef void (*ph_task_fn)(void *ctx, i64 task);
PH_HIDDEN void ph_parallel(i64 tasks, int threads, ph_task_fn fn, void *ctx);
/* Exported, for other native code (generated loops): ph_parallel itself; the threads a
 * request means (num_threads: requested > 0 ? requested : the default); the thread's
 * number in its job. */
void ph_pool_parallel(int64_t tasks, int threads, void (*fn)(void *, int64_t), void *ctx);
int ph_pool_threads(int requested);
int ph_worker_index(void);

i64 ph_dense_packed(const i64 *g);
void ph_dense_pack(const float *w, float *wp, const i64 *g);
void ph_dense(const float *x, const float *w, const float *wp, float *y, const float *bias,
              const i64 *g, const float *bounds);
i64 ph_matmul_packed(const i64 *g);
void ph_matmul_pack_b(const float *b, float *bp, const i64 *g);
int ph_matmul(const float *a, const float *b, float *bp, float *y, const float *bias,
              const float *scale, const float *res, const float *gate, const i64 *g,
              const float *bounds);

/* Item i of n near-equal parts of [0, total): [*lo, *hi). Chunks of output channels are parts
 * of the panels (at most MCP each), spans parts of the column blocks (at most NB each). */
static inline void part_range(i64 total, i64 n, i64 i, i64 *lo, i64 *hi) {
  *lo = total * i / n;
  *hi = total * (i + 1) / n;
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

static inline vf vclamp(vf v, vf lo, vf hi) {
  const vi below = v < lo;
  v = (vf)(((vi)lo & below) | ((vi)v & ~below));
  const vi above = v > hi;
  return (vf)(((vi)hi & above) | ((vi)v & ~above));
}

/* Floats of a packed panel fetched ahead of the row being multiplied: A_AHEAD / MR rows,
 * a kilobyte. A layer's weights are read from memory once per inference, and in a model the
 * hardware prefetcher leaves their first pass waiting on them (ResNet-50 4% faster). */
#define A_AHEAD 256

/* acc = a x b[kc rows][nv * VW], plus c[mr][nv * VW] (rows NR apart) when `accumulate`, where
 * a is a packed panel of mr (<= MR_MAX) rows: a[k * mr + i] is row i, column k, and row k of
 * b starts at b + k * ldb. The result goes raw into c, or, when `out` is set (whole tiles:
 * nv = NV), through the epilogue into out->y (only the first `rows` rows). With `ahead`
 * nonzero, NR floats of each row of b `ahead` floats on (the panel read next, which may lie
 * before b) are fetched into L2 as the sums are taken. Inlined with constant mr and nv. */
static inline __attribute__((always_inline)) void micro_core(
    const float *restrict a, const int mr, i64 rows, const float *restrict b, i64 ldb, i64 kc,
    float *restrict c, int accumulate, const tile_out *out, i64 ahead, const int nv) {
  if (out) /* the next column block's output lines, fetched for writing while the sums are
             * taken: a large output's stores otherwise wait on its lines coming in (2% of
             * MobileNetV2, EfficientNet-B0, ResNet-50 and ConvNeXt-T; a prefetch past the
             * data faults nowhere) */
    for (int i = 0; i < rows; i++)
      for (int v = 0; v < NR; v += 64 / (int)sizeof(float))
        __builtin_prefetch(out->y + i * out->ldy + NR + v, 1, 3);
  if (out && out->res) /* the residual's lines, fetched while the sums are taken */
    for (int i = 0; i < rows; i++)
      for (int v = 0; v < NR; v += 64 / (int)sizeof(float))
        __builtin_prefetch(out->res + i * out->ldy + v, 0, 3);
  vf acc[MR_MAX][NV];
  for (int i = 0; i < mr; i++)
    for (int v = 0; v < nv; v++)
      acc[i][v] = accumulate ? *(const vf *)(c + i * NR + v * VW) : (vf){0};
  for (i64 k = 0; k < kc; k++) {
    __builtin_prefetch(a + k * mr + A_AHEAD, 0, 3);
    const float *bk0 = b + k * ldb;
    if (ahead != 0)
      for (int v = 0; v < NR; v += 64 / (int)sizeof(float))
        __builtin_prefetch(bk0 + ahead + v, 0, 2);
    vf bk[NV];
    for (int v = 0; v < nv; v++) bk[v] = *(const vf *)(bk0 + v * VW);
    for (int i = 0; i < mr; i++) {
      const float s = a[k * mr + i];
      for (int v = 0; v < nv; v++) acc[i][v] += s * bk[v];
    }
  }
  if (!out) {
    for (int i = 0; i < mr; i++)
      for (int v = 0; v < nv; v++) *(vf *)(c + i * NR + v * VW) = acc[i][v];
    return;
  }
  /* With an activation or a gate, the tile is finished in `staged` (L1) and then stored:
   * reading back out->y just stored stalls on its cache misses. */
  float staged[MR_MAX * NR] __attribute__((aligned(64)));
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

static inline void micro_tile(const float *restrict a, i64 rows, const float *restrict b, i64 ldb,
                       i64 kc, float *restrict c, int accumulate, const tile_out *out,
                       i64 ahead) {
  micro_core(a, MR, rows, b, ldb, kc, c, accumulate, out, ahead, NV);
}

/* micro_tile's raw sums of the first VW columns only, for a last block of at most VW columns
 * (at 14x14, 196 = 6 x 32 + 4 columns: half the work of a whole block for the last one). */
static inline void micro_tile_narrow(const float *restrict a, const float *restrict b, i64 ldb,
                                     i64 kc, float *restrict c, int accumulate) {
  micro_core(a, MR, MR, b, ldb, kc, c, accumulate, NULL, 0, 1);
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
  /* the lane numbers 0, 1, ..., VW - 1, as a constant */
#if VW == 16
  const vi lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
#elif VW == 8
  const vi lane = {0, 1, 2, 3, 4, 5, 6, 7};
#else
  const vi lane = {0, 1, 2, 3};
#endif
#pragma GCC unroll 4
  for (int d = VW / 2; d >= 1; d /= 2) {
    /* lane k of the pair's first result takes a[k] or, where k & d, b[k - d]; of the second
     * b[k] or, where not, a[k + d] (indices into a then b), as vector constants */
    const vi high = (lane & d) != 0;
    const vi ma = lane + (high & (VW - d)), mb = lane + (high & VW) + (~high & d);
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

#endif /* PH_KERNELS_H */
