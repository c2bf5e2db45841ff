/**
 * `--kube-api-qps` / `--kube-api-burst` and the KubeletConfiguration's `kubeAPIQPS` / `kubeAPIBurst`:
 * the kubelet's defaults (50, 100), its refusals (negative, not an int32, a QPS with a burst of 0),
 * its defaulting of the file (`kubeAPIBurst: 0` is the default 100; `kubeAPIQPS: 0` stays 0), and
 * the command line winning over the file; `/configz` shows the values back.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kubeletConfigurationOf } from './configz.js';
import { parseSettings } from './flags.js';
import { expandConfigFlag } from './kubelet-config.js';

const required = ['--cri-endpoint', 'unix:///run/containerd/containerd.sock'];

function settingsOf(...argv: string[]): Exclude<ReturnType<typeof parseSettings>, 'help'> {
  const settings = parseSettings([...required, ...argv], {});
  if (settings === 'help') throw new Error('help');
  return settings;
}

/** Settings from a KubeletConfiguration with `body` and then the command line `argv`. */
function fromFile(body: string, ...argv: string[]): Exclude<ReturnType<typeof parseSettings>, 'help'> {
  const file = `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///run/c.sock\n${body}`;
  const settings = parseSettings(expandConfigFlag(['--config', 'f', ...argv], () => file), {});
  if (settings === 'help') throw new Error('help');
  return settings;
}

describe('--kube-api-qps and --kube-api-burst', () => {
  it("default to the kubelet's 50 and 100", () => {
    assert.deepEqual(settingsOf().kubeApi, { qps: 50, burst: 100 });
  });

  it('take whole numbers, 0 QPS included (5 per group-version, as the kubelet)', () => {
    assert.deepEqual(settingsOf('--kube-api-qps', '20', '--kube-api-burst=40').kubeApi, { qps: 20, burst: 40 });
    assert.deepEqual(settingsOf('--kube-api-qps=0', '--kube-api-burst=0').kubeApi, { qps: 0, burst: 0 });
  });

  it('refuse what the kubelet refuses, naming the flag', () => {
    const cases: readonly [readonly string[], RegExp][] = [
      [['--kube-api-qps', '-1'], /--kube-api-qps: kubeAPIQPS -1 must not be a negative number/],
      [['--kube-api-burst', '-5'], /--kube-api-burst: kubeAPIBurst -5 must not be a negative number/],
      [['--kube-api-qps', '2.5'], /--kube-api-qps must be a whole number/],
      [['--kube-api-qps', 'fast'], /--kube-api-qps must be a whole number/],
      [['--kube-api-burst', '2147483648'], /--kube-api-burst must be a whole number \(int32\)/],
      [['--kube-api-burst', '0'], /--kube-api-burst must be above 0 when --kube-api-qps is above 0/],
    ];
    for (const [argv, message] of cases) assert.throws(() => settingsOf(...argv), { name: 'FlagError', message }, argv.join(' '));
  });

  it("read kubeAPIQPS and kubeAPIBurst from --config with the kubelet's defaulting; the command line wins", () => {
    assert.deepEqual(fromFile('kubeAPIQPS: 10\nkubeAPIBurst: 20\n').kubeApi, { qps: 10, burst: 20 });
    assert.deepEqual(fromFile('kubeAPIQPS: 50\nkubeAPIBurst: 0\n').kubeApi, { qps: 50, burst: 100 }, 'an unset (0) burst is the default');
    assert.deepEqual(fromFile('kubeAPIQPS: 0\n').kubeApi, { qps: 0, burst: 100 }, 'an explicit 0 QPS stays 0 (a pointer field)');
    assert.deepEqual(fromFile('kubeAPIQPS: 10\n', '--kube-api-qps=30').kubeApi, { qps: 30, burst: 100 });
    assert.throws(() => fromFile('kubeAPIQPS: -3\n'), /kubeAPIQPS -3 must not be a negative number/);
    assert.throws(() => fromFile('kubeAPIBurst: 1.5\n'), /--kube-api-burst must be a whole number/);
  });

  it('show in /configz as given, so the file round-trips', () => {
    const config = kubeletConfigurationOf(settingsOf('--kube-api-qps=25', '--kube-api-burst=30'));
    assert.equal(config.kubeAPIQPS, 25);
    assert.equal(config.kubeAPIBurst, 30);
  });
});
