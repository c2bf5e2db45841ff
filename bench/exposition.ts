/** Reading figures out of a Prometheus text exposition (an agent's `/metrics`). */

/**
 * The sum of every series of metric `name` (each label set, exactly that name), or undefined when
 * the exposition has none. Pure.
 */
export function seriesTotal(exposition: string, name: string): number | undefined {
  let total: number | undefined;
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(`${name} `) && !line.startsWith(`${name}{`)) continue;
    const value = Number.parseFloat(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) total = (total ?? 0) + value;
  }
  return total;
}
