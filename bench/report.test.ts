import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { BEGIN_MARKER, DEFAULT_INTRO, END_MARKER, updateDocument, writeResultsBlock } from './report.js';

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

describe('writeResultsBlock', () => {
  it('replaces the block between its markers in the file, keeps the prose around it, and creates a missing file', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-report-'));
    try {
      const markers = { begin: '<!-- B -->', end: '<!-- E -->' };
      const doc = path.join(dir, 'doc.md');
      await writeFile(doc, 'intro\n<!-- B -->\nold\n<!-- E -->\noutro\n');
      await writeResultsBlock(doc, '<!-- B -->\nnew\n<!-- E -->', markers);
      assert.equal(await readFile(doc, 'utf8'), 'intro\n<!-- B -->\nnew\n<!-- E -->\noutro\n');
      const fresh = path.join(dir, 'fresh.md');
      await writeResultsBlock(fresh, `${BEGIN_MARKER}\nx\n${END_MARKER}`);
      assert.equal(await readFile(fresh, 'utf8'), `${DEFAULT_INTRO}\n${BEGIN_MARKER}\nx\n${END_MARKER}\n`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
