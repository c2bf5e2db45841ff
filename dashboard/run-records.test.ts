import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newJobId } from '../controllers/queue/redis.js';
import { asJobData, jobIdPrefixOf, nextRunAt, parseJobData, parseRunRecord } from './run-records.js';

const RECORD = {
  run: 2,
  reason: 'pod updated',
  attempt: 3,
  outcome: 'error',
  startedAt: '2030-01-01T00:00:00.000Z',
  durationMs: 250,
  nextRunInMs: 4000,
  error: 'image pull failed',
};

describe('parseRunRecord', () => {
  it('reads a record the queue runner logged', () => {
    assert.deepEqual(parseRunRecord(JSON.stringify(RECORD)), RECORD);
  });

  it('keeps optional fields absent when the run had none', () => {
    const { nextRunInMs: _n, error: _e, ...success } = { ...RECORD, outcome: 'success' };
    assert.deepEqual(parseRunRecord(JSON.stringify(success)), success);
  });

  it('reads lines that are not records as absent', () => {
    assert.equal(parseRunRecord('not json'), undefined);
    assert.equal(parseRunRecord('"a string"'), undefined);
    assert.equal(parseRunRecord('[1,2]'), undefined);
    assert.equal(parseRunRecord(JSON.stringify({ ...RECORD, outcome: 'exploded' })), undefined);
    assert.equal(parseRunRecord(JSON.stringify({ ...RECORD, startedAt: 'yesterday' })), undefined);
    assert.equal(parseRunRecord(JSON.stringify({ ...RECORD, durationMs: '250' })), undefined);
  });
});

describe('job data', () => {
  it('reads the pod reference of a reconcile job', () => {
    assert.deepEqual(parseJobData('{"uid":"u1","namespace":"ns","name":"web","reason":"pod added"}'), {
      uid: 'u1',
      namespace: 'ns',
      name: 'web',
      reason: 'pod added',
    });
  });

  it('refuses data without a UID and tolerates a missing reason', () => {
    assert.equal(asJobData({ namespace: 'ns', name: 'web' }), undefined);
    assert.equal(asJobData({ uid: '', namespace: 'ns', name: 'web' }), undefined);
    assert.equal(asJobData({ uid: 'u', namespace: 'ns', name: 'web' })?.reason, '');
    assert.equal(parseJobData(null), undefined);
    assert.equal(parseJobData('{'), undefined);
  });
});

describe('nextRunAt', () => {
  it('is the end of the run plus the requested delay', () => {
    const record = parseRunRecord(JSON.stringify(RECORD))!;
    assert.equal(nextRunAt(record), Date.parse(RECORD.startedAt) + 250 + 4000);
  });

  it('is undefined for a run that asked for nothing', () => {
    const record = parseRunRecord(JSON.stringify({ ...RECORD, outcome: 'success', nextRunInMs: undefined }))!;
    assert.equal(nextRunAt(record), undefined);
  });
});

describe('jobIdPrefixOf', () => {
  it('is a prefix of every job ID the queue makes for the UID, and of no other UID', () => {
    for (const uid of ['6f1c2d3e-0000-4000-8000-000000000001', 'static:pod:hash']) {
      assert.ok(newJobId(uid, Date.now()).startsWith(jobIdPrefixOf(uid)), uid);
    }
    assert.ok(!newJobId('abc-12', Date.now()).startsWith(jobIdPrefixOf('abc-1')));
  });
});
