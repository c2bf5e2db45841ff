/**
 * The upgrade from the previous release (`npm run test:upgrade`): the chart and image of the last
 * commit before per-node credentials and containerd 2 (test/upgrade/previous-release.sh builds them
 * from git) installed on the test cluster as in the self-hosted suite, running pods started by its
 * containerd 1.6, then `helm upgrade` to this chart and image. Every running pod keeps its container
 * and sandbox; a finished pod stays finished; the new agent works as its own Node with the shrunken
 * RBAC, through containerd 2, and tears the old runtime's pods down cleanly.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe } from 'node:test';
import type { V1CertificateSigningRequest, V1Pod } from '@kubernetes/client-node';
import { CHART_DIR, REPO_DIR, helm } from '../integration/helm-chart-helpers.js';
import { imagePins } from '../image/image-helpers.js';
import { NODE_IP, NODE_NAME, apply, eventually, getPod, kubectl, kubectlOutcome, requireCluster } from '../e2e/helpers.js';
import { nodeRedisPasswordFile } from '../../cmd/assembly/queue.js';
import { nodeRedisUser } from '../../controllers/queue/redis-acl.js';
import { reconcileQueueName } from '../../controllers/queue/redis.js';
import { CLIENT_PAIR_FILE } from '../../kube/node-identity.js';
import { HOST_PATHS, PasswordRedis, deleteAgentCsrs, freeLoopbackPort, describeLeftovers, hostLeftovers, importIntoInPodContainerd, inPodCrictl, inPodShimV2Cgroups, installValues, makeSharedMounts, sandboxIds, testImageTars } from '../selfhosted/selfhosted-helpers.js';
import { AGENT_SELECTOR, AGENT_USERS, NAMESPACE, RELEASE, SELF_NODE, agentCsrsOnceIssued, containerIdentity, csrVerdicts, readyAgentPod, readyNode, removeInstall, sequence } from '../selfhosted/release.js';

const run = promisify(execFile);
const SELF_BRIDGE = process.env.SELF_BRIDGE ?? '';
const SELF_POD_CIDR = process.env.SELF_POD_CIDR ?? '';
const WORKLOAD_NS = 'upgrade-workload';
const MARKER = 'started under the previous release';
/** The external Redis of the node-users step: stopped in after(), whatever happens. */
let passwordRedis: PasswordRedis | undefined;
const TOLERATE_AGENT_TAINT = [{ key: 'nodelet.dev/agent', operator: 'Exists', effect: 'NoSchedule' }];

/** A busybox pod on the self-hosted node; `withData` mounts an emptyDir at /data, `probe` is an exec readiness probe. */
function workload(name: string, script: string, options: { restartPolicy?: string; withData?: boolean; probe?: string[] } = {}): object {
  const data = options.withData === true;
  return {
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: WORKLOAD_NS },
    spec: {
      nodeSelector: { 'kubernetes.io/hostname': SELF_NODE }, tolerations: TOLERATE_AGENT_TAINT, terminationGracePeriodSeconds: 2,
      restartPolicy: options.restartPolicy ?? 'Always',
      ...(data ? { volumes: [{ name: 'data', emptyDir: {} }] } : {}),
      containers: [{
        name, image: 'docker.io/library/busybox:1.35', imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', script],
        ...(data ? { volumeMounts: [{ name: 'data', mountPath: '/data' }] } : {}),
        ...(options.probe === undefined ? {} : { readinessProbe: { exec: { command: options.probe }, periodSeconds: 2 } }),
      }],
    },
  };
}

/** The pod's Ready condition is True. */
const isReady = (pod: V1Pod | undefined): boolean => pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/** Approves the kubelet-serving request `username` made, as an operator of the previous release did (it shipped no approver). */
async function approveServingRequestOf(username: string): Promise<void> {
  const name = await eventually(`a serving certificate request by ${username}`, async () => {
    const list = JSON.parse(await kubectl(['get', 'csr', '-o', 'json'])) as { items: V1CertificateSigningRequest[] };
    return list.items.find((c) => c.spec.username === username && c.spec.signerName === 'kubernetes.io/kubelet-serving')?.metadata?.name;
  }, 120_000);
  await kubectl(['certificate', 'approve', name]);
}

