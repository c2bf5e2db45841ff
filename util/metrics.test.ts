/**
 * The registry's text exposition, line by line: HELP/TYPE, sorted families and series, escaping,
 * cumulative histogram buckets with `+Inf`, `_sum` and `_count`, labelled families absent until
 * recorded, label sets checked, and collectors run (a failing one reported, not thrown).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_BUCKETS, MetricsRegistry, escapeLabelValue, exponentialBuckets, formatValue } from './metrics.js';

describe('MetricsRegistry exposition', () => {
  it('writes counters and gauges with HELP and TYPE, families sorted by name, series by label values', () => {
    const registry = new MetricsRegistry();
    const ops = registry.counter({ name: 'b_ops_total', help: 'Operations.', labelNames: ['operation_type'] });
    const up = registry.gauge({ name: 'a_up', help: 'Up.' });
    ops.inc({ operation_type: 'version' });
    ops.inc({ operation_type: 'list_containers' }, 2);
    ops.inc({ operation_type: 'version' });
    up.set({}, 1);
    assert.equal(
      registry.text(),
      [
        '# HELP a_up Up.',
        '# TYPE a_up gauge',
        'a_up 1',
        '# HELP b_ops_total Operations.',
        '# TYPE b_ops_total counter',
        'b_ops_total{operation_type="list_containers"} 2',
        'b_ops_total{operation_type="version"} 2',
        '',
      ].join('\n'),
    );
  });

  it('a labelled family is absent until recorded; an unlabelled one is there at 0', () => {
    const registry = new MetricsRegistry();
    registry.counter({ name: 'evictions', help: 'E.', labelNames: ['eviction_signal'] });
    registry.counter({ name: 'plain_total', help: 'P.' });
    assert.equal(registry.text(), '# HELP plain_total P.\n# TYPE plain_total counter\nplain_total 0\n');
  });

  it('histograms: cumulative buckets, +Inf equal to the count, sum and count per series', () => {
    const registry = new MetricsRegistry();
    const h = registry.histogram({ name: 'd_seconds', help: 'D.', labelNames: ['op'], buckets: [1, 0.1, 10] });
    for (const v of [0.05, 0.1, 0.5, 3, 20]) h.observe({ op: 'x' }, v);
    assert.equal(
      registry.text(),
      [
        '# HELP d_seconds D.',
        '# TYPE d_seconds histogram',
        'd_seconds_bucket{op="x",le="0.1"} 2',
        'd_seconds_bucket{op="x",le="1"} 3',
        'd_seconds_bucket{op="x",le="10"} 4',
        'd_seconds_bucket{op="x",le="+Inf"} 5',
        'd_seconds_sum{op="x"} 23.65',
        'd_seconds_count{op="x"} 5',
        '',
      ].join('\n'),
    );
  });

  it('escapes label values and help text', () => {
    const registry = new MetricsRegistry();
    registry.gauge({ name: 'g', help: 'a \\ b\nc', labelNames: ['v'] }).set({ v: 'q"uo\\te\nnl' }, 2);
    assert.equal(registry.text(), '# HELP g a \\\\ b\\nc\n# TYPE g gauge\ng{v="q\\"uo\\\\te\\nnl"} 2\n');
    assert.equal(escapeLabelValue('\\"\n'), '\\\\\\"\\n');
  });

  it('special values, negative counter steps dropped, gauge clear', () => {
    assert.deepEqual([formatValue(Infinity), formatValue(-Infinity), formatValue(NaN), formatValue(0.25)], ['+Inf', '-Inf', 'NaN', '0.25']);
    // Go's 'g' with the shortest precision, as the kubelet's scrape shows them.
    assert.deepEqual(
      [1048576, 16777216, 1796646133, 2 ** 64, 1.803e-6, 0.0001, 123456, 24549.770713075, -2500000, 1e6, 0].map(formatValue),
      ['1.048576e+06', '1.6777216e+07', '1.796646133e+09', '1.8446744073709552e+19', '1.803e-06', '0.0001', '123456', '24549.770713075', '-2.5e+06', '1e+06', '0'],
    );
    const registry = new MetricsRegistry();
    const c = registry.counter({ name: 'c_total', help: 'C.' });
    c.inc(undefined, 3);
    c.inc(undefined, -1);
    c.inc(undefined, NaN);
    const g = registry.gauge({ name: 'g', help: 'G.', labelNames: ['s'] });
    g.set({ s: 'a' }, 1);
    g.clear();
    assert.equal(registry.text(), '# HELP c_total C.\n# TYPE c_total counter\nc_total 3\n');
  });

  it('wrong label sets, duplicate and invalid names are programmer errors', () => {
    const registry = new MetricsRegistry();
    const c = registry.counter({ name: 'c_total', help: 'C.', labelNames: ['a'] });
    assert.throws(() => { c.inc({}); }, TypeError);
    assert.throws(() => { c.inc({ a: '1', b: '2' }); }, TypeError);
    assert.throws(() => registry.counter({ name: 'c_total', help: 'again' }), TypeError);
    assert.throws(() => registry.gauge({ name: 'bad-name', help: 'x' }), TypeError);
    assert.throws(() => registry.histogram({ name: 'h', help: 'x', labelNames: ['le'], buckets: [1] }), TypeError);
  });

  it('the Go client bucket layouts', () => {
    assert.deepEqual(DEFAULT_BUCKETS, [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);
    const runtime = exponentialBuckets(0.005, 2.5, 14);
    assert.equal(runtime.length, 14);
    assert.equal(runtime[0], 0.005);
    assert.ok(Math.abs((runtime[13] ?? 0) - 0.005 * 2.5 ** 13) < 1e-9);
  });

  it('runs collectors before exposing; a failing one is reported and the rest still written', async () => {
    const registry = new MetricsRegistry();
    const g = registry.gauge({ name: 'depth', help: 'D.', labelNames: ['state'] });
    registry.collect(() => {
      g.set({ state: 'waiting' }, 4);
      return Promise.resolve();
    });
    registry.collect(() => Promise.reject(new Error('redis down')));
    const errors: unknown[] = [];
    const text = await registry.expose((e) => errors.push(e));
    assert.equal(text, '# HELP depth D.\n# TYPE depth gauge\ndepth{state="waiting"} 4\n');
    assert.equal(errors.length, 1);
  });
});
