//! Compiles `preload/pin_preload.c` into `$OUT_DIR/libsmtlab_pin.so`, the
//! LD_PRELOAD library that `smtlab pin` embeds (see `src/pin.rs` and the
//! comment at the top of the C file for why it is C).
//!
//! The `cc` crate only builds static archives, so we borrow its compiler
//! discovery (CC, CFLAGS, target flags, cross compilers) and link the shared
//! object ourselves.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = "preload/pin_preload.c";
    println!("cargo:rerun-if-changed={src}");
    println!("cargo:rerun-if-changed=build.rs");

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let so = out.join("libsmtlab_pin.so");

    let compiler = cc::Build::new()
        .warnings(true)
        .extra_warnings(true)
        .get_compiler();
    let mut cmd: Command = compiler.to_command();
    cmd.args([
        "-std=gnu11",
        "-shared",
        "-fPIC",
        "-O2",
        "-fvisibility=hidden",
        "-s",
        "-o",
    ])
    .arg(&so)
    .arg(src)
    .args(["-ldl", "-pthread"]);

    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler ({cmd:?}): {e}"));
    if !status.success() {
        panic!("building {src} failed ({status}); command: {cmd:?}");
    }
}
