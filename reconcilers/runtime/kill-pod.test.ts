import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { FakeRuntime } from '../../test/doubles/fake-runtime.js';
import { hasRunningParts } from '../model/observed-pod.js';
import { observePod } from './observe-pod.js';
import { createFakeClock, settle } from '../../test/doubles/fake-clock.js';
import { RecordingEventRecorder } from '../../test/doubles/recording-event-recorder.js';
import { PodKiller } from './kill-pod.js';
import { basePod, container, observation, sandbox } from '../../test/doubles/pod-fixtures.js';

/** A runtime whose stops hang until released, recording (id, timeout) in call order. */
class HangingStops extends FakeRuntime {
  readonly stops: [string, number][] = [];
  /** The pending stops of each container: a container exits once, ending every stop of it. */
  private readonly waiters = new Map<string, (() => void)[]>();
  override stopContainer(containerId: string, timeoutSeconds: number): Promise<void> {
    this.stops.push([containerId, timeoutSeconds]);
    if (timeoutSeconds === 0) {
      this.release(containerId);
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.set(containerId, [...(this.waiters.get(containerId) ?? []), resolve]));
  }
  release(id: string): void {
    for (const resolve of this.waiters.get(id) ?? []) resolve();
    this.waiters.delete(id);
  }
  override stopPodSandbox(): Promise<void> {
    return Promise.resolve();
  }
}

const pod = basePod((p) => {
  p.spec!.initContainers = [
    { name: 'proxy', image: 'busybox:1.35', restartPolicy: 'Always' },
    { name: 'logger', image: 'busybox:1.35', restartPolicy: 'Always' },
  ];
});

function killer(runtime: HangingStops, clock = createFakeClock()): PodKiller {
  return new PodKiller({ runtime, events: new RecordingEventRecorder(), clock, logger: pino({ level: 'silent' }) });
}

