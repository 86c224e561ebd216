/* glibc-compatibility checks for libsmtalloc.so, run under LD_PRELOAD by
 * tests/c_program.rs. Prints "ALL OK" and exits 0 on success; on the first
 * failure prints the failed check and exits 1. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(c)                                                          \
  do {                                                                    \
    if (!(c)) {                                                           \
      fprintf(stderr, "FAILED %s:%d: %s (errno %d)\n", __FILE__, __LINE__, \
              #c, errno);                                                 \
      exit(1);                                                            \
    }                                                                     \
  } while (0)

/* Keep the compiler from optimizing allocator calls away. */
static void *volatile sink;
static void *(*volatile malloc_fn)(size_t) = malloc;
static void *(*volatile calloc_fn)(size_t, size_t) = calloc;
static void *(*volatile realloc_fn)(void *, size_t) = realloc;

static void zero_and_basics(void) {
  void *a = malloc_fn(0), *b = malloc_fn(0);
  CHECK(a && b && a != b);
  free(a);
  free(b);
  CHECK(malloc_usable_size(NULL) == 0);
  free(NULL);

  void *p = realloc_fn(NULL, 10);
  CHECK(p);
  memset(p, 1, 10);
  CHECK(malloc_usable_size(p) >= 10);
  errno = 0;
  CHECK(realloc_fn(p, 0) == NULL); /* glibc: frees, returns NULL */

  /* errno preserved by free */
  p = malloc_fn(100);
  errno = 1234;
  free(p);
  CHECK(errno == 1234);
  p = malloc_fn(3 << 20);
  errno = 4321;
  free(p);
  CHECK(errno == 4321);
}

