/**
 * The manifest-directory source (the kubelet's `staticPodPath`, `pkg/kubelet/config/file.go`):
 * every `*.yaml`, `*.yml` and `*.json` file directly in the directory (dotfiles and subdirectories
 * skipped) is one static pod, with the kubelet's defaults applied (`static-pod.ts`).
 *
 * - The directory is read in full every `periodMs` (20 s, the kubelet's file check frequency) and
 *   shortly after any fs.watch event (debounced: an editor writes a file in several steps). Each
 *   read is level-triggered: pods of files that vanished or changed are reported gone, new UIDs
 *   reported added (an edited file is a new pod: a new UID, the old one torn down).
 * - A file that does not parse or is not a valid pod is logged (once per content) and skipped, as
 *   the kubelet does; the other files still count, and the agent never stops for it.
 * - A missing directory holds no pods (the kubelet only logs it too); the source is synced after
 *   its first read, whatever it found, and unhealthy while the directory cannot be read.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { systemClock, type Clock, type TimerHandle } from '../../util/clock.js';
import { createPeriodicLoop, type PeriodicLoop } from '../../util/periodic-loop.js';
import { podKeyOf, type PodKey } from '../../util/pod-key.js';
import type { DesiredPodSource } from './pod-store.js';
import { applyStaticPodDefaults, isManifestError, parseManifest } from './static-pod.js';
import type { PodEventSink } from '../../reconcilers/model/pod-event.js';

/** Options of {@link createFileSource}. */
export interface FileSourceOptions {
  readonly dir: string;
  readonly nodeName: string;
  readonly logger: Logger;
  /** Called for every pod added or gone; must not throw and should only enqueue. */
  /** Where each static pod that appears or goes is told. */
  readonly podEvents: PodEventSink;
  readonly clock?: Clock;
  /** Full re-read period; default 20 s. */
  readonly periodMs?: number;
  /** Delay after a watch event before re-reading; default 100 ms. */
  readonly debounceMs?: number;
}

/** The manifest directory as a pod source; `rescan()` reads it now (tests, and the watch). */
export interface FileSource extends DesiredPodSource {
  readonly name: 'file';
  rescan(): Promise<void>;
}

const MANIFEST_FILE = /^[^.].*\.(ya?ml|json)$/;

interface Entry {
  readonly pod: V1Pod;
  readonly file: string;
}

/** Reads the manifests of `dir`: pods by UID, and the files that were refused with why. */
async function readManifests(dir: string, nodeName: string, now: Date): Promise<{ pods: Map<string, Entry>; refused: Map<string, string> }> {
  const pods = new Map<string, Entry>();
  const refused = new Map<string, string>();
  const entries = await readdir(dir, { withFileTypes: true });
  for (const entry of entries.filter((e) => e.isFile() && MANIFEST_FILE.test(e.name)).sort((a, b) => a.name.localeCompare(b.name))) {
    const file = path.join(dir, entry.name);
    try {
      const pod = applyStaticPodDefaults(parseManifest(file, await readFile(file, 'utf8')), { nodeName, file, seenAt: now });
      const uid = pod.metadata?.uid ?? '';
      const clash = [...pods.values()].find((p) => p.pod.metadata?.uid === uid || podKeyOf(p.pod).name === podKeyOf(pod).name && podKeyOf(p.pod).namespace === podKeyOf(pod).namespace);
      if (clash !== undefined) refused.set(file, `the pod ${podKeyOf(pod).namespace}/${podKeyOf(pod).name} is already defined by ${clash.file}`);
      else pods.set(uid, { pod, file });
    } catch (err: unknown) {
      // A file removed between readdir and readFile is simply not there any more.
      if (isManifestError(err)) refused.set(file, err.reason);
      else if ((err as NodeJS.ErrnoException).code !== 'ENOENT') refused.set(file, String(err));
    }
  }
  return { pods, refused };
}

