/**
 * Fault campaign at scale: N generated malformed or hostile pod specs (default 1,000; seeded, see
 * `hostile/generate.ts`) created through the API in batches, each batch in its own namespace.
 * The API's refusals are counted by category (they never reach the node). Every accepted pod must
 * end with a reason from the kubelet's vocabulary and an event (`hostile/outcome.ts`); then the
 * batch is deleted and the agent must finish every pod. At the end: the agent is the same process
 * (zero crashes), its log holds no crash or fatal line, the runtime holds no sandbox or container
 * of the run, no pod or log directory of the run is left, and no path named after the escape
 * marker exists outside the pod directories.
 *
 * Settings (environment): HOSTILE_SPECS (count, 1000), HOSTILE_SEED (20261124), HOSTILE_BATCH
 * (50), HOSTILE_SETTLE_SECONDS (per batch, 240).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { NODE_NAME, eventually, kubectl, requireCluster } from '../e2e/helpers.js';
import { isAlive, requireDaemonPid } from '../faults/harness.js';
import { createBatch, deleteBatch, settle, type Accepted } from './hostile/batch.js';
import { hostileSpecs } from './hostile/generate.js';
import { agentLogPath, escapedPaths, fileSize, leftoverDirs, runtimeLeftovers, scanAgentLog } from './hostile/host-checks.js';
import { FIXTURE_CONFIGMAP, FIXTURE_KEYS, FIXTURE_SECRET, type HostileSpec } from './hostile/types.js';

const COUNT = Number(process.env.HOSTILE_SPECS ?? 1000);
const SEED = Number(process.env.HOSTILE_SEED ?? 20261124);
const BATCH = Number(process.env.HOSTILE_BATCH ?? 50);
const SETTLE_MS = Number(process.env.HOSTILE_SETTLE_SECONDS ?? 240) * 1000;
const DELETE_MS = 180_000;

const REPO_DIR = path.resolve(import.meta.dirname, '..', '..');
const CLUSTER_DIR = process.env.CLUSTER_DIR ?? path.join(REPO_DIR, '.cluster');
const AGENT_ROOT = path.join(CLUSTER_DIR, 'nodelet-root');
const POD_LOG_DIR = '/var/log/pods';

/** Counts by key, printed largest first. */
class Histogram {
  readonly counts = new Map<string, number>();
  add(key: string): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }
  total(): number {
    return [...this.counts.values()].reduce((a, b) => a + b, 0);
  }
  print(title: string): void {
    console.log(`${title} (${this.total()}):`);
    for (const [key, n] of [...this.counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))) console.log(`  ${String(n).padStart(5)}  ${key}`);
  }
}

const label = (s: HostileSpec): string => `#${s.index} ${s.category}/${s.variant}`;

