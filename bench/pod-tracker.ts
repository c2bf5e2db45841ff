/**
 * Watches the pods of one namespace and notes when each was first seen Running (or Failed: rejected
 * at admission), when its first container was first seen terminated, and when it was deleted from
 * the API (`performance.now()` milliseconds). If the watch ends early it lists (times
 * of what changed meanwhile are then the list's time) and watches again from the list.
 */
import { performance } from 'node:perf_hooks';
import { CoreV1Api, Watch, type KubeConfig, type V1Pod } from '@kubernetes/client-node';

export class PodTracker {
  /** Pod name → when it was first seen with phase Running. */
  readonly runningAt = new Map<string, number>();
  /** Pod name → when it was first seen with phase Failed (e.g. rejected by the node's admission). */
  readonly failedAt = new Map<string, number>();
  /** Pod name → when its first container was first seen with a terminated state. */
  readonly terminatedAt = new Map<string, number>();
  /** Pod name → when its deletion from the API was seen. */
  readonly deletedAt = new Map<string, number>();
  private readonly known = new Set<string>();
  private controller: AbortController | undefined;
  private stopped = false;

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly namespace: string,
  ) {}

  /** Resolves once the watch is established. */
  async start(): Promise<void> {
    await this.watchFrom(await this.list());
  }

  stop(): void {
    this.stopped = true;
    this.controller?.abort();
  }

  private note(type: string, pod: V1Pod): void {
    const name = pod.metadata?.name ?? '';
    const now = performance.now();
    if (type === 'DELETED') {
      if (!this.deletedAt.has(name)) this.deletedAt.set(name, now);
      return;
    }
    this.known.add(name);
    const phase = pod.status?.phase;
    if (phase === 'Running' && !this.runningAt.has(name)) this.runningAt.set(name, now);
    if (phase === 'Failed' && !this.failedAt.has(name)) this.failedAt.set(name, now);
    if (pod.status?.containerStatuses?.[0]?.state?.terminated !== undefined && !this.terminatedAt.has(name)) this.terminatedAt.set(name, now);
  }

  /** Pods seen Running or Failed: settled, one way or the other. */
  settled(): number {
    let count = this.runningAt.size;
    for (const name of this.failedAt.keys()) if (!this.runningAt.has(name)) count++;
    return count;
  }

  /** Lists the namespace (noting states and deletions since the last look); returns the resourceVersion. */
  private async list(): Promise<string> {
    const list = await this.kubeConfig.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: this.namespace });
    const names = new Set(list.items.map((p) => p.metadata?.name ?? ''));
    for (const pod of list.items) this.note('ADDED', pod);
    for (const name of this.known) if (!names.has(name)) this.note('DELETED', { metadata: { name } });
    return list.metadata?.resourceVersion ?? '';
  }

  private async watchFrom(resourceVersion: string): Promise<void> {
    this.controller = await new Watch(this.kubeConfig).watch(
      `/api/v1/namespaces/${this.namespace}/pods`,
      { resourceVersion },
      (type: string, pod: V1Pod) => {
        this.note(type, pod);
      },
      () => {
        if (!this.stopped) this.restart();
      },
    );
  }

  private restart(): void {
    setTimeout(() => {
      this.list()
        .then((rv) => this.watchFrom(rv))
        .catch(() => {
          if (!this.stopped) this.restart();
        });
    }, 200);
  }
}
