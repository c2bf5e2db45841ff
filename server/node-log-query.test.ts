/**
 * The node log query's decisions, pure: each case's expected text is what the kubelet v1.37.2's
 * own `newNodeLogQuery` + `validate` printed for the same query string (built with Go 1.26 and
 * apimachinery v0.37.2), so a difference in a comma or a quote fails here.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { goAtoi, goJsonString, goQuote, parseGoQuery, parseGoRfc3339 } from './go-format.js';
import { goRegexpSyntaxError } from './go-regexp-syntax.js';
import { aggregateErrors, fileToCheck, parseNodeLogQuery, serviceLogCandidates, validateNodeLogQuery, type NodeLogQuery } from './node-log-query.js';

/** The kubelet's answer before any file is looked at: 400 or 406 with its text, `none`, or `ok`. */
function decide(raw: string, fileError?: string): string {
  const parsed = parseNodeLogQuery(parseGoQuery(raw));
  if (parsed.kind === 'none') return 'none';
  if (parsed.kind === 'invalid') return `400 ${parsed.message}`;
  const errors = validateNodeLogQuery(parsed.query, fileError);
  return errors.length === 0 ? 'ok' : `406 ${aggregateErrors(errors)}`;
}

function query(raw: string): NodeLogQuery {
  const parsed = parseNodeLogQuery(parseGoQuery(raw));
  assert.equal(parsed.kind, 'query');
  return (parsed as { query: NodeLogQuery }).query;
}

describe('node log query: parameters (400)', () => {
  const cases: readonly [string, string][] = [
    ['query=', '400 query: Invalid value: [""]: may not be empty'],
    ['query=%20%20', '400 query: Invalid value: ["  "]: may not be empty'],
    ['query=%20&query=', '400 query: Invalid value: [" ",""]: may not be empty'],
    ['tailLines=x', '400 tailLines: Invalid value: "x": strconv.Atoi: parsing "x": invalid syntax'],
    ['query=k&tailLines=%205', '400 tailLines: Invalid value: " 5": strconv.Atoi: parsing " 5": invalid syntax'],
    ['query=k&tailLines=1_0', '400 tailLines: Invalid value: "1_0": strconv.Atoi: parsing "1_0": invalid syntax'],
    ['query=k&tailLines=99999999999999999999', '400 tailLines: Invalid value: "99999999999999999999": strconv.Atoi: parsing "99999999999999999999": value out of range'],
    [
      'sinceTime=x&untilTime=y&boot=z&tailLines=w',
      '400 [sinceTime: Invalid value: "x": invalid time format, untilTime: Invalid value: "y": invalid time format, boot: Invalid value: "z": strconv.Atoi: parsing "z": invalid syntax, tailLines: Invalid value: "w": strconv.Atoi: parsing "w": invalid syntax]',
    ],
    ['query=%20&sinceTime=x', '400 [query: Invalid value: [" "]: may not be empty, sinceTime: Invalid value: "x": invalid time format]'],
    ['query=k&sinceTime=2024-02-30T00:00:00Z', '400 sinceTime: Invalid value: "2024-02-30T00:00:00Z": invalid time format'],
    ['query=k&sinceTime=2024-02-01t00:00:00z', '400 sinceTime: Invalid value: "2024-02-01t00:00:00z": invalid time format'],
    ['query=k&sinceTime=2024-02-01T24:00:00Z', '400 sinceTime: Invalid value: "2024-02-01T24:00:00Z": invalid time format'],
    ['query=k&sinceTime=2024-02-01T00:00:00%2B25:00', '400 sinceTime: Invalid value: "2024-02-01T00:00:00+25:00": invalid time format'],
    ['query=k&sinceTime=2024-02-01T00:00:00.Z', '400 sinceTime: Invalid value: "2024-02-01T00:00:00.Z": invalid time format'],
    ['query=k&sinceTime=2024-02-01T00:00:00%2B0100', '400 sinceTime: Invalid value: "2024-02-01T00:00:00+0100": invalid time format'],
  ];
  for (const [raw, want] of cases) it(`?${raw}`, () => { assert.equal(decide(raw), want); });

  it('no query parameter with a value is no query: the file server answers', () => {
    for (const raw of ['', 'foo=bar', 'pattern=', 'tailLines=&sinceTime=', 'query=k;b', 'query=%ZZ']) assert.equal(decide(raw), 'none', raw);
  });

  it("reads Go's url.Values: first value counts, `;` and bad escapes drop a pair, `+` is a space", () => {
    assert.deepEqual(query('query=k&tailLines=5&tailLines=x').options.tailLines, 5n);
    assert.deepEqual(query('query=%ZZ&query=syslog').services, ['syslog']);
    assert.deepEqual(query('query=syslog&x=1;y').services, ['syslog']);
    assert.deepEqual(parseGoQuery('a=1+2&a=%E2%82%AC&b'), new Map([['a', ['1 2', '€']], ['b', ['']]]));
  });
});

