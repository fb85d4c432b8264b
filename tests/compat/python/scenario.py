#!/usr/bin/python3
"""rlserver's compatibility scenario through redis-py (Debian's python3-redis).

One of the scenario programs tests/compat/run starts: the driver gives the
servers in COMPAT_* variables and reads the RESULT lines this prints (see
tests/compat/README.md). Standalone: redis.Redis; cluster: RedisCluster.
"""
import os
import sys
import threading
import time
import traceback

import redis
from redis.cluster import ClusterNode, RedisCluster

MODE = os.environ["COMPAT_MODE"]
ADDRS = os.environ["COMPAT_ADDRS"].split(",")
AUTH_ADDRS = os.environ["COMPAT_AUTH_ADDRS"].split(",")
PASSWORD = os.environ["COMPAT_PASSWORD"]
PREFIX = os.environ["COMPAT_PREFIX"]
SHARD_KEYS = [k for k in os.environ.get("COMPAT_SHARD_KEYS", "").split(",") if k]
SHARD_LEADERS = [k for k in os.environ.get("COMPAT_SHARD_LEADERS", "").split(",") if k]
CLIENT, VERSION = "redis-py", redis.__version__
# An hour: no run crosses a window boundary, where sliding weights shift.
WINDOW = 3600000
FIELDS = ("allowed", "limit", "remaining", "retry_after_ms", "reset_after_ms")
TIMEOUT = 10  # seconds, for every socket operation


