/* Plain C reference for smtlab's `sumeuler` workload: sumEuler [0..n] by
 * the nofib definition, euler k = length (filter (relprime k) [1..k-1])
 * with Euclid's remainder gcd on 32-bit unsigned integers (so euler 0 =
 * euler 1 = 0), the same algorithm and integer width as smtlab's.
 * Usage: sumeuler N  ->  prints "result=R seconds=S cpu=C". */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>

static uint32_t gcd(uint32_t a, uint32_t b) {
    while (b != 0) {
        uint32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static uint64_t euler(uint32_t k) {
    uint64_t c = 0;
    for (uint32_t j = 1; j < k; j++)
        c += gcd(k, j) == 1;
    return c;
}

int main(int argc, char **argv) {
    uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 8000;
    struct timespec a, b, ca, cb;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
    uint64_t r = 0;
    for (uint32_t k = 0; k <= n; k++)
        r += euler(k);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("result=%llu seconds=%.6f cpu=%.6f\n", (unsigned long long)r,
           (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9,
           (double)(cb.tv_sec - ca.tv_sec) + (double)(cb.tv_nsec - ca.tv_nsec) * 1e-9);
    return 0;
}
