/**
 * End to end: pod name resolution on the nodelet node, as the container sees it (its
 * /etc/resolv.conf and /etc/hosts, printed into its termination message), as the runtime holds it
 * (`crictl inspectp`: the sandbox's dnsConfig) and as the API reports it (events).
 *
 * The harness runs the agent without `--cluster-dns`, so cluster-first pods fall back to the host's
 * resolv.conf with a MissingClusterDNS warning, as on a kubelet without cluster DNS. Nothing here
 * sends a DNS query: the addresses only have to arrive in the files.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, apply, createNamespace, crictl, deleteNamespace, eventually, getPod, kubectl, podEvents, requireCluster, sandboxesOf } from './helpers.js';
import { patchNodeAgentSpec, waitNodeAgentSettingsApplied } from './nodeagent-spec.js';

interface SandboxDns {
  readonly servers: string[];
  readonly searches: string[];
  readonly options: string[];
}

/** A pod on our node whose one busybox container copies `file` into its termination message. */
function printingPod(namespace: string, name: string, file: string, spec: object): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: 'busybox:1.35', command: ['sh', '-c', `cat ${file} > /dev/termination-log`] }],
      ...spec,
    },
  };
}

async function finished(namespace: string, name: string): Promise<V1Pod> {
  const pod = await eventually(`pod ${name} to finish`, async () => {
    const p = await getPod(namespace, name);
    return p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed' ? p : undefined;
  });
  assert.equal(pod.status?.phase, 'Succeeded', JSON.stringify(pod.status?.containerStatuses?.[0]?.state));
  return pod;
}

function printed(pod: V1Pod): string {
  return pod.status?.containerStatuses?.[0]?.state?.terminated?.message ?? '';
}

/** The dnsConfig of the pod's one sandbox, as containerd holds it. */
async function sandboxDns(uid: string): Promise<SandboxDns | undefined> {
  const sandboxes = await sandboxesOf(uid);
  assert.equal(sandboxes.length, 1, `one sandbox for ${uid}`);
  const inspected = JSON.parse(await crictl(['inspectp', sandboxes[0] ?? ''])) as { info?: { config?: Record<string, unknown> } };
  const config = inspected.info?.config ?? {};
  const dns = (config.dns_config ?? config.dnsConfig) as Partial<SandboxDns> | undefined;
  return dns === undefined ? undefined : { servers: dns.servers ?? [], searches: dns.searches ?? [], options: dns.options ?? [] };
}

/** resolv.conf as containerd writes it from a sandbox dnsConfig. */
function resolvConfText(dns: SandboxDns): string {
  return [
    dns.searches.length > 0 ? `search ${dns.searches.join(' ')}\n` : '',
    dns.servers.map((s) => `nameserver ${s}\n`).join(''),
    dns.options.length > 0 ? `options ${dns.options.join(' ')}\n` : '',
  ].join('');
}

/** The host's resolv.conf, parsed as the agent's default `--resolv-conf /etc/resolv.conf` is. */
async function hostResolvConf(): Promise<SandboxDns> {
  const dns: { servers: string[]; searches: string[]; options: string[] } = { servers: [], searches: [], options: [] };
  for (const line of (await readFile('/etc/resolv.conf', 'utf8')).split('\n')) {
    const [keyword, ...fields] = line.trim().split(/\s+/);
    if (keyword === 'nameserver' && fields[0] !== undefined) dns.servers.push(fields[0]);
    if (keyword === 'search') dns.searches = fields.map((f) => f.replace(/\.$/, ''));
    if (keyword === 'options') dns.options = fields;
  }
  return dns;
}

const MANAGED_HOSTS_HEAD = [
  '# Kubernetes-managed hosts file.',
  '127.0.0.1\tlocalhost',
  '::1\tlocalhost ip6-localhost ip6-loopback',
  'fe00::0\tip6-localnet',
  'fe00::0\tip6-mcastprefix',
  'fe00::1\tip6-allnodes',
  'fe00::2\tip6-allrouters',
];

