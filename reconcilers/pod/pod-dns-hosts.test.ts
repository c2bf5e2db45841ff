/**
 * Component tests of pod name resolution through the assembled per-pod machinery and the recording
 * fake runtime: the sandbox config's dnsConfig, the DNS warnings, and the managed /etc/hosts file
 * and its mount in every container.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { ContainerConfig, Mount, PodSandboxConfig } from '../../cri/types.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import type { PodDnsSettings } from '../dns/pod-dns-configurer.js';
import { isPodSetupError } from '../model/sync-errors.js';

const RESOLV_CONF = '# host\nnameserver 10.255.255.53\nsearch corp.example\noptions rotate\n';
const NODE_HOSTS = '127.0.0.1 localhost\n127.0.0.1 vm\n';

let h: ReconcilerHarness | undefined;
let filesDir: string | undefined;

afterEach(async () => {
  await h?.cleanup();
  if (filesDir !== undefined) await rm(filesDir, { recursive: true, force: true });
  h = undefined;
  filesDir = undefined;
});

/** A harness whose node reads resolv.conf and hosts from files the test wrote. */
async function setup(cluster: PodDnsSettings['cluster'] = { servers: [], domain: 'cluster.local' }, resolvConf?: string): Promise<ReconcilerHarness> {
  filesDir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-dns-'));
  await writeFile(path.join(filesDir, 'resolv.conf'), RESOLV_CONF);
  await writeFile(path.join(filesDir, 'hosts'), NODE_HOSTS);
  h = await createReconcilerHarness({ dns: { cluster, resolvConf: resolvConf ?? path.join(filesDir, 'resolv.conf'), nodeHostsFile: path.join(filesDir, 'hosts') } });
  return h;
}

function sandboxConfigs(harness: ReconcilerHarness): PodSandboxConfig[] {
  return harness.runtime.callsTo('runPodSandbox').map((c) => c.args[0] as PodSandboxConfig);
}

/** Each created container's name, its /etc/hosts mounts and the sandbox config it was created with. */
function created(harness: ReconcilerHarness): { name: string; hosts: Mount[]; sandbox: PodSandboxConfig }[] {
  return harness.runtime.callsTo('createContainer').map((c) => {
    const config = c.args[1] as ContainerConfig;
    return { name: config.metadata.name, hosts: (config.mounts ?? []).filter((m) => m.containerPath === '/etc/hosts'), sandbox: c.args[2] as PodSandboxConfig };
  });
}

function hostsPath(harness: ReconcilerHarness): string {
  return path.join(harness.root, 'pods', UID, 'etc-hosts');
}

