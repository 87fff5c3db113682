/* A 1x1 convolution (NCHW, stride 1, unpadded, ungrouped) of its data scaled per channel,
 * y = conv(x * s) with s one value per image and channel, as one kernel: squeeze-and-
 * excitation's gate times the data, then the 1x1 layer projecting it (EfficientNet-B0's
 * blocks end so; FuseOps groups the two). Apart, the product passes over the data once
 * more, from memory to memory. The convolution is linear, conv(x * s) = conv'(x) with the
 * weights' input channel k scaled by s[k], so for each image this kernel scales whichever
 * is smaller, the prepared weights (O x C products) or the data (C x H x W), into a buffer
 * of the calling thread (every such kernel reuses it, warm in the caches), then runs
 * ph_conv2d_nchw on the image. The weights are the smaller but on planes of fewer
 * positions than output channels (7x7). In EfficientNet-B0, against the product and the
 * layer as two steps (timed inside the model): its first three blocks' 0.55x-0.65x the
 * time at one thread, and 0.60 ms less in all (of 12.9), 0.28 ms at two threads (of 9.4);
 * at 14x14, where the weights are nearly as many as the data, as long as before.
 *
 * g: ph_conv2d_nchw's geometry, then the scale's stride between images (0: one scale for
 * every image, else C). */
#include "conv.h"

/* Geometry g's image count set to one (ph_conv2d_nchw's first 17 values). */
static void image_geometry(const i64 *g, i64 *one) {
  memcpy(one, g, 17 * sizeof(i64));
  one[0] = 1;
}

/* Whether the prepared weights are scaled (else the data): they take fewer floats, and
 * their rows run along the reduction (prepared_lanes). */
static int scales_weights(const i64 *one) {
  return prepared_lanes(one) > 0 && ph_conv2d_nchw_prepared(one) < one[1] * one[2] * one[3];
}

/* Floats of the calling thread's buffer: the scaled weights or one image's scaled data. */
static i64 scaled_floats(const i64 *one) {
  return scales_weights(one) ? ph_conv2d_nchw_prepared(one) : one[1] * one[2] * one[3];
}

/* Floats of the `cols` scratch ph_conv2d_nchw_scaled needs for geometry g (0: none): one
 * image's convolution's. */
i64 ph_conv2d_nchw_scaled_scratch(const i64 *g) {
  i64 one[17];
  image_geometry(g, one);
  return ph_conv2d_nchw_scratch(one);
}

typedef struct {
  const float *src, *scale;
  float *dst;
  i64 rows, lanes, k, tasks;
} scale_job;

/* Task t of scaling: a contiguous share of the rows of `lanes` floats, row r times
 * scale[r % k]. */
static void scale_rows(void *arg, i64 t) {
  const scale_job *job = arg;
  i64 r0, r1;
  part_range(job->rows, job->tasks, t, &r0, &r1);
  for (i64 r = r0; r < r1; r++) {
    const float m = job->scale[r % job->k];
    const float *restrict src = job->src + r * job->lanes;
    float *restrict dst = job->dst + r * job->lanes;
    for (i64 j = 0; j < job->lanes; j++) dst[j] = src[j] * m;
  }
}

/* rows x lanes floats of src into dst, row r times scale[r % k], on nt threads. */
static void scale(float *dst, const float *src, const float *s, i64 rows, i64 lanes, i64 k,
                  int nt) {
  scale_job job = {.src = src, .scale = s, .dst = dst, .rows = rows, .lanes = lanes, .k = k,
                   .tasks = split_tasks(rows, rows * lanes * COPY_WORK, nt)};
  ph_parallel(job.tasks, nt, scale_rows, &job);
}

static int conv2d_nchw_scaled(const float *x, const float *s, const float *prep, float *y,
                              const float *bias, const float *res, float *cols, const i64 *g,
                              const float *bounds) {
  i64 one[17];
  image_geometry(g, one);
  const i64 c = g[1], p = g[2] * g[3], o = g[4], weights = scales_weights(one);
  const int nt = num_threads(g[16]);
  float *staged = thread_buffer(THREAD_STAGE, scaled_floats(one));
  if (!staged) return -1;
  for (i64 b = 0; b < g[0]; b++) {
    const float *sb = s + b * g[17], *xb = x + b * c * p;
    if (weights) {
      const i64 lanes = prepared_lanes(one);
      scale(staged, prep, sb, ph_conv2d_nchw_prepared(one) / lanes, lanes, c, nt);
    } else {
      scale(staged, xb, sb, c, p, c, nt);
    }
    const int status = ph_conv2d_nchw(weights ? xb : staged, weights ? staged : prep,
                                      y + b * o * p, bias, res ? res + b * o * p : NULL, cols,
                                      one, bounds);
    if (status) return status;
  }
  return 0;
}

/* The convolution of x scaled by s ([n][c], or [c] for every image: g[17]) with weights
 * prepared by ph_conv2d_nchw_prepare, subnormals flushed. Returns 0, or -1 when memory runs
 * out. */
int ph_conv2d_nchw_scaled(const float *x, const float *s, const float *prep, float *y,
                          const float *bias, const float *res, float *cols, const i64 *g,
                          const float *bounds) {
  return FLUSHED_STATUS(conv2d_nchw_scaled(x, s, prep, y, bias, res, cols, g, bounds));
}
