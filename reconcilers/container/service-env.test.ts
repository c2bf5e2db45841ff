import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Service, V1ServicePort } from '@kubernetes/client-node';
import { serviceEnvVars, variablesOfServices, visibleServices } from './service-env.js';

function svc(namespace: string, name: string, clusterIP: string | undefined, ports: V1ServicePort[] = [{ port: 80 }]): V1Service {
  return { metadata: { namespace, name }, spec: { ...(clusterIP === undefined ? {} : { clusterIP }), ports } };
}

const names = (services: readonly V1Service[]): string[] => services.map((s) => `${s.metadata?.namespace ?? ''}/${s.metadata?.name ?? ''}`);

describe('service environment variables (envvars.FromServices)', () => {
  it('names every variable as the kubelet does, in its order', () => {
    const service = svc('ns', 'my-svc', '10.96.0.10', [
      { name: 'http', port: 80, protocol: 'TCP' },
      { name: 'dns-udp', port: 53, protocol: 'UDP' },
    ]);
    assert.deepEqual(variablesOfServices([service]), [
      { key: 'MY_SVC_SERVICE_HOST', value: '10.96.0.10' },
      { key: 'MY_SVC_SERVICE_PORT', value: '80' },
      { key: 'MY_SVC_SERVICE_PORT_HTTP', value: '80' },
      { key: 'MY_SVC_SERVICE_PORT_DNS_UDP', value: '53' },
      { key: 'MY_SVC_PORT', value: 'tcp://10.96.0.10:80' },
      { key: 'MY_SVC_PORT_80_TCP', value: 'tcp://10.96.0.10:80' },
      { key: 'MY_SVC_PORT_80_TCP_PROTO', value: 'tcp' },
      { key: 'MY_SVC_PORT_80_TCP_PORT', value: '80' },
      { key: 'MY_SVC_PORT_80_TCP_ADDR', value: '10.96.0.10' },
      { key: 'MY_SVC_PORT_53_UDP', value: 'udp://10.96.0.10:53' },
      { key: 'MY_SVC_PORT_53_UDP_PROTO', value: 'udp' },
      { key: 'MY_SVC_PORT_53_UDP_PORT', value: '53' },
      { key: 'MY_SVC_PORT_53_UDP_ADDR', value: '10.96.0.10' },
    ]);
  });

  it('defaults the protocol to TCP, leaves unnamed ports out of _SERVICE_PORT_<NAME>, brackets IPv6', () => {
    const vars = Object.fromEntries(variablesOfServices([svc('ns', 'v6', 'fd00::a', [{ port: 8080 }])]).map((e) => [e.key, e.value]));
    assert.deepEqual(vars, {
      V6_SERVICE_HOST: 'fd00::a',
      V6_SERVICE_PORT: '8080',
      V6_PORT: 'tcp://[fd00::a]:8080',
      V6_PORT_8080_TCP: 'tcp://[fd00::a]:8080',
      V6_PORT_8080_TCP_PROTO: 'tcp',
      V6_PORT_8080_TCP_PORT: '8080',
      V6_PORT_8080_TCP_ADDR: 'fd00::a',
    });
  });

  it('skips services without a cluster IP (headless None, or empty)', () => {
    assert.deepEqual(variablesOfServices([svc('ns', 'headless', 'None'), svc('ns', 'pending', ''), svc('ns', 'absent', undefined)]), []);
  });
});

describe('which services a pod sees (getServiceEnvVarMap)', () => {
  const all = [
    svc('default', 'kubernetes', '10.96.0.1', [{ name: 'https', port: 443 }]),
    svc('default', 'web', '10.96.0.2'),
    svc('ns', 'db', '10.96.0.3'),
    svc('ns', 'headless', 'None'),
    svc('other', 'cache', '10.96.0.4'),
  ];

  it('its namespace with a cluster IP, plus the kubernetes service of default, sorted by name', () => {
    assert.deepEqual(names(visibleServices(all, 'ns', true)), ['ns/db', 'default/kubernetes']);
  });

  it('only the kubernetes service when enableServiceLinks is false', () => {
    assert.deepEqual(names(visibleServices(all, 'ns', false)), ['default/kubernetes']);
    assert.deepEqual(serviceEnvVars(all, 'ns', false).map((e) => e.key).filter((k) => !k.startsWith('KUBERNETES_')), []);
  });

  it("default's services (not only kubernetes) for a pod in default", () => {
    assert.deepEqual(names(visibleServices(all, 'default', true)), ['default/kubernetes', 'default/web']);
    assert.deepEqual(names(visibleServices(all, 'default', false)), ['default/kubernetes']);
  });

  it("a service of the pod's namespace named kubernetes wins over default's, in either list order", () => {
    const own = svc('ns', 'kubernetes', '10.96.0.99');
    for (const list of [[...all, own], [own, ...all]]) {
      const vars = Object.fromEntries(serviceEnvVars(list, 'ns', true).map((e) => [e.key, e.value]));
      assert.equal(vars.KUBERNETES_SERVICE_HOST, '10.96.0.99');
    }
    // With links off, the pod's own services are not seen at all: default's stays.
    const off = Object.fromEntries(serviceEnvVars([own, ...all], 'ns', false).map((e) => [e.key, e.value]));
    assert.equal(off.KUBERNETES_SERVICE_HOST, '10.96.0.1');
  });

  it('no master service without a cluster IP', () => {
    assert.deepEqual(serviceEnvVars([svc('default', 'kubernetes', 'None')], 'ns', false), []);
  });
});
