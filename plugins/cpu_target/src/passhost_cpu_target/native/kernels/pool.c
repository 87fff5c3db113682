/* The kernels' own pool of worker threads: every parallel loop of the kernel library runs on
 * it (the library opens no OpenMP parallel region), and generated code can too
 * (ph_pool_parallel), so that one set of threads serves a model.
 *
 * ph_parallel(tasks, threads, fn, ctx) runs fn(ctx, t) for every task t < tasks on the
 * caller and up to threads - 1 workers. Tasks are claimed one at a time from a shared word
 * (the job's generation, then the first and the last unclaimed task): the caller takes
 * tasks from the front, the workers from the back. On two threads each thus runs a
 * contiguous share, and the shares meet where the work balances, which is the static split
 * of a fork-join team (OpenMP's `schedule(static)`) when both threads run alike; but the
 * caller runs every task nobody else has claimed and then waits (yielding its core) only
 * for tasks already running, so a worker that is asleep, or descheduled because another
 * process has its core, delays nothing (a fork-join team waits for every thread). A kernel
 * splits a loop into near-equal contiguous tasks, at least `threads` where the work allows
 * and more while each stays coarse (split_tasks in kernels.h); a phase that must finish
 * before the next one starts (packing, then products) is one call per phase. Workers spin
 * for a short while after a job (~20-50 us), then yield their core to anything else that
 * wants it, looking for the next job between yields, for up to POOL_YIELD_NS, then sleep
 * on a futex. ph_worker_index()
 * numbers the threads of a job (0 the caller, 1 .. threads - 1 the workers taking part),
 * for buffers of one thread each. One caller uses the pool at a time; a second caller
 * meanwhile, a call from inside a task of a job on the pool, and builds without OpenMP (the
 * library's marker of a threaded build) or on systems without futexes run the tasks on the
 * calling thread. Every thread runs a job's tasks in the caller's floating-point mode
 * (fp_mode: the kernels flush subnormals, generated loops do not). */
#define _GNU_SOURCE /* pthread_setname_np */
#include "kernels.h"

/* The calling thread's number in the job it is running (see ph_worker_index). */
static _Thread_local int thread_index;

int ph_worker_index(void) { return thread_index; }

/* fn(ctx, t) for every t < tasks on the calling thread, which counts as thread 0 meanwhile. */
static void run_serially(i64 tasks, ph_task_fn fn, void *ctx) {
  const int index = thread_index;
  thread_index = 0;
  for (i64 t = 0; t < tasks; t++) fn(ctx, t);
  thread_index = index;
}

int ph_pool_threads(int requested) { return num_threads(requested); }

void ph_pool_parallel(int64_t tasks, int threads, void (*fn)(void *, int64_t), void *ctx) {
  ph_parallel(tasks, threads, fn, ctx);
}

#if defined(_OPENMP) && defined(__linux__)
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define POOL_MAX_WORKERS 255
#if defined(__x86_64__) || defined(__i386__)
#define SPIN_HINT() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define SPIN_HINT() __asm__ volatile("yield")
#else
#define SPIN_HINT() ((void)0)
#endif
/* How many times a worker looks for the next job before it yields (~20-50 us). */
#define POOL_SPINS 2000
/* How long a worker then yields its core between looks before it sleeps. A worker asleep
 * leaves its CPU idle, and on virtual machines waking an idle CPU is slow: on the 2-vCPU
 * VM of 2026-11-27, MobileNetV2 at two threads, one inference 0.1 s after the last, took
 * 8-11 ms where a loop of them took 5 (one thread: 7.8), its worker falling asleep 4-23
 * times between the inference's 52 jobs and taking as few as 1 of its 284 tasks; the second
 * of two inferences took 9-11 ms too. Yielding for 1 ms instead: 5.4-6.3 ms (a few 8-10 ms,
 * where the scheduler had put both threads on one CPU), the second 5.3 ms; onnxruntime's
 * 5.1 and 4.8. A yielding worker takes no time that another thread wants. */
#define POOL_YIELD_NS ((i64)1000000)
/* The claim word: the job's generation, then the first and last + 1 of the tasks nobody has
 * claimed yet, 16 bits each; jobs of more tasks run them in groups. */
#define POOL_MAX_TASKS ((i64)0xffff)
#define WORD(gen, front, back) ((gen) << 32 | (uint64_t)(front) << 16 | (uint64_t)(back))
#define FRONT(word) ((i64)((word) >> 16 & 0xffff))
#define BACK(word) ((i64)((word) & 0xffff))

typedef struct {
  ph_task_fn fn;
  void *ctx;
  i64 tasks, per;
} task_group;

/* Tasks [t * per, (t + 1) * per) of a grouped job. */
static void run_group(void *arg, i64 t) {
  const task_group *group = arg;
  const i64 end = min64(group->tasks, (t + 1) * group->per);
  for (i64 task = t * group->per; task < end; task++) group->fn(group->ctx, task);
}

/* The claim word of a closed job (front past back, a state no job is in while it runs), so
 * that no late claim of the job can succeed. */
#define CLOSED(gen) WORD(gen, 0xffff, 0)

