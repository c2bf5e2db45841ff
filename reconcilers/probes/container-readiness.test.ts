import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ContainerReadinessStore, criContainerId } from './container-readiness.js';
import { probedFlags } from '../status/probe-status.js';

describe('ContainerReadinessStore', () => {
  it('keeps one flag when the other is recorded, under the bare runtime ID', () => {
    const store = new ContainerReadinessStore();
    store.record('u1', 'containerd://c1', { started: true });
    store.record('u1', 'c1', { ready: false });
    assert.deepEqual(store.resultsOf('u1').get('c1'), { started: true, ready: false });
    assert.equal(store.resultsOf('u2').size, 0);
  });

  it('prunes a result only once a full status after the one it was recorded under still lacks its container', () => {
    const store = new ContainerReadinessStore();
    store.record('u1', 'old', { ready: true });
    store.record('u1', 'current', { ready: true });
    // A container newer than the status being handed over keeps its result for one round.
    store.prune('u1', new Set(['current']));
    assert.deepEqual([...store.resultsOf('u1').keys()].sort(), ['current', 'old']);
    store.prune('u1', new Set(['current']));
    assert.deepEqual([...store.resultsOf('u1').keys()], ['current']);
    store.record('u1', 'new', { ready: false });
    store.prune('u1', new Set(['current']));
    assert.deepEqual([...store.resultsOf('u1').keys()].sort(), ['current', 'new']);
  });

  it('forgets a pod', () => {
    const store = new ContainerReadinessStore();
    store.record('u1', 'c1', { ready: true });
    store.forget('u1');
    assert.equal(store.size(), 0);
    assert.equal(store.resultsOf('u1').size, 0);
  });
});

describe('probedFlags', () => {
  it('is ready and started while running without results, neither when not running', () => {
    assert.deepEqual(probedFlags(true, undefined), { ready: true, started: true });
    assert.deepEqual(probedFlags(false, { ready: true, started: true }), { ready: false, started: false });
  });

  it('follows the results, and is not ready before it has started', () => {
    assert.deepEqual(probedFlags(true, { ready: false }), { ready: false, started: true });
    assert.deepEqual(probedFlags(true, { started: false, ready: true }), { ready: false, started: false });
  });

  it('strips the runtime prefix of a container ID', () => {
    assert.equal(criContainerId('containerd://abc'), 'abc');
    assert.equal(criContainerId('abc'), 'abc');
  });
});

describe('probedFlags for containers with probes but no result yet', () => {
  it('a readiness probe that has not succeeded yet leaves the container not ready', () => {
    assert.deepEqual(probedFlags(true, undefined, { startup: false, readiness: true }), { ready: false, started: true });
  });
  it('a startup probe that has not succeeded yet leaves it neither started nor ready', () => {
    assert.deepEqual(probedFlags(true, undefined, { startup: true, readiness: false }), { ready: false, started: false });
  });
  it('results override the defaults', () => {
    assert.deepEqual(probedFlags(true, { started: true, ready: true }, { startup: true, readiness: true }), { ready: true, started: true });
  });
});
