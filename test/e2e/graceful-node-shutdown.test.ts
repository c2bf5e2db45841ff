/**
 * End to end: graceful node shutdown. The test cluster's agent runs with `--shutdown-grace-period
 * 30s --shutdown-grace-period-critical-pods 10s` (20 s for regular pods, then 10 s for critical
 * ones) on the harness's own system bus, where the logind stand-in grants inhibitor locks
 * (test/cluster/lib/logind.sh). The test asks the stand-in to announce a shutdown, as logind does
 * on `systemctl poweroff`, and checks what the kubelet does: the delay lock held until the pods are
 * handled; regular pods stopped first (one that ignores SIGTERM killed at its group's 20 s, not its
 * own 60 s), the critical pod only once their group's period was up; each pod Failed, `Terminated`, with a
 * DisruptionTarget condition, its container stopped in the runtime; the Node not Ready ("node is
 * shutting down") with a `Shutdown` event; a new pod refused `NodeShutdown`; the shutdown times in
 * /metrics. A cancelled shutdown makes the node Ready again, with the lock taken again.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { DBusConnection } from '../../util/dbus/connection.js';
import { NODE_NAME, apply, containersOf, createNamespace, deleteNamespace, eventually, getPod, kubectl, requireCluster, waitForPhase, watchStops, type StopObservation } from './helpers.js';

const CRITICAL = `e2e-shutdown-critical-${Date.now()}`;
const LOGIND = { destination: 'org.freedesktop.login1', path: '/org/freedesktop/login1' } as const;

function pod(at: { namespace: string; name: string }, script: string, grace: number, extra: Record<string, unknown> = {}): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: at,
    spec: { nodeName: NODE_NAME, terminationGracePeriodSeconds: grace, containers: [{ name: 'main', image: 'busybox:1.35', command: ['sh', '-c', script] }], ...extra },
  };
}

/** Exits at once on SIGTERM. */
const POLITE = "trap 'exit 0' TERM; while true; do sleep 0.2; done";
/** Ignores SIGTERM: only the SIGKILL at the end of its grace period stops it. */
const STUBBORN = "trap '' TERM; while true; do sleep 0.2; done";

async function node(): Promise<V1Node> {
  return JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as V1Node;
}

function ready(n: V1Node): { status: string; message: string } {
  const c = n.status?.conditions?.find((x) => x.type === 'Ready');
  return { status: c?.status ?? '', message: c?.message ?? '' };
}

async function metric(name: string): Promise<number> {
  const text = await kubectl(['get', '--raw', `/api/v1/nodes/${NODE_NAME}/proxy/metrics`]);
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(' ')[1]);
}

function finishedNs(o: StopObservation | undefined): bigint {
  assert.ok(o?.exit !== undefined, `the exit of ${o?.name ?? '?'} was read`);
  return o.exit.finishedNs;
}

