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

/**
 * Each series of counter `name` by the value of its label `label` (series without it are left
 * out), summed when other labels split one value further. Pure.
 */
export function seriesByLabel(exposition: string, name: string, label: string): Map<string, number> {
  const byValue = new Map<string, number>();
  const labelPattern = new RegExp(`[{,]${label}="((?:[^"\\\\]|\\\\.)*)"`);
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const labelValue = labelPattern.exec(line.slice(0, line.lastIndexOf('}') + 1))?.[1];
    const value = Number.parseFloat(line.slice(line.lastIndexOf(' ') + 1));
    if (labelValue === undefined || !Number.isFinite(value)) continue;
    byValue.set(labelValue, (byValue.get(labelValue) ?? 0) + value);
  }
  return byValue;
}
