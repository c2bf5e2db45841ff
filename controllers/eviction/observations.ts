/**
 * The signals from the node's readings, as the kubelet's `makeSignalObservations`:
 * - `memory.available` = memory capacity − working set of the root cgroup (usage less inactive file);
 * - `nodefs.available` / `nodefs.inodesFree` from `statfs` of the agent's root dir;
 * - `imagefs.available` / `imagefs.inodesFree` from `statfs` of the runtime's image filesystem
 *   (`ImageFsInfo`'s mountpoint), absent when the runtime names none;
 * - `pid.available` = `pid_max` − the processes running now.
 * Pure: readings in, observations out (the agent reads them with the node server's readers).
 */
import type { Observation, Observations } from './signals.js';
import type { Signal } from './thresholds.js';

/** A filesystem's figures (statfs). */
export interface FsReading {
  readonly capacityBytes: number;
  readonly availableBytes: number;
  readonly inodes: number;
  readonly inodesFree: number;
}

/** What the node's readers report. */
export interface NodeReadings {
  readonly memory: { readonly capacityBytes: number; readonly workingSetBytes: number };
  readonly pids?: { readonly max: number | undefined; readonly running: number | undefined };
  readonly nodeFs: FsReading;
  readonly imageFs?: FsReading;
}

function fsSignals(prefix: 'nodefs' | 'imagefs', fs: FsReading): [Signal, Observation][] {
  return [
    [`${prefix}.available`, { available: fs.availableBytes, capacity: fs.capacityBytes }],
    [`${prefix}.inodesFree`, { available: fs.inodesFree, capacity: fs.inodes }],
  ];
}

export function signalObservations(readings: NodeReadings): Observations {
  const { memory, pids } = readings;
  const entries: [Signal, Observation][] = [
    ['memory.available', { available: Math.max(0, memory.capacityBytes - memory.workingSetBytes), capacity: memory.capacityBytes }],
    ...fsSignals('nodefs', readings.nodeFs),
    ...(readings.imageFs === undefined ? [] : fsSignals('imagefs', readings.imageFs)),
  ];
  if (pids?.max !== undefined && pids.running !== undefined) entries.push(['pid.available', { available: Math.max(0, pids.max - pids.running), capacity: pids.max }]);
  return new Map(entries);
}
