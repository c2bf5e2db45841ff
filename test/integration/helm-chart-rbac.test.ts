/**
 * The chart's RBAC is enough, and no more: the agent works as its Node (CN=system:node:<node>,
 * O=system:nodes), so what it may do is the Node authorizer's rules, NodeRestriction, and what the
 * chart adds for nodes (its own NodeAgent, confined by the chart's admission policy). The chart's
 * rbac.yaml is rendered by `helm template` and applied to the test cluster; a client certificate for
 * the node is issued by the controller-manager's kubelet client signer (the request approved with
 * kubectl here: approval itself is test/e2e/node-isolation.test.ts's); then nodelet's own modules
 * run with that certificate and make every API call the agent makes: register a Node (with the
 * chart's label and taint), post its status, create its Lease and renew it, register again as a
 * restarted agent does, adopting the existing Node and updating its labels, list and watch its
 * pods, list and watch services (the service environment variables), write pod status and events
 * (create, then a count patch), read configmaps and secrets its pod references, read persistent
 * volume claims and volumes, request a service account token, delete a pod, read, create, watch
 * and report on its NodeAgent, and review a token and an access as the node server does. Each step
 * asserts its effect on the server. Calls outside a node's rights must be forbidden; the agent's
 * ServiceAccount itself can do nothing but ask for a certificate.
 *
 * Everything is named `rbac-<random>` and removed afterwards; the registered Node carries the
 * nodelet.dev/agent NoSchedule taint (nothing else is scheduled onto it) and lives for seconds.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  NodeV1Api,
  PatchStrategy,
  setHeaderOptions,
  Watch,
  type CoreV1Event,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { isForbidden, isNotFound } from '../../util/api-errors.js';
import { systemClock } from '../../util/clock.js';
import { createHostInfo } from '../../controllers/node/host-info.js';
import { NODE_LEASE_NAMESPACE } from '../../controllers/node/lease.js';
import { createNodeAgentApi } from '../../controllers/nodeagent/api.js';
import { newNodeAgent } from '../../controllers/nodeagent/types.js';
import { createNodeController, type NodeController } from '../../controllers/node/node-controller.js';
import { createPodSource, type PodSource } from '../../controllers/pod-sources/api-source.js';
import { createApiRuntimeHandlers } from '../../controllers/runtimeclass/api-runtime-handlers.js';
import { isRuntimeClassNotFound } from '../../reconcilers/container/runtime-handlers.js';
import { createServiceSource, SERVICE_FIELD_SELECTOR } from '../../controllers/services/service-source.js';
import { ApiEventRecorder } from '../../reconcilers/events/api-event-recorder.js';
import { StatusManager, podStatusApi, statusPatch } from '../../reconcilers/status/status-manager.js';
import { ContainerReadinessStore } from '../../reconcilers/probes/container-readiness.js';
import { createVolumeSourceApi } from '../../reconcilers/volumes/api.js';
import { apiAccessReviewer, apiTokenReviewer } from '../../server/api-reviewers.js';
import { helm, CHART_DIR } from './helm-chart-helpers.js';
import { KubeClient } from '../../kube/client.js';
import { CoreV1Client } from '../../kube/core-v1.js';
import { loadKubeconfigFile } from '../../kube/kubeconfig.js';
import { KubeTransport } from '../../kube/transport.js';
import { makeCsr } from '../../kube/certificates/csr.js';
import type { CertificateAndKey } from '../../kube/certificates/x509.js';
import { CLIENT_SIGNER, CLIENT_USAGES } from '../../kube/node-identity.js';
import { podEventsTo } from '../doubles/pod-events.js';

const run = promisify(execFile);
const logger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });

async function kubectl(args: readonly string[], input?: string): Promise<string> {
  const child = run('kubectl', [...args], { maxBuffer: 16 * 1024 * 1024, timeout: 120_000 });
  if (input !== undefined) child.child.stdin?.end(input);
  return (await child).stdout;
}

/** Polls `read` until it yields a value; fails naming `what` after `timeoutMs`. */
async function eventually<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

