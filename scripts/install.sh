#!/usr/bin/env bash
# Install smtlab with everything that comes with it under PREFIX:
#   PREFIX/bin/smtlab
#   PREFIX/lib/smtlab/libsmtalloc.so        (--alloc smtalloc finds it there)
#   PREFIX/share/man/man1/smtlab.1 and smtlab-SUBCOMMAND.1
#   PREFIX/share/bash-completion/completions/smtlab
#   PREFIX/share/zsh/site-functions/_smtlab
#   PREFIX/share/fish/vendor_completions.d/smtlab.fish
# `cargo install` would copy the binary alone: not libsmtalloc.so (another
# package's library), nor the pages and completions, which the binary
# generates (`smtlab man`, `smtlab completions`) and which are written here
# from the binary being installed, so they describe exactly it.
#
# smtlab finds the library relative to its own executable, so the tree can
# be staged (DESTDIR) or moved after installing; nothing here bakes in a
# path.
set -euo pipefail

usage="usage: scripts/install.sh [--from DIR] PREFIX"
help="$usage

Builds smtlab and libsmtalloc.so (cargo build --release -p smtlab -p
smtalloc-preload) and installs them, the man pages and the bash, zsh and
fish completions under PREFIX (bin/, lib/smtlab/, share/).

  --from DIR   install what is already built in DIR, a cargo profile
               directory such as target/release or target/debug, instead
               of building (also SMTLAB_INSTALL_FROM=DIR)
  DESTDIR=DIR  stage the install under DIR/PREFIX (for packaging); smtlab
               finds its library relative to itself, so the staged tree
               works wherever it ends up"

# A mistake in how the script was called: one line, exit 2.
die_usage() {
  echo "install.sh: $1" >&2
  exit 2
}

from=${SMTLAB_INSTALL_FROM:-}
from_what="SMTLAB_INSTALL_FROM"
prefix=""
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help)
      echo "$help"
      exit 0
      ;;
    --from)
      [ $# -ge 2 ] || die_usage "--from needs a directory ($usage)"
      from=$2
      from_what="--from"
      shift 2
      ;;
    --from=*)
      from=${1#--from=}
      from_what="--from"
      shift
      ;;
    -*) die_usage "unknown option $1 ($usage)" ;;
    *)
      [ -z "$prefix" ] || die_usage "one PREFIX only, got $prefix and $1 ($usage)"
      prefix=$1
      shift
      ;;
  esac
done
[ -n "$prefix" ] || die_usage "no PREFIX given ($usage)"
# DESTDIR/PREFIX only makes sense with an absolute PREFIX; a relative one is
# taken from the current directory.
case $prefix in
  /*) ;;
  *) prefix=$(pwd)/$prefix ;;
esac

repo=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$from" ]; then
  if ! command -v cargo >/dev/null 2>&1; then
    echo "install.sh: cargo not found; install Rust (rustup), or give --from DIR with smtlab and libsmtalloc.so already built" >&2
    exit 1
  fi
  (cd "$repo" && cargo build --release -p smtlab -p smtalloc-preload)
  # Where cargo put them (CARGO_TARGET_DIR and .cargo/config included).
  target=$(cd "$repo" && cargo metadata --format-version 1 --no-deps |
    grep -o '"target_directory":"[^"]*"' | cut -d'"' -f4)
  from=$target/release
  from_what="the release build"
fi
[ -d "$from" ] || die_usage "$from_what $from: no such directory"
from=$(cd "$from" && pwd)
for file in smtlab libsmtalloc.so; do
  if [ ! -f "$from/$file" ]; then
    die_usage "$from_what $from: no $file there; build it with cargo build -p smtlab -p smtalloc-preload (add --release for target/release)"
  fi
done

root=${DESTDIR:-}$prefix
# Everything generated goes into a staging directory first, so a binary
# that cannot generate its pages leaves nothing half installed.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
"$from/smtlab" man -o "$stage/man1"
"$from/smtlab" completions bash >"$stage/smtlab.bash"
"$from/smtlab" completions zsh >"$stage/_smtlab"
"$from/smtlab" completions fish >"$stage/smtlab.fish"

install -D -m 755 "$from/smtlab" "$root/bin/smtlab"
# A shared library needs no execute bit (Debian installs them 644).
install -D -m 644 "$from/libsmtalloc.so" "$root/lib/smtlab/libsmtalloc.so"
install -d "$root/share/man/man1"
install -m 644 "$stage"/man1/*.1 "$root/share/man/man1/"
install -D -m 644 "$stage/smtlab.bash" "$root/share/bash-completion/completions/smtlab"
install -D -m 644 "$stage/_smtlab" "$root/share/zsh/site-functions/_smtlab"
install -D -m 644 "$stage/smtlab.fish" "$root/share/fish/vendor_completions.d/smtlab.fish"

pages=$(find "$stage/man1" -name '*.1' | wc -l)
echo "installed smtlab from $from into $root:"
echo "  bin/smtlab"
echo "  lib/smtlab/libsmtalloc.so"
echo "  share/man/man1/smtlab.1 and $((pages - 1)) subcommand pages (smtlab-*.1)"
echo "  share/bash-completion/completions/smtlab"
echo "  share/zsh/site-functions/_smtlab"
echo "  share/fish/vendor_completions.d/smtlab.fish"
