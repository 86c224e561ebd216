/* Producer/consumer handoff for alloc_goals: what a freed block's trip
 * home costs each allocator. Two threads, pinned to the first two CPUs
 * this process may use, each allocate batches of BATCH blocks of 16-256
 * bytes, write them, hand the batch to the other thread and free the
 * batches handed to them (xmalloc's ring). With `touched`, the receiver
 * reads each block's first 8 bytes before freeing it (as smtlab's xmalloc
 * does to verify), so the block's line is in the freeing core's cache
 * when it is freed; with `untouched` it frees blocks it never read.
 * Usage: handoff touched|untouched BLOCKS_PER_THREAD
 * Prints: ns_per_block=X (wall time / blocks of both threads). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BATCH = 100, DEPTH = 16 };

struct inbox {
  pthread_mutex_t m;
  void **q[DEPTH];
  int n;
};

static struct inbox inbox[2];
static long blocks;
static int touched;
static int cpus[2];
static volatile uint64_t sink;

static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void free_batch(void **b) {
  uint64_t sum = 0;
  for (int j = 0; j < BATCH; j++) {
    if (touched) sum += *(volatile uint64_t *)b[j];
    free(b[j]);
  }
  sink += sum;
  free(b);
}

static void *ring(void *arg) {
  int me = (int)(intptr_t)arg, other = 1 - me;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus[me], &one);
  pthread_setaffinity_np(pthread_self(), sizeof one, &one);
  uint64_t s = 88172645463325252ull + (uint64_t)me;
  for (long done = 0; done < blocks; done += BATCH) {
    void **got[DEPTH];
    pthread_mutex_lock(&inbox[me].m);
    int g = inbox[me].n;
    memcpy(got, inbox[me].q, (size_t)g * sizeof got[0]);
    inbox[me].n = 0;
    pthread_mutex_unlock(&inbox[me].m);
    for (int i = 0; i < g; i++) free_batch(got[i]);
    void **b = malloc(BATCH * sizeof *b);
    for (int j = 0; j < BATCH; j++) {
      size_t z = 16 + rng(&s) % 241;
      b[j] = malloc(z);
      memset(b[j], 7, z);
    }
    int handed = 0;
    pthread_mutex_lock(&inbox[other].m);
    if (inbox[other].n < DEPTH) {
      inbox[other].q[inbox[other].n++] = b;
      handed = 1;
    }
    pthread_mutex_unlock(&inbox[other].m);
    if (!handed) free_batch(b);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "touched") && strcmp(argv[1], "untouched"))) {
    fprintf(stderr, "usage: handoff touched|untouched BLOCKS_PER_THREAD\n");
    return 2;
  }
  touched = !strcmp(argv[1], "touched");
  blocks = atol(argv[2]);
  cpu_set_t all;
  if (sched_getaffinity(0, sizeof all, &all) != 0 || CPU_COUNT(&all) < 2) {
    fprintf(stderr, "handoff: needs two CPUs\n");
    return 3;
  }
  for (int c = 0, k = 0; c < CPU_SETSIZE && k < 2; c++)
    if (CPU_ISSET(c, &all)) cpus[k++] = c;
  for (int i = 0; i < 2; i++) pthread_mutex_init(&inbox[i].m, NULL);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, ring, (void *)(intptr_t)i);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &b);
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < inbox[i].n; k++) free_batch(inbox[i].q[k]);
  double sec = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
  printf("ns_per_block=%.2f\n", sec * 1e9 / (2.0 * (double)blocks));
  return 0;
}
