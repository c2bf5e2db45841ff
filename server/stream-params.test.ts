/** The streaming routes' query parameters, read as the kubelet v1.36 reads them. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isStreamParamsError, parseExecCommand, parseForwardPorts, parseRunCommand, parseStreamOptions } from './stream-params.js';

const q = (query: string): URLSearchParams => new URLSearchParams(query);

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    assert.ok(isStreamParamsError(error), String(error));
    assert.equal(error.status, 400);
    return error.message;
  }
  assert.fail('expected a 400');
}

describe('exec and attach streams', () => {
  it("reads the API server's names (input, output, error) and counts a stream only when its value is 1", () => {
    assert.deepEqual(parseStreamOptions(q('input=1&output=1&error=1')), { stdin: true, stdout: true, stderr: true, tty: false });
    assert.deepEqual(parseStreamOptions(q('output=1&input=true&error=0')), { stdin: false, stdout: true, stderr: false, tty: false });
    // kubectl's own names (to the API server) are not the node's.
    assert.equal(refusal(() => parseStreamOptions(q('stdin=1&stdout=1&stderr=1'))), 'you must specify at least 1 of stdin, stdout, stderr');
  });

  it('drops stderr under a tty instead of refusing (one output stream on a terminal)', () => {
    assert.deepEqual(parseStreamOptions(q('input=1&output=1&error=1&tty=1')), { stdin: true, stdout: true, stderr: false, tty: true });
  });

  it('refuses no stream at all with the kubelet message, also when only stderr was asked under a tty', () => {
    assert.equal(refusal(() => parseStreamOptions(q('tty=1'))), 'you must specify at least 1 of stdin, stdout, stderr');
    assert.equal(refusal(() => parseStreamOptions(q('error=1&tty=1'))), 'you must specify at least 1 of stdin, stdout, stderr');
  });

  it('takes every command value in order', () => {
    assert.deepEqual(parseExecCommand(q('command=sh&command=-c&command=echo%20a%20b')), ['sh', '-c', 'echo a b']);
    assert.deepEqual(parseExecCommand(q('output=1')), []);
  });
});

describe('port-forward ports', () => {
  it('reads no ports for SPDY (each stream names its own)', () => {
    assert.deepEqual(parseForwardPorts(q('port=abc'), false), []);
  });

  it('reads repeated and comma-separated ports for a WebSocket client', () => {
    assert.deepEqual(parseForwardPorts(q('port=80,8080&port=65535'), true), [80, 8080, 65535]);
  });

  it('refuses missing, empty, unparsable and zero ports with the kubelet messages', () => {
    assert.equal(refusal(() => parseForwardPorts(q(''), true)), 'query parameter "port" is required');
    assert.equal(refusal(() => parseForwardPorts(q('port='), true)), 'query parameter "port" cannot be empty');
    assert.equal(refusal(() => parseForwardPorts(q('port=80,x'), true)), 'unable to parse "80,x" as a port');
    assert.equal(refusal(() => parseForwardPorts(q('port=65536'), true)), 'unable to parse "65536" as a port');
    assert.equal(refusal(() => parseForwardPorts(q('port=0'), true)), 'port "0" must be > 0');
  });
});

describe('/run command', () => {
  it('splits cmd on single spaces, no quoting (the legacy form)', () => {
    assert.deepEqual(parseRunCommand(q('cmd=echo%20%22a%20b%22')), ['echo', '"a', 'b"']);
    assert.deepEqual(parseRunCommand(q('cmd=ls%20%20-l')), ['ls', '', '-l']);
  });
});
