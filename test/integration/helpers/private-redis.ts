/**
 * A redis-server of a test's own on a free loopback port, for what a shared Redis cannot show: the
 * commands Redis ran (`INFO commandstats`) and the connections it holds (`CLIENT LIST`) are then
 * the test's alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freeLoopbackPort } from './free-port.js';

/** A running private Redis and an admin connection to it (named `test-admin`). */
export interface PrivateRedis {
  readonly url: string;
  readonly admin: Redis;
  stop(): Promise<void>;
}

/** True once a redis-server on loopback `port` answers PING (with `password` when it needs one). */
export async function redisAnswers(port: number, password?: string): Promise<boolean> {
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, ...(password === undefined ? {} : { password }) });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

/** Starts `redis-server` without persistence on a free loopback port; resolves once it answers. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freeLoopbackPort();
  const server: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  for (let i = 0; i < 100 && !(await redisAnswers(port)); i += 1) await sleep(50);
  const url = `redis://127.0.0.1:${port}`;
  const admin = new Redis(url, { connectionName: 'test-admin', maxRetriesPerRequest: 3 });
  return {
    url,
    admin,
    stop: async () => {
      admin.disconnect();
      if (server.exitCode !== null || server.signalCode !== null) return;
      const exited = once(server, 'exit');
      server.kill('SIGTERM');
      await exited;
    },
  };
}

/** Calls per command (lower case) since the last `CONFIG RESETSTAT`, the admin's own INFO and CONFIG left out. */
export async function commandCalls(admin: Redis): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const line of (await admin.info('commandstats')).split(/\r?\n/)) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (match === null || match[1] === 'info' || match[1]?.startsWith('config') === true) continue;
    calls.set(match[1] ?? '', Number(match[2]));
  }
  return calls;
}

/** The sum of {@link commandCalls}. */
export function totalCalls(calls: ReadonlyMap<string, number>): number {
  return [...calls.values()].reduce((a, b) => a + b, 0);
}

/** The names of the connections Redis holds, the admin's left out, sorted. */
export async function clientNames(admin: Redis): Promise<string[]> {
  const list = (await admin.client('LIST')) as string;
  return list
    .split('\n')
    .map((line) => /\bname=(\S*)/.exec(line)?.[1])
    .filter((name): name is string => name !== undefined && name !== 'test-admin')
    .sort();
}
