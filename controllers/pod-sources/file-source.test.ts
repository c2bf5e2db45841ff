import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { pino } from 'pino';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import type { PodKey } from '../../util/pod-key.js';
import { createFileSource, createRenameTally, type FileSource } from './file-source.js';
import { podEventsTo } from '../../test/doubles/pod-events.js';

const pod = (name: string, image = 'busybox'): string => JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'main', image }] } });

describe('the manifest-directory pod source', () => {
  let dir = '';
  let events: string[] = [];
  let source: FileSource | undefined;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-manifests-'));
    events = [];
  });
  afterEach(async () => {
    source?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  function create(directory = dir): FileSource {
    const onPod = (key: PodKey, reason: string): void => {
      events.push(`${reason} ${key.name}`);
    };
    // A fake clock: no periodic re-read or debounce fires on its own; the test rescans.
    source = createFileSource({ dir: directory, nodeName: 'n1', logger: pino({ level: 'silent' }), podEvents: podEventsTo(onPod), clock: createFakeClock() });
    return source;
  }

  it('reads *.yaml, *.yml and *.json, skipping dotfiles, other files and subdirectories', async () => {
    await writeFile(path.join(dir, 'a.yaml'), pod('a'));
    await writeFile(path.join(dir, 'b.yml'), pod('b'));
    await writeFile(path.join(dir, 'c.json'), pod('c'));
    await writeFile(path.join(dir, '.d.yaml'), pod('d'));
    await writeFile(path.join(dir, 'e.txt'), pod('e'));
    await mkdir(path.join(dir, 'f.yaml'));
    const s = create();
    assert.equal(s.synced(), false);
    await s.start();
    assert.equal(s.synced(), true);
    assert.deepEqual(s.list().map((p) => p.metadata?.name).sort(), ['a-n1', 'b-n1', 'c-n1']);
    assert.deepEqual(events.sort(), ['added a-n1', 'added b-n1', 'added c-n1']);
    const uid = s.list()[0]?.metadata?.uid ?? '';
    assert.equal(s.get(uid)?.metadata?.uid, uid);
  });

  it('skips an invalid manifest and keeps the others; never throws', async () => {
    await writeFile(path.join(dir, 'good.yaml'), pod('good'));
    await writeFile(path.join(dir, 'bad.yaml'), 'kind: Pod\n  : [');
    await writeFile(path.join(dir, 'dup.yaml'), pod('good', 'other'));
    const s = create();
    await s.start();
    assert.deepEqual(s.list().map((p) => p.metadata?.name), ['good-n1'], 'the second definition of good-n1 (dup.yaml, read first) wins; bad.yaml skipped');
    assert.equal(s.healthy(), true);
  });

  it('reports an edited file as the old UID vanished and a new one added, and a removed file as vanished', async () => {
    const file = path.join(dir, 'web.yaml');
    await writeFile(file, pod('web'));
    const s = create();
    await s.start();
    const first = s.list()[0]?.metadata?.uid ?? '';
    await s.rescan();
    assert.deepEqual(events, ['added web-n1'], 'an unchanged file reports nothing');
    await writeFile(file, pod('web', 'busybox:2'));
    await s.rescan();
    const second = s.list()[0]?.metadata?.uid ?? '';
    assert.notEqual(second, first);
    assert.equal(s.get(first), undefined);
    assert.deepEqual(events, ['added web-n1', 'vanished web-n1', 'added web-n1']);
    await rm(file);
    await s.rescan();
    assert.deepEqual(s.list(), []);
    assert.equal(events.at(-1), 'vanished web-n1');
  });

  it('holds no pods, synced and healthy, while the directory does not exist, and reads it once it does', async () => {
    const missing = path.join(dir, 'later');
    const s = create(missing);
    await s.start();
    assert.equal(s.synced(), true);
    assert.equal(s.healthy(), true);
    assert.deepEqual(s.list(), []);
    await mkdir(missing);
    await writeFile(path.join(missing, 'x.yaml'), pod('x'));
    await s.rescan();
    assert.deepEqual(s.list().map((p) => p.metadata?.name), ['x-n1']);
  });

  /** Rescans (the watch's debounce never fires on the fake clock) until the events since `from` settle on `want`, or 2 s pass. */
  async function rescanUntil(s: FileSource, from: number, want: readonly string[]): Promise<void> {
    for (let waited = 0; waited < 2000 && events.slice(from).length < want.length; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      await s.rescan();
    }
  }

  it('reports a file removed and written back between two reads (the same UID) as vanished, then added, with a new object', async () => {
    const file = path.join(dir, 'web.yaml');
    await writeFile(file, pod('web'));
    const s = create();
    await s.start();
    const before = s.list()[0];
    // As the node conformance test: os.Remove, then the same content written back at once.
    await rm(file);
    await writeFile(file, pod('web'));
    await rescanUntil(s, 1, ['vanished web-n1', 'added web-n1']);
    assert.deepEqual(events, ['added web-n1', 'vanished web-n1', 'added web-n1'], 'the kubelet handles the removal and the creation one after the other');
    const after = s.list()[0];
    assert.equal(after?.metadata?.uid, before?.metadata?.uid, 'the same UID: the same content');
    assert.notEqual(after, before, 'a new object, seen anew');
    await s.rescan();
    assert.equal(events.length, 3, 'reported once');
  });

  it('reports nothing for a file rewritten in place or replaced by a rename over it with the same content', async () => {
    const file = path.join(dir, 'web.yaml');
    await writeFile(file, pod('web'));
    const s = create();
    await s.start();
    await writeFile(file, pod('web'));
    await writeFile(path.join(dir, '.web.yaml.tmp'), pod('web'));
    await rename(path.join(dir, '.web.yaml.tmp'), file);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await s.rescan();
    await s.rescan();
    assert.deepEqual(events, ['added web-n1'], "the kubelet's create of a file it holds is an update");
  });
});

describe('createRenameTally', () => {
  it('names the files renamed twice or more since it was last taken, then starts over', () => {
    const tally = createRenameTally();
    tally.note('rename', '/m/a.yaml');
    tally.note('rename', '/m/a.yaml');
    tally.note('rename', '/m/b.yaml');
    tally.note('change', '/m/c.yaml');
    tally.note('change', '/m/c.yaml');
    assert.deepEqual([...tally.take()], ['/m/a.yaml'], 'removed and created again; b renamed over once; c written in place');
    assert.deepEqual([...tally.take()], []);
    tally.note('rename', '/m/b.yaml');
    assert.deepEqual([...tally.take()], [], 'a rename before the last take does not count');
  });
});
