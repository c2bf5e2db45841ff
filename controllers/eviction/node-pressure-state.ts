/**
 * The node's pressure as the Node reports it: the conditions the eviction manager last decided and
 * what its hard thresholds hold back from allocatable. A state cell, made from the eviction settings
 * before the Node controller and the eviction manager: the Node reads it, the manager writes it, and
 * neither is built before the other for it.
 */
import type { PressureCondition } from './signals.js';
import { hardReservationBytes, parseThresholds, type EvictionConfig, type Threshold } from './thresholds.js';

/** Capacities or reservations, in bytes. */
export interface MemoryAndStorageBytes {
  readonly memoryBytes: number;
  readonly ephemeralStorageBytes: number;
}

export class NodePressureState {
  private current: readonly PressureCondition[] = [];

  /** @throws InvalidThresholdError when the configuration does not parse. */
  constructor(private thresholds: readonly Threshold[]) {}

  /** The state of a configuration (flags or NodeAgent `spec.eviction`), before any round: no condition. */
  static of(config: EvictionConfig): NodePressureState {
    return new NodePressureState(parseThresholds(config));
  }

  /** The pressure conditions the Node reports (`MemoryPressure`, `DiskPressure`, `PIDPressure`). */
  conditions(): readonly PressureCondition[] {
    return this.current;
  }

  /** Bytes node allocatable holds back for the hard `memory.available` and `nodefs.available` thresholds. */
  reservedBytes(capacity: MemoryAndStorageBytes): MemoryAndStorageBytes {
    return {
      memoryBytes: hardReservationBytes(this.thresholds, 'memory.available', capacity.memoryBytes),
      ephemeralStorageBytes: hardReservationBytes(this.thresholds, 'nodefs.available', capacity.ephemeralStorageBytes),
    };
  }

  /** The eviction manager's thresholds changed. */
  setThresholds(thresholds: readonly Threshold[]): void {
    this.thresholds = thresholds;
  }

  /** The eviction manager decided new conditions. */
  setConditions(conditions: readonly PressureCondition[]): void {
    this.current = conditions;
  }
}
