import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod, V1PodSpec } from '@kubernetes/client-node';
import type { DnsConfig } from '../../cri/types.js';
import { hostAliasEntries, isResolvConfError, managedHostsFileContent, nodeHostsFileContent, parseResolvConf, podHostName } from './host-files.js';

const LOCAL_LINES = [
  '# Kubernetes-managed hosts file.',
  '127.0.0.1\tlocalhost',
  '::1\tlocalhost ip6-localhost ip6-loopback',
  'fe00::0\tip6-localnet',
  'fe00::0\tip6-mcastprefix',
  'fe00::1\tip6-allnodes',
  'fe00::2\tip6-allrouters',
];

describe('parseResolvConf', () => {
  const cases: { name: string; text: string; want: DnsConfig }[] = [
    { name: 'empty file', text: '', want: { servers: [], searches: [], options: [] } },
    { name: 'one nameserver', text: 'nameserver 10.255.255.53\n', want: { servers: ['10.255.255.53'], searches: [], options: [] } },
    {
      name: 'nameservers accumulate; the last search and options lines win; comments and other keywords are skipped',
      text: '# generated\nsearch old.example\nnameserver 1.1.1.1\n  nameserver\t2.2.2.2  # trailing\noptions ndots:1\ndomain ignored.example\nsearch a.example b.example.\noptions ndots:2 rotate\n#nameserver 9.9.9.9\n',
      want: { servers: ['1.1.1.1', '2.2.2.2'], searches: ['a.example', 'b.example'], options: ['ndots:2', 'rotate'] },
    },
    { name: 'no trailing newline', text: 'search x.example\nnameserver ::1', want: { servers: ['::1'], searches: ['x.example'], options: [] } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(parseResolvConf(c.text), c.want);
    });
  }

  it('refuses a nameserver line without an address, as the kubelet', () => {
    assert.throws(() => parseResolvConf('nameserver\n'), (error: unknown) => isResolvConfError(error) && error.message === 'nameserver list is empty');
  });
});

describe('podHostName', () => {
  const pod = (spec: Partial<V1PodSpec>, name = 'web-0'): V1Pod => ({ metadata: { name, namespace: 'shop' }, spec: { containers: [], ...spec } });
  const cases: { name: string; pod: V1Pod; want: { hostname: string; domain: string } }[] = [
    { name: 'the pod name without hostname or subdomain', pod: pod({}), want: { hostname: 'web-0', domain: '' } },
    { name: 'spec.hostname over the pod name', pod: pod({ hostname: 'db' }), want: { hostname: 'db', domain: '' } },
    { name: 'a subdomain gives <subdomain>.<ns>.svc.<domain>', pod: pod({ hostname: 'db', subdomain: 'backend' }), want: { hostname: 'db', domain: 'backend.shop.svc.cluster.local' } },
    { name: 'a subdomain with the pod name', pod: pod({ subdomain: 'backend' }), want: { hostname: 'web-0', domain: 'backend.shop.svc.cluster.local' } },
    {
      name: 'a long pod name is cut to 63 characters without a trailing dash',
      pod: pod({}, `${'a'.repeat(62)}-tail`),
      want: { hostname: 'a'.repeat(62), domain: '' },
    },
    { name: 'hostnameOverride over hostname and subdomain, with no domain (1.37)', pod: pod({ hostname: 'db', subdomain: 'backend', hostnameOverride: 'override.example.host' }), want: { hostname: 'override.example.host', domain: '' } },
    { name: 'a long hostnameOverride is cut to 63 characters without a trailing dot', pod: pod({ hostnameOverride: `${'b'.repeat(62)}.tail` }), want: { hostname: 'b'.repeat(62), domain: '' } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(podHostName(c.pod, 'cluster.local'), c.want);
    });
  }
});

describe('the managed hosts file', () => {
  const cases: { name: string; ips: string[]; host: { hostname: string; domain: string }; aliases: { ip: string; hostnames?: string[] }[]; lines: string[] }[] = [
    {
      name: 'pod IP and host name',
      ips: ['10.214.0.7'],
      host: { hostname: 'web-0', domain: '' },
      aliases: [],
      lines: [...LOCAL_LINES, '10.214.0.7\tweb-0', ''],
    },
    {
      name: 'with a subdomain: the FQDN, then the short name',
      ips: ['10.214.0.7'],
      host: { hostname: 'db', domain: 'backend.shop.svc.cluster.local' },
      aliases: [],
      lines: [...LOCAL_LINES, '10.214.0.7\tdb.backend.shop.svc.cluster.local\tdb', ''],
    },
    {
      name: 'dual stack: one line per pod IP',
      ips: ['10.214.0.7', 'fd00::7'],
      host: { hostname: 'web-0', domain: '' },
      aliases: [],
      lines: [...LOCAL_LINES, '10.214.0.7\tweb-0', 'fd00::7\tweb-0', ''],
    },
    {
      name: 'host aliases after a blank line and the kubelet comment, names tab-separated',
      ips: ['10.214.0.7'],
      host: { hostname: 'web-0', domain: '' },
      aliases: [{ ip: '192.0.2.10', hostnames: ['foo.local', 'bar.local'] }, { ip: '192.0.2.11', hostnames: ['baz'] }],
      lines: [...LOCAL_LINES, '10.214.0.7\tweb-0', '', '# Entries added by HostAliases.', '192.0.2.10\tfoo.local\tbar.local', '192.0.2.11\tbaz', ''],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.equal(managedHostsFileContent(c.ips, c.host, c.aliases), c.lines.join('\n'));
    });
  }

  it('for the host network: the node\'s hosts file under its own header, then the aliases', () => {
    const node = '127.0.0.1 localhost\n127.0.0.1 vm\n';
    assert.equal(nodeHostsFileContent(node, []), `# Kubernetes-managed hosts file (host network).\n${node}`);
    assert.equal(
      nodeHostsFileContent(node, [{ ip: '192.0.2.10', hostnames: ['foo.local'] }]),
      `# Kubernetes-managed hosts file (host network).\n${node}\n# Entries added by HostAliases.\n192.0.2.10\tfoo.local\n`,
    );
  });

  it('adds nothing for no aliases', () => {
    assert.equal(hostAliasEntries([]), '');
  });
});
