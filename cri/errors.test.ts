import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Metadata, status } from '@grpc/grpc-js';
import type { ServiceError } from '@grpc/grpc-js';
import {
  CriDeadlineError,
  CriError,
  CriInvalidResponseError,
  CriNotFoundError,
  CriUnavailableError,
  criErrorFromStatus,
  isCriDeadline,
  isCriError,
  isCriInvalidResponse,
  isCriNotFound,
  isCriUnavailable,
} from './errors.js';
import { toCriError, unixSocketPath } from './transport.js';

function serviceError(code: status, details: string): ServiceError {
  return Object.assign(new Error(`${code} ${status[code]}: ${details}`), { code, details, metadata: new Metadata() });
}

void describe('criErrorFromStatus', () => {
  const cases: [status, new (...args: never[]) => CriError][] = [
    [status.NOT_FOUND, CriNotFoundError],
    [status.UNAVAILABLE, CriUnavailableError],
    [status.DEADLINE_EXCEEDED, CriDeadlineError],
    [status.UNKNOWN, CriError],
    [status.INVALID_ARGUMENT, CriError],
    [status.ALREADY_EXISTS, CriError],
  ];
  for (const [code, expected] of cases) {
    void it(`maps ${status[code]} to ${expected.name}`, () => {
      const error = criErrorFromStatus({ method: 'StopContainer', code, message: 'boom' });
      assert.equal(error.constructor, expected);
      assert.equal(error.code, code);
      assert.equal(error.codeName, status[code]);
      assert.equal(error.method, 'StopContainer');
      assert.equal(error.message, 'StopContainer: boom');
    });
  }

  void it('chooses the class from the code alone, whatever the message says', () => {
    const error = criErrorFromStatus({ method: 'ContainerStatus', code: status.UNKNOWN, message: 'container not found' });
    assert.equal(isCriNotFound(error), false);
    assert.equal(isCriError(error), true);
  });
});

void describe('predicates', () => {
  void it('recognise exactly their own class and its subclasses', () => {
    const notFound = new CriNotFoundError({ method: 'm', code: status.NOT_FOUND, message: '' });
    const unavailable = new CriUnavailableError({ method: 'm', code: status.UNAVAILABLE, message: '' });
    const deadline = new CriDeadlineError({ method: 'm', code: status.DEADLINE_EXCEEDED, message: '' });
    const invalid = new CriInvalidResponseError({ method: 'm', message: 'empty ID' });
    assert.deepEqual(
      [notFound, unavailable, deadline, invalid, new Error('x'), 'NOT_FOUND'].map((e) => [
        isCriError(e),
        isCriNotFound(e),
        isCriUnavailable(e),
        isCriDeadline(e),
        isCriInvalidResponse(e),
      ]),
      [
        [true, true, false, false, false],
        [true, false, true, false, false],
        [true, false, false, true, false],
        [true, false, false, false, true],
        [false, false, false, false, false],
        [false, false, false, false, false],
      ],
    );
  });

  void it('leave a CriError usable after ruling out a subclass', () => {
    const describe = (e: unknown): string =>
      isCriError(e) && !isCriNotFound(e) && !isCriDeadline(e) ? `${e.method} ${e.codeName}` : 'other';
    assert.equal(describe(new CriError({ method: 'PullImage', code: status.UNKNOWN, message: '' })), 'PullImage UNKNOWN');
    assert.equal(describe(new CriNotFoundError({ method: 'm', code: status.NOT_FOUND, message: '' })), 'other');
  });

  void it('gives an invalid response the INTERNAL code', () => {
    assert.equal(new CriInvalidResponseError({ method: 'm', message: 'x' }).code, status.INTERNAL);
  });
});

void describe('toCriError', () => {
  void it('maps a gRPC service error by its code and keeps it as the cause', () => {
    const raw = serviceError(status.NOT_FOUND, 'container "abc" not found');
    const error = toCriError('ContainerStatus', raw);
    assert.ok(isCriNotFound(error));
    assert.equal(error.message, 'ContainerStatus: container "abc" not found');
    assert.equal(error.cause, raw);
  });

  void it('passes a CriError through unchanged', () => {
    const original = new CriInvalidResponseError({ method: 'RunPodSandbox', message: 'empty sandbox ID' });
    assert.equal(toCriError('RunPodSandbox', original), original);
  });

  void it('wraps anything else as UNKNOWN', () => {
    const error = toCriError('Version', new TypeError('bad'));
    assert.equal(error.constructor, CriError);
    assert.equal(error.code, status.UNKNOWN);
  });
});

void describe('unixSocketPath', () => {
  void it('accepts unix:// endpoints and bare absolute socket paths', () => {
    assert.equal(unixSocketPath('unix:///run/containerd/containerd.sock'), '/run/containerd/containerd.sock');
    assert.equal(unixSocketPath('/run/containerd/containerd.sock'), '/run/containerd/containerd.sock');
  });

  void it('refuses other schemes', () => {
    assert.throws(() => unixSocketPath('tcp://127.0.0.1:1234'), TypeError);
    assert.throws(() => unixSocketPath('relative.sock'), TypeError);
    assert.throws(() => unixSocketPath('unix://relative.sock'), TypeError);
  });
});
