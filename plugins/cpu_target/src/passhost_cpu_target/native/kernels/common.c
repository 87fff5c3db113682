/* Shared helpers of the native kernels: aligned buffers, the activations, window planes.
 * The build puts passhost.backend.vector_math's C source (ph_sigmoid_f32, ...) before this
 * file, so that the activations round as the compiled loops do. */
#include "kernels.h"

/* n floats aligned to a cache line (so that no vector access splits across two), zeroed
 * when `zero`; NULL when memory runs out. Released with free(). */
float *aligned_floats(i64 n, int zero) {
  const size_t bytes = ((size_t)n * sizeof(float) + 63) / 64 * 64;
  float *p = aligned_alloc(64, bytes ? bytes : 64);
  if (p && zero) memset(p, 0, bytes);
  return p;
}

/* Buffer `slot` (< THREAD_BUFFERS) of at least n floats owned by the calling thread, kept
 * for its next call (the pool's threads live as long as the process: allocating and
 * releasing 128 KB on every call went through mmap and munmap, whose TLB shootdowns stalled
 * the other thread); NULL when memory runs out. */
float *thread_buffer(int slot, i64 n) {
  static __thread float *buffer[THREAD_BUFFERS];
  static __thread i64 size[THREAD_BUFFERS];
  if (size[slot] < n) {
    free(buffer[slot]);
    buffer[slot] = aligned_floats(n, 0);
    size[slot] = buffer[slot] ? n : 0;
  }
  return buffer[slot];
}

float *thread_scratch(i64 n) { return thread_buffer(THREAD_WORK, n); }

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
void activate(float *y, i64 rows, i64 ld, i64 n, int act) {
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

window_geom window_geometry(const i64 *g) {
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

void phase_plane(float *restrict phase, const float *restrict x, const window_geom *wg,
                 float fill, i64 ry, i64 rx) {
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

void phase_planes(float *restrict pp, const float *restrict x, const window_geom *wg,
                  float fill) {
  for (i64 ry = 0; ry < wg->sh; ry++)
    for (i64 rx = 0; rx < wg->sw; rx++)
      phase_plane(pp + (ry * wg->sw + rx) * wg->phase, x, wg, fill, ry, rx);
}

/* Offset in the phase planes of tap t = ky * kw + kx, for wide output 0. */
void tap_offsets(i64 *off, const window_geom *wg) {
  for (i64 ky = 0; ky < wg->kh; ky++)
    for (i64 kx = 0; kx < wg->kw; kx++) {
      const i64 row = ky * wg->dh, col = kx * wg->dw;
      off[ky * wg->kw + kx] = ((row % wg->sh) * wg->sw + col % wg->sw) * wg->phase +
                              row / wg->sh * wg->wq + col / wg->sw;
    }
}