describe('node log query: validation (406)', () => {
  const cases: readonly [string, string][] = [
    ['tailLines=5', '406 query: Required value: cannot be empty with options'],
    ['boot=0', '406 query: Required value: cannot be empty with options'],
    ['tailLines=-1', '406 [query: Required value: cannot be empty with options, tailLines: Invalid value: -1: must be between 0 and 100000, inclusive]'],
    ['tailLines=100001', '406 [query: Required value: cannot be empty with options, tailLines: Invalid value: 100001: must be between 0 and 100000, inclusive]'],
    ['query=./syslog&tailLines=5', '406 query: Invalid value: ["./syslog"]: cannot specify file with options'],
    ['query=k/&boot=0', '406 query: Invalid value: ["k/"]: cannot specify file with options'],
    ['query=a&query=b&query=c&query=d&query=e', '406 query: Too many: 5: must have at most 4 items'],
    ['query=a%24b', '406 query: Invalid value: "a$b": input contains unsupported characters'],
    ['query=k%3Bb', '406 query: Invalid value: "k;b": input contains unsupported characters'],
    ['query=a&query=a%20b', '406 query: Invalid value: "a b": input contains unsupported characters'],
    ['query=a$b&query=c$d&query=e&query=f&query=g', '406 [query: Invalid value: "a$b": input contains unsupported characters, query: Invalid value: "c$d": input contains unsupported characters, query: Too many: 5: must have at most 4 items]'],
    ['query=a/b&query=c', '406 query: Invalid value: "[a/b], [c]": cannot specify a file and service'],
    ['query=a/b&query=c/d', '406 query: Invalid value: ["a/b","c/d"]: cannot specify more than one file'],
    [
      'query=x/y&query=z/w&tailLines=-1&boot=3&pattern=(',
      '406 [query: Invalid value: ["x/y","z/w"]: cannot specify more than one file, boot: Invalid value: 3: must be less than 1, tailLines: Invalid value: -1: must be between 0 and 100000, inclusive, pattern: Invalid value: "(": error parsing regexp: missing closing ): `(`]',
    ],
    ['query=k&sinceTime=2024-01-02T03:04:05Z&untilTime=2024-01-01T00:00:00%2B02:00', '406 untilTime: Invalid value: "2024-01-01T00:00:00+02:00": must be after `sinceTime`'],
    ['query=k&sinceTime=2024-01-02T03:04:05.120Z&untilTime=2024-01-02T03:04:05.1Z', '406 untilTime: Invalid value: "2024-01-02T03:04:05.1Z": must be after `sinceTime`'],
    ['query=k&sinceTime=2024-02-01T00:00:00Z&untilTime=2024-01-01T00:00:00%2B00:00', '406 untilTime: Invalid value: "2024-01-01T00:00:00Z": must be after `sinceTime`'],
    ['query=k&untilTime=2024-01-01T00:00:00.1234567891%2B05:30&sinceTime=2024-01-01T00:00:00Z', '406 untilTime: Invalid value: "2024-01-01T00:00:00.123456789+05:30": must be after `sinceTime`'],
    ['query=k&untilTime=2024-01-01T00:00:00,5-05:30&sinceTime=2025-01-01T00:00:00Z', '406 untilTime: Invalid value: "2024-01-01T00:00:00.5-05:30": must be after `sinceTime`'],
    ['query=k&boot=1', '406 boot: Invalid value: 1: must be less than 1'],
    ['query=k&pattern=(', '406 pattern: Invalid value: "(": error parsing regexp: missing closing ): `(`'],
    ['query=k&pattern=a(%3F%3Db)', '406 pattern: Invalid value: "a(?=b)": error parsing regexp: invalid or unsupported Perl syntax: `(?=`'],
    ['query=k&pattern=\\1', '406 pattern: Invalid value: "\\\\1": error parsing regexp: invalid escape sequence: `\\1`'],
    ['query=%3Cx%3E/y', '406 query: Invalid value: ["\\u003cx\\u003e/y"]: statat <x>/y: no such file or directory'],
    ['query=a%22b/c', '406 query: Invalid value: ["a\\"b/c"]: statat a"b/c: no such file or directory'],
  ];
  for (const [raw, want] of cases) {
    // The file lookup is I/O: its error text is given, as lookupInRoot words it.
    const file = fileToCheck(query(raw));
    it(`?${raw}`, () => { assert.equal(decide(raw, file === undefined ? undefined : `statat ${file}: no such file or directory`), want); });
  }

  it('accepts what the kubelet accepts (Go RFC 3339 quirks, signs, zeros, boot below 1)', () => {
    for (const raw of [
      'query=k&sinceTime=2024-02-01T00:00:00%2B24:00',
      'query=k&sinceTime=2024-02-01T00:00:00%2B24:60',
      'query=k&sinceTime=2024-02-01T00:00:00,5Z',
      'query=k&sinceTime=2024-02-01T1:00:00Z',
      'query=k&sinceTime=2024-02-29T00:00:00Z',
      'query=k&tailLines=%2B5',
      'query=k&tailLines=05',
      'query=k&tailLines=-0',
      'query=k&tailLines=100000',
      'query=k&boot=-9223372036854775808',
      'query=syslog&query=syslog',
      'query=k&pattern=(%3FP<a>x)|(%3FP<a>y)',
      'query=./syslog',
    ]) {
      assert.equal(decide(raw), 'ok', raw);
    }
  });

  it('looks a file up only when it alone is asked for, without options', () => {
    assert.equal(fileToCheck(query('query=./syslog')), './syslog');
    assert.equal(fileToCheck(query('query=./syslog&tailLines=1')), undefined);
    assert.equal(fileToCheck(query('query=a/b&query=c/d')), undefined);
    assert.equal(fileToCheck(query('query=kubelet')), undefined);
  });

  it("tries a service's log at <name>, <name>.log, <name>/<name>.log", () => {
    assert.deepEqual(serviceLogCandidates('kubelet'), ['kubelet', 'kubelet.log', 'kubelet/kubelet.log']);
  });
});

