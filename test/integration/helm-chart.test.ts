/**
 * The Helm chart (`charts/nodelet`) and the image recipe (`Dockerfile`).
 *
 * Rendered: `helm lint`, then `helm template` with defaults and with variations; the manifests are
 * parsed into client-node objects and their fields asserted (not snapshots). The rendered agent
 * arguments are fed to the agent's own flag parser; the rendered containerd config is loaded by
 * the image's containerd (`image/build.sh --runtime-bin`), which must read it without migrating it.
 * Invalid values must fail on the schema.
 *
 * Installed: `helm install` into the test cluster, in a namespace of its own, with node selectors
 * that match no node, so none of the chart's pods lands on the test node (their images could not be
 * pulled anyway: pulls go to a closed loopback port). Every object must exist and the CRD be
 * Established; then `helm uninstall`. The CRD stays (helm never deletes `crds/`, and the running
 * agent's NodeAgent lives in it).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type {
  KubernetesObject,
  V1ConfigMap,
  V1DaemonSet,
  V1Deployment,
  V1Secret,
  V1Service,
  V1StatefulSet,
} from '@kubernetes/client-node';
import { parseSettings } from '../../cmd/flags.js';
import { parseCredentialProviderConfig } from '../../reconcilers/images/credential-providers/config.js';
import { parseDashboardSettings } from '../../dashboard/settings.js';
import {
  CHART_DIR,
  REPO_DIR,
  allOf,
  containerOf,
  containerdConfigDump,
  dumpedValue,
  envOf,
  expandArgs,
  helm,
  oneOf,
  parseManifests,
  renderChart,
  valueArgs,
} from './helm-chart-helpers.js';

const run = promisify(execFile);
const KUBELET_SOCKET = '/run/containerd/containerd.sock';
/** The runc runtime's options table, as `containerd config dump` names it. */
const RUNC_OPTIONS = "plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options";
const SCHEMA_ERROR = "values don't meet the specifications of the schema";

/** The value of `--name=` in `args`. */
function flagValue(args: readonly string[], name: string): string | undefined {
  const prefix = `--${name}=`;
  return args.find((a) => a.startsWith(prefix))?.slice(prefix.length);
}

/** The dashboard's settings from the Deployment's args and env, as `nodelet dashboard` parses them. */
function dashboardSettings(deployment: V1Deployment, secretEnv: Readonly<Record<string, string>>): ReturnType<typeof parseDashboardSettings> {
  const container = deployment.spec?.template.spec?.containers[0];
  assert.ok(container !== undefined);
  const env: Record<string, string> = { ...secretEnv };
  // As the kubelet: a value may refer to variables defined before it ($(REDIS_PASSWORD) in REDIS_URL).
  for (const variable of container.env ?? []) if (variable.value !== undefined) env[variable.name] = expandArgs([variable.value], env)[0] ?? '';
  const [command, ...argv] = expandArgs(container.args ?? [], env);
  assert.equal(command, 'dashboard');
  return parseDashboardSettings({ argv, env, readFile: () => assert.fail('the chart passes no token file') });
}


