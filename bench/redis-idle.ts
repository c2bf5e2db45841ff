/**
 * Where one idle agent's Redis commands come from (not a test: it asserts nothing). One simulated
 * agent (`redis-sim-node.ts`: nodelet's real queue, the health sample every 2 s, the resync every
 * 60 s) with `--pods` pods against a private redis-server, nothing changing; for `--window-s`
 * seconds Redis' `MONITOR` shows every command, those its Lua scripts call included. Each command
 * is put down to what sent it: the connection (`CLIENT LIST` names), the command, and for
 * `EVALSHA` BullMQ's script (the SHA1 of each script BullMQ ships); a script's inner commands
 * count with it. The window starts 5 s after the pods ran once and holds one resync.
 *
 *   node --import tsx bench/redis-idle.ts [--pods 30] [--window-s 60] [--rounds 3]
 */
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import * as bullmqScripts from 'bullmq/dist/esm/scripts/index.js';
import { Redis } from 'ioredis';
import { freePort, startRedis } from './redis-server.js';
import { Counters, SimNode } from './redis-sim-node.js';
import { spreadText } from './compare.js';

const SETTLE_MS = 5_000;

/** What each (connection role, command or script) is for, in the words of docs/redis.md. */
const SOURCES: Readonly<Record<string, string>> = {
  'queue set': 'health sample: the sentinel refresh proving Redis answers (and the sentinel tick when no sample ran)',
  'queue evalsha getCounts': 'health sample: job counts, read again after a job change or once a minute',
  'queue mget': 'periodic resync: one look-up of every pod\'s job',
  'queue evalsha moveToActive': 'worker: looks for a job after each blocking wait',
  'blocking bzpopmin': 'worker: blocking wait for a job (drainDelay)',
  'queue evalsha moveStalledJobsToWait': 'worker: stalled-job check (stalledInterval)',
  'queue evalsha addStandardJob': 'enqueue (a pod handed to the queue)',
  'queue evalsha moveToFinished': 'worker: finishing a job',
  'queue evalsha addLog': 'worker: a run record',
  'queue evalsha extendLocks': 'worker: lock renewal of running jobs',
};

interface Tally {
  calls: number;
  inner: number;
}

function scriptNames(): Map<string, string> {
  const names = new Map<string, string>();
  for (const script of Object.values(bullmqScripts) as readonly { readonly name: string; readonly content: string }[]) {
    names.set(createHash('sha1').update(script.content).digest('hex'), script.name);
  }
  return names;
}

/** `queue`, `blocking`, `admin` or the raw name of each connection, by address. */
async function connectionRoles(admin: Redis): Promise<Map<string, string>> {
  const roles = new Map<string, string>();
  for (const line of ((await admin.client('LIST')) as string).split('\n')) {
    const addr = /\baddr=(\S+)/.exec(line)?.[1];
    const name = /\bname=(\S*)/.exec(line)?.[1] ?? '';
    if (addr === undefined) continue;
    roles.set(addr, name === 'nodelet-queue' ? 'queue' : name.includes(':w:') ? 'blocking' : name === 'bench-admin' ? 'admin' : name);
  }
  return roles;
}

/** Counts MONITOR's lines for `seconds`: each top-level command, its script's inner commands with it. */
async function monitorFor(admin: Redis, seconds: number): Promise<Map<string, Tally>> {
  const roles = await connectionRoles(admin);
  const names = scriptNames();
  const tallies = new Map<string, Tally>();
  let current: Tally | undefined;
  let windowOver = false;
  const monitor = await admin.monitor();
  monitor.on('monitor', (_time: string, args: readonly string[], source: string) => {
    if (windowOver) return; // MONITOR's disconnect takes a moment: the shutdown's commands are not the idle agent's
    const command = (args[0] ?? '?').toLowerCase();
    if (source.startsWith('lua')) {
      if (current !== undefined) current.inner += 1;
      return;
    }
    const role = roles.get(source.split(' ').at(-1) ?? '') ?? 'other';
    const key = command === 'evalsha' ? `${role} evalsha ${names.get(args[1] ?? '') ?? 'an unknown script'}` : command === 'eval' ? `${role} eval (nodelet's own script)` : `${role} ${command}`;
    current = tallies.get(key) ?? { calls: 0, inner: 0 };
    tallies.set(key, current);
    current.calls += 1;
  });
  await sleep(seconds * 1000);
  windowOver = true;
  monitor.disconnect();
  return tallies;
}

async function round(url: string, admin: Redis, options: { readonly pods: number; readonly seconds: number }): Promise<Map<string, Tally>> {
  await admin.flushall();
  const node = new SimNode('idle-0', url, new Counters());
  // Phase: the node's resync falls in the middle of the window.
  await node.start(options.pods, (SETTLE_MS / 1000 + options.seconds / 2) / 60);
  try {
    await sleep(SETTLE_MS);
    return await monitorFor(admin, options.seconds);
  } finally {
    await node.close();
  }
}

function print(tallies: readonly Map<string, Tally>[], seconds: number): void {
  const keys = [...new Set(tallies.flatMap((t) => [...t.keys()]))];
  const perSecond = (t: Map<string, Tally>, key: string): number => {
    const tally = t.get(key);
    return tally === undefined ? 0 : (tally.calls + tally.inner) / seconds;
  };
  const rows = keys
    .filter((key) => !key.startsWith('admin'))
    .map((key) => ({ key, values: tallies.map((t) => perSecond(t, key)), calls: tallies.map((t) => t.get(key)?.calls ?? 0) }))
    .sort((a, b) => Math.max(...b.values) - Math.max(...a.values));
  console.log('| source | connection, command | calls per window | commands/s (with a script\'s own) |');
  console.log('| --- | --- | --: | --: |');
  for (const row of rows) console.log(`| ${SOURCES[row.key] ?? 'other'} | ${row.key} | ${row.calls.join(', ')} | ${spreadText(row.values, 2)} |`);
  const totals = tallies.map((t) => [...t.entries()].filter(([key]) => !key.startsWith('admin')).reduce((sum, [, tally]) => sum + tally.calls + tally.inner, 0) / seconds);
  console.log(`| total | | | ${spreadText(totals, 2)} |`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { pods: { type: 'string', default: '30' }, 'window-s': { type: 'string', default: '60' }, rounds: { type: 'string', default: '3' } } });
  const pods = Number(values.pods);
  const seconds = Number(values['window-s']);
  const rounds = Number(values.rounds);
  if (![pods, seconds, rounds].every((n) => Number.isInteger(n) && n > 0)) throw new Error('--pods, --window-s and --rounds want positive integers');
  const port = await freePort();
  const server = await startRedis(port);
  const url = `redis://127.0.0.1:${port}`;
  const admin = new Redis(url, { connectionName: 'bench-admin' });
  try {
    const tallies: Map<string, Tally>[] = [];
    for (let i = 1; i <= rounds; i += 1) {
      tallies.push(await round(url, admin, { pods, seconds }));
      console.log(`round ${i}: one agent, ${pods} pods, ${seconds} s idle`);
    }
    console.log(`\nOne idle agent with ${pods} pods, ${seconds} s windows, ${rounds} rounds (min / median / max):\n`);
    print(tallies, seconds);
  } finally {
    admin.disconnect();
    server.kill('SIGTERM');
  }
}

await main();
