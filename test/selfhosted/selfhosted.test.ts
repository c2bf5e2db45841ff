/**
 * nodelet installed with its Helm chart on the test cluster, running as its DaemonSet on the bootstrap
 * node (whose own node agent is the host-process nodelet of the harness), with its own containerd in
 * the DaemonSet's pod. One install, one workload pod, then the day-2 steps in order on the same
 * install: upgrade of an agent setting, deletion of the agent's pod, a second release (refused),
 * drain + uninstall, and a count of what is left on the host.
 *
 * Network: the in-pod containerd's pods live on the harness's second bridge (SELF_BRIDGE,
 * SELF_POD_CIDR: forwarded traffic dropped, no masquerade); its pulls go to a closed loopback port
 * (runtime.containerd.registryHosts); the images it needs are imported through its socket's host path.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe } from 'node:test';
import type { V1CertificateSigningRequest, V1DaemonSet } from '@kubernetes/client-node';
import { reconcileQueueName } from '../../controllers/queue/redis.js';
import { CHART_DIR, REPO_DIR, helm } from '../integration/helm-chart-helpers.js';
import { imagePins } from '../image/image-helpers.js';
import { NODE_IP, NODE_NAME, apply, eventually, getPod, kubectl, kubectlOutcome, podEvents, requireCluster } from '../e2e/helpers.js';
import {
  DASHBOARD_PORT,
  deleteAgentCsrs,
  PasswordRedis,
  PULL_SINK,
  describeLeftovers,
  freeLoopbackPort,
  hostLeftovers,
  makeSharedMounts,
  importIntoInPodContainerd,
  inPodContainerCgroup,
  inPodCrictl,
  installValues,
  sandboxIds,
  testImageTars,
} from './selfhosted-helpers.js';
import { AGENT_SELECTOR, AGENT_USERS, NAMESPACE, RELEASE, SELF_NODE, agentCsrs, agentCsrsOnceIssued, containerIdentity, csrVerdicts, readyAgentPod, readyNode, removeInstall, sequence } from './release.js';

const run = promisify(execFile);
const SECOND_NAMESPACE = 'nodelet-second';
const SELF_BRIDGE = process.env.SELF_BRIDGE ?? '';
const SELF_POD_CIDR = process.env.SELF_POD_CIDR ?? '';
const WORKLOAD_NS = 'selfhosted-workload';
const MARKER = 'hello from the self-hosted node';
/** The shared bind mounts the suite made (makeSharedMounts): not leftovers of the install. */
let sharedMounts: string[] = [];
/** The suite's own Redis with a password (the Redis-password step): stopped in after(), whatever happens. */
let passwordRedis: PasswordRedis | undefined;

/** One step of the sequence: skipped after an earlier failure. */
const step = sequence(printDiagnostics);

