/** Image volumes pulled once per sync, and each container failing with the pull of a volume it mounts. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { FakeRuntime } from '../../test/doubles/fake-runtime.js';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { RecordingEventRecorder } from '../../test/doubles/recording-event-recorder.js';
import { ImagePuller } from '../images/image-puller.js';
import { ContainerStartError } from '../model/sync-errors.js';
import { imageVolumesFor, pullImageVolumes } from './image-volumes.js';
import { containerMounts } from '../volumes/mounts.js';

const POD: V1Pod = {
  metadata: { name: 'p', namespace: 'ns', uid: 'u1', annotations: { a: 'b' } },
  spec: {
    containers: [
      { name: 'reader', image: 'busybox:1.35', volumeMounts: [{ name: 'data', mountPath: '/data', subPath: 'etc' }, { name: 'scratch', mountPath: '/s' }] },
      { name: 'other', image: 'busybox:1.35', volumeMounts: [{ name: 'scratch', mountPath: '/s' }] },
      { name: 'missing-reader', image: 'busybox:1.35', volumeMounts: [{ name: 'absent', mountPath: '/a' }] },
    ],
    volumes: [
      { name: 'data', image: { reference: 'example.test/data:1', pullPolicy: 'IfNotPresent' } },
      { name: 'absent', image: { reference: 'example.test/absent:1', pullPolicy: 'Never' } },
      { name: 'scratch', emptyDir: {} },
    ],
  },
};

function setup(): { runtime: FakeRuntime; events: RecordingEventRecorder; puller: ImagePuller } {
  const runtime = new FakeRuntime();
  const events = new RecordingEventRecorder();
  return { runtime, events, puller: new ImagePuller({ images: runtime, events, clock: createFakeClock() }) };
}

describe('image volumes', () => {
  it('pulls each image volume with its policy, events on the pod, and keeps a failed pull as that volume\'s result', async () => {
    const { runtime, events, puller } = setup();
    const pulls = await pullImageVolumes({ pod: POD, puller, runtimeHandler: 'runc' });
    assert.deepEqual([...pulls.keys()], ['data', 'absent'], 'the emptyDir is no image volume');
    const data = pulls.get('data');
    assert.ok(data !== undefined && 'spec' in data);
    const pulledId = (await runtime.imageStatus({ image: 'example.test/data:1' }))?.id;
    assert.deepEqual(data.spec, { image: pulledId, userSpecifiedImage: 'example.test/data:1', runtimeHandler: 'runc', annotations: { a: 'b' } });
    const absent = pulls.get('absent');
    assert.ok(absent !== undefined && 'error' in absent);
    assert.equal(absent.error.reason, 'ErrImageNeverPull');
    assert.equal(absent.error.message, 'Container image "example.test/absent:1" is not present with pull policy of Never');
    assert.deepEqual(events.events.map((e) => [e.reason, e.fieldPath]), [['Pulling', undefined], ['Pulled', undefined], ['ErrImageNeverPull', undefined]], 'pod events, no container field path');
  });

  it('gives a container the images it mounts, and fails one that mounts a failed pull with its reason and a Failed event', async () => {
    const { events, puller } = setup();
    const pulls = await pullImageVolumes({ pod: POD, puller, runtimeHandler: '' });
    events.events.length = 0;
    const [reader, other, missingReader] = POD.spec!.containers;
    const readerVolumes = imageVolumesFor(POD, reader!, pulls, events);
    assert.deepEqual([...readerVolumes.keys()], ['data']);
    assert.equal(readerVolumes.get('data')?.runtimeHandler, undefined, 'no handler named when the pod has none');
    assert.equal(imageVolumesFor(POD, other!, pulls, events).size, 0);
    assert.throws(() => imageVolumesFor(POD, missingReader!, pulls, events), (error: unknown) => {
      assert.ok(error instanceof ContainerStartError);
      assert.equal(error.containerName, 'missing-reader');
      assert.equal(error.reason, 'ErrImageNeverPull');
      return true;
    });
    assert.deepEqual(events.events.map((e) => [e.reason, e.message, e.fieldPath]), [['Failed', 'Error: ErrImageNeverPull', 'spec.containers{missing-reader}']]);
  });

  it('mounts an image volume read-only by image, with the subPath as the image\'s directory and no host path', async () => {
    const { puller } = setup();
    const pulls = await pullImageVolumes({ pod: POD, puller, runtimeHandler: 'runc' });
    const reader = POD.spec!.containers[0]!;
    const imageVolumes = imageVolumesFor(POD, reader, pulls, new RecordingEventRecorder());
    const mounts = containerMounts(reader, { hostPaths: new Map([['scratch', '/pods/u1/volumes/scratch']]) }, { imageVolumes });
    assert.deepEqual(mounts[0], { containerPath: '/data', selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE', hostPath: '', readonly: true, image: imageVolumes.get('data'), imageSubPath: 'etc' });
    assert.equal(mounts[1]?.hostPath, '/pods/u1/volumes/scratch');
    assert.equal(mounts[1]?.image, undefined);
  });

  it('defaults an image volume\'s pull policy as the API server does: Always for :latest', async () => {
    const { runtime, puller } = setup();
    runtime.addImage('example.test/data:latest');
    const pod: V1Pod = { ...POD, spec: { containers: [], volumes: [{ name: 'v', image: { reference: 'example.test/data:latest' } }] } };
    await pullImageVolumes({ pod, puller, runtimeHandler: '' });
    assert.equal(runtime.calls.filter((c) => c.method === 'pullImage').length, 1, 'pulled though present');
  });
});
