import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';

const run = promisify(execFile);
const CLI = path.join(import.meta.dirname, 'nodelet.ts');
const PACKAGE_VERSION = (JSON.parse(readFileSync(path.join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;

describe('nodelet --version', () => {
  it("prints the agent's version as the Node reports it, and the Node.js it runs on, without needing any other flag", async () => {
    for (const argv of [['--version'], ['version']]) {
      const { stdout } = await run(process.execPath, ['--import', 'tsx', CLI, ...argv], { timeout: 60_000 });
      assert.equal(stdout, `nodelet v${PACKAGE_VERSION}-nodelet (Node.js ${process.version})\n`);
    }
  });
});
