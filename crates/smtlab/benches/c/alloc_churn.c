/* Allocation churn for the huge-page coverage goal of smtalloc: THREADS
 * unpinned threads each keep LIVE objects of 16-1024 bytes alive and
 * replace random ones for SECONDS, then exit; run under LD_PRELOAD with
 * SMTALLOC_STATS=1, smtalloc prints the arenas' huge-page coverage. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { THREADS = 2, LIVE = 200000 };
static double seconds = 2.0;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *worker(void *arg) {
    uint64_t x = 0x9e3779b97f4a7c15ull * (uintptr_t)arg + 1;
    char **live = calloc(LIVE, sizeof *live);
    double end = now() + seconds;
    unsigned long ops = 0;
    while (now() < end) {
        for (int k = 0; k < 4096; k++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            size_t i = x % LIVE, n = 16 + (x >> 32) % 1009;
            free(live[i]);
            live[i] = malloc(n);
            memset(live[i], (int)ops, n);
            ops++;
        }
    }
    for (size_t i = 0; i < LIVE; i++) free(live[i]);
    free(live);
    return (void *)ops;
}

int main(int argc, char **argv) {
    if (argc > 1) seconds = atof(argv[1]);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], 0, worker, (void *)i);
    unsigned long total = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (unsigned long)r;
    }
    printf("%lu\n", total);
    return 0;
}
