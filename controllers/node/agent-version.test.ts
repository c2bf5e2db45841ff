import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { agentVersion, formatAgentVersion, isPackageVersionNotFoundError, nodeletPackageVersion } from './agent-version.js';

describe('agent version', () => {
  it("reports the nodelet package's version as a semver with a nodelet pre-release tag", () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    assert.equal(nodeletPackageVersion(), pkg.version);
    assert.equal(agentVersion(), `v${pkg.version}-nodelet`);
    assert.match(agentVersion(), /^v\d+\.\d+\.\d+-[0-9A-Za-z.-]+$/);
  });

  it('finds the package from a deeper directory, as the compiled dist/ layout has', () => {
    const deep = new URL('../dist/controllers/agent-version.js', import.meta.url).pathname;
    assert.equal(nodeletPackageVersion(deep), nodeletPackageVersion());
    assert.equal(formatAgentVersion('1.2.3'), 'v1.2.3-nodelet');
  });

  it('fails when no nodelet package is above the file', () => {
    assert.throws(() => nodeletPackageVersion('/tmp/elsewhere/x.js'), isPackageVersionNotFoundError);
  });
});
