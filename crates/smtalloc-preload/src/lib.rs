//! `libsmtalloc.so`: the smtalloc allocator as an `LD_PRELOAD` drop-in
//! `malloc` for any program (`LD_PRELOAD=target/release/libsmtalloc.so prog`).
//! All logic lives in the `smtalloc` crate (here imported as
//! `smtalloc_core`, since this library is also called `smtalloc`); this
//! crate only exports the C symbols. See the `smtalloc` crate docs for the design and the
//! `SMTALLOC_*` options.

mod exports;
