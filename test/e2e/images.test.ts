/**
 * End to end: image pull policies and image pull secrets against the test cluster's private
 * registry (127.0.0.1:5000, basic auth; see test/cluster/lib/registry.sh), asserted in the API
 * (status, events, the defaulted pull policy) and in the runtime (`crictl images`).
 *
 * The tests run in order: the first needs the private image absent from the node, the later ones
 * need it present. The private image is removed from containerd before and after, so reruns start
 * clean; it has an image ID of its own, so removing it leaves docker.io/library/busybox alone.
 *
 * Then the agent's credential provider plugin (test/cluster/credential-provider/, configured by
 * test/cluster/lib/agent.sh for 127.0.0.1:5000/provided only): pods without secrets pull the
 * provided image with its credentials; its calls are counted in the log it appends to.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CoreV1Event } from '@kubernetes/client-node';
import { NODE_NAME, apply, containersOf, createNamespace, crictl, deleteNamespace, eventually, getPod, kubectl, podEvents, requireCluster, waitForPhase, waitForWaitingReason } from './helpers.js';

const REGISTRY = '127.0.0.1:5000';
const PRIVATE_IMAGE = `${REGISTRY}/private/busybox:1.35`;
const PRIVATE_IMAGES = [PRIVATE_IMAGE, `${REGISTRY}/private/busybox:latest`];
const PROVIDED_IMAGE = `${REGISTRY}/provided/busybox:1.35`;
/**
 * The runtime's pull error when the registry answered 401 to a pull without credentials (containerd
 * 2; containerd 1.6 said "401 Unauthorized").
 */
const REGISTRY_REFUSED = /pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials/;
const PROVIDER_CALLS = path.join(process.env.CLUSTER_DIR ?? '', 'credential-provider-calls.log');

const b64 = (text: string): string => Buffer.from(text).toString('base64');

async function registryCredentials(): Promise<string> {
  const file = path.join(process.env.CLUSTER_DIR ?? '', 'registry', 'credentials');
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    throw new Error(`no registry credentials at ${file}: run \`npm run cluster:up\` (it starts the registry)`);
  }
}

async function imagesInRuntime(): Promise<string[]> {
  const listed = JSON.parse(await crictl(['images', '-o', 'json'])) as { images: { repoTags?: string[] }[] };
  return listed.images.flatMap((image) => image.repoTags ?? []);
}

async function removePrivateImages(): Promise<void> {
  for (const image of PRIVATE_IMAGES) {
    if ((await imagesInRuntime()).includes(image)) await crictl(['rmi', image]);
  }
}

interface PodOptions {
  readonly name: string;
  readonly namespace: string;
  readonly image: string;
  readonly pullSecrets?: readonly string[];
  readonly pullPolicy?: string;
  readonly script?: string;
}

function pod(options: PodOptions): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: options.name, namespace: options.namespace },
    spec: {
      nodeName: NODE_NAME,
      terminationGracePeriodSeconds: 1,
      ...(options.pullSecrets === undefined ? {} : { imagePullSecrets: options.pullSecrets.map((name) => ({ name })) }),
      containers: [
        {
          name: 'main',
          image: options.image,
          ...(options.pullPolicy === undefined ? {} : { imagePullPolicy: options.pullPolicy }),
          command: ['sh', '-c', options.script ?? 'sleep 3600'],
        },
      ],
    },
  };
}

/** How many times an event with `reason` happened (repeats are aggregated into `count`). */
function occurrences(events: readonly CoreV1Event[], reason: string): number {
  return events.filter((e) => e.reason === reason).reduce((sum, e) => sum + (e.count ?? 1), 0);
}

/** Deletes a namespace and waits (at most 2 min) for its pods to be gone: then their images can go. */
async function deleteNamespaceAndPods(namespace: string): Promise<void> {
  await deleteNamespace(namespace);
  await eventually(`pods of ${namespace} gone`, async () => {
    const out = await kubectl(['get', 'pods', '-n', namespace, '-o', 'name']).catch(() => '');
    return out.trim() === '' ? true : undefined;
  }, 120_000).catch(() => undefined);
}