/** What a failed step leaves to read: the workload's status and events, both containers' logs. */
async function printDiagnostics(): Promise<void> {
  const show = async (what: string, args: readonly string[]): Promise<void> => {
    const out = await kubectlOutcome(args, undefined, 30_000);
    console.log(`# --- ${what}\n${(out.stdout + out.stderr).split('\n').map((l) => `#   ${l}`).join('\n')}`);
  };
  await show('workload status', ['get', 'pod', 'web', '-n', WORKLOAD_NS, '-o', 'jsonpath={.status}']);
  await show('workload events', ['get', 'events', '-n', WORKLOAD_NS, '-o', 'custom-columns=REASON:.reason,FROM:.source.host,MESSAGE:.message']);
  await show('agent log', ['logs', '-n', NAMESPACE, '-l', AGENT_SELECTOR, '-c', 'agent', '--tail=40']);
  await show('runtime log', ['logs', '-n', NAMESPACE, '-l', AGENT_SELECTOR, '-c', 'runtime', '--tail=25']);
}

/** The certificates issued to the self-hosted agent (PEM), oldest first, by signer. */
async function issuedAgentCertificates(): Promise<{ client: string[]; serving: string[] }> {
  const mine = (await agentCsrs())
    .filter((c) => c.status?.certificate !== undefined)
    .sort((a, b) => Date.parse(a.metadata?.creationTimestamp as unknown as string) - Date.parse(b.metadata?.creationTimestamp as unknown as string));
  const pem = (c: V1CertificateSigningRequest): string => Buffer.from(c.status?.certificate ?? '', 'base64').toString('utf8');
  return {
    client: mine.filter((c) => c.spec.signerName === 'kubernetes.io/kube-apiserver-client-kubelet').map(pem),
    serving: mine.filter((c) => c.spec.signerName === 'kubernetes.io/kubelet-serving').map(pem),
  };
}

/**
 * Waits for the dashboard's rollout, then until it lists the self-hosted node's queue and not the
 * host agent's, which lives in the harness's Redis only: it reads the password Redis. `token` is the
 * one the install generated: the chart keeps it across upgrades.
 */
async function dashboardReadsPasswordRedis(token: string): Promise<void> {
  await kubectl(['rollout', 'status', `deployment/${RELEASE}-dashboard`, '-n', NAMESPACE, '--timeout=120s']);
  const names = await eventually("the dashboard lists the self-hosted node's queue only", async () => {
    const res = await fetch(`http://${NODE_IP}:${DASHBOARD_PORT}/queues/api/queues`, { headers: { authorization: `Bearer ${token}` } }).catch(() => undefined);
    const body = res?.status === 200 ? (await res.json()) as { queues: { name: string }[] } : undefined;
    const listed = body?.queues.map((q) => q.name) ?? [];
    return listed.includes(reconcileQueueName(SELF_NODE)) ? listed : undefined;
  }, 120_000);
  assert.deepEqual(names, [reconcileQueueName(SELF_NODE)], "the host agent's queue is in the other Redis");
}

/** The workload's Ready condition's lastTransitionTime. */
async function readyTransition(): Promise<string> {
  const pod = await getPod(WORKLOAD_NS, 'web');
  return String(pod?.status?.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime);
}

/** The NodeAgents' Ready condition by name. */
async function nodeAgentsReady(): Promise<Map<string, string>> {
  const list = JSON.parse(await kubectl(['get', 'nodeagents', '-o', 'json'])) as { items: { metadata: { name: string }; status?: { conditions?: { type: string; status: string }[] } }[] };
  return new Map(list.items.map((a) => [a.metadata.name, a.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? 'none']));
}

describe('nodelet installed with helm as a DaemonSet on the test cluster', () => {
  const started = Date.now();
  let valuesDir = '';
  let valuesFile = '';
  let agentUid = '';
  let workloadUid = '';
  let identity = '';
  /** The workload's Ready condition's lastTransitionTime, last read. */
  let readySince = '';

  /**
   * After an agent restart: the workload's container is the same one (ID, restart count, running in
   * the runtime), and the pod is Ready. Readiness is waited for, not asserted at once: like the
   * kubelet (prober_manager.go, setReadyStateOnKubeletRestart), the agent keeps a Ready pod Ready
   * across its restart only for containers started more than 10 s before it, which this fast
   * sequence does not guarantee (test/faults/agent-restart-readiness.test.ts asserts it). The
   * Ready condition's transition time is printed to show which case happened.
   */
  const sameContainerReadyAgain = async (what: string): Promise<void> => {
    assert.equal(await containerIdentity(WORKLOAD_NS, 'web'), identity, 'the same container, not restarted');
    await eventually('the workload Ready', async () => ((await getPod(WORKLOAD_NS, 'web'))?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true ? true : undefined), 60_000);
    assert.equal(await containerIdentity(WORKLOAD_NS, 'web'), identity, 'the same container, not restarted');
    const since = await readyTransition();
    console.log(`# workload Ready condition across ${what}: lastTransitionTime ${readySince} → ${since} (${since === readySince ? 'kept Ready' : 'reset by the new agent'})`);
    readySince = since;
  };
  /** The dashboard token the install generated. */
  let dashboardToken = '';

  before(async () => {
    requireCluster();
    assert.ok(SELF_BRIDGE !== '' && SELF_POD_CIDR !== '', 'the cluster env names the second bridge (SELF_BRIDGE, SELF_POD_CIDR)');
    const before = await hostLeftovers(SELF_BRIDGE);
    assert.equal(describeLeftovers(before), describeLeftovers({ processes: [], mounts: [], veths: [], cgroups: [], dirs: [] }), `the host holds no in-pod runtime state before the install: ${JSON.stringify(before)}`);
    // A namespace of an earlier run may still be terminating: an install into it fails.
    await eventually('no namespace of an earlier run', async () => {
      const out = await kubectlOutcome(['get', 'namespace', NAMESPACE, SECOND_NAMESPACE, WORKLOAD_NS, '--ignore-not-found', '-o', 'name']);
      return out.code === 0 && out.stdout.trim() === '' ? true : undefined;
    }, 120_000);
    sharedMounts = await makeSharedMounts();
    await deleteAgentCsrs(AGENT_USERS);
    const t0 = Date.now();
    const { stdout } = await run('bash', [path.join(REPO_DIR, 'image/import.sh')], { timeout: 15 * 60_000 });
    console.log(`# image/import.sh (build if needed, import into the host's containerd): ${((Date.now() - t0) / 1000).toFixed(1)} s: ${stdout.trim()}`);
    valuesDir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-selfhosted-'));
    valuesFile = path.join(valuesDir, 'values.json');
    await writeFile(valuesFile, JSON.stringify(installValues({ bridge: SELF_BRIDGE, subnet: SELF_POD_CIDR, redisUrl: process.env.REDIS_URL ?? '', apiHost: NODE_IP, apiPort: '6443' })));
  });

  after(async () => {
    await removeInstall({ workloadNamespaces: [WORKLOAD_NS], releases: [[RELEASE, NAMESPACE], ['second', SECOND_NAMESPACE]], sharedMounts, bridge: SELF_BRIDGE })
      .finally(async () => passwordRedis?.stop());
    if (valuesDir !== '') await rm(valuesDir, { recursive: true, force: true });
    console.log(`# selfhosted suite wall time: ${((Date.now() - started) / 1000).toFixed(0)} s`);
  });

  step('installs: the agent pod runs on the bootstrap node and registers its own Node, Ready, with the taint', async () => {
    const install = await helm(['install', RELEASE, CHART_DIR, '--namespace', NAMESPACE, '--create-namespace', '-f', valuesFile]);
    assert.equal(install.code, 0, install.stderr);
    const pod = await readyAgentPod();
    agentUid = pod.metadata?.uid ?? '';
    assert.equal(pod.spec?.nodeName, NODE_NAME, 'the DaemonSet pod is on the bootstrap node');
    assert.deepEqual(pod.spec?.containers.map((c) => `${c.name}:${String(c.securityContext?.privileged)}`), ['agent:true', 'runtime:true']);
    const node = await readyNode();
    const readyAt = Date.parse(node.status?.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime as unknown as string);
    const createdAt = Date.parse(pod.metadata?.creationTimestamp as unknown as string);
    console.log(`# agent pod created → Node ${SELF_NODE} Ready: ${((readyAt - createdAt) / 1000).toFixed(0)} s (API timestamps, 1 s resolution)`);
    assert.deepEqual(node.spec?.taints?.map((t) => `${t.key}=${t.value ?? ''}:${t.effect}`), ['nodelet.dev/agent=true:NoSchedule']);
    assert.equal(node.metadata?.labels?.['nodelet.dev/agent'], 'true');
    assert.equal(node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address, NODE_IP);
    // The runtime container runs the image's containerd (image/versions.env), which the agent reports.
    const pins = await imagePins();
    assert.equal(node.status?.nodeInfo?.containerRuntimeVersion, `containerd://${pins.CONTAINERD_VERSION.replace(/^v/, '')}`, 'as the kubelet reports it: without the v');
    console.log(`# ${SELF_NODE}: containerRuntimeVersion ${node.status?.nodeInfo?.containerRuntimeVersion}, kubeletVersion ${node.status?.nodeInfo?.kubeletVersion}`);
    const ds = JSON.parse(await kubectl(['get', 'daemonset', RELEASE, '-n', NAMESPACE, '-o', 'json'])) as V1DaemonSet;
    // Scheduled on the bootstrap node only: never on its own Node (the chart's affinity).
    assert.equal(ds.status?.desiredNumberScheduled, 1);
  });

  step("works as its own Node: the client certificate bootstrapped with its pod's token, the serving one requested as the node, both approved by the chart's approver", async () => {
    const csrs = await agentCsrsOnceIssued('kubernetes.io/kubelet-serving', 60_000);
    const verdicts = csrVerdicts(csrs);
    console.log(`# the agent's certificate requests:\n${verdicts.map((v) => `#   ${v}`).join('\n')}`);
    assert.deepEqual(verdicts, [
      `kubernetes.io/kube-apiserver-client-kubelet by system:serviceaccount:${NAMESPACE}:${RELEASE}: Approved/NodeletAutoApproved`,
      `kubernetes.io/kubelet-serving by system:node:${SELF_NODE}: Approved/NodeletAutoApproved`,
    ]);
    const client = csrs.find((c) => c.spec.signerName === 'kubernetes.io/kube-apiserver-client-kubelet');
    assert.deepEqual(client?.spec.extra?.['authentication.kubernetes.io/node-name'], [NODE_NAME], "the bootstrap token was bound to the agent's pod on the bootstrap node");
  });

  step("keeps the in-pod containerd's pulls on loopback; the workload's images are imported into it", async () => {
    const pull = await inPodCrictl(['pull', 'docker.io/library/alpine:3'])
      .then(() => 'pulled', (error: unknown) => String((error as { stderr?: string }).stderr ?? error));
    console.log(`# in-pod pull of docker.io/library/alpine:3 failed: ...${pull.slice(Math.max(0, pull.indexOf('127.0.0.1:5999') - 80), pull.indexOf('127.0.0.1:5999') + 60)}...`);
    assert.notEqual(pull, 'pulled', 'a pull of a public image must fail');
    assert.ok(pull.includes('127.0.0.1:5999'), `the pull went to the loopback sink ${PULL_SINK}: ${pull}`);
    const tars = await testImageTars(REPO_DIR);
    for (const name of ['pause', 'busybox']) await importIntoInPodContainerd(tars.get(name) ?? '');
    const images = await inPodCrictl(['images', '-q']);
    assert.equal(images.split('\n').filter((l) => l !== '').length, 2, `pause and busybox in the in-pod containerd: ${images}`);
  });

  step('runs a workload that tolerates the taint there: Running, Ready, in the in-pod containerd only; logs, exec and events through the in-pod nodelet', async () => {
    await kubectl(['create', 'namespace', WORKLOAD_NS]);
    await apply({
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: WORKLOAD_NS },
      spec: {
        nodeSelector: { 'kubernetes.io/hostname': SELF_NODE },
        tolerations: [{ key: 'nodelet.dev/agent', operator: 'Exists', effect: 'NoSchedule' }],
        terminationGracePeriodSeconds: 2,
        containers: [{
          name: 'web', image: 'docker.io/library/busybox:1.35', imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', `echo "${MARKER}"; exec sleep 3600`],
          readinessProbe: { exec: { command: ['true'] }, periodSeconds: 2 },
        }],
      },
    });
    const pod = await eventually('the workload Running and Ready', async () => {
      const found = await getPod(WORKLOAD_NS, 'web');
      return found?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true ? found : undefined;
    }, 120_000);
    workloadUid = pod.metadata?.uid ?? '';
    assert.equal(pod.spec?.nodeName, SELF_NODE);
    assert.equal(pod.status?.phase, 'Running');
    const prefix = SELF_POD_CIDR.replace(/\.0\/24$/, '.');
    assert.ok((pod.status?.podIP ?? '').startsWith(prefix), `pod IP ${pod.status?.podIP ?? ''} on the self-hosted bridge ${SELF_POD_CIDR}`);
    assert.equal((await sandboxIds(workloadUid, 'in-pod')).length, 1, 'one sandbox in the in-pod containerd');
    assert.equal((await sandboxIds(workloadUid, 'host')).length, 0, "no sandbox in the host's containerd");
    const veths = (await run('ip', ['-o', 'link', 'show', 'master', SELF_BRIDGE])).stdout.split('\n').filter((l) => l !== '');
    assert.equal(veths.length, 1, `one veth on ${SELF_BRIDGE}`);
    assert.match(await kubectl(['logs', '-n', WORKLOAD_NS, 'web']), new RegExp(MARKER));
    assert.equal((await kubectl(['exec', '-n', WORKLOAD_NS, 'web', '--', 'sh', '-c', 'echo exec-$((6*7))'])).trim(), 'exec-42');
    const events = await podEvents(WORKLOAD_NS, 'web');
    const started = events.filter((e) => e.reason === 'Started');
    assert.equal(started.length, 1, `one Started event: ${events.map((e) => e.reason).join(',')}`);
    assert.equal(started[0]?.source?.host ?? started[0]?.reportingInstance, SELF_NODE, 'reported by the in-pod nodelet');
    identity = await containerIdentity(WORKLOAD_NS, 'web');
    assert.match(identity, / restarts=0 runtime=CONTAINER_RUNNING$/);
    // Pod cgroups in the host's hierarchy, under the chart's own root (agent.cgroupRoot), never
    // the host agent's /kubepods: the container runs in its BestEffort pod's cgroup there.
    const cgroup = await inPodContainerCgroup(identity.split(' ')[0] ?? '');
    assert.match(cgroup, new RegExp(`^/nodelet/kubepods/besteffort/pod${workloadUid}/`), `the container's host cgroup ${cgroup}`);
    const sandbox = JSON.parse(await inPodCrictl(['inspectp', (await sandboxIds(workloadUid, 'in-pod'))[0] ?? ''])) as { info?: { config?: { linux?: { cgroup_parent?: string } } } };
    assert.equal(sandbox.info?.config?.linux?.cgroup_parent, `/nodelet/kubepods/besteffort/pod${workloadUid}`);
    readySince = await readyTransition();
  });

  // `npm run test:rotation` only: the cluster signs for minutes (NODELET_CLUSTER_SIGNING_DURATION),
  // and this waits for both of the agent's certificates to be renewed and the first ones to expire.
  if (process.env.NODELET_SELFHOSTED_ROTATION === '1') {
    step('keeps working through the rotation and expiry of its client and serving certificates, the workload untouched', async () => {
      const first = await issuedAgentCertificates();
      const [client, serving] = [first.client[0], first.serving[0]].map((pem) => new X509Certificate(pem ?? ''));
      assert.ok(client !== undefined && serving !== undefined);
      const expiries = [client, serving].map((cert) => Date.parse(cert.validTo));
      const lifetimeMs = Date.parse(client.validTo) - Date.parse(client.validFrom);
      assert.ok(lifetimeMs <= 20 * 60_000, `the cluster signs for ${(lifetimeMs / 3_600_000).toFixed(1)} h: bring it up with NODELET_CLUSTER_SIGNING_DURATION=10m (npm run test:rotation does)`);
      const lastExpiry = Math.max(...expiries);
      const renewed = await eventually('both certificates renewed by the agent', async () => {
        const now = await issuedAgentCertificates();
        return now.client.length >= 2 && now.serving.length >= 2 ? now : undefined;
      }, Math.max(60_000, lastExpiry - Date.now()));
      console.log(`# certificates issued to ${SELF_NODE}: ${renewed.client.length} client, ${renewed.serving.length} serving; the first ones (lifetime ${(lifetimeMs / 60_000).toFixed(0)} min with the signer's backdating) expire at ${new Date(lastExpiry).toISOString()}`);
      // Past the first certificates' expiry: only the renewed ones can work now.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, lastExpiry + 10_000 - Date.now())));
      assert.equal(await containerIdentity(WORKLOAD_NS, 'web'), identity, 'the same container, not restarted');
      // The node's heartbeat and status go through the renewed client certificate...
      const node = await readyNode();
      const heartbeat = Date.parse(node.status?.conditions?.find((c) => c.type === 'Ready')?.lastHeartbeatTime as unknown as string);
      assert.ok(heartbeat > lastExpiry - 60_000, `a heartbeat after the first client certificate expired (${new Date(heartbeat).toISOString()})`);
      // ...logs and exec through the node server's renewed serving certificate, which the API server verifies.
      assert.match(await kubectl(['logs', '-n', WORKLOAD_NS, 'web']), new RegExp(MARKER));
      assert.equal((await kubectl(['exec', '-n', WORKLOAD_NS, 'web', '--', 'sh', '-c', 'echo exec-$((6*7))'])).trim(), 'exec-42');
      const agentPod = await readyAgentPod();
      assert.equal(agentPod.metadata?.uid, agentUid, 'the agent pod was not replaced');
      assert.deepEqual((agentPod.status?.containerStatuses ?? []).map((c) => c.restartCount), [0, 0], 'neither the agent nor the runtime restarted');
    });
  }

  step('shows both NodeAgents Ready, and the dashboard lists both nodes’ queues with its token only', async () => {
    const agents = await eventually('both NodeAgents Ready', async () => {
      const ready = await nodeAgentsReady();
      return ready.get(NODE_NAME) === 'True' && ready.get(SELF_NODE) === 'True' ? ready : undefined;
    });
    assert.equal(agents.size, 2, [...agents.keys()].join(','));
    const token = Buffer.from(await kubectl(['get', 'secret', `${RELEASE}-dashboard-auth`, '-n', NAMESPACE, '-o', 'jsonpath={.data.token}']), 'base64').toString();
    dashboardToken = token;
    const url = `http://${NODE_IP}:${DASHBOARD_PORT}/queues/api/queues`;
    const names = await eventually('the dashboard lists both queues', async () => {
      const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } }).catch(() => undefined);
      if (res?.status !== 200) return undefined;
      const body = (await res.json()) as { queues: { name: string }[] };
      const listed = body.queues.map((q) => q.name);
      return listed.includes(reconcileQueueName(NODE_NAME)) && listed.includes(reconcileQueueName(SELF_NODE)) ? listed : undefined;
    }, 120_000);
    assert.equal(names.length, 2, names.join(','));
    assert.equal((await fetch(url)).status, 401, 'refused without the token');
    assert.equal((await fetch(url, { headers: { authorization: 'Bearer wrong' } })).status, 401, 'refused with a wrong token');
  });

  step("rolls the agent on a helm upgrade of an agent setting without restarting the workload's container", async () => {
    const upgrade = await helm(['upgrade', RELEASE, CHART_DIR, '--namespace', NAMESPACE, '--reuse-values', '--set', 'agent.logLevel=debug']);
    assert.equal(upgrade.code, 0, upgrade.stderr);
    const pod = await readyAgentPod(agentUid);
    assert.ok(pod.spec?.containers[0]?.args?.includes('--log-level=debug'));
    agentUid = pod.metadata?.uid ?? '';
    await readyNode();
    await sameContainerReadyAgain('the setting upgrade');
  });

  step("moves the agent and the dashboard onto a Redis with a password, then rotates it, by helm upgrade; the workload's container untouched", async () => {
    const first = randomBytes(12).toString('hex');
    const second = randomBytes(12).toString('hex');
    passwordRedis = new PasswordRedis(await freeLoopbackPort(), first);
    const redis = passwordRedis;
    await eventually('the password Redis up', async () => (await redis.cli(first, ['ping'])).trim() === 'PONG' ? true : undefined, 20_000);
    // Keys of the workload's reconcile jobs (`<uid>.<suffix>`, never the dashboard's): only the
    // agent writes them, and only once it has authenticated.
    const jobKeys = `nodelet:${reconcileQueueName(SELF_NODE)}:${workloadUid}.*`;
    const upgrade = async (secret: string, password: string, sets: readonly string[]): Promise<void> => {
      await apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: secret, namespace: NAMESPACE }, stringData: { password } });
      const t0 = Date.now();
      const result = await helm(['upgrade', RELEASE, CHART_DIR, '--namespace', NAMESPACE, '--reuse-values', ...[...sets, `redis.password.existingSecret=${secret}`].flatMap((v) => ['--set', v])]);
      assert.equal(result.code, 0, result.stderr);
      agentUid = (await readyAgentPod(agentUid)).metadata?.uid ?? '';
      await readyNode();
      console.log(`# helm upgrade onto ${secret} → new agent pod Ready and ${SELF_NODE} Ready: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    };
    await upgrade('redis-auth-1', first, [`redis.url=${redis.url}`]);
    const firstJobs = await eventually("the workload's reconcile jobs in the password Redis", async () => {
      const keys = await redis.keys(first, jobKeys);
      return keys.length > 0 ? keys : undefined;
    }, 60_000);
    await dashboardReadsPasswordRedis(dashboardToken);
    // Rotation: the new password on Redis first (a connection keeps its authentication, so the
    // old agent stops cleanly), then the upgrade; every new connection needs the new password.
    await redis.cli(first, ['config', 'set', 'requirepass', second]);
    await assert.rejects(redis.cli(first, ['ping']), /WRONGPASS|NOAUTH|invalid/i, 'the old password is refused');
    await upgrade('redis-auth-2', second, []);
    await dashboardReadsPasswordRedis(dashboardToken);
    await eventually('the old agent pod gone', async () => (await kubectl(['get', 'pods', '-n', NAMESPACE, '-l', AGENT_SELECTOR, '-o', 'name'])).split('\n').filter((l) => l !== '').length === 1 ? true : undefined, 60_000);
    // Only the new agent is left to write; drop every connection: its reconnect (with the new
    // password) resyncs the queue, which adds a job of the workload.
    const before = new Set(await redis.keys(second, jobKeys));
    await redis.cli(second, ['client', 'kill', 'type', 'normal']);
    const added = await eventually('a reconcile job of the workload added after the reconnect with the new password', async () => {
      const keys = (await redis.keys(second, jobKeys)).filter((k) => !before.has(k));
      return keys.length > 0 ? keys : undefined;
    }, 60_000);
    const names = (await redis.cli(second, ['client', 'list'])).split('\n').map((l) => /\bname=(\S*)/.exec(l)?.[1] ?? '').filter((n) => n !== '');
    console.log(`# password Redis: ${firstJobs.length} job keys after the first upgrade, ${added.length} new after the rotation's reconnect; named clients: ${names.sort().join(',')}`);
    const agents = await eventually(`NodeAgent ${SELF_NODE} Ready`, async () => ((await nodeAgentsReady()).get(SELF_NODE) === 'True' ? true : undefined), 60_000);
    assert.equal(agents, true);
    await sameContainerReadyAgain('the Redis password upgrades');
  });

  step("restarts the agent after kubectl delete pod without restarting the workload's container", async () => {
    await kubectl(['delete', 'pod', '-n', NAMESPACE, '-l', AGENT_SELECTOR, '--wait=true']);
    const pod = await readyAgentPod(agentUid);
    agentUid = pod.metadata?.uid ?? '';
    await readyNode();
    await sameContainerReadyAgain("the agent pod's deletion");
  });

  step('refuses a second release in another namespace, creating nothing', async () => {
    const second = await helm(['install', 'second', CHART_DIR, '--namespace', SECOND_NAMESPACE, '--create-namespace', '-f', valuesFile]);
    assert.notEqual(second.code, 0, 'the second install must fail');
    assert.match(second.stderr, new RegExp(`nodelet is already installed on this cluster \\(release "${RELEASE}" in namespace "${NAMESPACE}"\\)`));
    const objects = await kubectl(['get', 'all,configmaps,secrets', '-n', SECOND_NAMESPACE, '-l', 'app.kubernetes.io/instance=second', '-o', 'name']);
    assert.equal(objects.trim(), '', 'nothing of the second release exists');
    assert.equal((await kubectlOutcome(['get', 'clusterrole', 'second-nodelet-agent'])).code, 1);
    assert.equal((await readyAgentPod()).metadata?.uid, agentUid, 'the first release is untouched');
    assert.equal(await containerIdentity(WORKLOAD_NS, 'web'), identity);
  });

  step('drains, then uninstalls: agent and its pods gone, the Node left NotReady-to-be, the CRD kept', async () => {
    const drain = await kubectlOutcome(['drain', SELF_NODE, '--ignore-daemonsets', '--force', '--grace-period=5', '--timeout=90s'], undefined, 120_000);
    assert.equal(drain.code, 0, drain.stderr);
    await eventually('the workload gone from the API', async () => (await getPod(WORKLOAD_NS, 'web')) === undefined ? true : undefined);
    await eventually('its sandbox gone from the in-pod containerd', async () => (await sandboxIds(workloadUid, 'in-pod')).length === 0 ? true : undefined, 60_000);
    const uninstall = await helm(['uninstall', RELEASE, '--namespace', NAMESPACE, '--wait', '--timeout', '120s']);
    assert.equal(uninstall.code, 0, uninstall.stderr);
    await eventually('no pod of the release left', async () => (await kubectl(['get', 'pods', '-n', NAMESPACE, '-o', 'name'])).trim() === '' ? true : undefined, 60_000);
    const leftovers = await eventually('the in-pod containerd and its shims gone', async () => {
      const found = await hostLeftovers(SELF_BRIDGE);
      return found.processes.length === 0 ? found : undefined;
    }, 60_000);
    console.log(`# after helm uninstall, on the host: ${describeLeftovers(leftovers)} (${leftovers.dirs.join(' ')}; ${leftovers.cgroups.length} cgroup dirs nodelet-shims)`);
    assert.deepEqual(leftovers.mounts.filter((m) => !sharedMounts.includes(m)), [], 'no mount of the in-pod runtime left (beyond the shared bind mounts the suite made)');
    assert.deepEqual(leftovers.veths, [], `no veth left on ${SELF_BRIDGE}`);
    // Like the kubelet's, nodelet's Node outlives its agent: the node lifecycle controller marks it
    // NotReady/Unknown once its lease expires; deleting it is the operator's call (README).
    assert.equal((await kubectlOutcome(['get', 'node', SELF_NODE])).code, 0, 'the Node is left to the operator');
    assert.equal((await kubectlOutcome(['get', 'crd', 'nodeagents.nodelet.dev'])).code, 0, 'helm keeps crds/');
  });
});
