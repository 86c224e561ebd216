#!/usr/bin/env bash
# Install what smtlab's build and tests need on a fresh Debian/Ubuntu machine.
# Safe to run again: everything it does is idempotent.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

if command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # gcc: builds the pin preload library; tar+bzip2: unpack the hwloc dumps
  # in tests; hwloc: lstopo/hwloc-calc, the reference the topology tests
  # compare this machine against; python3: programs run under `smtlab pin`;
  # hyperfine: the wall-time benchmark's reference; linux-perf: `perf`, the
  # independent check of hardware counters in the doctor tests; sqlite3 and
  # git: real programs the smtalloc tests run under LD_PRELOAD; chromium:
  # opens the HTML report in the report tests; libjemalloc2, libmimalloc2.0,
  # libtcmalloc-minimal4: the allocators `study alloc` compares; likwid:
  # likwid-bench, the reference of the stream benchmark; zsh, fish and
  # man-db: the completion scripts and man pages are checked in the shells
  # and the `man` that read them. nginx: the reference web server beside
  # smtlab's own in `study web` and its tests; wrk and apache2-utils (ab):
  # the load generators smtlab's is checked against; curl: fetches files
  # byte for byte in the web tests. ngircd: the reference IRC server beside
  # smtlab's chat server in `study chat` and its tests. openmpi-bin:
  # `mpirun`, the launcher the DSM tests start `smtlab rank` under;
  # iproute2: `ip netns` and `tc`, for the test that puts two ranks in
  # network namespaces over a shaped veth pair (as root).
  $SUDO apt-get install -y -qq --no-install-recommends \
    gcc libc6-dev tar bzip2 hwloc python3 hyperfine linux-perf chromium sqlite3 git \
    libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 likwid zsh fish man-db \
    nginx wrk apache2-utils curl ngircd openmpi-bin iproute2 >/dev/null
  # smtlab starts nginx and ngircd itself, unprivileged, with its own
  # configuration; the system services the packages may have started would
  # only hold ports 80 and 6667 and disturb measurements.
  for service in nginx ngircd; do
    if command -v systemctl >/dev/null 2>&1; then
      $SUDO systemctl disable --now "$service" >/dev/null 2>&1 || true
    fi
    if command -v service >/dev/null 2>&1; then
      $SUDO service "$service" stop >/dev/null 2>&1 || true
    fi
  done
else
  echo "setup: no apt-get; install gcc, tar, bzip2, hwloc and python3 yourself" >&2
fi

if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: Rust is not installed; install it with rustup (Rust 1.85 or newer), then run this again" >&2
  exit 1
fi
if command -v rustup >/dev/null 2>&1; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi
