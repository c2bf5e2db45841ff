import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { memoryVolumeBytes } from './empty-dir.js';
import { parseMountInfo } from '../../util/mountinfo.js';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

function pod(limits: (string | undefined)[]): V1Pod {
  return { spec: { containers: limits.map((memory, i) => ({ name: `c${i}`, ...(memory === undefined ? {} : { resources: { limits: { memory } } }) })) } };
}

describe('memory-backed emptyDir size, as the kubelet computes it', () => {
  it('is the node allocatable memory without limits', () => {
    assert.equal(memoryVolumeBytes(pod([undefined]), { medium: 'Memory' }, 8 * GiB), 8 * GiB);
  });
  it('is the pod memory limit when every container has one', () => {
    assert.equal(memoryVolumeBytes(pod(['256Mi', '256Mi']), { medium: 'Memory' }, 8 * GiB), 512 * MiB);
    assert.equal(memoryVolumeBytes(pod(['256Mi', undefined]), { medium: 'Memory' }, 8 * GiB), 8 * GiB, 'one container without a limit: no pod limit');
  });
  it('is the sizeLimit when that is smaller, never larger than the rest', () => {
    assert.equal(memoryVolumeBytes(pod(['256Mi']), { medium: 'Memory', sizeLimit: '16Mi' }, 8 * GiB), 16 * MiB);
    assert.equal(memoryVolumeBytes(pod(['256Mi']), { medium: 'Memory', sizeLimit: '1Gi' }, 8 * GiB), 256 * MiB);
    assert.equal(memoryVolumeBytes(pod([undefined]), { medium: 'Memory', sizeLimit: '0' }, 8 * GiB), 8 * GiB);
  });
});

describe('mountinfo parsing', () => {
  it('reads mount points (with escapes), types and super-block options', () => {
    const text = [
      '22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw',
      '95 22 0:50 / /var/lib/nodelet/pods/u/volumes/kubernetes.io~empty-dir/my\\040vol rw,relatime shared:50 - tmpfs tmpfs rw,size=16384k,mode=777',
    ].join('\n');
    assert.deepEqual(parseMountInfo(text), [
      { mountPoint: '/', fsType: 'ext4', superOptions: 'rw', optionalFields: ['shared:1'] },
      { mountPoint: '/var/lib/nodelet/pods/u/volumes/kubernetes.io~empty-dir/my vol', fsType: 'tmpfs', superOptions: 'rw,size=16384k,mode=777', optionalFields: ['shared:50'] },
    ]);
  });
});
