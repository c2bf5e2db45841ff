/**
 * End to end: the service environment variables (enableServiceLinks). A Service gets a ClusterIP
 * from the service CIDR (no kube-proxy needed: only the variables are checked); pods print their
 * environment into the termination message. Asserted from the API (the message) and the runtime
 * (the env crictl reports for the container), for links on (the default) and off.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, apply, createNamespace, crictl, deleteNamespace, eventually, getPod, kubectl, requireCluster } from './helpers.js';

const PRINT_ENV = "env | grep -E '^[A-Z0-9_]+_(SERVICE_|PORT)' | sort > /dev/termination-log";

async function clusterIp(namespace: string, name: string): Promise<string> {
  return eventually(`service ${namespace}/${name} to have a cluster IP`, async () => {
    const ip = (await kubectl(['get', 'service', name, '-n', namespace, '-o', 'jsonpath={.spec.clusterIP}'])).trim();
    return ip === '' ? undefined : ip;
  });
}

async function finished(namespace: string, name: string): Promise<V1Pod> {
  return eventually(`pod ${name} finished`, async () => {
    const pod = await getPod(namespace, name);
    return pod?.status?.phase === 'Succeeded' || pod?.status?.phase === 'Failed' ? pod : undefined;
  });
}

function envLines(pod: V1Pod): Map<string, string> {
  const message = pod.status?.containerStatuses?.[0]?.state?.terminated?.message ?? '';
  return new Map(message.split('\n').filter((l) => l !== '').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

/** The env the runtime holds for the pod's only container (`crictl inspect` → info.config.envs). */
async function runtimeEnv(uid: string): Promise<Map<string, string>> {
  const id = (await crictl(['ps', '-a', '-q', '--label', `io.kubernetes.pod.uid=${uid}`])).trim();
  assert.ok(id !== '' && !id.includes('\n'), `one container in the runtime, got ${JSON.stringify(id)}`);
  const inspected = JSON.parse(await crictl(['inspect', '-o', 'json', id])) as { info?: { config?: { envs?: { key: string; value: string }[] } } };
  return new Map((inspected.info?.config?.envs ?? []).map((e) => [e.key, e.value]));
}

function pod(namespace: string, name: string, enableServiceLinks?: boolean): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      restartPolicy: 'Never',
      ...(enableServiceLinks === undefined ? {} : { enableServiceLinks }),
      containers: [{ name: 'main', image: 'busybox:1.35', command: ['sh', '-c', PRINT_ENV], env: [{ name: 'BACKEND_URL', value: 'http://$(BACKEND_SERVICE_HOST):$(BACKEND_SERVICE_PORT_HTTP)' }] }],
    },
  };
}

describe('service environment variables', () => {
  let namespace = '';
  let backendIp = '';
  let kubernetesIp = '';
  let kubernetesPort = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-svcenv');
    await apply({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'backend', namespace },
      spec: { selector: { app: 'none' }, ports: [{ name: 'http', port: 8080 }, { name: 'dns-udp', port: 53, protocol: 'UDP' }] },
    });
    await apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'headless', namespace }, spec: { clusterIP: 'None', selector: { app: 'none' }, ports: [{ port: 80 }] } });
    backendIp = await clusterIp(namespace, 'backend');
    kubernetesIp = await clusterIp('default', 'kubernetes');
    kubernetesPort = (await kubectl(['get', 'service', 'kubernetes', '-n', 'default', '-o', 'jsonpath={.spec.ports[0].port}'])).trim();
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it("gives a pod its namespace's services (not headless ones) and the kubernetes service, as the kubelet names them", async () => {
    await apply(pod(namespace, 'links'));
    const done = await finished(namespace, 'links');
    assert.equal(done.status?.phase, 'Succeeded');
    const env = envLines(done);
    const backend = Object.fromEntries([...env].filter(([k]) => k.startsWith('BACKEND_')));
    assert.deepEqual(backend, {
      BACKEND_PORT: `tcp://${backendIp}:8080`,
      BACKEND_PORT_53_UDP: `udp://${backendIp}:53`,
      BACKEND_PORT_53_UDP_ADDR: backendIp,
      BACKEND_PORT_53_UDP_PORT: '53',
      BACKEND_PORT_53_UDP_PROTO: 'udp',
      BACKEND_PORT_8080_TCP: `tcp://${backendIp}:8080`,
      BACKEND_PORT_8080_TCP_ADDR: backendIp,
      BACKEND_PORT_8080_TCP_PORT: '8080',
      BACKEND_PORT_8080_TCP_PROTO: 'tcp',
      BACKEND_SERVICE_HOST: backendIp,
      BACKEND_SERVICE_PORT: '8080',
      BACKEND_SERVICE_PORT_DNS_UDP: '53',
      BACKEND_SERVICE_PORT_HTTP: '8080',
    });
    assert.equal(env.get('KUBERNETES_SERVICE_HOST'), kubernetesIp);
    assert.equal(env.get('KUBERNETES_SERVICE_PORT'), kubernetesPort);
    assert.ok(![...env.keys()].some((k) => k.startsWith('HEADLESS_')), 'a headless service gives no variables');
    // The runtime got them (and the $(VAR) expansion that refers to them).
    const runtime = await runtimeEnv(done.metadata?.uid ?? '');
    assert.equal(runtime.get('BACKEND_SERVICE_HOST'), backendIp);
    assert.equal(runtime.get('KUBERNETES_SERVICE_HOST'), kubernetesIp);
    assert.equal(runtime.get('BACKEND_URL'), `http://${backendIp}:8080`);
    console.log(`service variables seen by the container: ${env.size} (backend ${Object.keys(backend).length}, runtime env entries ${runtime.size})`);
  });

  it('gives only the KUBERNETES_ variables with enableServiceLinks false', async () => {
    await apply(pod(namespace, 'no-links', false));
    const done = await finished(namespace, 'no-links');
    assert.equal(done.status?.phase, 'Succeeded');
    const env = envLines(done);
    assert.deepEqual([...env.keys()].filter((k) => !k.startsWith('KUBERNETES_')), []);
    assert.equal(env.get('KUBERNETES_SERVICE_HOST'), kubernetesIp);
    const runtime = await runtimeEnv(done.metadata?.uid ?? '');
    assert.equal(runtime.get('BACKEND_SERVICE_HOST'), undefined);
    assert.equal(runtime.get('KUBERNETES_SERVICE_HOST'), kubernetesIp);
    // An unresolvable $(VAR) stays as written, as in the kubelet.
    assert.equal(runtime.get('BACKEND_URL'), 'http://$(BACKEND_SERVICE_HOST):$(BACKEND_SERVICE_PORT_HTTP)');
  });
});
