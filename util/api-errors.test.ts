import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiException } from '@kubernetes/client-node';
import {
  apiStatusCode,
  apiStatusReason,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalidField,
  isNotFound,
} from './api-errors.js';

function statusError(code: number, reason: string): ApiException<string> {
  const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code });
  return new ApiException(code, 'HTTP-Code: ' + String(code), body, {});
}

describe('api-errors', () => {
  it('names the invalid field of a 422 from its causes, never from the message', () => {
    const body = JSON.stringify({ kind: 'Status', reason: 'Invalid', code: 422, details: { causes: [{ reason: 'FieldValueInvalid', field: 'metadata.uid' }] } });
    const invalid = new ApiException(422, 'HTTP-Code: 422', body, {});
    assert.equal(isInvalidField(invalid, 'metadata.uid'), true);
    assert.equal(isInvalidField(invalid, 'status.podIPs'), false);
    assert.equal(isInvalidField(new ApiException(422, 'metadata.uid', 'not json', {}), 'metadata.uid'), false);
    assert.equal(isInvalidField(statusError(409, 'Conflict'), 'metadata.uid'), false);
  });

  it('tells AlreadyExists from Conflict by the Status reason, not the message', () => {
    const exists = statusError(409, 'AlreadyExists');
    const conflict = statusError(409, 'Conflict');
    assert.equal(isAlreadyExists(exists), true);
    assert.equal(isConflict(exists), false);
    assert.equal(isConflict(conflict), true);
    assert.equal(isAlreadyExists(conflict), false);
  });

  it('treats a 409 whose body cannot be read as a conflict', () => {
    const err = new ApiException(409, 'x', 'not json', {});
    assert.equal(apiStatusReason(err), undefined);
    assert.equal(isConflict(err), true);
  });

  it('reads the status code of watch errors that carry statusCode', () => {
    const err = Object.assign(new Error('Gone'), { statusCode: 410 });
    assert.equal(apiStatusCode(err), 410);
    assert.equal(isGone(err), true);
    assert.equal(isNotFound(err), false);
  });

  it('maps 404 and 403 and ignores non-API errors', () => {
    assert.equal(isNotFound(statusError(404, 'NotFound')), true);
    assert.equal(isForbidden(statusError(403, 'Forbidden')), true);
    assert.equal(apiStatusCode(new TypeError('fetch failed')), undefined);
    assert.equal(isNotFound('404'), false);
  });
});
