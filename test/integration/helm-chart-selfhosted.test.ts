/**
 * The chart values the self-hosted suite (test/selfhosted) needs to run nodelet as a DaemonSet next
 * to another node agent without sending anything off the machine: containerd's registry host
 * configuration, the CNI bridge's masquerade switch, the dashboard on the host network, and the
 * refusal of a second release. Rendered with `helm template` (the refusal against the test cluster,
 * where `lookup` sees the first release).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import type { V1ConfigMap, V1DaemonSet, V1Deployment } from '@kubernetes/client-node';
import { parseDashboardSettings } from '../../dashboard/settings.js';
import { CHART_DIR, containerdConfigDump, dumpedValue, expandArgs, helm, oneOf, renderChart } from './helm-chart-helpers.js';

const run = promisify(execFile);
const SINK = 'server = "http://127.0.0.1:5999"\n';
const MIRROR = 'server = "http://127.0.0.1:5000"\n';


describe('the nodelet chart for a node that already has an agent (self-hosted values)', () => {
  it('writes one hosts.toml per registry host, mounted at containerd\'s config_path, only when given', async () => {
    const objects = await renderChart({ setString: [`runtime.containerd.registryHosts._default=${SINK}`, `runtime.containerd.registryHosts.127\\.0\\.0\\.1:5000=${MIRROR}`] });
    const config = oneOf<V1ConfigMap>(objects, 'ConfigMap', 'rel-nodelet-runtime');
    assert.equal(config.data?.['hosts._default.toml'], SINK);
    assert.equal(config.data?.['hosts.127.0.0.1_5000.toml'], MIRROR);
    const dump = await containerdConfigDump(config.data?.['containerd.toml'] ?? '');
    assert.equal(dumpedValue(dump, "plugins.'io.containerd.cri.v1.images'.registry", 'config_path'), '/etc/nodelet/certs.d');
    const daemonSet = oneOf<V1DaemonSet>(objects, 'DaemonSet');
    const volume = daemonSet.spec?.template.spec?.volumes?.find((v) => v.name === 'runtime-config');
    const items = Object.fromEntries((volume?.configMap?.items ?? []).map((i) => [i.key, i.path]));
    assert.equal(items['hosts._default.toml'], 'certs.d/_default/hosts.toml');
    assert.equal(items['hosts.127.0.0.1_5000.toml'], 'certs.d/127.0.0.1:5000/hosts.toml');
    const mount = daemonSet.spec?.template.spec?.containers.find((c) => c.name === 'runtime')?.volumeMounts?.find((m) => m.name === 'runtime-config');
    assert.equal(mount?.mountPath, '/etc/nodelet');

    const plain = oneOf<V1ConfigMap>(await renderChart(), 'ConfigMap', 'rel-nodelet-runtime');
    assert.deepEqual(Object.keys(plain.data ?? {}).sort(), ['10-nodelet.conflist', 'containerd.toml']);
    assert.equal(dumpedValue(await containerdConfigDump(plain.data?.['containerd.toml'] ?? ''), "plugins.'io.containerd.cri.v1.images'.registry", 'config_path'), '');
  });

  it('masquerades pod traffic by default and not with runtime.cni.ipMasq=false', async () => {
    const ipMasq = async (set: string[]): Promise<unknown> => {
      const config = oneOf<V1ConfigMap>(await renderChart({ set }), 'ConfigMap', 'rel-nodelet-runtime');
      const conflist = JSON.parse(config.data?.['10-nodelet.conflist'] ?? '') as { plugins: { type: string; ipMasq?: unknown }[] };
      return conflist.plugins.find((p) => p.type === 'bridge')?.ipMasq;
    };
    assert.equal(await ipMasq([]), true);
    assert.equal(await ipMasq(['runtime.cni.ipMasq=false']), false);
  });

  it('runs the dashboard on the host network listening on the node IP only, or on listenAddress', async () => {
    const settings = async (set: string[]): Promise<{ hostNetwork: boolean; listen: unknown }> => {
      const deployment = oneOf<V1Deployment>(await renderChart({ set }), 'Deployment', 'rel-nodelet-dashboard');
      const spec = deployment.spec?.template.spec;
      const container = spec?.containers[0];
      assert.ok(container !== undefined);
      // HOST_IP as the kubelet would resolve status.hostIP.
      const env: Record<string, string> = { NODELET_DASHBOARD_TOKEN: 't', HOST_IP: '192.0.2.7' };
      for (const variable of container.env ?? []) if (variable.value !== undefined) env[variable.name] = variable.value;
      if (spec?.hostNetwork === true) assert.equal(container.env?.find((e) => e.name === 'HOST_IP')?.valueFrom?.fieldRef?.fieldPath, 'status.hostIP');
      const [, ...argv] = expandArgs(container.args ?? [], env);
      const parsed = parseDashboardSettings({ argv, env, readFile: () => assert.fail('no token file') });
      assert.ok(parsed !== 'help');
      return { hostNetwork: spec?.hostNetwork === true, listen: parsed.listen };
    };
    assert.deepEqual(await settings([]), { hostNetwork: false, listen: { host: '0.0.0.0', port: 8080 } });
    assert.deepEqual(await settings(['dashboard.hostNetwork=true']), { hostNetwork: true, listen: { host: '192.0.2.7', port: 8080 } });
    assert.deepEqual(await settings(['dashboard.hostNetwork=true', 'dashboard.listenAddress=127.0.0.1', 'dashboard.port=18088']), { hostNetwork: true, listen: { host: '127.0.0.1', port: 18088 } });
  });

  it('rolls a host-network dashboard without a surge pod (its port is a host port the old pod holds)', async () => {
    const strategy = async (set: string[]): Promise<unknown> => oneOf<V1Deployment>(await renderChart({ set }), 'Deployment', 'rel-nodelet-dashboard').spec?.strategy;
    assert.equal(await strategy([]), undefined, "the Deployment's default rolling update off the host network");
    assert.deepEqual(await strategy(['dashboard.hostNetwork=true']), { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } });
  });

  it("prepares the shims' cgroup so a process can join it on cgroup v1, cpuset included", async () => {
    const daemonSet = oneOf<V1DaemonSet>(await renderChart(), 'DaemonSet');
    const script = daemonSet.spec?.template.spec?.containers.find((c) => c.name === 'runtime')?.command?.[2] ?? '';
    assert.match(script, /exec containerd --config \/etc\/nodelet\/containerd\.toml/);
    // A v1 hierarchy in a scratch directory: what the kernel shows, a new cgroup's cpuset files empty.
    const root = await mkdtemp(path.join(os.tmpdir(), 'nodelet-cgroup-'));
    try {
      await mkdir(path.join(root, 'cpuset/nodelet-shims'), { recursive: true });
      await writeFile(path.join(root, 'cpuset/cpuset.cpus'), '0-1\n');
      await writeFile(path.join(root, 'cpuset/cpuset.mems'), '0\n');
      await writeFile(path.join(root, 'cpuset/nodelet-shims/cpuset.cpus'), '');
      await writeFile(path.join(root, 'cpuset/nodelet-shims/cpuset.mems'), '');
      await mkdir(path.join(root, 'memory'));
      await mkdir(path.join(root, 'cpu,cpuacct'));
      await symlink('cpu,cpuacct', path.join(root, 'cpu'));
      const local = script.replaceAll('/sys/fs/cgroup', root).replace(/exec containerd .*/, 'exit 0');
      await run('sh', ['-c', local], { timeout: 10_000 });
      assert.equal(await readFile(path.join(root, 'cpuset/nodelet-shims/cpuset.cpus'), 'utf8'), '0-1\n');
      assert.equal(await readFile(path.join(root, 'cpuset/nodelet-shims/cpuset.mems'), 'utf8'), '0\n');
      for (const hierarchy of ['memory', 'cpu,cpuacct']) {
        assert.equal((await readFile(path.join(root, 'cpuset/cpuset.cpus'), 'utf8')).length > 0, true);
        await readFile(path.join(root, hierarchy, 'nodelet-shims'), 'utf8').then(() => assert.fail('a file, not a cgroup'), (error: unknown) => {
          assert.equal((error as { code?: string }).code, 'EISDIR', `${hierarchy}/nodelet-shims is a directory`);
        });
      }
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('refuses malformed registry hosts and listen addresses in the schema', async () => {
    for (const set of [['runtime.containerd.registryHosts.bad/host=x'], ['dashboard.listenAddress=localhost'], ['runtime.cni.ipMasq=maybe']]) {
      const result = await helm(['template', 'rel', CHART_DIR, '--set', set[0] ?? '']);
      assert.notEqual(result.code, 0, `helm template accepted ${set.join(' ')}`);
      assert.match(result.stderr, /values don't meet the specifications of the schema/);
    }
  });
});
