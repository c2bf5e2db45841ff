/**
 * `ListContainerStats` responses into `ContainerStats`. An unset `UInt64Value` stays `undefined`:
 * the Summary API tells "not reported" (omitted) from 0, and so must we.
 */
import { bigintFromWire } from './convert-response.js';
import type { ContainerStats, CpuUsage, MemoryUsage } from './types.js';
import type { WireContainerStats, WireUInt64 } from './wire.js';

function optional(value: WireUInt64 | null): bigint | undefined {
  return value === null ? undefined : bigintFromWire(value.value);
}

function cpuFromWire(cpu: WireContainerStats['cpu']): CpuUsage | undefined {
  if (cpu === null) return undefined;
  return { timestamp: bigintFromWire(cpu.timestamp), usageCoreNanoSeconds: optional(cpu.usageCoreNanoSeconds), usageNanoCores: optional(cpu.usageNanoCores) };
}

function memoryFromWire(memory: WireContainerStats['memory']): MemoryUsage | undefined {
  if (memory === null) return undefined;
  return {
    timestamp: bigintFromWire(memory.timestamp),
    workingSetBytes: optional(memory.workingSetBytes),
    availableBytes: optional(memory.availableBytes),
    usageBytes: optional(memory.usageBytes),
    rssBytes: optional(memory.rssBytes),
    pageFaults: optional(memory.pageFaults),
    majorPageFaults: optional(memory.majorPageFaults),
  };
}

function swapFromWire(swap: NonNullable<WireContainerStats['swap']> | null): ContainerStats['swap'] {
  if (swap === null) return undefined;
  return { timestamp: bigintFromWire(swap.timestamp), availableBytes: optional(swap.swapAvailableBytes), usageBytes: optional(swap.swapUsageBytes) };
}

/** One container's figures; one without attributes (no ID) is left out by the caller. */
export function containerStatsFromWire(wire: WireContainerStats): ContainerStats | undefined {
  const attributes = wire.attributes;
  if (attributes === null || attributes.id === '') return undefined;
  const layer = wire.writableLayer;
  return {
    id: attributes.id,
    name: attributes.metadata?.name ?? '',
    labels: attributes.labels,
    cpu: cpuFromWire(wire.cpu),
    memory: memoryFromWire(wire.memory),
    writableLayer:
      layer === null
        ? undefined
        : { timestamp: bigintFromWire(layer.timestamp), mountpoint: layer.fsId?.mountpoint ?? '', usedBytes: optional(layer.usedBytes), inodesUsed: optional(layer.inodesUsed) },
    swap: swapFromWire(wire.swap ?? null),
  };
}
