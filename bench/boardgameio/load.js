'use strict';
// The peer's load generator, in a process of its own:
//
//   node load.js --server http://127.0.0.1:8000 --matches 200 [--rate 0] [--seed 1]
//                [--server-pid PID] [--timeout 300] [--json out.jsonl] [--label TEXT] [--trace FILE]
//
// It creates the matches through the lobby (both seats joined), opens one socket.io client per seat
// (websocket transport, no multiplexing) and waits until every client has its state. Then seat 0 of
// every match moves, and from then on a client moves when an update from the server says it is its
// turn: at once (`--rate 0`, a closed loop), or, with `--rate R`, each match at most every M/R
// seconds, the matches' starts staggered, never catching up when behind (an offered rate of R
// moves/s). A move's latency runs from the client's call to the server's update carrying the next
// stateID (not the client's optimistic update). The server's CPU and RSS come from /proc/<pid>.
// It prints one JSON report line (plylog's bench/peer.py reads it) and exits 0, or 3 when the
// matches did not all finish within --timeout seconds.

const fs = require('fs');
const { execSync } = require('child_process');
const { performance } = require('perf_hooks');
const { Client, LobbyClient } = require('boardgame.io/client');
const { SocketIO } = require('boardgame.io/multiplayer');
const { Strands, randomMove } = require('./strands');

const DEFAULTS = {
  server: 'http://127.0.0.1:8000', matches: 50, rate: 0, seed: 1, serverPid: 0, timeout: 300,
  json: '', label: '', trace: '', parallel: 25,
};
const LOBBY_TIMEOUT_MS = 10_000;
const SYNC_TIMEOUT_MS = 60_000;

function options(argv) {
  const opts = { ...DEFAULTS };
  for (let i = 2; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, '').replace(/-(\w)/g, (_, c) => c.toUpperCase());
    if (!(name in DEFAULTS)) throw new Error(`unknown option ${argv[i]}`);
    opts[name] = typeof DEFAULTS[name] === 'number' ? Number(argv[i + 1]) : argv[i + 1];
  }
  const host = new URL(opts.server).hostname;
  if (!['localhost', '[::1]'].includes(host) && !host.startsWith('127.')) throw new Error('a loopback server only');
  return opts;
}

// A small seeded generator (splitmix32), so a seed gives the same moves.
function seeded(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 2 ** 32;
  };
}

const pause = (ms) => new Promise((done) => setTimeout(done, ms));

async function inParallel(items, limit, work) {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++];
      await work(item);
    }
  });
  await Promise.all(lanes);
}

async function until(condition, ms, what) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await pause(20);
  }
}

const TICKS = Number(execSync('getconf CLK_TCK').toString()) || 100;
function sample(pid) {
  if (!pid) return null;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (key) => Number((status.match(new RegExp(`${key}:\\s+(\\d+)`)) || [])[1] || 0);
    return { cpuS: (Number(fields[11]) + Number(fields[12])) / TICKS, rssKib: kib('VmRSS'), hwmKib: kib('VmHWM') };
  } catch {
    return null;
  }
}

const quantile = (sorted, q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] : NaN);
const round3 = (x) => Math.round(x * 1000) / 1000;

async function setUp(opts) {
  const lobby = new LobbyClient({ server: opts.server });
  const matches = Array.from({ length: opts.matches }, (_, n) => ({ n, moves: 0, over: null, nextAt: 0 }));
  await inParallel(matches, opts.parallel, async (match) => {
    const signal = () => ({ signal: AbortSignal.timeout(LOBBY_TIMEOUT_MS) });
    match.id = (await lobby.createMatch('strands', { numPlayers: 2 }, signal())).matchID;
    match.seats = [];
    for (const playerID of ['0', '1']) {
      const joined = await lobby.joinMatch('strands', match.id, { playerID, playerName: `p${match.n}-${playerID}` }, signal());
      const client = Client({
        game: Strands, matchID: match.id, playerID, credentials: joined.playerCredentials, debug: false,
        multiplayer: SocketIO({ server: opts.server, socketOpts: { transports: ['websocket'], forceNew: true } }),
      });
      match.seats.push({ match, playerID, client, random: seeded(opts.seed * 7919 + match.n * 2 + Number(playerID)), sent: null });
    }
    for (const seat of match.seats) seat.client.start();
    await until(() => match.seats.every((seat) => seat.client.getState()), SYNC_TIMEOUT_MS, `the clients of ${match.id}`);
  });
  return matches;
}