describe('the nodelet chart, linted and rendered with defaults', () => {
  let objects: KubernetesObject[] = [];
  let daemonSet: V1DaemonSet;

  before(async () => {
    objects = await renderChart();
    daemonSet = oneOf<V1DaemonSet>(objects, 'DaemonSet');
  });

  it('passes helm lint --strict, with defaults and with an external Redis', async () => {
    const plain = await helm(['lint', '--strict', CHART_DIR]);
    assert.equal(plain.code, 0, plain.stdout + plain.stderr);
    const external = await helm(['lint', '--strict', CHART_DIR, ...valueArgs({ set: ['redis.mode=external', 'redis.url=redis://redis.example:6379'] })]);
    assert.equal(external.code, 0, external.stdout + external.stderr);
  });

  it("declares package.json's version as the chart's appVersion", async () => {
    const chart = await readFile(path.join(CHART_DIR, 'Chart.yaml'), 'utf8');
    const pkg = JSON.parse(await readFile(path.join(REPO_DIR, 'package.json'), 'utf8')) as { version: string };
    assert.match(chart, /^apiVersion: v2$/m);
    assert.equal(/^appVersion:\s*"?([^"\s]+)"?\s*$/m.exec(chart)?.[1], pkg.version);
    assert.equal(containerOf(daemonSet, 'agent').image, `nodelet:${pkg.version}`);
  });

  it("ships the repository's NodeAgent CRD byte for byte", async () => {
    const shipped = await readFile(path.join(CHART_DIR, 'crds/nodeagents.nodelet.dev.yaml'), 'utf8');
    const source = await readFile(path.join(REPO_DIR, 'crds/nodeagents.nodelet.dev.yaml'), 'utf8');
    assert.ok(shipped === source, 'charts/nodelet/crds/nodeagents.nodelet.dev.yaml differs from crds/: copy it again');
  });

  it('runs the agent privileged on the host network, with the downward API for the node name and IP', () => {
    const pod = daemonSet.spec?.template.spec;
    const agent = containerOf(daemonSet, 'agent');
    assert.equal(agent.securityContext?.privileged, true);
    assert.equal(pod?.hostNetwork, true);
    assert.equal(pod?.dnsPolicy, 'ClusterFirstWithHostNet');
    assert.equal(envOf(agent, 'NODE_NAME')?.valueFrom?.fieldRef?.fieldPath, 'spec.nodeName');
    assert.equal(envOf(agent, 'NODE_IP')?.valueFrom?.fieldRef?.fieldPath, 'status.hostIP');
    assert.equal(pod?.serviceAccountName, 'rel-nodelet');
    assert.deepEqual(pod?.tolerations, [{ operator: 'Exists' }]);
    assert.ok(agent.resources?.requests?.cpu !== undefined && agent.resources.limits?.memory !== undefined);
  });

  it('rolls out one node at a time', () => {
    assert.equal(daemonSet.spec?.updateStrategy?.type, 'RollingUpdate');
    assert.equal(daemonSet.spec?.updateStrategy?.rollingUpdate?.maxUnavailable, 1);
  });

  it('registers "<host>-nodelet" with the nodelet.dev/agent label and NoSchedule taint', () => {
    const args = containerOf(daemonSet, 'agent').args ?? [];
    assert.equal(args[0], 'agent');
    assert.equal(flagValue(args, 'node-name'), '$(NODE_NAME)-nodelet');
    assert.equal(flagValue(args, 'register-with-taints'), 'nodelet.dev/agent=true:NoSchedule');
    assert.equal(flagValue(args, 'node-labels'), 'nodelet.dev/agent=true');
  });

  it("passes arguments the agent's own flag parser accepts, naming the Node after the host", () => {
    const agent = containerOf(daemonSet, 'agent');
    const args = expandArgs((agent.args ?? []).slice(1), { NODE_NAME: 'worker-1', NODE_IP: '192.0.2.10' });
    const settings = parseSettings(args, { REDIS_URL: envOf(agent, 'REDIS_URL')?.value });
    assert.ok(settings !== 'help');
    assert.equal(settings.nodeName, 'worker-1-nodelet');
    assert.equal(settings.nodeIp, '192.0.2.10');
    assert.equal(settings.criEndpoint, 'unix:///run/nodelet-containerd/containerd.sock');
    assert.equal(settings.redisUrl, 'redis://rel-nodelet-redis.nodelet-system.svc:6379');
    assert.equal(settings.podLogDir, '/var/log/nodelet-pods');
    assert.equal(settings.concurrency, 4);
    assert.deepEqual(settings.nodeLabels, { 'nodelet.dev/agent': 'true' });
    assert.deepEqual(settings.registerWithTaints, [{ key: 'nodelet.dev/agent', value: 'true', effect: 'NoSchedule' }]);
    // dnsPolicy Default pods get the host's resolver, mounted from the host, not the agent pod's own.
    assert.equal(settings.resolvConf, '/host/etc/resolv.conf');
    assert.ok((agent.volumeMounts ?? []).some((m) => m.mountPath === '/host/etc/resolv.conf' && m.readOnly === true));
    // The node server: off the host kubelet's 10250, verifying the API server's client certificate
    // with the cluster CA of the kube-root-ca.crt ConfigMap.
    assert.deepEqual(settings.nodeServer, { port: 10260, tlsCertFile: undefined, tlsPrivateKeyFile: undefined, rotateServerCertificates: false, clientCaFile: '/etc/nodelet-client-ca/ca.crt', logDir: '/host/var/log', enableSystemLogQuery: false });
    // /logs/ serves the host's /var/log, mounted read-only (as the kubelet serves its host's).
    assert.ok((agent.volumeMounts ?? []).some((m) => m.name === 'host-var-log' && m.mountPath === '/host/var/log' && m.readOnly === true));
    assert.ok((agent.volumeMounts ?? []).some((m) => m.name === 'client-ca' && m.mountPath === '/etc/nodelet-client-ca' && m.readOnly === true));
    const caVolume = (daemonSet.spec?.template.spec?.volumes ?? []).find((v) => v.name === 'client-ca');
    assert.deepEqual(caVolume?.configMap, { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] });
  });

  it('serves bearer tokens only when no client CA ConfigMap is given', async () => {
    const objects = await renderChart({ set: ['agent.clientCAConfigMap=', 'agent.serverPort=10270'] });
    const ds = oneOf<V1DaemonSet>(objects, 'DaemonSet');
    const agent = containerOf(ds, 'agent');
    const settings = parseSettings(expandArgs((agent.args ?? []).slice(1), { NODE_NAME: 'worker-1', NODE_IP: '192.0.2.10' }), { REDIS_URL: envOf(agent, 'REDIS_URL')?.value });
    assert.ok(settings !== 'help');
    assert.deepEqual(settings.nodeServer, { port: 10270, tlsCertFile: undefined, tlsPrivateKeyFile: undefined, rotateServerCertificates: false, clientCaFile: undefined, logDir: '/host/var/log', enableSystemLogQuery: false });
    assert.equal((ds.spec?.template.spec?.volumes ?? []).some((v) => v.name === 'client-ca'), false);
  });

  it('passes the security settings to the agent: unsafe sysctls and the seccomp default, off unless set', async () => {
    const argsOf = async (set: string[]): Promise<ReturnType<typeof parseSettings>> => {
      const agent = containerOf(oneOf<V1DaemonSet>(await renderChart({ set }), 'DaemonSet'), 'agent');
      return parseSettings(expandArgs((agent.args ?? []).slice(1), { NODE_NAME: 'worker-1', NODE_IP: '192.0.2.10' }), { REDIS_URL: envOf(agent, 'REDIS_URL')?.value });
    };
    const set = await argsOf(['agent.allowedUnsafeSysctls={kernel.msgmax,net.ipv4.tcp_*}', 'agent.seccompDefault=true']);
    assert.ok(set !== 'help');
    assert.deepEqual(set.allowedUnsafeSysctls, ['kernel.msgmax', 'net.ipv4.tcp_*']);
    assert.equal(set.seccompDefault, true);
    const unset = await argsOf([]);
    assert.ok(unset !== 'help');
    assert.deepEqual(unset.allowedUnsafeSysctls, []);
    assert.equal(unset.seccompDefault, false);
    await assert.rejects(renderChart({ set: ['agent.allowedUnsafeSysctls={Kernel Msgmax}'] }), 'the schema refuses what is not a sysctl name');
  });

  it('turns graceful node shutdown on with its periods, mounting the host bus and the logind drop-in directory only then', async () => {
    const render = async (set: string[]) => {
      const ds = oneOf<V1DaemonSet>(await renderChart({ set }), 'DaemonSet');
      const agent = containerOf(ds, 'agent');
      const settings = parseSettings(expandArgs((agent.args ?? []).slice(1), { NODE_NAME: 'n', NODE_IP: '192.0.2.10' }), { REDIS_URL: 'redis://r:6379' });
      assert.ok(settings !== 'help');
      const mounts = (agent.volumeMounts ?? []).filter((m) => m.name === 'host-dbus' || m.name === 'logind-conf').map((m) => m.mountPath);
      const volumes = (ds.spec?.template.spec?.volumes ?? []).filter((v) => v.name === 'host-dbus' || v.name === 'logind-conf').map((v) => v.hostPath?.path);
      return { shutdown: settings.shutdown, mounts, volumes };
    };
    const off = await render([]);
    assert.deepEqual([off.shutdown.gracePeriodSeconds, off.mounts, off.volumes], [0, [], []]);
    const on = await render(['agent.gracefulShutdown.shutdownGracePeriod=2m', 'agent.gracefulShutdown.shutdownGracePeriodCriticalPods=30s']);
    assert.deepEqual([on.shutdown.gracePeriodSeconds, on.shutdown.criticalPodsGracePeriodSeconds], [120, 30]);
    assert.deepEqual(on.mounts, ['/run/dbus', '/etc/systemd/logind.conf.d']);
    assert.deepEqual(on.volumes, ['/run/dbus', '/etc/systemd/logind.conf.d']);
    await assert.rejects(renderChart({ set: ['agent.gracefulShutdown.shutdownGracePeriod=two minutes'] }), 'the schema refuses what is not a duration');
  });

  it("turns user namespaces off by default (the host's kubelet owns the default ID range), or passes the range given", async () => {
    const argsOf = async (set: string[]) => {
      const agent = containerOf(oneOf<V1DaemonSet>(await renderChart({ set }), 'DaemonSet'), 'agent');
      return parseSettings(expandArgs((agent.args ?? []).slice(1), { NODE_NAME: 'n', NODE_IP: '192.0.2.10' }), { REDIS_URL: 'redis://r:6379' });
    };
    const unset = await argsOf([]);
    assert.ok(unset !== 'help');
    assert.deepEqual(unset.userNamespaceHostIds, { kind: 'off' });
    const range = await argsOf(['agent.userNamespacesHostIds=2147483648:2147483648']);
    assert.ok(range !== 'help');
    assert.deepEqual(range.userNamespaceHostIds, { kind: 'range', firstId: 2147483648, length: 2147483648 });
    await assert.rejects(renderChart({ set: ['agent.userNamespacesHostIds=lookup'] }), 'the schema refuses what is neither none nor FIRST:LENGTH');
  });

  it('passes the cluster DNS settings to the agent', async () => {
    const objects = await renderChart({ set: ['node.clusterDNS={10.96.0.10}', 'node.clusterDomain=example.local'] });
    const agent = containerOf(oneOf<V1DaemonSet>(objects, 'DaemonSet'), 'agent');
    const settings = parseSettings(expandArgs((agent.args ?? []).slice(1), { NODE_NAME: 'worker-1', NODE_IP: '192.0.2.10' }), { REDIS_URL: envOf(agent, 'REDIS_URL')?.value });
    assert.ok(settings !== 'help');
    assert.deepEqual(settings.clusterDns, ['10.96.0.10']);
    assert.equal(settings.clusterDomain, 'example.local');
  });

  it('passes reservations, image pull limits and a static pod directory to the agent, with the mount', async () => {
    const objects = await renderChart({
      set: [
        'node.systemReserved.cpu=100m',
        'node.systemReserved.memory=500Mi',
        'node.kubeReserved.ephemeral-storage=1Gi',
        'agent.imagePulls.serializeImagePulls=false',
        'agent.imagePulls.maxParallelImagePulls=3',
        'agent.imagePulls.registryPullQPS=0',
        'agent.podManifestPath=/etc/kubernetes/nodelet-manifests',
      ],
    });
    const ds = oneOf<V1DaemonSet>(objects, 'DaemonSet');
    const agent = containerOf(ds, 'agent');
    const settings = parseSettings(expandArgs((agent.args ?? []).slice(1), { NODE_NAME: 'worker-1', NODE_IP: '192.0.2.10' }), { REDIS_URL: envOf(agent, 'REDIS_URL')?.value });
    assert.ok(settings !== 'help');
    assert.deepEqual(settings.systemReserved, { cpu: '100m', memory: '500Mi' });
    assert.deepEqual(settings.kubeReserved, { 'ephemeral-storage': '1Gi' });
    assert.deepEqual(settings.imagePulls, { serializeImagePulls: false, maxParallelImagePulls: 3, registryPullQPS: 0, registryBurst: 10 });
    assert.equal(settings.podManifestPath, '/etc/kubernetes/nodelet-manifests');
    assert.ok((agent.volumeMounts ?? []).some((m) => m.mountPath === '/etc/kubernetes/nodelet-manifests' && m.readOnly === true));
    assert.ok((ds.spec?.template.spec?.volumes ?? []).some((v) => v.hostPath?.path === '/etc/kubernetes/nodelet-manifests'));
    const defaults = parseSettings(expandArgs((containerOf(daemonSet, 'agent').args ?? []).slice(1), { NODE_NAME: 'w', NODE_IP: '192.0.2.10' }), {});
    assert.ok(defaults !== 'help');
    assert.deepEqual(defaults.imagePulls, { serializeImagePulls: true, maxParallelImagePulls: null, registryPullQPS: 5, registryBurst: 10 });
    assert.deepEqual([defaults.systemReserved, defaults.kubeReserved, defaults.podManifestPath], [{}, {}, undefined]);
    await assert.rejects(renderChart({ set: ['node.systemReserved.gpu=1'] }), 'the schema refuses a resource that cannot be reserved');
  });

  it("links container logs in the host's /var/log/containers, mounted read-write at the same path in the agent alone, or in the directory given", async () => {
    const own = oneOf<V1DaemonSet>(await renderChart({ set: ['agent.containerLogLinkDir=/var/log/nodelet-containers'] }), 'DaemonSet');
    for (const [ds, dir] of [[daemonSet, '/var/log/containers'], [own, '/var/log/nodelet-containers']] as const) {
      const settings = parseSettings(expandArgs((containerOf(ds, 'agent').args ?? []).slice(1), { NODE_NAME: 'w', NODE_IP: '192.0.2.10' }), {});
      assert.equal(settings !== 'help' && settings.containerLogLinkDir, dir);
      const mounts = (name: string): unknown[] => (containerOf(ds, name).volumeMounts ?? []).filter((m) => m.name === 'container-log-links').map((m) => [m.mountPath, m.readOnly ?? false]);
      assert.deepEqual([mounts('agent'), mounts('runtime')], [[[dir, false]], []], 'read-write in the agent, which alone writes links');
      assert.deepEqual((ds.spec?.template.spec?.volumes ?? []).find((v) => v.name === 'container-log-links')?.hostPath, { path: dir, type: 'DirectoryOrCreate' });
    }
  });

  it("keeps the DaemonSet off nodelet's own Nodes", () => {
    const terms = daemonSet.spec?.template.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
    assert.equal(terms.length, 1);
    assert.deepEqual(terms[0]?.matchExpressions, [{ key: 'nodelet.dev/agent', operator: 'DoesNotExist' }]);
  });

  it("runs its own containerd next to the agent, on its own socket, never the kubelet's", async () => {
    const runtime = containerOf(daemonSet, 'runtime');
    assert.equal(runtime.securityContext?.privileged, true);
    assert.match((runtime.command ?? []).join(' '), /exec containerd --config \/etc\/nodelet\/containerd\.toml\s*$/);
    assert.equal(daemonSet.spec?.template.spec?.hostPID, true);
    const config = oneOf<V1ConfigMap>(objects, 'ConfigMap', 'rel-nodelet-runtime');
    const dump = await containerdConfigDump(config.data?.['containerd.toml'] ?? '');
    assert.equal(dumpedValue(dump, "plugins.'io.containerd.server.v1.grpc'", 'address'), '/run/nodelet-containerd/containerd.sock');
    assert.equal(dumpedValue(dump, "plugins.'io.containerd.server.v1.ttrpc'", 'address'), '/run/nodelet-containerd/containerd.sock.ttrpc');
    assert.equal(dumpedValue(dump, '', 'root'), '/var/lib/nodelet-containerd');
    assert.equal(dumpedValue(dump, '', 'state'), '/run/nodelet-containerd');
    assert.equal(dumpedValue(dump, RUNC_OPTIONS, 'SystemdCgroup'), 'false');
    assert.equal(dumpedValue(dump, RUNC_OPTIONS, 'ShimCgroup'), '/nodelet-shims');
    assert.equal(dumpedValue(dump, RUNC_OPTIONS, 'Root'), '/run/nodelet-containerd/runc');
    assert.equal(dumpedValue(dump, "plugins.'io.containerd.cri.v1.runtime'.cni", 'conf_dir'), '/etc/nodelet/cni/net.d');
    assert.equal(dumpedValue(dump, "plugins.'io.containerd.cri.v1.runtime'.cni", 'bin_dirs'), "['/usr/lib/cni']");
    assert.equal(dumpedValue(dump, "plugins.'io.containerd.cri.v1.runtime'", 'netns_mounts_under_state_dir'), 'true');
    assert.equal(dumpedValue(dump, "plugins.'io.containerd.cri.v1.images'.pinned_images", 'sandbox'), 'registry.k8s.io/pause:3.10');
    assert.equal(dumpedValue(dump, "plugins.'io.containerd.grpc.v1.cri'", 'stream_server_address'), '127.0.0.1');
    assert.ok(!dump.includes(KUBELET_SOCKET), "the runtime's config names the kubelet's socket");
    assert.equal(flagValue(containerOf(daemonSet, 'agent').args ?? [], 'cri-endpoint'), 'unix:///run/nodelet-containerd/containerd.sock');
  });

  it('switches containerd to the systemd cgroup driver, with D-Bus, when asked', async () => {
    const systemd = await renderChart({ set: ['runtime.containerd.cgroupDriver=systemd'] });
    const dump = await containerdConfigDump(oneOf<V1ConfigMap>(systemd, 'ConfigMap', 'rel-nodelet-runtime').data?.['containerd.toml'] ?? '');
    assert.equal(dumpedValue(dump, RUNC_OPTIONS, 'SystemdCgroup'), 'true');
    const volumes = oneOf<V1DaemonSet>(systemd, 'DaemonSet').spec?.template.spec?.volumes ?? [];
    assert.deepEqual(volumes.filter((v) => v.name === 'dbus' || v.name === 'systemd-run').map((v) => v.hostPath?.path).sort(), ['/run/dbus', '/run/systemd']);
  });

  it('mounts exactly the host paths it needs, and none of the kubelet runtime', () => {
    const volumes = daemonSet.spec?.template.spec?.volumes ?? [];
    const hostPaths = volumes.flatMap((v) => (v.hostPath === undefined ? [] : [v.hostPath.path])).sort();
    assert.deepEqual(hostPaths, [
      '/etc/machine-id',
      '/etc/resolv.conf',
      '/run/nodelet-containerd',
      '/run/nodelet-containerd/cni',
      '/run/nodelet-containerd/s',
      '/run/nodelet-containerd/tmp',
      '/sys/fs/cgroup',
      '/var/lib/nodelet',
      '/var/lib/nodelet-containerd',
      '/var/log',
      '/var/log/containers',
      '/var/log/nodelet-pods',
    ]);
    for (const forbidden of ['/run/containerd', KUBELET_SOCKET, '/var/lib/containerd', '/var/lib/kubelet', '/var/log/pods']) {
      assert.ok(!hostPaths.includes(forbidden), `${forbidden} is mounted`);
    }
    const mounts = (name: string): Record<string, string | undefined> =>
      Object.fromEntries((containerOf(daemonSet, name).volumeMounts ?? []).map((m) => [m.mountPath, m.mountPropagation]));
    assert.equal(mounts('runtime')['/var/lib/nodelet-containerd'], 'Bidirectional');
    assert.equal(mounts('runtime')['/run/nodelet-containerd'], 'Bidirectional');
    assert.equal(mounts('agent')['/run/nodelet-containerd'], 'HostToContainer');
    // The shims' /tmp on the host: it outlives the runtime container's writable layer (exec after a restart).
    assert.ok('/tmp' in mounts('runtime'), "the runtime's /tmp is not a host path");
    // The agent mounts tmpfs for memory-backed emptyDirs under its root; the runtime must see them.
    assert.equal(mounts('agent')['/var/lib/nodelet'], 'Bidirectional');
    assert.equal(mounts('runtime')['/var/lib/nodelet'], 'HostToContainer');
    // Pod volumes and logs at the same paths in both containers: the runtime bind-mounts what the agent wrote.
    for (const shared of ['/var/lib/nodelet', '/var/log/nodelet-pods']) {
      assert.ok(shared in mounts('agent') && shared in mounts('runtime'), `${shared} is not in both containers`);
    }
  });

  it('gives the runtime a CNI bridge network on its own bridge and subnet', () => {
    const config = oneOf<V1ConfigMap>(objects, 'ConfigMap', 'rel-nodelet-runtime');
    const conflist = JSON.parse(config.data?.['10-nodelet.conflist'] ?? '') as { plugins: { type: string; bridge?: string; ipam?: { ranges: { subnet: string }[][]; dataDir: string } }[] };
    const bridge = conflist.plugins.find((p) => p.type === 'bridge');
    assert.equal(bridge?.bridge, 'nodelet-cni0');
    assert.equal(bridge?.ipam?.ranges[0]?.[0]?.subnet, '10.222.0.0/16');
    assert.equal(bridge?.ipam?.dataDir, '/run/nodelet-containerd/cni/networks');
  });

  it('serves the dashboard behind a generated token, on a ClusterIP Service', () => {
    const deployment = oneOf<V1Deployment>(objects, 'Deployment', 'rel-nodelet-dashboard');
    const container = deployment.spec?.template.spec?.containers[0];
    assert.deepEqual(container?.args?.slice(0, 2), ['dashboard', '--listen=0.0.0.0:8080']);
    assert.ok(!(container?.args ?? []).includes('--no-auth'));
    assert.equal(envOf(container, 'NODELET_DASHBOARD_TOKEN')?.valueFrom?.secretKeyRef?.name, 'rel-nodelet-dashboard-auth');
    const token = Buffer.from(oneOf<V1Secret>(objects, 'Secret', 'rel-nodelet-dashboard-auth').data?.token ?? '', 'base64').toString();
    assert.match(token, /^[A-Za-z0-9]{40}$/);
    assert.equal(oneOf<V1Service>(objects, 'Service', 'rel-nodelet-dashboard').spec?.type, 'ClusterIP');
  });
});

