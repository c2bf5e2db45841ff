import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFakeClock } from '../../../test/doubles/fake-clock.js';
import type { CredentialProviderSpec } from './config.js';
import { CredentialProviderPluginError, type CacheKeyType, type CredentialProviderResponse, type RunCredentialPlugin } from './exec-plugin.js';
import { NodeCredentials } from './node-credentials.js';

function provider(name: string, matchImages: string[], defaultCacheDurationMs = 60_000): CredentialProviderSpec {
  return { name, matchImages, defaultCacheDurationMs, apiVersion: 'credentialprovider.kubelet.k8s.io/v1', args: [], env: [] };
}

/** A plugin runner that answers from a table and counts its runs per provider and image. */
function recordingRunner(answer: (spec: CredentialProviderSpec, image: string) => CredentialProviderResponse | Error): { run: RunCredentialPlugin; runs: string[] } {
  const runs: string[] = [];
  const run: RunCredentialPlugin = async (spec, image) => {
    runs.push(`${spec.name} ${image}`);
    await Promise.resolve();
    const result = answer(spec, image);
    if (result instanceof Error) throw result;
    return result;
  };
  return { run, runs };
}

function answer(cacheKeyType: CacheKeyType, auth: Record<string, string>, cacheDurationMs?: number): CredentialProviderResponse {
  return { cacheKeyType, cacheDurationMs, auth: Object.entries(auth).map(([key, password]) => [key, { username: 'robot', password }] as const) };
}

describe('NodeCredentials', () => {
  it('asks only the providers whose matchImages match, and keeps the answer\'s credentials that match the repository, most specific first', async () => {
    const { run, runs } = recordingRunner((spec) => (spec.name === 'ecr' ? answer('Image', { '*.ecr.test': 'wide', 'eu.ecr.test/team': 'team', 'other.test': 'unrelated' }) : answer('Image', { 'gcr.test': 'g' })));
    const node = new NodeCredentials({ providers: [provider('ecr', ['*.ecr.test']), provider('gcr', ['gcr.test'])], run, clock: createFakeClock() });
    assert.deepEqual((await node.lookup('eu.ecr.test/team/app')).map((c) => c.password), ['team', 'wide']);
    assert.deepEqual(await node.lookup('docker.io/library/busybox'), []);
    assert.deepEqual(await node.lookup('ecr.test/app'), [], '*.ecr.test needs one more label');
    assert.deepEqual(runs, ['ecr eu.ecr.test/team/app']);
  });

  it('caches by the cacheKeyType for the cacheDuration, or the default, and not at all for 0', async () => {
    const clock = createFakeClock();
    const types: Record<string, [CacheKeyType, number | undefined]> = { img: ['Image', undefined], reg: ['Registry', 30_000], all: ['Global', undefined], none: ['Image', 0] };
    const { run, runs } = recordingRunner((spec) => answer(types[spec.name]![0], { 'r.test': spec.name }, types[spec.name]![1]));
    const make = (name: string): NodeCredentials => new NodeCredentials({ providers: [provider(name, ['r.test', 'other.test'])], run, clock });
    const [img, reg, all, none] = ['img', 'reg', 'all', 'none'].map(make) as [NodeCredentials, NodeCredentials, NodeCredentials, NodeCredentials];
    for (const node of [img, reg, all, none]) {
      await node.lookup('r.test/a');
      await node.lookup('r.test/a');
      await node.lookup('r.test/b');
    }
    // Image: a and b each once; Registry: one run serves a and b; Global: one run; 0: every lookup runs.
    assert.deepEqual(runs, ['img r.test/a', 'img r.test/b', 'reg r.test/a', 'all r.test/a', 'none r.test/a', 'none r.test/a', 'none r.test/b']);
    runs.length = 0;
    await all.lookup('other.test/x');
    assert.deepEqual(runs, [], 'the global entry serves another registry too');
    await clock.advance(30_001);
    await reg.lookup('r.test/a');
    await img.lookup('r.test/a');
    assert.deepEqual(runs, ['reg r.test/a'], "the registry entry's 30 s are over; the image entry's default 60 s are not");
    await clock.advance(30_000);
    await img.lookup('r.test/a');
    assert.deepEqual(runs, ['reg r.test/a', 'img r.test/a']);
  });

  it('runs a plugin once for concurrent lookups of the same repository', async () => {
    const { run, runs } = recordingRunner(() => answer('Image', { 'r.test': 'p' }));
    const node = new NodeCredentials({ providers: [provider('p', ['r.test'], 0)], run, clock: createFakeClock() });
    const results = await Promise.all([node.lookup('r.test/a'), node.lookup('r.test/a'), node.lookup('r.test/a')]);
    assert.deepEqual(results.map((r) => r.map((c) => c.password)), [['p'], ['p'], ['p']]);
    assert.equal(runs.length, 1);
  });

  it('skips a failing plugin and goes on with the next provider', async () => {
    const warnings: string[] = [];
    const logger = { warn: (fields: { provider: string }) => { warnings.push(fields.provider); } } as unknown as NonNullable<ConstructorParameters<typeof NodeCredentials>[0]['logger']>;
    const { run } = recordingRunner((spec) => (spec.name === 'broken' ? new CredentialProviderPluginError('broken', 'exited with status 1') : answer('Image', { 'r.test': 'ok' })));
    const node = new NodeCredentials({ providers: [provider('broken', ['r.test']), provider('fine', ['r.test'])], run, clock: createFakeClock(), logger });
    assert.deepEqual((await node.lookup('r.test/a')).map((c) => c.password), ['ok']);
    assert.deepEqual(warnings, ['broken']);
  });
});
