import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod, V1PodSpec } from '@kubernetes/client-node';
import type { DnsConfig } from '../../cri/types.js';
import { computePodDns, fitNameservers, fitSearches, mergeDnsOptions, type ClusterDnsSettings, type PodDnsInput } from './pod-dns.js';

const HOST: DnsConfig = { servers: ['10.255.255.53', '10.255.255.54'], searches: ['corp.example', 'example'], options: ['ndots:2', 'rotate'] };
const CLUSTER: ClusterDnsSettings = { servers: ['10.215.0.10'], domain: 'cluster.local' };
const NO_CLUSTER: ClusterDnsSettings = { servers: [], domain: 'cluster.local' };
const MISSING = 'pod: "web_shop(uid-1)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.';

function pod(spec: Partial<V1PodSpec> = {}): V1Pod {
  return { metadata: { name: 'web', namespace: 'shop', uid: 'uid-1' }, spec: { containers: [{ name: 'main' }], ...spec } };
}

function input(spec: Partial<V1PodSpec>, extra: Partial<PodDnsInput> = {}): PodDnsInput {
  return { pod: pod(spec), cluster: CLUSTER, host: HOST, nodeIp: '10.213.0.1', ...extra };
}

describe('computePodDns: the policies', () => {
  const cases: { name: string; input: PodDnsInput; config: DnsConfig; events?: string[] }[] = [
    {
      name: 'ClusterFirst (the default): cluster servers, cluster searches before the host\'s, ndots:5 (host options dropped)',
      input: input({}),
      config: { servers: ['10.215.0.10'], searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example', 'example'], options: ['ndots:5'] },
    },
    {
      name: 'ClusterFirst spelled out, with two cluster servers and an empty cluster domain: no cluster searches',
      input: input({ dnsPolicy: 'ClusterFirst' }, { cluster: { servers: ['10.215.0.10', '10.215.0.11'], domain: '' } }),
      config: { servers: ['10.215.0.10', '10.215.0.11'], searches: ['corp.example', 'example'], options: ['ndots:5'] },
    },
    {
      name: 'ClusterFirst with a host search equal to a cluster one: listed once',
      input: input({}, { host: { servers: ['1.1.1.1'], searches: ['cluster.local', 'x.example'], options: [] } }),
      config: { servers: ['10.215.0.10'], searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'x.example'], options: ['ndots:5'] },
    },
    {
      name: 'ClusterFirst without cluster DNS: the host resolver and a MissingClusterDNS warning',
      input: input({}, { cluster: NO_CLUSTER }),
      config: HOST,
      events: [`MissingClusterDNS: ${MISSING}`],
    },
    {
      name: 'ClusterFirst on the host network: the host resolver, no warning',
      input: input({ hostNetwork: true }),
      config: HOST,
    },
    {
      name: 'ClusterFirstWithHostNet on the host network: the cluster resolver',
      input: input({ hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' }),
      config: { servers: ['10.215.0.10'], searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example', 'example'], options: ['ndots:5'] },
    },
    {
      name: 'ClusterFirstWithHostNet without cluster DNS: falls back with the warning',
      input: input({ hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' }, { cluster: NO_CLUSTER }),
      config: HOST,
      events: [`MissingClusterDNS: ${MISSING}`],
    },
    {
      name: 'Default: the host resolver as it is, even with cluster DNS',
      input: input({ dnsPolicy: 'Default' }),
      config: HOST,
    },
    {
      name: 'Default with resolv.conf disabled: the local resolver and search "."',
      input: input({ dnsPolicy: 'Default' }, { host: undefined }),
      config: { servers: ['127.0.0.1'], searches: ['.'], options: [] },
    },
    {
      name: 'Default with resolv.conf disabled on an IPv6 node: ::1',
      input: input({ dnsPolicy: 'Default' }, { host: undefined, nodeIp: 'fd00::1' }),
      config: { servers: ['::1'], searches: ['.'], options: [] },
    },
    {
      name: 'ClusterFirst with cluster DNS and resolv.conf disabled: only the cluster searches',
      input: input({}, { host: undefined }),
      config: { servers: ['10.215.0.10'], searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local'], options: ['ndots:5'] },
    },
    {
      name: 'None without dnsConfig: nothing at all',
      input: input({ dnsPolicy: 'None' }),
      config: { servers: [], searches: [], options: [] },
    },
    {
      name: 'None with dnsConfig: exactly the pod\'s',
      input: input({ dnsPolicy: 'None', dnsConfig: { nameservers: ['192.0.2.53'], searches: ['a.example', 'b.example'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }] } }),
      config: { servers: ['192.0.2.53'], searches: ['a.example', 'b.example'], options: ['ndots:2', 'edns0'] },
    },
    {
      name: 'ClusterFirst plus dnsConfig: appended without duplicates, ndots overridden by the pod',
      input: input({ dnsConfig: { nameservers: ['10.215.0.10', '192.0.2.53'], searches: ['svc.cluster.local', 'extra.example'], options: [{ name: 'ndots', value: '1' }, { name: 'timeout', value: '3' }] } }),
      config: {
        servers: ['10.215.0.10', '192.0.2.53'],
        searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example', 'example', 'extra.example'],
        options: ['ndots:1', 'timeout:3'],
      },
    },
    {
      name: 'Default plus dnsConfig over the nameserver limit: trimmed to 3 with a DNSConfigForming warning',
      input: input({ dnsPolicy: 'Default', dnsConfig: { nameservers: ['192.0.2.1', '192.0.2.2'] } }),
      config: { servers: ['10.255.255.53', '10.255.255.54', '192.0.2.1'], searches: ['corp.example', 'example'], options: ['ndots:2', 'rotate'] },
      events: ['DNSConfigForming: Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.255.255.53 10.255.255.54 192.0.2.1'],
    },
    {
      name: 'an unknown policy is treated as ClusterFirst',
      input: input({ dnsPolicy: 'Bogus' }),
      config: { servers: ['10.215.0.10'], searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example', 'example'], options: ['ndots:5'] },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const result = computePodDns(c.input);
      assert.deepEqual(result.config, c.config);
      assert.deepEqual(result.events.map((e) => `${e.reason}: ${e.message}`), c.events ?? []);
      assert.ok(result.events.every((e) => e.type === 'Warning'));
    });
  }
});

describe('mergeDnsOptions', () => {
  const cases: { name: string; base: string[]; pod: { name: string; value?: string }[]; want: string[] }[] = [
    { name: 'no pod options keeps the base', base: ['ndots:5'], pod: [], want: ['ndots:5'] },
    { name: 'the pod value wins, in the base position', base: ['ndots:5', 'rotate'], pod: [{ name: 'ndots', value: '2' }], want: ['ndots:2', 'rotate'] },
    { name: 'a pod option without value drops the base value', base: ['ndots:5'], pod: [{ name: 'ndots' }], want: ['ndots'] },
    { name: 'new names are appended', base: ['rotate'], pod: [{ name: 'edns0' }, { name: 'attempts', value: '3' }], want: ['rotate', 'edns0', 'attempts:3'] },
    { name: 'a duplicate in the pod: the later wins', base: [], pod: [{ name: 'ndots', value: '1' }, { name: 'ndots', value: '4' }], want: ['ndots:4'] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(mergeDnsOptions(c.base, c.pod), c.want);
    });
  }
});

describe('the resolver limits', () => {
  const domains = (n: number, length = 10): string[] => Array.from({ length: n }, (_, i) => `${String(i).padStart(3, '0')}${'x'.repeat(length - 3)}`);

  it('keeps 3 nameservers as they are and trims a fourth', () => {
    assert.deepEqual(fitNameservers(['a', 'b', 'c']), { servers: ['a', 'b', 'c'] });
    const trimmed = fitNameservers(['a', 'b', 'c', 'd']);
    assert.deepEqual(trimmed.servers, ['a', 'b', 'c']);
    assert.equal(trimmed.event?.message, 'Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: a b c');
  });

  it('keeps 32 search domains and drops the 33rd with a warning', () => {
    assert.deepEqual(fitSearches(domains(32)), { searches: domains(32) });
    const trimmed = fitSearches(domains(33));
    assert.deepEqual(trimmed.searches, domains(32));
    assert.equal(trimmed.event?.reason, 'DNSConfigForming');
    assert.equal(trimmed.event?.message, `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${domains(32).join(' ')}`);
  });

  it('drops domains longer than 253 characters wherever they are', () => {
    const long = 'l'.repeat(254);
    const trimmed = fitSearches(['a.example', long, 'b.example']);
    assert.deepEqual(trimmed.searches, ['a.example', 'b.example']);
    assert.ok(trimmed.event !== undefined);
    assert.deepEqual(fitSearches(['m'.repeat(253)]), { searches: ['m'.repeat(253)] });
  });

  it('cuts domains from the end until the search line is at most 2048 characters', () => {
    // 20 domains of 100 characters: 20*100 + 19 spaces = 2019 fit; 21 (2120) do not.
    assert.deepEqual(fitSearches(domains(20, 100)).event, undefined);
    const trimmed = fitSearches(domains(25, 100));
    assert.deepEqual(trimmed.searches, domains(20, 100));
    assert.equal(trimmed.searches.join(' ').length, 2019);
    assert.match(trimmed.event?.message ?? '', /^Search Line limits were exceeded/);
    // A line of exactly 2048 characters is kept: 19 domains of 100 and their spaces (1919), then one of 129.
    const exact = [...domains(19, 100), 'e'.repeat(2048 - 19 * 101)];
    assert.ok(exact.every((d) => d.length <= 253));
    assert.equal(exact.join(' ').length, 2048);
    assert.deepEqual(fitSearches(exact), { searches: exact });
  });

  it('reports one DNSConfigForming per trimmed line when both overflow through dnsConfig', () => {
    const result = computePodDns({
      pod: pod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1', '2.2.2.2', '3.3.3.3', '4.4.4.4'], searches: domains(40) } }),
      cluster: CLUSTER,
      host: HOST,
      nodeIp: '10.213.0.1',
    });
    assert.deepEqual(result.config.servers, ['1.1.1.1', '2.2.2.2', '3.3.3.3']);
    assert.equal(result.config.searches.length, 32);
    assert.deepEqual(result.events.map((e) => e.reason), ['DNSConfigForming', 'DNSConfigForming']);
  });
});