/** What the in-pod runtime reports as its version: `containerd://<version>`. */
async function inPodRuntimeVersion(): Promise<string> {
  // `crictl version` prints "RuntimeName: containerd" and "RuntimeVersion: <version>" lines.
  const fields = new Map((await inPodCrictl(['version'])).split('\n').map((line) => line.split(/:\s+/, 2) as [string, string]));
  return `${fields.get('RuntimeName') ?? '?'}://${fields.get('RuntimeVersion') ?? '?'}`;
}

/** After a failure: what the agent said about the workload's pods, and the runtime's last lines. */
async function printDiagnostics(): Promise<void> {
  const show = (what: string, text: string): void => {
    console.log(`# --- ${what}\n${text.split('\n').map((l) => `#   ${l}`).join('\n')}`);
  };
  const agent = await kubectlOutcome(['logs', '-n', NAMESPACE, '-l', AGENT_SELECTOR, '-c', 'agent', '--tail=-1'], undefined, 30_000);
  show('agent log on the workload', (agent.stdout + agent.stderr).split('\n').filter((l) => l.includes(WORKLOAD_NS) || /"level":[45]0/.test(l)).slice(-60).join('\n'));
  const runtime = await kubectlOutcome(['logs', '-n', NAMESPACE, '-l', AGENT_SELECTOR, '-c', 'runtime', '--tail=-1'], undefined, 30_000);
  show("the runtime's warnings and errors", (runtime.stdout + runtime.stderr).split('\n').filter((l) => /level=(warning|error|fatal)/.test(l)).slice(-40).join('\n'));
}

/** One step of the sequence: skipped after an earlier failure. */
const step = sequence(printDiagnostics);

/**
 * Whether replacing the previous release's agent pod kills its runtime's shims, read from the host:
 * on a hybrid cgroup host the previous runtime container leaves its shims in its own v2 cgroup (its
 * ShimCgroup moves them in the v1 hierarchies only), and the host's runc from 1.2 on stops a
 * container by writing cgroup.kill there (libcontainer signalAllProcesses). The chart's README
 * tells operators to drain such nodes before that upgrade.
 */
async function previousShimsDieWithTheAgentPod(agentPodUid: string): Promise<{ die: boolean; why: string }> {
  const hybrid = !existsSync('/sys/fs/cgroup/cgroup.controllers') && existsSync('/sys/fs/cgroup/unified/cgroup.controllers');
  const runcVersion = /runc version (\d+)\.(\d+)\./.exec((await run('runc', ['--version'])).stdout);
  const killsV2Cgroup = runcVersion !== null && (Number(runcVersion[1]) > 1 || Number(runcVersion[2]) >= 2);
  const shims = await inPodShimV2Cgroups();
  const inAgentPod = shims.filter((c) => c.includes(`/pod${agentPodUid}/`)).length;
  const why = `hybrid cgroups ${hybrid}, host runc ${runcVersion?.slice(1).join('.') ?? '?'}, ${inAgentPod} of ${shims.length} in-pod shims in the agent pod's v2 cgroup`;
  return { die: hybrid && killsV2Cgroup && inAgentPod > 0, why };
}

/** Container ID and restart count of a containerIdentity() line. */
function idAndRestarts(identity: string): [string, number] {
  const [id, restarts] = identity.split(' ');
  return [id ?? '', Number((restarts ?? '').replace('restarts=', ''))];
}

describe('helm upgrade from the previous release, with running pods', () => {
  let sharedMounts: string[] = [];
  let valuesDir = '';
  let previous = { commit: '', chart: '', image: '' };
  let agentUid = '';
  /** Container identities before the upgrade, by pod name. */
  const before0 = new Map<string, string>();
  const sandboxes = new Map<string, string[]>();
  const uids = new Map<string, string>();

  before(async () => {
    requireCluster();
    assert.ok(SELF_BRIDGE !== '' && SELF_POD_CIDR !== '', 'the cluster env names the second bridge (SELF_BRIDGE, SELF_POD_CIDR)');
    const found = await hostLeftovers(SELF_BRIDGE);
    assert.equal(describeLeftovers(found), describeLeftovers({ processes: [], mounts: [], veths: [], cgroups: [], dirs: [] }), `the host holds no in-pod runtime state before the install: ${JSON.stringify(found)}`);
    await eventually('no namespace of an earlier run', async () => {
      const out = await kubectlOutcome(['get', 'namespace', NAMESPACE, WORKLOAD_NS, '--ignore-not-found', '-o', 'name']);
      return out.code === 0 && out.stdout.trim() === '' ? true : undefined;
    }, 120_000);
    sharedMounts = await makeSharedMounts();
    await deleteAgentCsrs(AGENT_USERS);
    let t0 = Date.now();
    const built = (await run('bash', [path.join(REPO_DIR, 'test/upgrade/previous-release.sh')], { timeout: 30 * 60_000 })).stdout.trim().split(' ');
    previous = { commit: built[0] ?? '', chart: built[1] ?? '', image: built[2] ?? '' };
    console.log(`# previous release ${previous.commit.slice(0, 7)}: ${previous.image}, chart ${previous.chart} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    // The previous import took the current image's name on its way: import.sh puts it back.
    t0 = Date.now();
    const current = await run('bash', [path.join(REPO_DIR, 'image/import.sh')], { timeout: 15 * 60_000 });
    console.log(`# image/import.sh: ${((Date.now() - t0) / 1000).toFixed(1)} s: ${current.stdout.trim()}`);
    valuesDir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-upgrade-'));
  });

  after(async () => {
    await removeInstall({ workloadNamespaces: [WORKLOAD_NS], releases: [[RELEASE, NAMESPACE]], sharedMounts, bridge: SELF_BRIDGE }).finally(async () => passwordRedis?.stop());
    if (valuesDir !== '') await rm(valuesDir, { recursive: true, force: true });
  });

  /** The suite's values for this chart (the self-hosted suite's), written to a file for helm. */
  const valuesFor = async (name: string, values: object): Promise<string> => {
    const file = path.join(valuesDir, `${name}.json`);
    await writeFile(file, JSON.stringify(values));
    return file;
  };
  const currentValues = (): Record<string, unknown> => installValues({ bridge: SELF_BRIDGE, subnet: SELF_POD_CIDR, redisUrl: process.env.REDIS_URL ?? '', apiHost: NODE_IP, apiPort: '6443' }) as Record<string, unknown>;

  /**
   * A running pod whose shims died with the previous agent pod: one new ready sandbox, its container
   * restarted exactly once and running, as the kubelet does after a sandbox dies (SandboxChanged).
   */
  const sameRunningPodRestartedOnce = async (name: string, identity: string): Promise<void> => {
    const [id0, restarts0] = idAndRestarts(identity);
    const now = await containerIdentity(WORKLOAD_NS, name);
    const [id, restarts] = idAndRestarts(now);
    console.log(`#   ${name}: ${identity} → ${now}`);
    assert.notEqual(id, id0, `${name}: a new container`);
    assert.equal(restarts, restarts0 + 1, `${name}: restarted once`);
    assert.match(now, / runtime=CONTAINER_RUNNING$/);
    const ready = (await inPodCrictl(['pods', '-q', '--state', 'ready', '--label', `io.kubernetes.pod.uid=${uids.get(name) ?? ''}`])).split('\n').filter((l) => l !== '');
    assert.equal(ready.length, 1, `${name}: one ready sandbox`);
    assert.ok(!(sandboxes.get(name) ?? []).includes(ready[0] ?? ''), `${name}: a new sandbox`);
    const events = await kubectl(['get', 'events', '-n', WORKLOAD_NS, '--field-selector', `involvedObject.name=${name},reason=SandboxChanged`, '-o', 'name']);
    assert.notEqual(events.trim(), '', `${name}: a SandboxChanged event`);
  };

  step('installs the previous release: its agent on containerd 1.6 as the shared ServiceAccount, Ready', async () => {
    // The previous chart has no approver (its schema refuses the key) and takes the image by tag.
    const { approver: _approver, image, ...rest } = currentValues();
    const values = { ...rest, image: { ...(image as object), tag: previous.image.split(':').pop() } };
    const install = await helm(['install', RELEASE, previous.chart, '--namespace', NAMESPACE, '--create-namespace', '-f', await valuesFor('previous', values)]);
    assert.equal(install.code, 0, install.stderr);
    await approveServingRequestOf(`system:serviceaccount:${NAMESPACE}:${RELEASE}`);
    const pod = await readyAgentPod();
    agentUid = pod.metadata?.uid ?? '';
    assert.ok(previous.image.endsWith(`/${pod.spec?.containers[0]?.image ?? '-'}`), `the agent runs ${pod.spec?.containers[0]?.image ?? ''}, the previous image ${previous.image}`);
    const node = await readyNode();
    const runtime = node.status?.nodeInfo?.containerRuntimeVersion ?? '';
    console.log(`# previous release: ${SELF_NODE} reports ${runtime}`);
    assert.match(runtime, /^containerd:\/\/1\.6\./, 'the previous image runs containerd 1.6');
    assert.equal(await inPodRuntimeVersion(), runtime);
  });

  step('runs pods under it: two running (one with a probe and an emptyDir, one restarted once), one finished', async () => {
    const tars = await testImageTars(REPO_DIR);
    for (const name of ['pause', 'busybox']) await importIntoInPodContainerd(tars.get(name) ?? '');
    await kubectl(['create', 'namespace', WORKLOAD_NS]);
    await apply(workload('web', `echo "${MARKER}"; echo kept > /data/file; exec sleep 3600`, { withData: true, probe: ['cat', '/data/file'] }));
    await apply(workload('restarted', '[ -f /data/once ] && exec sleep 3600; touch /data/once; exit 3', { withData: true }));
    await apply(workload('done', 'echo finished', { restartPolicy: 'Never' }));
    await eventually('web and restarted Ready, done Succeeded', async () => {
      const [web, restarted, done] = await Promise.all(['web', 'restarted', 'done'].map(async (n) => getPod(WORKLOAD_NS, n)));
      return isReady(web) && isReady(restarted) && done?.status?.phase === 'Succeeded' ? true : undefined;
    }, 180_000);
    for (const name of ['web', 'restarted', 'done']) {
      const pod = await getPod(WORKLOAD_NS, name);
      uids.set(name, pod?.metadata?.uid ?? '');
      sandboxes.set(name, await sandboxIds(pod?.metadata?.uid ?? '', 'in-pod'));
      before0.set(name, await containerIdentity(WORKLOAD_NS, name));
    }
    console.log(`# before the upgrade:\n${[...before0].map(([n, id]) => `#   ${n}: ${id}`).join('\n')}`);
    assert.match(before0.get('web') ?? '', / restarts=0 runtime=CONTAINER_RUNNING$/);
    assert.match(before0.get('restarted') ?? '', / restarts=1 runtime=CONTAINER_RUNNING$/);
    assert.match(before0.get('done') ?? '', / restarts=0 runtime=CONTAINER_EXITED$/);
  });

  step('upgrades with helm to this chart and image: a new agent pod on containerd 2; every pod keeps its containers and sandbox (or, where the host kills the previous shims, restarts them once in a new sandbox), the finished one stays finished', async () => {
    const shims = await previousShimsDieWithTheAgentPod(agentUid);
    console.log(`# the previous runtime's shims ${shims.die ? 'die' : 'survive'} with its agent pod: ${shims.why}`);
    // The previous release's requests go: the next step reads the new agent's only.
    await deleteAgentCsrs(AGENT_USERS);
    const t0 = Date.now();
    const upgrade = await helm(['upgrade', RELEASE, CHART_DIR, '--namespace', NAMESPACE, '-f', await valuesFor('current', currentValues())]);
    assert.equal(upgrade.code, 0, upgrade.stderr);
    const pod = await readyAgentPod(agentUid);
    agentUid = pod.metadata?.uid ?? '';
    assert.ok(!previous.image.endsWith(`/${pod.spec?.containers[0]?.image ?? '-'}`), `the agent runs ${pod.spec?.containers[0]?.image ?? ''}, not the previous image`);
    const node = await readyNode();
    const pinned = (await imagePins()).CONTAINERD_VERSION;
    const runtime = `containerd://${pinned.replace(/^v/, '')}`;
    assert.equal(node.status?.nodeInfo?.containerRuntimeVersion, runtime, 'as the kubelet reports it: without the v');
    assert.equal(await inPodRuntimeVersion(), `containerd://${pinned}`);
    await eventually('web and restarted Ready again', async () => {
      const [web, restarted] = await Promise.all(['web', 'restarted'].map(async (n) => getPod(WORKLOAD_NS, n)));
      return isReady(web) && isReady(restarted) ? true : undefined;
    }, 120_000);
    console.log(`# helm upgrade → agent pod ${pod.spec?.containers[0]?.image ?? ''} Ready, ${SELF_NODE} on ${runtime}, both running pods Ready: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    for (const [name, identity] of before0) {
      if (shims.die && name !== 'done') {
        await sameRunningPodRestartedOnce(name, identity);
        continue;
      }
      assert.equal(await containerIdentity(WORKLOAD_NS, name), identity, `${name}: the same container in the new runtime, not restarted`);
      assert.deepEqual(await sandboxIds(uids.get(name) ?? '', 'in-pod'), sandboxes.get(name), `${name}: the same sandbox, no second one`);
    }
    assert.equal((await getPod(WORKLOAD_NS, 'done'))?.status?.phase, 'Succeeded');
    assert.match(await kubectl(['logs', '-n', WORKLOAD_NS, 'web']), new RegExp(MARKER));
    assert.equal((await kubectl(['exec', '-n', WORKLOAD_NS, 'web', '--', 'cat', '/data/file'])).trim(), 'kept', "exec into the previous runtime's container, its emptyDir intact");
  });

  step("works as its own Node afterwards: its client certificate approved by the chart's approver, the previous release's cluster-wide grants gone", async () => {
    const verdicts = csrVerdicts(await agentCsrsOnceIssued('kubernetes.io/kube-apiserver-client-kubelet', 120_000));
    console.log(`# the new agent's certificate requests:\n${verdicts.map((v) => `#   ${v}`).join('\n')}`);
    // The serving certificate the previous agent got is still valid under the same root dir: the new
    // agent keeps it (as a kubelet keeps its cert-dir) until its rotation asks for a new one.
    assert.deepEqual(verdicts.filter((v) => v.startsWith('kubernetes.io/kube-apiserver-client-kubelet')), [
      `kubernetes.io/kube-apiserver-client-kubelet by system:serviceaccount:${NAMESPACE}:${RELEASE}: Approved/NodeletAutoApproved`,
    ]);
    const pem = await readFile(path.join(HOST_PATHS.agentRoot, 'pki', CLIENT_PAIR_FILE), 'utf8');
    const subject = new X509Certificate(pem).subject.split('\n').sort().join(',');
    assert.equal(subject, `CN=system:node:${SELF_NODE},O=system:nodes`, 'the client certificate the agent keeps on its host');
    const serviceAccount = `system:serviceaccount:${NAMESPACE}:${RELEASE}`;
    const grants: string[] = [];
    for (const verb of [['get', 'secrets', '--all-namespaces'], ['list', 'pods', '--all-namespaces'], ['patch', 'nodes'], ['create', 'serviceaccounts/token', '-n', 'kube-system'], ['patch', 'pods/status', '-n', WORKLOAD_NS]]) {
      const out = await kubectlOutcome(['auth', 'can-i', ...verb, '--as', serviceAccount]);
      grants.push(`${verb.join(' ')}: ${out.stdout.trim()}`);
    }
    console.log(`# the agent's ServiceAccount after the upgrade:\n${grants.map((v) => `#   ${v}`).join('\n')}`);
    assert.ok(grants.every((v) => v.endsWith(': no')), grants.join('; '));
  });

  step("deletes the previous runtime's pods through containerd 2: sandboxes and veths gone", async () => {
    await kubectl(['delete', 'pod', 'web', 'restarted', 'done', '-n', WORKLOAD_NS, '--wait=true', '--timeout=90s']);
    for (const [name, uid] of uids) {
      await eventually(`${name}'s sandbox gone from the in-pod containerd`, async () => (await sandboxIds(uid, 'in-pod')).length === 0 ? true : undefined, 60_000);
    }
    const veths = (await run('ip', ['-o', 'link', 'show', 'master', SELF_BRIDGE])).stdout.split('\n').filter((l) => l !== '');
    assert.deepEqual(veths, [], `no veth left on ${SELF_BRIDGE}`);
  });

  step("moves onto per-node users of an external Redis by helm upgrade (redis.nodeUsers): the agent is its node's own Redis user, reaching its queue only, and runs a new pod", async () => {
    const admin = randomBytes(12).toString('hex');
    // On NODE_IP too: the redis-users pod is on the pod network, which reaches the host there.
    passwordRedis = new PasswordRedis(await freeLoopbackPort(), admin, ['127.0.0.1', NODE_IP]);
    const redis = passwordRedis;
    await eventually('the external Redis up', async () => (await redis.cli(admin, ['ping'])).trim() === 'PONG' ? true : undefined, 20_000);
    await apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'redis-admin', namespace: NAMESPACE }, stringData: { password: admin } });
    // No kube-proxy on the test cluster: redis-users reaches the API server at its own address.
    const apiEnv = [{ name: 'KUBERNETES_SERVICE_HOST', value: NODE_IP }, { name: 'KUBERNETES_SERVICE_PORT', value: '6443' }];
    const upgrade = await helm(['upgrade', RELEASE, CHART_DIR, '--namespace', NAMESPACE, '--reuse-values', '--set', `redis.url=redis://${NODE_IP}:${redis.port}`,
      '--set', 'redis.nodeUsers.adminSecret=redis-admin', '--set-json', `redis.nodeUsers.extraEnv=${JSON.stringify(apiEnv)}`]);
    assert.equal(upgrade.code, 0, upgrade.stderr);
    agentUid = (await readyAgentPod(agentUid)).metadata?.uid ?? '';
    await readyNode();
    await kubectl(['rollout', 'status', `deployment/${RELEASE}-redis-users`, '-n', NAMESPACE, '--timeout=180s']);
    const nodeUser = nodeRedisUser(SELF_NODE);
    const users = await eventually("the node's and the dashboard's Redis users", async () => {
      const list = (await redis.cli(admin, ['acl', 'users'])).split('\n').filter((u) => u !== '');
      return list.includes(nodeUser) && list.includes('nodelet-dashboard') ? list : undefined;
    }, 120_000);
    await eventually(`the agent connected as ${nodeUser}`, async () => ((await redis.cli(admin, ['client', 'list'])).includes(`user=${nodeUser} `) ? true : undefined), 120_000);
    await apply(workload('after', 'exec sleep 3600', { probe: ['true'] }));
    await eventually('the new pod Ready', async () => (isReady(await getPod(WORKLOAD_NS, 'after')) ? true : undefined), 120_000);
    // With the password the agent keeps on its host: its own queue, and nothing else.
    const password = (await readFile(nodeRedisPasswordFile(HOST_PATHS.agentRoot), 'utf8')).trim();
    const asNode = async (args: readonly string[]): Promise<string> => redis.cli(password, args, nodeUser).then((out) => `ok ${out.trim()}`, (error: unknown) => String(error).replace(/^Error: /, '').split('\n')[0] ?? '');
    const own = `nodelet:${reconcileQueueName(SELF_NODE)}:meta`;
    const other = `nodelet:${reconcileQueueName(NODE_NAME)}:meta`;
    const verdicts = [
      [`EXISTS ${own}`, await asNode(['exists', own])],
      [`SET ${other}`, await asNode(['set', other, 'x'])],
      [`DEL ${other}`, await asNode(['del', other])],
      ['KEYS *', await asNode(['keys', '*'])],
      ['FLUSHALL', await asNode(['flushall'])],
      ['CONFIG GET maxmemory', await asNode(['config', 'get', 'maxmemory'])],
    ] as const;
    console.log(`# external Redis users: ${users.sort().join(', ')}; as ${nodeUser}:\n${verdicts.map(([c, v]) => `#   ${c}: ${v}`).join('\n')}`);
    assert.match(verdicts[0][1], /^ok [01]$/, 'its own queue');
    for (const [command, verdict] of verdicts.slice(1)) assert.match(verdict, /NOPERM/, `${command} refused`);
    const anonymous = await run('redis-cli', ['-h', NODE_IP, '-p', String(redis.port), 'ping'], { env: { ...process.env, REDISCLI_AUTH: '' } }).then((r) => r.stdout.trim());
    assert.match(anonymous, /NOAUTH/, 'a client without credentials is refused');
  });
});
