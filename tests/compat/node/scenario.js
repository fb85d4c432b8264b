'use strict';
// rlserver's compatibility scenario through one Node.js client library:
//
//   node scenario.js ioredis6|ioredis5|redis6|redis5|redis4
//
// The names are the aliases package.json installs each pinned version
// under. One of the scenario programs tests/compat/run starts: the driver
// gives the servers in COMPAT_* variables and reads the RESULT lines this
// prints (see tests/compat/README.md).

const LIB = process.argv[2];
const MODE = process.env.COMPAT_MODE;
const ADDRS = process.env.COMPAT_ADDRS.split(',');
const AUTH_ADDRS = process.env.COMPAT_AUTH_ADDRS.split(',');
const PASSWORD = process.env.COMPAT_PASSWORD;
const PREFIX = process.env.COMPAT_PREFIX;
const SHARD_KEYS = (process.env.COMPAT_SHARD_KEYS || '').split(',').filter(Boolean);
const SHARD_LEADERS = (process.env.COMPAT_SHARD_LEADERS || '').split(',').filter(Boolean);
// An hour: no run crosses a window boundary, where sliding weights shift.
const WINDOW = 3600000;
const FIELDS = ['allowed', 'limit', 'remaining', 'retry_after_ms', 'reset_after_ms'];
// A membership stage waits for the driver to change the cluster as well.
const CASE_TIMEOUT = MODE === 'membership' ? 150000 : 30000;
const IOREDIS = LIB.startsWith('ioredis');
const VERSION = require(`${LIB}/package.json`).version;
const NAME = `compat-${LIB}`;

function hostPort(addr) {
  const i = addr.lastIndexOf(':');
  return { host: addr.slice(0, i), port: Number(addr.slice(i + 1)) };
}

