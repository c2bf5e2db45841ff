import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { pino } from 'pino';
import { CriError } from './errors.js';
import { ErrorLogReducer } from './error-log.js';
import type { CriLogger } from './error-log.js';

function failure(message: string, code = status.UNKNOWN): CriError {
  return new CriError({ method: 'ContainerStatus', code, message });
}

function setup(maxEntries?: number): { reducer: ErrorLogReducer; levels: string[]; advance: (ms: number) => void } {
  const levels: string[] = [];
  let now = 0;
  const logger: CriLogger = {
    warn: () => levels.push('warn'),
    debug: () => levels.push('debug'),
  };
  const reducer = new ErrorLogReducer({ logger, now: () => now, repeatAfterMs: 60_000, maxEntries });
  return {
    reducer,
    levels,
    advance: (ms) => {
      now += ms;
    },
  };
}

void describe('ErrorLogReducer', () => {
  void it('demotes an identical repeat for the same key to debug', () => {
    const { reducer, levels } = setup();
    reducer.report('ContainerStatus/c1', failure('boom'));
    reducer.report('ContainerStatus/c1', failure('boom'));
    assert.deepEqual(levels, ['warn', 'debug']);
  });

  void it('warns separately for different keys, messages and codes', () => {
    const { reducer, levels } = setup();
    reducer.report('ContainerStatus/c1', failure('boom'));
    reducer.report('ContainerStatus/c2', failure('boom'));
    reducer.report('ContainerStatus/c1', failure('bang'));
    reducer.report('ContainerStatus/c1', failure('bang', status.UNAVAILABLE));
    assert.deepEqual(levels, ['warn', 'warn', 'warn', 'warn']);
  });

  void it('warns again once the repeat interval has passed', () => {
    const { reducer, levels, advance } = setup();
    reducer.report('k', failure('boom'));
    advance(59_999);
    reducer.report('k', failure('boom'));
    advance(1);
    reducer.report('k', failure('boom'));
    assert.deepEqual(levels, ['warn', 'debug', 'warn']);
  });

  void it('warns again after the key was cleared by a success', () => {
    const { reducer, levels } = setup();
    reducer.report('k', failure('boom'));
    reducer.clear('k');
    reducer.report('k', failure('boom'));
    assert.deepEqual(levels, ['warn', 'warn']);
  });

  void it('forgets the oldest keys beyond its bound', () => {
    const { reducer, levels } = setup(2);
    reducer.report('a', failure('boom'));
    reducer.report('b', failure('boom'));
    reducer.report('c', failure('boom'));
    assert.equal(reducer.size, 2);
    reducer.report('a', failure('boom'));
    assert.deepEqual(levels, ['warn', 'warn', 'warn', 'warn']);
  });

  void it('accepts a pino logger as its logger', () => {
    const logger: CriLogger = pino({ level: 'silent' });
    const reducer = new ErrorLogReducer({ logger, now: () => 0, repeatAfterMs: 1 });
    reducer.report('k', failure('boom'));
    assert.equal(reducer.size, 1);
  });
});