def host_port(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def result(case, status, detail=""):
    detail = " ".join(str(detail).split())
    print("RESULT\t%s\t%s\t%s\t%s\t%s\t%s" % (CLIENT, VERSION, MODE, case, status, detail), flush=True)


def run(case, fn):
    try:
        result(case, "PASS", fn() or "")
    except Exception as e:  # a failure of this case, reported, not a crash
        tb = traceback.extract_tb(e.__traceback__)[-1]
        result(case, "FAIL", "%s: %s (%s:%d)" % (type(e).__name__, e, os.path.basename(tb.filename), tb.lineno))


def control(*args):
    print("CONTROL\t" + "\t".join(args), flush=True)
    line = sys.stdin.readline().rstrip("\n")
    if not line.startswith("OK\t"):
        raise RuntimeError("control %s: %s" % (args, line))
    return line[3:]


def decision(reply):
    """An RL.* or CL.THROTTLE reply as five integers and its shape."""
    if isinstance(reply, dict):
        return [reply[f] for f in FIELDS], "map"
    if isinstance(reply, list) and len(reply) == 5 and all(isinstance(x, int) for x in reply):
        return list(reply), "array"
    raise AssertionError("reply %r: want 5 integers" % (reply,))


def want(reply, allowed, limit, remaining, retry, reset=None, shape=None):
    v, got_shape = decision(reply)
    if shape and got_shape != shape:
        raise AssertionError("reply %r came as %s, want %s" % (reply, got_shape, shape))
    ok = v[:4] == [allowed, limit, remaining, retry] and (v[4] > 0 if reset is None else v[4] == reset)
    if not ok:
        raise AssertionError("reply %r, want %r (reset: any positive)" % (v, [allowed, limit, remaining, retry, reset]))


def check_sequence(keys, replies, limit):
    """Replies to RL.SLIDING key limit on fresh keys, in order: on each key
    the first `limit` allowed counting down, the rest refused."""
    if len(replies) != len(keys):
        raise AssertionError("%d replies to %d decisions" % (len(replies), len(keys)))
    seen = {}
    for i, (k, r) in enumerate(zip(keys, replies)):
        n = seen.get(k, 0)
        seen[k] = n + 1
        if isinstance(r, Exception):
            raise AssertionError("decision %d (%s): %r" % (i + 1, k, r))
        v, _ = decision(r)
        if n < limit:
            want(r, 1, limit, limit - 1 - n, 0)
        elif v[0] != 0 or v[2] != 0 or v[3] <= 0:
            raise AssertionError("decision %d (%s): %r, want refused with a wait" % (i + 1, k, v))


def pipeline_keys(name, n):
    if MODE == "single":
        return [PREFIX + name] * n, n // 2
    return [SHARD_KEYS[i % len(SHARD_KEYS)] + ":" + name for i in range(n)], 10


def common(r, key):
    """The cases run alike on a node and a cluster."""
    def ping():
        assert r.ping() is True

    def sliding():
        want(r.execute_command("RL.SLIDING", key, 10, WINDOW), 1, 10, 9, 0, shape="array")
        want(r.execute_command("RL.SLIDING", key, 10, WINDOW), 1, 10, 8, 0, shape="array")
        return "execute_command(); RESP2: an array"

    def throttle():
        want(r.execute_command("CL.THROTTLE", key + ":cell", 15, 30, 60), 0, 16, 15, -1, 2, shape="array")
        return "execute_command()"

    def pipeline100():
        keys, limit = pipeline_keys("pipe", 100)
        p = r.pipeline()  # on a node: a transaction (MULTI/EXEC) by default
        for k in keys:
            p.execute_command("RL.SLIDING", k, limit, WINDOW)
        check_sequence(keys, p.execute(), limit)
        return "pipeline() (%s)" % ("MULTI/EXEC by default" if MODE == "single" else "ClusterPipeline")

    run("ping", ping)
    run("rl.sliding", sliding)
    run("cl.throttle", throttle)
    run("pipeline-100", pipeline100)


def single():
    host, port = host_port(ADDRS[0])
    r = redis.Redis(host=host, port=port, socket_timeout=TIMEOUT)

    def connect():
        assert r.ping() is True
        return "default options"

    def connect_auth():
        ahost, aport = host_port(AUTH_ADDRS[0])
        name = "compat-redis-py"
        a = redis.Redis(host=ahost, port=aport, password=PASSWORD, client_name=name, db=0, socket_timeout=TIMEOUT)
        assert a.ping() is True
        got = a.client_getname()
        assert got in (name, name.encode()), "CLIENT GETNAME = %r" % (got,)
        want(a.execute_command("RL.SLIDING", PREFIX + "auth", 10, WINDOW), 1, 10, 9, 0)
        return "password, client_name, db=0"

    def transaction():
        k = PREFIX + "tx"
        p = r.pipeline()  # transaction=True is the default
        for _ in range(3):
            p.execute_command("RL.SLIDING", k, 10, WINDOW)
        check_sequence([k] * 3, p.execute(), 10)
        return "pipeline(): MULTI, 3 decisions, EXEC"

    def no_tx_pipeline():
        keys, limit = pipeline_keys("pipe-notx", 100)
        p = r.pipeline(transaction=False)
        for k in keys:
            p.execute_command("RL.SLIDING", k, limit, WINDOW)
        check_sequence(keys, p.execute(), limit)
        return "pipeline(transaction=False)"

    def error():
        try:
            r.execute_command("RL.SLIDING", PREFIX + "err", 0, 1000)
        except redis.ResponseError as e:
            assert str(e).startswith("limit must be"), "error %r" % (str(e),)
            return "ResponseError: %s" % e
        raise AssertionError("RL.SLIDING with limit 0 raised nothing")

    run("connect", connect)
    run("connect-auth", connect_auth)
    common(r, PREFIX + "sliding")
    run("pipeline-100-notx", no_tx_pipeline)
    run("transaction", transaction)
    run("error", error)
    result("resp3", "N/A", "redis-py 4.3 speaks RESP2 only")


def cluster():
    host, port = host_port(ADDRS[0])
    # Seeded with one node: the others are discovered.
    rc = RedisCluster(host=host, port=port, socket_timeout=TIMEOUT)

    def discovery():
        nodes = sorted(n.name for n in rc.get_nodes())
        assert nodes == sorted(ADDRS), "nodes %r, want %r" % (nodes, ADDRS)
        for k, leader in zip(SHARD_KEYS, SHARD_LEADERS):
            got = rc.get_node_from_key(k).name
            assert got == leader, "get_node_from_key(%s) = %s, want the shard's leader %s" % (k, got, leader)
        # redis-py gives each node one role, the first CLUSTER SLOTS shows it
        # in; an rlserver node leads some shards and follows others.
        return ("seeded with 1 node, found %d nodes; each shard's key maps to its leader; get_primaries() lists %d"
                % (len(nodes), len(rc.get_primaries())))

    def connect_auth():
        ahost, aport = host_port(AUTH_ADDRS[0])
        name = "compat-redis-py"
        a = RedisCluster(host=ahost, port=aport, password=PASSWORD, client_name=name, socket_timeout=TIMEOUT)
        assert a.ping() is True
        for k in SHARD_KEYS:
            want(a.execute_command("RL.SLIDING", k + ":auth", 10, WINDOW), 1, 10, 9, 0)
        names = a.client_getname(target_nodes=RedisCluster.ALL_NODES)
        assert all(n in (name, name.encode()) for n in names.values()), "CLIENT GETNAME %r" % (names,)
        return "password, client_name (RedisCluster takes no db); a decision on every shard"

    def spread():
        for rnd in (1, 2):
            for k in SHARD_KEYS:
                want(rc.execute_command("RL.SLIDING", k + ":spread", 10, WINDOW), 1, 10, 10 - rnd, 0)
        return "%d shards, 2 decisions each" % len(SHARD_KEYS)

    f = RedisCluster(startup_nodes=[ClusterNode(*host_port(a)) for a in ADDRS], socket_timeout=TIMEOUT)

    def decide(k):
        f.execute_command("RL.SLIDING", k, 1000, WINDOW)

    def failback():
        restarted = control("restart")
        key = SHARD_KEYS[1] + ":fo"
        for _ in range(20):
            decide(key)
        for k in SHARD_KEYS:
            decide(k + ":back")
        return restarted + "; 20 decisions, and one on every shard"

    def failover(shard):
        key = SHARD_KEYS[shard] + ":fo"

        decide(key)
        killed = control("kill-leader", key)
        start, errors = time.monotonic(), []
        while True:
            try:
                decide(key)
                break
            except Exception as e:
                errors.append("%s: %s" % (type(e).__name__, e))
                if time.monotonic() - start > 20:
                    raise AssertionError("no decision within 20 s of killing %s; %d errors: %s"
                                         % (killed, len(errors), summarize(errors)))
                time.sleep(0.1)  # a retry's back-off
        took = time.monotonic() - start
        for _ in range(20):
            decide(key)
        for k in SHARD_KEYS:
            decide(k + ":after")
        detail = "killed %s; answering again after %.1fs" % (killed, took)
        if errors:
            detail += ", %d errors meanwhile: %s" % (len(errors), summarize(errors))
        return detail

    run("discovery", discovery)
    run("connect-auth", connect_auth)
    common(rc, SHARD_KEYS[0])
    run("spread", spread)
    # The leader of a shard other than the first, then the leader of the
    # first shard: the node CLUSTER SLOTS lists first.
    run("failover", lambda: failover(1))
    run("failback", failback)
    f = RedisCluster(startup_nodes=[ClusterNode(*host_port(a)) for a in ADDRS], socket_timeout=TIMEOUT)
    run("failover-first-node", lambda: failover(0))
    result("transaction", "N/A", "RedisCluster's pipeline() is never a transaction")
    result("resp3", "N/A", "redis-py 4.3 speaks RESP2 only")


def summarize(errors):
    counts = {}
    for e in errors:
        counts[e[:120]] = counts.get(e[:120], 0) + 1
    return "; ".join("%dx %r" % (n, e) for e, n in sorted(counts.items()))


def membership():
    """The membership scenario (tests/compat/README.md): a RedisCluster
    seeded with the three original nodes keeps a steady load of decisions
    while the driver grows, shrinks and repairs the cluster."""
    rc = RedisCluster(startup_nodes=[ClusterNode(*host_port(a)) for a in ADDRS], socket_timeout=TIMEOUT)
    settings = "defaults, seeded with the 3 original nodes"
    lock = threading.Lock()
    stats = {"ok": 0, "errors": {}, "tries": 0}
    acked, admitted = {}, {}
    stop = threading.Event()

    def decide(key, limit):
        allowed, _, remaining, _, _ = decision(rc.execute_command("RL.SLIDING", key, limit, WINDOW))[0]
        return allowed == 1, remaining

    def ask(key, limit, small):
        try:
            allowed, _ = decide(key, limit)
        except Exception as e:  # counted by kind and reported
            with lock:
                kind = type(e).__name__  # redis-py's class for each error code: TryAgainError, MovedError, ...
                stats["errors"][kind] = stats["errors"].get(kind, 0) + 1
                stats["tries"] += small
            time.sleep(0.05)  # a retry's back-off
            return
        with lock:
            stats["ok"] += 1
            stats["tries"] += small
            if allowed:
                counts = admitted if small else acked
                counts[key] = counts.get(key, 0) + 1

    def worker(w):
        i = w
        while not stop.is_set():
            ask("%sm:%d" % (PREFIX, i % LOAD_KEYS), LOAD_LIMIT, False)
            ask(SHARD_KEYS[i % len(SHARD_KEYS)] + ":small", SMALL_LIMIT, True)
            i += LOAD_WORKERS

    def since():
        with lock:
            ok, errors = stats["ok"], stats["errors"]
            stats["ok"], stats["errors"] = 0, {}
        return ok, errors

    def view():
        out = []
        for k in SHARD_KEYS:
            try:
                out.append(rc.get_node_from_key(k).name)
            except Exception:  # no slot map yet: nothing to say
                out.append("")
        return out

    def stage(name):
        since()
        members, leaders, joined, did = control("membership", name).split("\t", 3)
        members, leaders, joined = members.split(","), leaders.split(","), [a for a in joined.split(",") if a]
        ok, errors = since()
        assert ok > 0, "no decision during the stage (%s); errors %r" % (did, errors)
        start = time.monotonic()
        while True:
            v = view()
            stale = sorted({a for a in v if a and a not in members})
            if not stale and (not joined or any(a in v for a in joined)):
                break
            if time.monotonic() - start > FOLLOW_BUDGET:
                raise AssertionError("%ds after the stage, the slot map %s: names nodes gone %s, or none of the nodes joined %s "
                                     "(members %s; %s)" % (FOLLOW_BUDGET, v, stale, joined, members, did))
            time.sleep(0.1)
        took = time.monotonic() - start
        for k in SHARD_KEYS:
            decide(k + ":" + name, 1000)
        on = sum(1 for a, l in zip(v, leaders) if a == l)
        return ("%d decisions during the stage, errors %s; after it the slot map maps %d of %d shards to their leader, "
                "none to a node gone, some to a node joined (%s), a decision on every shard; %s; driver: %s"
                % (ok, kinds(errors), on, len(leaders), "at once" if took < 0.2 else "after %.1fs" % took, settings, did))

    def limits():
        over, got = [], []
        for k in SHARD_KEYS:
            k += ":small"
            allowed, _ = decide(k, SMALL_LIMIT)
            admitted[k] = admitted.get(k, 0) + allowed
            got.append(admitted[k])
            if admitted[k] > SMALL_LIMIT:
                over.append("%s: %d" % (k, admitted[k]))
        assert not over, "granted beyond the limit of %d: %s" % (SMALL_LIMIT, ", ".join(over))
        for k, n in acked.items():
            _, remaining = decide(k, LOAD_LIMIT)
            assert remaining <= LOAD_LIMIT - n - 1, ("%s: %d grants acknowledged, but the key has %d of %d left: grants were lost"
                                                     % (k, n, remaining, LOAD_LIMIT))
        return ("small keys (limit %d, one per shard): granted %s of %d tries; %d acknowledged grants on %d keys all still counted"
                % (SMALL_LIMIT, got, stats["tries"], sum(acked.values()), len(acked)))

    workers = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(LOAD_WORKERS)]
    for t in workers:
        t.start()
    for name in ("grow", "decommission", "replace"):
        run(name, lambda: stage(name))
    stop.set()
    for t in workers:
        t.join()
    run("limits", limits)