static struct {
  pthread_mutex_t busy;                 /* held by the one caller using the pool */
  pthread_mutex_t grow;                 /* held while workers are started */
  _Atomic uint64_t word;                /* generation, front, back (see WORD) */
  _Atomic uint32_t wake;                /* futex: bumped when a job is published */
  _Atomic int sleepers;                 /* workers asleep on `wake` */
  _Atomic i64 done;                     /* tasks of the current job finished */
  _Atomic int workers;                  /* workers started */
  /* The current job, written (release) after the last job was closed and before its own
   * generation is published. A late worker of the last job that reads one of them (acquire)
   * therefore sees the closed word when it tries to claim, and fails. */
  _Atomic(ph_task_fn) fn;
  _Atomic(void *) ctx;
  _Atomic int helpers;                  /* workers that may take part (threads - 1) */
  _Atomic fp_mode mode;                 /* the caller's floating-point mode */
} pool = {.busy = PTHREAD_MUTEX_INITIALIZER, .grow = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int in_task;

/* The monotonic clock in nanoseconds. */
static i64 now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (i64)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void futex_wait(_Atomic uint32_t *addr, uint32_t seen) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *addr) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* Claims and runs tasks of generation `gen` until none is left: the caller from the front,
 * the workers from the back. On two threads each runs a contiguous share, and the shares
 * meet where the work balances: the static split a fork-join team would take when both
 * threads run alike, while a thread that starts late leaves its share to the other. */
static void run_tasks(uint64_t gen, int from_front) {
  for (;;) {
    uint64_t word = atomic_load_explicit(&pool.word, memory_order_acquire);
    if (word >> 32 != gen) return;
    const ph_task_fn fn = atomic_load_explicit(&pool.fn, memory_order_acquire);
    void *const ctx = atomic_load_explicit(&pool.ctx, memory_order_acquire);
    const i64 front = FRONT(word), back = BACK(word);
    if (front >= back) return;
    const i64 task = from_front ? front : back - 1;
    const uint64_t claimed = from_front ? WORD(gen, front + 1, back) : WORD(gen, front, task);
    if (!atomic_compare_exchange_weak_explicit(&pool.word, &word, claimed,
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
  thread_index = index + 1;
  for (;;) {
    uint64_t gen = last;
    for (int spin = 0; spin < POOL_SPINS && gen == last; spin++) {
      SPIN_HINT();
      gen = atomic_load_explicit(&pool.word, memory_order_acquire) >> 32;
    }
    for (const i64 until = gen == last ? now_ns() + POOL_YIELD_NS : 0;
         gen == last && now_ns() < until;) {
      sched_yield();
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
    const fp_mode mode = atomic_load_explicit(&pool.mode, memory_order_acquire);
    if (mode != current_fp_mode()) set_fp_mode(mode);
    /* helpers is this job's (published before its generation) or, when the job is already
     * closed, a later one's: then nothing is left to claim */
    if (index < atomic_load_explicit(&pool.helpers, memory_order_acquire)) run_tasks(gen, 0);
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
    /* what top and debuggers show; named here, so that the name is there when the job that
     * started the worker returns (named by itself, it could still be "python" then) */
    pthread_setname_np(thread, "passhost-pool");
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
  if (tasks > POOL_MAX_TASKS) {
    task_group group = {fn, ctx, tasks, (tasks + POOL_MAX_TASKS - 1) / POOL_MAX_TASKS};
    ph_parallel((tasks + group.per - 1) / group.per, threads, run_group, &group);
    return;
  }
  const int helpers = (int)min64(min64(threads, tasks) - 1, POOL_MAX_WORKERS);
  if (helpers <= 0 || in_task || pthread_mutex_trylock(&pool.busy) != 0) {
    run_serially(tasks, fn, ctx);
    return;
  }
  pthread_once(&fork_handler, install_fork_handler);
  /* workers started for an earlier, wider call stay out: num-threads is honoured, and every
   * thread taking part has a ph_worker_index below `threads` */
  const int started = ensure_workers(helpers);
  atomic_store_explicit(&pool.helpers, started < helpers ? started : helpers,
                        memory_order_release);
  atomic_store_explicit(&pool.fn, fn, memory_order_release);
  atomic_store_explicit(&pool.ctx, ctx, memory_order_release);
  atomic_store_explicit(&pool.mode, current_fp_mode(), memory_order_release);
  atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
  const uint64_t gen = (atomic_load_explicit(&pool.word, memory_order_relaxed) >> 32) + 1;
  atomic_store_explicit(&pool.word, WORD(gen, 0, tasks), memory_order_release);
  atomic_fetch_add_explicit(&pool.wake, 1, memory_order_release);
  if (atomic_load(&pool.sleepers) > 0) futex_wake_all(&pool.wake);
  in_task = 1;
  run_tasks(gen, 1);
  in_task = 0;
  /* every task is claimed: close the job, then wait for the ones still running elsewhere */
  atomic_store_explicit(&pool.word, CLOSED(gen), memory_order_relaxed);
  while (atomic_load_explicit(&pool.done, memory_order_acquire) < tasks) sched_yield();
  pthread_mutex_unlock(&pool.busy);
}

#else

void ph_parallel(i64 tasks, int threads, ph_task_fn fn, void *ctx) {
  (void)threads;
  run_serially(tasks, fn, ctx);
}

#endif
