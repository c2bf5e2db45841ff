/**
 * The layering rule, checked on every production file: an import only ever points down.
 *   cmd/ → dashboard/ (its own command; reads the queue's record format) → server/ (the node server:
 *   logs; reads the pod store and the runtime) → controllers/ → reconcilers/ → cri/ and kube/ → util/;
 *   approver/ (the cluster's CSR approver, its own command) beside reconcilers/, on kube/ and util/ alone;
 *   queue-users/ (`nodelet redis-users`, the Redis users of the nodes) beside server/, on the queue's ACL rules
 * (cri/ is the runtime's client, kube/ the API server's: peers that never import each other),
 * and no production file imports a test double (test/).
 *
 * Inside controllers/ and reconcilers/ the rooms are ranked too (below): a file imports only from
 * its own room or from a room of a lower rank, so rooms of one rank never import each other. Every
 * room must be ranked (a new one is placed on purpose), and reconcilers/ keeps no file at its top.
 *
 * And no import circle anywhere, type-only imports included: a circle means a contract sits in
 * an implementation instead of below both sides.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '..');

/** Rank of each top-level folder: a file may import only folders of a lower or equal rank. */
const RANK: Readonly<Record<string, number>> = { util: 0, cri: 1, kube: 1, approver: 2, reconcilers: 2, controllers: 3, server: 4, 'queue-users': 4, dashboard: 5, cmd: 6 };

/**
 * Ranks of the rooms inside a top-level folder. reconcilers/: the lifecycle kernel, then the
 * shared vocabulary, the event recorder, the subsystems (volumes, images, probes, user namespaces, devices, DNS, hooks,
 * spec → CRI config, admission, resize, cgroups), the runtime's plan and executor, status, and
 * the pod's reconcile on top. controllers/: the node-wide loops and sources (the plugin sockets among them), then what reads them
 * (services' pod watch, the pod event dispatcher over the queue), then the NodeAgent over all.
 */
const INNER_RANK: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  reconcilers: {
    lifecycle: 0,
    model: 1,
    events: 2,
    volumes: 3,
    images: 3,
    probes: 3,
    userns: 3,
    devices: 3,
    dns: 4,
    hooks: 4,
    container: 5,
    admission: 6,
    resize: 7,
    cgroups: 8,
    runtime: 9,
    status: 10,
    pod: 11,
  },
  controllers: {
    queue: 0,
    'pod-sources': 0,
    pleg: 0,
    gc: 0,
    logs: 0,
    eviction: 0,
    node: 0,
    runtimeclass: 0,
    plugins: 0,
    services: 1,
    shutdown: 1,
    'pod-events': 1,
    nodeagent: 2,
  },
};

function productionFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return productionFiles(full);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [full] : [];
  });
}

/** Every relative module a source text names: imports, type-only imports, re-exports, dynamic imports. */
function importsIn(text: string): string[] {
  return [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)'(\.{1,2}\/[^']+)'/g)].map((m) => m[1] ?? '');
}

function relativeImports(file: string): string[] {
  return importsIn(readFileSync(file, 'utf8'));
}

/** The file an import names, as a repository path (`.js` → `.ts`). */
function importedFile(file: string, spec: string): string {
  return path.relative(ROOT, path.resolve(path.dirname(file), spec)).replace(/\.js$/, '.ts');
}

function segments(file: string): string[] {
  return path.relative(ROOT, file).split(path.sep);
}

function allProductionFiles(): string[] {
  return Object.keys(RANK).flatMap((layer) => productionFiles(path.join(ROOT, layer)));
}

/** Every upward or test-double import between top-level folders, as `from → to`. */
function violations(): string[] {
  const found: string[] = [];
  for (const layer of Object.keys(RANK)) {
    for (const file of productionFiles(path.join(ROOT, layer))) {
      for (const spec of relativeImports(file)) {
        const target = path.resolve(path.dirname(file), spec);
        const to = segments(target)[0] ?? '';
        const fromRank = RANK[layer] ?? 0;
        const toRank = RANK[to];
        if (toRank === undefined || toRank > fromRank || (to !== layer && toRank === fromRank)) {
          found.push(`${path.relative(ROOT, file)} → ${path.relative(ROOT, target)}`);
        }
      }
    }
  }
  return found;
}

/** Every import between rooms of one top-level folder that does not point to a lower rank, and every unranked room. */
function innerViolations(top: string, ranks: Readonly<Record<string, number>>): string[] {
  const found: string[] = [];
  for (const file of productionFiles(path.join(ROOT, top))) {
    const [, fromRoom] = segments(file);
    const fromRank = fromRoom === undefined ? undefined : ranks[fromRoom];
    if (fromRank === undefined) {
      found.push(`${path.relative(ROOT, file)}: not in a ranked room of ${top}/`);
      continue;
    }
    for (const spec of relativeImports(file)) {
      const target = importedFile(file, spec);
      const [toTop, toRoom] = target.split(path.sep);
      if (toTop !== top || toRoom === fromRoom) continue;
      const toRank = toRoom === undefined ? undefined : ranks[toRoom];
      if (toRank === undefined || toRank >= fromRank) found.push(`${path.relative(ROOT, file)} → ${target} (${fromRoom} ${fromRank} → ${toRoom ?? '?'} ${toRank ?? 'unranked'})`);
    }
  }
  return found;
}

/** The import graph of the production files, by repository path. */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) graph.set(path.relative(ROOT, file), relativeImports(file).map((spec) => importedFile(file, spec)));
  return graph;
}

/** Every import circle of `graph` (its strongly connected parts of more than one file, or a file importing itself), each as its files. */
function importCircles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node) ?? 0);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(next) ?? 0));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) ?? 0, index.get(next) ?? 0));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const part: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      part.push(member);
      if (member === node) break;
    }
    if (part.length > 1 || (graph.get(node) ?? []).includes(node)) circles.push(part.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return circles;
}

describe('layers', () => {
  it('production code imports only downwards, and never a test double', () => {
    assert.deepEqual(violations(), []);
  });

  for (const [top, ranks] of Object.entries(INNER_RANK)) {
    it(`the rooms of ${top}/ import only rooms of a lower rank, and every room is ranked`, () => {
      assert.deepEqual(innerViolations(top, ranks), []);
    });
  }

  it('reconcilers/ keeps no production file at its top: each lives in its room', () => {
    const loose = readdirSync(path.join(ROOT, 'reconcilers')).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'));
    assert.deepEqual(loose, []);
  });

  it('no import circle, type-only imports included', () => {
    assert.deepEqual(importCircles(importGraph(allProductionFiles())), []);
  });

  it('finds a circle of type-only imports, and a longer one, and none in a ladder', () => {
    const graph = new Map<string, string[]>([
      ['a.ts', ['b.ts']],
      ['b.ts', ['a.ts']],
      ['c.ts', ['d.ts']],
      ['d.ts', ['e.ts']],
      ['e.ts', ['c.ts', 'a.ts']],
      ['f.ts', ['f.ts']],
      ['g.ts', ['h.ts']],
      ['h.ts', []],
    ]);
    assert.deepEqual(importCircles(graph).sort((x, y) => (x[0] ?? '').localeCompare(y[0] ?? '')), [['a.ts', 'b.ts'], ['c.ts', 'd.ts', 'e.ts'], ['f.ts']]);
    const text = "import type { X } from './x.js';\nexport { y } from '../y.js';\nconst z = await import('./z.js');\n";
    assert.deepEqual(importsIn(text), ['./x.js', '../y.js', './z.js']);
  });
});
