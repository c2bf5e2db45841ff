import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { status } from '@grpc/grpc-js';
import type { ContainerEvent, ContainerEventStream } from '../../cri/container-events.js';
import { CriCancelledError, criErrorFromStatus } from '../../cri/errors.js';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { ContainerEventWatcher } from './container-event-watcher.js';

const event = (node: string | undefined, type: ContainerEvent['type'] = 'CONTAINER_STOPPED_EVENT'): ContainerEvent => ({
  containerId: 'c1',
  type,
  createdAt: 1n,
  podUid: 'uid-1',
  sandboxLabels: node === undefined ? {} : { 'nodelet.dev/node': node },
});

/** A stream whose watches are driven by the test: each watch gets the next script. */
class ScriptedStream implements ContainerEventStream {
  watches = 0;
  closed = false;
  constructor(private readonly scripts: ((emit: (e: ContainerEvent) => void) => Promise<never>)[]) {}

  watch(onEvent: (event: ContainerEvent) => void, signal: AbortSignal): Promise<never> {
    const script = this.scripts[this.watches++];
    const cancelled = new Promise<never>((_resolve, reject) => {
      signal.addEventListener('abort', () => { reject(new CriCancelledError({ method: 'GetContainerEvents', code: status.CANCELLED, message: 'cancelled' })); }, { once: true });
    });
    return script === undefined ? cancelled : Promise.race([script(onEvent), cancelled]);
  }

  close(): void {
    this.closed = true;
  }
}

const failWith = (code: status) => (): Promise<never> => Promise.reject(criErrorFromStatus({ method: 'GetContainerEvents', code, message: 'x' }));
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function watcher(stream: ContainerEventStream) {
  const clock = createFakeClock();
  const relists: number[] = [];
  const w = new ContainerEventWatcher({ stream, relistNow: () => { relists.push(clock.now()); return Promise.resolve(true); }, nodeName: 'node-a', clock, logger: pino({ level: 'silent' }) });
  return { w, clock, relists };
}

describe('the container event watcher', () => {
  it("asks for a relist at each stop or deletion of this node's sandboxes' containers (or an unlabelled one's), not of another node's, nor at creates and starts", async () => {
    const stream = new ScriptedStream([(emit) => {
      emit(event('node-a'));
      emit(event('node-b'));
      emit(event(undefined));
      emit(event('node-a', 'CONTAINER_DELETED_EVENT'));
      emit(event('node-a', 'CONTAINER_CREATED_EVENT'));
      emit(event('node-a', 'CONTAINER_STARTED_EVENT'));
      return new Promise<never>(() => undefined);
    }]);
    const { w, relists } = watcher(stream);
    w.start();
    await settle();
    assert.equal(relists.length, 3);
    assert.equal(w.received, 6);
    await w.stop();
    assert.ok(stream.closed);
  });

  it('stops for good on a runtime without the stream (UNIMPLEMENTED: containerd 1.6)', async () => {
    const stream = new ScriptedStream([failWith(status.UNIMPLEMENTED)]);
    const { w, clock } = watcher(stream);
    w.start();
    await settle();
    await clock.advance(60_000);
    assert.equal(w.supported, false);
    assert.equal(stream.watches, 1, 'never asked again');
    await w.stop();
  });

  it('reopens a broken stream after a capped, doubling backoff, reset by an event', async () => {
    const stream = new ScriptedStream([failWith(status.UNAVAILABLE), failWith(status.UNAVAILABLE), (emit) => { emit(event('node-a')); return failWith(status.UNAVAILABLE)(); }]);
    const { w, clock, relists } = watcher(stream);
    w.start();
    await settle();
    assert.equal(stream.watches, 1);
    await clock.advance(499);
    assert.equal(stream.watches, 1, 'not before 0.5 s');
    await clock.advance(1);
    await settle();
    assert.equal(stream.watches, 2);
    await clock.advance(999);
    assert.equal(stream.watches, 2, 'then 1 s');
    await clock.advance(1);
    await settle();
    assert.equal(stream.watches, 3);
    assert.equal(relists.length, 1);
    await clock.advance(500);
    await settle();
    assert.equal(stream.watches, 4, 'the event reset the backoff to 0.5 s');
    await w.stop();
  });
});
