/**
 * Gathers the figures of `/stats/summary` and `/metrics/resource`: the runtime's ready sandboxes,
 * running containers and their `ListContainerStats`, the image filesystem, and the node's own
 * readings. CPU rates (usageNanoCores) come from two cumulative readings, as the kubelet's CRI
 * stats provider computes them: the previous reading of each container (and of the node) is kept,
 * a summary request moves it forward, a metrics scrape only reads (so a scraper does not shorten
 * the summary's interval); readings of containers that are gone are dropped.
 */
import type { CallOptions, ContainerStats, FilesystemUsage, PodSandbox, Container } from '../cri/types.js';
import path from 'node:path';
import type { Clock } from '../util/clock.js';
import { readFs, readNode, type NodeReading } from './node-stats.js';
import { usageNanoCores, type CpuSample, type FsFigures } from './stats-formulas.js';
import { buildSummary, type ContainerInput, type PodStorage, type Summary, type SummaryInput } from './summary.js';
import { measureDir, type DirUsage } from '../util/dir-usage.js';
import { PodVolumeStats, type DirMeasure } from './volume-stats.js';
import type { ContainerLogUsage } from './storage-metrics.js';

/** The runtime calls the statistics need. */
export interface StatsSource {
  listPodSandbox(filter?: undefined, options?: CallOptions): Promise<PodSandbox[]>;
  listContainers(filter?: undefined, options?: CallOptions): Promise<Container[]>;
  listContainerStats(options?: CallOptions): Promise<ContainerStats[]>;
}

/** The image service's one call used here. */
export interface ImageFsSource {
  imageFsInfo(options?: CallOptions): Promise<FilesystemUsage[]>;
}

/** What the collector reads from; the node readers are injectable for tests. */
export interface StatsCollectorDeps {
  readonly nodeName: string;
  readonly rootDir: string;
  /** Where container logs are (`<dir>/<namespace>_<name>_<uid>/<container>/`); absent: no log figures. */
  readonly podLogDir?: string;
  readonly runtime: StatsSource;
  readonly images: ImageFsSource;
  readonly clock: Clock;
  readonly readNode?: () => Promise<NodeReading>;
  readonly readFs?: (dir: string) => Promise<FsFigures>;
  /** Measures a volume's or a log directory's usage; default `measureDir` (the agent's is timed). */
  readonly measureDir?: DirMeasure;
}

interface CachedRate {
  readonly sample: CpuSample;
  readonly nanoCores: bigint | undefined;
}

const NODE_KEY = '';

export class StatsCollector {
  private readonly rates = new Map<string, CachedRate>();
  private readonly readNode: () => Promise<NodeReading>;
  private readonly readFs: (dir: string) => Promise<FsFigures>;
  private readonly volumes: PodVolumeStats;
  private readonly measure: DirMeasure;

  constructor(private readonly deps: StatsCollectorDeps) {
    this.readNode = deps.readNode ?? (() => readNode());
    this.readFs = deps.readFs ?? readFs;
    this.measure = deps.measureDir ?? measureDir;
    this.volumes = new PodVolumeStats(deps.rootDir, this.readFs, undefined, this.measure);
  }

  /** The Summary; `update` moves the CPU readings forward (the summary does, a metrics scrape does not). */
  async summary(update: boolean): Promise<Summary> {
    const [sandboxes, containers, stats, imageFs, node] = await Promise.all([
      this.deps.runtime.listPodSandbox(),
      this.deps.runtime.listContainers(),
      this.deps.runtime.listContainerStats(),
      this.imageFs(),
      this.readNode(),
    ]);
    const now = BigInt(this.deps.clock.now()) * 1_000_000n;
    const byId = new Map(stats.map((s) => [s.id, s]));
    const running = containers.filter((c) => c.state === 'CONTAINER_RUNNING');
    const inputs = running.map((c): ContainerInput => {
      const s = byId.get(c.id);
      const cpu = s?.cpu;
      const nanoCores = cpu?.usageCoreNanoSeconds === undefined ? undefined : this.rate(c.id, { timestamp: cpu.timestamp, usageCoreNanoSeconds: cpu.usageCoreNanoSeconds }, update);
      return { sandboxId: c.podSandboxId, name: c.metadata.name, createdAt: c.createdAt, stats: s, nanoCores };
    });
    const nodeNanoCores = this.rate(NODE_KEY, { timestamp: now, usageCoreNanoSeconds: node.usageCoreNanoSeconds }, update);
    if (update) this.forgetGone(new Set(running.map((c) => c.id)));
    // Volumes and logs: only the summary reports them (a metrics scrape does not walk directories).
    const storage = update ? await this.storage(sandboxes, running) : undefined;
    const input: SummaryInput = { nodeName: this.deps.nodeName, now, node, nodeNanoCores, rootFs: await this.readFs(this.deps.rootDir), imageFs, sandboxes, containers: inputs, ...(storage === undefined ? {} : { storage }) };
    return buildSummary(input);
  }

