/* Weak references to glibc's rseq registration (glibc >= 2.35).
 * Weak, so libsmtalloc.so still loads on an older glibc (the symbols are
 * then NULL and smtalloc falls back to sched_getcpu). Rust has no stable
 * weak linkage, hence this file. */
#include <stddef.h>

extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

/* 1 and *offset = __rseq_offset if glibc registered an rseq area for each
 * thread, 0 otherwise. */
int smtalloc_rseq_offset(ptrdiff_t *offset) {
  if (&__rseq_offset == NULL || &__rseq_size == NULL || __rseq_size == 0) {
    return 0;
  }
  *offset = __rseq_offset;
  return 1;
}
