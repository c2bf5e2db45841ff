/**
 * An in-memory {@link CgroupFs}: cgroups by name with their last settings, processes placed in
 * them by the test, and removals that fail on demand. Records every call in order.
 */
import type { CgroupFs } from '../../reconcilers/cgroups/cgroupfs.js';
import type { CgroupResources } from '../../reconcilers/cgroups/pod-cgroup-config.js';

/** Thrown by a removal the test made fail. */
export class FakeCgroupBusyError extends Error {
  constructor(name: string) {
    super(`rmdir ${name}: device or resource busy`);
    this.name = 'FakeCgroupBusyError';
  }
}

export class FakeCgroupFs implements CgroupFs {
  /** Name → settings written so far (merged). */
  readonly cgroups = new Map<string, CgroupResources>();
  /** Name → processes in it. */
  readonly procs = new Map<string, number[]>();
  /** What changed or read a cgroup's settings, and every listing of children; existence checks are not recorded. */
  readonly calls: string[] = [];
  /** Names whose removal fails. */
  readonly busy = new Set<string>();

  create(name: string, resources: CgroupResources): Promise<void> {
    this.calls.push(`create ${name}`);
    const parts = name.split('/').filter((p) => p !== '');
    for (let i = 1; i < parts.length; i += 1) {
      const parent = `/${parts.slice(0, i).join('/')}`;
      if (!this.cgroups.has(parent)) this.cgroups.set(parent, {});
    }
    this.cgroups.set(name, { ...(this.cgroups.get(name) ?? {}), ...resources });
    return Promise.resolve();
  }

  read(name: string): Promise<CgroupResources> {
    this.calls.push(`read ${name}`);
    const current = this.cgroups.get(name);
    return current === undefined ? Promise.reject(new Error(`no cgroup ${name}`)) : Promise.resolve({ ...current });
  }

  update(name: string, resources: CgroupResources): Promise<void> {
    this.calls.push(`update ${name}`);
    const current = this.cgroups.get(name);
    if (current === undefined) return Promise.reject(new Error(`no cgroup ${name}`));
    this.cgroups.set(name, { ...current, ...resources });
    return Promise.resolve();
  }

  exists(name: string): Promise<boolean> {
    return Promise.resolve(this.cgroups.has(name));
  }

  existsAnywhere(name: string): Promise<boolean> {
    return Promise.resolve(this.cgroups.has(name));
  }

  children(name: string): Promise<string[]> {
    this.calls.push(`children ${name}`);
    const prefix = `${name}/`;
    return Promise.resolve([...this.cgroups.keys()].filter((n) => n.startsWith(prefix) && !n.slice(prefix.length).includes('/')).map((n) => n.slice(prefix.length)).sort());
  }

  pids(name: string): Promise<number[]> {
    return Promise.resolve([...this.procs.entries()].filter(([n]) => n === name || n.startsWith(`${name}/`)).flatMap(([, p]) => p));
  }

  destroy(name: string): Promise<void> {
    this.calls.push(`destroy ${name}`);
    if (this.busy.has(name)) return Promise.reject(new FakeCgroupBusyError(name));
    for (const n of [...this.cgroups.keys()]) if (n === name || n.startsWith(`${name}/`)) this.cgroups.delete(n);
    return Promise.resolve();
  }

  /** Removes a killed process from wherever it is. */
  exit(pid: number): void {
    for (const [name, pids] of this.procs) this.procs.set(name, pids.filter((p) => p !== pid));
  }
}
