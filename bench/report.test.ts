import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BEGIN_MARKER, DEFAULT_INTRO, END_MARKER, updateDocument } from './report.js';

describe('updateDocument', () => {
  const block = `${BEGIN_MARKER}\nnew results\n${END_MARKER}`;

  it('writes the default intro above the results when there is no document', () => {
    assert.equal(updateDocument(undefined, block), `${DEFAULT_INTRO}\n${block}\n`);
  });

  it('replaces only the block between the markers, keeping the prose around it', () => {
    const doc = `# Benchmarks\n\nhand-written intro\n\n${BEGIN_MARKER}\nold results\n${END_MARKER}\n\nfooter\n`;
    assert.equal(updateDocument(doc, block), `# Benchmarks\n\nhand-written intro\n\n${block}\n\nfooter\n`);
  });

  it('appends the block to a document without markers', () => {
    assert.equal(updateDocument('# Benchmarks\n\nintro\n', block), `# Benchmarks\n\nintro\n\n${block}\n`);
  });
});