/**
 * Watches `dir` (undefined when it cannot: no directory yet, no inotify). A failed watch (the
 * directory removed) closes itself and calls `onClosed`, so the next read can watch again.
 */
function watchDirectory(dir: string, logger: Logger, handlers: { onChange: () => void; onClosed: () => void }): FSWatcher | undefined {
  try {
    const watcher = watch(dir, handlers.onChange);
    watcher.on('error', (err) => {
      logger.warn({ err }, 'manifest directory watch failed; the periodic re-read goes on');
      watcher.close();
      handlers.onClosed();
    });
    return watcher;
  } catch (err: unknown) {
    logger.info({ err }, 'manifest directory not watched; re-reading it periodically');
    return undefined;
  }
}

/** Creates the source; nothing is read until `start()`. */
export function createFileSource(options: FileSourceOptions): FileSource {
  const clock = options.clock ?? systemClock;
  const logger = options.logger.child({ component: 'file-source', dir: options.dir });
  let pods = new Map<string, Entry>();
  let loggedRefusals = new Map<string, string>();
  let synced = false;
  let healthy = true;
  let watcher: FSWatcher | undefined;
  let started = false;
  let debounce: TimerHandle | undefined;

  const notify = (key: PodKey, change: 'added' | 'vanished'): void => {
    try {
      options.podEvents.emit({ kind: 'source-changed', key, source: 'file', change });
    } catch (err: unknown) {
      logger.error({ err, podUID: key.uid, change }, 'the pod event sink threw');
    }
  };

  function apply(next: Map<string, Entry>, refused: Map<string, string>): void {
    for (const [file, reason] of refused) {
      if (loggedRefusals.get(file) !== reason) logger.warn({ file, reason }, 'static pod manifest skipped');
    }
    loggedRefusals = refused;
    const previous = pods;
    // An unchanged UID keeps its object (and its config.seen): nothing about it changed.
    pods = new Map([...next].map(([uid, entry]) => [uid, previous.get(uid) ?? entry]));
    for (const [uid, entry] of previous) if (!pods.has(uid)) notify(podKeyOf(entry.pod), 'vanished');
    for (const [uid, entry] of pods) if (!previous.has(uid)) notify(podKeyOf(entry.pod), 'added');
  }

  async function scan(): Promise<void> {
    try {
      const { pods: next, refused } = await readManifests(options.dir, options.nodeName, new Date(clock.now()));
      apply(next, refused);
      healthy = true;
      // A directory created after the start is watched from its first read on.
      if (started && watcher === undefined) startWatch();
    } catch (err: unknown) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        healthy = false;
        throw err;
      }
      // No directory: no static pods (the kubelet logs it and waits for it to appear).
      if (synced && pods.size > 0) logger.warn('manifest directory is gone: its static pods stop');
      apply(new Map(), new Map());
      healthy = true;
    } finally {
      synced = true;
    }
  }

  const loop: PeriodicLoop = createPeriodicLoop({ name: 'file-source', periodMs: options.periodMs ?? 20_000, firstRun: 'after-period', clock, logger, run: scan });

  function startWatch(): void {
    if (!started) return;
    const onChange = (): void => {
      if (debounce !== undefined) return;
      debounce = clock.setTimeout(() => {
        debounce = undefined;
        void loop.runNow();
      }, options.debounceMs ?? 100);
    };
    watcher = watchDirectory(options.dir, logger, { onChange, onClosed: () => (watcher = undefined) });
  }

  return {
    name: 'file',
    async start(): Promise<void> {
      started = true;
      startWatch();
      await loop.runNow();
      loop.start();
    },
    stop(): void {
      watcher?.close();
      watcher = undefined;
      if (debounce !== undefined) clock.clearTimeout(debounce);
      void loop.stop();
    },
    rescan: async () => {
      await loop.runNow();
    },
    get: (uid) => pods.get(uid)?.pod,
    list: () => [...pods.values()].map((e) => e.pod),
    synced: () => synced,
    healthy: () => healthy,
  };
}