static void enomem(void) {
  errno = 0;
  CHECK(malloc_fn(SIZE_MAX) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK(malloc_fn(PTRDIFF_MAX) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK(calloc_fn(SIZE_MAX / 2, 4) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK(calloc_fn((size_t)1 << 33, (size_t)1 << 33) == NULL && errno == ENOMEM);
  char *p = malloc_fn(16);
  strcpy(p, "keep");
  errno = 0;
  CHECK(reallocarray(p, SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
  CHECK(strcmp(p, "keep") == 0);
  char *q = reallocarray(p, 100, 10);
  CHECK(q && strcmp(q, "keep") == 0);
  errno = 0;
  CHECK(realloc_fn(q, SIZE_MAX - 4096) == NULL && errno == ENOMEM);
  CHECK(strcmp(q, "keep") == 0);
  free(q);
}

static void alignment(void) {
  for (size_t al = sizeof(void *); al <= ((size_t)1 << 30); al <<= 1) {
    void *p = NULL;
    size_t sz = al >= (1 << 20) ? 4096 : al * 3 + 1;
    CHECK(posix_memalign(&p, al, sz) == 0 && p);
    CHECK(((uintptr_t)p & (al - 1)) == 0);
    memset(p, 0x5a, sz);
    CHECK(malloc_usable_size(p) >= sz);
    free(p);
    void *q = aligned_alloc(al, al);
    CHECK(q && ((uintptr_t)q & (al - 1)) == 0);
    free(q);
    void *r = memalign(al, 10);
    CHECK(r && ((uintptr_t)r & (al - 1)) == 0);
    free(r);
  }
  void *p = (void *)1;
  CHECK(posix_memalign(&p, 24, 10) == EINVAL);
  CHECK(posix_memalign(&p, 4, 10) == EINVAL);
  CHECK(posix_memalign(&p, 0, 10) == EINVAL);
  CHECK(p == (void *)1);
  CHECK(posix_memalign(&p, 64, 0) == 0 && p);
  free(p);
  void *m = memalign(48, 10); /* glibc rounds up to 64 */
  CHECK(m && ((uintptr_t)m & 63) == 0);
  free(m);
  long ps = sysconf(_SC_PAGESIZE);
  void *v = valloc(10);
  CHECK(v && ((uintptr_t)v & (ps - 1)) == 0);
  free(v);
  void *pv = pvalloc(1);
  CHECK(pv && ((uintptr_t)pv & (ps - 1)) == 0 && malloc_usable_size(pv) >= (size_t)ps);
  free(pv);
}

static void calloc_zeroes(void) {
  for (int round = 0; round < 50; round++) {
    size_t sizes[] = {8, 24, 100, 1000, 5000, 70000, 500000, 1 << 20, 3 << 20};
    for (unsigned i = 0; i < sizeof sizes / sizeof *sizes; i++) {
      unsigned char *d = malloc_fn(sizes[i]);
      memset(d, 0xab, sizes[i]);
      free(d);
      unsigned char *z = calloc_fn(1, sizes[i]);
      CHECK(z);
      for (size_t k = 0; k < sizes[i]; k += 61) CHECK(z[k] == 0);
      CHECK(z[sizes[i] - 1] == 0);
      free(z);
    }
  }
}

static void realloc_moves(void) {
  unsigned char *p = malloc_fn(10);
  for (int i = 0; i < 10; i++) p[i] = (unsigned char)i;
  size_t sizes[] = {100, 5000, 200000, 1 << 20, 5 << 20, 9 << 20, 3 << 20, 64, 7};
  size_t have = 10;
  for (unsigned s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    p = realloc_fn(p, sizes[s]);
    CHECK(p);
    size_t keep = have < sizes[s] ? have : sizes[s];
    for (size_t i = 0; i < keep; i++) CHECK(p[i] == (unsigned char)(i * 7 % 251) || (i < 10 && p[i] == i));
    for (size_t i = 0; i < sizes[s]; i++) p[i] = (unsigned char)(i * 7 % 251);
    have = sizes[s];
  }
  free(p);
}

/* --- threads ------------------------------------------------------------ */

#define NPTR 2000
static void *from_exited[4][NPTR];

static void *alloc_and_exit(void *arg) {
  void **slot = arg;
  for (int i = 0; i < NPTR; i++) {
    slot[i] = malloc_fn((size_t)(i % 300) * 8 + 1);
    memset(slot[i], i, 1);
  }
  return NULL;
}

static void threads_exit_then_free(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, alloc_and_exit, from_exited[i]);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 4; i++)
    for (int k = 0; k < NPTR; k++) free(from_exited[i][k]);
}

static volatile int stop_churn;
/* Blocks the churn threads swap: each one frees what another (pinned to
 * another CPU) allocated, so fork meets cross-core frees in flight. */
static void *volatile churn_slots[64];

static void pin_to(int i) {
  cpu_set_t all, one;
  CPU_ZERO(&one);
  if (sched_getaffinity(0, sizeof all, &all) != 0) return;
  int n = CPU_COUNT(&all), k = 0;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &all) && k++ == i % n) {
      CPU_SET(c, &one);
      sched_setaffinity(0, sizeof one, &one);
      return;
    }
}

static void *churn(void *arg) {
  pin_to((int)(long)arg);
  unsigned x = 12345 + (unsigned)(long)arg;
  while (!stop_churn) {
    x = x * 1103515245 + 12345;
    unsigned i = (x >> 8) % 64;
    void *p = (x & 1) ? malloc_fn((x >> 12) % 4096 + 1) : calloc_fn(1, (x >> 12) % 300 + 1);
    free(__atomic_exchange_n(&churn_slots[i], p, __ATOMIC_ACQ_REL));
  }
  return NULL;
}

static void *child_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < 1000; i++) free(malloc_fn(i + 1));
  return NULL;
}