async function eventWith(namespace: string, name: string, reason: string, pattern: RegExp): Promise<CoreV1Event> {
  return eventually(`event ${reason} ${String(pattern)} for ${name}`, async () =>
    (await podEvents(namespace, name)).find((e) => e.reason === reason && pattern.test(e.message ?? '')));
}

describe('image pull policies and pull secrets against a registry that requires authentication', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    const credentials = await registryCredentials();
    await removePrivateImages();
    namespace = await createNamespace('e2e-images');
    const dockerConfig = { auths: { [REGISTRY]: { auth: b64(credentials) } } };
    await apply({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'regcred', namespace },
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': b64(JSON.stringify(dockerConfig)) },
    });
  });

  after(async () => {
    if (namespace !== '') await deleteNamespaceAndPods(namespace);
    await removePrivateImages();
  });

  it('refuses the private image without a pull secret: ErrImagePull, then ImagePullBackOff, with a Failed event', async () => {
    await apply(pod({ name: 'anonymous', namespace, image: PRIVATE_IMAGE }));
    const failed = await eventWith(namespace, 'anonymous', 'Failed', /Failed to pull image/);
    assert.match(failed.message ?? '', REGISTRY_REFUSED);
    const stuck = await waitForWaitingReason(namespace, 'anonymous', 'ImagePullBackOff');
    assert.equal(stuck.status?.phase, 'Pending');
    await eventWith(namespace, 'anonymous', 'BackOff', /Back-off pulling image "127\.0\.0\.1:5000\/private\/busybox:1\.35"/);
    assert.ok(!(await imagesInRuntime()).includes(PRIVATE_IMAGE), 'the image was not pulled');
    // Gone before the next test pulls the image, which would let this pod start.
    await kubectl(['delete', 'pod', '-n', namespace, 'anonymous', '--wait=true', '--timeout=60s']);
  });

  it('pulls the private image with a dockerconfigjson pull secret and runs the pod, with Pulling and Pulled events', async () => {
    await apply(pod({ name: 'with-secret', namespace, image: PRIVATE_IMAGE, pullSecrets: ['regcred'] }));
    const running = await waitForPhase(namespace, 'with-secret', 'Running');
    assert.equal(running.status?.containerStatuses?.[0]?.ready, true);
    await eventWith(namespace, 'with-secret', 'Pulling', /^Pulling image "127\.0\.0\.1:5000\/private\/busybox:1\.35"$/);
    await eventWith(namespace, 'with-secret', 'Pulled', /^Successfully pulled image "127\.0\.0\.1:5000\/private\/busybox:1\.35" in /);
    assert.ok((await imagesInRuntime()).includes(PRIVATE_IMAGE), 'crictl images lists the private image');
    assert.equal(occurrences(await podEvents(namespace, 'with-secret'), 'FailedToRetrieveImagePullSecret'), 0);
  });

  it('pulls again on every container start with imagePullPolicy Always', async () => {
    await apply(pod({ name: 'always', namespace, image: PRIVATE_IMAGE, pullSecrets: ['regcred'], pullPolicy: 'Always', script: 'sleep 1; exit 1' }));
    const restarted = await eventually('a restarted container and a second pull', async () => {
      const current = await getPod(namespace, 'always');
      const pulls = occurrences(await podEvents(namespace, 'always'), 'Pulling');
      return (current?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 && pulls >= 2 ? { pulls } : undefined;
    }, 120_000);
    assert.ok(restarted.pulls >= 2);
    const events = await podEvents(namespace, 'always');
    assert.ok(occurrences(events, 'Pulled') >= 2, 'each pull is reported as Pulled');
    assert.ok(events.filter((e) => e.reason === 'Pulled').every((e) => !(e.message ?? '').includes('already present')), 'Always never uses the present image as is');
  });

  it('does not pull an image that is present with IfNotPresent for a pod holding the secret it was pulled with: Pulled "already present" and no Pulling', async () => {
    await apply(pod({ name: 'if-not-present', namespace, image: PRIVATE_IMAGE, pullSecrets: ['regcred'], pullPolicy: 'IfNotPresent' }));
    await waitForPhase(namespace, 'if-not-present', 'Running');
    await eventWith(namespace, 'if-not-present', 'Pulled', /^Container image "127\.0\.0\.1:5000\/private\/busybox:1\.35" already present on machine and can be accessed by the pod$/);
    assert.equal(occurrences(await podEvents(namespace, 'if-not-present'), 'Pulling'), 0);
  });

  it('keeps a secret-pulled image from a pod without the secret (KubeletEnsureSecretPulledImages): IfNotPresent pulls and the registry refuses, Never reads as absent', async () => {
    assert.ok((await imagesInRuntime()).includes(PRIVATE_IMAGE), 'the image is on the node');
    await apply(pod({ name: 'no-secret', namespace, image: PRIVATE_IMAGE, pullPolicy: 'IfNotPresent' }));
    const failed = await eventWith(namespace, 'no-secret', 'Failed', /Failed to pull image/);
    assert.match(failed.message ?? '', REGISTRY_REFUSED);
    await waitForWaitingReason(namespace, 'no-secret', 'ImagePullBackOff');
    assert.equal(occurrences(await podEvents(namespace, 'no-secret'), 'Pulled'), 0, 'never "already present" for it');
    const uid = (await getPod(namespace, 'no-secret'))?.metadata?.uid ?? '';
    assert.deepEqual(await containersOf(uid), [], 'no container was created from the image (crictl)');
    await apply(pod({ name: 'never-no-secret', namespace, image: PRIVATE_IMAGE, pullPolicy: 'Never' }));
    await eventWith(namespace, 'never-no-secret', 'ErrImageNeverPull', /^Container image "127\.0\.0\.1:5000\/private\/busybox:1\.35" is not present with pull policy of Never$/);
    await waitForWaitingReason(namespace, 'never-no-secret', 'ErrImageNeverPull');
  });

  it('runs a present image with imagePullPolicy Never, without pulling, for a pod with the secret', async () => {
    await apply(pod({ name: 'never', namespace, image: PRIVATE_IMAGE, pullSecrets: ['regcred'], pullPolicy: 'Never' }));
    await waitForPhase(namespace, 'never', 'Running');
    await eventWith(namespace, 'never', 'Pulled', /already present on machine and can be accessed by the pod/);
    assert.equal(occurrences(await podEvents(namespace, 'never'), 'Pulling'), 0);
  });

  it('defaults untagged and :latest images to imagePullPolicy Always, and pulls them on start', async () => {
    const untagged = `${REGISTRY}/private/busybox`;
    const latest = `${REGISTRY}/private/busybox:latest`;
    await apply(pod({ name: 'untagged', namespace, image: untagged, pullSecrets: ['regcred'] }));
    await apply(pod({ name: 'latest', namespace, image: latest, pullSecrets: ['regcred'] }));
    for (const [name, image] of [['untagged', untagged], ['latest', latest]] as const) {
      const running = await waitForPhase(namespace, name, 'Running');
      assert.equal(running.spec?.containers[0]?.imagePullPolicy, 'Always', `${name}: the API server defaulted the policy`);
      await eventWith(namespace, name, 'Pulling', new RegExp(`^Pulling image "${image.replace(/[.]/g, '\\.')}"$`));
    }
    assert.ok((await imagesInRuntime()).includes(latest), 'crictl images lists the :latest tag');
  });

  it('skips a missing pull secret and pulls with the others; FailedToRetrieveImagePullSecret only after a failed pull (1.37)', async () => {
    await apply(pod({ name: 'missing-secret', namespace, image: PRIVATE_IMAGE, pullSecrets: ['not-there', 'regcred'], pullPolicy: 'Always' }));
    await apply(pod({ name: 'only-missing', namespace, image: PRIVATE_IMAGE, pullSecrets: ['not-there'], pullPolicy: 'Always' }));
    await waitForPhase(namespace, 'missing-secret', 'Running');
    const warning = await eventWith(namespace, 'only-missing', 'FailedToRetrieveImagePullSecret', /not-there/);
    assert.equal(warning.type, 'Warning');
    assert.equal(warning.message, 'Unable to retrieve some image pull secrets (not-there); attempting to pull the image may not succeed.');
    assert.equal(occurrences(await podEvents(namespace, 'missing-secret'), 'FailedToRetrieveImagePullSecret'), 0, 'its pull succeeded: no warning');
  });
});

