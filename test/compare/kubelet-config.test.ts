/**
 * A real kubelet's configuration read by nodelet: the kubelet control node's effective
 * KubeletConfiguration as it serves it at /configz (every field, defaults included, as the kubelet
 * v1.37.2 of `npm run kubelet:up` runs) is written to a file and given to nodelet's `--config`. It
 * must be accepted whole (nothing refused, nothing unknown), and each field nodelet maps must come
 * out as the kubelet's value, compared through nodelet's own /configz rendering of its settings.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { dump } from 'js-yaml';
import { kubeletConfigurationOf } from '../../cmd/configz.js';
import { parseSettings } from '../../cmd/flags.js';
import { expandConfigFlag } from '../../cmd/kubelet-config.js';
import { NODE_NAME, kubectl, requireCluster } from '../e2e/helpers.js';

const KUBELET_NODE = `${NODE_NAME}-kubelet`;
/** Fields whose nodelet rendering is the same value in another form, compared by meaning here. */
const SAME_MEANING: Readonly<Record<string, (kubelet: unknown, nodelet: unknown) => boolean>> = {
  // The kubelet's configz writes its effective defaults; an empty map there is nodelet's none.
  evictionSoft: (k, n) => JSON.stringify(k ?? {}) === JSON.stringify(n ?? {}),
  evictionSoftGracePeriod: (k, n) => JSON.stringify(k ?? {}) === JSON.stringify(n ?? {}),
  evictionMinimumReclaim: (k, n) => JSON.stringify(k ?? {}) === JSON.stringify(n ?? {}),
};

describe("the kubelet control node's own configuration, read by nodelet's --config", () => {
  it('is accepted whole, and every field nodelet maps keeps its value', async (t) => {
    requireCluster();
    const served = JSON.parse(await kubectl(['get', '--raw', `/api/v1/nodes/${KUBELET_NODE}/proxy/configz`])) as { kubeletconfig: Record<string, unknown> };
    const config: Record<string, unknown> = { apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration', ...served.kubeletconfig };
    const dir = mkdtempSync(path.join(tmpdir(), 'kubelet-config-'));
    try {
      const file = path.join(dir, 'config.yaml');
      writeFileSync(file, dump(config));
      const settings = parseSettings(expandConfigFlag(['--config', file, '--node-name', KUBELET_NODE]), {});
      assert.notEqual(settings, 'help');
      if (settings === 'help') return;
      const shown = kubeletConfigurationOf(settings);
      const compared = Object.keys(shown).filter((k) => k !== 'kind' && k !== 'apiVersion' && k in config);
      const differing = compared.filter((k) => {
        const same = SAME_MEANING[k];
        return same === undefined ? JSON.stringify(shown[k]) !== JSON.stringify(config[k]) : !same(config[k], shown[k]);
      });
      t.diagnostic(`${Object.keys(served.kubeletconfig).length} fields in the kubelet's /configz; ${compared.length} of them mapped to nodelet's settings and compared`);
      assert.deepEqual(differing.map((k) => `${k}: kubelet ${JSON.stringify(config[k])}, nodelet ${JSON.stringify(shown[k])}`), []);
      assert.ok(compared.length >= 30, `at least 30 fields compared (${compared.length})`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
