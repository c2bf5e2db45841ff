/** The pure parts of lifecycle hooks: parsing a handler, the kubelet's messages, the httpGet URL and headers. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container } from '@kubernetes/client-node';
import { basePod } from '../../test/doubles/pod-fixtures.js';
import { execExitError, execHookFailure, httpHookFailure, invalidHandlerFailure } from './hook-messages.js';
import { hookOf, parseHandler, type HookAction } from './hook-spec.js';
import { hookHeaders, hookUrl, LIFECYCLE_USER_AGENT } from './run-hook.js';

const pod = basePod();
const app: V1Container = { name: 'app', image: 'busybox:1.35', ports: [{ name: 'web', containerPort: 8080 }] };

function httpAction(over: Partial<Extract<HookAction, { kind: 'httpGet' }>> = {}): Extract<HookAction, { kind: 'httpGet' }> {
  return { kind: 'httpGet', scheme: 'HTTP', host: '', port: 8080, path: '/hook', headers: [], ...over };
}

describe('parseHandler', () => {
  const cases: { name: string; handler: Parameters<typeof parseHandler>[0]; expected: HookAction }[] = [
    { name: 'exec', handler: { exec: { command: ['sh', '-c', 'echo hi'] } }, expected: { kind: 'exec', command: ['sh', '-c', 'echo hi'] } },
    { name: 'exec without a command', handler: { exec: {} }, expected: { kind: 'exec', command: [] } },
    {
      name: 'httpGet with defaults',
      handler: { httpGet: { port: 'web' } },
      expected: { kind: 'httpGet', scheme: 'HTTP', host: '', port: 'web', path: '', headers: [] },
    },
    {
      name: 'httpGet HTTPS with host and headers',
      handler: { httpGet: { scheme: 'HTTPS', host: '127.0.0.1', port: 443, path: '/x', httpHeaders: [{ name: 'X-A', value: '1' }] } },
      expected: { kind: 'httpGet', scheme: 'HTTPS', host: '127.0.0.1', port: 443, path: '/x', headers: [{ name: 'X-A', value: '1' }] },
    },
    { name: 'sleep', handler: { sleep: { seconds: 5 } }, expected: { kind: 'sleep', seconds: 5 } },
    { name: 'sleep 0', handler: { sleep: { seconds: 0 } }, expected: { kind: 'sleep', seconds: 0 } },
    { name: 'no action', handler: {}, expected: { kind: 'invalid', reason: 'the handler names no action (exec, httpGet or sleep)' } },
    {
      name: 'two actions',
      handler: { exec: { command: ['true'] }, sleep: { seconds: 1 } },
      expected: { kind: 'invalid', reason: 'the handler names more than one action (exec, sleep)' },
    },
    { name: 'tcpSocket', handler: { tcpSocket: { port: 80 } }, expected: { kind: 'invalid', reason: 'tcpSocket is not supported as a lifecycle handler' } },
    { name: 'negative sleep', handler: { sleep: { seconds: -1 } }, expected: { kind: 'invalid', reason: 'sleep seconds must be a non-negative integer, got -1' } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(parseHandler(c.handler), c.expected);
    });
  }

  it('finds the hook of each kind, and none where the container has none', () => {
    const c: V1Container = { name: 'c', lifecycle: { postStart: { sleep: { seconds: 1 } } } };
    assert.deepEqual(hookOf(c, 'postStart'), { kind: 'sleep', seconds: 1 });
    assert.equal(hookOf(c, 'preStop'), undefined);
    assert.equal(hookOf({ name: 'bare' }, 'postStart'), undefined);
  });
});

describe('hook messages', () => {
  it('words a failed exec hook as the kubelet does', () => {
    const command = ['sh', '-c', 'echo out; echo err >&2; exit 3'];
    const message = execHookFailure({ pod, containerName: 'app', command, error: execExitError(command, 3, 'err\n'), output: 'out\nerr\n' });
    assert.equal(
      message,
      `Exec lifecycle hook ([sh -c echo out; echo err >&2; exit 3]) for Container "app" in Pod "web_default(uid-1)" failed - error: command 'sh -c echo out; echo err >&2; exit 3' exited with 3: err\n, message: "out\\nerr\\n"`,
    );
  });

  it('words a failed httpGet hook and an invalid handler as the kubelet does', () => {
    assert.equal(
      httpHookFailure({ pod, containerName: 'app', path: '/hook', error: 'Get "http://10.0.0.1:8080/hook": connect ECONNREFUSED' }),
      'HTTP lifecycle hook (/hook) for Container "app" in Pod "web_default(uid-1)" failed - error: Get "http://10.0.0.1:8080/hook": connect ECONNREFUSED',
    );
    assert.equal(invalidHandlerFailure('x'), 'Cannot run handler: invalid handler: x');
  });

  it('cuts a huge output to 10 KiB', () => {
    const message = execHookFailure({ pod, containerName: 'app', command: ['x'], error: 'e', output: 'a'.repeat(50_000) });
    assert.equal(Buffer.byteLength(message), 10 * 1024);
  });
});

describe('httpGet hook URL and headers', () => {
  const target = { pod, container: app, containerId: 'c1', podIp: '10.88.0.7' };

  it('defaults the host to the pod IP and resolves a named port', () => {
    assert.deepEqual(hookUrl(httpAction({ port: 'web' }), target), { url: 'http://10.88.0.7:8080/hook' });
  });

  it('uses the given host and scheme, adds the leading slash, brackets IPv6, and reads an empty port as 80', () => {
    assert.deepEqual(hookUrl(httpAction({ scheme: 'HTTPS', host: 'localhost', path: 'x?y=1' }), target), { url: 'https://localhost:8080/x?y=1' });
    assert.deepEqual(hookUrl(httpAction({ port: '' }), { ...target, podIp: 'fd00::7' }), { url: 'http://[fd00::7]:80/hook' });
  });

  it('cannot run without a port or a host', () => {
    assert.deepEqual(hookUrl(httpAction({ port: 'nope' }), target), { error: "couldn't find port: nope in container app" });
    assert.deepEqual(hookUrl(httpAction(), { ...target, podIp: '' }), { error: 'failed to find networking container: the pod has no IP' });
  });

  it("sends the kubelet's User-Agent and Accept unless the action sets them", () => {
    assert.deepEqual(hookHeaders(httpAction({ headers: [{ name: 'X-A', value: '1' }] })), { 'X-A': '1', 'User-Agent': LIFECYCLE_USER_AGENT, Accept: '*/*' });
    assert.deepEqual(hookHeaders(httpAction({ headers: [{ name: 'user-agent', value: 'me' }, { name: 'ACCEPT', value: 'text/plain' }] })), { 'user-agent': 'me', ACCEPT: 'text/plain' });
  });
});
