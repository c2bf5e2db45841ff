/**
 * Probes and hooks whose timeout is the API's maximum (timeoutSeconds or a grace period of
 * 2^31-1 s) against real loopback servers: they run to their answer, and Node prints no
 * TimeoutOverflowWarning (a socket timeout past 2^31-1 ms is truncated with a warning on the
 * agent's stderr). Found by the hostile-specs campaign (test/faults-scale).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { runHook } from '../hooks/run-hook.js';
import type { RuntimeService } from '../../cri/types.js';
import { runProbe } from './run-probe.js';
import type { ProbeAction, ProbeSettings } from './probe-spec.js';

const HUGE_MS = 2147483647 * 1000;
const noRuntime = {} as RuntimeService;

function settings(action: ProbeAction): ProbeSettings {
  return { action, timeoutMs: HUGE_MS, periodMs: 1000, initialDelayMs: 0, successThreshold: 1, failureThreshold: 3 } as ProbeSettings;
}

async function withoutWarnings(run: () => Promise<void>): Promise<string[]> {
  const warnings: string[] = [];
  const onWarning = (w: Error): void => {
    warnings.push(`${w.name}: ${w.message}`);
  };
  process.on('warning', onWarning);
  try {
    await run();
    // Node emits process warnings on a later tick.
    await new Promise((resolve) => setTimeout(resolve, 20));
  } finally {
    process.off('warning', onWarning);
  }
  return warnings;
}

describe('probes and hooks with the largest timeouts the API allows', () => {
  let server: http.Server;
  let tcp: net.Server;
  let port = 0;
  let tcpPort = 0;

  before(async () => {
    server = http.createServer((_req, res) => res.end('ok'));
    tcp = net.createServer((s) => s.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
    tcpPort = (tcp.address() as net.AddressInfo).port;
  });

  after(() => {
    server.close();
    tcp.close();
  });

  it('run an httpGet and a tcpSocket probe, and an httpGet hook, to their answers without a timer warning', async () => {
    const target = { pod: { metadata: { name: 'p', namespace: 'ns', uid: 'u1' } }, podIp: '127.0.0.1', containerId: 'c1', container: { name: 'app' } };
    const outcomes: unknown[] = [];
    const warnings = await withoutWarnings(async () => {
      outcomes.push((await runProbe({ runtime: noRuntime }, settings({ kind: 'httpGet', scheme: 'HTTP', host: '', port, path: '/', headers: [] }), target)).result);
      outcomes.push((await runProbe({ runtime: noRuntime }, settings({ kind: 'tcpSocket', host: '', port: tcpPort }), target)).result);
      outcomes.push(await runHook({ runtime: noRuntime, clock: createFakeClock() }, { action: { kind: 'httpGet', scheme: 'HTTP', host: '', port, path: '/', headers: [] }, target, timeoutSeconds: 2147483647 }));
    });
    assert.deepEqual(outcomes, ['success', 'success', { ok: true }]);
    assert.deepEqual(warnings, []);
  });
});
