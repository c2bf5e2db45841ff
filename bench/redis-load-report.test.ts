import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { extrapolate, flatness, nodeFigures, parseInfo, renderRedisResults, sumInfo, topCommands, REDIS_BEGIN_MARKER, REDIS_END_MARKER, type RedisInfo, type WindowSample } from './redis-load-report.js';

const INFO = [
  '# Clients',
  'connected_clients:31',
  '# Memory',
  'used_memory:2097152',
  'used_memory_human:2.00M',
  '# Stats',
  'total_commands_processed:12000',
  '# CPU',
  'used_cpu_sys:1.500000',
  'used_cpu_user:2.250000',
  '# Commandstats',
  'cmdstat_evalsha:calls=700,usec=9000,usec_per_call=12.86,rejected_calls=0,failed_calls=0',
  'cmdstat_bzpopmin:calls=300,usec=10,usec_per_call=0.03,rejected_calls=0,failed_calls=0',
  '',
].join('\r\n');

function info(over: Partial<RedisInfo>): RedisInfo {
  return { connectedClients: 1, usedMemoryBytes: 1_000_000, totalCommands: 0, cpuSeconds: 0, commandCalls: new Map(), ...over };
}

function sample(over: Partial<WindowSample> & { nodes: number }): WindowSample {
  return {
    round: 1, phase: 'idle', seconds: 10,
    before: info({}), after: info({}),
    baselineClients: 1, baselineMemoryBytes: 1_000_000, enqueues: 0, runs: 0, jobsInRedis: 0, generatorCpuSeconds: 0,
    ...over,
  };
}

/** A window in which every node costs the same: 3 connections, 100 KiB, 20 commands/s, 0.01 % CPU. */
function uniform(nodes: number, round: number, perNodeCommands = 20): WindowSample {
  return sample({
    nodes, round, seconds: 10,
    before: info({ totalCommands: 5_000, cpuSeconds: 1 }),
    after: info({ connectedClients: 1 + 3 * nodes, usedMemoryBytes: 1_000_000 + 102_400 * nodes, totalCommands: 5_000 + perNodeCommands * 10 * nodes, cpuSeconds: 1 + 0.0001 * 10 * nodes }),
    jobsInRedis: 50 * nodes,
  });
}

describe('Redis load report', () => {
  it('parses the INFO fields it needs, CPU as sys + user, and per-command calls', () => {
    const parsed = parseInfo(INFO);
    assert.equal(parsed.connectedClients, 31);
    assert.equal(parsed.usedMemoryBytes, 2_097_152);
    assert.equal(parsed.totalCommands, 12_000);
    assert.equal(parsed.cpuSeconds, 3.75);
    assert.deepEqual([...parsed.commandCalls], [['evalsha', 700], ['bzpopmin', 300]]);
  });

  it('refuses INFO without a needed field instead of reading it as 0', () => {
    assert.throws(() => parseInfo(INFO.replace('used_memory:2097152', '')), /used_memory/);
  });

  it('computes per-node figures from the window delta, minus the INFO client and the empty Redis', () => {
    const f = nodeFigures(uniform(50, 1));
    assert.equal(f.connectionsPerNode, 3);
    assert.equal(f.memoryBytesPerNode, 102_400);
    assert.equal(f.memoryBytesPerJob, 2048);
    assert.equal(f.commandsPerSecondPerNode, 20);
    assert.ok(Math.abs(f.redisCpuPercentPerNode - 0.01) < 1e-9);
    assert.ok(Math.abs(f.redisCpuPercent - 0.5) < 1e-9);
    assert.equal(nodeFigures(sample({ nodes: 1 })).memoryBytesPerJob, undefined);
  });

  it('ranks the commands of a window by share', () => {
    const s = sample({ nodes: 1, before: info({ commandCalls: new Map([['evalsha', 100]]) }), after: info({ commandCalls: new Map([['evalsha', 400], ['get', 100], ['set', 0]]) }) });
    assert.equal(topCommands(s, 5), 'evalsha 75 %, get 25 %');
  });

  it('extrapolates only a figure whose per-size medians stay within 25 %', () => {
    const flat = [uniform(10, 1), uniform(10, 2), uniform(100, 1), uniform(100, 2)];
    assert.equal(flatness(flat, 'idle', 'commandsPerSecondPerNode').flat, true);
    assert.equal(extrapolate(flat, 'idle', 'commandsPerSecondPerNode', 1000), 20_000);
    const growing = [uniform(10, 1), uniform(100, 1, 40)];
    const f = flatness(growing, 'idle', 'commandsPerSecondPerNode');
    assert.equal(f.flat, false);
    assert.equal(f.relativeRange, 1);
    assert.equal(extrapolate(growing, 'idle', 'commandsPerSecondPerNode', 1000), undefined);
    assert.equal(flatness([uniform(10, 1)], 'idle', 'connectionsPerNode').flat, false, 'one size proves nothing');
  });

  it('renders a marked block with a row per phase and size and the flatness evidence', () => {
    const block = renderRedisResults({
      date: 'd', machine: 'm', redisVersion: 'Redis 7', podsPerNode: 30, churnRate: 50, burstPods: 30, target: 1000, loadAverage: [1.5, 2, 3.25],
      samples: [uniform(10, 1), uniform(100, 1)],
    });
    assert.ok(block.startsWith(REDIS_BEGIN_MARKER) && block.endsWith(REDIS_END_MARKER));
    assert.match(block, /load average at the end 1\.50 \/ 2\.00 \/ 3\.25/);
    assert.match(block, /\| idle \| 10 \| 1 \| 3\.00 \/ 3\.00 \/ 3\.00 \| 100\.0 \/ 100\.0 \/ 100\.0 \| 20\.00/);
    assert.match(block, /\| idle \| commands\/s \/ node \| 10: 20\.00, 100: 20\.00 \| 0 % \| yes \| 20000 \|/);
  });
});

