/**
 * `$(VAR_NAME)` expansion in env values, command and args, as the kubelet does it
 * (third_party/forked/golang/expansion): a reference to a defined variable is replaced, an
 * undefined one is left as written, and `$$` escapes a `$`.
 */
export type VarLookup = (name: string) => string | undefined;

/** Expands every `$(NAME)` in `input` with `lookup`. */
export function expandVars(input: string, lookup: VarLookup): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    const ch = input.charAt(i);
    if (ch !== '$' || i + 1 >= input.length) {
      out += ch;
      continue;
    }
    const next = input.charAt(i + 1);
    if (next === '$') {
      out += '$';
      i++;
    } else if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close === -1) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      out += lookup(name) ?? `$(${name})`;
      i = close;
    } else {
      out += ch;
    }
  }
  return out;
}