describe('the nodelet chart, rendered with other values', () => {
  it("gives the agent credential provider plugins: their config in a ConfigMap the agent's own parser accepts, their host directory read-only", async () => {
    const config = ['apiVersion: kubelet.config.k8s.io/v1', 'kind: CredentialProviderConfig', 'providers:', '  - name: ecr-credential-provider', '    matchImages: ["*.dkr.ecr.*.amazonaws.com"]', '    defaultCacheDuration: 12h', '    apiVersion: credentialprovider.kubelet.k8s.io/v1', ''].join('\n');
    const objects = await renderChart({ set: ['agent.imageCredentialProviders.binDir=/opt/credential-providers'], setString: [`agent.imageCredentialProviders.config=${config}`] });
    const ds = oneOf<V1DaemonSet>(objects, 'DaemonSet');
    const agent = containerOf(ds, 'agent');
    const settings = parseSettings(expandArgs((agent.args ?? []).slice(1), { NODE_NAME: 'worker-1', NODE_IP: '192.0.2.10' }), {});
    assert.ok(settings !== 'help');
    assert.deepEqual(settings.imageCredentialProviders, { configPath: '/etc/nodelet-credential-providers/config.yaml', binDir: '/opt/credential-providers' });
    const rendered = oneOf<V1ConfigMap>(objects, 'ConfigMap', 'rel-nodelet-credential-providers').data?.['config.yaml'] ?? '';
    assert.deepEqual(parseCredentialProviderConfig(rendered, 'config.yaml').map((p) => [p.name, p.defaultCacheDurationMs]), [['ecr-credential-provider', 43_200_000]]);
    const mounts = Object.fromEntries((agent.volumeMounts ?? []).map((m) => [m.mountPath, m.readOnly === true]));
    assert.equal(mounts['/etc/nodelet-credential-providers'], true);
    assert.equal(mounts['/opt/credential-providers'], true);
    assert.ok((ds.spec?.template.spec?.volumes ?? []).some((v) => v.hostPath?.path === '/opt/credential-providers' && v.hostPath.type === 'Directory'));
    assert.ok(ds.spec?.template.metadata?.annotations?.['checksum/credential-providers'] !== undefined, 'a changed config rolls the agents');
    // Without them: no flags, no ConfigMap; a config without a bin dir is refused.
    const plain = await renderChart();
    assert.equal(plain.some((o) => o.metadata?.name === 'rel-nodelet-credential-providers'), false);
    assert.ok(!(containerOf(oneOf<V1DaemonSet>(plain, 'DaemonSet'), 'agent').args ?? []).some((a) => a.includes('credential-provider')));
    const refused = await helm(['template', 'rel', CHART_DIR, ...valueArgs({ setString: [`agent.imageCredentialProviders.config=${config}`] })]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /imageCredentialProviders\/binDir/);
  });

  it('drops its own containerd and dials runtime.socket when given a dedicated runtime', async () => {
    const objects = await renderChart({ set: ['runtime.socket=/run/dedicated/containerd.sock'] });
    const daemonSet = oneOf<V1DaemonSet>(objects, 'DaemonSet');
    assert.deepEqual(daemonSet.spec?.template.spec?.containers.map((c) => c.name), ['agent']);
    assert.equal(flagValue(containerOf(daemonSet, 'agent').args ?? [], 'cri-endpoint'), 'unix:///run/dedicated/containerd.sock');
    assert.equal(daemonSet.spec?.template.spec?.volumes?.find((v) => v.name === 'cri-socket')?.hostPath?.path, '/run/dedicated');
    assert.equal(allOf(objects, 'ConfigMap').length, 0);
    // The host's PID namespace only for the pod cgroups' stray-process kill (on by default).
    assert.equal(daemonSet.spec?.template.spec?.hostPID, true);
    const withoutPodCgroups = oneOf<V1DaemonSet>(await renderChart({ set: ['runtime.socket=/run/dedicated/containerd.sock', 'agent.cgroupsPerQOS=false'] }), 'DaemonSet');
    assert.equal(withoutPodCgroups.spec?.template.spec?.hostPID, undefined);
    assert.equal(withoutPodCgroups.spec?.template.spec?.volumes?.some((v) => v.hostPath?.path === '/sys/fs/cgroup'), false);
  });

  it("puts pods in cgroups under its own root in the host's hierarchy, and not with the systemd driver it lacks", async () => {
    const agentOf = async (set: string[]): Promise<{ args: string[]; cgroupMount: boolean }> => {
      const daemonSet = oneOf<V1DaemonSet>(await renderChart({ set }), 'DaemonSet');
      const agent = containerOf(daemonSet, 'agent');
      const volume = daemonSet.spec?.template.spec?.volumes?.find((v) => v.hostPath?.path === '/sys/fs/cgroup');
      const cgroupMount = volume !== undefined && (agent.volumeMounts ?? []).some((m) => m.name === volume.name && m.mountPath === '/sys/fs/cgroup' && m.readOnly !== true);
      return { args: agent.args ?? [], cgroupMount };
    };
    const byDefault = await agentOf([]);
    assert.equal(flagValue(byDefault.args, 'cgroup-root'), '/nodelet');
    assert.equal(byDefault.args.includes('--cgroups-per-qos=false'), false);
    assert.equal(byDefault.cgroupMount, true, "the host's /sys/fs/cgroup, writable, in the agent");
    assert.equal(flagValue((await agentOf(['agent.cgroupRoot=/nodes/a'])).args, 'cgroup-root'), '/nodes/a');
    const systemd = await agentOf(['runtime.containerd.cgroupDriver=systemd']);
    assert.ok(systemd.args.includes('--cgroups-per-qos=false'));
    assert.equal(flagValue(systemd.args, 'cgroup-root'), undefined);
    assert.equal(systemd.cgroupMount, false);
    const off = await agentOf(['agent.cgroupsPerQOS=false']);
    assert.ok(off.args.includes('--cgroups-per-qos=false'));
    for (const root of ['/', '/a/../kubepods', 'kubepods']) {
      const refused = await helm(['template', 'rel', CHART_DIR, ...valueArgs({ setString: [`agent.cgroupRoot=${root}`] })]);
      assert.notEqual(refused.code, 0, `cgroupRoot ${root} refused`);
      assert.match(refused.stderr, /cgroupRoot/);
    }
  });

  it('has no Redis of its own in external mode and hands the agent and dashboard the URL', async () => {
    const objects = await renderChart({ set: ['redis.mode=external', 'redis.url=redis://queue.example:6380/2'] });
    assert.equal(allOf(objects, 'StatefulSet').length, 0);
    assert.ok(!allOf<V1Service>(objects, 'Service').some((s) => s.metadata?.name === 'rel-nodelet-redis'));
    const agent = containerOf(oneOf<V1DaemonSet>(objects, 'DaemonSet'), 'agent');
    assert.equal(envOf(agent, 'REDIS_URL')?.value, 'redis://queue.example:6380/2');
    const dashboard = oneOf<V1Deployment>(objects, 'Deployment', 'rel-nodelet-dashboard').spec?.template.spec?.containers[0];
    assert.equal(envOf(dashboard!, 'REDIS_URL')?.value, 'redis://queue.example:6380/2');
  });

  it('takes an external password from a Secret and switches to rediss:// for TLS', async () => {
    const objects = await renderChart({ set: ['redis.mode=external', 'redis.url=redis://queue.example:6380', 'redis.tls=true', 'redis.password.existingSecret=queue-auth'] });
    const agent = containerOf(oneOf<V1DaemonSet>(objects, 'DaemonSet'), 'agent');
    assert.deepEqual(envOf(agent, 'REDIS_PASSWORD')?.valueFrom?.secretKeyRef, { name: 'queue-auth', key: 'password' });
    assert.equal(envOf(agent, 'REDIS_URL')?.value, 'rediss://:$(REDIS_PASSWORD)@queue.example:6380');
    // Kubernetes expands $(VAR) only from variables defined earlier in the list.
    const names = (agent.env ?? []).map((e) => e.name);
    assert.ok(names.indexOf('REDIS_PASSWORD') < names.indexOf('REDIS_URL'));
  });

  it('keeps Redis data on a volume claim when persistence is on', async () => {
    const objects = await renderChart({ set: ['redis.persistence.enabled=true', 'redis.persistence.size=2Gi'] });
    const redis = oneOf<V1StatefulSet>(objects, 'StatefulSet');
    assert.equal(redis.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage, '2Gi');
    assert.deepEqual(redis.spec?.template.spec?.volumes?.map((v) => v.name), ['api-token'], 'the data volume is the claim');
    assert.ok(redis.spec?.template.spec?.containers[0]?.args?.includes('--appendonly'));
  });

  it('uses an existing token Secret instead of generating one', async () => {
    const objects = await renderChart({ set: ['dashboard.auth.existingSecret=my-token'] });
    assert.deepEqual(allOf(objects, 'Secret').map((x) => x.metadata?.name), ['rel-nodelet-redis-auth'], 'no token Secret of its own');
    const container = oneOf<V1Deployment>(objects, 'Deployment', 'rel-nodelet-dashboard').spec?.template.spec?.containers[0];
    assert.equal(envOf(container!, 'NODELET_DASHBOARD_TOKEN')?.valueFrom?.secretKeyRef?.name, 'my-token');
  });

  it('serves the dashboard without authentication only when auth.disabled is set', async () => {
    const objects = await renderChart({ set: ['dashboard.auth.disabled=true'] });
    const container = oneOf<V1Deployment>(objects, 'Deployment', 'rel-nodelet-dashboard').spec?.template.spec?.containers[0];
    assert.ok(container?.args?.includes('--no-auth'));
    assert.equal(envOf(container!, 'NODELET_DASHBOARD_TOKEN'), undefined);
    assert.deepEqual(allOf(objects, 'Secret').map((x) => x.metadata?.name), ['rel-nodelet-redis-auth'], 'no token Secret');
    const settings = dashboardSettings(oneOf<V1Deployment>(objects, 'Deployment', 'rel-nodelet-dashboard'), {});
    assert.ok(settings !== 'help');
    assert.equal(settings.auth.kind, 'none');
  });

  it("passes arguments the dashboard's own flag parser accepts: all interfaces, the token, read-only", async () => {
    const settings = dashboardSettings(oneOf<V1Deployment>(await renderChart(), 'Deployment', 'rel-nodelet-dashboard'), { NODELET_DASHBOARD_TOKEN: 'from-the-secret', REDIS_PASSWORD: 'from-the-redis-secret' });
    assert.ok(settings !== 'help');
    assert.deepEqual(settings.listen, { host: '0.0.0.0', port: 8080 });
    assert.equal(settings.redisUrl, 'redis://nodelet-dashboard:from-the-redis-secret@rel-nodelet-redis.nodelet-system.svc:6379');
    assert.deepEqual(settings.auth, { kind: 'token', token: 'from-the-secret' });
    assert.equal(settings.allowActions, false);
  });

  it('renders no dashboard when it is disabled', async () => {
    const objects = await renderChart({ set: ['dashboard.enabled=false'] });
    assert.deepEqual(allOf(objects, 'Deployment').map((d) => d.metadata?.name), ['rel-nodelet-approver']);
    assert.ok(!allOf<V1Service>(objects, 'Service').some((s) => s.metadata?.name === 'rel-nodelet-dashboard'));
  });

  it('registers custom taints and labels, always keeping nodelet.dev/agent', async () => {
    const objects = await renderChart({
      set: ['node.nameSuffix=-edge', 'node.taints[0].key=dedicated', 'node.taints[0].effect=NoExecute'],
      setString: ['node.labels.zone=a'],
    });
    const args = containerOf(oneOf<V1DaemonSet>(objects, 'DaemonSet'), 'agent').args ?? [];
    assert.equal(flagValue(args, 'node-name'), '$(NODE_NAME)-edge');
    assert.equal(flagValue(args, 'register-with-taints'), 'dedicated:NoExecute');
    assert.equal(flagValue(args, 'node-labels'), 'nodelet.dev/agent=true,zone=a');
  });

  it('adds the nodelet.dev/agent rule to every required term of a custom affinity', async () => {
    const objects = await renderChart({
      set: [
        'agent.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool',
        'agent.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists',
      ],
    });
    const terms = oneOf<V1DaemonSet>(objects, 'DaemonSet').spec?.template.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
    assert.deepEqual(terms, [{ matchExpressions: [{ key: 'pool', operator: 'Exists' }, { key: 'nodelet.dev/agent', operator: 'DoesNotExist' }] }]);
  });
});

