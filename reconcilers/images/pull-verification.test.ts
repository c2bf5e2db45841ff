import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { AuthConfig, Image, ImageService, ImageSpec } from '../../cri/types.js';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { RecordingEventRecorder } from '../../test/doubles/recording-event-recorder.js';
import { ContainerStartError } from '../model/sync-errors.js';
import { ImagePuller } from './image-puller.js';
import { PullGate } from './pull-gate.js';
import { mustPullCheckResult, mustVerifyPull, type PullVerificationPolicy } from './pull-verification.js';
import { PulledRecords, credentialHash } from './pulled-records.js';

const SECRET: AuthConfig = { username: 'u', password: 'p', serverAddress: 'registry.test' };
const OTHER: AuthConfig = { username: 'u', password: 'other', serverAddress: 'registry.test' };
const IMAGE = 'registry.test/private/app:1';

/** A registry of one private image: present once pulled; a pull succeeds only with SECRET. */
class PrivateRegistry implements ImageService {
  readonly pulls: (string | undefined)[] = [];
  present = false;
  imageStatus(): Promise<Image | undefined> {
    return Promise.resolve(this.present ? { id: 'sha256:app', repoTags: [IMAGE], repoDigests: [], size: 1, username: '', pinned: false } as unknown as Image : undefined);
  }
  pullImage(_image: ImageSpec, auth?: AuthConfig): Promise<string> {
    this.pulls.push(auth?.password);
    if (auth?.password !== 'p') return Promise.reject(new Error('401 Unauthorized'));
    this.present = true;
    return Promise.resolve('sha256:app');
  }
  listImages(): Promise<Image[]> { return Promise.resolve([]); }
  removeImage(): Promise<void> { return Promise.resolve(); }
  imageFsInfo(): Promise<never[]> { return Promise.resolve([]); }
}

function pod(uid: string, pullPolicy = 'IfNotPresent'): { pod: V1Pod; container: { name: string; image: string; imagePullPolicy: string } } {
  const container = { name: 'c', image: IMAGE, imagePullPolicy: pullPolicy };
  return { pod: { metadata: { name: uid, namespace: 'ns', uid }, spec: { containers: [container] } }, container };
}

describe('mustVerifyPull', () => {
  const record = { anonymous: false, nodeWide: false, credentialHashes: ['h1'] };
  const cases: [PullVerificationPolicy, typeof record | undefined, string[], boolean, string][] = [
    ['NeverVerifyPreloadedImages', undefined, [], false, 'a preloaded image is trusted'],
    ['AlwaysVerify', undefined, [], true, 'AlwaysVerify checks even preloaded images'],
    ['NeverVerifyPreloadedImages', { anonymous: true, nodeWide: false, credentialHashes: ['h1'] }, [], false, 'an image pulled anonymously is everyone\'s'],
    ['NeverVerifyPreloadedImages', { anonymous: false, nodeWide: true, credentialHashes: [] }, [], false, "an image pulled with the node's own credentials is everyone's (NodePodsAccessible)"],
    ['NeverVerifyPreloadedImages', record, [], true, 'a pod without credentials must pull'],
    ['NeverVerifyPreloadedImages', record, ['h2'], true, 'a pod with other credentials must pull'],
    ['NeverVerifyPreloadedImages', record, ['h2', 'h1'], false, 'a pod holding one of them may use it'],
    ['NeverVerify', record, [], false, 'NeverVerify never checks'],
  ];
  for (const [policy, r, hashes, expected, name] of cases) it(name, () => { assert.equal(mustVerifyPull(policy, r, hashes), expected); });
  it('names each verdict as the kubelet’s pull manager counts it', () => {
    assert.deepEqual(cases.map(([policy, r, hashes]) => mustPullCheckResult(policy, r, mustVerifyPull(policy, r, hashes))), [
      'credentialPolicyAllowed', 'mustAuthenticate', 'credentialRecordFound', 'credentialRecordFound', 'mustAuthenticate', 'mustAuthenticate', 'credentialRecordFound', 'credentialPolicyAllowed',
    ]);
  });
});

