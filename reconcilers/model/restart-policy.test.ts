/**
 * The kubelet's ContainerShouldRestart, case by case (pkg/api/v1/pod/util_test.go's table, read
 * for semantics): rules first, then the container's policy, then the pod's.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container, V1ContainerRestartRule, V1PodSpec } from '@kubernetes/client-node';
import { containerShouldRestart, matchingRestartRule, restartsAfterProbeKill, skipsSucceededOnNewSandbox } from './restart-policy.js';

const rule = (operator: string, values: number[], action = 'Restart'): V1ContainerRestartRule => ({ action, exitCodes: { operator, values } });
const container = (c: Partial<V1Container> = {}): V1Container => ({ name: 'app', image: 'busybox', ...c });
const spec = (restartPolicy?: string): V1PodSpec => ({ containers: [], ...(restartPolicy === undefined ? {} : { restartPolicy }) });

describe('containerShouldRestart', () => {
  const cases: { name: string; c: V1Container; pod?: string; exit: number; want: boolean }[] = [
    { name: 'pod Always, no container policy', c: container(), pod: 'Always', exit: 0, want: true },
    { name: 'no pod policy defaults to Always', c: container(), exit: 0, want: true },
    { name: 'pod OnFailure after success', c: container(), pod: 'OnFailure', exit: 0, want: false },
    { name: 'pod OnFailure after failure', c: container(), pod: 'OnFailure', exit: 3, want: true },
    { name: 'pod Never', c: container(), pod: 'Never', exit: 1, want: false },
    { name: 'container Always overrides pod Never', c: container({ restartPolicy: 'Always' }), pod: 'Never', exit: 0, want: true },
    { name: 'container Never overrides pod Always', c: container({ restartPolicy: 'Never' }), pod: 'Always', exit: 1, want: false },
    { name: 'container OnFailure after success', c: container({ restartPolicy: 'OnFailure' }), pod: 'Always', exit: 0, want: false },
    { name: 'container OnFailure after failure', c: container({ restartPolicy: 'OnFailure' }), pod: 'Never', exit: 2, want: true },
    { name: 'In rule matches', c: container({ restartPolicy: 'Never', restartPolicyRules: [rule('In', [42])] }), pod: 'Never', exit: 42, want: true },
    { name: 'In rule does not match: container Never', c: container({ restartPolicy: 'Never', restartPolicyRules: [rule('In', [42])] }), pod: 'Always', exit: 1, want: false },
    { name: 'NotIn rule matches an unlisted code', c: container({ restartPolicy: 'Never', restartPolicyRules: [rule('NotIn', [0, 1])] }), pod: 'Never', exit: 7, want: true },
    { name: 'NotIn rule does not match a listed code', c: container({ restartPolicy: 'Never', restartPolicyRules: [rule('NotIn', [0, 1])] }), pod: 'Never', exit: 1, want: false },
    { name: 'a RestartAllContainers rule matches: the container runs again (with the whole pod)', c: container({ restartPolicy: 'Never', restartPolicyRules: [rule('In', [42], 'RestartAllContainers')] }), pod: 'Never', exit: 42, want: true },
    { name: 'a RestartAllContainers rule does not match: container Never', c: container({ restartPolicy: 'Never', restartPolicyRules: [rule('In', [42], 'RestartAllContainers')] }), pod: 'Always', exit: 1, want: false },
    { name: 'an unknown action falls back to the container policy', c: container({ restartPolicy: 'OnFailure', restartPolicyRules: [rule('In', [0], 'Other')] }), pod: 'Always', exit: 0, want: false },
    { name: 'rules without a container policy are not consulted', c: container({ restartPolicyRules: [rule('In', [9])] }), pod: 'Never', exit: 9, want: false },
  ];
  for (const c of cases) {
    it(c.name, () => { assert.equal(containerShouldRestart(c.c, spec(c.pod), c.exit), c.want); });
  }

  it('the first matching rule wins', () => {
    const c = container({ restartPolicy: 'Never', restartPolicyRules: [rule('In', [1], 'Other'), rule('In', [1])] });
    assert.equal(matchingRestartRule(c, 1)?.action, 'Other');
    assert.equal(matchingRestartRule(c, 2), undefined);
  });
});

describe('the other restart decisions', () => {
  it('a probe kill restarts by the container policy, else the pod policy', () => {
    assert.equal(restartsAfterProbeKill(container({ restartPolicy: 'Never', restartPolicyRules: [rule('In', [137])] }), spec('Always')), false);
    assert.equal(restartsAfterProbeKill(container({ restartPolicy: 'OnFailure' }), spec('Never')), true);
    assert.equal(restartsAfterProbeKill(container(), spec('Never')), false);
    assert.equal(restartsAfterProbeKill(container(), spec()), true);
  });

  it('a new sandbox skips succeeded containers under OnFailure, the container policy first', () => {
    assert.equal(skipsSucceededOnNewSandbox(container(), spec('OnFailure')), true);
    assert.equal(skipsSucceededOnNewSandbox(container({ restartPolicy: 'Always' }), spec('OnFailure')), false);
    assert.equal(skipsSucceededOnNewSandbox(container({ restartPolicy: 'OnFailure' }), spec('Always')), true);
    assert.equal(skipsSucceededOnNewSandbox(container(), spec('Always')), false);
  });
});