describe('the values schema', () => {
  const invalid: readonly { readonly name: string; readonly set: readonly string[]; readonly path: string }[] = [
    { name: 'a concurrency of 0', set: ['agent.concurrency=0'], path: '/agent/concurrency' },
    { name: 'a fractional concurrency', set: ['agent.concurrency=2.5'], path: '/agent/concurrency' },
    { name: 'an unknown Redis mode', set: ['redis.mode=bogus'], path: '/redis/mode' },
    { name: 'external Redis without a URL', set: ['redis.mode=external'], path: '/redis/url' },
    { name: 'a Redis URL of another scheme', set: ['redis.mode=external', 'redis.url=http://queue.example'], path: '/redis/url' },
    { name: 'an unknown pull policy', set: ['image.pullPolicy=Sometimes'], path: '/image/pullPolicy' },
    { name: "the kubelet's containerd socket", set: [`runtime.socket=${KUBELET_SOCKET}`], path: '/runtime/socket' },
    { name: "the host runtime's state dir", set: ['runtime.containerd.stateDir=/run/containerd'], path: '/runtime/containerd/stateDir' },
    { name: 'an unknown cgroup driver', set: ['runtime.containerd.cgroupDriver=cgroupv3'], path: '/runtime/containerd/cgroupDriver' },
    { name: 'a taint effect the API does not know', set: ['node.taints[0].key=a', 'node.taints[0].effect=Never'], path: '/node/taints/0/effect' },
    { name: 'a misspelt key', set: ['agent.concurency=4'], path: '/agent' },
    { name: 'a relative root dir', set: ['agent.rootDir=var/lib/nodelet'], path: '/agent/rootDir' },
    { name: 'a relative container log link dir', set: ['agent.containerLogLinkDir=var/log/containers'], path: '/agent/containerLogLinkDir' },
  ];
  for (const { name, set, path: valuePath } of invalid) {
    it(`refuses ${name} at helm template`, async () => {
      const result = await helm(['template', 'rel', CHART_DIR, ...valueArgs({ set })]);
      assert.notEqual(result.code, 0, `helm template accepted ${set.join(' ')}`);
      assert.ok(result.stderr.includes(SCHEMA_ERROR), result.stderr);
      assert.ok(result.stderr.includes(`'${valuePath}'`), `the error does not name ${valuePath}: ${result.stderr}`);
    });
  }

  it('accepts a complete external-Redis configuration', async () => {
    const objects = await renderChart({ set: ['redis.mode=external', 'redis.url=rediss://queue.example:6380', 'redis.password.existingSecret=queue-auth'] });
    assert.equal(allOf(objects, 'DaemonSet').length, 1);
  });
});

