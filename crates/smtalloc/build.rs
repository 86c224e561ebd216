//! Compiles the two C files smtalloc needs: weak references to glibc's
//! `__rseq_offset`/`__rseq_size` (Rust has no stable weak linkage) and one
//! initial-exec thread-local area (Rust has no stable TLS model choice).
fn main() {
    println!("cargo:rerun-if-changed=csrc/rseq.c");
    println!("cargo:rerun-if-changed=csrc/thread_area.c");
    cc::Build::new()
        .file("csrc/rseq.c")
        .file("csrc/thread_area.c")
        .opt_level(2)
        .flag_if_supported("-fPIC")
        .compile("smtalloc_c");
}
