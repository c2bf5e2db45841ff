import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { applyStaticPodDefaults, isManifestError, parseManifest, parseManifestBody, staticPodUid, urlPodUid } from './static-pod.js';

const YAML = `apiVersion: v1
kind: Pod
metadata:
  name: etcd
  labels: { tier: control-plane }
spec:
  containers:
  - name: etcd
    image: registry.local/etcd:3.6
`;
const SEEN = new Date('2030-01-01T00:00:00Z');
const context = { nodeName: 'Node-A', file: '/etc/manifests/etcd.yaml', seenAt: SEEN };

function refusal(text: string): string {
  try {
    parseManifest('/m/x.yaml', text);
  } catch (err: unknown) {
    assert.ok(isManifestError(err), 'a typed ManifestError');
    return err.reason;
  }
  assert.fail('the manifest was accepted');
}

describe('static pod manifests: parse and validate', () => {
  it('reads YAML and JSON alike', () => {
    const fromYaml = parseManifest('/m/a.yaml', YAML);
    const fromJson = parseManifest('/m/a.json', JSON.stringify(fromYaml));
    assert.deepEqual(fromJson, fromYaml);
    assert.equal(fromYaml.spec?.containers[0]?.image, 'registry.local/etcd:3.6');
  });

  it('refuses what does not parse or is not a valid pod, saying why', () => {
    assert.match(refusal('kind: Pod\n  bad: [indent'), /does not parse/);
    assert.match(refusal('- a list'), /not an object/);
    assert.match(refusal(YAML.replace('kind: Pod', 'kind: Deployment')), /not a v1 Pod/);
    assert.match(refusal(YAML.replace('name: etcd\n  labels', 'name: Etcd_1\n  labels')), /metadata.name/);
    assert.match(refusal(YAML.replace(/containers:[\s\S]*$/, 'containers: []\n')), /at least one container/);
    assert.match(refusal(YAML.replace('    image: registry.local/etcd:3.6\n', '')), /has no image/);
    assert.match(refusal(`${YAML}  initContainers:\n  - name: etcd\n    image: busybox\n`), /used twice/);
  });
});

describe("static pod manifests: the kubelet's defaults", () => {
  const manifest = parseManifest(context.file, YAML);

  it('names the pod <name>-<node> (lower-cased), defaults the namespace, binds it to the node', () => {
    const pod = applyStaticPodDefaults(manifest, context);
    assert.equal(pod.metadata?.name, 'etcd-node-a');
    assert.equal(pod.metadata?.namespace, 'default');
    assert.equal(pod.spec?.nodeName, 'Node-A');
    assert.equal(pod.status?.phase, 'Pending');
    assert.deepEqual(pod.metadata?.labels, { tier: 'control-plane' });
    assert.equal(manifest.metadata?.name, 'etcd', 'the parsed manifest is not modified');
  });

  it('annotates hash (= UID), source and seen, and tolerates every NoExecute taint once', () => {
    const pod = applyStaticPodDefaults({ ...manifest, spec: { ...manifest.spec!, tolerations: [{ operator: 'Exists', effect: 'NoExecute' }, { key: 'k', operator: 'Exists' }] } }, context);
    assert.deepEqual(pod.metadata?.annotations, {
      'kubernetes.io/config.hash': pod.metadata?.uid,
      'kubernetes.io/config.source': 'file',
      'kubernetes.io/config.seen': SEEN.toISOString(),
    });
    assert.deepEqual(pod.spec?.tolerations, [{ key: 'k', operator: 'Exists' }, { operator: 'Exists', effect: 'NoExecute' }]);
  });

  it('derives a stable UID from the pod, the node and the file; any change gives a new one', () => {
    const uid = applyStaticPodDefaults(manifest, context).metadata?.uid ?? '';
    assert.match(uid, /^[0-9a-f]{32}$/);
    const reordered = parseManifest(context.file, YAML.replace('  name: etcd\n  labels: { tier: control-plane }', '  labels: { tier: control-plane }\n  name: etcd'));
    assert.equal(applyStaticPodDefaults(reordered, { ...context, seenAt: new Date(0) }).metadata?.uid, uid, 'same pod (keys reordered), same node and file, another read time');
    const edited: V1Pod = parseManifest(context.file, YAML.replace('etcd:3.6', 'etcd:3.7'));
    assert.notEqual(staticPodUid(edited, 'Node-A', context.file), uid, 'an edit');
    assert.notEqual(staticPodUid(manifest, 'node-b', context.file), uid, 'another node');
    assert.notEqual(staticPodUid(manifest, 'Node-A', '/etc/manifests/etcd2.yaml'), uid, 'another file');
  });

  it('keeps a UID the manifest sets', () => {
    const pod = applyStaticPodDefaults({ ...manifest, metadata: { ...manifest.metadata, uid: 'fixed-uid' } }, context);
    assert.equal(pod.metadata?.uid, 'fixed-uid');
    assert.equal(pod.metadata?.annotations?.['kubernetes.io/config.hash'], 'fixed-uid');
  });
});