// keySlot is Redis Cluster's slot of a key (CRC16-XMODEM of the key or its
// hash tag, mod 16384).
function keySlot(key) {
  const i = key.indexOf('{');
  if (i >= 0) {
    const j = key.indexOf('}', i + 1);
    if (j > i + 1) key = key.slice(i + 1, j);
  }
  let crc = 0;
  for (const b of Buffer.from(key)) {
    crc ^= b << 8;
    for (let k = 0; k < 8; k++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

function result(name, status, detail = '') {
  detail = String(detail).split(/\s+/).join(' ').trim();
  process.stdout.write(`RESULT\t${LIB}\t${VERSION}\t${MODE}\t${name}\t${status}\t${detail}\n`);
}

async function run(name, fn) {
  let timer;
  try {
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${CASE_TIMEOUT} ms`)), CASE_TIMEOUT);
    });
    result(name, 'PASS', (await Promise.race([fn(), timeout])) || '');
  } catch (e) {
    result(name, 'FAIL', `${e && e.name}: ${e && e.message}`);
  } finally {
    clearTimeout(timer);
  }
}

// control asks the driver to act on the servers and returns its answer.
const stdinLines = [];
const stdinWaiters = [];
let stdinBuf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  stdinBuf += chunk;
  let i;
  while ((i = stdinBuf.indexOf('\n')) >= 0) {
    const line = stdinBuf.slice(0, i);
    stdinBuf = stdinBuf.slice(i + 1);
    if (stdinWaiters.length) stdinWaiters.shift()(line);
    else stdinLines.push(line);
  }
});
async function control(...args) {
  process.stdout.write(`CONTROL\t${args.join('\t')}\n`);
  const line = stdinLines.length ? stdinLines.shift() : await new Promise((r) => stdinWaiters.push(r));
  if (!line.startsWith('OK\t')) throw new Error(`control ${args}: ${line}`);
  return line.slice(3);
}

// decision reads an RL.* or CL.THROTTLE reply, whatever shape the library
// gave it: an array of 5, a map (Map or object), or ioredis 6's RESP3 map
// flattened into [name, value, ...].
function decision(reply) {
  if (Array.isArray(reply) && reply.length === 5 && reply.every((x) => typeof x === 'number')) {
    return { v: reply, shape: 'array' };
  }
  if (Array.isArray(reply) && reply.length === 10 && reply[0] === 'allowed') {
    const o = {};
    for (let i = 0; i < 10; i += 2) o[reply[i]] = reply[i + 1];
    return { v: FIELDS.map((f) => o[f]), shape: 'flat map' };
  }
  if (reply instanceof Map) {
    return { v: FIELDS.map((f) => reply.get(f)), shape: 'map' };
  }
  if (reply && typeof reply === 'object' && !Array.isArray(reply) && 'allowed' in reply) {
    return { v: FIELDS.map((f) => reply[f]), shape: 'map' };
  }
  throw new Error(`reply ${JSON.stringify(reply)}: want 5 integers`);
}

function want(reply, allowed, limit, remaining, retry, reset, shape) {
  const d = decision(reply);
  if (shape && d.shape !== shape) throw new Error(`reply ${JSON.stringify(reply)} came as ${d.shape}, want ${shape}`);
  const v = d.v;
  const ok = v[0] === allowed && v[1] === limit && v[2] === remaining && v[3] === retry &&
    (reset === undefined ? v[4] > 0 : v[4] === reset);
  if (!ok) throw new Error(`reply ${JSON.stringify(v)}, want ${JSON.stringify([allowed, limit, remaining, retry, reset])} (reset: any positive)`);
  return d.shape;
}

// checkSequence checks replies to RL.SLIDING key limit on fresh keys, in
// order: on each key the first `limit` allowed counting down, the rest
// refused.
function checkSequence(keys, replies, limit) {
  if (replies.length !== keys.length) throw new Error(`${replies.length} replies to ${keys.length} decisions`);
  const seen = new Map();
  replies.forEach((r, i) => {
    const n = seen.get(keys[i]) || 0;
    seen.set(keys[i], n + 1);
    if (r instanceof Error) throw new Error(`decision ${i + 1} (${keys[i]}): ${r.message}`);
    if (n < limit) {
      want(r, 1, limit, limit - 1 - n, 0);
    } else {
      const { v } = decision(r);
      if (v[0] !== 0 || v[2] !== 0 || v[3] <= 0) throw new Error(`decision ${i + 1}: ${JSON.stringify(v)}, want refused with a wait`);
    }
  });
}

function pipelineKeys(name, n, oneSlot) {
  if (MODE === 'single' || oneSlot) {
    const k = MODE === 'single' ? PREFIX + name : SHARD_KEYS[0] + ':' + name;
    return { keys: Array(n).fill(k), limit: n / 2 };
  }
  return { keys: Array.from({ length: n }, (_, i) => `${SHARD_KEYS[i % SHARD_KEYS.length]}:${name}`), limit: 10 };
}

// lib wraps the library's API in the few calls the cases use.
function lib() {
  const mod = require(LIB);
  if (IOREDIS) {
    const Redis = mod.default || mod.Redis || mod;
    const wrap = (r) => ({
      raw: r,
      ping: () => r.ping(),
      cmd: (...args) => r.call(...args),
      getName: () => r.client('GETNAME'),
      // ioredis's pipeline() and multi() exec to [[err, reply], ...].
      pipeline: async (cmds) => {
        const p = r.pipeline();
        for (const c of cmds) p.call(...c);
        return (await p.exec()).map(([e, v]) => e || v);
      },
      multi: async (cmds) => {
        const m = r.multi();
        for (const c of cmds) m.call(...c);
        return (await m.exec()).map(([e, v]) => e || v);
      },
      close: () => r.disconnect(),
    });
    return {
      client: async (addr, opts = {}) => {
        const o = { ...hostPort(addr) };
        if (opts.auth) Object.assign(o, { password: PASSWORD, connectionName: NAME, db: 0 });
        if (opts.resp2) o.protocol = 2;
        if (opts.replyMapping) o.replyMapping = opts.replyMapping;
        const r = new Redis(o);
        r.on('error', () => {});
        return wrap(r);
      },
      cluster: async (addrs, opts = {}) => {
        const o = {};
        if (opts.auth) o.redisOptions = { password: PASSWORD, connectionName: NAME };
        if (opts.slotsRefreshInterval) o.slotsRefreshInterval = opts.slotsRefreshInterval;
        const c = new Redis.Cluster(addrs.map(hostPort), o);
        c.on('error', () => {});
        await new Promise((resolve, reject) => {
          c.once('ready', resolve);
          c.once('end', () => reject(new Error('cluster connection ended')));
        });
        const w = wrap(c);
        w.nodes = () => [...new Set(c.nodes('all').map((n) => `${n.options.host}:${n.options.port}`))];
        w.slotMaster = (slot) => c.slots[slot][0];
        w.getNames = () => Promise.all(c.nodes('all').map((n) => n.client('GETNAME')));
        return w;
      },
    };
  }
  const { createClient, createCluster } = mod;
  const str = (args) => args.map(String);
  const wrapClient = (c) => ({
    raw: c,
    ping: () => c.ping(),
    cmd: (...args) => c.sendCommand(str(args)),
    getName: () => c.sendCommand(['CLIENT', 'GETNAME']),
    // node-redis pipelines the commands issued in one tick by itself.
    pipeline: (cmds) => Promise.all(cmds.map((a) => c.sendCommand(str(a)).catch((e) => e))),
    multi: (cmds) => {
      const m = c.multi();
      for (const a of cmds) m.addCommand(str(a));
      return m.exec();
    },
    close: () => c.disconnect(),
  });
  return {
    client: async (addr, opts = {}) => {
      const { host, port } = hostPort(addr);
      const o = { socket: { host, port, connectTimeout: 5000 } };
      if (opts.auth) Object.assign(o, { password: PASSWORD, name: NAME, database: 0 });
      if (opts.resp3) o.RESP = 3;
      const c = createClient(o);
      c.on('error', () => {});
      await c.connect();
      return wrapClient(c);
    },
    cluster: async (addrs, opts = {}) => {
      const o = { rootNodes: addrs.map((a) => ({ url: `redis://${a}` })) };
      if (opts.auth) o.defaults = { password: PASSWORD, name: NAME };
      const c = createCluster(o);
      c.on('error', () => {});
      await c.connect();
      const key = (args) => (args.length > 1 ? String(args[1]) : undefined);
      return {
        raw: c,
        ping: () => c.sendCommand(undefined, true, ['PING']),
        cmd: (...args) => c.sendCommand(key(args), false, str(args)),
        pipeline: (cmds) => Promise.all(cmds.map((a) => c.sendCommand(key(a), false, str(a)).catch((e) => e))),
        // node-redis 4 lists a master once per slot range it serves.
        nodes: () => [...new Set([...(c.masters || c.getMasters()), ...(c.replicas || c.getReplicas())].map((m) => `${m.host}:${m.port}`))],
        slotMaster: (slot) => `${c.slots[slot].master.host}:${c.slots[slot].master.port}`,
        getNames: async () => {
          const out = [];
          for (const m of c.masters || c.getMasters()) {
            const n = await c.nodeClient(m);
            out.push(await n.sendCommand(['CLIENT', 'GETNAME']));
          }
          return out;
        },
        close: () => c.disconnect(),
      };
    },
  };
}

// resp3Default: whether the library speaks RESP3 without being asked;
// resp3Option: whether it can be asked to.
const RESP3_DEFAULT = LIB === 'ioredis6' || LIB === 'redis6';
const RESP3_OPTION = LIB === 'redis5';

async function common(c, key) {
  await run('ping', async () => {
    const got = await c.ping();
    if (got !== 'PONG') throw new Error(`PING = ${JSON.stringify(got)}`);
  });
  await run('rl.sliding', async () => {
    want(await c.cmd('RL.SLIDING', key, 10, WINDOW), 1, 10, 9, 0);
    const shape = want(await c.cmd('RL.SLIDING', key, 10, WINDOW), 1, 10, 8, 0);
    return `${IOREDIS ? 'call()' : 'sendCommand()'}; ${RESP3_DEFAULT ? 'RESP3' : 'RESP2'} by default: ${shape === 'array' ? 'an array' : 'a ' + shape}`;
  });
  await run('cl.throttle', async () => {
    want(await c.cmd('CL.THROTTLE', key + ':cell', 15, 30, 60), 0, 16, 15, -1, 2, 'array');
    return 'an array';
  });
  await run('pipeline-100', async () => {
    // ioredis's cluster pipelines must stay on one node: one slot here.
    const { keys, limit } = pipelineKeys('pipe', 100, IOREDIS);
    checkSequence(keys, await c.pipeline(keys.map((k) => ['RL.SLIDING', k, limit, WINDOW])), limit);
    if (IOREDIS) return MODE === 'cluster' ? 'pipeline(), one slot (ioredis: one node per pipeline)' : 'pipeline()';
    return MODE === 'cluster' ? 'commands of one tick, over every shard' : 'commands of one tick (auto-pipelined)';
  });
}

async function single() {
  const L = lib();
  let c;
  await run('connect', async () => {
    c = await L.client(ADDRS[0]);
    const got = await c.ping();
    if (got !== 'PONG') throw new Error(`PING = ${JSON.stringify(got)}`);
    return 'default options';
  });
  if (!c) return;
  await run('connect-auth', async () => {
    const a = await L.client(AUTH_ADDRS[0], { auth: true });
    try {
      if ((await a.ping()) !== 'PONG') throw new Error('PING');
      const name = await a.getName();
      if (name !== NAME) throw new Error(`CLIENT GETNAME = ${JSON.stringify(name)}`);
      want(await a.cmd('RL.SLIDING', PREFIX + 'auth', 10, WINDOW), 1, 10, 9, 0);
      return IOREDIS ? 'password, connectionName, db 0' : 'password, name, database 0';
    } finally {
      a.close();
    }
  });
  await common(c, PREFIX + 'sliding');
  await run('transaction', async () => {
    const k = PREFIX + 'tx';
    checkSequence([k, k, k], await c.multi([0, 1, 2].map(() => ['RL.SLIDING', k, 10, WINDOW])), 10);
    return 'multi(): MULTI, 3 decisions, EXEC';
  });
  await run('error', async () => {
    try {
      await c.cmd('RL.SLIDING', PREFIX + 'err', 0, 1000);
    } catch (e) {
      if (!/limit must be/.test(e.message)) throw new Error(`error ${e.message}`);
      return `rejected: ${e.message}`;
    }
    throw new Error('RL.SLIDING with limit 0 did not fail');
  });
  if (RESP3_DEFAULT || RESP3_OPTION) {
    await run('resp3', async () => {
      const r = RESP3_DEFAULT ? c : await L.client(ADDRS[0], { resp3: true });
      try {
        const k = PREFIX + 'resp3';
        const shape = want(await r.cmd('RL.SLIDING', k, 10, WINDOW), 1, 10, 9, 0);
        if (shape === 'array') throw new Error('RL.SLIDING came as an array, want a map');
        want(await r.cmd('CL.THROTTLE', k + ':cell', 15, 30, 60), 0, 16, 15, -1, 2, 'array');
        return `${RESP3_DEFAULT ? 'default' : 'RESP: 3'}: RL.SLIDING a ${shape}, CL.THROTTLE an array`;
      } finally {
        if (r !== c) r.close();
      }
    });
  } else {
    result('resp3', 'N/A', `${LIB} speaks RESP2 only`);
  }
  if (IOREDIS && RESP3_DEFAULT) {
    await run('resp3-mapping', async () => {
      const r = await L.client(ADDRS[0], { replyMapping: 'resp3' });
      try {
        want(await r.cmd('RL.SLIDING', PREFIX + 'mapping', 10, WINDOW), 1, 10, 9, 0, undefined, 'map');
        return 'replyMapping: "resp3": a map';
      } finally {
        r.close();
      }
    });
    await run('resp2', async () => {
      const r = await L.client(ADDRS[0], { resp2: true });
      try {
        want(await r.cmd('RL.SLIDING', PREFIX + 'resp2', 10, WINDOW), 1, 10, 9, 0, undefined, 'array');
        return 'protocol: 2: an array';
      } finally {
        r.close();
      }
    });
  }
  c.close();
}

async function cluster() {
  const L = lib();
  let c;
  await run('discovery', async () => {
    // Seeded with one node: the others are discovered.
    c = await L.cluster(ADDRS.slice(0, 1));
    if ((await c.ping()) !== 'PONG') throw new Error('PING');
    const nodes = c.nodes();
    if (nodes.length !== ADDRS.length) throw new Error(`nodes ${nodes}, want the ${ADDRS.length} nodes`);
    SHARD_KEYS.forEach((k, i) => {
      const got = c.slotMaster(keySlot(k));
      if (got !== SHARD_LEADERS[i]) throw new Error(`slot of ${k} maps to ${got}, want the shard's leader ${SHARD_LEADERS[i]}`);
    });
    return `seeded with 1 node, found the ${nodes.length} nodes; each shard's key maps to its leader`;
  });
  if (!c) return;
  await run('connect-auth', async () => {
    const a = await L.cluster(AUTH_ADDRS.slice(0, 1), { auth: true });
    try {
      for (const k of SHARD_KEYS) want(await a.cmd('RL.SLIDING', k + ':auth', 10, WINDOW), 1, 10, 9, 0);
      const names = await a.getNames();
      if (!names.every((n) => n === NAME)) throw new Error(`CLIENT GETNAME ${JSON.stringify(names)}`);
      return `${IOREDIS ? 'redisOptions' : 'defaults'}: password, name; a decision on every shard`;
    } finally {
      a.close();
    }
  });
  await common(c, SHARD_KEYS[0]);
  await run('spread', async () => {
    for (const round of [1, 2]) {
      for (const k of SHARD_KEYS) want(await c.cmd('RL.SLIDING', k + ':spread', 10, WINDOW), 1, 10, 10 - round, 0);
    }
    return `${SHARD_KEYS.length} shards, 2 decisions each`;
  });
  const f = await L.cluster(ADDRS);
  const key = SHARD_KEYS[1] + ':fo';
  const decide = (k) => f.cmd('RL.SLIDING', k, 1000, WINDOW);
  await run('failover', async () => {
    await decide(key);
    const killed = await control('kill-leader', key);
    const start = Date.now();
    const errors = [];
    for (;;) {
      try {
        await withTimeout(decide(key), 5000);
        break;
      } catch (e) {
        errors.push(`${e.name}: ${e.message}`);
        if (Date.now() - start > 20000) {
          // Say whether the client comes back once the node is up again.
          await control('restart');
          const back = Date.now();
          let after = 'still failing 20 s after the node restarted';
          while (Date.now() - back < 20000) {
            try {
              await withTimeout(decide(key), 5000);
              after = `answering again ${((Date.now() - back) / 1000).toFixed(1)}s after the node restarted`;
              break;
            } catch (e) {
              await new Promise((r) => setTimeout(r, 100));
            }
          }
          throw new Error(`no decision within 20 s of killing ${killed}; ${errors.length} errors: ${summarize(errors)}; ${after}`);
        }
        await new Promise((r) => setTimeout(r, 100)); // a retry's back-off
      }
    }
    const took = (Date.now() - start) / 1000;
    for (let i = 0; i < 20; i++) await decide(key);
    for (const k of SHARD_KEYS) await decide(k + ':after');
    let detail = `killed ${killed}; answering again after ${took.toFixed(1)}s`;
    if (errors.length) detail += `, ${errors.length} errors meanwhile: ${summarize(errors)}`;
    return detail;
  });
  await run('failback', async () => {
    const restarted = await control('restart');
    for (let i = 0; i < 20; i++) await decide(key);
    for (const k of SHARD_KEYS) await decide(k + ':back');
    return `${restarted}; 20 decisions, and one on every shard`;
  });
  f.close();
  result('transaction', 'N/A', 'not run in a cluster');
  c.close();
}

function withTimeout(p, ms) {
  let t;
  return Promise.race([p, new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`no answer in ${ms} ms`)), ms); })])
    .finally(() => clearTimeout(t));
}

