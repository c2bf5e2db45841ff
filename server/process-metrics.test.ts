import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MetricsRegistry } from '../util/metrics.js';
import { parseMaxOpenFiles, registerProcessMetrics, thisProcess, type ProcessReadings } from './process-metrics.js';

function series(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe('process metrics', () => {
  it('exposes CPU as a counter that grows by what was used between scrapes, and memory and fds as read', async () => {
    let cpu = 1.5;
    const readings: ProcessReadings = {
      cpuSeconds: () => cpu,
      memory: () => ({ rss: 100 * 2 ** 20, heapUsed: 20 * 2 ** 20, heapTotal: 30 * 2 ** 20, external: 2 ** 20 }),
      startTimeSeconds: () => 1_700_000_000,
      openFds: () => Promise.resolve(42),
      maxFds: () => Promise.resolve(undefined),
    };
    const registry = new MetricsRegistry();
    registerProcessMetrics(registry, readings);
    let text = await registry.expose();
    assert.equal(series(text, 'process_cpu_seconds_total'), 1.5);
    assert.equal(series(text, 'process_resident_memory_bytes'), 104857600);
    assert.equal(series(text, 'nodejs_heap_size_used_bytes'), 20971520);
    assert.equal(series(text, 'nodejs_heap_size_total_bytes'), 31457280);
    assert.equal(series(text, 'nodejs_external_memory_bytes'), 1048576);
    assert.equal(series(text, 'process_start_time_seconds'), 1700000000);
    assert.equal(series(text, 'process_open_fds'), 42);
    assert.equal(series(text, 'process_max_fds'), undefined, 'an unknown limit is left out, not reported as 0');
    assert.match(text, /# TYPE process_cpu_seconds_total counter/);
    cpu = 2.25;
    text = await registry.expose();
    assert.equal(series(text, 'process_cpu_seconds_total'), 2.25);
  });

  it("reads this process's soft open-files limit from /proc", async () => {
    assert.equal(parseMaxOpenFiles('Limit                     Soft Limit           Hard Limit           Units\nMax open files            1048576              1048576              files\n'), 1048576);
    assert.equal(parseMaxOpenFiles('Max open files            unlimited            unlimited            files\n'), Number.POSITIVE_INFINITY);
    assert.equal(parseMaxOpenFiles('Max processes 10 10 processes\n'), undefined);
    const open = await thisProcess.openFds();
    assert.ok(open !== undefined && open > 0);
    assert.ok(thisProcess.memory().rss > thisProcess.memory().heapUsed);
  });
});
