/**
 * Unit tests of the hostile-spec generator (deterministic, covers every category), of the outcome
 * classifier (a Pending pod without a reason is never settled) and of the refusal categories.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiException, type CoreV1Event, type V1Pod } from '@kubernetes/client-node';
import { VARIANTS, hostileSpec, hostileSpecs } from './generate.js';
import { classifyPod } from './outcome.js';
import { foldField, refusalCategory } from './refusal.js';
import { CATEGORIES } from './types.js';

const options = { seed: 42, nodeName: 'node-a', namespace: 'ns-a' };

describe('hostile spec generator', () => {
  it('gives the same specs for the same seed, and other specs for another seed', () => {
    const a = JSON.stringify(hostileSpecs(options, 0, 60));
    const b = JSON.stringify(hostileSpecs(options, 0, 60));
    const c = JSON.stringify(hostileSpecs({ ...options, seed: 43 }, 0, 60));
    assert.equal(a, b);
    assert.notEqual(a, c);
  });

  it('rebuilds one spec alone from the seed and its index', () => {
    const batch = hostileSpecs(options, 100, 150);
    assert.deepEqual(hostileSpec(options, 137), batch[37]);
  });

  it('covers every category in any 12 consecutive specs, and binds every pod to the node in the namespace', () => {
    const specs = hostileSpecs(options, 500, 512);
    assert.deepEqual(new Set(specs.map((s) => s.category)), new Set(CATEGORIES));
    for (const s of specs) {
      assert.equal(s.pod.spec.nodeName, 'node-a');
      assert.equal(s.pod.metadata.namespace, 'ns-a');
    }
  });

  it('draws every variant of every category within 1,000 specs', () => {
    const seen = new Set(hostileSpecs(options, 0, 1000).map((s) => `${s.category}/${s.variant}`));
    const all = CATEGORIES.flatMap((c) => Object.keys(VARIANTS[c]).map((v) => `${c}/${v}`));
    const missing = all.filter((v) => !seen.has(v));
    assert.deepEqual(missing, []);
    console.log(`1,000 specs of seed 42 draw ${seen.size} variants of ${CATEGORIES.length} categories`);
  });

  it('names pods uniquely in a run (apart from the deliberately invalid names)', () => {
    const named = hostileSpecs(options, 0, 1000).filter((s) => s.variant !== 'invalid-pod-name' && typeof s.pod.metadata.name === 'string');
    const names = named.map((s) => s.pod.metadata.name as string);
    assert.equal(new Set(names).size, names.length);
  });
});

function pod(status: NonNullable<V1Pod['status']>): V1Pod {
  return { metadata: { name: 'p' }, status };
}

const event = (reason: string, type = 'Warning'): CoreV1Event => ({ metadata: {}, involvedObject: {}, reason, type });

describe('hostile pod outcome', () => {
  it('leaves a Pending pod without a reason unsettled, even with events', () => {
    const held = pod({ phase: 'Pending', containerStatuses: [{ name: 'main', image: 'x', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ContainerCreating' } } }] });
    assert.equal(classifyPod(held, [event('Scheduled', 'Normal')]).settled, false);
    assert.equal(classifyPod(pod({ phase: 'Pending' }), []).settled, false);
  });

  it('settles a held pod on the kubelet Warning event that explains it', () => {
    const held = pod({ phase: 'Pending', containerStatuses: [{ name: 'main', image: 'x', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ContainerCreating' } } }] });
    assert.deepEqual(classifyPod(held, [event('FailedMount')]), { settled: true, reason: 'ContainerCreating+FailedMount' });
  });

  it('settles on a container reason of the vocabulary, but only with an event', () => {
    const broken = pod({ phase: 'Pending', containerStatuses: [{ name: 'main', image: 'x', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'CreateContainerConfigError' } } }] });
    assert.deepEqual(classifyPod(broken, [event('Failed')]), { settled: true, reason: 'CreateContainerConfigError' });
    assert.equal(classifyPod(broken, []).settled, false);
    const invented = pod({ phase: 'Pending', containerStatuses: [{ name: 'main', image: 'x', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'SomethingWentWrong' } } }] });
    assert.equal(classifyPod(invented, [event('Failed')]).settled, false);
  });

  it('settles ended pods on their pod reason or container reason; an unknown pod reason is not settled', () => {
    assert.equal(classifyPod(pod({ phase: 'Failed', reason: 'OutOfmemory' }), [event('OutOfmemory')]).reason, 'Failed:OutOfmemory');
    assert.equal(classifyPod(pod({ phase: 'Failed', reason: 'SysctlForbidden' }), [event('SysctlForbidden')]).reason, 'Failed:SysctlForbidden');
    const oom = pod({ phase: 'Failed', containerStatuses: [{ name: 'main', image: 'x', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 137, reason: 'OOMKilled' } } }] });
    assert.equal(classifyPod(oom, [event('Started', 'Normal')]).reason, 'Failed:OOMKilled');
    assert.equal(classifyPod(pod({ phase: 'Failed', reason: 'Whatever' }), [event('X')]).settled, false);
  });

  it('settles a pod whose containers all run as Running', () => {
    const running = pod({ phase: 'Running', containerStatuses: [{ name: 'main', image: 'x', imageID: '', ready: true, restartCount: 0, state: { running: {} } }] });
    assert.deepEqual(classifyPod(running, [event('Started', 'Normal')]), { settled: true, reason: 'Running' });
  });
});

describe('refusal categories', () => {
  it('folds indices and map keys out of field paths', () => {
    assert.equal(foldField('spec.containers[0].env[12].name'), 'spec.containers[].env[].name');
    assert.equal(foldField('metadata.labels[ü]'), 'metadata.labels[]');
  });

  it('reads code, reason and the first cause from the Status body', () => {
    const body = JSON.stringify({ kind: 'Status', reason: 'Invalid', details: { causes: [{ reason: 'FieldValueInvalid', field: 'spec.containers[0].volumeMounts[0].subPath' }] } });
    assert.equal(refusalCategory(new ApiException(422, 'x', body, {})), '422 Invalid spec.containers[].volumeMounts[].subPath FieldValueInvalid');
    assert.equal(refusalCategory(new ApiException(413, 'x', 'not json', {})), '413 no-reason');
    assert.equal(refusalCategory(new Error('socket hang up')), undefined);
  });
});
