/* Plain C reference for smtlab's `mandel` workload: escape-time Mandelbrot
 * over [-2, 1] x [-1.5, 1.5] on a W x H grid, at most ITERS iterations of
 * z = z^2 + c while |z|^2 <= 4, and the same order-independent checksum:
 * each row's sum of count * (x + 1), mixed with its row number by
 * splitmix64, summed over rows (mod 2^64).
 * Usage: mandel W H ITERS  ->  prints "result=R seconds=S cpu=C". */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>

static uint64_t mix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t row(uint32_t y, uint32_t w, uint32_t h, uint32_t iters) {
    double dx = 3.0 / (double)w, dy = 3.0 / (double)h;
    double ci = -1.5 + ((double)y + 0.5) * dy;
    uint64_t sum = 0;
    for (uint32_t x = 0; x < w; x++) {
        double cr = -2.0 + ((double)x + 0.5) * dx;
        double zr = 0.0, zi = 0.0, zr2 = 0.0, zi2 = 0.0;
        uint32_t i = 0;
        while (i < iters && zr2 + zi2 <= 4.0) {
            zi = 2.0 * zr * zi + ci;
            zr = zr2 - zi2 + cr;
            zr2 = zr * zr;
            zi2 = zi * zi;
            i++;
        }
        sum += (uint64_t)i * (uint64_t)(x + 1);
    }
    return mix(((uint64_t)y << 40) ^ sum);
}

int main(int argc, char **argv) {
    uint32_t w = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1024;
    uint32_t h = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 1024;
    uint32_t iters = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 1000;
    struct timespec a, b, ca, cb;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
    uint64_t r = 0;
    for (uint32_t y = 0; y < h; y++)
        r += row(y, w, h, iters);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("result=%llu seconds=%.6f cpu=%.6f\n", (unsigned long long)r,
           (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9,
           (double)(cb.tv_sec - ca.tv_sec) + (double)(cb.tv_nsec - ca.tv_nsec) * 1e-9);
    return 0;
}
