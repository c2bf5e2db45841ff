/**
 * End to end: a running pod's configMap, secret, downwardAPI and projected volumes follow their
 * sources, as under the kubelet (it remounts these volumes on pod syncs): a changed ConfigMap or
 * Secret and a new pod label reach the files the running container reads, without restarting it.
 * Read through the runtime (`crictl exec`), counted in the runtime (one sandbox, one container,
 * the same ID) and in the API (restartCount 0). Prints how long each change took to arrive.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NODE_NAME, apply, createNamespace, crictl, deleteNamespace, eventually, getPod, kubectl, requireCluster, runtimeContainers, runtimeSandboxes } from './helpers.js';

/** The resync period of the test cluster's agent (60 s) plus its jitter, and room to spare. */
const ARRIVAL_TIMEOUT_MS = 150_000;
const b64 = (text: string): string => Buffer.from(text).toString('base64');

describe('volumes that follow their sources while the pod runs', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-volrefresh');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('updates configMap, secret, projected and downwardAPI files in the running container, which keeps running', async (t) => {
    await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg', namespace }, data: { greeting: 'hello' } });
    await apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'sec', namespace }, data: { token: b64('one') } });
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'reader', namespace, labels: { app: 'reader' } },
      spec: {
        nodeName: NODE_NAME,
        terminationGracePeriodSeconds: 1,
        volumes: [
          { name: 'cfg', configMap: { name: 'cfg' } },
          { name: 'sec', secret: { secretName: 'sec' } },
          { name: 'labels', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
          { name: 'both', projected: { sources: [{ configMap: { name: 'cfg', items: [{ key: 'greeting', path: 'cfg-greeting' }] } }, { secret: { name: 'sec', items: [{ key: 'token', path: 'sec-token' }] } }] } },
        ],
        containers: [{
          name: 'main',
          image: 'busybox:1.35',
          command: ['sleep', '3600'],
          volumeMounts: [
            { name: 'cfg', mountPath: '/cfg' },
            { name: 'sec', mountPath: '/sec' },
            { name: 'labels', mountPath: '/meta' },
            { name: 'both', mountPath: '/both' },
          ],
        }],
      },
    });
    const running = await eventually('the reader to run', async () => {
      const pod = await getPod(namespace, 'reader');
      return pod?.status?.containerStatuses?.[0]?.state?.running !== undefined ? pod : undefined;
    });
    const uid = running.metadata?.uid ?? '';
    const sandboxesBefore = await runtimeSandboxes(uid);
    const containersBefore = await runtimeContainers(uid);
    assert.equal(sandboxesBefore.length, 1, 'one sandbox');
    assert.equal(containersBefore.length, 1, 'one container');
    const id = containersBefore[0]!.id;
    const read = async (file: string): Promise<string> => (await crictl(['exec', id, 'cat', file])).trim();
    assert.deepEqual(
      [await read('/cfg/greeting'), await read('/sec/token'), await read('/meta/labels'), await read('/both/cfg-greeting'), await read('/both/sec-token')],
      ['hello', 'one', 'app="reader"', 'hello', 'one'],
    );

    // First the sources alone (no pod update: the periodic resync's sync brings them), then a label
    // (the pod update is itself a sync).
    let changedAt = Date.now();
    const arrivals: string[] = [];
    const arrived = async (what: string, file: string, want: string): Promise<void> => {
      await eventually(`${file} to read ${want}`, async () => ((await read(file)) === want ? true : undefined), ARRIVAL_TIMEOUT_MS);
      arrivals.push(`${what} ${Date.now() - changedAt} ms`);
    };
    await kubectl(['patch', 'configmap', 'cfg', '-n', namespace, '--type=merge', '-p', JSON.stringify({ data: { greeting: 'bonjour' } })]);
    await kubectl(['patch', 'secret', 'sec', '-n', namespace, '--type=merge', '-p', JSON.stringify({ data: { token: b64('two') } })]);
    await Promise.all([
      arrived('configMap', '/cfg/greeting', 'bonjour'),
      arrived('secret', '/sec/token', 'two'),
      arrived('projected configMap', '/both/cfg-greeting', 'bonjour'),
      arrived('projected secret', '/both/sec-token', 'two'),
    ]);
    assert.equal(await read('/meta/labels'), 'app="reader"', 'the labels file shows no label that was not set');
    changedAt = Date.now();
    await kubectl(['label', 'pod', 'reader', '-n', namespace, 'tier=front']);
    await arrived('downwardAPI labels', '/meta/labels', 'app="reader"\ntier="front"');
    t.diagnostic(`arrived after the change: ${arrivals.join('; ')}`);

    assert.deepEqual((await runtimeSandboxes(uid)).map((s) => `${s.id} ${s.state}`), [`${sandboxesBefore[0]!.id} SANDBOX_READY`], 'the same one sandbox');
    assert.deepEqual((await runtimeContainers(uid)).map((c) => `${c.id} ${c.state}`), [`${id} CONTAINER_RUNNING`], 'the same one container, still running');
    const pod = await getPod(namespace, 'reader');
    assert.equal(pod?.status?.containerStatuses?.[0]?.restartCount, 0);
  });
});