describe("Go's formatting and parsing", () => {
  it('quotes as %q and encodes strings as encoding/json', () => {
    assert.equal(goQuote('a"b\\c\n\x01\u00a0é☃\u{1f600}'), '"a\\"b\\\\c\\n\\x01\\u00a0é☃😀"');
    assert.equal(goJsonString('<a&b>\u2028"\n\x01\b'), '"\\u003ca\\u0026b\\u003e\\u2028\\"\\n\\u0001\\b"');
  });

  it('parses integers as strconv.Atoi', () => {
    assert.deepEqual(goAtoi('-9223372036854775808'), { value: -9223372036854775808n });
    assert.deepEqual(goAtoi('9223372036854775808'), { error: 'strconv.Atoi: parsing "9223372036854775808": value out of range' });
    assert.deepEqual(goAtoi('0x10'), { error: 'strconv.Atoi: parsing "0x10": invalid syntax' });
  });

  it('parses RFC 3339 as time.Parse and prints it as apimachinery does', () => {
    assert.equal(parseGoRfc3339('2024-02-01T23:59:59.999999999-24:00')?.shown, '2024-02-01 23:59:59.999999999 -2400 -2400');
    assert.equal(parseGoRfc3339('2024-02-01T00:00:00.000Z')?.shown, '"2024-02-01T00:00:00Z"');
    assert.equal(parseGoRfc3339('0000-01-01T00:00:00Z')?.shown, '"0000-01-01T00:00:00Z"');
    assert.equal(parseGoRfc3339('2023-02-29T00:00:00Z'), undefined);
    assert.equal(parseGoRfc3339('2024-02-01T00:00:00Z '), undefined);
    const a = parseGoRfc3339('2024-01-01T01:00:00+01:00');
    const b = parseGoRfc3339('2024-01-01T00:00:00.000000001Z');
    assert.ok(a !== undefined && b !== undefined && a.epochNs < b.epochNs, 'offsets are applied before comparing');
  });

  it("gives Go's regexp/syntax errors for what RE2 refuses and nothing for what it accepts", () => {
    const cases: readonly [string, string | undefined][] = [
      ['a**', 'error parsing regexp: invalid nested repetition operator: `**`'],
      ['(?<=x)', 'error parsing regexp: invalid named capture: `(?<=x)`'],
      ['[z-a]', 'error parsing regexp: invalid character class range: `z-a`'],
      ['a{1001}', 'error parsing regexp: invalid repeat count: `{1001}`'],
      ['\\p{Foo}', 'error parsing regexp: invalid character class range: `\\p{Foo}`'],
      ['\\', 'error parsing regexp: trailing backslash at end of expression: ``'],
      [`${'('.repeat(1001)}${')'.repeat(1001)}`, `error parsing regexp: expression nests too deeply: \`${'('.repeat(1001)}${')'.repeat(1001)}\``],
      ['(?P<a>x)(?P<a>y', 'error parsing regexp: missing closing ): `(?P<a>x)(?P<a>y`'],
      ['(?P<a>x)(?P<a>y)', undefined],
      ['^error|warn$', undefined],
      ['(?i)\\Qa.b', undefined],
    ];
    for (const [pattern, want] of cases) assert.equal(goRegexpSyntaxError(pattern), want, pattern);
  });
});
