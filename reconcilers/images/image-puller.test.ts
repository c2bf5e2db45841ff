import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { Image, ImageService, ImageSpec } from '../../cri/types.js';
import { createFakeClock, settle, type FakeClock } from '../../test/doubles/fake-clock.js';
import { RecordingEventRecorder } from '../../test/doubles/recording-event-recorder.js';
import { ContainerStartError } from '../model/sync-errors.js';
import { ImagePuller } from './image-puller.js';
import { PullGate } from './pull-gate.js';

/** An image service whose pulls finish only when the test lets them (absent images only). */
class HeldPulls implements ImageService {
  readonly started: string[] = [];
  private readonly pending = new Map<string, () => void>();

  imageStatus(): Promise<Image | undefined> {
    return Promise.resolve(undefined);
  }

  pullImage(image: ImageSpec): Promise<string> {
    this.started.push(image.image);
    return new Promise((resolve) => this.pending.set(image.image, () => { resolve(`sha256:${image.image.length}`); }));
  }

  finish(image: string): void {
    this.pending.get(image)?.();
    this.pending.delete(image);
  }

  listImages(): Promise<Image[]> {
    return Promise.resolve([]);
  }

  removeImage(): Promise<void> {
    return Promise.resolve();
  }

  imageFsInfo(): Promise<never[]> {
    return Promise.resolve([]);
  }
}

function podPulling(uid: string, image: string): { pod: V1Pod; container: { name: string; image: string } } {
  const container = { name: 'c', image };
  return { pod: { metadata: { name: uid, namespace: 'ns', uid }, spec: { containers: [container] } }, container };
}

function setup(limits: ConstructorParameters<typeof PullGate>[0]): { clock: FakeClock; images: HeldPulls; events: RecordingEventRecorder; puller: ImagePuller } {
  const clock = createFakeClock();
  const images = new HeldPulls();
  const events = new RecordingEventRecorder();
  const puller = new ImagePuller({ images, events, clock, gate: new PullGate(limits, clock) });
  return { clock, images, events, puller };
}

describe('ImagePuller node-wide limits', () => {
  it('pulls one image at a time when serialized, and reports the time waited', async () => {
    const { clock, images, events, puller } = setup({ concurrency: 1, qps: 0, burst: 0 });
    const a = podPulling('a', 'example.test/a:1');
    const b = podPulling('b', 'example.test/b:1');
    const pullA = puller.ensureImage(a.pod, a.container);
    const pullB = puller.ensureImage(b.pod, b.container);
    await settle();
    assert.deepEqual(images.started, ['example.test/a:1'], 'the second pull waits for the first');
    await clock.advance(3000);
    images.finish('example.test/a:1');
    await pullA;
    await settle();
    assert.deepEqual(images.started, ['example.test/a:1', 'example.test/b:1']);
    await clock.advance(1000);
    images.finish('example.test/b:1');
    await pullB;
    const pulled = events.events.filter((e) => e.reason === 'Pulled').map((e) => e.message);
    assert.deepEqual(pulled, [
      'Successfully pulled image "example.test/a:1" in 3.000s (3.000s including waiting)',
      'Successfully pulled image "example.test/b:1" in 1.000s (4.000s including waiting)',
    ]);
  });

  it('pulls in parallel when not serialized', async () => {
    const { images, puller } = setup({ concurrency: null, qps: 0, burst: 0 });
    const pulls = ['a', 'b', 'c'].map((n) => podPulling(n, `example.test/${n}:1`)).map(({ pod, container }) => puller.ensureImage(pod, container));
    await settle();
    assert.equal(images.started.length, 3);
    for (const n of ['a', 'b', 'c']) images.finish(`example.test/${n}:1`);
    await Promise.all(pulls);
  });

  it('fails a pull over the registry pull rate with ErrImagePull "pull QPS exceeded", and backs off', async () => {
    const { images, events, puller } = setup({ concurrency: null, qps: 1, burst: 1 });
    const a = podPulling('a', 'example.test/a:1');
    const b = podPulling('b', 'example.test/b:1');
    const pullA = puller.ensureImage(a.pod, a.container);
    await assert.rejects(puller.ensureImage(b.pod, b.container), (error: unknown) => {
      assert.ok(error instanceof ContainerStartError);
      assert.equal(error.reason, 'ErrImagePull');
      assert.equal(error.message, 'Failed to pull image "example.test/b:1": pull QPS exceeded');
      return true;
    });
    assert.deepEqual(images.started, ['example.test/a:1'], 'the refused pull never reached the runtime');
    await assert.rejects(puller.ensureImage(b.pod, b.container), (error: unknown) => error instanceof ContainerStartError && error.reason === 'ImagePullBackOff');
    images.finish('example.test/a:1');
    await pullA;
    assert.ok(events.events.some((e) => e.reason === 'Failed' && e.message.endsWith('pull QPS exceeded')));
  });
});
