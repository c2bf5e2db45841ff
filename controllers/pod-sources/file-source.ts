/**
 * The manifest-directory source (the kubelet's `staticPodPath`, `pkg/kubelet/config/file.go`):
 * every `*.yaml`, `*.yml` and `*.json` file directly in the directory (dotfiles and subdirectories
 * skipped) is one static pod, with the kubelet's defaults applied (`static-pod.ts`).
 *
 * - The directory is read in full every `periodMs` (20 s, the kubelet's file check frequency) and
 *   shortly after any fs.watch event (debounced: an editor writes a file in several steps). Each
 *   read is level-triggered: pods of files that vanished or changed are reported gone, new UIDs
 *   reported added (an edited file is a new pod: a new UID, the old one torn down).
 * - A file removed and written back between two reads (the same content: the same UID) is
 *   reported gone, then added, as the kubelet's inotify source handles the removal and the
 *   creation one after the other: the pod restarts (`controllers/pod-events/decide.ts`). The watch
 *   tells it (`createRenameTally`); a file replaced in one step (renamed over) is not removed.
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

/** A static pod and the manifest file it was read from. */
export interface Entry {
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
 * The files the watch saw removed and created again since the last read began. fs.watch reports a
 * file's removal, its creation and a rename to or from its name alike, as `rename` (an in-place
 * write is `change`). A file a read found with two `rename`s or more before the next read was
 * removed (or moved away) and created again: the kubelet's inotify source deletes its pod on the
 * first event and adds it on the second. One `rename` of a file a read found is a file renamed over
 * it (an editor's atomic save): the kubelet's create of a file it holds, an update, no removal.
 */
export function createRenameTally(): { note(eventType: string, file: string): void; take(): ReadonlySet<string> } {
  let renames = new Map<string, number>();
  return {
    note(eventType, file): void {
      if (eventType === 'rename') renames.set(file, (renames.get(file) ?? 0) + 1);
    },
    take(): ReadonlySet<string> {
      const recreated = new Set([...renames].filter(([, n]) => n >= 2).map(([file]) => file));
      renames = new Map();
      return recreated;
    },
  };
}

/**
 * What a read changed: the pods now held, those gone and those added. A UID read again from a file
 * removed and written back since the read before (`recreated`: same file, same UID, which level
 * alone would not see) is both gone and added, with its new object. Pure.
 */
export function diffRead(previous: ReadonlyMap<string, Entry>, next: ReadonlyMap<string, Entry>, recreated: ReadonlySet<string>): { pods: Map<string, Entry>; vanished: Entry[]; added: Entry[] } {
  const readded = new Set([...previous].filter(([uid, entry]) => recreated.has(entry.file) && next.get(uid)?.file === entry.file).map(([uid]) => uid));
  // An unchanged UID keeps its object (and its config.seen): nothing about it changed. One
  // removed and written back is a new object, seen now.
  const pods = new Map([...next].map(([uid, entry]) => [uid, readded.has(uid) ? entry : previous.get(uid) ?? entry]));
  return {
    pods,
    vanished: [...previous].filter(([uid]) => !pods.has(uid) || readded.has(uid)).map(([, entry]) => entry),
    added: [...pods].filter(([uid]) => !previous.has(uid) || readded.has(uid)).map(([, entry]) => entry),
  };
}

/** Logs each refused file whose reason was not logged at the read before (once per content); returns what is logged now. */
function logRefusals(logger: Logger, logged: ReadonlyMap<string, string>, refused: Map<string, string>): Map<string, string> {
  for (const [file, reason] of refused) {
    if (logged.get(file) !== reason) logger.warn({ file, reason }, 'static pod manifest skipped');
  }
  return refused;
}

/**
 * Watches `dir` (undefined when it cannot: no directory yet, no inotify). A failed watch (the
 * directory removed) closes itself and calls `onClosed`, so the next read can watch again.
 */
function watchDirectory(dir: string, logger: Logger, handlers: { onChange: (eventType: string, filename: string | null) => void; onClosed: () => void }): FSWatcher | undefined {
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
  const renames = createRenameTally();

  const notify = (key: PodKey, change: 'added' | 'vanished'): void => {
    try {
      options.podEvents.emit({ kind: 'source-changed', key, source: 'file', change });
    } catch (err: unknown) {
      logger.error({ err, podUID: key.uid, change }, 'the pod event sink threw');
    }
  };

  function apply(next: Map<string, Entry>, refused: Map<string, string>, recreated: ReadonlySet<string>): void {
    loggedRefusals = logRefusals(logger, loggedRefusals, refused);
    const change = diffRead(pods, next, recreated);
    pods = change.pods;
    for (const entry of change.vanished) notify(podKeyOf(entry.pod), 'vanished');
    for (const entry of change.added) notify(podKeyOf(entry.pod), 'added');
  }

  async function scan(): Promise<void> {
    // Taken before reading: what the watch reports meanwhile counts for the next read.
    const recreated = renames.take();
    try {
      const { pods: next, refused } = await readManifests(options.dir, options.nodeName, new Date(clock.now()));
      apply(next, refused, recreated);
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
      apply(new Map(), new Map(), new Set());
      healthy = true;
    } finally {
      synced = true;
    }
  }

  const loop: PeriodicLoop = createPeriodicLoop({ name: 'file-source', periodMs: options.periodMs ?? 20_000, firstRun: 'after-period', clock, logger, run: scan });

  function startWatch(): void {
    if (!started) return;
    const onChange = (eventType: string, filename: string | null): void => {
      if (filename !== null) renames.note(eventType, path.join(options.dir, filename));
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