describe('the topologies in the report', () => {
  it("sums the shards' INFO: clients, memory, commands, CPU and each command's calls", () => {
    const a = info({ connectedClients: 3, usedMemoryBytes: 10, totalCommands: 100, cpuSeconds: 1, commandCalls: new Map([['evalsha', 5]]) });
    const b = info({ connectedClients: 4, usedMemoryBytes: 20, totalCommands: 50, cpuSeconds: 2, commandCalls: new Map([['evalsha', 1], ['set', 2]]) });
    const sum = sumInfo([a, b]);
    assert.deepEqual({ ...sum, commandCalls: [...sum.commandCalls] }, { connectedClients: 7, usedMemoryBytes: 30, totalCommands: 150, cpuSeconds: 3, commandCalls: [['evalsha', 6], ['set', 2]] });
  });

  it('keeps the topologies apart: a row per topology, phase and size, with shard CPU and enqueue → run latency', () => {
    const latency = { count: 10, p50Ms: 12, p99Ms: 40, maxMs: 45, throughputPerSec: 0 };
    const block = renderRedisResults({
      date: 'd', machine: 'm', redisVersion: 'Redis 7', podsPerNode: 30, churnRate: 50, burstPods: 30, target: 5000, loadAverage: [0, 0, 0],
      samples: [
        { ...uniform(100, 1), topology: 'single', shardCpuPercent: [4.5], latency },
        { ...uniform(100, 1), topology: 'cluster', shardCpuPercent: [1.5, 1.25, 2], latency },
      ],
    });
    assert.match(block, /\| single \| idle \| 100 \| 1 \|.*\| 4\.5 \/ 4\.5 \/ 4\.5 \| 12\/40\/45 \|/);
    assert.match(block, /\| cluster \| idle \| 100 \| 1 \|.*\| 1\.5 \/ 1\.5 \/ 1\.5; 1\.3 \/ 1\.3 \/ 1\.3; 2\.0 \/ 2\.0 \/ 2\.0 \| 12\/40\/45 \|/);
  });

  it("shows a burst's drain per round, the pods left when it did not drain, and the generator's event-loop delay", () => {
    const block = renderRedisResults({
      date: 'd', machine: 'm', redisVersion: 'Redis 7', podsPerNode: 30, churnRate: 50, burstPods: 30, target: 5000, loadAverage: [0, 0, 0],
      samples: [
        { ...uniform(100, 1), phase: 'burst', burstDrainMs: 812.4, burstOutstanding: 0, loopDelayP99Ms: 20 },
        { ...uniform(100, 2), phase: 'burst', burstOutstanding: 17, loopDelayP99Ms: 40 },
        { ...uniform(100, 1), phase: 'idle', loopDelayP99Ms: 11 },
      ],
    });
    assert.match(block, /\| single \| burst \| 100 \| 2 \|.*\| 812, 17 left \| [^|]+ \| 20\.0 \/ 30\.0 \/ 40\.0 \| /);
    assert.match(block, /\| single \| idle \| 100 \| 1 \|.*\| – \| [^|]+ \| 11\.0 \/ 11\.0 \/ 11\.0 \| /);
    assert.match(block, /churn: 50 pods created and 50 deleted per second across the fleet/);
  });

  it("shows the latency probe's enqueue → run per round with its own event-loop delay, beside the generator's", () => {
    const latency = { count: 10, p50Ms: 12, p99Ms: 40, maxMs: 45, throughputPerSec: 0 };
    const probe = { agents: 10, latency: { count: 300, p50Ms: 3.2, p99Ms: 9.6, maxMs: 14.4, throughputPerSec: 0 }, loopDelayP99Ms: 10.4 };
    const block = renderRedisResults({
      date: 'd', machine: 'm', redisVersion: 'Redis 7', podsPerNode: 30, churnRate: 50, burstPods: 30, target: 5000, loadAverage: [0, 0, 0],
      samples: [{ ...uniform(100, 1), phase: 'churn', latency, probe }, { ...uniform(100, 2), phase: 'churn', latency }],
    });
    assert.match(block, /\| single \| churn \| 100 \| 2 \|.*\| 12\/40\/45, 12\/40\/45 \| 3\/10\/14 \(10\), – \| /);
  });
});

