/**
 * Graceful node shutdown's manager against a real D-Bus system bus (Debian's dbus-daemon) and the
 * logind stand-in (test/doubles/logind/): the inhibitor lock is a real descriptor passed over the
 * bus, held while the node runs and released once the pods are handled; logind's delay is raised
 * through the drop-in and a reload; `PrepareForShutdown` is logind's signal. The pods are a
 * recording view here (the e2e test stops real ones); everything on the bus is real.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { connectLogind, LOGIND_DROP_IN } from '../../controllers/shutdown/logind.js';
import { NODE_SHUTDOWN_MESSAGE, NodeShutdownManager, type ShutdownPods } from '../../controllers/shutdown/node-shutdown-manager.js';
import type { ShutdownGroupPeriod } from '../../controllers/shutdown/shutdown-plan.js';
import { NodeShutdownState } from '../../controllers/shutdown/shutdown-state.js';
import type { NodeKill } from '../../reconcilers/lifecycle/evictions.js';
import { DBusConnection } from '../../util/dbus/connection.js';
import { systemClock } from '../../util/clock.js';
import type { PodKey } from '../../util/pod-key.js';
import { startLogindStandIn, type LogindStandIn } from '../doubles/logind/logind-standin.js';
import { startTestBus, type TestBus } from '../doubles/logind/test-bus.js';

const pod = (name: string, priority: number, grace: number): V1Pod => ({ metadata: { name, namespace: 'ns', uid: `uid-${name}` }, spec: { containers: [], priority, terminationGracePeriodSeconds: grace } });

/** Pods that stop `stopMs` after their kill (never, for `stuck`), every kill recorded in order. */
class RecordingPods implements ShutdownPods {
  readonly kills: { name: string; kill: NodeKill; atMs: number }[] = [];
  readonly cleaned = new Map<string, number>();
  constructor(private readonly pods: readonly V1Pod[], private readonly stopMs: number, private readonly stuck: ReadonlySet<string> = new Set()) {}
  activePods(): readonly V1Pod[] {
    return this.pods;
  }
  kill(key: PodKey, kill: NodeKill): boolean {
    this.kills.push({ name: key.name, kill, atMs: Date.now() });
    if (!this.stuck.has(key.name)) setTimeout(() => { this.cleaned.set(key.name, Date.now()); }, this.stopMs);
    return true;
  }
  cleanedUp(key: PodKey): boolean {
    return this.cleaned.has(key.name);
  }
}