/** The registration and heartbeat the agent runs, with the chart's label and taint (and `labels`). */
function nodeController(kube: KubeClient, nodeName: string, labels: Record<string, string> = {}): NodeController {
  return createNodeController({
    kube,
    nodeName,
    nodeIp: '127.0.0.1',
    hostInfo: createHostInfo({ rootDir: os.tmpdir() }),
    runtime: {
      version: () => Promise.resolve({ runtimeName: 'containerd', runtimeVersion: '1.6.20~ds1' }),
      readiness: () => Promise.resolve({ ready: true, reason: '', message: '' }),
    },
    logger,
    labels: { 'nodelet.dev/agent': 'true', ...labels },
    taints: [{ key: 'nodelet.dev/agent', value: 'true', effect: 'NoSchedule' }],
    // Renewals every half second, so the test sees the lease updated, not only created.
    leasePeriodMs: 500,
  });
}

/** A kubeconfig for the same API server as the admin's, authenticated by `user` (a token or a certificate). */
function userKubeConfig(admin: KubeConfig, user: { token: string } | { certData: string; keyData: string }): KubeConfig {
  const cluster = admin.getCurrentCluster();
  assert.ok(cluster !== null, 'the admin kubeconfig has no current cluster');
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'nodelet', ...user }],
    contexts: [{ name: 'nodelet', cluster: cluster.name, user: 'nodelet' }],
    currentContext: 'nodelet',
  });
  return kubeConfig;
}

/** The agent's own client to the admin kubeconfig's API server, with the node's certificate. */
function nodeKubeClient(adminKubeconfig: string, pair: CertificateAndKey): KubeClient {
  const { server, ca, insecureSkipTlsVerify } = loadKubeconfigFile(adminKubeconfig);
  return new KubeClient(new KubeTransport({ server, insecureSkipTlsVerify, clientCert: { data: Buffer.from(pair.certPem) }, clientKey: { data: Buffer.from(pair.keyPem) }, ...(ca === undefined ? {} : { ca }) }));
}

/** A client certificate for `nodeName` from the controller-manager's kubelet client signer. */
async function nodeCertificate(nodeName: string, csrName: string): Promise<CertificateAndKey> {
  const { csrPem, keyPem } = makeCsr({ subject: { commonName: `system:node:${nodeName}`, organizations: ['system:nodes'] }, altNames: [] });
  const csr = {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name: csrName },
    spec: { request: Buffer.from(csrPem).toString('base64'), signerName: CLIENT_SIGNER, usages: [...CLIENT_USAGES] },
  };
  await kubectl(['apply', '-f', '-'], JSON.stringify(csr));
  await kubectl(['certificate', 'approve', csrName]);
  const certificate = await eventually('the node certificate', async () => {
    const issued = (await kubectl(['get', 'csr', csrName, '-o', 'jsonpath={.status.certificate}'])).trim();
    return issued === '' ? undefined : issued;
  });
  return { certPem: Buffer.from(certificate, 'base64').toString('utf8'), keyPem };
}

async function rejectsForbidden(what: string, call: () => Promise<unknown>): Promise<void> {
  await assert.rejects(call, (err: unknown) => isForbidden(err), `${what} was not forbidden`);
}

