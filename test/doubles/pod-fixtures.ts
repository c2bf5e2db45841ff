/**
 * Plain-data fixtures for the pure reconcile functions' tests: a base pod and builders of runtime
 * observations. Not used by production code.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { hashContainerSpec } from '../../reconcilers/model/container-hash.js';
import type { ObservedContainer, ObservedPod, ObservedSandbox } from '../../reconcilers/model/observed-pod.js';

export const UID = 'uid-1';

/** A pod with two containers, `app` and `sidecar`, restartPolicy Always. */
export function basePod(mutate?: (pod: V1Pod) => void): V1Pod {
  const pod: V1Pod = {
    metadata: { name: 'web', namespace: 'default', uid: UID },
    spec: {
      nodeName: 'node-a',
      restartPolicy: 'Always',
      containers: [
        { name: 'app', image: 'busybox:1.35', command: ['sh', '-c', 'sleep 3600'] },
        { name: 'sidecar', image: 'busybox:1.35', command: ['sh', '-c', 'sleep 3600'] },
      ],
    },
    status: { phase: 'Pending' },
  };
  mutate?.(pod);
  return pod;
}

export function sandbox(overrides: Partial<ObservedSandbox> = {}): ObservedSandbox {
  return {
    id: 'sb-1',
    state: 'SANDBOX_READY',
    attempt: 0,
    createdAt: new Date('2026-01-01T00:00:00Z'),
    ip: '10.214.0.5',
    additionalIps: [],
    ...overrides,
  };
}

/** A container of `pod` by name, running and matching its spec unless overridden. */
export function container(pod: V1Pod, name: string, overrides: Partial<ObservedContainer> = {}): ObservedContainer {
  const spec = pod.spec?.containers.find((c) => c.name === name);
  return {
    id: `c-${name}`,
    name,
    sandboxId: 'sb-1',
    state: 'CONTAINER_RUNNING',
    restartCount: 0,
    specHash: spec === undefined ? '' : hashContainerSpec(spec),
    image: 'docker.io/library/busybox:1.35',
    imageRef: 'sha256:abc',
    createdAt: new Date('2026-01-01T00:00:01Z'),
    startedAt: new Date('2026-01-01T00:00:02Z'),
    exitCode: 0,
    reason: '',
    message: '',
    annotations: {},
    ...overrides,
  };
}

/** An exited instance of a container. */
export function exited(pod: V1Pod, name: string, exitCode: number, overrides: Partial<ObservedContainer> = {}): ObservedContainer {
  return container(pod, name, {
    state: 'CONTAINER_EXITED',
    exitCode,
    reason: exitCode === 0 ? 'Completed' : 'Error',
    finishedAt: new Date('2026-01-01T00:01:00Z'),
    ...overrides,
  });
}

export function observation(sandboxes: ObservedSandbox[], containers: ObservedContainer[]): ObservedPod {
  return { uid: UID, sandboxes, containers };
}
