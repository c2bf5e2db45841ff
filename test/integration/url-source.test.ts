/**
 * The manifest-URL source against a real HTTP server on 127.0.0.1 (Node's fetch, real sockets,
 * real timeouts): what each kind of answer does to the URL's pods. No cluster needed.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, beforeEach, describe, it } from 'node:test';
import { pino } from 'pino';
import { createUrlSource, type UrlSource } from '../../controllers/pod-sources/url-source.js';
import { createFakeClock } from '../doubles/fake-clock.js';
import { podEventsTo } from '../doubles/pod-events.js';

interface Answer {
  readonly status: number;
  readonly body: string;
  /** Milliseconds to wait before answering (a hung server). */
  readonly delayMs?: number;
}

const podJson = (name: string, image = 'busybox'): Record<string, unknown> => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'main', image }] } });
const podList = (...names: string[]): string => JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: names.map((n) => podJson(n)) });

describe('the manifest-URL pod source (real HTTP on 127.0.0.1)', () => {
  let server: Server;
  let url = '';
  let answer: Answer = { status: 200, body: '' };
  const requests: IncomingHttpHeaders[] = [];
  let events: string[] = [];
  let logLines: string[] = [];

  before(async () => {
    server = createServer((req, res) => {
      requests.push(req.headers);
      const { status, body, delayMs } = answer;
      const reply = (): void => {
        res.writeHead(status, { 'content-type': 'application/json' }).end(body);
      };
      if (delayMs === undefined) reply();
      else setTimeout(reply, delayMs).unref();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pods`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => { resolve(); }));
  });
  beforeEach(() => {
    events = [];
    logLines = [];
    requests.length = 0;
  });

  function create(extra: { headers?: readonly (readonly [string, string])[]; timeoutMs?: number } = {}): UrlSource {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done): void {
        logLines.push(chunk.toString());
        done();
      },
    });
    // A fake clock: no poll fires on its own; each test polls.
    return createUrlSource({
      url,
      headers: extra.headers ?? [],
      nodeName: 'Node-1',
      logger: pino({ level: 'info' }, sink),
      podEvents: podEventsTo((key, reason) => events.push(`${reason} ${key.name}`)),
      clock: createFakeClock(),
      ...(extra.timeoutMs === undefined ? {} : { timeoutMs: extra.timeoutMs }),
    });
  }
  const names = (source: UrlSource): string[] => source.list().map((p) => p.metadata?.name ?? '').sort();
  const failureLogs = (): number => logLines.filter((l) => l.includes('manifest URL failed')).length;

  it('runs a single Pod, then a PodList: new pods added, unchanged ones kept with their UID', async () => {
    answer = { status: 200, body: JSON.stringify(podJson('web')) };
    const source = create();
    assert.equal(source.synced(), false);
    await source.start();
    try {
      assert.equal(source.synced(), true);
      assert.deepEqual(names(source), ['web-node-1']);
      const [web] = source.list();
      assert.equal(web?.metadata?.annotations?.['kubernetes.io/config.source'], 'http');
      assert.equal(web?.spec?.nodeName, 'Node-1');
      answer = { status: 200, body: podList('web', 'db') };
      await source.poll();
      assert.deepEqual(names(source), ['db-node-1', 'web-node-1']);
      assert.equal(source.get(web?.metadata?.uid ?? '')?.metadata?.name, 'web-node-1', 'the same pod from a list: the same UID');
      assert.deepEqual(events, ['added web-node-1', 'added db-node-1']);
      assert.equal(source.healthy(), true);
    } finally {
      source.stop();
    }
  });

  it('keeps the pods when the body is invalid (any pod of a list) or the server answers 500', async () => {
    answer = { status: 200, body: podList('web', 'db') };
    const source = create();
    await source.start();
    try {
      answer = { status: 200, body: podList('web', 'Bad_Name') };
      await source.poll();
      assert.deepEqual(names(source), ['db-node-1', 'web-node-1'], 'an invalid item refuses the whole body');
      assert.equal(source.healthy(), false);
      answer = { status: 500, body: podList('web') };
      await source.poll();
      assert.deepEqual(names(source), ['db-node-1', 'web-node-1'], 'a 500 is no update, whatever its body');
      assert.deepEqual(events, ['added web-node-1', 'added db-node-1'], 'nothing vanished');
      answer = { status: 200, body: podList('web') };
      await source.poll();
      assert.deepEqual(names(source), ['web-node-1']);
      assert.equal(source.healthy(), true);
      assert.deepEqual(events.slice(2), ['vanished db-node-1']);
    } finally {
      source.stop();
    }
  });

  it('removes every pod on an empty body, and counts it as synced', async () => {
    answer = { status: 200, body: '' };
    const first = create();
    await first.start();
    first.stop();
    assert.equal(first.synced(), true, 'an empty first body marks the source seen');
    assert.deepEqual(first.list(), []);
    answer = { status: 200, body: podList('web') };
    const source = create();
    await source.start();
    try {
      answer = { status: 200, body: '' };
      await source.poll();
      assert.deepEqual(names(source), []);
      assert.ok(events.includes('vanished web-node-1'));
    } finally {
      source.stop();
    }
  });

  it('sends the configured headers, repeated names in order', async () => {
    answer = { status: 200, body: podList('web') };
    const source = create({ headers: [['a', 'hello'], ['b', 'again'], ['b', 'beautiful']] });
    await source.start();
    source.stop();
    assert.equal(requests.length, 1);
    assert.equal(requests[0]?.a, 'hello');
    assert.equal(requests[0]?.b, 'again, beautiful');
  });

  it('gives up on a server that does not answer within the timeout, keeping the pods and never synced before', async () => {
    answer = { status: 200, body: podList('web'), delayMs: 5_000 };
    const source = create({ timeoutMs: 200 });
    const started = Date.now();
    await source.start();
    try {
      const elapsed = Date.now() - started;
      console.log(`url-source: a GET to a server answering after 5 s gave up after ${elapsed} ms (timeout 200 ms)`);
      assert.equal(source.synced(), false, 'nothing was ever delivered');
      assert.equal(source.healthy(), false);
      assert.deepEqual(source.list(), []);
      answer = { status: 200, body: podList('web') };
      await source.poll();
      assert.deepEqual(names(source), ['web-node-1']);
      answer = { status: 200, body: podList(), delayMs: 5_000 };
      await source.poll();
      assert.deepEqual(names(source), ['web-node-1'], 'a timeout is no update');
    } finally {
      source.stop();
    }
  });

  it('logs at most 3 failures in a row, then nothing until it succeeds again', async () => {
    answer = { status: 500, body: '' };
    const source = create();
    await source.start();
    try {
      for (let i = 0; i < 5; i += 1) await source.poll();
      assert.equal(requests.length, 6);
      assert.equal(failureLogs(), 3, '6 failures, 3 logged');
      answer = { status: 200, body: podList('web') };
      await source.poll();
      assert.equal(logLines.filter((l) => l.includes('answers again')).length, 1);
      answer = { status: 500, body: '' };
      await source.poll();
      assert.equal(failureLogs(), 4, 'a success resets the count');
    } finally {
      source.stop();
    }
  });

  it('changes nothing on a body equal to the last one: the pods keep their objects and config.seen', async () => {
    answer = { status: 200, body: podList('web') };
    const source = create();
    await source.start();
    try {
      const before = source.list()[0];
      await source.poll();
      assert.equal(source.list()[0], before, 'the very same object');
      assert.deepEqual(events, ['added web-node-1']);
    } finally {
      source.stop();
    }
  });
});
