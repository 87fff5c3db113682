/* A driver for the kernel library's matrix product under AddressSanitizer and
 * UndefinedBehaviorSanitizer (test_cpu_native_sanitized.py): every combination of sizes
 * around the tiles (and a reduction deeper than a slab), transposes, batches, a broadcast
 * or packed second operand and 1 or 2 threads, checked against a float64 reference with
 * the whole epilogue (each activation in turn, and a gate after it for half the sizes),
 * built with the library's units. Prints "ok" and exits 0 when every result agrees. */
#include "kernels.h"
#include <stdio.h>
static float frand(unsigned *s) { *s = *s * 1103515245u + 12345u; return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f; }
static int check(i64 batch, i64 m, i64 n, i64 k, int ta, int tb, int bcast_b, int bcast_res,
                 int packed, int threads, int act) {
  unsigned seed = (unsigned)(batch * 7 + m * 13 + n * 17 + k * 19 + ta + 2 * tb);
  const i64 ab = batch, bb = bcast_b ? 1 : batch;
  float *a = malloc(sizeof(float) * (size_t)(ab * m * k + 1)), *b = malloc(sizeof(float) * (size_t)(bb * k * n + 1));
  float *y = malloc(sizeof(float) * (size_t)(batch * m * n + 1)), *res = malloc(sizeof(float) * (size_t)(batch * m * n + 1));
  float *bias = malloc(sizeof(float) * (size_t)(n + 1)), *scale = malloc(sizeof(float) * (size_t)(n + 1));
  for (i64 i = 0; i < ab * m * k; i++) a[i] = frand(&seed);
  for (i64 i = 0; i < bb * k * n; i++) b[i] = frand(&seed);
  for (i64 i = 0; i < batch * m * n; i++) res[i] = frand(&seed);
  for (i64 i = 0; i < n; i++) { bias[i] = frand(&seed); scale[i] = frand(&seed); }
  i64 g[13] = {batch, m, n, k, m * k, ta ? 1 : k, ta ? m : 1, bcast_b ? 0 : k * n, tb ? 1 : n, tb ? k : 1, 0, threads, bcast_res ? 0 : m * n};
  float bounds[3] = {-0.75f, 0.75f, (float)act};
  float *bp = NULL;
  if (packed) {
    bp = aligned_floats(ph_matmul_packed(g), 0);
    ph_matmul_pack_b(b, bp, g);
    g[10] = 1;
  }
  float *gate = act && (m + n) % 2 ? res : NULL; /* the residual's values, as a gate too */
  int bad = ph_matmul(a, b, bp, y, bias, scale, res, gate, g, bounds);
  for (i64 t = 0; t < batch && !bad; t++)
    for (i64 r = 0; r < m; r++)
      for (i64 c = 0; c < n; c++) {
        double acc = 0;
        for (i64 kk = 0; kk < k; kk++)
          acc += (double)a[t * g[4] + r * g[5] + kk * g[6]] * b[t * g[7] + kk * g[8] + c * g[9]];
        double v = (acc + bias[c]) * scale[c] + res[(bcast_res ? 0 : t * m * n) + r * n + c];
        v = v < -0.75 ? -0.75 : v > 0.75 ? 0.75 : v;
        if (act) v = (act == ACT_SILU ? v : 1.0) / (1.0 + exp(-v));
        if (gate) v *= gate[(t * m + r) * n + c];
        if (fabs(v - y[(t * m + r) * n + c]) > 1e-3) bad = 1;
      }
  free(a); free(b); free(y); free(res); free(bias); free(scale); free(bp);
  if (bad) printf("mismatch %lld %lld %lld %lld %d %d %d %d %d\n", (long long)batch, (long long)m, (long long)n, (long long)k, ta, tb, bcast_b, packed, act);
  return bad;
}
int main(void) {
  const i64 sizes[] = {1, 7, 8, 9, 33, 257};
  int bad = 0;
  for (int im = 0; im < 6; im++) for (int in = 0; in < 6; in++) for (int ik = 0; ik < 6; ik++)
    for (int flags = 0; flags < 16; flags++)
      bad |= check(1 + (flags & 1) * 2, sizes[im], sizes[in], sizes[ik], flags >> 1 & 1, flags >> 2 & 1,
                   flags >> 3 & 1, (flags >> 1 & 1) ^ (flags >> 2 & 1), (flags & 1) ^ (flags >> 3 & 1),
                   1 + (flags & 1), (im + in + ik + flags) % 3);
  bad |= check(2, 5, 6, 0, 0, 0, 0, 1, 0, 1, ACT_SILU);
  /* a reduction of two slabs (1024 deep), the rows of two chunks, the tiles fetching the
   * next panel ahead of them, at 1 and 2 threads */
  for (int threads = 1; threads <= 2; threads++)
    bad |= check(1, 300, 70, 1100, 0, threads - 1, 0, 0, 1, threads, 0);
  printf("%s\n", bad ? "FAILED" : "ok");
  return bad;
}
