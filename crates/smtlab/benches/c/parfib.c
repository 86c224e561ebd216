/* Plain C reference for smtlab's `parfib` workload: nfib(n), the nofib
 * definition (nfib n = 1 + nfib (n-1) + nfib (n-2) for n >= 2, else 1),
 * computed sequentially by the same recursion smtlab runs at its leaves.
 * Usage: parfib N  ->  prints "result=R seconds=S cpu=C" (wall and CPU
 * time of the computation alone). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>

static uint64_t nfib(uint32_t n) {
    if (n < 2)
        return 1;
    return 1 + nfib(n - 1) + nfib(n - 2);
}

int main(int argc, char **argv) {
    uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 38;
    struct timespec a, b, ca, cb;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
    uint64_t r = nfib(n);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("result=%llu seconds=%.6f cpu=%.6f\n", (unsigned long long)r,
           (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9,
           (double)(cb.tv_sec - ca.tv_sec) + (double)(cb.tv_nsec - ca.tv_nsec) * 1e-9);
    return 0;
}
