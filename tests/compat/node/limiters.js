// The rate-limit libraries of Node.js, run unchanged against Redis and
// rlserver: express-rate-limit with rate-limit-redis (through ioredis and
// through node-redis) and rate-limiter-flexible's RateLimiterRedis
// (ioredis). The driver (tests/compat/driver/limiters.go) runs this
// program against redis-server, a durable rlserver node and a three-node
// rlserver cluster, and compares the decisions it prints, one per line:
//
//   VERSION <TAB> version
//   DECISION <TAB> step <TAB> outcome
//
//   node limiters.js express-ioredis|express-node-redis|flexible
//
// LIMITER_MODE (single or cluster), LIMITER_ADDRS (host:port,...) and
// LIMITER_PREFIX say where and under which keys.
'use strict';

const mode = process.env.LIMITER_MODE;
const addrs = (process.env.LIMITER_ADDRS || '').split(',').filter(Boolean);
const prefix = process.env.LIMITER_PREFIX || 'limiters:';
const lib = process.argv[2];

function out(...fields) {
  process.stdout.write(fields.join('\t') + '\n');
}
const decision = (step, outcome) => out('DECISION', step, outcome);

function hostPort(a) {
  const i = a.lastIndexOf(':');
  return { host: a.slice(0, i), port: Number(a.slice(i + 1)) };
}

async function ioredisClient() {
  const Redis = require('ioredis');
  if (mode === 'cluster') {
    const c = new Redis.Cluster(addrs.map(hostPort), { redisOptions: { protocol: 2 } });
    await new Promise((resolve, reject) => { c.once('ready', resolve); c.once('error', reject); });
    return c;
  }
  const c = new Redis({ ...hostPort(addrs[0]), protocol: 2 });
  await c.ping();
  return c;
}

async function nodeRedisClient() {
  const { createClient, createCluster } = require('redis');
  const c = mode === 'cluster'
    ? createCluster({ rootNodes: addrs.map((a) => ({ url: `redis://${a}` })) })
    : createClient({ url: `redis://${addrs[0]}` });
  c.on('error', () => {});
  await c.connect();
  return c;
}

// A fake request and response for the middleware, as Express would pass
// them: what express-rate-limit reads and writes.
function exchange(ip) {
  const headers = {};
  const res = {
    statusCode: 200, headersSent: false, headers,
    setHeader(k, v) { headers[k.toLowerCase()] = String(v); return this; },
    getHeader(k) { return headers[k.toLowerCase()]; },
    append(k, v) { headers[k.toLowerCase()] = String(v); return this; },
    status(c) { this.statusCode = c; return this; },
    send() { this.sent = true; return this; },
    json() { this.sent = true; return this; },
    end() { this.sent = true; return this; },
    on() { return this; },
  };
  const req = { ip, method: 'GET', path: '/', url: '/', headers: {}, app: { get() { return false; } } };
  return { req, res };
}

// express-rate-limit's middleware over rate-limit-redis: 5 requests a
// minute, 8 requests, then the store's own calls.
async function expressScenario(client, sendCommand) {
  const { rateLimit } = require('express-rate-limit');
  const { RedisStore } = require('rate-limit-redis');
  const store = new RedisStore({ ...sendCommand, prefix: prefix + 'erl:' });
  const limiter = rateLimit({ windowMs: 60_000, limit: 5, store, standardHeaders: 'draft-6', legacyHeaders: false, validate: false });
  for (let i = 1; i <= 8; i++) {
    const { req, res } = exchange('10.0.0.1');
    let passed = false;
    await limiter(req, res, () => { passed = true; });
    decision(`request ${i}`, `${passed ? 'allowed' : 'denied ' + res.statusCode} remaining=${res.headers['ratelimit-remaining']}`);
  }
  const got = await store.get('10.0.0.1');
  decision('get', `totalHits=${got && got.totalHits}`);
  const missing = await store.get('10.0.0.9');
  decision('get missing', `totalHits=${missing && missing.totalHits}`);
  await store.decrement('10.0.0.1');
  decision('decrement', `totalHits=${(await store.get('10.0.0.1')).totalHits}`);
  await store.resetKey('10.0.0.1');
  const after = await store.increment('10.0.0.1');
  decision('after reset', `totalHits=${after.totalHits}`);
}

// rate-limiter-flexible's RateLimiterRedis: 5 points a minute, 8
// consumptions of 1, one of 2 on another key, then get, penalty, reward,
// delete and block.
async function flexibleScenario(client) {
  const { RateLimiterRedis } = require('rate-limiter-flexible');
  const limiter = new RateLimiterRedis({ storeClient: client, points: 5, duration: 60, keyPrefix: prefix + 'rlf' });
  const show = (r) => `consumed=${r.consumedPoints} remaining=${r.remainingPoints}`;
  for (let i = 1; i <= 8; i++) {
    try {
      decision(`consume ${i}`, 'allowed ' + show(await limiter.consume('user1')));
    } catch (r) {
      decision(`consume ${i}`, r instanceof Error ? 'error ' + r.message : 'denied ' + show(r));
    }
  }
  decision('consume 2', 'allowed ' + show(await limiter.consume('user2', 2)));
  const got = await limiter.get('user1');
  decision('get', got ? show(got) : 'null');
  decision('get missing', String(await limiter.get('nobody')));
  decision('penalty', show(await limiter.penalty('user2', 1)));
  decision('reward', show(await limiter.reward('user2', 2)));
  decision('delete', String(await limiter.delete('user1')));
  decision('block', show(await limiter.block('user3', 30)));
  try {
    await limiter.consume('user3');
    decision('consume blocked', 'allowed');
  } catch (r) {
    decision('consume blocked', r instanceof Error ? 'error ' + r.message : 'denied ' + show(r));
  }
}

async function main() {
  const pkg = (name) => JSON.parse(require('fs').readFileSync(require('path').join(__dirname, 'node_modules', name, 'package.json'))).version;
  let client;
  switch (lib) {
    case 'express-ioredis':
      out('VERSION', `express-rate-limit ${pkg('express-rate-limit')}, rate-limit-redis ${pkg('rate-limit-redis')}, ioredis ${pkg('ioredis')}`);
      client = await ioredisClient();
      await expressScenario(client, { sendCommand: (command, ...args) => client.call(command, ...args) });
      break;
    case 'express-node-redis':
      out('VERSION', `express-rate-limit ${pkg('express-rate-limit')}, rate-limit-redis ${pkg('rate-limit-redis')}, redis ${pkg('redis')}`);
      client = await nodeRedisClient();
      await expressScenario(client, mode === 'cluster'
        ? { sendCommandCluster: ({ key, isReadOnly, command }) => client.sendCommand(key, isReadOnly, command) }
        : { sendCommand: (...args) => client.sendCommand(args) });
      break;
    case 'flexible':
      out('VERSION', `rate-limiter-flexible ${pkg('rate-limiter-flexible')}, ioredis ${pkg('ioredis')}`);
      client = await ioredisClient();
      await flexibleScenario(client);
      break;
    default:
      throw new Error('unknown library ' + lib);
  }
  if (client.quit) await client.quit(); else await client.close();
}

main().then(() => process.exit(0), (err) => {
  process.stderr.write(`limiters ${lib}: ${err && err.stack || err}\n`);
  process.exit(1);
});