describe('the Dockerfile', () => {
  it('builds the pinned runtime and Node.js into a Debian base, and carries dist/ and the CRI proto', async () => {
    const dockerfile = await readFile(path.join(REPO_DIR, 'Dockerfile'), 'utf8');
    const froms = [...dockerfile.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]);
    assert.deepEqual(froms, ['${GO_IMAGE}', '${NODE_BUILD_IMAGE}', '${DEBIAN_IMAGE}']);
    assert.match(dockerfile, /^ARG DEBIAN_IMAGE=debian:bookworm-slim@sha256:[0-9a-f]{64}$/m);
    assert.match(dockerfile, /^RUN bash \/src\/image\/build-runtime\.sh \/out\/bin$/m);
    assert.match(dockerfile, /^COPY --from=runtime-build \/out\/bin\/ \/usr\/local\/bin\/$/m);
    assert.match(dockerfile, /^COPY --from=build \/node\/ \/usr\/local\/$/m);
    assert.match(dockerfile, /apt-get install[^\n]*\bcontainernetworking-plugins\b/);
    assert.doesNotMatch(dockerfile, /apt-get install[^\n]*\b(containerd|runc|nodejs|npm)\b/);
    assert.match(dockerfile, /--omit=dev/);
    assert.match(dockerfile, /^COPY --from=build \/src\/dist \.\/dist$/m);
    // cri/proto.ts looks for ../../cri/api.proto relative to dist/cri/.
    assert.match(dockerfile, /^COPY cri\/api\.proto \.\/cri\/api\.proto$/m);
    // The chart's containers give only args: the image's node and its V8 flag (a smaller young
    // generation: less resident memory, docs/benchmarks.md) apply to the agent and the dashboard.
    assert.match(dockerfile, /^ENTRYPOINT \["node", "--max-semi-space-size=2", "bin\/nodelet\.js"\]$/m);
  });

  it('copies only sources that exist, and the context keeps them', async () => {
    const dockerfile = await readFile(path.join(REPO_DIR, 'Dockerfile'), 'utf8');
    const ignored = (await readFile(path.join(REPO_DIR, '.dockerignore'), 'utf8')).split('\n').map((l) => l.trim());
    const sources = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));
    assert.ok(sources.length > 0);
    for (const source of sources) {
      await stat(path.join(REPO_DIR, source)); // rejects when the source is missing
      assert.ok(!ignored.includes(source.split('/')[0]!), `${source} is excluded by .dockerignore`);
    }
  });
});

