import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { basePod, container, exited, observation, sandbox } from '../../test/doubles/pod-fixtures.js';
import type { ObservedContainer } from '../model/observed-pod.js';
import { computeResizeActions, isResizeInProgress } from './compute-resize-actions.js';
import { ANNOTATION_RESOURCES, valuesOf, type ResourceValues } from '../model/resource-values.js';

const created = (cpu: string, memory: string): ObservedContainer['annotations'] => ({
  [ANNOTATION_RESOURCES]: JSON.stringify(valuesOf({ requests: { cpu, memory }, limits: { cpu, memory } })),
});

/** app and sidecar created with 100m/64Mi (requests = limits); the spec as `mutate` sets it. */
function pod(mutate: (p: V1Pod) => void): V1Pod {
  return basePod((p) => {
    for (const c of p.spec!.containers) c.resources = { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } };
    mutate(p);
  });
}

function set(p: V1Pod, name: string, cpu: string, memory: string): void {
  p.spec!.containers.find((c) => c.name === name)!.resources = { requests: { cpu, memory }, limits: { cpu, memory } };
}

/** No in-place update recorded: the creation annotation, when there is one. */
const fromAnnotation = (x: ObservedContainer): ResourceValues | undefined => {
  const raw = x.annotations[ANNOTATION_RESOURCES];
  return raw === undefined ? undefined : (JSON.parse(raw) as ResourceValues);
};

describe('computeResizeActions (the kubelet computePodResizeAction)', () => {
  const cases: { name: string; pod: V1Pod; running?: (p: V1Pod) => ObservedContainer[]; want: { memory: string[]; cpu: string[]; restarts: string[] } }[] = [
    { name: 'nothing when every running container runs as allocated', pod: pod(() => undefined), want: { memory: [], cpu: [], restarts: [] } },
    { name: 'a CPU increase (NotRequired by default) is an in-place CPU update', pod: pod((p) => { set(p, 'app', '200m', '64Mi'); }), want: { memory: [], cpu: ['app'], restarts: [] } },
    { name: 'memory and CPU changes are one update each', pod: pod((p) => { set(p, 'app', '200m', '128Mi'); }), want: { memory: ['app'], cpu: ['app'], restarts: [] } },
    {
      name: 'decreases come before increases, per resource',
      pod: pod((p) => {
        set(p, 'app', '200m', '128Mi');
        set(p, 'sidecar', '50m', '32Mi');
      }),
      want: { memory: ['sidecar', 'app'], cpu: ['sidecar', 'app'], restarts: [] },
    },
    {
      name: 'RestartContainer on a changed resource restarts the container instead of updating it',
      pod: pod((p) => {
        set(p, 'app', '200m', '128Mi');
        p.spec!.containers[0]!.resizePolicy = [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }];
      }),
      want: { memory: [], cpu: [], restarts: ['c-app'] },
    },
    {
      name: 'RestartContainer on a resource that did not change does not restart',
      pod: pod((p) => {
        set(p, 'app', '200m', '64Mi');
        p.spec!.containers[0]!.resizePolicy = [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }];
      }),
      want: { memory: [], cpu: ['app'], restarts: [] },
    },
    {
      name: 'a container that does not run is left to start with the allocated values',
      pod: pod((p) => { set(p, 'app', '200m', '64Mi'); }),
      running: (p) => [exited(p, 'app', 1, { annotations: created('100m', '64Mi') }), container(p, 'sidecar', { annotations: created('100m', '64Mi') })],
      want: { memory: [], cpu: [], restarts: [] },
    },
    {
      name: 'a container created before the resources annotation existed is taken to run as allocated',
      pod: pod((p) => { set(p, 'app', '200m', '64Mi'); }),
      running: (p) => [container(p, 'app'), container(p, 'sidecar', { annotations: created('100m', '64Mi') })],
      want: { memory: [], cpu: [], restarts: [] },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const running = c.running?.(c.pod) ?? [container(c.pod, 'app', { annotations: created('100m', '64Mi') }), container(c.pod, 'sidecar', { annotations: created('100m', '64Mi') })];
      const observed = observation([sandbox()], running);
      const actions = computeResizeActions(c.pod, observed, fromAnnotation);
      assert.deepEqual({ memory: actions.memory.map((u) => u.name), cpu: actions.cpu.map((u) => u.name), restarts: [...actions.restarts.keys()] }, c.want);
    });
  }

  it('compares with the last in-place update, not the creation values, and carries both for the executor', () => {
    const p = pod((x) => { set(x, 'app', '300m', '64Mi'); });
    const observed = observation([sandbox()], [container(p, 'app', { annotations: created('100m', '64Mi') }), container(p, 'sidecar', { annotations: created('100m', '64Mi') })]);
    const updated = valuesOf({ requests: { cpu: '300m', memory: '64Mi' }, limits: { cpu: '300m', memory: '64Mi' } });
    const currentOf = (x: ObservedContainer): ResourceValues | undefined => (x.id === 'c-app' ? updated : fromAnnotation(x));
    assert.deepEqual(computeResizeActions(p, observed, currentOf).cpu, []);
    assert.equal(isResizeInProgress(p, observed, currentOf), false);
    const [u] = computeResizeActions(p, observed, fromAnnotation).cpu;
    assert.deepEqual({ current: u?.current.cpuLimitMilli, desired: u?.desired.cpuLimitMilli }, { current: 100, desired: 300 });
    assert.equal(isResizeInProgress(p, observed, fromAnnotation), true);
  });
});
