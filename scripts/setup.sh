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
  # opens the HTML report in the report tests, and a page `smtlab serve web`
  # serves in tests/web_serve.rs; libjemalloc2, libmimalloc2.0,
  # libtcmalloc-minimal4: the allocators `study alloc` compares; likwid:
  # likwid-bench, the reference of the stream benchmark; zsh, fish and
  # man-db: the completion scripts and man pages are checked in the shells
  # and the `man` that read them; bash-completion: the loader that finds
  # the bash completion scripts/install.sh installs (tests/cli_install.rs).
  # nginx: the reference web server beside
  # smtlab's own in `study web` and its tests; wrk and apache2-utils (ab):
  # the load generators smtlab's is checked against; curl: fetches files
  # byte for byte in the web tests. ngircd: the reference IRC server beside
  # smtlab's chat server in `study chat` and its tests. python3-irc (the
  # Python irc library) and ii: real IRC clients that
  # crates/smtlab/tests/chat_clients.rs runs against the chat server. openmpi-bin:
  # `mpirun`, the launcher the DSM tests start `smtlab rank` under;
  # iproute2: `ip netns` and `tc`, for the test that puts two ranks in
  # network namespaces over a shaped veth pair (as root).
  # qemu-system-x86, linux-image-amd64, busybox-static and python3-venv:
  # the emulated SMT/NUMA guests of scripts/guest (virtme-ng boots this
  # machine's own filesystem with Debian's kernel; busybox builds the
  # guest's initramfs; virtme-ng itself goes into a venv, below).
  # slurm-wlm and munge: the one-node Slurm cluster (munged, slurmctld,
  # slurmd) that tests/cli_slurm.rs starts as root to run smtlab under
  # srun, sbatch and scancel.
  $SUDO apt-get install -y -qq --no-install-recommends \
    gcc libc6-dev tar bzip2 hwloc python3 hyperfine linux-perf chromium sqlite3 git \
    libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 likwid zsh fish man-db bash-completion \
    nginx wrk apache2-utils curl ngircd python3-irc ii openmpi-bin iproute2 \
    slurm-wlm munge \
    qemu-system-x86 linux-image-amd64 busybox-static python3-venv >/dev/null
  # smtlab starts nginx and ngircd itself, unprivileged, with its own
  # configuration; the system services the packages may have started would
  # only hold ports 80 and 6667 and disturb measurements. The Slurm test
  # starts munged, slurmctld and slurmd of its own, with a configuration
  # and key in a temporary directory: the system's would only hold ports.
  for service in nginx ngircd munge slurmctld slurmd; do
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

# virtme-ng (the `vng` command scripts/guest boots guests with), pinned, in a
# venv under the target directory: nothing is installed into the system's
# Python, and `cargo clean` removes it with the rest of the build.
VNG_VERSION=1.42
target_dir=${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/.." && pwd)/target}
venv=$target_dir/guest/venv
if [ "$("$venv/bin/vng" --version 2>/dev/null)" != "virtme-ng $VNG_VERSION" ]; then
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv "$venv" >/dev/null 2>&1; then
    echo "setup: cannot create a Python venv at $venv; the SMT/NUMA guest tests will be skipped" >&2
  elif ! "$venv/bin/pip" install -q --disable-pip-version-check "virtme-ng==$VNG_VERSION" >/dev/null; then
    echo "setup: pip could not install virtme-ng $VNG_VERSION; the SMT/NUMA guest tests will be skipped" >&2
  fi
fi