/** Fails fast when the test cluster is not up. */
function requireCluster(): void {
  if (process.env.KUBECONFIG === undefined || process.env.CLUSTER_DIR === undefined) {
    throw new Error('the test cluster is not up: run `npm run cluster:up` and `source .cluster/env`');
  }
}

async function kubectl(args: readonly string[]): Promise<string> {
  const { stdout } = await run('kubectl', [...args], { maxBuffer: 16 * 1024 * 1024, timeout: 120_000 });
  return stdout;
}

async function exists(kind: string, name: string, namespace?: string): Promise<boolean> {
  try {
    await kubectl(['get', kind, name, ...(namespace === undefined ? [] : ['-n', namespace]), '-o', 'name']);
    return true;
  } catch {
    return false;
  }
}

describe('the nodelet chart, installed into the test cluster', () => {
  const suffix = randomBytes(3).toString('hex');
  const namespace = `helm-it-${suffix}`;
  const release = `it-${suffix}`;
  const fullname = `${release}-nodelet`;
  // No node has this label: nothing of the chart is scheduled onto the test node.
  const nowhere = ['agent.nodeSelector.nodelet\\.dev/never=true', 'redis.nodeSelector.nodelet\\.dev/never=true', 'dashboard.nodeSelector.nodelet\\.dev/never=true', 'approver.nodeSelector.nodelet\\.dev/never=true'];
  let installOutput = '';

  before(async () => {
    requireCluster();
    const result = await helm(['install', release, CHART_DIR, '--namespace', namespace, '--create-namespace', '--wait=false', ...valueArgs({ setString: nowhere })]);
    assert.equal(result.code, 0, result.stderr);
    installOutput = result.stdout;
  });

  after(async () => {
    if (process.env.KUBECONFIG === undefined) return;
    await helm(['uninstall', release, '--namespace', namespace, '--wait', '--timeout', '60s']);
    await kubectl(['delete', 'namespace', namespace, '--wait=false', '--ignore-not-found']).catch(() => undefined);
  });

  it('creates every object of the release', async () => {
    const manifest = await helm(['get', 'manifest', release, '--namespace', namespace]);
    assert.equal(manifest.code, 0, manifest.stderr);
    const objects = parseManifests(manifest.stdout);
    const kinds = new Set(objects.map((o) => o.kind));
    for (const kind of ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding', 'ConfigMap', 'Secret', 'Service', 'DaemonSet', 'StatefulSet', 'Deployment']) {
      assert.ok(kinds.has(kind), `the release has no ${kind}`);
    }
    for (const object of objects) {
      const name = object.metadata?.name ?? '';
      assert.ok(await exists(object.kind ?? '', name, object.metadata?.namespace), `${object.kind} ${name} was not created`);
    }
  });

  it('has the NodeAgent CRD established', async () => {
    await kubectl(['wait', '--for=condition=Established', 'crd/nodeagents.nodelet.dev', '--timeout=60s']);
    assert.match(await kubectl(['get', 'crd', 'nodeagents.nodelet.dev', '-o', 'jsonpath={.spec.scope}']), /^Cluster$/);
  });

  it('schedules no agent onto the test node', async () => {
    const status = JSON.parse(await kubectl(['get', 'daemonset', fullname, '-n', namespace, '-o', 'json'])) as V1DaemonSet;
    assert.equal(status.status?.desiredNumberScheduled ?? 0, 0);
    const pods = await kubectl(['get', 'pods', '-n', namespace, '-o', 'jsonpath={range .items[*]}{.spec.nodeName}{"\\n"}{end}']);
    assert.deepEqual(pods.split('\n').filter((n) => n !== ''), [], 'a pod of the chart was bound to a node');
  });

  it('has pod templates the API server would admit as pods (priority class, privileges, mounts)', async () => {
    const manifest = await helm(['get', 'manifest', release, '--namespace', namespace]);
    const workloads = parseManifests(manifest.stdout).filter((o) => ['DaemonSet', 'StatefulSet', 'Deployment'].includes(o.kind ?? ''));
    assert.equal(workloads.length, 4);
    for (const workload of workloads as V1DaemonSet[]) {
      const template = workload.spec?.template;
      const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: `dry-run-${workload.kind?.toLowerCase() ?? ''}`, labels: template?.metadata?.labels }, spec: template?.spec };
      // Server-side dry run: admission and validation as for a real pod; nothing is stored.
      const child = run('kubectl', ['create', '--dry-run=server', '-n', namespace, '-f', '-'], { timeout: 60_000 });
      child.child.stdin?.end(JSON.stringify(pod));
      const { stdout } = await child;
      assert.match(stdout, /created \(server dry run\)/);
    }
  });

  it('tells the user what to run next', () => {
    assert.match(installOutput, /kubectl get nodeagents/);
    assert.match(installOutput, /kubectl get nodes -l nodelet\.dev\/agent/);
    assert.ok(installOutput.includes(`port-forward service/${fullname}-dashboard`), installOutput);
    assert.ok(installOutput.includes(`get secret ${fullname}-dashboard-auth`), installOutput);
  });

  it("keeps the dashboard token and Redis' passwords across an upgrade", async () => {
    const read = (): Promise<string> => kubectl(['get', 'secret', `${fullname}-dashboard-auth`, `${fullname}-redis-auth`, '-n', namespace, '-o', 'jsonpath={.items[*].data}']);
    const before = await read();
    const upgrade = await helm(['upgrade', release, CHART_DIR, '--namespace', namespace, '--wait=false', ...valueArgs({ setString: nowhere })]);
    assert.equal(upgrade.code, 0, upgrade.stderr);
    assert.match(before, /admin-password.*dashboard-password.*token|token.*admin-password/s);
    assert.equal(await read(), before);
  });

  it('refuses invalid values at install, before creating anything', async () => {
    const result = await helm(['install', `${release}-bad`, CHART_DIR, '--namespace', namespace, '--set', 'agent.concurrency=0']);
    assert.notEqual(result.code, 0);
    assert.ok(result.stderr.includes(SCHEMA_ERROR), result.stderr);
    assert.equal(await exists('clusterrole', `${release}-bad-nodelet-node`), false);
  });

  it('removes its cluster-wide objects on uninstall', async () => {
    const uninstall = await helm(['uninstall', release, '--namespace', namespace, '--wait', '--timeout', '60s']);
    assert.equal(uninstall.code, 0, uninstall.stderr);
    assert.equal(await exists('clusterrole', `${fullname}-node`), false);
    assert.equal(await exists('clusterrolebinding', `${fullname}-agent-bootstrap`), false);
    assert.equal(await exists('clusterrole', `${fullname}-approver`), false);
    assert.equal(await exists('validatingadmissionpolicy', `${fullname}-own-nodeagent`), false);
    assert.equal(await exists('validatingadmissionpolicybinding', `${fullname}-own-nodeagent`), false);
    // helm never deletes crds/: the running agent's NodeAgent lives there.
    assert.equal(await exists('crd', 'nodeagents.nodelet.dev'), true);
  });
});
