import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FlagError } from '../util/flags.js';
import { parseSettings } from './flags.js';

const BASE = ['--cri-endpoint', 'unix:///run/containerd/containerd.sock', '--root-dir', '/var/lib/nodelet'];

function settings(extra: string[]): Exclude<ReturnType<typeof parseSettings>, 'help'> {
  const parsed = parseSettings([...BASE, ...extra], {});
  assert.notEqual(parsed, 'help');
  return parsed as Exclude<typeof parsed, 'help'>;
}

describe('node credential flags', () => {
  it('uses --kubeconfig as it is without a bootstrap flag, with the certificates under <root-dir>/pki', () => {
    const s = settings(['--kubeconfig', '/etc/nodelet/kubeconfig']);
    assert.equal(s.credentials, undefined);
    assert.equal(s.certDir, '/var/lib/nodelet/pki');
  });

  it('bootstraps from a kubeconfig file or from the service account, rotating only when asked', () => {
    assert.deepEqual(settings(['--bootstrap-kubeconfig', '/etc/bootstrap.conf']).credentials, { bootstrap: { kind: 'kubeconfig', path: '/etc/bootstrap.conf' }, rotate: false });
    assert.deepEqual(settings(['--bootstrap-from-service-account', '--rotate-certificates', '--cert-dir', '/pki']).credentials, { bootstrap: { kind: 'service-account' }, rotate: true });
    assert.equal(settings(['--cert-dir', '/pki']).certDir, '/pki');
  });

  it('refuses two bootstrap sources, rotation of a certificate it did not request, and a relative --cert-dir', () => {
    assert.throws(() => settings(['--bootstrap-kubeconfig', '/b', '--bootstrap-from-service-account']), FlagError);
    assert.throws(() => settings(['--rotate-certificates']), /--rotate-certificates needs/);
    assert.throws(() => settings(['--cert-dir', 'pki']), /--cert-dir must be an absolute path/);
  });
});
