/* smtalloc's initial-exec thread-local area: the calling thread's outbox
 * slot (src/sys/thread_area.rs lays it out).
 * In C because Rust has no stable way to choose the TLS model: a Rust
 * thread_local in libsmtalloc.so would be general-dynamic, one call to
 * __tls_get_addr per access; initial-exec is a fixed offset from the
 * thread pointer, read like glibc's __rseq_offset. libsmtalloc.so is
 * preloaded (or linked into a program), never dlopen'ed, so its static
 * TLS is reserved at startup. */
#include <stddef.h>

#define SMTALLOC_THREAD_AREA 64

static __thread unsigned char smtalloc_thread_area_bytes[SMTALLOC_THREAD_AREA]
    __attribute__((aligned(64), tls_model("initial-exec")));

/* The calling thread's area (its offset from the thread pointer is the
 * same in every thread) and its size in *len. */
void *smtalloc_thread_area(size_t *len) {
  *len = SMTALLOC_THREAD_AREA;
  return smtalloc_thread_area_bytes;
}
