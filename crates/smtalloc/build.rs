//! Compiles the one C file smtalloc needs: weak references to glibc's
//! `__rseq_offset`/`__rseq_size` (Rust has no stable weak linkage).
fn main() {
    println!("cargo:rerun-if-changed=csrc/rseq.c");
    cc::Build::new()
        .file("csrc/rseq.c")
        .opt_level(2)
        .flag_if_supported("-fPIC")
        .compile("smtalloc_rseq");
}
