import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { classifyNodeRequest, viewOfNodeResponse, viewOfNodeWatchEvent, withoutHiddenTaints, type OneNodeView } from './one-node-view.js';

const view: OneNodeView = { node: 'vm-kubelet', hiddenTaints: new Set(['nodelet.dev/bench']) };

function node(name: string, taints?: { key: string; effect: string }[]): Record<string, unknown> {
  return { kind: 'Node', apiVersion: 'v1', metadata: { name }, spec: { podCIDR: '10.0.0.0/24', ...(taints === undefined ? {} : { taints }) } };
}

describe('viewOfNodeResponse', () => {
  it('keeps only the node under test in a NodeList, and the list metadata', () => {
    const list = { kind: 'NodeList', apiVersion: 'v1', metadata: { resourceVersion: '42' }, items: [node('vm'), node('vm-kubelet')] };
    assert.deepEqual(viewOfNodeResponse(list, view), { ...list, items: [node('vm-kubelet')] });
  });
  it('gives an empty list when the node under test is not there (the suite then says so)', () => {
    const list = { kind: 'NodeList', items: [node('vm')] };
    assert.deepEqual(viewOfNodeResponse(list, view), { kind: 'NodeList', items: [] });
  });
  it('drops the hidden taints of the node under test and keeps the others', () => {
    const other = { key: 'example.com/x', effect: 'NoExecute' };
    const tainted = node('vm-kubelet', [{ key: 'nodelet.dev/bench', effect: 'NoSchedule' }, other]);
    assert.deepEqual(viewOfNodeResponse(tainted, view), node('vm-kubelet', [other]));
  });
  it('removes the taints field when no taint is left, as the API server would show the node', () => {
    const tainted = node('vm-kubelet', [{ key: 'nodelet.dev/bench', effect: 'NoSchedule' }]);
    assert.deepEqual(viewOfNodeResponse(tainted, view), node('vm-kubelet'));
  });
  it('passes a Status and a Table unchanged', () => {
    const status = { kind: 'Status', status: 'Failure', code: 404 };
    const table = { kind: 'Table', rows: [{ cells: ['vm'] }] };
    assert.equal(viewOfNodeResponse(status, view), status);
    assert.equal(viewOfNodeResponse(table, view), table);
  });
});

describe('withoutHiddenTaints', () => {
  it('returns the same object when there is nothing to hide', () => {
    const n = node('vm-kubelet', [{ key: 'example.com/x', effect: 'NoSchedule' }]);
    assert.equal(withoutHiddenTaints(n, view), n);
  });
});

describe('viewOfNodeWatchEvent', () => {
  it('drops events about other nodes', () => {
    assert.equal(viewOfNodeWatchEvent({ type: 'MODIFIED', object: node('vm') }, view), undefined);
  });
  it('keeps events about the node under test, without the hidden taints', () => {
    const event = { type: 'ADDED', object: node('vm-kubelet', [{ key: 'nodelet.dev/bench', effect: 'NoSchedule' }]) };
    assert.deepEqual(viewOfNodeWatchEvent(event, view), { type: 'ADDED', object: node('vm-kubelet') });
  });
  it('passes BOOKMARK and ERROR events', () => {
    const bookmark = { type: 'BOOKMARK', object: { kind: 'Node', metadata: { resourceVersion: '7' } } };
    const error = { type: 'ERROR', object: { kind: 'Status', code: 410 } };
    assert.equal(viewOfNodeWatchEvent(bookmark, view), bookmark);
    assert.equal(viewOfNodeWatchEvent(error, view), error);
  });
});

describe('classifyNodeRequest', () => {
  const cases: [string, ReturnType<typeof classifyNodeRequest>][] = [
    ['/api/v1/nodes', { kind: 'collection', watch: false }],
    ['/api/v1/nodes?labelSelector=a%3Db&limit=500', { kind: 'collection', watch: false }],
    ['/api/v1/nodes?watch=true&resourceVersion=5', { kind: 'collection', watch: true }],
    ['/api/v1/nodes?watch=1', { kind: 'collection', watch: true }],
    ['/api/v1/watch/nodes', { kind: 'collection', watch: true }],
    ['/api/v1/nodes/vm-kubelet', { kind: 'one', name: 'vm-kubelet' }],
    ['/api/v1/nodes/vm-kubelet/status', { kind: 'other' }],
    ['/api/v1/nodes/vm-kubelet/proxy/configz', { kind: 'other' }],
    ['/api/v1/namespaces/default/pods', { kind: 'other' }],
  ];
  for (const [url, want] of cases) {
    it(`${url} is ${want.kind}`, () => {
      assert.deepEqual(classifyNodeRequest(url), want);
    });
  }
});
