/* A driver for the kernels' thread pool (pool.c) under the sanitizers (test_cpu_pool.py):
 * every task of a job runs exactly once, on a thread whose ph_worker_index() is below the
 * job's thread count and below its task count, and keeps that number for the whole task;
 * a job called from inside a task of a job on the pool runs on that thread alone, as thread
 * 0 (inside a job run on the calling thread alone it may take the pool), and the outer
 * task's number comes back after it; ph_pool_parallel is ph_parallel and ph_pool_threads
 * answers requests; a job of more tasks than the claim word holds runs each of them once
 * too. Then many short jobs back to back, at changing thread and task counts, so that
 * workers arriving late at one job meet the next one being written. Built with pool.c;
 * prints "ok" and exits 0 when every check holds. */
#include "kernels.h"
#include <stdio.h>

#define MAX_TASKS 70000 /* past the claim word's 65535: a job run in groups */

typedef struct {
  int threads;
  i64 tasks;
  _Atomic int runs[MAX_TASKS];
  _Atomic int bad;
  int nested; /* whether each task runs a nested job */
} job_state;

typedef struct {
  int threads, alone; /* the nested job's threads; whether it must run on its caller alone */
  _Atomic int bad;
} nested_state;

static void nested_task(void *arg, i64 t) {
  nested_state *nested = arg;
  const int index = ph_worker_index();
  (void)t;
  if (index < 0 || index >= nested->threads || (nested->alone && index != 0))
    atomic_store(&nested->bad, 1);
}

static void task(void *arg, i64 t) {
  job_state *job = arg;
  const int index = ph_worker_index();
  if (index < 0 || index >= job->threads || index >= job->tasks) atomic_store(&job->bad, 1);
  atomic_fetch_add(&job->runs[t], 1);
  if (job->nested) {
    nested_state nested = {job->threads, job->threads > 1 && job->tasks > 1, 0};
    ph_parallel(3, job->threads, nested_task, &nested);
    if (atomic_load(&nested.bad)) atomic_store(&job->bad, 1);
  }
  for (volatile int spin = 0; spin < (int)(t % 7) * 50; spin++) {
  }
  if (ph_worker_index() != index) atomic_store(&job->bad, 1);
}

static int run_job(job_state *job, int threads, i64 tasks, int nested, int exported) {
  job->threads = threads;
  job->tasks = tasks;
  job->nested = nested;
  atomic_store(&job->bad, 0);
  for (i64 t = 0; t < tasks; t++) atomic_store(&job->runs[t], 0);
  if (exported)
    ph_pool_parallel(tasks, threads, task, job);
  else
    ph_parallel(tasks, threads, task, job);
  int bad = atomic_load(&job->bad);
  for (i64 t = 0; t < tasks; t++) bad |= atomic_load(&job->runs[t]) != 1;
  if (ph_worker_index() != 0) bad = 1;
  if (bad)
    printf("failed: threads %d, tasks %lld, nested %d\n", threads, (long long)tasks, nested);
  return bad;
}

int main(void) {
  static job_state job;
  int bad = 0;
  const i64 counts[] = {0, 1, 2, 3, 7, 64, 1000, MAX_TASKS};
  for (int threads = 1; threads <= 4; threads++)
    for (int c = 0; c < 8; c++)
      for (int nested = 0; nested < 2; nested++)
        bad |= run_job(&job, threads, counts[c], nested, c % 2);
  for (int round = 0; round < 20000; round++) /* short jobs, back to back */
    bad |= run_job(&job, 2 + round % 3, 1 + round % 5, 0, round % 2);
  if (ph_pool_threads(3) != 3 || ph_pool_threads(0) < 1) {
    printf("failed: ph_pool_threads\n");
    bad = 1;
  }
  printf("%s\n", bad ? "FAILED" : "ok");
  return bad;
}
