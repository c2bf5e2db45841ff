/** Redis' `CLIENT LIST` reply, read: one record per connection, its fields by name. */

/** One connection as `CLIENT LIST` describes it (`id`, `addr`, `name`, `cmd`, …). */
export type ClientRecord = Readonly<Record<string, string>>;

/** Parses `CLIENT LIST` text into one record per connection (a field without a value is the empty string). */
export function parseClientList(text: string): ClientRecord[] {
  return text
    .split(/\r?\n/)
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const fields: Record<string, string> = {};
      for (const pair of line.trim().split(' ')) {
        const at = pair.indexOf('=');
        if (at > 0) fields[pair.slice(0, at)] = pair.slice(at + 1);
      }
      return fields;
    });
}