describe('pod DNS in the sandbox config', () => {
  it('sends exactly the pod\'s dnsConfig for dnsPolicy None, to the sandbox and with every container', async () => {
    const harness = await setup();
    harness.store.set(UID, basePod((p) => {
      p.spec!.dnsPolicy = 'None';
      p.spec!.dnsConfig = { nameservers: ['192.0.2.53'], searches: ['a.example'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }] };
    }));
    await harness.reconciler().reconcile(ref);
    const want = { servers: ['192.0.2.53'], searches: ['a.example'], options: ['ndots:2', 'edns0'] };
    assert.deepEqual(sandboxConfigs(harness).map((s) => s.dnsConfig), [want]);
    assert.deepEqual(created(harness).map((c) => c.sandbox.dnsConfig), [want, want]);
    assert.deepEqual(harness.events.events.filter((e) => e.type === 'Warning'), []);
  });

  it('uses the cluster DNS for ClusterFirst, with the cluster searches before the host\'s and ndots:5', async () => {
    const harness = await setup({ servers: ['10.215.0.10'], domain: 'cluster.local' });
    harness.store.set(UID, basePod());
    await harness.reconciler().reconcile(ref);
    assert.deepEqual(sandboxConfigs(harness)[0]?.dnsConfig, {
      servers: ['10.215.0.10'],
      searches: ['default.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example'],
      options: ['ndots:5'],
    });
    assert.ok(!harness.events.reasons().includes('MissingClusterDNS'));
  });

  it('falls back to the host resolv.conf with a MissingClusterDNS warning when no cluster DNS is configured', async () => {
    const harness = await setup();
    harness.store.set(UID, basePod());
    await harness.reconciler().reconcile(ref);
    assert.deepEqual(sandboxConfigs(harness)[0]?.dnsConfig, { servers: ['10.255.255.53'], searches: ['corp.example'], options: ['rotate'] });
    const missing = harness.events.events.filter((e) => e.reason === 'MissingClusterDNS');
    assert.equal(missing.length, 1);
    assert.equal(missing[0]?.type, 'Warning');
    assert.equal(missing[0]?.message, `pod: "web_default(${UID})". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`);
  });

  it('takes changed cluster settings for the next sandbox', async () => {
    const harness = await setup();
    harness.sync().dns.setClusterSettings({ servers: ['10.215.0.10', '10.215.0.11'], domain: 'example.internal' });
    harness.store.set(UID, basePod());
    await harness.reconciler().reconcile(ref);
    assert.deepEqual(sandboxConfigs(harness)[0]?.dnsConfig?.servers, ['10.215.0.10', '10.215.0.11']);
    assert.deepEqual(sandboxConfigs(harness)[0]?.dnsConfig?.searches.slice(0, 3), ['default.svc.example.internal', 'svc.example.internal', 'example.internal']);
  });

  it('fails the sandbox step with FailedCreatePodSandBox when the host resolv.conf cannot be read, and creates nothing', async () => {
    const harness = await setup(undefined, '/nonexistent/resolv.conf');
    harness.store.set(UID, basePod());
    const error = await harness.reconciler().reconcile(ref).then(() => undefined, (e: unknown) => e);
    assert.ok(isPodSetupError(error));
    assert.equal(error.reason, 'FailedCreatePodSandBox');
    assert.equal(harness.runtime.callsTo('runPodSandbox').length, 0);
    const failed = harness.events.events.find((e) => e.reason === 'FailedCreatePodSandBox');
    assert.match(failed?.message ?? '', /^Failed to create pod sandbox: ENOENT/);
  });
});