describe("the image puller and secret-pulled images (the kubelet's KubeletEnsureSecretPulledImages)", () => {
  const dirs: string[] = [];
  after(async () => { await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))); });

  async function rig(nodeCredentials?: AuthConfig[]): Promise<{ registry: PrivateRegistry; events: RecordingEventRecorder; puller: ImagePuller; secrets: Map<string, AuthConfig[]>; dir: string; seen: string[] }> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'pulled-'));
    dirs.push(dir);
    const clock = createFakeClock();
    const registry = new PrivateRegistry();
    const events = new RecordingEventRecorder();
    const secrets = new Map<string, AuthConfig[]>();
    const seen: string[] = [];
    const ensureMetrics = {
      ensured: (r: { pullPolicy: string; presentLocally: boolean | undefined; pullRequired: boolean | undefined }) => { seen.push(`${r.pullPolicy} ${String(r.presentLocally)} ${String(r.pullRequired)}`); },
      mustPullChecked: (result: string) => { seen.push(`check ${result}`); },
    };
    const puller = new ImagePuller({ ensureMetrics, images: registry, events, clock, gate: new PullGate({ concurrency: 1, qps: 0, burst: 0 }, clock), credentials: (p) => Promise.resolve({ auths: secrets.get(p.metadata?.uid ?? '') ?? [] }), pulledRecords: new PulledRecords(dir), verificationPolicy: 'NeverVerifyPreloadedImages', ...(nodeCredentials === undefined ? {} : { nodeCredentials: () => Promise.resolve(nodeCredentials) }) });
    return { registry, events, puller, secrets, dir, seen };
  }

  it('makes a pod without the secret pull the image another pod pulled with it, and fails it; one with the secret uses it as it is', async () => {
    const { registry, events, puller, secrets, seen } = await rig();
    secrets.set('one', [SECRET]);
    const first = pod('one');
    assert.equal((await puller.ensureImage(first.pod, first.container)).ref, 'sha256:app');
    assert.deepEqual(registry.pulls, ['p']);
    // Pod 2: same image, IfNotPresent, no secret: the image is present, yet it must pull, and the registry refuses.
    const second = pod('two');
    await assert.rejects(puller.ensureImage(second.pod, second.container), (e: unknown) => e instanceof ContainerStartError && e.reason === 'ErrImagePull');
    assert.deepEqual(registry.pulls, ['p', undefined]);
    assert.ok(events.events.some((e) => e.podUid === 'two' && e.reason === 'Failed'));
    // Pod 3: another secret for the registry: still not the one that pulled it.
    secrets.set('three', [OTHER]);
    const third = pod('three');
    await assert.rejects(puller.ensureImage(third.pod, third.container), (e: unknown) => e instanceof ContainerStartError && e.reason === 'ErrImagePull');
    // Pod 4: the same secret: no pull, "already present".
    secrets.set('four', [SECRET]);
    const fourth = pod('four');
    assert.equal((await puller.ensureImage(fourth.pod, fourth.container)).ref, 'sha256:app');
    assert.equal(registry.pulls.length, 3, 'no pull for the holder of the secret');
    assert.ok(events.events.some((e) => e.podUid === 'four' && e.reason === 'Pulled' && e.message.includes('already present on machine')));
    // Never: no pull to check with, so it is refused with the kubelet's reason.
    const never = pod('five', 'Never');
    await assert.rejects(puller.ensureImage(never.pod, never.container), (e: unknown) => e instanceof ContainerStartError && e.reason === 'ErrImageNeverPull');
    // The kubelet's image manager metrics for each request, as its EnsureImageExists and pull manager record them.
    assert.deepEqual(seen, [
      'IfNotPresent false true',
      'check mustAuthenticate', 'IfNotPresent true true',
      'check mustAuthenticate', 'IfNotPresent true true',
      'check credentialRecordFound', 'IfNotPresent true false',
      'check mustAuthenticate', 'Never true true',
    ]);
  });

  it('remembers what pulled an image across a restart of the agent, and trusts images it never pulled', async () => {
    const { registry, dir, secrets, puller } = await rig();
    secrets.set('one', [SECRET]);
    await puller.ensureImage(pod('one').pod, pod('one').container);
    const restarted = new PulledRecords(dir);
    assert.deepEqual(await restarted.get('sha256:app'), { anonymous: false, nodeWide: false, credentialHashes: [credentialHash(SECRET)] });
    assert.equal(await restarted.get('sha256:preloaded'), undefined);
    assert.equal(registry.present, true);
  });

  it("pulls with the node's credential provider credentials after the pod's own, and then lets every pod use the image", async () => {
    const { registry, events, puller, secrets, dir } = await rig([OTHER, SECRET]);
    // The pod's secret is wrong; the node's second credential is the right one.
    secrets.set('one', [{ ...OTHER, password: 'wrong' }]);
    assert.equal((await puller.ensureImage(pod('one').pod, pod('one').container)).ref, 'sha256:app');
    assert.deepEqual(registry.pulls, ['wrong', 'other', 'p'], "the pod's credential first, then the node's in order");
    assert.deepEqual(await new PulledRecords(dir).get('sha256:app'), { anonymous: false, nodeWide: true, credentialHashes: [] });
    // A pod without any secret now uses the present image without a pull, as on a kubelet node.
    assert.equal((await puller.ensureImage(pod('two').pod, pod('two').container)).ref, 'sha256:app');
    assert.equal(registry.pulls.length, 3);
    assert.ok(events.events.some((e) => e.podUid === 'two' && e.reason === 'Pulled' && e.message.includes('already present on machine')));
  });
});
