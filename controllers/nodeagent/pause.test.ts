import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { createPauseGate } from './pause.js';

describe('pause gate', () => {
  it('starts open, closes when paused, and resyncs once when it opens again', () => {
    let resumes = 0;
    const gate = createPauseGate({ onResume: () => resumes++, logger: pino({ level: 'silent' }) });
    assert.equal(gate.isPaused(), false);
    gate.setPaused(false);
    assert.equal(resumes, 0, 'staying open is not a resume');
    gate.setPaused(true);
    gate.setPaused(true);
    assert.equal(gate.isPaused(), true);
    gate.setPaused(false);
    gate.setPaused(false);
    assert.equal(gate.isPaused(), false);
    assert.equal(resumes, 1);
  });
});