describe(`${COUNT} hostile pod specs (seed ${SEED})`, { timeout: 4 * 3600_000 }, () => {
  const core = (() => {
    const config = new KubeConfig();
    config.loadFromFile(process.env.KUBECONFIG ?? '');
    return config.makeApiClient(CoreV1Api);
  })();
  const prefix = `hostile-${randomBytes(2).toString('hex')}`;
  const namespaces: string[] = [];
  const uids = new Set<string>();
  const refusals = new Histogram();
  const results = new Histogram();
  const byVariant = new Map<string, Histogram>();
  const failures: string[] = [];
  let agentPid = 0;
  let logOffset = 0;
  let escapedBefore: string[] = [];

  before(async () => {
    requireCluster();
    agentPid = await requireDaemonPid('nodelet');
    logOffset = await fileSize(agentLogPath(CLUSTER_DIR));
    escapedBefore = await escapedPaths(AGENT_ROOT, POD_LOG_DIR);
    console.log(`seed ${SEED}, ${COUNT} specs in batches of ${BATCH}, namespaces ${prefix}-*, agent pid ${agentPid}`);
  });

  after(async () => {
    // Leave nothing behind, whatever failed: the namespaces take their pods and fixtures with them.
    for (const ns of namespaces) await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']).catch(() => '');
  });

  async function newNamespace(batch: number): Promise<string> {
    const namespace = `${prefix}-${batch}`;
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    namespaces.push(namespace);
    await eventually(`service account default in ${namespace}`, async () => (await core.readNamespacedServiceAccount({ name: 'default', namespace })) ?? undefined);
    const data = Object.fromEntries(FIXTURE_KEYS.map((k) => [k, `value-${k}`]));
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: FIXTURE_CONFIGMAP }, data } });
    await core.createNamespacedSecret({ namespace, body: { metadata: { name: FIXTURE_SECRET }, stringData: data } });
    return namespace;
  }

  function record(accepted: readonly Accepted[], outcomes: ReadonlyMap<string, { settled: boolean; reason: string }>): void {
    for (const a of accepted) {
      const o = outcomes.get(a.uid) ?? { settled: false, reason: 'no outcome' };
      const key = o.settled ? o.reason : `UNSETTLED: ${o.reason.replace(/\(.*\)/, '').trim()}`;
      results.add(key);
      const variant = `${a.spec.category}/${a.spec.variant}`;
      if (!byVariant.has(variant)) byVariant.set(variant, new Histogram());
      byVariant.get(variant)!.add(key);
      if (!o.settled) failures.push(`${label(a.spec)} pod ${a.name}: ${o.reason}`);
    }
  }

  async function runBatch(batch: number, from: number): Promise<void> {
    const namespace = await newNamespace(batch);
    const specs = hostileSpecs({ seed: SEED, nodeName: NODE_NAME, namespace }, from, Math.min(COUNT, from + BATCH));
    const started = Date.now();
    const created = await createBatch(core, namespace, specs);
    for (const r of created.refused) refusals.add(r.category);
    for (const a of created.accepted) uids.add(a.uid);
    const outcomes = await settle({ core, namespace, accepted: created.accepted, timeoutMs: SETTLE_MS, alive: () => isAlive(agentPid) });
    record(created.accepted, outcomes);
    const settledAt = Date.now();
    const stuck = await deleteBatch(core, namespace, DELETE_MS);
    for (const name of stuck) failures.push(`batch ${batch}: pod ${name} still in the API ${DELETE_MS / 1000} s after its deletion`);
    await core.deleteNamespace({ name: namespace });
    const unsettled = [...outcomes.values()].filter((o) => !o.settled).length;
    console.log(
      `batch ${batch} (specs ${from}..${from + specs.length - 1}): ${created.accepted.length} accepted, ${created.refused.length} refused, ` +
        `${unsettled} unsettled, settled in ${((settledAt - started) / 1000).toFixed(1)} s, deleted in ${((Date.now() - settledAt) / 1000).toFixed(1)} s, ${stuck.length} stuck`,
    );
  }

  it('gives every accepted pod a kubelet-compatible reason, and the agent never crashes', async () => {
    for (let from = 0, batch = 0; from < COUNT; from += BATCH, batch++) {
      await runBatch(batch, from);
      if (!(await isAlive(agentPid))) {
        failures.push(`the agent (pid ${agentPid}) died during batch ${batch}`);
        break;
      }
    }
    refusals.print('refused by the API server, by category');
    results.print('accepted pods, by outcome');
    console.log('outcomes by variant:');
    for (const [variant, h] of [...byVariant].sort((a, b) => a[0].localeCompare(b[0]))) console.log(`  ${variant}: ${[...h.counts].map(([k, n]) => `${k}×${n}`).join(', ')}`);
    console.log(`specs ${COUNT}: refused ${refusals.total()}, accepted ${results.total()}, failures ${failures.length}`);
    for (const f of failures.slice(0, 50)) console.log(`  FAIL ${f}`);
    assert.equal(refusals.total() + results.total(), COUNT, 'every spec was either refused or accepted and classified');
    assert.deepEqual(failures, [], 'every accepted pod settled with a kubelet-compatible reason and an event, and was finished after deletion');
  });

  it('kept the same agent process, with no crash or fatal line in its log', async () => {
    assert.equal(await requireDaemonPid('nodelet'), agentPid, 'the agent is the process that started the run');
    const scan = await scanAgentLog(agentLogPath(CLUSTER_DIR), logOffset);
    console.log(`agent log during the run: ${scan.lines} lines, ${scan.errors} at level error, ${scan.suspiciousCount} not JSON, fatal or naming a crash`);
    for (const line of scan.suspicious) console.log(`  ${line}`);
    assert.equal(scan.suspiciousCount, 0);
  });

  it('left nothing of the run in the runtime, the agent root or the pod logs, and nothing outside them', async () => {
    const left = await eventually('the runtime to hold nothing of the run', async () => {
      const l = await runtimeLeftovers(prefix);
      return l.sandboxes === 0 && l.containers === 0 ? l : undefined;
    }, 180_000).catch(async () => runtimeLeftovers(prefix));
    const dirs = await eventually('no pod or log directory of the run', async () => {
      const d = await leftoverDirs({ agentRoot: AGENT_ROOT, podLogDir: POD_LOG_DIR, uids, namespacePrefix: prefix });
      return d.length === 0 ? d : undefined;
    }, 120_000).catch(async () => leftoverDirs({ agentRoot: AGENT_ROOT, podLogDir: POD_LOG_DIR, uids, namespacePrefix: prefix }));
    const escaped = (await escapedPaths(AGENT_ROOT, POD_LOG_DIR)).filter((p) => !escapedBefore.includes(p));
    console.log(`after deleting ${uids.size} accepted pods: runtime sandboxes ${left.sandboxes}, containers ${left.containers}; leftover dirs ${dirs.length}; escaped paths ${escaped.length} (before the run: ${escapedBefore.length})`);
    for (const d of [...dirs, ...escaped].slice(0, 30)) console.log(`  ${d}`);
    assert.deepEqual(left, { sandboxes: 0, containers: 0 });
    assert.deepEqual(dirs, []);
    assert.deepEqual(escaped, []);
  });
});
