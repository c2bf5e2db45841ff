/** Sysctl names as the kubelet compares them. */

/**
 * The dot form of a sysctl name: `net/ipv4/conf/eno2.100/rp_filter` → `net.ipv4.conf.eno2/100.rp_filter`
 * (when the first separator is a slash, slashes and dots swap), as the kubelet normalizes them.
 */
export function normalizeSysctlName(name: string): string {
  const first = name.search(/[./]/);
  if (first === -1 || name[first] === '.') return name;
  return name.replace(/[./]/g, (c) => (c === '.' ? '/' : '.'));
}