describe('PodKiller', () => {
  it('stops app containers first, then sidecars in reverse order', async () => {
    const runtime = new HangingStops();
    const observed = observation([sandbox()], [
      container(pod, 'app'),
      container(pod, 'sidecar'),
      { ...container(pod, 'app'), id: 'c-proxy', name: 'proxy' },
      { ...container(pod, 'app'), id: 'c-logger', name: 'logger' },
    ]);
    const done = killer(runtime).killPod({ pod, observed, gracePeriodSeconds: 30, reason: 'test' });
    await settle();
    assert.deepEqual(runtime.stops.map(([id]) => id).sort(), ['c-app', 'c-sidecar']);
    runtime.release('c-app');
    runtime.release('c-sidecar');
    await settle();
    assert.equal(runtime.stops[2]?.[0], 'c-logger');
    runtime.release('c-logger');
    await settle();
    assert.equal(runtime.stops[3]?.[0], 'c-proxy');
    runtime.release('c-proxy');
    await done;
  });

  it('tells every container to stop at once (each Killing event, so each preStop hook, starts together), the sidecars\' signals still in their turn', async () => {
    const runtime = new HangingStops();
    const events = new RecordingEventRecorder();
    const observed = observation([sandbox()], [container(pod, 'app'), { ...container(pod, 'app'), id: 'c-proxy', name: 'proxy' }, { ...container(pod, 'app'), id: 'c-logger', name: 'logger' }]);
    const done = new PodKiller({ runtime, events, clock: createFakeClock(), logger: pino({ level: 'silent' }) }).killPod({ pod, observed, gracePeriodSeconds: 30, reason: 'test' });
    await settle();
    assert.deepEqual(events.events.filter((e) => e.reason === 'Killing').map((e) => e.fieldPath).sort(), ['spec.containers{app}', 'spec.initContainers{logger}', 'spec.initContainers{proxy}']);
    assert.deepEqual(runtime.stops.map(([id]) => id), ['c-app']);
    runtime.release('c-app');
    await settle();
    runtime.release('c-logger');
    await settle();
    runtime.release('c-proxy');
    await done;
    assert.deepEqual(runtime.stops.map(([id]) => id), ['c-app', 'c-logger', 'c-proxy']);
  });

  it("sends a sidecar its signal when its grace period runs out waiting for its turn, with the kubelet's 2 s window: all waiting sidecars at once", async () => {
    const runtime = new HangingStops();
    const clock = createFakeClock();
    const observed = observation([sandbox()], [container(pod, 'app'), { ...container(pod, 'app'), id: 'c-proxy', name: 'proxy' }, { ...container(pod, 'app'), id: 'c-logger', name: 'logger' }]);
    const done = killer(runtime, clock).killPod({ pod, observed, gracePeriodSeconds: 30, reason: 'test' });
    await clock.advance(29_000);
    assert.deepEqual(runtime.stops, [['c-app', 30]], 'the app container ignores SIGTERM: the sidecars wait');
    await clock.advance(1_000);
    assert.deepEqual(runtime.stops.slice(1).sort(), [['c-logger', 2], ['c-proxy', 2]]);
    for (const id of ['c-app', 'c-logger', 'c-proxy']) runtime.release(id);
    await done;
  });

  it('stops the container again at once with a shorter grace period, as the kubelet kills again after a shrink', async () => {
    const runtime = new HangingStops();
    const clock = createFakeClock();
    let grace = 30;
    const observed = observation([sandbox()], [container(pod, 'app')]);
    const done = killer(runtime, clock).killPod({ pod, observed, gracePeriodSeconds: 30, currentGracePeriodSeconds: () => grace, reason: 'test' });
    await clock.advance(1000);
    assert.deepEqual(runtime.stops, [['c-app', 30]]);
    grace = 10;
    await clock.advance(600);
    // Not the old deadline (start + 10 s): the new grace period runs from the shrink, as the kubelet's.
    assert.deepEqual(runtime.stops, [['c-app', 30], ['c-app', 10]]);
    await clock.advance(5000);
    assert.equal(runtime.stops.length, 2, 'no further stop while the grace period stays');
    runtime.release('c-app'); // the container exits
    await done;
  });

  it('never stops with less than the kubelet’s 2 s window, and stops again at each further shrink', async () => {
    const runtime = new HangingStops();
    const clock = createFakeClock();
    let grace = 30;
    const done = killer(runtime, clock).killPod({ pod, observed: observation([sandbox()], [container(pod, 'app')]), gracePeriodSeconds: 30, currentGracePeriodSeconds: () => grace, reason: 'test' });
    await clock.advance(1000);
    grace = 5;
    await clock.advance(600);
    grace = 1; // a force deletion: the kernel's least grace period
    await clock.advance(600);
    assert.deepEqual(runtime.stops, [['c-app', 30], ['c-app', 5], ['c-app', 2]]);
    runtime.release('c-app');
    await done;
  });

  it('removes a container that was created but never started, so the pod can finish terminating (regression: pods stuck Terminating after an agent kill between CreateContainer and StartContainer)', async () => {
    const runtime = new FakeRuntime();
    runtime.addImage('busybox:1.35');
    const labels = { 'io.kubernetes.pod.uid': 'u1', 'nodelet.dev/node': 'n1' };
    const sandboxConfig = { metadata: { name: 'p', namespace: 'ns', uid: 'u1', attempt: 0 }, hostname: 'p', logDirectory: '/tmp', labels, annotations: {} };
    const sandboxId = await runtime.runPodSandbox(sandboxConfig);
    const containerConfig = { metadata: { name: 'app', attempt: 0 }, image: { image: 'busybox:1.35' }, command: [], args: [], workingDir: '', envs: [], mounts: [], labels: { ...labels, 'io.kubernetes.container.name': 'app' }, annotations: {}, logPath: '', stdin: false, stdinOnce: false, tty: false };
    const created = await runtime.createContainer(sandboxId, containerConfig, sandboxConfig);
    const before = await observePod(runtime, 'u1', 'n1');
    assert.equal(before.containers[0]?.state, 'CONTAINER_CREATED');
    // As containerd does, the fake ignores StopContainer on a container that is not running.
    await runtime.stopContainer(created, 30);
    assert.equal((await observePod(runtime, 'u1', 'n1')).containers[0]?.state, 'CONTAINER_CREATED');
    await new PodKiller({ runtime, events: new RecordingEventRecorder(), clock: createFakeClock(), logger: pino({ level: 'silent' }) }).killPod({ pod, observed: before, gracePeriodSeconds: 30, reason: 'test' });
    const after = await observePod(runtime, 'u1', 'n1');
    assert.deepEqual(after.containers, []);
    assert.equal(after.sandboxes.length, 1);
    assert.equal(hasRunningParts(after), false);
  });
});