  /** Each ready pod's volumes (measured at most once a minute) and its running containers' log files. */
  private async storage(sandboxes: readonly PodSandbox[], running: readonly Container[]): Promise<ReadonlyMap<string, PodStorage>> {
    const ready = sandboxes.filter((s) => s.state === 'SANDBOX_READY');
    this.volumes.keepOnly(new Set(ready.map((s) => s.metadata.uid)));
    const logFs = this.deps.podLogDir === undefined ? undefined : await this.readFs(this.deps.podLogDir);
    const storage = new Map<string, PodStorage>();
    for (const sandbox of ready) {
      const { uid } = sandbox.metadata;
      const logs = new Map<string, { usage: DirUsage; fs: FsFigures }>();
      if (this.deps.podLogDir !== undefined && logFs !== undefined) {
        for (const c of running.filter((r) => r.podSandboxId === sandbox.id)) {
          logs.set(c.metadata.name, { usage: await this.measure(this.logDirOf(sandbox, c)), fs: logFs });
        }
      }
      storage.set(uid, { volumes: await this.volumes.of(uid, this.deps.clock.now()), logs });
    }
    return storage;
  }

  /**
   * Each running container's log usage, measured now (`kubelet_container_log_filesystem_used_bytes`,
   * which the kubelet reads from its stats provider's pod stats: running containers of ready pods).
   */
  async containerLogUsage(): Promise<ContainerLogUsage[]> {
    if (this.deps.podLogDir === undefined) return [];
    const [sandboxes, containers] = await Promise.all([this.deps.runtime.listPodSandbox(), this.deps.runtime.listContainers()]);
    const ready = new Map(sandboxes.filter((s) => s.state === 'SANDBOX_READY').map((s) => [s.id, s]));
    const usage: ContainerLogUsage[] = [];
    for (const c of containers) {
      const sandbox = ready.get(c.podSandboxId);
      if (sandbox === undefined || c.state !== 'CONTAINER_RUNNING') continue;
      const { usedBytes } = await this.measure(this.logDirOf(sandbox, c));
      usage.push({ uid: sandbox.metadata.uid, namespace: sandbox.metadata.namespace, pod: sandbox.metadata.name, container: c.metadata.name, usedBytes });
    }
    return usage;
  }

  /** `<podLogDir>/<namespace>_<name>_<uid>/<container>/`, where the runtime writes the container's log files. */
  private logDirOf(sandbox: PodSandbox, container: Container): string {
    const { name, namespace, uid } = sandbox.metadata;
    return path.join(this.deps.podLogDir ?? '', `${namespace}_${name}_${uid}`, container.metadata.name);
  }

  private rate(key: string, sample: CpuSample, update: boolean): bigint | undefined {
    const cached = this.rates.get(key);
    // The same reading again (the runtime caches its figures): answer what was computed for it.
    if (cached?.sample.timestamp === sample.timestamp) return cached.nanoCores;
    const nanoCores = usageNanoCores(cached?.sample, sample);
    if (update) this.rates.set(key, { sample, nanoCores });
    return nanoCores;
  }

  private forgetGone(live: ReadonlySet<string>): void {
    for (const key of this.rates.keys()) if (key !== NODE_KEY && !live.has(key)) this.rates.delete(key);
  }

  private async imageFs(): Promise<SummaryInput['imageFs']> {
    const [first] = await this.deps.images.imageFsInfo();
    if (first === undefined) return undefined;
    return { fs: await this.readFs(first.mountpoint), usedBytes: first.usedBytes, inodesUsed: first.inodesUsed };
  }
}