function summarize(errors) {
  const counts = new Map();
  for (const e of errors) counts.set(e.slice(0, 120), (counts.get(e.slice(0, 120)) || 0) + 1);
  return [...counts].map(([e, n]) => `${n}x ${JSON.stringify(e)}`).sort().join('; ');
}

// The membership scenario (tests/compat/README.md): a cluster client
// seeded with the three original nodes keeps a steady load of decisions
// while the driver grows, shrinks and repairs the cluster. The load: keys
// spread over every slot with a limit never reached (every acknowledged
// grant must still be counted), and one key per shard with a small limit,
// reached early (a grant beyond it would show a state lost in a move).
// tests/compat/gocompat/membership.go is the same in Go.
const LOAD_KEYS = 64;
const LOAD_LIMIT = 1000000;
const SMALL_LIMIT = 20;
const LOAD_WORKERS = 2;
const FOLLOW_BUDGET = 12000;

async function membership() {
  const L = lib();
  // ioredis keeps its slot map until a MOVED, and only the connection
  // that asked for the topology gets MOVED from rlserver (the others are
  // forwarded): without a periodic refresh it keeps mapping a forgotten
  // node's slots to it, and sends them to a random node, which forwards
  // them. docs/clients.md says so.
  const c = await L.cluster(ADDRS, { slotsRefreshInterval: 2000 });
  const settings = IOREDIS ? 'slotsRefreshInterval: 2000, seeded with the 3 original nodes' : 'defaults, seeded with the 3 original nodes';
  let ok = 0;
  let errors = {};
  let tries = 0;
  const acked = new Map();
  const admitted = new Map();
  let stopped = false;
  const decide = async (key, limit) => {
    const [allowed, , remaining] = decision(await withTimeout(c.cmd('RL.SLIDING', key, limit, WINDOW), 10000)).v;
    return { allowed: allowed === 1, remaining };
  };
  // An error's kind: its Redis error code (TRYAGAIN, MOVED, ...), or the
  // library's code or name with the start of its message.
  const errKind = (e) => {
    const msg = String((e && e.message) || e);
    const word = msg.split(' ')[0];
    if (/^[A-Z]+$/.test(word)) return word;
    return `${(e && (e.code || e.name)) || 'Error'} (${msg.slice(0, 40)})`;
  };
  const ask = async (key, limit, small) => {
    tries += small ? 1 : 0;
    try {
      const { allowed } = await decide(key, limit);
      ok++;
      if (allowed) {
        const m = small ? admitted : acked;
        m.set(key, (m.get(key) || 0) + 1);
      }
    } catch (e) {
      const k = errKind(e);
      errors[k] = (errors[k] || 0) + 1;
      await new Promise((r) => setTimeout(r, 50)); // a retry's back-off
    }
  };
  const worker = async (w) => {
    for (let i = w; !stopped; i += LOAD_WORKERS) {
      await ask(`${PREFIX}m:${i % LOAD_KEYS}`, LOAD_LIMIT, false);
      await ask(`${SHARD_KEYS[i % SHARD_KEYS.length]}:small`, SMALL_LIMIT, true);
    }
  };
  const since = () => {
    const out = { ok, errors };
    ok = 0;
    errors = {};
    return out;
  };
  const kinds = (errs) => Object.entries(errs).sort().map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
  const view = () => SHARD_KEYS.map((k) => {
    try {
      return c.slotMaster(keySlot(k)) || '';
    } catch (e) {
      return ''; // no slot map yet: nothing to say
    }
  });
  const workers = [];
  for (let w = 0; w < LOAD_WORKERS; w++) workers.push(worker(w));
  for (const name of ['grow', 'decommission', 'replace']) {
    await run(name, async () => {
      since();
      const [membersList, leadersList, joinedList, did] = (await control('membership', name)).split('\t');
      const members = membersList.split(',');
      const leaders = leadersList.split(',');
      const joined = joinedList.split(',').filter(Boolean);
      const during = since();
      if (during.ok === 0) throw new Error(`no decision during the stage (${did}); errors ${kinds(during.errors)}`);
      const start = Date.now();
      let v;
      for (;;) {
        v = view();
        const stale = [...new Set(v.filter((a) => a && !members.includes(a)))];
        if (!stale.length && (!joined.length || joined.some((a) => v.includes(a)))) break;
        if (Date.now() - start > FOLLOW_BUDGET) {
          throw new Error(`${FOLLOW_BUDGET / 1000}s after the stage, the slot map [${v}]: names nodes gone [${stale}], ` +
            `or none of the nodes joined [${joined}] (members ${members}; ${did})`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      const took = (Date.now() - start) / 1000;
      for (const k of SHARD_KEYS) await decide(`${k}:${name}`, 1000);
      const on = v.filter((a, i) => a === leaders[i]).length;
      return `${during.ok} decisions during the stage, errors ${kinds(during.errors)}; after it the slot map maps ${on} of ` +
        `${leaders.length} shards to their leader, none to a node gone, some to a node joined (${took < 0.2 ? 'at once' : `after ${took.toFixed(1)}s`}), ` +
        `a decision on every shard; ${settings}; driver: ${did}`;
    });
  }
  stopped = true;
  await Promise.all(workers);
  await run('limits', async () => {
    const got = [];
    const over = [];
    for (let k of SHARD_KEYS) {
      k += ':small';
      const { allowed } = await decide(k, SMALL_LIMIT);
      admitted.set(k, (admitted.get(k) || 0) + (allowed ? 1 : 0));
      got.push(admitted.get(k));
      if (admitted.get(k) > SMALL_LIMIT) over.push(`${k}: ${admitted.get(k)}`);
    }
    if (over.length) throw new Error(`granted beyond the limit of ${SMALL_LIMIT}: ${over.join(', ')}`);
    let total = 0;
    for (const [k, n] of acked) {
      const { remaining } = await decide(k, LOAD_LIMIT);
      if (remaining > LOAD_LIMIT - n - 1) {
        throw new Error(`${k}: ${n} grants acknowledged, but the key has ${remaining} of ${LOAD_LIMIT} left: grants were lost`);
      }
      total += n;
    }
    return `small keys (limit ${SMALL_LIMIT}, one per shard): granted [${got}] of ${tries} tries; ` +
      `${total} acknowledged grants on ${acked.size} keys all still counted`;
  });
  c.close();
}

// The faults scenario (tests/compat/driver/faults.go): decisions through a
// client of the first node (which forwards) and a cluster client seeded
// with every node, default options, each decision on a key of its own used
// once, until the driver has killed and frozen leaders; then each client's
// calls and how they failed. tests/compat/gocompat/faults.go is the same in
// Go.
const FAULT_WINDOW = 864000000; // ten days: no run crosses a window's end
const FAULT_LIMIT = 1000000; // never reached
const FAULT_WORKERS = 4;

async function faults() {
  const L = lib();
  const clients = [
    { kind: 'standalone', c: await L.client(ADDRS[0]) },
    { kind: 'cluster', c: await L.cluster(ADDRS) },
  ];
  let stopped = false;
  // An error's code, or the library's name for it; "?" marks a text that
  // says the decision may have been counted.
  const errWord = (e) => {
    const msg = String((e && e.message) || e);
    const word = msg.split(' ')[0];
    const w = /^[A-Z]+$/.test(word) ? word : String((e && (e.code || e.name)) || 'Error');
    return msg.includes('may have been counted') ? `${w}?` : w;
  };
  const worker = async (cl) => {
    while (!stopped) {
      const i = cl.next++;
      try {
        decision(await withTimeout(cl.c.cmd('RL.FIXED', `${PREFIX}f:${cl.kind}:${i}`, FAULT_LIMIT, FAULT_WINDOW), 20000));
      } catch (e) {
        cl.failed.set(i, errWord(e));
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  const workers = [];
  for (const cl of clients) {
    cl.next = 0;
    cl.failed = new Map();
    for (let w = 0; w < FAULT_WORKERS; w++) workers.push(worker(cl));
  }
  let answer = '';
  let err;
  try {
    answer = await control('faults', 'run');
  } catch (e) {
    err = e;
  }
  stopped = true;
  await Promise.all(workers);
  for (const cl of clients) {
    const ids = [...cl.failed.keys()].sort((a, b) => a - b);
    process.stdout.write(`CALLS\t${cl.kind}\t${cl.next}\t${ids.map((i) => `${i}=${cl.failed.get(i)}`).join(',')}\n`);
    const byWord = {};
    for (const w of cl.failed.values()) byWord[w] = (byWord[w] || 0) + 1;
    const kinds = Object.entries(byWord).sort().map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
    if (err) result(`load-${cl.kind}`, 'FAIL', err.message);
    else result(`load-${cl.kind}`, 'PASS', `defaults; ${cl.next} calls, errors: ${kinds}; faults: ${answer}`);
    cl.c.close();
  }
}

({ single, cluster, membership, faults })[MODE]().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
