import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1ContainerStatus } from '@kubernetes/client-node';
import { newTerminations } from './container-terminations.js';

const terminated = (name: string, exitCode: number, reason?: string): V1ContainerStatus => ({ name, image: 'i', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode, ...(reason === undefined ? {} : { reason }) } } });
const running = (name: string): V1ContainerStatus => ({ name, image: 'i', imageID: '', ready: true, restartCount: 0, state: { running: {} } });

describe('container terminations (kubelet_terminated_containers_total)', () => {
  it('names each container that turned terminated, by type, once', () => {
    const before = { initContainerStatuses: [terminated('init', 0, 'Completed')], containerStatuses: [running('app'), running('side')] };
    const after = { initContainerStatuses: [terminated('init', 0, 'Completed')], containerStatuses: [terminated('app', 137, 'OOMKilled'), running('side')], ephemeralContainerStatuses: [terminated('debug', 0)] };
    assert.deepEqual(newTerminations(before, after), [
      { containerType: 'container', exitCode: 137, reason: 'OOMKilled' },
      { containerType: 'ephemeral_container', exitCode: 0, reason: '' },
    ]);
    assert.deepEqual(newTerminations(after, after), [], 'already terminated: not again');
    assert.deepEqual(newTerminations(undefined, { containerStatuses: [terminated('app', 1, 'Error')] }), [{ containerType: 'container', exitCode: 1, reason: 'Error' }], 'a container new and already terminated counts');
  });
});
