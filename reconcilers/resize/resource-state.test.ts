import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import pino from 'pino';
import { PodResourceState, RESOURCE_STATE_FILE } from './resource-state.js';
import { valuesOf } from '../model/resource-values.js';

function pod(cpu: string): V1Pod {
  return { metadata: { uid: 'u', name: 'p', namespace: 'd' }, spec: { containers: [{ name: 'c', resources: { requests: { cpu, 'example.com/gpu': '1' }, limits: { cpu } } }] } };
}

describe('PodResourceState (the allocation checkpoint)', () => {
  let root = '';
  const logger = pino({ level: 'silent' });

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'nodelet-resources-'));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('applies the allocation over a resized spec, keeping the resources that are not resizable', () => {
    const state = new PodResourceState({ rootDir: root, logger });
    assert.equal(state.allocatedPod(pod('2')).spec?.containers[0]?.resources?.requests?.cpu, '2', 'nothing allocated yet: the pod as it is');
    state.setAllocated(pod('500m'));
    const allocated = state.allocatedPod(pod('2')).spec?.containers[0]?.resources;
    assert.deepEqual(allocated, { requests: { cpu: '500m', 'example.com/gpu': '1' }, limits: { cpu: '500m' } });
  });

  it('survives an agent restart: a new instance reads the allocation and the in-place updates back from the root dir', async () => {
    const first = new PodResourceState({ rootDir: root, logger });
    first.setAllocated(pod('500m'));
    first.setActuated('u', 'cid', valuesOf({ limits: { cpu: '500m' } }));
    const second = new PodResourceState({ rootDir: root, logger });
    assert.equal(second.allocatedPod(pod('2')).spec?.containers[0]?.resources?.limits?.cpu, '500m');
    assert.equal(second.actuated('u', 'cid')?.cpuLimitMilli, 500);
    second.retainContainers('u', new Set());
    assert.equal(new PodResourceState({ rootDir: root, logger }).actuated('u', 'cid'), undefined, 'a gone container is dropped from the file too');
    second.podForgotten({ uid: 'u', name: 'p', namespace: 'd' });
    assert.deepEqual(JSON.parse(await readFile(path.join(root, RESOURCE_STATE_FILE), 'utf8')), { version: 1, pods: {} });
  });

  it('writes every pod\'s current record, however many pods changed since, in the file a restart reads', async () => {
    const other = (uid: string, cpu: string): V1Pod => ({ ...pod(cpu), metadata: { uid, name: uid, namespace: 'd' } });
    const state = new PodResourceState({ rootDir: root, logger });
    state.setAllocated(other('a', '100m'));
    state.setAllocated(other('b', '200m'));
    state.setActuated('a', 'ca', valuesOf({ limits: { cpu: '150m' } }));
    state.setAllocated(other('b', '250m'));
    const restarted = new PodResourceState({ rootDir: root, logger });
    state.setAllocated(other('c', '300m'));
    restarted.setAllocated(other('d', '400m'));
    const file = JSON.parse(await readFile(path.join(root, RESOURCE_STATE_FILE), 'utf8')) as { version: number; pods: Record<string, { allocated: Record<string, { limits?: { cpu?: string } }>; actuated: Record<string, unknown> }> };
    assert.equal(file.version, 1);
    assert.deepEqual(Object.keys(file.pods), ['a', 'b', 'd'], 'the restarted instance read a and b back and wrote them with d');
    assert.equal(file.pods.b?.allocated.c?.limits?.cpu, '250m', 'the newest allocation of b');
    assert.deepEqual(Object.keys(file.pods.a?.actuated ?? {}), ['ca']);
  });
});
