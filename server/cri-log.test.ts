import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LogRenderer, parseCriLine, parseTimestamp, type CriLogLine } from './cri-log.js';

const T0 = '2026-11-24T04:00:00.123456789Z';

function line(text: string): CriLogLine {
  const parsed = parseCriLine(Buffer.from(text));
  assert.ok(parsed !== undefined, `not a CRI line: ${text}`);
  return parsed;
}

function renderAll(renderer: LogRenderer, lines: readonly string[]): string {
  return lines.map((l) => renderer.render(line(l)).toString()).join('');
}

describe('parseTimestamp', () => {
  it('keeps nanoseconds and prints nine fraction digits, Z for UTC', () => {
    assert.deepEqual(parseTimestamp(T0), { timeNs: 1795492800123456789n, timestamp: T0 });
    assert.deepEqual(parseTimestamp('2026-11-24T04:00:00.5Z'), { timeNs: 1795492800500000000n, timestamp: '2026-11-24T04:00:00.500000000Z' });
    assert.deepEqual(parseTimestamp('2026-11-24T04:00:00Z'), { timeNs: 1795492800000000000n, timestamp: '2026-11-24T04:00:00.000000000Z' });
    assert.deepEqual(parseTimestamp('2026-11-24T06:00:00.1+02:00'), { timeNs: 1795492800100000000n, timestamp: '2026-11-24T06:00:00.100000000+02:00' });
    assert.equal(parseTimestamp('2026-11-24T06:00:00.1+00:00')?.timestamp, '2026-11-24T06:00:00.100000000Z');
  });

  it('refuses what is not RFC 3339', () => {
    for (const bad of ['', 'yesterday', '2026-11-24 04:00:00Z', '2026-11-24T04:00:00', '2026-11-24T04:00:00.1234567890Z']) assert.equal(parseTimestamp(bad), undefined, bad);
  });
});

describe('parseCriLine', () => {
  it('reads a full line, keeping its newline, and a partial one, dropping it', () => {
    const full = line(`${T0} stdout F hello world\n`);
    assert.deepEqual({ ...full, content: full.content.toString() }, { timeNs: 1795492800123456789n, timestamp: T0, stream: 'stdout', partial: false, content: 'hello world\n' });
    const partial = line(`${T0} stderr P hel\n`);
    assert.deepEqual([partial.stream, partial.partial, partial.content.toString()], ['stderr', true, 'hel']);
  });

  it('keeps spaces inside the content, and reads forward-compatible tags (F:x)', () => {
    assert.equal(line(`${T0} stdout F  two  spaces \n`).content.toString(), ' two  spaces \n');
    assert.equal(line(`${T0} stdout P:extra x\n`).partial, true);
    assert.equal(line(`${T0} stdout F:extra x\n`).partial, false);
  });

  it('refuses a line without timestamp, stream or tag', () => {
    for (const bad of ['', '\n', 'hello\n', `${T0}\n`, `${T0} stdin F x\n`, `${T0} stdout\n`, `bogus stdout F x\n`]) assert.equal(parseCriLine(Buffer.from(bad)), undefined, JSON.stringify(bad));
  });
});

describe('LogRenderer', () => {
  const lines = [`${T0} stdout P par`, `${T0} stdout P tial `, `2026-11-24T04:00:01.000000000Z stdout F line\n`, `2026-11-24T04:00:02Z stderr F next\n`];

  it('joins partial lines into one, as the kubelet writes them', () => {
    assert.equal(renderAll(new LogRenderer({ sinceNs: 0n, timestamps: false }), lines), 'partial line\nnext\n');
  });

  it('prefixes the timestamp of the first piece only', () => {
    assert.equal(renderAll(new LogRenderer({ sinceNs: 0n, timestamps: true }), lines), `${T0} partial line\n2026-11-24T04:00:02.000000000Z next\n`);
  });

  it('skips lines older than since (a line at exactly since is kept)', () => {
    const since = parseTimestamp('2026-11-24T04:00:01Z')?.timeNs ?? 0n;
    assert.equal(renderAll(new LogRenderer({ sinceNs: since, timestamps: false }), lines), 'line\nnext\n');
    assert.equal(renderAll(new LogRenderer({ sinceNs: since + 1n, timestamps: false }), lines), 'next\n');
  });

  it('a skipped partial piece still decides the next prefix (no timestamp mid-line)', () => {
    const since = parseTimestamp('2026-11-24T04:00:01Z')?.timeNs ?? 0n;
    assert.equal(renderAll(new LogRenderer({ sinceNs: since, timestamps: true }), lines), 'line\n2026-11-24T04:00:02.000000000Z next\n');
  });

  it('cuts at exactly limitBytes, timestamps included, and then writes nothing', () => {
    for (const limit of [1, 3, 8, 12, 13, 100]) {
      const renderer = new LogRenderer({ sinceNs: 0n, timestamps: false, limitBytes: limit });
      const out = renderAll(renderer, lines);
      assert.equal(out, 'partial line\nnext\n'.slice(0, limit), `limit ${limit}`);
      assert.equal(renderer.exhausted, limit <= 18, `limit ${limit}`);
    }
    const stamped = new LogRenderer({ sinceNs: 0n, timestamps: true, limitBytes: 40 });
    assert.equal(renderAll(stamped, lines), `${T0} partial line\n`.slice(0, 40));
  });
});
