import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { FakeRuntime } from '../../test/doubles/fake-runtime.js';
import { buildSnapshot, diffSnapshots, Pleg } from './pleg.js';
import { createFakeClock } from '../../test/doubles/fake-clock.js';

const labels = (uid: string) => ({ 'io.kubernetes.pod.uid': uid, 'io.kubernetes.pod.name': `p-${uid}`, 'io.kubernetes.pod.namespace': 'ns', 'nodelet.dev/node': 'n' });

describe('PLEG snapshots', () => {
  const before = buildSnapshot([
    { kind: 'sandbox', id: 's1', state: 'SANDBOX_READY', labels: labels('a') },
    { kind: 'container', id: 'c1', state: 'CONTAINER_RUNNING', labels: labels('a') },
    { kind: 'sandbox', id: 's2', state: 'SANDBOX_READY', labels: labels('b') },
  ]);

  it('reports nothing when nothing changed', () => {
    assert.deepEqual(diffSnapshots(before, before), []);
  });

  it('reports a pod whose container changed state, one that appeared and one that vanished', () => {
    const after = buildSnapshot([
      { kind: 'sandbox', id: 's1', state: 'SANDBOX_READY', labels: labels('a') },
      { kind: 'container', id: 'c1', state: 'CONTAINER_EXITED', labels: labels('a') },
      { kind: 'sandbox', id: 's3', state: 'SANDBOX_READY', labels: labels('c') },
    ]);
    const changes = diffSnapshots(before, after).map((c) => [c.pod.uid, c.reason]);
    assert.deepEqual(changes.sort(), [
      ['a', 'runtime: containers changed'],
      ['b', 'runtime: pod vanished'],
      ['c', 'runtime: pod appeared'],
    ]);
  });

  it('keeps the pod identity from the labels', () => {
    assert.deepEqual(before.get('a')?.pod, { uid: 'a', name: 'p-a', namespace: 'ns' });
  });

  it('ignores runtime objects without a pod UID label', () => {
    assert.equal(buildSnapshot([{ kind: 'sandbox', id: 'x', state: 'SANDBOX_READY', labels: {} }]).size, 0);
  });
});

describe('Pleg against the fake runtime', () => {
  it('reports every pod on the first relist, then only pods that changed', async () => {
    const clock = createFakeClock();
    const runtime = new FakeRuntime({ now: () => clock.now() });
    const sandboxConfig = { metadata: { name: 'p-a', uid: 'a', namespace: 'ns', attempt: 0 }, hostname: 'p', logDirectory: '/tmp', labels: labels('a'), annotations: {} };
    await runtime.runPodSandbox(sandboxConfig);
    const seen: string[] = [];
    const pleg = new Pleg({ runtime, nodeName: 'n', clock, logger: pino({ level: 'silent' }), onPodChanged: (pod, reason) => seen.push(`${pod.uid}:${reason}`) });
    await pleg.relist();
    assert.deepEqual(seen, ['a:runtime: pod appeared']);
    await pleg.relist();
    assert.equal(seen.length, 1);
    const [sandbox] = await runtime.listPodSandbox();
    await runtime.stopPodSandbox(sandbox?.id ?? '');
    await pleg.relist();
    assert.deepEqual(seen.slice(1), ['a:runtime: containers changed']);
  });

  it('turns unhealthy when no relist succeeded for three minutes', async () => {
    const clock = createFakeClock();
    const runtime = new FakeRuntime({ now: () => clock.now() });
    const pleg = new Pleg({ runtime, nodeName: 'n', clock, logger: pino({ level: 'silent' }), onPodChanged: () => undefined });
    await pleg.relist();
    assert.equal(pleg.healthy(), true);
    await clock.advance(3 * 60_000 + 1);
    assert.equal(pleg.healthy(), false);
  });
});