describe('manifest URL bodies: a Pod or a PodList', () => {
  const URL = 'http://127.0.0.1:1/pods';
  const bodyRefusal = (text: string): string => {
    try {
      parseManifestBody(URL, text);
    } catch (err: unknown) {
      assert.ok(isManifestError(err), 'a typed ManifestError');
      return err.reason;
    }
    assert.fail('the body was accepted');
  };
  const item = (name: string): Record<string, unknown> => ({ metadata: { name }, spec: { containers: [{ name: 'c', image: 'busybox' }] } });

  it('reads a single pod, and a v1 PodList whose items may leave apiVersion/kind out', () => {
    assert.deepEqual(parseManifestBody(URL, YAML).map((p) => p.metadata?.name), ['etcd']);
    const pods = parseManifestBody(URL, JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [item('a'), { apiVersion: 'v1', kind: 'Pod', ...item('b') }] }));
    assert.deepEqual(pods.map((p) => [p.metadata?.name, p.kind, p.apiVersion]), [['a', 'Pod', 'v1'], ['b', 'Pod', 'v1']]);
    assert.deepEqual(parseManifestBody(URL, 'apiVersion: v1\nkind: PodList\nitems: []\n'), [], 'an empty list is no pods');
  });

  it('refuses the whole list when any item is invalid or two share a name', () => {
    assert.match(bodyRefusal(JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [item('a'), item('Bad_Name')] })), /items\[1\]: metadata.name/);
    assert.match(bodyRefusal(JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [item('a'), item('a')] })), /listed twice/);
    assert.match(bodyRefusal(JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [item('a'), 'x'] })), /items\[1\]: /);
    assert.match(bodyRefusal(JSON.stringify({ apiVersion: 'v2', kind: 'PodList', items: [] })), /v1 PodList/);
    assert.match(bodyRefusal('{ not yaml: ['), /does not parse/);
  });

  it("applies the kubelet's URL defaults: source http, UID over the pod and the URL only", () => {
    const manifest = parseManifest(URL, YAML);
    const pod = applyStaticPodDefaults(manifest, { nodeName: 'Node-A', url: URL, seenAt: SEEN });
    assert.equal(pod.metadata?.name, 'etcd-node-a');
    assert.equal(pod.metadata?.annotations?.['kubernetes.io/config.source'], 'http');
    assert.equal(pod.metadata?.uid, urlPodUid(manifest, URL));
    assert.equal(applyStaticPodDefaults(manifest, { nodeName: 'node-b', url: URL, seenAt: SEEN }).metadata?.uid, pod.metadata?.uid, 'the node name is not hashed');
    assert.notEqual(urlPodUid(manifest, `${URL}2`), pod.metadata?.uid, 'another URL');
    assert.notEqual(staticPodUid(manifest, 'Node-A', URL), pod.metadata?.uid, 'not the file hash');
  });
});
