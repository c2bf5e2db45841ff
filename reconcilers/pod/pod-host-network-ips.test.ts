/**
 * A host-network pod's IPs are the node's: the runtime reports no sandbox IP for it, and the
 * kubelet gives `status.podIP`/`status.podIPs` field references the host IPs (upstream's
 * "Downward API should provide host IP and pod IP as an env var if pod uses host network").
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { ContainerConfig } from '../../cri/types.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';

let h: ReconcilerHarness | undefined;

afterEach(async () => {
  await h?.cleanup();
});

describe('host-network pod IPs', () => {
  it('gives status.podIP and status.podIPs field references the node IP', async () => {
    const t = (h = await createReconcilerHarness());
    const field = (fieldPath: string): object => ({ valueFrom: { fieldRef: { fieldPath } } });
    t.store.set(UID, basePod((p) => {
      p.spec!.hostNetwork = true;
      p.spec!.containers = [{ ...p.spec!.containers[0]!, env: [{ name: 'POD_IP', ...field('status.podIP') }, { name: 'POD_IPS', ...field('status.podIPs') }, { name: 'HOST_IP', ...field('status.hostIP') }] }];
    }));
    await t.reconciler().reconcile(ref);
    const configs = t.runtime.callsTo('createContainer').map((c) => c.args[1] as ContainerConfig);
    assert.equal(configs.length, 1);
    const env = Object.fromEntries(configs[0]!.envs.map((e) => [e.key, e.value]));
    assert.deepEqual({ POD_IP: env.POD_IP, POD_IPS: env.POD_IPS, HOST_IP: env.HOST_IP }, { POD_IP: '10.213.0.1', POD_IPS: '10.213.0.1', HOST_IP: '10.213.0.1' });
  });
});