/** The repositories the credential provider plugin was asked about, in order, since the cluster came up. */
async function providerCalls(): Promise<string[]> {
  const text = await readFile(PROVIDER_CALLS, 'utf8').catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw error;
  });
  return text.split('\n').filter((line) => line !== '');
}

async function removeImage(image: string): Promise<void> {
  if ((await imagesInRuntime()).includes(image)) await crictl(['rmi', image]);
}

describe("a credential provider plugin (the kubelet's --image-credential-provider-config) for the registry", () => {
  let namespace = '';
  let callsBefore = 0;

  before(async () => {
    requireCluster();
    await removeImage(PROVIDED_IMAGE);
    await removePrivateImages();
    namespace = await createNamespace('e2e-cred-provider');
    callsBefore = (await providerCalls()).length;
  });

  after(async () => {
    if (namespace !== '') await deleteNamespaceAndPods(namespace);
    await removeImage(PROVIDED_IMAGE);
  });

  it("pulls with the plugin's credentials for a pod without pull secrets, and runs the plugin once per registry while its answer is cached", async () => {
    await apply(pod({ name: 'provided', namespace, image: PROVIDED_IMAGE, pullPolicy: 'IfNotPresent' }));
    await waitForPhase(namespace, 'provided', 'Running');
    await eventWith(namespace, 'provided', 'Pulled', /^Successfully pulled image "127\.0\.0\.1:5000\/provided\/busybox:1\.35" in /);
    assert.ok((await imagesInRuntime()).includes(PROVIDED_IMAGE), 'crictl images lists the provided image');
    assert.deepEqual((await providerCalls()).slice(callsBefore), [`${REGISTRY}/provided/busybox`], 'one call, for the repository without its tag');
    // Pulled again (Always): the answer is cached per registry for the provider's 10 minutes.
    await apply(pod({ name: 'provided-always', namespace, image: PROVIDED_IMAGE, pullPolicy: 'Always' }));
    await waitForPhase(namespace, 'provided-always', 'Running');
    await eventWith(namespace, 'provided-always', 'Pulled', /^Successfully pulled image /);
    const calls = (await providerCalls()).slice(callsBefore);
    console.log(`# credential provider plugin calls for two pulls: ${calls.length} (${calls.join(', ')})`);
    assert.equal(calls.length, 1);
  });

  it("lets any pod use an image the node's own credentials pulled, as the kubelet does (no pull, no secret)", async () => {
    await apply(pod({ name: 'present', namespace, image: PROVIDED_IMAGE, pullPolicy: 'IfNotPresent' }));
    await waitForPhase(namespace, 'present', 'Running');
    await eventWith(namespace, 'present', 'Pulled', /already present on machine and can be accessed by the pod/);
    assert.equal(occurrences(await podEvents(namespace, 'present'), 'Pulling'), 0);
  });

  it('never asks the plugin about an image outside its matchImages: that pull has no credentials and fails', async () => {
    const before = (await providerCalls()).length;
    await apply(pod({ name: 'unmatched', namespace, image: PRIVATE_IMAGE, pullPolicy: 'IfNotPresent' }));
    const failed = await eventWith(namespace, 'unmatched', 'Failed', /Failed to pull image/);
    assert.match(failed.message ?? '', REGISTRY_REFUSED);
    await waitForWaitingReason(namespace, 'unmatched', 'ImagePullBackOff');
    assert.equal((await providerCalls()).length, before);
    assert.ok(!(await imagesInRuntime()).includes(PRIVATE_IMAGE));
  });
});
