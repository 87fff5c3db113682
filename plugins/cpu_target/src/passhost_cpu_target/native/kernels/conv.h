/* What the convolution units (conv.c, implicit.c, winograd.c) share: the geometry of a convolution
 * and the Winograd path's entry points. */
#ifndef PH_CONV_H
#define PH_CONV_H

#include "kernels.h"

/* A convolution's geometry g (ph_conv2d_nchw) and what follows from it: channels and outputs
 * per group, the reduction length k, the plane p, and the counts of micro-panels of output
 * channels, chunks of them, column blocks and spans of blocks (see conv.c). */
typedef struct {
  i64 n, c, h, w, o, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, groups;
  i64 cg, og, k, p, panels, chunks, blocks, spans;
  i64 *ox_range, *oy_range;
} conv_geom;

static inline conv_geom conv_geometry(const i64 *g) {
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

static inline int direct_conv(const conv_geom *cv) {
  return cv->kh == 1 && cv->kw == 1 && cv->sh == 1 && cv->sw == 1 && cv->pt == 0 &&
         cv->pl == 0 && cv->oh == cv->h && cv->ow == cv->w;
}

/* A job copying a convolution's input into its scratch, `tasks` shares of it: the
 * subsampled input of a strided 1x1 layer (conv.c), an NHWC image's zero-padded copy of
 * hp x wp positions (nhwc.c). */
typedef struct {
  const conv_geom *cv;
  const float *x;
  float *dst;
  i64 tasks, hp, wp;
} input_copy_job;

/* Whether a 1x1 convolution's data rows (one plane each) start on a vector boundary, so
 * that its column blocks can be read in place: a 14x14 plane's 196 floats put three rows
 * in four across cache lines, every vector load of them split in two. */
static inline int aligned_rows(const conv_geom *cv) { return cv->p % VW == 0; }

/* tile[k * NR + j] = row k's float j, for k < kc and j < NR, where row k starts at
 * src + off[k] (or src + k * ld when off is NULL): a column block's rows of one reduction
 * slab, copied into an aligned tile that the panels of a chunk then share. Rows read in
 * place at any offset split every vector load across two cache lines, once per panel:
 * copied, ResNet-50's 3x3 stride-2 layers took 0.79x-0.90x the time, its 7x7 stem
 * 0.90x-0.94x, its 1x1 layers at 14x14 0.93x-0.95x (C harness, one thread, warm). */
static inline void copy_block(float *restrict tile, const float *restrict src, const i64 *off,
                              i64 ld, i64 kc) {
  for (i64 k = 0; k < kc; k++) {
    const float *row = src + (off ? off[k] : k * ld);
    for (int v = 0; v < NV; v++) *(vf *)(tile + k * NR + v * VW) = *(const vf *)(row + v * VW);
  }
}

/* Packs the m x k matrix w (row stride k) into panels of MR rows for micro_tile: element
 * (r, j) goes to ap[((r / MR) * k + j) * MR + r % MR]; the rows that fill up the last panel
 * are zero. */
PH_HIDDEN void pack_panels(float *restrict ap, const float *restrict w, i64 m, i64 k);

/* For the weights ph_conv2d_nchw_prepare gives an ungrouped direct 1x1 convolution of
 * geometry g, the floats of each of their rows, which run along the reduction (element i
 * then weighs input channel (i / lanes) % K): the packed panels' MR, the transposed form's
 * TO; 0 for any other convolution or path. */
PH_HIDDEN i64 prepared_lanes(const i64 *g);

/* The wide-grid path (implicit.c): whether it fits (conv.c's path_of asks it after
 * Winograd, before the transposed form), the floats of its scratch, and the convolution. */
PH_HIDDEN int use_implicit(const conv_geom *cv);
PH_HIDDEN i64 implicit_floats(const conv_geom *cv);
PH_HIDDEN int conv2d_implicit(const conv_geom *cv, const float *x, const float *wp, float *y,
                              const float *bias, const float *res, float *planes, int nt,
                              float lo, float hi, int act);

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
 * layers), and on planes whose tiles all fit one vector of columns (8x8 outputs or fewer)
 * for layers of more than one chunk of output channels (MCP * MR). Those few tiles would
 * fill a fraction of a micro-tile's columns, so their products are taken transposed
 * (M[xi]^T = V[xi]^T U[xi]^T: transposed_tile, vectors along the output channels, the
 * weights prepared as panels of TO channels per xi), and V, the same for every chunk of
 * output channels, is taken once, in a job of its own, into the scratch. ResNet-50's
 * 512-channel 3x3 layers at 7x7 take 1.53-1.67 ms against the transposed direct form's
 * 2.35-2.54 at one thread, 0.78-0.85 against 1.26 at two; 256 channels at 7x7 0.46
 * against 0.62 and 0.26-0.29 against 0.37, at 8x8 0.46 against 0.79 (C harness, best of
 * 50; with 128 channels, one chunk, the second thread would have nothing to do). */
