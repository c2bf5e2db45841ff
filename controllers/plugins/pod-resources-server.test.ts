/** The pod resources API v1 over real gRPC, read as a monitoring agent reads it. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { Client, credentials, Metadata } from '@grpc/grpc-js';
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { EMPTY_ALLOCATION } from '../../reconcilers/devices/types.js';
import { PodResourcesServer } from './pod-resources-server.js';
import { pluginMethod } from './proto.js';

const root = mkdtempSync(path.join(tmpdir(), 'nodelet-pr-'));
after(() => { rmSync(root, { recursive: true, force: true }); });
const R = 'example.com/resource';

function call(socket: string, method: string, request: object): Promise<unknown> {
  const client = new Client(`unix://${socket}`, credentials.createInsecure());
  const m = pluginMethod('podresources', 'v1.PodResourcesLister', method);
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(m.path, m.requestSerialize, m.responseDeserialize, request, new Metadata(), { deadline: Date.now() + 5_000 }, (error, value) => {
      client.close();
      if (error === null) resolve(value);
      else reject(error);
    });
  });
}

const pods: V1Pod[] = [
  { metadata: { uid: 'u1', name: 'gpu', namespace: 'ml' }, spec: { initContainers: [{ name: 'once', image: 'i' }, { name: 'sidecar', image: 'i', restartPolicy: 'Always' }], containers: [{ name: 'app', image: 'i' }] } },
  { metadata: { uid: 'u2', name: 'plain', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'i' }] } },
];

describe('pod resources API v1', () => {
  it('lists active pods with their devices per container, the allocatable devices, and one pod by name', async () => {
    const socket = path.join(root, 'pod-resources', 'kubelet.sock');
    const server = new PodResourcesServer({
      socketPath: socket,
      pods: () => pods,
      logger: pino({ level: 'silent' }),
      devices: {
        allocations: () => [{ podUid: 'u1', containerName: 'app', resourceName: R, devicesPerNuma: { '-1': ['Dev-1'] }, allocation: EMPTY_ALLOCATION }],
        allocatableDevices: () => [{ resourceName: R, device: { id: 'Dev-1', health: 'Healthy', numaNodes: [] } }, { resourceName: R, device: { id: 'Dev-2', health: 'Healthy', numaNodes: [0] } }],
      },
    });
    await server.start();
    try {
      const list = (await call(socket, 'List', {})) as { podResources: { name: string; namespace: string; containers: { name: string; devices: { resourceName: string; deviceIds: string[] }[]; cpuIds: string[] }[] }[] };
      assert.deepEqual(list.podResources.map((p) => [p.namespace, p.name, p.containers.map((c) => c.name)]), [['ml', 'gpu', ['sidecar', 'app']], ['default', 'plain', ['c']]]);
      const app = list.podResources[0]?.containers[1];
      assert.deepEqual(app?.devices.map((d) => [d.resourceName, d.deviceIds]), [[R, ['Dev-1']]]);
      assert.deepEqual(app?.cpuIds, []);
      const allocatable = (await call(socket, 'GetAllocatableResources', {})) as { devices: { resourceName: string; deviceIds: string[]; topology: { nodes: { ID: string }[] } | null }[] };
      assert.deepEqual(allocatable.devices.map((d) => [d.deviceIds[0], d.topology?.nodes.map((n) => n.ID) ?? null]), [['Dev-1', null], ['Dev-2', ['0']]]);
      const one = (await call(socket, 'Get', { podName: 'gpu', podNamespace: 'ml' })) as { podResources: { name: string } };
      assert.equal(one.podResources.name, 'gpu');
      await assert.rejects(call(socket, 'Get', { podName: 'nope', podNamespace: 'ml' }), /pod nope in namespace ml not found/);
    } finally {
      await server.stop();
    }
  });
});
