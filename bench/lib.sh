# Helpers the bench/ scripts share. Source it after changing to the
# repository's root: . bench/lib.sh
#
# wait_ready reports a failure under the name in $bench_name (the
# calling script's name by default).

bench_name=${bench_name:-$(basename "$0")}

# need <command>: whether command is installed.
need() { command -v "$1" >/dev/null 2>&1; }

# port_used <port>: whether something listens on 127.0.0.1:port.
port_used() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# freeport sets PORT to the next port from $next_port (17400 if unset) that
# is free and whose port+10000 (an rlserver node's bus) is free too. It sets
# a variable instead of printing because a subshell would lose the count.
next_port=${next_port:-17400}
freeport() {
  while port_used "$next_port" || port_used $((next_port + 10000)); do next_port=$((next_port + 1)); done
  PORT=$next_port; next_port=$((next_port + 1))
}

# wait_ready <port>: until a Redis-protocol server there answers PING, for
# at most 20 s.
wait_ready() {
  for _ in $(seq 200); do
    [ "$(redis-cli -p "$1" ping 2>/dev/null)" = "PONG" ] && return 0
    sleep 0.1
  done
  echo "$bench_name: nothing answers on port $1" >&2; exit 1
}

# leading <port...>: of the rlserver nodes listening on these client ports,
# the ports of those that lead at least one shard, one a line.
leading() {
  local port
  for port in "$@"; do
    if redis-cli -p "$port" info raft 2>/dev/null | grep -q '^raft_shards_leading:[1-9]'; then echo "$port"; fi
  done
}

# host_load <redis port> <scratch dir>: the host's load as the figures
# quote it: redis-server's PING rate there (P=1, 50 clients), the time of
# one 4 KiB write with O_DSYNC in the scratch dir, in µs, and the load
# average.
host_load() {
  local ping fsync start
  ping=$(redis-benchmark -p "$1" -t ping_mbulk -n 200000 -c 50 -q 2>/dev/null | tr -d '\r' | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1)
  start=$(date +%s%N)
  dd if=/dev/zero of="$2/dsync" bs=4k count=500 oflag=dsync 2>/dev/null
  fsync=$(( ($(date +%s%N) - start) / 500 / 1000 ))
  rm -f "$2/dsync"
  echo "PING ${ping%.*}/s, O_DSYNC write ${fsync} µs, load $(cut -d' ' -f1-3 /proc/loadavg)"
}
