/**
 * End to end: image volumes (`volumes[].image`) on containerd 2, as the kubelet runs them. The
 * private registry's busybox is mounted as a volume, pulled with the pod's pull secret under
 * pullPolicy Always: the container reads the image's files, whole and by subPath, and cannot write
 * to them; the runtime's OCI spec has both mounts read-only from containerd's image mount; the
 * pull's events are the pod's; the kubelet's counters count it. A volume whose image cannot be had
 * keeps its container from starting with the pull's reason (ErrImageNeverPull, ErrImagePull), a
 * Failed event on the container, and no container in the runtime.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NODE_NAME, apply, containersOf, createNamespace, crictl, deleteNamespace, eventually, getPod, kubectl, podEvents, requireCluster, waitForWaitingReason } from './helpers.js';

const REGISTRY = '127.0.0.1:5000';
const PRIVATE_IMAGE = `${REGISTRY}/private/busybox:1.35`;
const b64 = (text: string): string => Buffer.from(text).toString('base64');

/** A pod whose container lists the volume's files and tries to write there, then sleeps. */
function volumePod(namespace: string, name: string, volume: object, pullSecret?: string): object {
  const script = 'ls -l /image/bin/busybox /sub/busybox && echo "sub=$(ls /sub | wc -l)"; if touch /image/x 2>/dev/null; then echo WRITABLE; else echo READ-ONLY; fi; exec sleep 3600';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      terminationGracePeriodSeconds: 1,
      ...(pullSecret === undefined ? {} : { imagePullSecrets: [{ name: pullSecret }] }),
      containers: [{ name: 'main', image: 'busybox:1.35', command: ['sh', '-c', script], volumeMounts: [{ name: 'image', mountPath: '/image' }, { name: 'image', mountPath: '/sub', subPath: 'bin' }] }],
      volumes: [{ name: 'image', image: volume }],
    },
  };
}

async function imageVolumeCounters(): Promise<Record<string, number>> {
  const metrics = await kubectl(['get', '--raw', `/api/v1/nodes/${NODE_NAME}/proxy/metrics`]);
  const counters: Record<string, number> = {};
  for (const name of ['requested', 'mounted_succeed', 'mounted_errors']) {
    const line = metrics.split('\n').find((l) => l.startsWith(`kubelet_image_volume_${name}_total `));
    counters[name] = Number(line?.split(' ')[1] ?? NaN);
  }
  return counters;
}

interface OciMount { destination: string; source?: string; options?: string[] }

describe('image volumes', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    const credentials = (await readFile(path.join(process.env.CLUSTER_DIR ?? '', 'registry', 'credentials'), 'utf8')).trim();
    namespace = await createNamespace('e2e-image-volumes');
    const dockerConfig = { auths: { [REGISTRY]: { auth: b64(credentials) } } };
    await apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'regcred', namespace }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64(JSON.stringify(dockerConfig)) } });
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('mounts a private image pulled with the pod\'s secret, whole and by subPath, read-only, from the runtime\'s image mount', async () => {
    const before = await imageVolumeCounters();
    await apply(volumePod(namespace, 'reader', { reference: PRIVATE_IMAGE, pullPolicy: 'Always' }, 'regcred'));
    const logs = await eventually('the reader running with its output', async () => {
      const pod = await getPod(namespace, 'reader');
      if (pod?.status?.containerStatuses?.[0]?.state?.running === undefined) return undefined;
      const text = await kubectl(['logs', '-n', namespace, 'reader']);
      return /READ-ONLY|WRITABLE/.test(text) ? text : undefined;
    }, 120_000);
    console.log(`# reader: ${logs.trim().replace(/\n/g, ' | ')}`);
    assert.match(logs, /\/image\/bin\/busybox/);
    assert.match(logs, /\/sub\/busybox/);
    assert.match(logs, /READ-ONLY/);
    assert.doesNotMatch(logs, /WRITABLE/);

    const uid = (await getPod(namespace, 'reader'))?.metadata?.uid ?? '';
    const [id] = await containersOf(uid);
    const inspected = JSON.parse(await crictl(['inspect', id ?? ''])) as { info: { runtimeSpec: { mounts: OciMount[] } } };
    const mounts = inspected.info.runtimeSpec.mounts;
    const whole = mounts.find((m) => m.destination === '/image');
    const sub = mounts.find((m) => m.destination === '/sub');
    console.log(`# OCI mounts: ${JSON.stringify([whole, sub])}`);
    assert.ok(whole?.options?.includes('ro'), 'the image is mounted read-only');
    assert.ok(sub?.options?.includes('ro'), 'the subPath too');
    assert.ok(sub?.source?.endsWith('/bin'), 'the subPath mount is the image\'s bin directory');
    assert.equal(path.dirname(sub?.source ?? ''), whole?.source, 'both from the same image mount');

    const events = await podEvents(namespace, 'reader');
    const pulling = events.filter((e) => e.reason === 'Pulling' && e.message === `Pulling image "${PRIVATE_IMAGE}"`);
    assert.equal(pulling.length, 1, 'one pull of the volume\'s image');
    assert.equal(pulling[0]?.involvedObject.fieldPath, undefined, 'an image volume\'s pull is the pod\'s event, not a container\'s');
    const after = await imageVolumeCounters();
    assert.deepEqual(after, { requested: before.requested! + 1, mounted_succeed: before.mounted_succeed! + 2, mounted_errors: before.mounted_errors! }, 'kubelet_image_volume_*_total: one volume, mounted at two paths');
  });

  it('keeps the container from starting when the volume\'s image is absent under Never, or refused without the secret', async () => {
    await apply(volumePod(namespace, 'never', { reference: `${REGISTRY}/private/absent:1`, pullPolicy: 'Never' }));
    await apply(volumePod(namespace, 'no-secret', { reference: `${REGISTRY}/private/busybox:latest`, pullPolicy: 'Always' }));
    const never = await waitForWaitingReason(namespace, 'never', 'ErrImageNeverPull');
    assert.equal(never.status?.containerStatuses?.[0]?.state?.waiting?.message, `Container image "${REGISTRY}/private/absent:1" is not present with pull policy of Never`);
    const refused = await eventually('no-secret waiting on its volume\'s pull', async () => {
      const reason = (await getPod(namespace, 'no-secret'))?.status?.containerStatuses?.[0]?.state?.waiting?.reason;
      return reason === 'ErrImagePull' || reason === 'ImagePullBackOff' ? reason : undefined;
    });
    console.log(`# never: ErrImageNeverPull; no-secret: ${refused}`);
    for (const name of ['never', 'no-secret']) {
      const pod = await getPod(namespace, name);
      assert.equal(pod?.status?.phase, 'Pending');
      assert.deepEqual(await containersOf(pod?.metadata?.uid ?? ''), [], `${name}: no container in the runtime`);
      const failed = (await podEvents(namespace, name)).filter((e) => e.reason === 'Failed' && e.involvedObject.fieldPath === 'spec.containers{main}');
      assert.ok(failed.some((e) => /^Error: (ErrImageNeverPull|ErrImagePull|ImagePullBackOff)$/.test(e.message ?? '')), `${name}: the container's Failed event names the pull's reason`);
    }
  });
});
