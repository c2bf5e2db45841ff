/**
 * How Go prints the values the node log query's errors quote, so that a message reads byte for
 * byte as the kubelet's: `%q` (strconv.Quote), encoding/json's strings (HTML-safe), strconv.Atoi's
 * parsing and errors, and time.Parse(time.RFC3339) with the JSON form of the result. Pure.
 */

/** Go's strconv.IsPrint, near enough: letters, marks, numbers, punctuation, symbols and the ASCII space. */
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

function hex(code: number, width: number): string {
  return code.toString(16).padStart(width, '0');
}

const QUOTE_ESCAPES: Readonly<Record<string, string>> = { '\x07': '\\a', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\v': '\\v', '"': '\\"', '\\': '\\\\' };

/** Go's `%q` of a string (strconv.Quote). */
export function goQuote(text: string): string {
  let out = '"';
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    const escape = QUOTE_ESCAPES[char];
    if (escape !== undefined) out += escape;
    else if (PRINTABLE.test(char)) out += char;
    else if (code < 0x80) out += `\\x${hex(code, 2)}`;
    else out += code < 0x10000 ? `\\u${hex(code, 4)}` : `\\U${hex(code, 8)}`;
  }
  return `${out}"`;
}

const JSON_ESCAPES: Readonly<Record<string, string>> = { '"': '\\"', '\\': '\\\\', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** A string as Go's encoding/json writes it: `<`, `>`, `&`, U+2028 and U+2029 escaped too. */
export function goJsonString(text: string): string {
  let out = '"';
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    const escape = JSON_ESCAPES[char];
    if (escape !== undefined) out += escape;
    else if (code < 0x20 || char === '<' || char === '>' || char === '&' || code === 0x2028 || code === 0x2029) out += `\\u${hex(code, 4)}`;
    // A lone surrogate is not UTF-8: Go writes the replacement character.
    else if (code >= 0xd800 && code <= 0xdfff) out += '\\ufffd';
    else out += char;
  }
  return `${out}"`;
}

/** A list of strings as Go's encoding/json writes it. */
export function goJsonStrings(values: readonly string[]): string {
  return `[${values.map(goJsonString).join(',')}]`;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** strconv.Atoi on a 64-bit platform: the value, or the error text Go's `err.Error()` gives. */
export function goAtoi(text: string): { readonly value: bigint } | { readonly error: string } {
  if (!/^[+-]?[0-9]+$/u.test(text)) return { error: `strconv.Atoi: parsing ${goQuote(text)}: invalid syntax` };
  const value = BigInt(text);
  if (value < INT64_MIN || value > INT64_MAX) return { error: `strconv.Atoi: parsing ${goQuote(text)}: value out of range` };
  return { value };
}

/** An instant parsed from RFC 3339, with what Go needs to print and compare it. */
export interface GoTime {
  /** Nanoseconds since the epoch: the order `time.Time.After` uses. */
  readonly epochNs: bigint;
  /** How apimachinery prints it in an error: the JSON form, or `String()` when JSON refuses the offset. */
  readonly shown: string;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{1,2}):(\d{2}):(\d{2})(?:[.,](\d+))?(?:(Z)|([+-])(\d{2}):(\d{2}))$/u;

function daysIn(month: number, year: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

function shownTime(fields: { date: string; clock: string; nanos: string; offsetMinutes: number }): string {
  const frac = fields.nanos.replace(/0+$/u, '');
  const abs = Math.abs(fields.offsetMinutes);
  const sign = fields.offsetMinutes < 0 ? '-' : '+';
  // encoding/json refuses an offset of 24 h or more; apimachinery then prints time.Time.String().
  if (abs >= 24 * 60) return `${fields.date} ${fields.clock}${frac === '' ? '' : `.${frac}`} ${sign}${pad(Math.floor(abs / 60))}${pad(abs % 60)} ${sign}${pad(Math.floor(abs / 60))}${pad(abs % 60)}`;
  const zone = fields.offsetMinutes === 0 ? 'Z' : `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
  return goJsonString(`${fields.date}T${fields.clock}${frac === '' ? '' : `.${frac}`}${zone}`);
}

/**
 * Go's `time.Parse(time.RFC3339, text)`: a 4-digit year, a one- or two-digit hour, an optional
 * fraction after `.` or `,` (nanoseconds, further digits dropped), `Z` or an offset up to ±24:60;
 * dates are checked (no February 30). Undefined where Go fails.
 */
export function parseGoRfc3339(text: string): GoTime | undefined {
  const m = RFC3339.exec(text);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((v) => Number(v)) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || second > 59) return undefined;
  const offsetHours = Number(m[10] ?? '0');
  const offsetMins = Number(m[11] ?? '0');
  if (offsetHours > 24 || offsetMins > 60) return undefined;
  const offsetMinutes = (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMins);
  const nanos = (m[7] ?? '').slice(0, 9).padEnd(9, '0');
  const utc = new Date(0);
  utc.setUTCFullYear(year, month - 1, day);
  utc.setUTCHours(hour, minute, second, 0);
  const epochNs = (BigInt(utc.getTime()) - BigInt(offsetMinutes) * 60_000n) * 1_000_000n + BigInt(nanos);
  const date = `${pad(year, 4)}-${pad(month)}-${pad(day)}`;
  return { epochNs, shown: shownTime({ date, clock: `${pad(hour)}:${pad(minute)}:${pad(second)}`, nanos, offsetMinutes }) };
}

/**
 * Go's `url.ParseQuery` as `URL.Query()` uses it: pairs split on `&`; a pair holding `;` or a bad
 * escape is dropped (Go reports it and `Query()` ignores the error); `+` is a space.
 */
export function parseGoQuery(raw: string): Map<string, string[]> {
  const values = new Map<string, string[]>();
  for (const pair of raw.split('&')) {
    if (pair === '' || pair.includes(';')) continue;
    const eq = pair.indexOf('=');
    const key = goUnescape(eq === -1 ? pair : pair.slice(0, eq));
    const value = goUnescape(eq === -1 ? '' : pair.slice(eq + 1));
    if (key === undefined || value === undefined) continue;
    values.set(key, [...(values.get(key) ?? []), value]);
  }
  return values;
}

function goUnescape(text: string): string | undefined {
  if (/%(?![0-9A-Fa-f]{2})/u.test(text)) return undefined;
  // Escapes are bytes (a multi-byte character spans several); the whole is read as UTF-8.
  const parts = (text.match(/%[0-9A-Fa-f]{2}|[^%]+/gu) ?? []).map((token) => (token.startsWith('%') ? Buffer.from([parseInt(token.slice(1), 16)]) : Buffer.from(token.replaceAll('+', ' '), 'utf8')));
  return Buffer.concat(parts).toString('utf8');
}