static void fork_while_threads_allocate(void) {
  pthread_t t[3];
  stop_churn = 0;
  for (long i = 0; i < 3; i++) pthread_create(&t[i], NULL, churn, (void *)i);
  for (int f = 0; f < 30; f++) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      void *ps[500];
      for (int i = 0; i < 500; i++) ps[i] = malloc_fn((size_t)i * 13 + 1);
      for (int i = 0; i < 500; i++) ps[i] = realloc_fn(ps[i], (size_t)i * 29 + 1);
      for (int i = 0; i < 500; i++) free(ps[i]);
      free(malloc_fn(2 << 20));
      /* Blocks the parent's churn threads (gone here) allocated on their
       * CPUs: frees from the child, some cross-core, while the slots of
       * those threads' outboxes are taken back. */
      for (int i = 0; i < 64; i++) {
        free(churn_slots[i]);
        churn_slots[i] = NULL;
      }
      pthread_t ct;
      if (pthread_create(&ct, NULL, child_thread, NULL) != 0) _exit(3);
      pthread_join(ct, NULL);
      _exit(0);
    }
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  stop_churn = 1;
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 64; i++) free(churn_slots[i]);
}

/* Producer/consumer: blocks allocated on one thread (core), freed on
 * another; the two are pinned to different CPUs when there are two. Each
 * block carries its number, checked before the free, so a block handed
 * out twice (a lost or doubled cross-core free) shows. */
static void *volatile handoff[256];
static unsigned char seen[20000];
static void *consumer(void *arg) {
  (void)arg;
  pin_to(1);
  int got = 0;
  while (got < 20000) {
    for (int i = 0; i < 256; i++) {
      int *p = __atomic_exchange_n(&handoff[i], NULL, __ATOMIC_ACQ_REL);
      if (p) {
        CHECK(p[0] >= 0 && p[0] < 20000 && p[1] == ~p[0]);
        CHECK(!seen[p[0]]);
        seen[p[0]] = 1;
        p[0] = p[1] = 0x5a5a5a5a;
        free(p);
        got++;
      }
    }
  }
  return NULL;
}

static void cross_thread_free(void) {
  cpu_set_t saved;
  CHECK(sched_getaffinity(0, sizeof saved, &saved) == 0);
  pin_to(0);
  pthread_t c;
  pthread_create(&c, NULL, consumer, NULL);
  for (int n = 0; n < 20000; n++) {
    int *p = malloc_fn((size_t)(n % 700) + 8);
    CHECK(p != NULL);
    /* A fresh block must not still hold a consumer's scribble. */
    p[0] = n;
    p[1] = ~n;
    int i = n % 256;
    while (__atomic_load_n(&handoff[i], __ATOMIC_ACQUIRE) != NULL) sched_yield();
    __atomic_store_n(&handoff[i], p, __ATOMIC_RELEASE);
  }
  pthread_join(c, NULL);
  for (int n = 0; n < 20000; n++) CHECK(seen[n]);
  CHECK(sched_setaffinity(0, sizeof saved, &saved) == 0);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "stats") == 0) {
    /* Allocate on every CPU we may use, then exit (stats print at exit). */
    threads_exit_then_free();
    /* Outgrow one core's arena (run with SMTALLOC_RESERVE_PER_CORE=32MiB):
     * pinned to one CPU, 80 MiB of small blocks. */
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
    enum { N = 80 * 1024 };
    char **blocks = malloc(N * sizeof *blocks);
    for (int i = 0; i < N; i++) {
      blocks[i] = malloc_fn(1000);
      CHECK(blocks[i]);
      memset(blocks[i], i & 0xff, 1000);
    }
    for (int i = 0; i < N; i++) {
      CHECK((unsigned char)blocks[i][999] == (i & 0xff));
      free(blocks[i]);
    }
    free(blocks);
    void (*print)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "smtalloc_stats_print");
    CHECK(print != NULL);
    printf("stats mode done\n");
    return 0;
  }
  /* Is the preload in effect? */
  CHECK(dlsym(RTLD_DEFAULT, "smtalloc_stats_print") != NULL);
  zero_and_basics();
  enomem();
  alignment();
  calloc_zeroes();
  realloc_moves();
  threads_exit_then_free();
  cross_thread_free();
  fork_while_threads_allocate();
  printf("ALL OK\n");
  return 0;
}
