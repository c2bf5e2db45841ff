import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FlagError } from '../util/flags.js';
import { parseApproverSettings, serviceAccountUsername } from './main.js';

describe('nodelet approver flags', () => {
  it("reads the chart's arguments: the agents' service account as a username, the suffix, in-cluster by default", () => {
    const settings = parseApproverSettings(['--agent-service-account=nodelet-system:nodelet', '--node-name-suffix=-nodelet', '--log-level=info'], {});
    assert.deepEqual(settings, { kubeconfig: undefined, policy: { agentServiceAccounts: ['system:serviceaccount:nodelet-system:nodelet'], nodeNameSuffix: '-nodelet' }, logLevel: 'info' });
  });

  it('takes several service accounts, repeated or comma-separated, once each', () => {
    const settings = parseApproverSettings(['--agent-service-account=a:x,b:y', '--agent-service-account=a:x'], {});
    assert.notEqual(settings, 'help');
    assert.deepEqual(settings !== 'help' && settings.policy.agentServiceAccounts, ['system:serviceaccount:a:x', 'system:serviceaccount:b:y']);
  });

  it('refuses to run without a service account, with a malformed one, or with a suffix no Node name can carry', () => {
    assert.throws(() => parseApproverSettings([], {}), FlagError);
    assert.throws(() => serviceAccountUsername('nodelet'), FlagError);
    assert.throws(() => serviceAccountUsername('Nodelet:x'), FlagError);
    assert.throws(() => serviceAccountUsername('a:b:c'), FlagError);
    assert.throws(() => parseApproverSettings(['--agent-service-account=a:b', '--node-name-suffix=_X'], {}), FlagError);
  });
});
