/* Reference STREAM triad for smtlab's stream_vs_reference benchmark.
 *
 * Usage: triad SIZE_BYTES SECONDS
 * SIZE_BYTES covers the three arrays together, as smtlab's `size` does.
 * Single-threaded, arrays 64-byte aligned and first touched here, the same
 * kernel a[i] = b[i] + s*c[i] as smtlab's `stream`, the same counting: 24
 * bytes per element (2 reads + 1 write; write-allocate not counted, as in
 * STREAM). One untimed pass warms up (page faults, TLB), then whole passes
 * run for SECONDS; it prints the mean bandwidth over that window in GB/s
 * (1e9 bytes/s), the figure smtlab reports for a fixed-time sample, and the
 * best single pass, STREAM's own figure, for reference.
 *
 * Build: cc -O3 -march=native triad.c -o triad
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Not inlined into main, so the compiler cannot see that passes repeat the
 * same values and drop some of them. */
__attribute__((noinline)) static void triad(double *restrict a, const double *restrict b,
                                            const double *restrict c, double s, size_t n) {
    for (size_t i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s SIZE_BYTES SECONDS\n", argv[0]);
        return 2;
    }
    size_t n = strtoull(argv[1], 0, 10) / 24 / 8 * 8;
    double seconds = atof(argv[2]);
    double *a = aligned_alloc(64, n * 8), *b = aligned_alloc(64, n * 8),
           *c = aligned_alloc(64, n * 8);
    if (!a || !b || !c || n == 0) {
        fprintf(stderr, "allocation failed\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        a[i] = -1.0;
        b[i] = (double)(i & 0xfff);
        c[i] = (double)((i * 7) & 0x3ff);
    }
    triad(a, b, c, 3.0, n);
    double best = 1e30, t0 = now(), t = t0;
    long passes = 0;
    while (t - t0 < seconds) {
        triad(a, b, c, (double)(passes % 1024 + 1), n);
        double t1 = now();
        if (t1 - t < best)
            best = t1 - t;
        t = t1;
        passes++;
    }
    /* Check the last pass, so the work cannot be optimised away unseen. */
    double s = (double)((passes - 1) % 1024 + 1);
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i] + s * c[i]) {
            fprintf(stderr, "wrong result at %zu\n", i);
            return 1;
        }
    double bytes = 24.0 * n;
    printf("%.4f %.4f\n", bytes * passes / (t - t0) / 1e9, bytes / best / 1e9);
    return 0;
}
