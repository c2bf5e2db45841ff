/**
 * What one node's queue holds in Redis once its history is full (`npm run bench:redis -- ...` measures
 * short windows; this measures the ceiling): one simulated node (nodelet's real reconcile queue,
 * default history: 1000 completed jobs, BullMQ's events stream capped near 10,000 entries) runs
 * `--pods` distinct pods `--runs` times each against a private redis-server; then `INFO memory`,
 * the completed set's size and the events stream's length.
 *
 *   node --import tsx bench/redis-steady.ts [--pods 1500] [--runs 3]
 */
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { createReconcileQueue } from '../controllers/queue/reconcile-queue.js';
import { parseInfo } from './redis-load-report.js';

const { values } = parseArgs({ options: { pods: { type: 'string', default: '1500' }, runs: { type: 'string', default: '3' }, port: { type: 'string', default: '26399' } } });
const port = Number(values.port);
const child = spawn('redis-server', ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
await sleep(500);
const url = `redis://127.0.0.1:${port}`;
const admin = new Redis(url);
try {
  const empty = parseInfo(await admin.info('everything'));
  const queue = createReconcileQueue({ redisUrl: url, nodeName: 'steady', concurrency: 4, logger: pino({ level: 'silent' }) });
  let runs = 0;
  await queue.start({ reconcile: () => { runs += 1; return Promise.resolve({}); } });
  const pods = Array.from({ length: Number(values.pods) }, (_, i) => ({ uid: `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`, namespace: 'bench', name: `pod-${i}` }));
  const total = pods.length * Number(values.runs);
  for (let r = 0; r < Number(values.runs); r += 1) {
    for (const pod of pods) await queue.enqueue(pod, 'steady');
    while (runs < pods.length * (r + 1)) await sleep(200);
  }
  const c = await queue.counts();
  const info = parseInfo(await admin.info('everything'));
  const xlen = await admin.xlen('nodelet:nodelet-reconcile-steady:events');
  console.log(`${runs} runs of ${total} enqueues; kept: ${c.completed} completed, ${c.failed} failed, ${c.waiting + c.active + c.delayed} pending; events stream ${xlen} entries; used_memory ${(info.usedMemoryBytes / 2 ** 20).toFixed(2)} MiB, ${((info.usedMemoryBytes - empty.usedMemoryBytes) / 2 ** 20).toFixed(2)} MiB above the empty Redis; ${((info.usedMemoryBytes - empty.usedMemoryBytes) / 1024 / c.completed).toFixed(2)} KiB per kept job, stream included`);
  await queue.close();
} finally {
  admin.disconnect();
  child.kill('SIGTERM');
}
