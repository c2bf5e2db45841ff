/**
 * The layering rule, checked on every production file: an import only ever points down.
 *   cmd/ → dashboard/ (its own command; reads the queue's record format) → server/ (the node server:
 *   logs; reads the pod store and the runtime) → controllers/ → reconcilers/ → cri/ and kube/ → util/
 * (cri/ is the runtime's client, kube/ the API server's: peers that never import each other),
 * and no production file imports a test double (test/). Within controllers/, subsystems may use
 * each other (the NodeAgent reads the queue's counts), but never cmd/.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '..');

/** Rank of each top-level folder: a file may import only folders of a lower or equal rank. */
const RANK: Readonly<Record<string, number>> = { util: 0, cri: 1, kube: 1, reconcilers: 2, controllers: 3, server: 4, dashboard: 5, cmd: 6 };

function productionFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return productionFiles(full);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [full] : [];
  });
}

function relativeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)'(\.{1,2}\/[^']+)'/g)].map((m) => m[1] ?? '');
}

function topFolder(file: string): string {
  return path.relative(ROOT, file).split(path.sep)[0] ?? '';
}

/** Every upward or test-double import, as `from → to`. */
function violations(): string[] {
  const found: string[] = [];
  for (const layer of Object.keys(RANK)) {
    for (const file of productionFiles(path.join(ROOT, layer))) {
      for (const spec of relativeImports(file)) {
        const target = path.resolve(path.dirname(file), spec);
        const to = topFolder(target);
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

describe('layers', () => {
  it('production code imports only downwards, and never a test double', () => {
    assert.deepEqual(violations(), []);
  });
});