describe('pod DNS and /etc/hosts on the nodelet node', () => {
  let namespace = '';
  const agentRoot = path.join(process.env.CLUSTER_DIR ?? '', 'nodelet-root');

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-dns');
  });

  after(async () => {
    // The NodeAgent's DNS settings go back to the flags (no cluster DNS) whatever happened.
    await patchNodeAgentSpec({ clusterDNS: null, clusterDomain: null }).catch(() => undefined);
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('gives a dnsPolicy None pod exactly its dnsConfig, in the sandbox and in its resolv.conf', async () => {
    await apply(printingPod(namespace, 'dns-none', '/etc/resolv.conf', {
      dnsPolicy: 'None',
      dnsConfig: {
        nameservers: ['10.215.0.53', '192.0.2.54'],
        searches: ['a.example', 'b.example'],
        options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }, { name: 'ndots', value: '3' }],
      },
    }));
    const pod = await finished(namespace, 'dns-none');
    const want = { servers: ['10.215.0.53', '192.0.2.54'], searches: ['a.example', 'b.example'], options: ['ndots:3', 'edns0'] };
    assert.deepEqual(await sandboxDns(pod.metadata?.uid ?? ''), want);
    assert.equal(printed(pod), 'search a.example b.example\nnameserver 10.215.0.53\nnameserver 192.0.2.54\noptions ndots:3 edns0\n');
    const warnings = (await podEvents(namespace, 'dns-none')).filter((e) => e.type === 'Warning');
    assert.deepEqual(warnings.map((e) => e.reason), [], 'no DNS warning for a config within the limits');
  });

  it('trims a dnsConfig over the nameserver limit to 3 with a DNSConfigForming warning', async () => {
    await apply(printingPod(namespace, 'dns-trim', '/etc/resolv.conf', {
      dnsPolicy: 'None',
      dnsConfig: { nameservers: ['192.0.2.1', '192.0.2.2', '192.0.2.3'], searches: ['c.example'] },
    }));
    // The API allows 3 nameservers for None; the host's servers of Default push a pod past it.
    await apply(printingPod(namespace, 'dns-trim-default', '/etc/resolv.conf', {
      dnsPolicy: 'Default',
      dnsConfig: { nameservers: ['192.0.2.1', '192.0.2.2', '192.0.2.3'] },
    }));
    const within = await finished(namespace, 'dns-trim');
    assert.equal(printed(within), 'search c.example\nnameserver 192.0.2.1\nnameserver 192.0.2.2\nnameserver 192.0.2.3\n');
    const pod = await finished(namespace, 'dns-trim-default');
    const host = await hostResolvConf();
    const servers = [...new Set([...host.servers, '192.0.2.1', '192.0.2.2', '192.0.2.3'])].slice(0, 3);
    assert.deepEqual((await sandboxDns(pod.metadata?.uid ?? ''))?.servers, servers);
    const forming = await eventually('the DNSConfigForming event', async () => {
      const found = (await podEvents(namespace, 'dns-trim-default')).filter((e) => e.reason === 'DNSConfigForming');
      return found.length > 0 ? found : undefined;
    });
    assert.equal(forming[0]?.type, 'Warning');
    assert.equal(forming[0]?.message, `Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${servers.join(' ')}`);
  });

  it('falls back to the host resolv.conf with a MissingClusterDNS warning for a ClusterFirst pod (no --cluster-dns)', async () => {
    await apply(printingPod(namespace, 'dns-default', '/etc/resolv.conf', {}));
    const pod = await finished(namespace, 'dns-default');
    assert.equal(pod.spec?.dnsPolicy, 'ClusterFirst', 'the API defaults the policy');
    const host = await hostResolvConf();
    const dns = await sandboxDns(pod.metadata?.uid ?? '');
    assert.deepEqual(dns, host, 'the sandbox carries the host resolver');
    assert.equal(printed(pod), resolvConfText(host));
    const missing = await eventually('the MissingClusterDNS event', async () => {
      const found = (await podEvents(namespace, 'dns-default')).filter((e) => e.reason === 'MissingClusterDNS');
      return found.length > 0 ? found : undefined;
    });
    assert.equal(missing.length, 1);
    assert.equal(missing[0]?.type, 'Warning');
    assert.equal(
      missing[0]?.message,
      `pod: "dns-default_${namespace}(${pod.metadata?.uid ?? ''})". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`,
    );
  });

  it('writes the managed /etc/hosts with the pod IP, its FQDN and the host aliases, and mounts it', async () => {
    await apply(printingPod(namespace, 'hosts-aliases', '/etc/hosts', {
      hostname: 'db',
      subdomain: 'backend',
      hostAliases: [{ ip: '192.0.2.10', hostnames: ['foo.local', 'bar.local'] }, { ip: '192.0.2.11', hostnames: ['baz.local'] }],
    }));
    const pod = await finished(namespace, 'hosts-aliases');
    const podIp = pod.status?.podIP ?? '';
    assert.match(podIp, /^\d+\.\d+\.\d+\.\d+$/);
    const want = [
      ...MANAGED_HOSTS_HEAD,
      `${podIp}\tdb.backend.${namespace}.svc.cluster.local\tdb`,
      '',
      '# Entries added by HostAliases.',
      '192.0.2.10\tfoo.local\tbar.local',
      '192.0.2.11\tbaz.local',
      '',
    ].join('\n');
    assert.equal(printed(pod), want);
    // The same file on the node, where the pod's directory keeps it.
    assert.equal(await readFile(path.join(agentRoot, 'pods', pod.metadata?.uid ?? '', 'etc-hosts'), 'utf8'), want);
  });

  it('gives a pod without subdomain its name line, and a host-network pod the node\'s hosts file plus aliases', async () => {
    await apply(printingPod(namespace, 'hosts-plain', '/etc/hosts', {}));
    await apply(printingPod(namespace, 'hosts-hostnet', '/etc/hosts', { hostNetwork: true, hostAliases: [{ ip: '192.0.2.12', hostnames: ['qux.local'] }] }));
    const plain = await finished(namespace, 'hosts-plain');
    assert.equal(printed(plain), [...MANAGED_HOSTS_HEAD, `${plain.status?.podIP ?? ''}\thosts-plain`, ''].join('\n'));
    const hostNet = await finished(namespace, 'hosts-hostnet');
    const nodeHosts = await readFile('/etc/hosts', 'utf8');
    assert.equal(printed(hostNet), `# Kubernetes-managed hosts file (host network).\n${nodeHosts}\n# Entries added by HostAliases.\n192.0.2.12\tqux.local\n`);
  });
  it('applies the NodeAgent\'s clusterDNS and clusterDomain to pods created after the change, and refuses a non-IP', async () => {
    const refused = await kubectl(['patch', 'nodeagent', NODE_NAME, '--type', 'merge', '-p', JSON.stringify({ spec: { clusterDNS: ['dns.example'] } })]).then(
      () => 'accepted',
      (error: unknown) => (typeof error === 'object' && error !== null && 'stderr' in error ? String(error.stderr) : String(error)),
    );
    assert.match(refused, /clusterDNS entries must be IP addresses/);
    // 10.215.0.10 is in the (blackholed) service range: nothing is sent to it, it only has to arrive.
    await patchNodeAgentSpec({ clusterDNS: ['10.215.0.10'], clusterDomain: 'e2e.example' });
    await waitNodeAgentSettingsApplied('the NodeAgent DNS settings applied');
    await apply(printingPod(namespace, 'dns-cluster', '/etc/resolv.conf', { hostname: 'web', subdomain: 'front' }));
    const pod = await finished(namespace, 'dns-cluster');
    const host = await hostResolvConf();
    const want = {
      servers: ['10.215.0.10'],
      searches: [...new Set([`${namespace}.svc.e2e.example`, 'svc.e2e.example', 'e2e.example', ...host.searches])],
      options: ['ndots:5'],
    };
    assert.deepEqual(await sandboxDns(pod.metadata?.uid ?? ''), want);
    assert.equal(printed(pod), resolvConfText(want));
    const hostsFile = await readFile(path.join(agentRoot, 'pods', pod.metadata?.uid ?? '', 'etc-hosts'), 'utf8');
    assert.ok(hostsFile.includes(`${pod.status?.podIP ?? ''}\tweb.front.${namespace}.svc.e2e.example\tweb\n`), hostsFile);
    assert.deepEqual((await podEvents(namespace, 'dns-cluster')).filter((e) => e.reason === 'MissingClusterDNS'), []);
    // Removing the fields returns to the flags: the next ClusterFirst pod falls back again.
    await patchNodeAgentSpec({ clusterDNS: null, clusterDomain: null });
    await waitNodeAgentSettingsApplied('the NodeAgent DNS settings removed');
    await apply(printingPod(namespace, 'dns-reverted', '/etc/resolv.conf', {}));
    const reverted = await finished(namespace, 'dns-reverted');
    assert.deepEqual(await sandboxDns(reverted.metadata?.uid ?? ''), host);
  });
});
