/**
 * Whether a pattern is valid Go regexp syntax (`regexp/syntax.Parse(p, syntax.Perl)`), with Go's
 * error text: the kubelet validates the node log query's `pattern` so. re2js is a port of RE2/J,
 * itself a port of Go's parser, and gives Go's error codes and fragments; two differences are
 * bridged here: re2js leaves out the fragment where Go prints an empty one (a trailing backslash)
 * or the whole pattern (too deep, too large), and it refuses a repeated group name, which Go accepts.
 */
import { RE2JS, RE2JSSyntaxException } from 're2js';

const PREFIX = 'error parsing regexp: ';
/** Go's codes whose fragment is the whole expression. */
const WHOLE_PATTERN = new Set(['expression nests too deeply', 'expression too large']);
const DUPLICATE_NAME = 'duplicate capture group name';
/** A suffix no valid name reaches for by chance: it makes repeated group names distinct for re2js. */
const RENAME_MARK = '_0nodelet0dup';

function goMessage(error: RE2JSSyntaxException, pattern: string): string {
  const fragment = error.input ?? (WHOLE_PATTERN.has(error.error) ? pattern : '');
  return `${PREFIX}${error.error}: \`${fragment}\``;
}

/** Every `(?P<name>` / `(?<name>` with a valid name made unique; Go lets a name repeat. */
function distinctNames(pattern: string): string {
  let n = 0;
  return pattern.replace(/\(\?P?<[A-Za-z0-9_]+>/gu, (opening) => `${opening.slice(0, -1)}${RENAME_MARK}${String(n++)}>`);
}

function syntaxError(pattern: string): RE2JSSyntaxException | undefined {
  try {
    RE2JS.compile(pattern);
    return undefined;
  } catch (error) {
    // Anything else (a program too big to compile) is past the parse, which is all Go checks here.
    return error instanceof RE2JSSyntaxException ? error : undefined;
  }
}

/** Go's `syntax.Parse(pattern, syntax.Perl)` error text, or undefined when the pattern parses. */
export function goRegexpSyntaxError(pattern: string): string | undefined {
  const error = syntaxError(pattern);
  if (error === undefined) return undefined;
  if (error.error !== DUPLICATE_NAME) return goMessage(error, pattern);
  const renamed = distinctNames(pattern);
  const again = syntaxError(renamed);
  if (again === undefined) return undefined;
  return goMessage(again, pattern).replace(new RegExp(`${RENAME_MARK}\\d+>`, 'gu'), '>');
}