async function play(opts, matches) {
  const latencies = [];
  const trace = [];
  const perSecond = [];
  const gap = opts.rate > 0 ? (opts.matches / opts.rate) * 1000 : 0; // ms between two moves of one match
  let start = 0;
  let finishedAt = 0;
  let over = 0;
  let finish;
  const done = new Promise((resolve) => { finish = resolve; });

  const move = (seat) => {
    const state = seat.client.getState();
    if (!state || state.ctx.gameover || state.ctx.currentPlayer !== seat.playerID || seat.sent) return;
    seat.sent = { stateID: state._stateID + 1, at: performance.now() };
    seat.client.moves.place(randomMove(state.G, seat.random));
  };
  const schedule = (seat) => {
    if (!gap) return move(seat);
    const now = performance.now();
    const due = Math.max(seat.match.nextAt, now);
    seat.match.nextAt = due + gap;
    if (due - now < 1) return move(seat);
    return setTimeout(() => move(seat), due - now);
  };

  for (const match of matches) {
    for (const seat of match.seats) {
      // Listens after the transport's own listener: the client's store already holds this state.
      seat.client.transport.socket.on('update', (_id, state) => {
        const now = performance.now();
        if (seat.sent && state._stateID >= seat.sent.stateID) {
          latencies.push(now - seat.sent.at);
          if (opts.trace) trace.push(`${Math.round(seat.sent.at - start)} ${round3(now - seat.sent.at)}`);
          const second = Math.floor((now - start) / 1000);
          perSecond[second] = (perSecond[second] || 0) + 1;
          seat.sent = null;
          match.moves += 1;
        }
        if (state.ctx.gameover) {
          if (!match.over) {
            match.over = state.ctx.gameover;
            match.full = state.G.empty === 0;
            over += 1;
            if (over === matches.length) {
              finishedAt = now;
              finish();
            }
          }
        } else if (state.ctx.currentPlayer === seat.playerID && !seat.sent) {
          schedule(seat);
        }
      });
    }
  }

  start = performance.now();
  for (const match of matches) {
    match.nextAt = start + (gap * match.n) / matches.length;
    schedule(match.seats[0]);
  }
  const timer = setTimeout(finish, opts.timeout * 1000);
  await done;
  clearTimeout(timer);
  return { latencies, trace, perSecond, start, end: finishedAt || performance.now(), complete: over === matches.length, over };
}

async function main() {
  const opts = options(process.argv);
  const setupStart = performance.now();
  const matches = await setUp(opts);
  const setupS = (performance.now() - setupStart) / 1000;
  const serverBefore = sample(opts.serverPid);
  const rssSamples = [];
  const sampler = setInterval(() => {
    const now = sample(opts.serverPid);
    if (now) rssSamples.push(now.rssKib);
  }, 250);
  const cpuBefore = process.cpuUsage();
  const run = await play(opts, matches);
  clearInterval(sampler);
  const cpu = process.cpuUsage(cpuBefore);
  const serverAfter = sample(opts.serverPid);
  const seconds = (run.end - run.start) / 1000;
  const moves = run.latencies.length;
  const sorted = run.latencies.sort((a, b) => a - b);
  const wholeSeconds = run.perSecond.slice(1, Math.floor(seconds)).map((n) => n || 0).sort((a, b) => a - b);
  const wins = { 0: 0, 1: 0, draw: 0 };
  for (const match of matches) if (match.over) wins[match.over.winner ?? 'draw'] += 1;

  const report = {
    label: opts.label, matches: opts.matches, offeredRate: opts.rate, complete: run.complete, matchesDone: run.over,
    setupS: round3(setupS), elapsedS: round3(seconds), moves,
    movesPerS: round3(moves / seconds), matchesPerS: round3(run.over / seconds),
    movesPerMatch: round3(moves / Math.max(1, run.over)),
    steadyMovesPerS: wholeSeconds.length ? wholeSeconds[Math.floor(wholeSeconds.length / 2)] : null,
    latencyMs: {
      n: moves, p50: round3(quantile(sorted, 0.5)), p95: round3(quantile(sorted, 0.95)), p99: round3(quantile(sorted, 0.99)),
      max: round3(sorted[sorted.length - 1]), mean: round3(sorted.reduce((a, b) => a + b, 0) / moves),
    },
    server: serverBefore && serverAfter ? {
      cpuPct: round3(((serverAfter.cpuS - serverBefore.cpuS) / seconds) * 100),
      rssMbStart: round3(serverBefore.rssKib / 1024),
      rssMbPeak: round3(Math.max(serverBefore.rssKib, serverAfter.rssKib, ...rssSamples) / 1024),
      rssMbEnd: round3(serverAfter.rssKib / 1024),
      hwmMb: round3(serverAfter.hwmKib / 1024),
    } : null,
    loader: { cpuPct: round3(((cpu.user + cpu.system) / 1e6 / seconds) * 100), rssMb: round3(process.memoryUsage().rss / 2 ** 20) },
    wins,
    boardsFull: matches.filter((m) => m.full).length,
  };
  const line = JSON.stringify(report);
  console.log(line);
  if (opts.json) fs.appendFileSync(opts.json, `${line}\n`);
  if (opts.trace) fs.writeFileSync(opts.trace, `${run.trace.join('\n')}\n`);
  for (const match of matches) for (const seat of match.seats) seat.client.stop();
  await pause(200);
  process.exit(run.complete ? 0 : 3);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
