"""Python limits (Debian's python3-limits, under slowapi and flask-limiter),
run unchanged against Redis and rlserver: its fixed window, fixed window
with elastic expiry and moving window strategies, on redis-py's Redis or
RedisCluster. The driver (tests/compat/driver/limiters.go) runs it against
redis-server, a durable rlserver node and a three-node rlserver cluster,
and compares the decisions it prints, one per line:

    VERSION <TAB> version
    DECISION <TAB> step <TAB> outcome

LIMITER_MODE (single or cluster), LIMITER_ADDRS (host:port,...) and
LIMITER_PREFIX say where and under which keys. limits 2.8 has no sliding
window counter (later releases do).
"""

import os
import sys

import limits
import limits.storage
import limits.strategies


def out(*fields):
    print("\t".join(str(f) for f in fields), flush=True)


def main():
    mode = os.environ["LIMITER_MODE"]
    addrs = os.environ["LIMITER_ADDRS"].split(",")
    prefix = os.environ.get("LIMITER_PREFIX", "limiters:")
    if mode == "cluster":
        storage = limits.storage.storage_from_string("redis+cluster://" + ",".join(addrs))
    else:
        storage = limits.storage.storage_from_string("redis://" + addrs[0])
    out("VERSION", "limits " + limits.__version__)
    five = limits.parse("5/minute")
    strategies = [
        ("fixed", limits.strategies.FixedWindowRateLimiter(storage)),
        ("elastic", limits.strategies.FixedWindowElasticExpiryRateLimiter(storage)),
        ("moving", limits.strategies.MovingWindowRateLimiter(storage)),
    ]
    for name, limiter in strategies:
        key = prefix + name
        for i in range(1, 9):
            allowed = limiter.hit(five, key)
            _, remaining = limiter.get_window_stats(five, key)
            out("DECISION", f"{name} hit {i}", f"{'allowed' if allowed else 'denied'} remaining={remaining}")
        out("DECISION", f"{name} test", limiter.test(five, key))
        out("DECISION", f"{name} hit cost 2 other", limiter.hit(five, key + ":other", cost=2))
        out("DECISION", f"{name} remaining other", limiter.get_window_stats(five, key + ":other")[1])
        limiter.clear(five, key)
        out("DECISION", f"{name} after clear", limiter.hit(five, key))
    # The moving window grants a cost above its limit on an empty key, as
    # its acquire script does on Redis.
    moving = strategies[2][1]
    out("DECISION", "moving hit cost 7 empty", moving.hit(five, prefix + "moving:big", cost=7))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the driver reports it
        print(f"limiters: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
