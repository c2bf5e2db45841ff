import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planRotation, rotationTimestamp, type RotationInput } from './rotation-plan.js';

const TS = '20300101-120000';

function plan(siblings: readonly string[], maxFiles: number): ReturnType<typeof planRotation> {
  const input: RotationInput = { logName: '0.log', siblings: ['0.log', ...siblings], maxFiles, timestamp: TS };
  return planRotation(input);
}

describe('planRotation', () => {
  it('with nothing rotated yet only renames the current file', () => {
    assert.deepEqual(plan([], 5), { removeUnused: [], removeExcess: [], compress: [], rotateTo: `0.log.${TS}` });
  });

  it('keeps maxFiles - 2 rotated files, oldest removed first, and compresses the kept uncompressed ones', () => {
    const siblings = ['0.log.20300101-110000.gz', '0.log.20300101-110500.gz', '0.log.20300101-111000.gz', '0.log.20300101-111500'];
    assert.deepEqual(plan(siblings, 5), {
      removeUnused: [],
      removeExcess: ['0.log.20300101-110000.gz'],
      compress: ['0.log.20300101-111500'],
      rotateTo: `0.log.${TS}`,
    });
  });

  it('with maxFiles 2 removes every rotated file: the renamed one and the fresh one make two', () => {
    assert.deepEqual(plan(['0.log.20300101-110000.gz', '0.log.20300101-111500'], 2), {
      removeUnused: [],
      removeExcess: ['0.log.20300101-110000.gz', '0.log.20300101-111500'],
      compress: [],
      rotateTo: `0.log.${TS}`,
    });
  });

  it('removes the leftovers of an interrupted rotation: .tmp files and an uncompressed file whose .gz exists', () => {
    const siblings = ['0.log.20300101-110000', '0.log.20300101-110000.gz', '0.log.20300101-111500', '0.log.20300101-111500.tmp'];
    assert.deepEqual(plan(siblings, 5), {
      removeUnused: ['0.log.20300101-110000', '0.log.20300101-111500.tmp'],
      removeExcess: [],
      compress: ['0.log.20300101-111500'],
      rotateTo: `0.log.${TS}`,
    });
  });

  it("ignores other containers' files and other instances of the same container", () => {
    const siblings = ['1.log', '1.log.20300101-110000', '10.log.20300101-110000.gz', 'x'];
    assert.deepEqual(plan(siblings, 2), { removeUnused: [], removeExcess: [], compress: [], rotateTo: `0.log.${TS}` });
  });

  it('waits when the name it would rename to, or its .gz, is taken (rotated within the same second)', () => {
    assert.equal(plan([`0.log.${TS}`], 5), undefined);
    assert.equal(plan([`0.log.${TS}.gz`], 5), undefined);
  });

  it('never keeps more than maxFiles files after the rotation, whatever was there', () => {
    for (let maxFiles = 2; maxFiles <= 6; maxFiles++) {
      for (let present = 0; present <= 8; present++) {
        const siblings = Array.from({ length: present }, (_, i) => `0.log.20300101-10${String(i).padStart(2, '0')}00${i % 2 === 0 ? '.gz' : ''}`);
        const p = plan(siblings, maxFiles);
        assert.ok(p !== undefined);
        const gone = new Set([...p.removeUnused, ...p.removeExcess]);
        const rotatedAfter = siblings.filter((s) => !gone.has(s)).length + 1;
        assert.ok(rotatedAfter + 1 <= maxFiles, `maxFiles ${maxFiles}, ${present} present: ${rotatedAfter} rotated + the current`);
      }
    }
  });
});

describe('rotationTimestamp', () => {
  it('formats local time as YYYYMMDD-HHMMSS, zero-padded', () => {
    assert.equal(rotationTimestamp(new Date(2030, 0, 2, 3, 4, 5)), '20300102-030405');
    assert.equal(rotationTimestamp(new Date(2030, 11, 31, 23, 59, 59)), '20301231-235959');
  });
});
