import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import { pino } from 'pino';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { RecordingEventRecorder } from '../../test/doubles/recording-event-recorder.js';
import { MIN_REFRESH_INTERVAL_MS, RunningVolumeRefresher, hasFollowingVolumes } from './volume-refresh.js';
import { VolumeError } from './errors.js';

function pod(uid: string, volumes: V1Volume[]): V1Pod {
  return { metadata: { name: `p-${uid}`, namespace: 'ns', uid }, spec: { containers: [{ name: 'c', image: 'busybox' }], volumes } };
}

const cfg: V1Volume = { name: 'cfg', configMap: { name: 'app' } };

function setup(fail = false): { refresher: RunningVolumeRefresher; refreshed: string[]; events: RecordingEventRecorder; clock: ReturnType<typeof createFakeClock> } {
  const refreshed: string[] = [];
  const events = new RecordingEventRecorder();
  const clock = createFakeClock();
  const volumes = {
    refresh: (p: V1Pod): Promise<void> => {
      refreshed.push(p.metadata?.uid ?? '');
      return fail ? Promise.reject(new VolumeError({ reason: 'FailedMount', volumeName: 'cfg', message: 'volume "cfg": configmap "app" not found', detail: 'configmap "app" not found' })) : Promise.resolve();
    },
  };
  return { refresher: new RunningVolumeRefresher({ volumes, events, clock, logger: pino({ level: 'silent' }) }), refreshed, events, clock };
}

describe('RunningVolumeRefresher', () => {
  it('refreshes only pods with configMap, secret, projected or downwardAPI volumes', async () => {
    const { refresher, refreshed } = setup();
    await refresher.refresh(pod('a', [{ name: 'scratch', emptyDir: {} }, { name: 'host', hostPath: { path: '/tmp' } }]));
    await refresher.refresh(pod('b', [cfg]));
    assert.deepEqual(refreshed, ['b']);
    assert.equal(hasFollowingVolumes(pod('c', [{ name: 't', projected: { sources: [] } }])), true);
    assert.equal(hasFollowingVolumes(pod('d', [{ name: 's', secret: { secretName: 's' } }, { name: 'd', downwardAPI: {} }])), true);
  });

  it('refreshes one pod at most once per interval, and again after it', async () => {
    const { refresher, refreshed, clock } = setup();
    await refresher.refresh(pod('a', [cfg]));
    await clock.advance(MIN_REFRESH_INTERVAL_MS - 1);
    await refresher.refresh(pod('a', [cfg]));
    await refresher.refresh(pod('b', [cfg]));
    assert.deepEqual(refreshed, ['a', 'b']);
    await clock.advance(1);
    await refresher.refresh(pod('a', [cfg]));
    assert.deepEqual(refreshed, ['a', 'b', 'a']);
  });

  it('refreshes at once, within the interval, a pod whose labels or annotations changed', async () => {
    const { refresher, refreshed } = setup();
    const labelled = (labels: Record<string, string>, annotations: Record<string, string> = {}): V1Pod => {
      const p = pod('a', [cfg]);
      return { ...p, metadata: { ...p.metadata, labels, annotations } };
    };
    await refresher.refresh(labelled({ app: 'x' }));
    await refresher.refresh(labelled({ app: 'x' }));
    await refresher.refresh(labelled({ app: 'x', tier: 'front' }));
    await refresher.refresh(labelled({ app: 'x', tier: 'front' }, { note: 'n' }));
    assert.deepEqual(refreshed, ['a', 'a', 'a']);
  });

  it('forgets a pod that is gone: a pod of the same UID is refreshed at once', async () => {
    const { refresher, refreshed } = setup();
    await refresher.refresh(pod('a', [cfg]));
    refresher.podForgotten({ uid: 'a', namespace: 'ns', name: 'p-a' });
    await refresher.refresh(pod('a', [cfg]));
    assert.deepEqual(refreshed, ['a', 'a']);
  });

  it('turns a failed refresh into a FailedMount warning without failing the sync', async () => {
    const { refresher, events } = setup(true);
    await refresher.refresh(pod('a', [cfg]));
    assert.deepEqual(
      events.events.map((e) => [e.type, e.reason, e.message]),
      [['Warning', 'FailedMount', 'MountVolume.SetUp failed for volume "cfg" : configmap "app" not found']],
    );
  });

  it('does not start a refresh for a cancelled run', async () => {
    const { refresher, refreshed } = setup();
    await assert.rejects(refresher.refresh(pod('a', [cfg]), AbortSignal.abort()));
    assert.deepEqual(refreshed, []);
  });
});
