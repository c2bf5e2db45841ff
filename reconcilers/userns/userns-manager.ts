/**
 * The pods' user namespaces, as the kubelet's user-namespace manager (pkg/kubelet/userns) gives
 * them: a pod with `hostUsers: false` gets one free range of the node's host IDs (a random free
 * slot, so two pods never share IDs and a freed range is not handed out again at once), mapped
 * from 0 for both UIDs and GIDs, kept in its pod directory's `userns` file for its whole life
 * (read back after an agent restart, before any new range is handed out), and freed when the pod
 * is forgotten. Every other pod runs in the host's user namespace (mode `NODE`).
 *
 * The runtime must support user namespaces for the pod's handler (the CRI Status's
 * `runtime_handlers[].features.user_namespaces`): else the sandbox config cannot be generated,
 * with the kubelet's message.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { UserNamespace } from '../../cri/types.js';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';
import type { PodKey } from '../../util/pod-key.js';
import { rangeOfSlot, slotOfRange, type NodeIdRange, type PodIdRange } from './id-range.js';
import { parseUsernsFile, readUsernsFile, writeUsernsFile } from './userns-file.js';
import { readdir } from 'node:fs/promises';
import path from 'node:path';

/** Why a pod's user namespace cannot be set up (a sandbox-config failure). */
export class UserNamespaceError extends Error {
  override readonly name = 'UserNamespaceError';
}

/** The user namespace of the host: what every pod without `hostUsers: false` gets. */
export const HOST_USER_NAMESPACE: UserNamespace = { mode: 'NODE', uids: [], gids: [] };

/** Whether a runtime handler supports user namespaces: `unknown` when the runtime does not list it. */
export type HandlerUsernsSupport = 'supported' | 'unsupported' | 'unknown';

/** The kubelet's refusal when the handler cannot run user namespaces. */
export function unsupportedHandlerMessage(handler: string, support: Exclude<HandlerUsernsSupport, 'supported'>): string {
  const base = handler === ''
    ? "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
    : `can't set \`spec.hostUsers: false\`, RuntimeClass handler "${handler}" does not support user namespaces`;
  return support === 'unknown' ? `${base}: the handler "${handler}" is not known` : base;
}

export interface UserNamespaceManagerOptions {
  readonly rootDir: string;
  /** The node's host IDs for pods; undefined: user namespaces are off on this node (why: `offReason`). */
  readonly range: NodeIdRange | undefined;
  /** Why `range` is undefined, for the refusal. */
  readonly offReason?: string;
  /** A number in [0, 1): where the search for a free slot starts. */
  readonly random: () => number;
}

export class UserNamespaceManager implements PodLifecycleObserver {
  /** Slot index → pod UID, and back. */
  private readonly owners = new Map<number, string>();
  private readonly slots = new Map<string, number>();

  constructor(private readonly options: UserNamespaceManagerOptions) {}

  /**
   * Records the ranges of the pods whose directories hold a `userns` file (before any pod is
   * synced: a restarted agent must not hand out a range a running pod holds).
   * @throws UserNamespaceError for a file this agent cannot have written (the kubelet refuses to start too)
   */
  async loadFromDisk(): Promise<number> {
    let uids: string[];
    try {
      uids = await readdir(path.join(this.options.rootDir, 'pods'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw error;
    }
    for (const uid of uids) {
      const content = await readUsernsFile(this.options.rootDir, uid);
      if (content !== undefined) this.record(uid, parseUsernsFile(content));
    }
    return this.slots.size;
  }

  /**
   * The pod's user namespace for the CRI: the host's, or for `hostUsers: false` its range (the
   * one in its file, else a new one, written before it is returned).
   * @throws UserNamespaceError with the kubelet's message when it cannot be given
   */
  async userNamespaceFor(pod: V1Pod, handler: string, support: HandlerUsernsSupport): Promise<UserNamespace> {
    if (pod.spec?.hostUsers !== false) return HOST_USER_NAMESPACE;
    if (support !== 'supported') throw new UserNamespaceError(unsupportedHandlerMessage(handler, support));
    const range = await this.rangeOf(pod.metadata?.uid ?? '');
    const mapping = [{ hostId: range.hostId, containerId: 0, length: range.length }];
    return { mode: 'POD', uids: mapping, gids: mapping };
  }

  /** The pod is gone: its range is free again (its directory, file included, is already removed). */
  podForgotten(key: PodKey): void {
    this.freeSlotOf(key.uid);
  }

  /** Pods holding a range. */
  allocated(): number {
    return this.slots.size;
  }

  private async rangeOf(uid: string): Promise<PodIdRange> {
    const range = this.nodeRange();
    const content = await readUsernsFile(this.options.rootDir, uid);
    if (content !== undefined) {
      const kept = parseUsernsFile(content);
      this.record(uid, kept);
      return kept;
    }
    const slot = this.slots.get(uid) ?? this.freeSlot(range);
    const fresh = rangeOfSlot(range, slot);
    this.owners.set(slot, uid);
    this.slots.set(uid, slot);
    try {
      await writeUsernsFile(this.options.rootDir, uid, fresh);
    } catch (error) {
      this.freeSlotOf(uid);
      throw new UserNamespaceError(`create user namespace: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    return fresh;
  }

  private freeSlotOf(uid: string): void {
    const slot = this.slots.get(uid);
    if (slot === undefined) return;
    this.slots.delete(uid);
    this.owners.delete(slot);
  }

  private nodeRange(): NodeIdRange {
    if (this.options.range === undefined) throw new UserNamespaceError(`can't set \`spec.hostUsers: false\`: ${this.options.offReason ?? 'user namespaces are off on this node'}`);
    return this.options.range;
  }

  /** A random free slot (the kubelet's random scan: from a random start, the first free one). */
  private freeSlot(range: NodeIdRange): number {
    const start = Math.floor(this.options.random() * range.slots) % range.slots;
    for (let i = 0; i < range.slots; i++) {
      const slot = (start + i) % range.slots;
      if (!this.owners.has(slot)) return slot;
    }
    throw new UserNamespaceError('create user namespace: could not find an empty slot to allocate a user namespace');
  }

  /** Records a pod's range read from its file, with the kubelet's checks. */
  private record(uid: string, pod: PodIdRange): void {
    const range = this.nodeRange();
    const slot = slotOfRange(range, pod);
    if (slot === undefined) throw new UserNamespaceError(`user namespace: range ${pod.hostId}+${pod.length} of pod ${uid} is not one of this node's (${range.idsPerPod} IDs per pod from ${range.firstSlot * range.idsPerPod})`);
    const previous = this.slots.get(uid);
    if (previous !== undefined && previous !== slot) throw new UserNamespaceError(`user namespace: different user namespace range already used by pod "${uid}"`);
    const owner = this.owners.get(slot);
    if (owner !== undefined && owner !== uid) throw new UserNamespaceError(`user namespace: range picked for pod "${uid}" already taken`);
    this.owners.set(slot, uid);
    this.slots.set(uid, slot);
  }
}
