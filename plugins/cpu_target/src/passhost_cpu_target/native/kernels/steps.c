/* Packed forms of the kernels and the runner of native steps; the ABI version. */
#include "kernels.h"

#include <time.h>

/* Bumped whenever a signature changes; the loader refuses a library with another value. */
int ph_abi_version(void) { return 13; }

/* ---------------------------------------------------------------------------------------
 * Steps: each kernel in packed form, int32_t f(void *const *args) with its arguments in
 * order (0, or the kernel's failure status), and a runner calling packed functions of this
 * library and of generated units in order, so that a model's native steps run in one call.
 */
typedef int32_t (*ph_packed_fn)(void *const *);

int32_t ph_conv2d_nchw__packed(void *const *a) {
  return ph_conv2d_nchw(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
}
int32_t ph_conv2d_nhwc__packed(void *const *a) {
  return ph_conv2d_nhwc(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
}
int32_t ph_conv2d_nchwc__packed(void *const *a) {
  return ph_conv2d_nchwc(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
}
int32_t ph_conv2d_nchw_scaled__packed(void *const *a) {
  return ph_conv2d_nchw_scaled(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]);
}
int32_t ph_depthwise_nchw__packed(void *const *a) {
  return ph_depthwise_nchw(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
}
int32_t ph_depthwise_nhwc__packed(void *const *a) {
  ph_depthwise_nhwc(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
  return 0;
}
int32_t ph_pointwise_depthwise__packed(void *const *a) {
  return ph_pointwise_depthwise(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]);
}
int32_t ph_max_pool_nchw__packed(void *const *a) { return ph_max_pool_nchw(a[0], a[1], a[2]); }
int32_t ph_max_pool_nhwc__packed(void *const *a) {
  ph_max_pool_nhwc(a[0], a[1], a[2]);
  return 0;
}
int32_t ph_dense__packed(void *const *a) {
  ph_dense(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
  return 0;
}
int32_t ph_matmul__packed(void *const *a) {
  return ph_matmul(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]);
}

/* Calls fns[i](args[i]) for i < n in order, adding each call's wall time in seconds to
 * seconds[i] unless `seconds` is NULL (a profile of the run itself: no caller between the
 * steps); on a failure, stores i in *failed and returns the status. */
int32_t ph_run_steps_timed(int64_t n, const ph_packed_fn *fns, void *const *const *args,
                           int64_t *failed, double *seconds) {
  struct timespec before, after;
  if (seconds) clock_gettime(CLOCK_MONOTONIC, &before);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t status = fns[i](args[i]);
    if (seconds) {
      clock_gettime(CLOCK_MONOTONIC, &after);
      seconds[i] += (double)(after.tv_sec - before.tv_sec) +
                    1e-9 * (double)(after.tv_nsec - before.tv_nsec);
      before = after;
    }
    if (status != 0) {
      *failed = i;
      return status;
    }
  }
  return 0;
}

/* ph_run_steps_timed, untimed. */
int32_t ph_run_steps(int64_t n, const ph_packed_fn *fns, void *const *const *args,
                     int64_t *failed) {
  return ph_run_steps_timed(n, fns, args, failed, NULL);
}

