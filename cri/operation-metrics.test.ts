/**
 * The runtime operation metrics' inputs: the kubelet's operation names for every CRI method
 * nodelet calls (instrumented_services.go), and, through a real gRPC server, one record per call
 * with its duration from the injected clock, failures (NotFound included, as the kubelet counts
 * them) marked failed, and calls refused before reaching the runtime not recorded.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { startTestCriServer, TestServerStatus, type TestCriServer } from '../test/doubles/grpc-test-server.js';
import { createCriClient, type CriOperation } from './grpc-client.js';
import { operationName } from './operation-metrics.js';

describe('operationName', () => {
  it('is the kubelet name of each CRI method', () => {
    const kubelet: Readonly<Record<string, string>> = {
      Version: 'version',
      Status: 'status',
      RunPodSandbox: 'run_podsandbox',
      StopPodSandbox: 'stop_podsandbox',
      RemovePodSandbox: 'remove_podsandbox',
      PodSandboxStatus: 'podsandbox_status',
      ListPodSandbox: 'list_podsandbox',
      PodSandboxStats: 'podsandbox_stats',
      ListPodSandboxStats: 'list_podsandbox_stats',
      CreateContainer: 'create_container',
      StartContainer: 'start_container',
      StopContainer: 'stop_container',
      RemoveContainer: 'remove_container',
      ListContainers: 'list_containers',
      ContainerStatus: 'container_status',
      UpdateContainerResources: 'update_container',
      ReopenContainerLog: 'reopen_container_log',
      ExecSync: 'exec_sync',
      Exec: 'exec',
      Attach: 'attach',
      PortForward: 'port_forward',
      ContainerStats: 'container_stats',
      ListContainerStats: 'list_container_stats',
      UpdateRuntimeConfig: 'update_runtime_config',
      ListImages: 'list_images',
      ImageStatus: 'image_status',
      PullImage: 'pull_image',
      RemoveImage: 'remove_image',
      ImageFsInfo: 'image_fs_info',
    };
    for (const [method, name] of Object.entries(kubelet)) assert.equal(operationName(method), name, method);
  });
});

describe('CRI client operation records', () => {
  let server: TestCriServer;
  before(async () => {
    server = await startTestCriServer();
  });
  after(async () => {
    await server.close();
  });

  it('one record per call with the clock’s duration; failures marked, NotFound included; refused arguments not recorded', async () => {
    const records: CriOperation[] = [];
    let clock = 5_000;
    const client = createCriClient({
      endpoint: server.endpoint,
      defaultTimeoutMs: 2000,
      now: () => clock,
      metrics: { operation: (r) => records.push(r) },
    });
    try {
      server.handlers.set('Version', () => {
        clock += 250;
        return { version: '0.1.0', runtimeName: 'containerd', runtimeVersion: '1.6.20', runtimeApiVersion: 'v1' };
      });
      server.handlers.set('RunPodSandbox', () => ({ podSandboxId: 'sb-1' }));
      server.handlers.set('ContainerStatus', () => {
        throw new TestServerStatus(status.NOT_FOUND, 'no such container');
      });
      server.handlers.set('ListContainers', () => {
        throw new TestServerStatus(status.UNAVAILABLE, 'down');
      });
      await client.runtime.version();
      await client.runtime.runPodSandbox({ metadata: { name: 'p', uid: 'u', namespace: 'n', attempt: 0 }, hostname: 'p', logDirectory: '/l', labels: {}, annotations: {} });
      await assert.rejects(client.runtime.containerStatus('c1'));
      await assert.rejects(client.runtime.listContainers());
      await assert.rejects(client.runtime.startContainer(''));
      assert.deepEqual(records, [
        { operation: 'version', seconds: 0.25, failed: false },
        { operation: 'run_podsandbox', seconds: 0, failed: false },
        { operation: 'container_status', seconds: 0, failed: true },
        { operation: 'list_containers', seconds: 0, failed: true },
      ]);
    } finally {
      client.close();
    }
  });
});