#define WINO_MIN_OUTPUTS 100

/* Transposed tiles (conv.c): vectors of output channels per tile, output channels per tile
 * (TO), positions per tile at most. */
#define TNV 2
#define TO (TNV * VW)
#define TP_MAX 14

typedef struct {
  i64 th, tw, twv, rows, row_groups; /* tiles down and across (padded to twv), rows per task */
  i64 ts;                            /* columns of a tile row in V and M: twv, or tw packed */
  int transposed;                    /* products as transposed tiles (small planes) */
  window_geom wg;
} wino_geom;

/* Positions per tile: the fewest tiles of at most TP_MAX rows, as even as they come (49:
 * 13, 13, 13, 10). Longer tiles take more multiply-adds per weight loaded and fewer
 * transposes back: 7x7 planes once took 7 tiles of 7 rows, which divide the plane but ran
 * 1.3-1.4x the time (C harness, one thread: MobileNetV2's 160 -> 960 0.138 -> 0.099 ms,
 * ResNet-50's 2048 -> 512 0.82 -> 0.60). */
static inline i64 transposed_rows(i64 p) {
  const i64 tiles = (p + TP_MAX - 1) / TP_MAX;
  return (p + tiles - 1) / tiles;
}

/* tile[i * TO + j] = sum over k < kc of x[k * ldx + i] * wt[k * TO + j] for i < tp (at most
 * TP_MAX), and the O x K matrix w as panels of TO rows transposed for it (conv.c). The tiles
 * of one panel of weights run one after another, each fetching its share of the next panel
 * (next_floats floats from `next`, or none) into L2 as it goes: the weights come from memory
 * once per inference, and the hardware prefetcher, restarting at every page, leaves the first
 * tile of a panel waiting on them (ResNet-50's 1x1 layers at 7x7, data out of cache:
 * 1.19 -> 0.94 ms; its 512-channel Winograd layers 2.98 -> 2.10). */
PH_HIDDEN void transposed_tile(float *tile, const float *wt, const float *x, i64 ldx, i64 kc,
                               i64 tp, const float *next, i64 next_floats);
PH_HIDDEN void pack_transposed(float *restrict wt, const float *restrict w, i64 o, i64 k);

PH_HIDDEN int use_winograd(const conv_geom *cv);
PH_HIDDEN wino_geom wino_geometry(const conv_geom *cv);
/* Rows of each of the 16 prepared weight matrices (output channels, padded to the panels);
 * floats of the `cols` scratch: the phase planes, and a small plane's V. */
PH_HIDDEN i64 wino_rows(const conv_geom *cv);
PH_HIDDEN i64 wino_scratch_floats(const conv_geom *cv);
PH_HIDDEN void wino_weights(float *u, i64 stride, const float *restrict w, i64 n);
PH_HIDDEN int conv2d_winograd(const conv_geom *cv, const float *x, const float *u, float *y,
                              const float *bias, const float *res, float *planes, int nt,
                              float lo, float hi, int act);

/* Winograd through channel blocks (nchwc.c) for NCHW layers whose tiles would leave an
 * eighth or more of the wide products' columns empty (planes of 7 tiles across: 14x14):
 * the data copied into NCHW{VW}c, nchwc.c's Winograd, its products copied back through the
 * epilogue. Against the wide products, 3x3 layers at 14x14 took 0.77x-0.79x the time with
 * 256 channels, 0.73x-0.74x with 128, 0.84x-0.88x with 512, at one and two threads (C
 * harness, alternating); ResNet-50 1.11x-1.16x -> 1.04x-1.09x onnxruntime's time. Whether it
 * takes cv, the floats of its `cols` scratch, its prepared weights (16 * O * C floats), the
 * convolution. */
PH_HIDDEN int use_blocked_winograd(const conv_geom *cv);
PH_HIDDEN i64 blocked_winograd_floats(const conv_geom *cv);
PH_HIDDEN int blocked_winograd_prepare(const float *w, float *prep, const conv_geom *cv);
PH_HIDDEN int conv2d_blocked_winograd(const conv_geom *cv, const float *x, const float *prep,
                                      float *y, const float *bias, const float *res,
                                      float *cols, int nt, float lo, float hi, int act);

#endif /* PH_CONV_H */
