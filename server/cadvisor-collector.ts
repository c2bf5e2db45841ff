/**
 * Gathers one `/metrics/cadvisor` scrape: lists the runtime's sandboxes, containers and their
 * writable layers, walks the root cgroup and the kubepods hierarchy, reads each cgroup
 * (cgroup-stats-reader.ts), each sandbox's network namespace and the machine's facts, and hands
 * plain figures to cadvisor-metrics.ts.
 *
 * Unlike the kubelet's cAdvisor, nodelet keeps no housekeeping loop and no cache: a scrape reads
 * the files it reports, a few hundred small reads on a busy node. It is bounded: the whole scrape
 * shares one deadline (`timeoutMs`, and the client going away), at most `concurrency` cgroups are
 * read at once, and a deadline that fires mid-scrape reports what was read with
 * `container_scrape_error 1`. A cgroup that vanished between the walk and its read (a container
 * that exited) is skipped, as cAdvisor drops a container it no longer sees; a runtime that cannot
 * be listed gives no container series and `container_scrape_error 1`, as cAdvisor's failed
 * GetRequestedContainersInfo does.
 */
import { readFile, statfs } from 'node:fs/promises';
import path from 'node:path';
import type { CgroupTarget, RuntimeView } from './cadvisor-cgroups.js';
import { classifyCgroup, deviceOf, kubepodsCgroup } from './cadvisor-cgroups.js';
import { cadvisorMetrics, type ContainerSample, type FilesystemFigures } from './cadvisor-metrics.js';
import { parseDiskstats, parseDiskstatsNames, type DiskCounters } from './cgroup-stats.js';
import { countDescriptors, readInterfaces, readMaxOpenFiles, type CgroupReading, type CgroupTree } from './cgroup-stats-reader.js';
import type { MachineInfo, VersionInfo } from './machine-info.js';
import type { ImageFsSource, StatsSource } from './stats-collector.js';
import type { ContainerStats } from '../cri/types.js';

/** Where the collector reads from; every reader is injectable for tests. */
export interface CadvisorCollectorDeps {
  readonly runtime: StatsSource;
  readonly images: ImageFsSource;
  /** `--cgroup-root`; undefined with `--cgroups-per-qos=false` (no kubepods hierarchy: only `/` is reported). */
  readonly cgroupRoot: string | undefined;
  readonly sandboxImage: string;
  /** The host's cgroup tree; undefined on a host without one. */
  readonly tree: () => Promise<CgroupTree | undefined>;
  readonly machine: () => Promise<MachineInfo>;
  readonly version: () => Promise<VersionInfo>;
  /** Directories whose filesystems the root container reports (the root dir, the pod logs). */
  readonly rootDirs: readonly string[];
  readonly procDir?: string;
  readonly now?: () => number;
  /** The whole scrape's limit (default 5 s). */
  readonly timeoutMs?: number;
  /** Cgroups read at once (default 8). */
  readonly concurrency?: number;
}

/** How deep below kubepods cgroups are: QoS class, pod, container. */
const KUBEPODS_DEPTH = 3;

/** Filesystem facts for one scrape. */
interface FsContext {
  readonly mountinfo: string;
  readonly diskstats: ReadonlyMap<string, DiskCounters>;
  readonly deviceNames: ReadonlyMap<string, string>;
  /** The image filesystem (without disk counters): containers' writable layers are on it. */
  readonly imageFs: FilesystemFigures | undefined;
  /** The root container's filesystems, one per device, with their disk counters. */
  readonly roots: readonly FilesystemFigures[];
}

export class CadvisorCollector {
  private readonly procDir: string;
  private readonly now: () => number;

  constructor(private readonly deps: CadvisorCollectorDeps) {
    this.procDir = deps.procDir ?? '/proc';
    this.now = deps.now ?? Date.now;
  }

