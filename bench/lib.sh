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

# ping_rate <port>: PINGs a second the Redis-protocol server there answers
# (redis-benchmark, 50 clients, pipeline 1): the host's cost of a system
# call and a switch, which the figures of docs/performance.md name.
ping_rate() {
  redis-benchmark -p "$1" --csv -q -c 50 -P 1 -n 100000 PING 2>/dev/null | tail -1 | tr -d '"' | cut -d, -f2
}

# fsync_us <dir>: microseconds a 4 KiB synchronous write takes in dir
# (dd bs=4k count=2000 oflag=dsync): the host's fsync.
fsync_us() {
  local s
  s=$(LC_ALL=C dd if=/dev/zero of="$1/dsync.probe" bs=4k count=2000 oflag=dsync 2>&1 | sed -n 's/.*copied, \([0-9.e+-]*\) s.*/\1/p')
  rm -f "$1/dsync.probe"
  awk -v s="$s" 'BEGIN { printf "%.0f", s * 1e6 / 2000 }'
}

# host_load <redis port> <scratch dir>: the host's load as the figures
# quote it: redis-server's PING rate there, the time of one 4 KiB write
# with O_DSYNC in the scratch dir, and the load average.
host_load() {
  local ping
  ping=$(ping_rate "$1")
  echo "PING ${ping%.*}/s, O_DSYNC write $(fsync_us "$2") µs, load $(cut -d' ' -f1-3 /proc/loadavg)"
}
