/**
 * Go's `%q` string quoting (`strconv.Quote`), which the kubelet uses when it writes labels and
 * annotations into downwardAPI files (`key="value"` lines) and in messages users read (volume
 * events, readiness-gate conditions). Consumers parse those files with Go's `strconv.Unquote`, so
 * the escaping must match, not merely resemble JSON.
 */

const NAMED_ESCAPES: Readonly<Record<string, string>> = {
  '\x07': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
  '\\': '\\\\',
  '"': '\\"',
};

/** Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space. */
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

function hex(codePoint: number, width: number): string {
  return codePoint.toString(16).padStart(width, '0');
}

function quoteCodePoint(char: string): string {
  const named = NAMED_ESCAPES[char];
  if (named !== undefined) return named;
  const codePoint = char.codePointAt(0) ?? 0;
  // A lone UTF-16 surrogate is not valid UTF-8; the API server would have sent U+FFFD.
  if (codePoint >= 0xd800 && codePoint <= 0xdfff) return '\ufffd';
  if (PRINTABLE.test(char)) return char;
  if (codePoint < 0x80) return `\\x${hex(codePoint, 2)}`;
  if (codePoint <= 0xffff) return `\\u${hex(codePoint, 4)}`;
  return `\\U${hex(codePoint, 8)}`;
}

/** `value` as Go's `strconv.Quote` renders it, quotes included. */
export function goQuote(value: string): string {
  let quoted = '"';
  for (const char of value) quoted += quoteCodePoint(char);
  return `${quoted}"`;
}

/** A map as `key="value"` lines sorted by key, without a trailing newline (the kubelet's `FormatMap`). */
export function formatMap(map: Readonly<Record<string, string>> | undefined): string {
  const entries = Object.entries(map ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.map(([key, value]) => `${key}=${goQuote(value)}`).join('\n');
}