  /** The exposition text; never throws (what cannot be read is reported by the error gauges). */
  async scrape(signal?: AbortSignal): Promise<string> {
    // A timer of our own (AbortSignal.timeout's is unref'd and would not keep a stuck scrape's process alive to answer).
    const timeout = new AbortController();
    const timer = setTimeout(() => {
      timeout.abort(new Error('the /metrics/cadvisor scrape ran out of time'));
    }, this.deps.timeoutMs ?? 5000);
    const deadline = AbortSignal.any([timeout.signal, ...(signal === undefined ? [] : [signal])]);
    try {
      const [machine, version] = await Promise.all([this.deps.machine().catch(() => undefined), this.deps.version().catch(() => undefined)]);
      let containers: ContainerSample[] = [];
      let containerError = false;
      try {
        const result = await this.containers(deadline, machine);
        containers = result.samples;
        containerError = result.partial;
      } catch {
        containerError = true;
      }
      return cadvisorMetrics({ nowMs: this.now(), version, machine, containers, containerError });
    } finally {
      clearTimeout(timer);
    }
  }

  private async containers(signal: AbortSignal, machine: MachineInfo | undefined): Promise<{ samples: ContainerSample[]; partial: boolean }> {
    const [sandboxes, containers, stats, tree] = await Promise.all([
      this.deps.runtime.listPodSandbox(undefined, { signal }),
      this.deps.runtime.listContainers(undefined, { signal }),
      this.deps.runtime.listContainerStats({ signal }),
      this.deps.tree(),
    ]);
    if (tree === undefined) return { samples: [], partial: true };
    const view: RuntimeView = { sandboxes, containers, sandboxImage: this.deps.sandboxImage };
    const fs = await this.fsContext(signal);
    const layers = new Map(stats.map((s) => [s.id, s]));
    const ids = ['/', ...(this.deps.cgroupRoot === undefined ? [] : await this.walk(tree, kubepodsCgroup(this.deps.cgroupRoot), signal))];
    const targets = ids.map((id) => classifyCgroup(id, view));
    const samples: ContainerSample[] = [];
    let partial = false;
    const queue = [...targets];
    const worker = async (): Promise<void> => {
      for (let target = queue.shift(); target !== undefined; target = queue.shift()) {
        if (signal.aborted) {
          partial = true;
          return;
        }
        try {
          const sample = await this.sample(tree, target, { fs, machine, layers, signal });
          if (sample !== undefined) samples.push(sample);
        } catch {
          // A cgroup that could not be read whole (deadline, permissions): not reported, and said so.
          partial = true;
        }
      }
    };
    await Promise.all(Array.from({ length: this.deps.concurrency ?? 8 }, worker));
    return { samples, partial };
  }

  /** The kubepods cgroup and its descendants down to container cgroups. */
  private async walk(tree: CgroupTree, top: string, signal: AbortSignal): Promise<string[]> {
    const found: string[] = [];
    let level = [top];
    for (let depth = 0; depth <= KUBEPODS_DEPTH && level.length > 0; depth++) {
      signal.throwIfAborted();
      const next: string[] = [];
      for (const id of level) {
        const children = await tree.children(id, signal);
        // The top exists only when it has been made; its absence is no error.
        if (depth === 0 && children.length === 0 && (await tree.read(id, signal)) === undefined) return found;
        found.push(id);
        next.push(...children.map((c) => path.posix.join(id, c)));
      }
      level = next;
    }
    return found;
  }

  private async sample(tree: CgroupTree, target: CgroupTarget, context: { fs: FsContext; machine: MachineInfo | undefined; layers: ReadonlyMap<string, ContainerStats>; signal: AbortSignal }): Promise<ContainerSample | undefined> {
    const { signal, machine } = context;
    const reading = await tree.read(target.id, signal);
    if (reading === undefined) return undefined;
    const { fds, sockets } = await countDescriptors(this.procDir, reading.pids, signal);
    // The root's processes are those of the root cgroup; its "root process" is init.
    const rootPid = target.kind === 'root' ? 1 : target.kind === 'container' || target.kind === 'sandbox' ? lowest(reading.pids) : undefined;
    const maxOpenFiles = rootPid === undefined ? undefined : await readMaxOpenFiles(this.procDir, rootPid, signal);
    const withNetwork = target.kind === 'root' || target.kind === 'sandbox';
    const interfaces = withNetwork && rootPid !== undefined ? await readInterfaces(this.procDir, rootPid, signal) : undefined;
    return {
      labels: target.labels,
      figures: target.kind === 'root' && machine !== undefined ? rootSpec(reading, machine) : reading.figures,
      readAtMs: reading.readAtMs,
      ...this.times(target, reading),
      processes: { count: reading.pids.length, fds, sockets, maxOpenFiles },
      ...(interfaces === undefined ? {} : { interfaces }),
      ...this.filesystems(target, context),
      deviceNames: context.fs.deviceNames,
    };
  }