describe("the chart's RBAC, used by nodelet's own modules", () => {
  const suffix = randomBytes(3).toString('hex');
  const namespace = `rbac-${suffix}`;
  const release = `rbac-${suffix}`;
  const serviceAccount = `${release}-nodelet`;
  const nodeName = `rbac-${suffix}-nodelet`;
  const admin = new KubeConfig();
  const csrName = `rbac-${suffix}-client`;
  let rbacManifest = '';
  let serviceAccountToken = '';
  let agentConfig: KubeConfig;
  /** The same service-account token through the agent's own client, for the code under test. */
  let agentKube: KubeClient;
  let adminCore: CoreV1Api;
  let controller: NodeController | undefined;
  let source: PodSource | undefined;
  /** Why the pod source reported each pod UID, in order. */
  const seenPods = new Map<string, string[]>();
  let pod: V1Pod;

  before(async () => {
    assert.ok(process.env.KUBECONFIG !== undefined, 'KUBECONFIG is not set: run `npm run cluster:up` and `source .cluster/env`');
    admin.loadFromFile(process.env.KUBECONFIG);
    adminCore = admin.makeApiClient(CoreV1Api);
    const rendered = await helm(['template', release, CHART_DIR, '--namespace', namespace, '--show-only', 'templates/serviceaccount.yaml', '--show-only', 'templates/rbac.yaml']);
    assert.equal(rendered.code, 0, rendered.stderr);
    rbacManifest = rendered.stdout;
    await kubectl(['create', 'namespace', namespace]);
    await kubectl(['apply', '-f', '-'], rbacManifest);
    serviceAccountToken = (await kubectl(['create', 'token', serviceAccount, '-n', namespace, '--duration=10m'])).trim();
    const pair = await nodeCertificate(nodeName, csrName);
    agentConfig = userKubeConfig(admin, { certData: Buffer.from(pair.certPem).toString('base64'), keyData: Buffer.from(pair.keyPem).toString('base64') });
    agentKube = nodeKubeClient(process.env.KUBECONFIG, pair);
    await kubectl(['create', 'configmap', 'cm', '-n', namespace, '--from-literal=k=v']);
    await kubectl(['create', 'secret', 'generic', 'sec', '-n', namespace, '--from-literal=k=v']);
    await eventually('the default service account', () => kubectl(['get', 'serviceaccount', 'default', '-n', namespace]));
  });

  after(async () => {
    source?.stop();
    await controller?.stop();
    const leases = admin.makeApiClient(CoordinationV1Api);
    await leases.deleteNamespacedLease({ name: nodeName, namespace: NODE_LEASE_NAMESPACE }).catch(() => undefined);
    await adminCore.deleteNode({ name: nodeName }).catch(() => undefined);
    await kubectl(['delete', 'nodeagent', nodeName, '--ignore-not-found']).catch(() => undefined);
    await kubectl(['delete', 'csr', csrName, '--ignore-not-found']).catch(() => undefined);
    if (rbacManifest !== '') await kubectl(['delete', '-f', '-', '--ignore-not-found'], rbacManifest).catch(() => undefined);
    await kubectl(['delete', 'namespace', namespace, '--wait=false', '--ignore-not-found']).catch(() => undefined);
  });

  it('registers the Node with the chart label and taint, posts its status, creates its lease and renews it', async () => {
    controller = nodeController(agentKube, nodeName);
    controller.start();
    const node = await eventually('the Node to be Ready', async () => {
      const current: V1Node = await adminCore.readNode({ name: nodeName });
      return current.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true ? current : undefined;
    });
    assert.equal(node.metadata?.labels?.['nodelet.dev/agent'], 'true');
    assert.ok(node.spec?.taints?.some((t) => t.key === 'nodelet.dev/agent' && t.value === 'true' && t.effect === 'NoSchedule'));
    const leases = admin.makeApiClient(CoordinationV1Api);
    const created = await eventually('the Lease', () => leases.readNamespacedLease({ name: nodeName, namespace: NODE_LEASE_NAMESPACE }));
    assert.equal(created.spec?.holderIdentity, nodeName);
    // Renewed by update: a later read shows a newer renewTime (creation alone never moves it).
    const renewedAt = (l: typeof created): number => new Date(l.spec?.renewTime ?? 0).getTime();
    await eventually('the Lease to be renewed', async () => {
      const current = await leases.readNamespacedLease({ name: nodeName, namespace: NODE_LEASE_NAMESPACE });
      return renewedAt(current) > renewedAt(created) && current.metadata?.resourceVersion !== created.metadata?.resourceVersion ? current : undefined;
    });
    await eventually('the controller to be healthy', () => Promise.resolve(controller?.healthy() === true ? true : undefined));
  });

  it('registers again as a restarted agent: adopts the existing Node and patches the labels it owns', async () => {
    const before = await adminCore.readNode({ name: nodeName });
    await controller?.stop();
    controller = nodeController(agentKube, nodeName, { 'nodelet.dev/rbac-check': 'restarted' });
    controller.start();
    const adopted = await eventually('the new label on the existing Node', async () => {
      const current = await adminCore.readNode({ name: nodeName });
      return current.metadata?.labels?.['nodelet.dev/rbac-check'] === 'restarted' ? current : undefined;
    });
    assert.equal(adopted.metadata?.uid, before.metadata?.uid, 'the same Node object, not a new one');
    assert.equal(adopted.metadata?.labels?.['nodelet.dev/agent'], 'true');
    await eventually('the restarted controller to be healthy', () => Promise.resolve(controller?.healthy() === true ? true : undefined));
  });

  it('lists and watches the pods bound to its Node', async () => {
    source = createPodSource({ kube: agentKube, nodeName, logger, podEvents: podEventsTo((ref, reason) => seenPods.set(ref.uid, [...(seenPods.get(ref.uid) ?? []), reason])) });
    await source.start();
    assert.equal(source.synced(), true);
    pod = await adminCore.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'bound', namespace },
        spec: {
          nodeName,
          tolerations: [{ key: 'nodelet.dev/agent', operator: 'Exists' }],
          containers: [{ name: 'main', image: 'busybox:1.35' }],
          // What the node may read is what its pods reference (the Node authorizer's graph).
          volumes: [
            { name: 'cm', configMap: { name: 'cm' } },
            { name: 'sec', secret: { secretName: 'sec' } },
            { name: 'claim', persistentVolumeClaim: { claimName: 'claim' } },
          ],
        },
      },
    });
    const uid = pod.metadata?.uid ?? '';
    await eventually('the watch to deliver the pod', () => Promise.resolve(seenPods.has(uid) ? true : undefined));
    // By the watch ('added'), not by a relist after the watch failed: a source that cannot watch
    // still finds new pods, one relist at a time.
    const reasons = seenPods.get(uid) ?? [];
    assert.ok(reasons[0] === 'added' && !reasons.includes('relisted'), `reported as ${reasons.join(', ')}`);
    assert.equal(source.healthy(), true, 'the pod watch is up');
    // Before tearing down a pod its cache lacks, the source asks the API server itself.
    assert.equal(await source.confirmAbsent!({ uid, namespace, name: 'bound' }), false, 'the API server has the pod');
    assert.equal(await source.confirmAbsent!({ uid: 'not-this-one', namespace, name: 'bound' }), true, 'another UID under the name');
  });

  it('lists and watches the services, for the service environment variables', async () => {
    // The watch verb on its own: a refused watch would still find the service by relisting.
    const watchEnd = await new Promise<unknown>((resolve) => {
      void new Watch(agentConfig)
        .watch('/api/v1/services', { fieldSelector: SERVICE_FIELD_SELECTOR, timeoutSeconds: 1 }, () => undefined, (err: unknown) => { resolve(err ?? 'ended cleanly'); })
        .catch((err: unknown) => { resolve(err); });
    });
    assert.equal(watchEnd, 'ended cleanly', `the service watch was refused: ${String(watchEnd)}`);
    const services = createServiceSource({ kube: agentKube, logger });
    assert.equal(services.hasSynced(), false, 'not synced before its first list');
    try {
      await services.start();
      assert.equal(services.hasSynced(), true, 'the first list succeeded');
      assert.ok(services.list().some((s) => s.metadata?.namespace === 'default' && s.metadata.name === 'kubernetes'));
      await adminCore.createNamespacedService({ namespace, body: { metadata: { name: 'svc' }, spec: { ports: [{ port: 80 }] } } });
      await eventually('the watch to deliver the service', () => Promise.resolve(services.list().some((s) => s.metadata?.namespace === namespace) ? true : undefined));
    } finally {
      services.stop();
    }
  });

  it('reads RuntimeClasses by name, for the runtime handler of a sandbox', async () => {
    const handlers = createApiRuntimeHandlers(agentKube);
    const name = `rbac-${namespace}`;
    await admin.makeApiClient(NodeV1Api).createRuntimeClass({ body: { metadata: { name }, handler: 'runc' } });
    try {
      assert.equal(await handlers.handlerOf(name), 'runc');
    } finally {
      await admin.makeApiClient(NodeV1Api).deleteRuntimeClass({ name });
    }
    await assert.rejects(handlers.handlerOf(`${name}-absent`), (e: unknown) => isRuntimeClassNotFound(e));
  });

  it('writes pod status and events, and reads what pod volumes need', async () => {
    const core = new CoreV1Client(agentKube);
    // The status manager's own API calls (it swallows failures to retry them; this must not fail).
    const target = { namespace: pod.metadata?.namespace ?? '', name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' };
    await podStatusApi(core).patchStatus(target, statusPatch(target.uid, { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }], message: 'rbac test' }));
    const patched = await adminCore.readNamespacedPod({ name: 'bound', namespace });
    assert.equal(patched.status?.message, 'rbac test');

    // Two identical events within the aggregation window: a create, then a count patch.
    const events = new ApiEventRecorder({ core, nodeName, clock: systemClock, logger });
    events.record(pod, { type: 'Normal', reason: 'RbacCheck', message: 'checking' });
    events.record(pod, { type: 'Normal', reason: 'RbacCheck', message: 'checking' });
    await events.flush();
    const list = await adminCore.listNamespacedEvent({ namespace, fieldSelector: 'reason=RbacCheck' });
    assert.deepEqual(list.items.map((e: CoreV1Event) => e.count), [2]);

    const volumes = createVolumeSourceApi(agentKube);
    // The authorizer learns the pod's references from a watch: the first read may come before it.
    await eventually('the pod\'s ConfigMap readable by its node', () => volumes.readConfigMap(namespace, 'cm'));
    assert.equal((await volumes.readConfigMap(namespace, 'cm'))?.data?.k, 'v');
    assert.equal(Buffer.from((await volumes.readSecret(namespace, 'sec'))?.data?.k ?? '', 'base64').toString(), 'v');
    const token = await volumes.requestServiceAccountToken({
      namespace,
      serviceAccountName: 'default',
      expirationSeconds: 600,
      podName: 'bound',
      podUid: pod.metadata?.uid ?? '',
    });
    assert.ok(token.token.length > 0);

    // persistentVolumeClaim volumes: the claim, then its PV (reconcilers/volumes/persistent-volume.ts).
    const pvName = `rbac-pv-${namespace}`;
    await adminCore.createPersistentVolume({ body: { metadata: { name: pvName }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: pvName, hostPath: { path: '/tmp/nodelet-rbac-pv' } } } });
    try {
      await adminCore.createNamespacedPersistentVolumeClaim({ namespace, body: { metadata: { name: 'claim' }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: pvName, resources: { requests: { storage: '1Gi' } } } } });
      assert.equal((await eventually('the claim readable by the node', () => volumes.readPersistentVolumeClaim(namespace, 'claim')))?.metadata?.name, 'claim');
      // Readable once the claim is bound to it (the graph's claim → volume edge).
      assert.equal((await eventually('the bound volume readable by the node', () => volumes.readPersistentVolume(pvName)))?.metadata?.name, pvName);
    } finally {
      await adminCore.deletePersistentVolume({ name: pvName });
    }
  });

  it('deletes a finished pod with a UID precondition', async () => {
    await new StatusManager({ api: podStatusApi(new CoreV1Client(agentKube)), clock: systemClock, logger, readiness: new ContainerReadinessStore() }).deletePod(pod);
    await eventually('the pod to be gone', async () => {
      try {
        await adminCore.readNamespacedPod({ name: 'bound', namespace });
        return undefined;
      } catch (err: unknown) {
        return isNotFound(err) ? true : undefined;
      }
    });
  });

  it('creates its NodeAgent, watches it and reports its status', async () => {
    const api = createNodeAgentApi(agentKube);
    assert.equal(await api.get(nodeName), undefined);
    const created = await api.create(newNodeAgent(nodeName));
    const events: string[] = [];
    const watch = await api.watch(
      { name: nodeName, resourceVersion: created.metadata.resourceVersion ?? '', timeoutSeconds: 30 },
      { onEvent: (type) => events.push(type), onEnd: (err) => events.push(`end:${String(err)}`) },
    );
    try {
      const reported = await api.replaceStatus({ ...created, status: { nodeName } });
      assert.equal(reported.status?.nodeName, nodeName);
      await eventually('the watch to see the status change', () => Promise.resolve(events.includes('MODIFIED') ? true : undefined));
    } finally {
      watch.stop();
    }
    assert.equal((await api.get(nodeName))?.status?.nodeName, nodeName);
  });

  it("asks the API server as the node server does: TokenReview and SubjectAccessReview", async () => {
    const tokens = apiTokenReviewer(agentKube);
    const reviewerToken = (await kubectl(['create', 'token', 'default', '-n', namespace, '--duration=10m'])).trim();
    const user = await tokens.review(reviewerToken);
    assert.equal(user?.name, `system:serviceaccount:${namespace}:default`);
    assert.ok(user?.groups.includes('system:serviceaccounts'), JSON.stringify(user));
    assert.equal(await tokens.review('not-a-token'), undefined);
    const access = apiAccessReviewer(agentKube);
    const ask = { verb: 'get', subresource: 'proxy', node: nodeName };
    assert.equal(await access.allowed({ ...ask, user: { name: 'someone', groups: ['system:masters'] } }), true);
    assert.equal(await access.allowed({ ...ask, user }), false);
  });

  it("is refused what is not its node's", async () => {
    const core = agentConfig.makeApiClient(CoreV1Api);
    await rejectsForbidden('listing secrets', () => core.listNamespacedSecret({ namespace }));
    await rejectsForbidden('deleting another Node', () => core.deleteNode({ name: `${nodeName}-other` }));
    await rejectsForbidden('creating a pod', () => core.createNamespacedPod({ namespace, body: { metadata: { name: 'x' }, spec: { containers: [{ name: 'c', image: 'busybox:1.35' }] } } }));
    await rejectsForbidden('a lease outside kube-node-lease', () =>
      agentConfig.makeApiClient(CoordinationV1Api).createNamespacedLease({ namespace, body: { metadata: { name: nodeName }, spec: {} } }),
    );
    // The spec is the user's: the agent only reads it and writes status.
    await rejectsForbidden('patching a NodeAgent', () =>
      agentConfig.makeApiClient(CustomObjectsApi).patchClusterCustomObject(
        { group: 'nodelet.dev', version: 'v1alpha1', plural: 'nodeagents', name: nodeName, body: { spec: { paused: true } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    );
  });

  it('gives the agent\'s ServiceAccount nothing but the certificate request', async () => {
    const sa = userKubeConfig(admin, { token: serviceAccountToken });
    const core = sa.makeApiClient(CoreV1Api);
    await rejectsForbidden('reading a secret', () => core.readNamespacedSecret({ name: 'sec', namespace }));
    await rejectsForbidden('listing pods', () => core.listPodForAllNamespaces());
    await rejectsForbidden('reading its Node', () => core.readNode({ name: nodeName }));
    await rejectsForbidden('creating a token', () => core.createNamespacedServiceAccountToken({ name: 'default', namespace, body: { spec: { audiences: [] } } }));
    // What system:node-bootstrapper allows: reading certificate requests.
    const csrs = JSON.parse(await kubectl(['get', '--raw', '/apis/certificates.k8s.io/v1/certificatesigningrequests'])) as { items: unknown[] };
    assert.ok(csrs.items.length > 0);
  });
});
