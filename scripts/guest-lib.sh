# Sourced inside an emulated guest (see scripts/guest). `guest_step NAME SECS
# CMD...` runs one command with a time limit and keeps what it did in
# $GUEST_OUT/steps/NAME.{out,err,status,seconds}.
#
# Why a time limit per step: under TCG a guest kernel can stall for minutes
# (a soft lockup while perf_event_open patches kernel text), and a step
# that hangs must say what was still running when its time ran out instead
# of eating the whole guest's budget in silence. So the processes are listed
# before anything is killed (timeout(1) would only leave the survivors).

guest_step() {
  local name=$1 limit=$2
  shift 2
  local dir="${GUEST_OUT:?GUEST_OUT is not set}/steps"
  mkdir -p "$dir"
  rm -f "$dir/$name.timedout"
  local start end status pid watcher
  start=$(date +%s.%N)
  echo "guest: step $name (limit ${limit}s): $*" >&2
  # Its own process group, so that everything it started can be stopped.
  setsid "$@" >"$dir/$name.out" 2>"$dir/$name.err" </dev/null &
  pid=$!
  setsid bash -c '
    sleep "$1"
    {
      echo "guest: step $2 passed its $1 s limit; still running then:"
      ps -eo pid,ppid,pgid,stat,etime,time,wchan:24,args --sort=start_time | grep -v " \[" 
      echo "guest: the kernel'"'"'s last messages:"
      dmesg 2>/dev/null | tail -n 20
    } >>"$3.err" 2>&1
    touch "$3.timedout"
    kill -TERM -- "-$4" 2>/dev/null
    sleep 10
    kill -KILL -- "-$4" 2>/dev/null
  ' guest-step-watcher "$limit" "$name" "$dir/$name" "$pid" </dev/null >/dev/null 2>&1 &
  watcher=$!
  wait "$pid"
  status=$?
  kill -KILL -- "-$watcher" 2>/dev/null
  wait "$watcher" 2>/dev/null
  end=$(date +%s.%N)
  if [ -e "$dir/$name.timedout" ]; then
    status=124
  fi
  echo "$status" >"$dir/$name.status"
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f\n", b - a }' >"$dir/$name.seconds"
  echo "guest: step $name: exit $status after $(cat "$dir/$name.seconds") s" >&2
  return "$status"
}

# Machine set-ups a scenario may apply before its steps (as root inside the
# guest).

# SMT off at run time, as `smtlab doctor` suggests: every second sibling
# goes offline.
guest_smt_off() {
  echo off >/sys/devices/system/cpu/smt/control
}

# CPUs taken offline: guest_offline 6 [7 ...].
guest_offline() {
  local cpu
  for cpu in "$@"; do
    echo 0 >"/sys/devices/system/cpu/cpu$cpu/online"
  done
}

# This shell (and so every later step) moved into a cgroup v2 cpuset that
# allows only the CPUs of LIST (e.g. 0-1,4).
guest_cpuset() {
  local cg=/sys/fs/cgroup/smtlab-guest
  echo +cpuset >/sys/fs/cgroup/cgroup.subtree_control
  mkdir -p "$cg"
  echo "$1" >"$cg/cpuset.cpus"
  echo $$ >"$cg/cgroup.procs"
}