  private times(target: CgroupTarget, reading: CgroupReading): { creationTimeSeconds: number; startTimeSeconds: number } {
    const cgroupSeconds = Math.floor((reading.createdAtMs ?? this.now()) / 1000);
    const created = target.createdAtNs === undefined ? cgroupSeconds : Number(target.createdAtNs / 1_000_000_000n);
    return { creationTimeSeconds: created, startTimeSeconds: cgroupSeconds };
  }

  /** The root's filesystems; a container's writable layer on the image filesystem. */
  private filesystems(target: CgroupTarget, context: { fs: FsContext; layers: ReadonlyMap<string, ContainerStats> }): { filesystems?: FilesystemFigures[] } {
    if (target.kind === 'root') return { filesystems: [...context.fs.roots] };
    const layer = target.containerId === undefined ? undefined : context.layers.get(target.containerId)?.writableLayer;
    const imageFs = context.fs.imageFs;
    if (layer?.usedBytes === undefined || imageFs === undefined) return {};
    return { filesystems: [{ ...imageFs, usageBytes: Number(layer.usedBytes), inodes: imageFs.inodes, inodesFree: imageFs.inodesFree }] };
  }

  private async fsContext(signal: AbortSignal): Promise<FsContext> {
    const [mountinfo, diskstatsText] = await Promise.all([readFile(path.join(this.procDir, 'self', 'mountinfo'), { encoding: 'utf8', signal }).catch(() => ''), readFile(path.join(this.procDir, 'diskstats'), { encoding: 'utf8', signal }).catch(() => '')]);
    const diskstats = parseDiskstats(diskstatsText);
    const statOf = async (dir: string): Promise<FilesystemFigures | undefined> => {
      const device = deviceOf(mountinfo, dir);
      if (device === undefined) return undefined;
      try {
        const s = await statfs(dir);
        const disk = diskstats.get(device);
        return { device, limitBytes: s.blocks * s.bsize, usageBytes: (s.blocks - s.bfree) * s.bsize, inodes: s.files, inodesFree: s.ffree, ...(disk === undefined ? {} : { disk }) };
      } catch {
        return undefined;
      }
    };
    const imageMount = (await this.deps.images.imageFsInfo({ signal }).catch(() => []))[0]?.mountpoint;
    const imageFs = imageMount === undefined ? undefined : await statOf(imageMount);
    const roots = await Promise.all([...this.deps.rootDirs, ...(imageMount === undefined ? [] : [imageMount])].map(statOf));
    const byDevice = new Map<string, FilesystemFigures>();
    for (const fs of roots) if (fs !== undefined && !byDevice.has(fs.device)) byDevice.set(fs.device, fs);
    const layerFs = imageFs === undefined ? undefined : { device: imageFs.device, limitBytes: imageFs.limitBytes, usageBytes: imageFs.usageBytes, inodes: imageFs.inodes, inodesFree: imageFs.inodesFree };
    return { mountinfo, diskstats, deviceNames: parseDiskstatsNames(diskstatsText), imageFs: layerFs, roots: [...byDevice.values()] };
  }
}

function lowest(pids: readonly number[]): number | undefined {
  return pids.length === 0 ? undefined : Math.min(...pids);
}

/** The root container's memory limits are the machine's (cAdvisor's raw handler for `/`). */
function rootSpec(reading: CgroupReading, machine: MachineInfo): CgroupReading['figures'] {
  const spec = { ...reading.figures.spec, hasMemory: true, memoryLimit: machine.memoryBytes, memorySwapLimit: machine.swapBytes };
  return { ...reading.figures, spec };
}