async function eventually(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe('graceful node shutdown over a real D-Bus system bus', () => {
  let dir = '';
  let bus: TestBus;
  let logind: LogindStandIn;
  let control: DBusConnection;
  const managers: NodeShutdownManager[] = [];

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'nodelet-logind-'));
    bus = await startTestBus(dir);
    logind = await startLogindStandIn({ busAddress: bus.address, stateDir: path.join(dir, 'inhibit'), confDir: path.join(dir, 'logind.conf.d'), inhibitDelayMaxSec: 5 });
    control = await DBusConnection.open(bus.address);
  });

  after(async () => {
    for (const manager of managers) await manager.stop();
    control.close();
    logind.close();
    await bus.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const prepareForShutdown = async (start: boolean): Promise<{ heldMs: number; released: boolean }> => {
    const reply = await control.call({ destination: 'org.freedesktop.login1', path: '/org/freedesktop/login1', interface: 'org.nodelet.test.Logind', member: 'PrepareForShutdown', signature: 'b', body: [start] }, 60_000);
    const [heldUsec, released] = reply.message.body;
    return { heldMs: Number(heldUsec) / 1000, released: released === true };
  };
  const listInhibitors = async (): Promise<string[]> => {
    const reply = await control.call({ destination: 'org.freedesktop.login1', path: '/org/freedesktop/login1', interface: 'org.freedesktop.login1.Manager', member: 'ListInhibitors' });
    return (reply.message.body[0] as (string | number)[][]).map(([what, who, , mode]) => `${String(what)}/${String(who)}/${String(mode)}`);
  };

  function startManager(groups: ShutdownGroupPeriod[], pods: ShutdownPods, extra: { events: string[]; metrics: string[]; state: NodeShutdownState }): NodeShutdownManager {
    const manager = new NodeShutdownManager({
      groups,
      connect: (signal) => connectLogind({ busAddress: bus.address, confDir: path.join(dir, 'logind.conf.d'), signal }),
      pods,
      state: extra.state,
      refreshNodeStatus: () => Promise.resolve(true),
      recordNodeEvent: (reason, message) => { extra.events.push(`${reason}: ${message}`); },
      stateFile: path.join(dir, 'graceful_node_shutdown_state'),
      metrics: { started: (s) => { extra.metrics.push(`start=${s > 0 ? 'set' : '0'}`); }, ended: (s) => { extra.metrics.push(`end=${s > 0 ? 'set' : '0'}`); } },
      clock: systemClock,
      logger: pino({ level: 'silent' }),
    });
    managers.push(manager);
    manager.start();
    return manager;
  }

  it('holds a delay lock, stops the pods group by group on PrepareForShutdown, releases the lock, and takes it again on cancellation', async () => {
    const pods = new RecordingPods([pod('low-a', 0, 30), pod('critical', 2_000_000_000, 30), pod('low-b', 0, 1)], 300);
    const extra = { events: [] as string[], metrics: [] as string[], state: new NodeShutdownState() };
    const manager = startManager([{ priority: 0, shutdownGracePeriodSeconds: 2 }, { priority: 2_000_000_000, shutdownGracePeriodSeconds: 1 }], pods, extra);
    await eventually('the delay lock', async () => (await listInhibitors()).includes('shutdown/nodelet/delay'));
    assert.deepEqual(await listInhibitors(), ['shutdown/nodelet/delay']);

    const shutdown = await prepareForShutdown(true);
    assert.equal(shutdown.released, true, 'the lock was released before logind gave up waiting');
    assert.deepEqual(await listInhibitors(), []);
    assert.equal(extra.state.shuttingDown(), true);
    assert.deepEqual(pods.kills.map((k) => `${k.name}:${k.kill.gracePeriodSeconds}`), ['low-a:2', 'low-b:1', 'critical:1']);
    assert.ok(pods.kills.every((k) => k.kill.reason === 'Terminated' && k.kill.message === NODE_SHUTDOWN_MESSAGE && k.kill.disruptionTarget !== false));
    // The critical group starts only once the regular pods stopped.
    const critical = pods.kills[2]?.atMs ?? 0;
    assert.ok(critical >= Math.max(pods.cleaned.get('low-a') ?? Infinity, pods.cleaned.get('low-b') ?? Infinity), 'critical pods are stopped after the regular ones');
    assert.deepEqual(extra.events, ['Shutdown: Shutdown manager detected shutdown event']);
    const times = JSON.parse(readFileSync(path.join(dir, 'graceful_node_shutdown_state'), 'utf8')) as { startTime?: string; endTime?: string };
    assert.ok(times.startTime !== undefined && times.endTime !== undefined && Date.parse(times.endTime) >= Date.parse(times.startTime));
    assert.deepEqual(extra.metrics.slice(-3), ['start=set', 'end=0', 'end=set']);

    await prepareForShutdown(false);
    await eventually('the lock taken again after the cancellation', async () => (await listInhibitors()).length === 1);
    assert.equal(extra.state.shuttingDown(), false);
    assert.deepEqual(extra.events, ['Shutdown: Shutdown manager detected shutdown event', 'Shutdown: Shutdown manager detected shutdown cancellation']);
    await manager.stop();
    await eventually('the lock released when the manager stops', async () => (await listInhibitors()).length === 0);
  });

  it("waits no longer than a group's period for pods that do not stop", async () => {
    const pods = new RecordingPods([pod('stuck', 0, 30), pod('critical', 2_000_000_000, 30)], 50, new Set(['stuck']));
    const extra = { events: [] as string[], metrics: [] as string[], state: new NodeShutdownState() };
    const manager = startManager([{ priority: 0, shutdownGracePeriodSeconds: 1 }, { priority: 2_000_000_000, shutdownGracePeriodSeconds: 1 }], pods, extra);
    await eventually('the delay lock', async () => (await listInhibitors()).length === 1);
    const shutdown = await prepareForShutdown(true);
    assert.equal(shutdown.released, true);
    const [stuck, critical] = pods.kills;
    assert.ok(stuck !== undefined && critical !== undefined);
    assert.ok(critical.atMs - stuck.atMs >= 900, `the critical group waited for the first group's 1 s period (${critical.atMs - stuck.atMs} ms)`);
    await prepareForShutdown(false);
    await manager.stop();
    await eventually('no lock once the manager stopped', async () => (await listInhibitors()).length === 0);
  });

  it("raises logind's InhibitDelayMaxSec through a drop-in and a reload when the groups need longer", async () => {
    assert.equal(logind.delayMaxSec(), 5);
    const extra = { events: [] as string[], metrics: [] as string[], state: new NodeShutdownState() };
    const manager = startManager([{ priority: 0, shutdownGracePeriodSeconds: 20 }, { priority: 2_000_000_000, shutdownGracePeriodSeconds: 10 }], new RecordingPods([], 0), extra);
    await eventually('the delay lock', async () => (await listInhibitors()).length === 1);
    assert.equal(logind.delayMaxSec(), 30);
    assert.match(readFileSync(path.join(dir, 'logind.conf.d', LOGIND_DROP_IN), 'utf8'), /^\[Login\]\nInhibitDelayMaxSec=30$/m);
    await manager.stop();
  });

  it('takes the lock again when logind comes back after the bus connection was lost', async () => {
    const extra = { events: [] as string[], metrics: [] as string[], state: new NodeShutdownState() };
    const manager = startManager([{ priority: 0, shutdownGracePeriodSeconds: 1 }], new RecordingPods([], 0), extra);
    await eventually('the delay lock', async () => (await listInhibitors()).length === 1);
    logind.close();
    await bus.stop();
    bus = await startTestBus(dir);
    logind = await startLogindStandIn({ busAddress: bus.address, stateDir: path.join(dir, 'inhibit'), confDir: path.join(dir, 'logind.conf.d') });
    control.close();
    control = await DBusConnection.open(bus.address);
    await eventually('the lock taken on the new bus', async () => (await listInhibitors()).includes('shutdown/nodelet/delay'));
    await manager.stop();
  });
});
