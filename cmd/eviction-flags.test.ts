import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_EVICTION } from '../controllers/eviction/thresholds.js';
import { FlagError } from '../util/flags.js';
import { parseSettings } from './flags.js';

const base = ['--cri-endpoint', 'unix:///run/containerd/containerd.sock'];

function settings(args: readonly string[]): Exclude<ReturnType<typeof parseSettings>, 'help'> {
  const parsed = parseSettings([...base, ...args], {});
  assert.notEqual(parsed, 'help');
  return parsed as Exclude<ReturnType<typeof parseSettings>, 'help'>;
}

describe('eviction flags', () => {
  it("default to the kubelet's thresholds and transition period", () => {
    assert.deepEqual(settings([]).eviction, DEFAULT_EVICTION);
  });

  it("take the kubelet's syntax", () => {
    const eviction = settings([
      '--eviction-hard', 'memory.available<200Mi,nodefs.available<5%',
      '--eviction-soft', 'memory.available<1Gi',
      '--eviction-soft-grace-period', 'memory.available=1m30s',
      '--eviction-minimum-reclaim', 'memory.available=100Mi',
      '--eviction-pressure-transition-period', '30',
      '--eviction-max-pod-grace-period', '10',
    ]).eviction;
    assert.deepEqual(eviction, {
      hard: { 'memory.available': '200Mi', 'nodefs.available': '5%' },
      soft: { 'memory.available': '1Gi' },
      softGracePeriod: { 'memory.available': '1m30s' },
      minimumReclaim: { 'memory.available': '100Mi' },
      pressureTransitionPeriodSeconds: 30,
      maxPodGracePeriodSeconds: 10,
    });
  });

  it('refuse what the kubelet refuses, before anything starts', () => {
    assert.throws(() => settings(['--eviction-hard', 'memory.free<1Gi']), FlagError);
    assert.throws(() => settings(['--eviction-soft', 'memory.available<1Gi']), FlagError);
    assert.throws(() => settings(['--eviction-hard', 'memory.available=1Gi']), FlagError);
    assert.throws(() => settings(['--eviction-pressure-transition-period', '5 minutes']), FlagError);
  });

  it("take the transition period in seconds or as the kubelet's duration", () => {
    assert.equal(settings(['--eviction-pressure-transition-period', '5m']).eviction.pressureTransitionPeriodSeconds, 300);
    assert.equal(settings(['--eviction-pressure-transition-period', '45']).eviction.pressureTransitionPeriodSeconds, 45);
  });
});
