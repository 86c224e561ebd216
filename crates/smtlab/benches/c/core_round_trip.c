/* Core-to-core round trip: two threads pinned to CPUs 0 and 1 hand a flag
 * back and forth through one cache line; prints the mean round trip in ns.
 * The benchmarks print it before and after they measure, because on a VM
 * the host may move the two vCPUs between sibling hardware threads, cores
 * of one cache complex and distant cores (80 ns vs 400 ns seen on one AMD
 * EPYC guest), which changes every cross-thread workload by up to 3x. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

enum { TRIPS = 200000 };
static _Alignas(64) atomic_int flag;

static int pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *answer(void *arg) {
    (void)arg;
    if (pin(1) != 0) return (void *)1;
    for (int i = 0; i < TRIPS; i++) {
        while (atomic_load_explicit(&flag, memory_order_acquire) != 1) {
        }
        atomic_store_explicit(&flag, 0, memory_order_release);
    }
    return NULL;
}

int main(void) {
    pthread_t t;
    if (pin(0) != 0 || pthread_create(&t, NULL, answer, NULL) != 0) return 1;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < TRIPS; i++) {
        atomic_store_explicit(&flag, 1, memory_order_release);
        while (atomic_load_explicit(&flag, memory_order_acquire) != 0) {
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    void *res;
    pthread_join(t, &res);
    if (res != NULL) return 1;
    double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    printf("%.0f\n", ns / TRIPS);
    return 0;
}
