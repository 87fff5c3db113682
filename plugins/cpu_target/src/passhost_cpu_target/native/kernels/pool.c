/* The kernels' own pool of worker threads, for parallel loops a late thread must not hold up.
 *
 * ph_parallel(tasks, threads, fn, ctx) runs fn(ctx, t) for every task t < tasks on the
 * caller and up to threads - 1 workers. Tasks are claimed one at a time from a shared word
 * (the job's generation in the high half, the next task in the low half), so the caller
 * runs every task nobody else has claimed and then waits only for tasks already running:
 * a worker that is asleep, or descheduled because another process has its core, delays
 * nothing (OpenMP's fork-join waits for every thread of the team). Workers spin for a
 * short while after a job, then sleep on a futex. One caller uses the pool at a time; a
 * second caller meanwhile, a call from inside a task, and builds without OpenMP or on
 * systems without futexes run the tasks on the calling thread. */
#include "kernels.h"

#if defined(_OPENMP) && defined(__linux__)
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#define POOL_MAX_WORKERS 255
#if defined(__x86_64__) || defined(__i386__)
#define SPIN_HINT() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define SPIN_HINT() __asm__ volatile("yield")
#else
#define SPIN_HINT() ((void)0)
#endif
/* How many times a worker looks for the next job before it sleeps (~20 us). */
#define POOL_SPINS 2000

static struct {
  pthread_mutex_t busy;                 /* held by the one caller using the pool */
  pthread_mutex_t grow;                 /* held while workers are started */
  _Atomic uint64_t word;                /* generation << 32 | next task */
  _Atomic uint32_t wake;                /* futex: bumped when a job is published */
  _Atomic int sleepers;                 /* workers asleep on `wake` */
  _Atomic i64 done;                     /* tasks of the current job finished */
  _Atomic int workers;                  /* workers started */
  /* the current job, written before its generation is published; atomic (relaxed) because
   * a late worker may read them while the next job is written, then fail to claim */
  _Atomic(ph_task_fn) fn;
  _Atomic(void *) ctx;
  _Atomic i64 tasks;
  _Atomic int helpers;                  /* workers that may take part (threads - 1) */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int in_task;

static void futex_wait(_Atomic uint32_t *addr, uint32_t seen) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *addr) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* Claims and runs tasks of generation `gen` until none is left. */
static void run_tasks(uint64_t gen) {
  for (;;) {
    uint64_t word = atomic_load_explicit(&pool.word, memory_order_acquire);
    if (word >> 32 != gen) return;
    const ph_task_fn fn = atomic_load_explicit(&pool.fn, memory_order_relaxed);
    void *const ctx = atomic_load_explicit(&pool.ctx, memory_order_relaxed);
    const i64 task = (i64)(word & 0xffffffffu);
    if (task >= atomic_load_explicit(&pool.tasks, memory_order_relaxed)) return;
    if (!atomic_compare_exchange_weak_explicit(&pool.word, &word, word + 1,
                                               memory_order_acq_rel, memory_order_relaxed))
      continue;
    fn(ctx, task);
    atomic_fetch_add_explicit(&pool.done, 1, memory_order_release);
  }
}

static void *worker(void *arg) {
  const int index = (int)(intptr_t)arg;
  uint64_t last = 0;
  in_task = 1;
  for (;;) {
    uint64_t gen = last;
    for (int spin = 0; spin < POOL_SPINS && gen == last; spin++) {
      SPIN_HINT();
      gen = atomic_load_explicit(&pool.word, memory_order_acquire) >> 32;
    }
    if (gen == last) {
      const uint32_t seen = atomic_load_explicit(&pool.wake, memory_order_acquire);
      atomic_fetch_add(&pool.sleepers, 1);
      if (atomic_load_explicit(&pool.word, memory_order_acquire) >> 32 == last)
        futex_wait(&pool.wake, seen);
      atomic_fetch_sub(&pool.sleepers, 1);
      continue;
    }
    last = gen;
    if (index < atomic_load_explicit(&pool.helpers, memory_order_relaxed)) run_tasks(gen);
  }
  return NULL;
}

/* Starts workers until there are `want` (fewer if the system refuses threads). */
static int ensure_workers(int want) {
  int have = atomic_load(&pool.workers);
  if (have >= want) return have;
  pthread_mutex_lock(&pool.grow);
  for (have = atomic_load(&pool.workers); have < want; have++) {
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    const int failed = pthread_create(&thread, &attr, worker, (void *)(intptr_t)have);
    pthread_attr_destroy(&attr);
    if (failed) break;
    atomic_store(&pool.workers, have + 1);
  }
  pthread_mutex_unlock(&pool.grow);
  return have;
}

/* A child of fork() has none of the parent's workers: it starts its own. */
static void forget_workers(void) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  pool.busy = fresh;
  pool.grow = fresh;
  atomic_store(&pool.workers, 0);
  atomic_store(&pool.sleepers, 0);
}

static pthread_once_t fork_handler = PTHREAD_ONCE_INIT;
static void install_fork_handler(void) { pthread_atfork(NULL, NULL, forget_workers); }

void ph_parallel(i64 tasks, int threads, ph_task_fn fn, void *ctx) {
  const int helpers = (int)min64(min64(threads, tasks) - 1, POOL_MAX_WORKERS);
  if (helpers <= 0 || in_task || pthread_mutex_trylock(&pool.busy) != 0) {
    for (i64 t = 0; t < tasks; t++) fn(ctx, t);
    return;
  }
  pthread_once(&fork_handler, install_fork_handler);
  /* workers started for an earlier, wider call stay out: num-threads is honoured */
  const int started = ensure_workers(helpers);
  atomic_store_explicit(&pool.helpers, started < helpers ? started : helpers,
                        memory_order_relaxed);
  atomic_store_explicit(&pool.fn, fn, memory_order_relaxed);
  atomic_store_explicit(&pool.ctx, ctx, memory_order_relaxed);
  atomic_store_explicit(&pool.tasks, tasks, memory_order_relaxed);
  atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
  const uint64_t gen = (atomic_load_explicit(&pool.word, memory_order_relaxed) >> 32) + 1;
  atomic_store_explicit(&pool.word, gen << 32, memory_order_release);
  atomic_fetch_add_explicit(&pool.wake, 1, memory_order_release);
  if (atomic_load(&pool.sleepers) > 0) futex_wake_all(&pool.wake);
  in_task = 1;
  run_tasks(gen);
  in_task = 0;
  /* every task is claimed: wait for the ones still running elsewhere */
  while (atomic_load_explicit(&pool.done, memory_order_acquire) < tasks) sched_yield();
  pthread_mutex_unlock(&pool.busy);
}

#else

void ph_parallel(i64 tasks, int threads, ph_task_fn fn, void *ctx) {
  (void)threads;
  for (i64 t = 0; t < tasks; t++) fn(ctx, t);
}

#endif
