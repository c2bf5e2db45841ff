import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1DownwardAPIVolumeFile, V1Pod } from '@kubernetes/client-node';
import { downwardApiPayload, podFieldValue } from './downward-api.js';
import { isUnsupportedResourceFieldError } from '../model/resource-field.js';
import { formatMap, goQuote } from '../../util/go-quote.js';

const allocatable = { milliCpu: 3000, memoryBytes: 2 * 2 ** 30 };

const pod: V1Pod = {
  metadata: {
    name: 'web-0',
    namespace: 'shop',
    uid: '1111-2222',
    labels: { tier: 'front', app: 'web' },
    annotations: { 'example.com/note': 'say "hi"\nbye' },
  },
  spec: { nodeName: 'node-a', serviceAccountName: 'web-sa', containers: [] },
};

describe('podFieldValue', () => {
  it('reads the pod identity, node and service account', () => {
    assert.equal(podFieldValue(pod, 'metadata.name'), 'web-0');
    assert.equal(podFieldValue(pod, 'metadata.namespace'), 'shop');
    assert.equal(podFieldValue(pod, 'metadata.uid'), '1111-2222');
    assert.equal(podFieldValue(pod, 'spec.nodeName'), 'node-a');
    assert.equal(podFieldValue(pod, 'spec.serviceAccountName'), 'web-sa');
  });

  it('renders labels and annotations as sorted key="value" lines with Go quoting', () => {
    assert.equal(podFieldValue(pod, 'metadata.labels'), 'app="web"\ntier="front"');
    assert.equal(podFieldValue(pod, 'metadata.annotations'), 'example.com/note="say \\"hi\\"\\nbye"');
  });

  it('reads one label or annotation by subscript, empty when absent', () => {
    assert.equal(podFieldValue(pod, "metadata.labels['tier']"), 'front');
    assert.equal(podFieldValue(pod, "metadata.annotations['example.com/note']"), 'say "hi"\nbye');
    assert.equal(podFieldValue(pod, "metadata.labels['missing']"), '');
  });

  it('rejects fields the downward API volume does not offer', () => {
    assert.throws(() => podFieldValue(pod, 'status.podIP'), /unsupported downward API field path "status.podIP"/);
    assert.throws(() => podFieldValue(pod, 'constructor'), /unsupported/);
  });
});

describe('goQuote', () => {
  it('escapes like Go strconv.Quote', () => {
    assert.equal(goQuote('plain'), '"plain"');
    assert.equal(goQuote('a"b\\c'), '"a\\"b\\\\c"');
    assert.equal(goQuote('\t\n\r\x07\b\f\v'), '"\\t\\n\\r\\a\\b\\f\\v"');
    assert.equal(goQuote('\x01\x7f'), '"\\x01\\x7f"');
  });

  it('keeps printable Unicode and escapes non-printable code points', () => {
    assert.equal(goQuote('café ☃ 😀'), '"café ☃ 😀"');
    assert.equal(goQuote('a\u00a0b\u2028c'), '"a\\u00a0b\\u2028c"');
    assert.equal(goQuote('\u{e0001}'), '"\\U000e0001"');
  });

  it('formats an empty or missing map as an empty string', () => {
    assert.equal(formatMap(undefined), '');
    assert.equal(formatMap({}), '');
  });
});

describe('downwardApiPayload', () => {
  it('writes each item at its path with its own mode or the default mode', () => {
    const payload = downwardApiPayload({
      pod,
      defaultMode: 0o644,
      allocatable,
      items: [
        { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
        { path: 'meta/labels', fieldRef: { fieldPath: 'metadata.labels' }, mode: 0o400 },
      ],
    });

    assert.deepEqual(
      [...payload].map(([key, file]) => [key, file.data.toString(), file.mode]),
      [
        ['name', 'web-0', 0o644],
        ['meta/labels', 'app="web"\ntier="front"', 0o400],
      ],
    );
  });

  it("writes containers' limits and requests, the node's allocatable for an unset limit, a zero divisor as 1", () => {
    const withResources: V1Pod = {
      ...pod,
      spec: { containers: [{ name: 'app', resources: { limits: { cpu: '1250m', memory: '128Mi' }, requests: { cpu: '250m', memory: '32Mi' } } }, { name: 'bare' }] },
    };
    const item = (path: string, containerName: string, resource: string, divisor?: string): V1DownwardAPIVolumeFile => ({ path, resourceFieldRef: { containerName, resource, ...(divisor === undefined ? {} : { divisor }) } });
    const payload = downwardApiPayload({
      pod: withResources,
      defaultMode: 0o644,
      allocatable,
      items: [
        item('cpu_limit', 'app', 'limits.cpu', '0'),
        item('cpu_request_m', 'app', 'requests.cpu', '1m'),
        item('memory_limit', 'app', 'limits.memory', '0'),
        item('memory_request', 'app', 'requests.memory'),
        item('bare_cpu_limit', 'bare', 'limits.cpu'),
        item('bare_memory_limit', 'bare', 'limits.memory', '1Mi'),
      ],
    });
    assert.deepEqual(Object.fromEntries([...payload].map(([key, file]) => [key, file.data.toString()])), {
      cpu_limit: '2',
      cpu_request_m: '250',
      memory_limit: String(128 * 2 ** 20),
      memory_request: String(32 * 2 ** 20),
      bare_cpu_limit: '3',
      bare_memory_limit: '2048',
    });
  });

  it('refuses a resource field of a container the pod does not have, or of an unsupported resource', () => {
    assert.throws(() => downwardApiPayload({ pod, defaultMode: 0o644, allocatable, items: [{ path: 'cpu', resourceFieldRef: { containerName: 'nope', resource: 'limits.cpu' } }] }), /container "nope" is not in the pod/);
    const withApp: V1Pod = { ...pod, spec: { containers: [{ name: 'app' }] } };
    assert.throws(
      () => downwardApiPayload({ pod: withApp, defaultMode: 0o644, allocatable, items: [{ path: 'e', resourceFieldRef: { containerName: 'app', resource: 'limits.ephemeral-storage' } }] }),
      isUnsupportedResourceFieldError,
    );
  });
});
