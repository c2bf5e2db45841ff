import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MetricsRegistry } from '../util/metrics.js';
import { parseMaxAddressSpace, parseMaxOpenFiles, parseNetDev, parseVsize, registerProcessMetrics, thisProcess, type ProcessReadings } from './process-metrics.js';

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

  it('reads virtual memory, its limit and the network namespace’s bytes as the Go collector does', async () => {
    assert.equal(parseVsize('1234 (node (x) y) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 987654321 4321 0'), 987654321);
    assert.equal(parseMaxAddressSpace('Limit  Soft Limit  Hard Limit  Units\nMax address space  unlimited  unlimited  bytes\n'), 2 ** 64);
    assert.equal(parseMaxAddressSpace('Max address space  4096  8192  bytes\n'), 4096);
    const dev = 'Inter-|   Receive |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes\n    lo: 100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n  eth0: 2000 5 0 0 0 0 0 0 3000 4 0 0 0 0 0 0\n';
    assert.deepEqual(parseNetDev(dev), { receiveBytes: 2100, transmitBytes: 3100 });
    const registry = new MetricsRegistry();
    let net = { receiveBytes: 2100, transmitBytes: 3100 };
    registerProcessMetrics(registry, { ...thisProcess, virtualMemory: () => Promise.resolve({ bytes: 5000, maxBytes: 2 ** 64 }), network: () => Promise.resolve(net) });
    await registry.expose();
    net = { receiveBytes: 2600, transmitBytes: 3100 };
    const text = await registry.expose();
    assert.equal(series(text, 'process_virtual_memory_bytes'), 5000);
    assert.equal(series(text, 'process_virtual_memory_max_bytes'), 2 ** 64);
    assert.equal(series(text, 'process_network_receive_bytes_total'), 2600);
    assert.equal(series(text, 'process_network_transmit_bytes_total'), 3100);
    assert.ok(((await thisProcess.virtualMemory?.())?.bytes ?? 0) > 0, 'this process’s own /proc/self/stat parses');
  });
});
