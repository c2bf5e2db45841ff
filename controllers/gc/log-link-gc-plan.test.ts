import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ContainerState } from '../../cri/types.js';
import { planLogLinkGc, type LogLinkEntry, type LogLinkGcPlan } from './log-link-gc-plan.js';

const DIR = '/var/log/containers';
const POD_LOGS = '/var/log/pods';
const ID = 'c0ffee'.padEnd(64, '0');
const link = (name: string, o: { target?: string | undefined; exists?: boolean } = {}): LogLinkEntry => ({
  name,
  target: 'target' in o ? o.target : `${POD_LOGS}/ns_pod_uid/app/0.log`,
  targetExists: o.exists ?? false,
});
const NAME = `pod_ns_app-${ID}.log`;

function plan(entries: readonly LogLinkEntry[], containers: readonly { id: string; state: ContainerState }[] = []): LogLinkGcPlan {
  return planLogLinkGc({ dir: DIR, entries, podLogDir: POD_LOGS, containers });
}

describe('planLogLinkGc', () => {
  const cases: readonly { name: string; entries: readonly LogLinkEntry[]; containers?: readonly { id: string; state: ContainerState }[]; expected: LogLinkGcPlan }[] = [
    { name: 'a link whose log file exists stays, even with its container gone', entries: [link(NAME, { exists: true })], expected: { remove: [], keep: [] } },
    { name: "a dangling link whose container the runtime does not have goes", entries: [link(NAME)], expected: { remove: [{ name: NAME, reason: 'container-gone' }], keep: [] } },
    { name: 'a dangling link of an exited container goes', entries: [link(NAME)], containers: [{ id: ID, state: 'CONTAINER_EXITED' }], expected: { remove: [{ name: NAME, reason: 'container-exited' }], keep: [] } },
    { name: 'a dangling link of a running container stays (its log is between a rotation and the reopen)', entries: [link(NAME)], containers: [{ id: ID, state: 'CONTAINER_RUNNING' }], expected: { remove: [], keep: [{ name: NAME, reason: 'container-live' }] } },
    { name: 'a created or unknown container keeps its link too, as the kubelet keeps any not exited', entries: [link(NAME)], containers: [{ id: ID, state: 'CONTAINER_UNKNOWN' }], expected: { remove: [], keep: [{ name: NAME, reason: 'container-live' }] } },
    { name: 'a name cut to length finds its container by the ID prefix it kept', entries: [link('pod_ns_app-c0ffee00.log')], containers: [{ id: ID, state: 'CONTAINER_RUNNING' }], expected: { remove: [], keep: [{ name: 'pod_ns_app-c0ffee00.log', reason: 'container-live' }] } },
    {
      name: "a dangling link into another agent's pod log directory stays (a kubelet sharing the directory)",
      entries: [link(NAME, { target: '/srv/kubelet/pod-logs/ns_pod_uid/app/0.log' })],
      expected: { remove: [], keep: [{ name: NAME, reason: 'not-ours' }] },
    },
    { name: 'a target that only starts like the pod log directory is not in it', entries: [link(NAME, { target: '/var/log/pods-other/x/0.log' })], expected: { remove: [], keep: [{ name: NAME, reason: 'not-ours' }] } },
    { name: 'a relative target is read from the link directory', entries: [link(NAME, { target: '../pods/ns_pod_uid/app/0.log' })], expected: { remove: [{ name: NAME, reason: 'container-gone' }], keep: [] } },
    { name: 'a dangling link into the pod log directory with no container ID in its name goes', entries: [link('stray.log')], expected: { remove: [{ name: 'stray.log', reason: 'no-container-id' }], keep: [] } },
    { name: 'names not ending in .log and entries that are not links are never looked at', entries: [link(`pod_ns_app-${ID}.txt`), link('file.log', { target: undefined, exists: true })], expected: { remove: [], keep: [] } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(plan(c.entries, c.containers ?? []), c.expected);
    });
  }
});