describe('graceful node shutdown on nodelet', () => {
  let ns = '';
  let bus: DBusConnection;

  const logind = async (iface: string, member: string, body: boolean[] = []): Promise<readonly unknown[]> => {
    const reply = await bus.call({ ...LOGIND, interface: iface, member, signature: body.length > 0 ? 'b' : '', body }, 120_000);
    return reply.message.body;
  };
  const inhibitors = async (): Promise<string[]> => {
    const [list] = await logind('org.freedesktop.login1.Manager', 'ListInhibitors');
    return (list as unknown[][]).map(([what, who, , mode]) => `${String(what)}/${String(who)}/${String(mode)}`);
  };

  before(async () => {
    requireCluster();
    ns = await createNamespace('e2e-shutdown');
    bus = await DBusConnection.open(`unix:path=${path.join(process.env.CLUSTER_DIR ?? '', 'logind', 'system_bus_socket')}`);
  });

  after(async () => {
    // Whatever happened, the node must not stay shutting down for the tests after this one.
    await logind('org.nodelet.test.Logind', 'PrepareForShutdown', [false]).catch(() => undefined);
    await eventually('the node Ready again', async () => (ready(await node()).status === 'True' ? true : undefined), 60_000).catch(() => undefined);
    bus.close();
    await kubectl(['delete', 'pod', '-n', 'kube-system', CRITICAL, '--ignore-not-found', '--wait=true']);
    if (ns !== '') await deleteNamespace(ns);
  });

  it('stops pods by priority within their budgets, reports each Failed with DisruptionTarget, and holds the host until done', async () => {
    assert.deepEqual(await inhibitors(), ['shutdown/nodelet/delay'], 'the agent holds a delay lock on shutdown');
    await apply(pod({ namespace: ns, name: 'polite' }, POLITE, 30));
    await apply(pod({ namespace: ns, name: 'stubborn' }, STUBBORN, 60));
    await apply(pod({ namespace: 'kube-system', name: CRITICAL }, POLITE, 30, { priorityClassName: 'system-cluster-critical' }));
    const pods = await Promise.all([waitForPhase(ns, 'polite', 'Running'), waitForPhase(ns, 'stubborn', 'Running'), waitForPhase('kube-system', CRITICAL, 'Running')]);
    const uids = pods.map((p) => p.metadata?.uid ?? '');
    const ids = await Promise.all(uids.map((uid) => containersOf(uid)));
    assert.deepEqual(ids.map((list) => list.length), [1, 1, 1]);

    const startedMs = Date.now();
    const stops = Promise.all(uids.map((uid, i) => watchStops(uid, ids[i] ?? [], 90_000)));
    const [heldUsec, released] = await logind('org.nodelet.test.Logind', 'PrepareForShutdown', [true]);
    const heldMs = Number(heldUsec) / 1000;
    const [polite, stubborn, critical] = (await stops).map((m) => m.get('main'));

    assert.equal(released, true, `the agent released its lock before logind's delay ran out (held ${heldMs} ms)`);
    assert.ok(heldMs >= 19_000 && heldMs < 35_000, `the host was held while the groups ran: ${heldMs} ms`);
    // The stubborn pod got its group's 20 s, not its own 60 s; the critical pod went after both regular ones.
    const stubbornAfterMs = Number(finishedNs(stubborn) / 1_000_000n) - startedMs;
    assert.ok(stubbornAfterMs >= 19_000 && stubbornAfterMs < 26_000, `the stubborn pod was killed ${stubbornAfterMs} ms after the shutdown began`);
    assert.ok(finishedNs(polite) < finishedNs(stubborn));
    // The regular group ends when its pods are gone or its 20 s are up, whichever is first: the
    // stubborn pod's SIGKILL (20 s after its kill began) and the critical pod's start race, as on the kubelet.
    const criticalAfterMs = Number(finishedNs(critical) / 1_000_000n) - startedMs;
    assert.ok(criticalAfterMs >= 19_000, `the critical pod was stopped only once the regular group's 20 s were up (${criticalAfterMs} ms)`);
    assert.ok([polite, stubborn, critical].every((o) => o?.exit?.state === 'CONTAINER_EXITED'));

    for (const [namespace, name] of [[ns, 'polite'], [ns, 'stubborn'], ['kube-system', CRITICAL]] as const) {
      const failed = await eventually(`${name} Failed`, async () => {
        const p = await getPod(namespace, name);
        return p?.status?.phase === 'Failed' ? p : undefined;
      });
      assert.deepEqual([failed.status?.reason, failed.status?.message], ['Terminated', 'Pod was terminated in response to imminent node shutdown.']);
      const target = failed.status?.conditions?.find((c) => c.type === 'DisruptionTarget');
      assert.deepEqual([target?.status, target?.reason, target?.message], ['True', 'TerminationByKubelet', 'Pod was terminated in response to imminent node shutdown.']);
    }

    assert.deepEqual(ready(await node()), { status: 'False', message: 'node is shutting down' });
    const events = JSON.parse(await kubectl(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.kind=Node,involvedObject.name=${NODE_NAME},reason=Shutdown`, '-o', 'json'])) as { items: { message?: string; lastTimestamp?: string }[] };
    assert.ok(events.items.some((e) => e.message === 'Shutdown manager detected shutdown event' && Date.parse(e.lastTimestamp ?? '') >= startedMs - 1000), 'a Shutdown event on the Node');
    const startSeconds = await metric('kubelet_graceful_shutdown_start_time_seconds');
    const endSeconds = await metric('kubelet_graceful_shutdown_end_time_seconds');
    assert.ok(startSeconds >= Math.floor(startedMs / 1000) && endSeconds >= startSeconds, `shutdown times in /metrics: ${startSeconds}, ${endSeconds}`);
    assert.deepEqual(await inhibitors(), [], 'no lock while the node shuts down');
  });

  it('refuses a new pod while shutting down, and is Ready with the lock again after a cancellation', async () => {
    await apply(pod({ namespace: ns, name: 'late' }, POLITE, 5));
    const refused = await eventually('the late pod refused', async () => {
      const p = await getPod(ns, 'late');
      return p?.status?.phase === 'Failed' ? p : undefined;
    });
    assert.deepEqual([refused.status?.reason, refused.status?.message], ['NodeShutdown', 'Pod was rejected: Pod was rejected as the node is shutting down.']);
    assert.deepEqual(await containersOf(refused.metadata?.uid ?? ''), [], 'no container was created for the refused pod');

    await logind('org.nodelet.test.Logind', 'PrepareForShutdown', [false]);
    await eventually('the node Ready again', async () => (ready(await node()).status === 'True' ? true : undefined), 60_000);
    await eventually('the lock taken again', async () => ((await inhibitors()).includes('shutdown/nodelet/delay') ? true : undefined), 30_000);
    await apply(pod({ namespace: ns, name: 'after' }, POLITE, 5));
    const running: V1Pod = await waitForPhase(ns, 'after', 'Running');
    assert.equal((await containersOf(running.metadata?.uid ?? '')).length, 1);
  });
});
