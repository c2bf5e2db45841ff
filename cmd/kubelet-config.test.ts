/**
 * `--config`: a real kubelet's KubeletConfiguration (the control node's, `cmd/testdata`) read by
 * nodelet into the settings its flags give, flags winning over the file, and every field nodelet
 * cannot honour refused by name.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parseSettings } from './flags.js';
import { expandConfigFlag, kubeletConfigFlags } from './kubelet-config.js';
import { isFlagError } from '../util/flags.js';

const REAL = path.join(import.meta.dirname, 'testdata', 'kubelet-config.yaml');

function settings(argv: readonly string[]): Exclude<ReturnType<typeof parseSettings>, 'help'> {
  const parsed = parseSettings(argv, {});
  assert.notEqual(parsed, 'help');
  return parsed as Exclude<ReturnType<typeof parseSettings>, 'help'>;
}

function refusal(config: Record<string, unknown>): string {
  try {
    kubeletConfigFlags({ apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration', ...config }, 'f.yaml');
  } catch (error) {
    assert.ok(isFlagError(error));
    return error.message;
  }
  return assert.fail('expected a refusal');
}

describe('--config (KubeletConfiguration)', () => {
  it("reads the kubelet control node's own file into nodelet's settings", () => {
    const s = settings(['--config', REAL, '--node-ip', '10.213.0.2']);
    assert.equal(s.criEndpoint, 'unix:///work/main/.cluster/kubelet/containerd/state/containerd.sock');
    assert.equal(s.maxPods, 110);
    assert.deepEqual(s.clusterDns, ['10.215.0.10']);
    assert.equal(s.clusterDomain, 'cluster.local');
    assert.equal(s.podLogDir, '/work/main/.cluster/kubelet/pod-logs');
    assert.deepEqual(s.registerWithTaints, [{ key: 'nodelet.dev/bench-kubelet', value: 'true', effect: 'NoSchedule' }]);
    assert.deepEqual({ port: s.nodeServer.port, cert: s.nodeServer.tlsCertFile, key: s.nodeServer.tlsPrivateKeyFile, ca: s.nodeServer.clientCaFile, rotate: s.nodeServer.rotateServerCertificates }, {
      port: 10250,
      cert: '/work/main/.cluster/kubelet/pki/serving.crt',
      key: '/work/main/.cluster/kubelet/pki/serving.key',
      ca: '/work/main/.cluster/pki/ca.crt',
      rotate: false,
    });
    assert.deepEqual(s.healthz, { address: '127.0.0.1', port: 10358 });
    assert.equal(s.cgroups?.cgroupRoot, '/nodelet-kubelet');
  });

  it("accepts kubeadm's file: fields at the kubelet's defaults (0s and \"\" for the default) change nothing", () => {
    const kubeadm = path.join(import.meta.dirname, 'testdata', 'kubeadm-kubelet-config.yaml');
    const s = settings(['--config', kubeadm, '--node-ip', '10.0.0.5']);
    assert.equal(s.gc.imageMinimumGCAgeSeconds, 120, '0s is the default 2m, not zero');
    assert.equal(s.gc.imageMaximumGCAgeSeconds, 0, 'imageMaximumGCAge: 0s is off');
    assert.equal(s.eviction.pressureTransitionPeriodSeconds, 300);
    assert.equal(s.podManifestPath, '/etc/kubernetes/manifests');
    assert.deepEqual(s.clusterDns, ['10.96.0.10']);
    assert.equal(s.nodeServer.clientCaFile, '/etc/kubernetes/pki/ca.crt');
  });

  it("refuses a default-only field at another value, and a nested field it does not read, saying why", () => {
    assert.match(refusal({ syncFrequency: '30s' }), /syncFrequency: 30s \(only the kubelet's default: pods are resynced every --resync-period/);
    assert.match(refusal({ cpuManagerPolicy: 'static' }), /cpuManagerPolicy: static/);
    assert.match(refusal({ authentication: { webhook: { enabled: true, cacheTTL: '10m' } } }), /authentication.webhook.cacheTTL: 10m/);
    assert.match(refusal({ authorization: { mode: 'Webhook', webhook: { cacheAuthorizedTTL: '1m' } } }), /authorization.webhook.cacheAuthorizedTTL: 1m/);
    assert.match(refusal({ authentication: { x509: { clientCAFile: '/ca', extra: 1 } } }), /authentication.x509.extra/);
  });

  it('lets a flag on the command line win over the file, repeatable ones included', () => {
    const s = settings(['--config', REAL, '--max-pods', '50', '--cluster-dns=10.0.0.10']);
    assert.equal(s.maxPods, 50);
    assert.deepEqual(s.clusterDns, ['10.0.0.10']);
    const argv = expandConfigFlag(['--config=f', '--manifest-url-header', 'x:1'], () => 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nstaticPodURLHeader: {a: [one, two]}\n');
    assert.deepEqual(argv, ['--manifest-url-header', 'x:1']);
  });

  it("takes the kubelet's syntax: durations, maps, booleans", () => {
    const argv = expandConfigFlag(['--config', 'f'], () =>
      [
        'apiVersion: kubelet.config.k8s.io/v1beta1',
        'kind: KubeletConfiguration',
        'containerRuntimeEndpoint: unix:///run/containerd/containerd.sock',
        'imageMinimumGCAge: 2m0s',
        'imageMaximumGCAge: 168h0m0s',
        'evictionHard: {memory.available: 300Mi, nodefs.available: "10%"}',
        'evictionSoft: {memory.available: 1Gi}',
        'evictionSoftGracePeriod: {memory.available: 1m30s}',
        'evictionPressureTransitionPeriod: 1m',
        'systemReserved: {cpu: 100m, memory: 500Mi}',
        'seccompDefault: true',
        'cgroupsPerQOS: false',
        'staticPodURLHeader: {a: [one, two]}',
      ].join('\n'),
    );
    const parsed = parseSettings(argv, {});
    assert.notEqual(parsed, 'help');
    const s = parsed as Exclude<typeof parsed, 'help'>;
    assert.equal(s.gc.imageMinimumGCAgeSeconds, 120);
    assert.equal(s.gc.imageMaximumGCAgeSeconds, 604800);
    assert.equal(s.eviction.pressureTransitionPeriodSeconds, 60);
    assert.equal(s.seccompDefault, true);
    assert.equal(s.cgroups, undefined);
    assert.ok(argv.includes('--eviction-hard=memory.available<300Mi,nodefs.available<10%'));
    assert.ok(argv.includes('--system-reserved=cpu=100m,memory=500Mi'));
    assert.deepEqual(argv.filter((a) => a.startsWith('--manifest-url-header')), ['--manifest-url-header=a:one', '--manifest-url-header=a:two']);
  });

  it('maps enableSystemLogQuery to --enable-system-log-query, true and false alike (it was refused at true before)', () => {
    const file = (value: string) => () => `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nenableSystemLogHandler: true\nenableSystemLogQuery: ${value}\n`;
    const on = expandConfigFlag(['--config', 'f'], file('true'));
    assert.deepEqual(on, ['--enable-system-log-query=true']);
    assert.equal(settings(['--cri-endpoint', 'x', ...on]).nodeServer.enableSystemLogQuery, true);
    assert.equal(settings(['--cri-endpoint', 'x', ...expandConfigFlag(['--config', 'f'], file('false'))]).nodeServer.enableSystemLogQuery, false);
    // The command line wins over the file.
    assert.equal(settings(['--cri-endpoint', 'x', ...expandConfigFlag(['--config', 'f', '--enable-system-log-query=false'], file('true'))]).nodeServer.enableSystemLogQuery, false);
    assert.match(refusal({ enableSystemLogHandler: false }), /enableSystemLogHandler: false/);
  });

  it('refuses, by name, every field it cannot honour and values it does not support', () => {
    assert.match(refusal({ featureGates: { Foo: true }, cpuCFSQuotaPeriodX: 1 }), /fields nodelet does not support: cpuCFSQuotaPeriodX, featureGates/);
    assert.match(refusal({ shutdownGracePeriodByPodPriority: [{ priority: 0, shutdownGracePeriodSeconds: 5, extra: 1 }] }), /shutdownGracePeriodByPodPriority\[0\]\.extra/);
    assert.match(refusal({ authentication: { anonymous: { enabled: true } } }), /authentication.anonymous.enabled: true/);
    assert.match(refusal({ authorization: { mode: 'AlwaysAllow' } }), /authorization.mode: AlwaysAllow/);
    assert.match(refusal({ readOnlyPort: 10255 }), /readOnlyPort: 10255/);
    assert.match(refusal({ containerRuntimeEndpoint: 'unix:///a.sock', imageServiceEndpoint: 'unix:///b.sock' }), /imageServiceEndpoint: unix:\/\/\/b.sock/);
    assert.throws(() => expandConfigFlag(['--config', 'f'], () => 'kind: Pod\n'), /not a kubelet.config.k8s.io\/v1beta1 KubeletConfiguration/);
    assert.throws(() => expandConfigFlag(['--config', 'f'], () => { throw new Error('ENOENT'); }), /--config f: ENOENT/);
  });

  it('maps graceful node shutdown to its flags, and refuses what the kubelet refuses', () => {
    const file = (body: string) => () => `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///run/c.sock\n${body}`;
    const two = parseSettings(expandConfigFlag(['--config', 'f'], file('shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n')), {});
    assert.notEqual(two, 'help');
    assert.deepEqual(two !== 'help' && { total: two.shutdown.gracePeriodSeconds, critical: two.shutdown.criticalPodsGracePeriodSeconds }, { total: 30, critical: 10 });
    const groups = parseSettings(expandConfigFlag(['--config', 'f'], file('shutdownGracePeriodByPodPriority:\n- {priority: 100000, shutdownGracePeriodSeconds: 5}\n- {priority: 0, shutdownGracePeriodSeconds: 20}\n')), {});
    assert.deepEqual(groups !== 'help' && groups.shutdown.byPodPriority, [{ priority: 100000, shutdownGracePeriodSeconds: 5 }, { priority: 0, shutdownGracePeriodSeconds: 20 }]);
    assert.throws(() => parseSettings(expandConfigFlag(['--config', 'f'], file('shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s\n')), {}), /shutdownGracePeriodCriticalPods 20s must be <= shutdownGracePeriod 10s/);
    assert.throws(() => parseSettings(expandConfigFlag(['--config', 'f'], file('shutdownGracePeriod: 10s\nshutdownGracePeriodByPodPriority:\n- {priority: 0, shutdownGracePeriodSeconds: 20}\n')), {}), /cannot specify both/);
  });
});
