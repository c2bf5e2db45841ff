import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Container } from '@kubernetes/client-node';
import { isUnsupportedResourceFieldError, resourceFieldValue } from './resource-field.js';

const node = { milliCpu: 2000, memoryBytes: 4 * 2 ** 30 };
const container: V1Container = { name: 'c', resources: { limits: { cpu: '1250m', memory: '128Mi' }, requests: { cpu: '250m', memory: '32Mi' } } };

describe('resourceFieldValue', () => {
  it('reads limits and requests, rounding CPU up to whole cores by default', () => {
    assert.equal(resourceFieldValue(container, 'limits.cpu', undefined, node), '2');
    assert.equal(resourceFieldValue(container, 'requests.cpu', undefined, node), '1');
    assert.equal(resourceFieldValue(container, 'limits.memory', undefined, node), String(128 * 2 ** 20));
    assert.equal(resourceFieldValue(container, 'requests.memory', undefined, node), String(32 * 2 ** 20));
  });
  it('treats a zero divisor (the API server default "0") as 1', () => {
    assert.equal(resourceFieldValue(container, 'limits.memory', '0', node), String(128 * 2 ** 20));
    assert.equal(resourceFieldValue(container, 'limits.cpu', '0', node), '2');
  });
  it('divides by a divisor, in millicores for CPU', () => {
    assert.equal(resourceFieldValue(container, 'limits.cpu', '1m', node), '1250');
    assert.equal(resourceFieldValue(container, 'requests.cpu', '100m', node), '3');
    assert.equal(resourceFieldValue(container, 'limits.memory', '1Mi', node), '128');
  });
  it('falls back to the node allocatable for an unset limit, and to 0 for an unset request', () => {
    const bare: V1Container = { name: 'bare' };
    assert.equal(resourceFieldValue(bare, 'limits.cpu', '1m', node), '2000');
    assert.equal(resourceFieldValue(bare, 'limits.memory', undefined, node), String(4 * 2 ** 30));
    assert.equal(resourceFieldValue(bare, 'requests.cpu', undefined, node), '0');
    assert.equal(resourceFieldValue(undefined, 'requests.memory', undefined, node), '0');
  });
  it('refuses other resources with UnsupportedResourceFieldError', () => {
    assert.throws(() => resourceFieldValue(container, 'limits.ephemeral-storage', undefined, node), isUnsupportedResourceFieldError);
    assert.throws(() => resourceFieldValue(container, 'cpu', undefined, node), isUnsupportedResourceFieldError);
  });
});