# The membership scenario's load: keys spread over every slot with a limit
# never reached (every acknowledged grant must still be counted), and one
# key per shard with a small limit, reached early (a grant beyond it would
# show a state lost in a move). tests/compat/gocompat/membership.go is the
# same in Go.
LOAD_KEYS, LOAD_LIMIT, SMALL_LIMIT, LOAD_WORKERS, FOLLOW_BUDGET = 64, 1000000, 20, 2, 12


def kinds(errors):
    return ", ".join("%s %d" % (k, n) for k, n in sorted(errors.items())) or "none"


def faults():
    """The faults scenario (tests/compat/driver/faults.go): decisions through
    a redis.Redis of the first node (which forwards) and a RedisCluster
    seeded with every node, each on a key of its own used once, until the
    driver has killed and frozen leaders; then each client's calls and how
    they failed."""
    clients = [
        ("standalone", lambda: redis.Redis(*host_port(ADDRS[0]), socket_timeout=TIMEOUT)),
        ("cluster", lambda: RedisCluster(startup_nodes=[ClusterNode(*host_port(a)) for a in ADDRS], socket_timeout=TIMEOUT)),
    ]
    stop = threading.Event()
    lock = threading.Lock()
    calls = {kind: {"next": 0, "failed": {}} for kind, _ in clients}

    def word(e):
        # redis-py names the error codes it knows by class, and drops the
        # code from the message; an unknown code stays in the message of
        # a ResponseError. "?" marks a text that says the decision may have
        # been counted.
        known = {"TryAgainError": "TRYAGAIN", "ClusterDownError": "CLUSTERDOWN", "MovedError": "MOVED", "AskError": "ASK"}
        name = type(e).__name__
        if name in known:
            w = known[name]
        elif name == "ResponseError" and str(e).split():
            w = str(e).split()[0]
        else:
            w = name
        return w + "?" if "may have been counted" in str(e) else w

    def worker(kind, make):
        c = make()  # one client per thread
        mine = calls[kind]
        while not stop.is_set():
            with lock:
                i = mine["next"]
                mine["next"] += 1
            try:
                c.execute_command("RL.FIXED", "%sf:%s:%d" % (PREFIX, kind, i), FAULT_LIMIT, FAULT_WINDOW)
            except Exception as e:  # recorded: the driver compares it with the key's count
                with lock:
                    mine["failed"][i] = word(e)
                time.sleep(0.02)

    threads = [threading.Thread(target=worker, args=(kind, make), daemon=True) for kind, make in clients for _ in range(FAULT_WORKERS)]
    for t in threads:
        t.start()
    try:
        answer, err = control("faults", "run"), None
    except Exception as e:  # reported as each client's failure
        answer, err = "", e
    stop.set()
    for t in threads:
        t.join()
    for kind, _ in clients:
        mine = calls[kind]
        failed = mine["failed"]
        print("CALLS\t%s\t%d\t%s" % (kind, mine["next"], ",".join("%d=%s" % (i, failed[i]) for i in sorted(failed))), flush=True)
        byword = {}
        for w in failed.values():
            byword[w] = byword.get(w, 0) + 1
        if err:
            result("load-" + kind, "FAIL", err)
        else:
            result("load-" + kind, "PASS", "defaults, socket_timeout %ds; %d calls, errors: %s; faults: %s"
                   % (TIMEOUT, mine["next"], kinds(byword), answer))


# The faults scenario's keys: RL.FIXED with a window of ten days and a limit
# never reached, as the driver peeks at them; decisions in flight per client.
FAULT_WINDOW, FAULT_LIMIT, FAULT_WORKERS = 864000000, 1000000, 4


if __name__ == "__main__":
    {"single": single, "cluster": cluster, "membership": membership, "faults": faults}[MODE]()