describe('the managed /etc/hosts', () => {
  it('writes the kubelet\'s hosts file with the pod IP, FQDN and aliases, and mounts it in every container', async () => {
    const harness = await setup();
    harness.store.set(UID, basePod((p) => {
      p.spec!.hostname = 'db';
      p.spec!.subdomain = 'backend';
      p.spec!.hostAliases = [{ ip: '192.0.2.10', hostnames: ['foo.local', 'bar.local'] }];
    }));
    await harness.reconciler().reconcile(ref);
    const podIp = harness.status.last()?.podIP ?? '';
    assert.match(podIp, /^10\.88\.0\.\d+$/);
    const content = await readFile(hostsPath(harness), 'utf8');
    assert.equal(content, [
      '# Kubernetes-managed hosts file.',
      '127.0.0.1\tlocalhost',
      '::1\tlocalhost ip6-localhost ip6-loopback',
      'fe00::0\tip6-localnet',
      'fe00::0\tip6-mcastprefix',
      'fe00::1\tip6-allnodes',
      'fe00::2\tip6-allrouters',
      `${podIp}\tdb.backend.default.svc.cluster.local\tdb`,
      '',
      '# Entries added by HostAliases.',
      '192.0.2.10\tfoo.local\tbar.local',
      '',
    ].join('\n'));
    assert.equal((await stat(hostsPath(harness))).mode & 0o777, 0o644);
    const mount = { containerPath: '/etc/hosts', hostPath: hostsPath(harness), readonly: false, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE' };
    assert.deepEqual(created(harness).map((c) => [c.name, c.hosts]), [['app', [mount]], ['sidecar', [mount]]]);
  });

  it('leaves out the container that mounts its own /etc/hosts', async () => {
    const harness = await setup();
    harness.store.set(UID, basePod((p) => {
      p.spec!.volumes = [{ name: 'own', emptyDir: {} }];
      p.spec!.containers[1]!.volumeMounts = [{ name: 'own', mountPath: '/etc/hosts', subPath: 'hosts' }];
    }));
    await harness.reconciler().reconcile(ref);
    const byName = Object.fromEntries(created(harness).map((c) => [c.name, c.hosts.map((m) => m.hostPath)]));
    assert.deepEqual(byName.app, [hostsPath(harness)]);
    assert.equal(byName.sidecar?.length, 1);
    assert.notEqual(byName.sidecar?.[0], hostsPath(harness), 'the sidecar keeps its own volume at /etc/hosts');
  });

  it('gives a host-network pod the node\'s hosts file plus its aliases', async () => {
    const harness = await setup();
    harness.store.set(UID, basePod((p) => {
      p.spec!.hostNetwork = true;
      p.spec!.hostAliases = [{ ip: '192.0.2.10', hostnames: ['foo.local'] }];
    }));
    await harness.reconciler().reconcile(ref);
    assert.equal(await readFile(hostsPath(harness), 'utf8'), `# Kubernetes-managed hosts file (host network).\n${NODE_HOSTS}\n# Entries added by HostAliases.\n192.0.2.10\tfoo.local\n`);
    assert.deepEqual(created(harness).map((c) => c.hosts.length), [1, 1]);
  });

  it('rewrites a damaged hosts file before the next container starts, and leaves an intact one alone', async () => {
    const harness = await setup();
    const pod: V1Pod = basePod();
    harness.store.set(UID, pod);
    await harness.reconciler().reconcile(ref);
    const good = await readFile(hostsPath(harness), 'utf8');
    const inode = (await stat(hostsPath(harness))).ino;
    // An intact file is not replaced when a container restarts.
    const restart = async (name: string): Promise<void> => {
      const c = (await harness.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': name } })).at(-1);
      harness.runtime.setContainerExited(c?.id ?? '', 1);
      await harness.reconciler().reconcile(ref);
    };
    await restart('app');
    assert.equal((await stat(hostsPath(harness))).ino, inode);
    // A damaged one (say, an agent killed in the middle of an old-style write) is replaced whole.
    await writeFile(hostsPath(harness), '127.0.0.1\tlocal');
    await chmod(hostsPath(harness), 0o600);
    harness.restartAgent();
    await restart('sidecar');
    assert.equal(await readFile(hostsPath(harness), 'utf8'), good);
    assert.equal((await stat(hostsPath(harness))).mode & 0o777, 0o644);
    assert.equal(created(harness).length, 4);
  });
});

describe('setHostnameAsFQDN', () => {
  it("gives the sandbox the pod's FQDN as its hostname when it has a subdomain, the short name otherwise", async () => {
    const harness = await setup({ servers: [], domain: 'example.internal' });
    harness.store.set(UID, basePod((p) => {
      p.spec!.hostname = 'db';
      p.spec!.subdomain = 'backend';
      p.spec!.setHostnameAsFQDN = true;
    }));
    await harness.reconciler().reconcile(ref);
    assert.deepEqual(sandboxConfigs(harness).map((s) => s.hostname), ['db.backend.default.svc.example.internal']);
    assert.deepEqual(created(harness).map((c) => c.sandbox.hostname), ['db.backend.default.svc.example.internal', 'db.backend.default.svc.example.internal']);
  });

  it('keeps the short hostname without a subdomain, or without the flag', async () => {
    const harness = await setup();
    harness.store.set(UID, basePod((p) => {
      p.spec!.setHostnameAsFQDN = true;
    }));
    await harness.reconciler().reconcile(ref);
    harness.store.set('uid-2', basePod((p) => {
      p.metadata!.uid = 'uid-2';
      p.metadata!.name = 'plain';
      p.spec!.subdomain = 'backend';
    }));
    await harness.reconciler().reconcile({ ...ref, uid: 'uid-2', name: 'plain' });
    assert.deepEqual(sandboxConfigs(harness).map((s) => s.hostname), ['web', 'plain']);
  });

  it('refuses an FQDN longer than 64 characters with the kubelet message: FailedCreatePodSandBox, no sandbox', async () => {
    const harness = await setup();
    const hostname = 'h'.repeat(30);
    harness.store.set(UID, basePod((p) => {
      p.spec!.hostname = hostname;
      p.spec!.subdomain = 'a-rather-long-subdomain';
      p.spec!.setHostnameAsFQDN = true;
    }));
    const error = await harness.reconciler().reconcile(ref).then(() => undefined, (e: unknown) => e);
    assert.ok(isPodSetupError(error));
    const fqdn = `${hostname}.a-rather-long-subdomain.default.svc.cluster.local`;
    const message = `Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (64 characters is the max, ${fqdn.length} characters requested)`;
    assert.equal(error.reason, 'FailedCreatePodSandBox');
    assert.equal(error.message, message);
    assert.equal(harness.runtime.callsTo('runPodSandbox').length, 0);
    assert.deepEqual(harness.events.events.filter((e) => e.reason === 'FailedCreatePodSandBox').map((e) => e.message), [message]);
  });
});
