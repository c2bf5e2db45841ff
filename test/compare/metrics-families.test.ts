/**
 * nodelet's metrics against the kubelet's, scraped live: the kubelet control node (`npm run
 * kubelet:up`, v1.37.2 built from the same modules) and nodelet's node run the same pod (CPU and
 * memory limits, an exec readiness probe, an HTTP liveness probe); every endpoint a scraper reads
 * (`/metrics`, `/metrics/cadvisor`, `/metrics/probes`, `/metrics/resource`) is scraped on both
 * through the API server's node proxy and parsed by Prometheus' own parser. The test prints what the
 * kubelet exports that nodelet does not — families, and label names of the families both export —
 * and asserts that this is exactly the documented list of docs/metrics.md (each entry with its
 * reason): a family nodelet starts exporting, or one it loses, fails the test until the list says so.
 * A family nodelet registers but has no series for yet (an error counter before the first error)
 * counts as exported: its name is in nodelet's registry, and it shows once the event happens.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parsePrometheus, type ParsedFamilies } from '../cluster/promparse.js';
import { createNodeMetrics } from '../../server/node-metrics.js';
import { systemClock } from '../../util/clock.js';
import { NODE_NAME, apply, createNamespace, deleteNamespace, kubectl, requireCluster, waitForPhase } from '../e2e/helpers.js';

const KUBELET_NODE = `${NODE_NAME}-kubelet`;
const ENDPOINTS = ['/metrics', '/metrics/cadvisor', '/metrics/probes', '/metrics/resource'] as const;
const DOC = path.join(import.meta.dirname, '..', '..', 'docs', 'metrics.md');

/** The pod both nodes run: the kubelet node is tainted for the benchmark, hence the toleration. */
function workload(namespace: string, node: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `work-${node}`, namespace },
    spec: {
      nodeName: node,
      tolerations: [{ operator: 'Exists' }],
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'main',
          image: 'busybox:1.35',
          command: ['sh', '-c', 'mkdir -p /www && echo ok > /www/index.html && httpd -p 8080 -h /www && while true; do :; done'],
          resources: { requests: { cpu: '50m', memory: '16Mi' }, limits: { cpu: '100m', memory: '64Mi' } },
          readinessProbe: { exec: { command: ['true'] }, periodSeconds: 2 },
          livenessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 2 },
        },
      ],
    },
  };
}

/** `family` → its label names, every series together (the `le`/`quantile` of histograms and summaries aside). */
function shapes(families: ParsedFamilies): Map<string, Set<string>> {
  return new Map(Object.entries(families).map(([name, family]) => [name, new Set(family.series.flatMap((s) => Object.keys(s.labels)).filter((l) => l !== 'le' && l !== 'quantile'))]));
}

/** What the kubelet's scrape has that nodelet's lacks: `family`, or `family{label}` for a label of a family both have. */
function missingFromNodelet(kubelet: Map<string, Set<string>>, nodelet: Map<string, Set<string>>): string[] {
  const missing: string[] = [];
  for (const [family, labels] of kubelet) {
    const ours = nodelet.get(family);
    if (ours === undefined) missing.push(family);
    else for (const label of labels) if (!ours.has(label)) missing.push(`${family}{${label}}`);
  }
  return missing.sort();
}

/** The documented entries: `endpoint` → family names, `prefix*` patterns or `family{label}`. */
function documented(): Map<string, string[]> {
  const entries = new Map<string, string[]>();
  for (const line of readFileSync(DOC, 'utf8').split('\n')) {
    const match = /^\| `(\/metrics[a-z/]*)` \| `([^`]+)` \|/.exec(line);
    if (match === null) continue;
    const [, endpoint = '', family = ''] = match;
    entries.set(endpoint, [...(entries.get(endpoint) ?? []), family]);
  }
  return entries;
}

function covered(entry: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => (p.endsWith('*') ? entry.startsWith(p.slice(0, -1)) : entry === p));
}

async function scrape(node: string, endpoint: string): Promise<Map<string, Set<string>>> {
  return shapes(await parsePrometheus(await kubectl(['get', '--raw', `/api/v1/nodes/${node}/proxy${endpoint}`])));
}

describe('metric families: nodelet against the kubelet, the same pod on each', () => {
  let ns = '';

  before(async () => {
    requireCluster();
    const ready = JSON.parse(await kubectl(['get', 'node', KUBELET_NODE, '-o', 'json'])) as { status?: { conditions?: { type: string; status: string }[] } };
    assert.equal(ready.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True', `the kubelet node ${KUBELET_NODE} is Ready (npm run test:compare starts it)`);
    ns = await createNamespace('compare-metrics');
    await Promise.all([apply(workload(ns, NODE_NAME)), apply(workload(ns, KUBELET_NODE))]);
    await Promise.all([waitForPhase(ns, `work-${NODE_NAME}`, 'Running'), waitForPhase(ns, `work-${KUBELET_NODE}`, 'Running')]);
    // Probes run, stats are collected (the kubelet's cadvisor housekeeping is 10-15 s).
    await sleep(20_000);
  });

  after(async () => {
    if (ns !== '') await deleteNamespace(ns);
  });

  for (const endpoint of ENDPOINTS) {
    it(`${endpoint}: what the kubelet exports and nodelet does not is the documented list`, async (t) => {
      const [kubelet, nodelet] = await Promise.all([scrape(KUBELET_NODE, endpoint), scrape(NODE_NAME, endpoint)]);
      // A family nodelet registers shows once its first event happens (an error counter, say): present, not missing.
      const registered = endpoint === '/metrics' ? new Set(createNodeMetrics({ nodeName: NODE_NAME, clock: systemClock, cgroupVersion: 1 }).familyNames()) : new Set<string>();
      const withoutSeries = [...kubelet.keys()].filter((f) => !nodelet.has(f) && registered.has(f));
      const missing = missingFromNodelet(kubelet, nodelet).filter((m) => !registered.has(m));
      const patterns = documented().get(endpoint) ?? [];
      t.diagnostic(`${endpoint}: the kubelet exports ${kubelet.size} families, nodelet ${nodelet.size}; registered by nodelet without a series in this scrape: ${withoutSeries.join(' ') || 'none'}; missing on nodelet (${missing.length}): ${missing.join(' ')}`);
      assert.deepEqual(missing.filter((m) => !covered(m, patterns)), [], `exported by the kubelet, missing on nodelet and not in docs/metrics.md (${endpoint})`);
      // An entry of the list that nodelet now exports (or the kubelet no longer does) is stale.
      const stale = patterns.filter((p) => !missing.some((m) => covered(m, [p])));
      assert.deepEqual(stale, [], `docs/metrics.md lists for ${endpoint} what nodelet exports or the kubelet does not`);
    });
  }
});
