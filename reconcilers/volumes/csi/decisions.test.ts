import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1CSIDriver, V1PersistentVolume, V1Pod } from '@kubernetes/client-node';
import { attachmentVerdict, attachRequired, csiAccessMode, delegatedFsGroup, fsGroupPolicyOf, kubeletAppliesFsGroup, lifecycleModeRefusal, podInfoOnMount, publishVolumeContext, type FsGroupCase } from './decisions.js';
import { attachmentName, csiStagingPath, csiTargetPath, ephemeralVolumeHandle, uniqueVolumeName } from './paths.js';
import { inlineCsiSpec, persistentCsiSpec } from './spec.js';

const driver = (spec: V1CSIDriver['spec']): V1CSIDriver => ({ metadata: { name: 'd' }, spec });
const pod: V1Pod = { metadata: { name: 'web', namespace: 'shop', uid: 'uid' }, spec: { serviceAccountName: 'sa', containers: [] } };

describe('CSI paths and names (the kubelet layout, hashes checked with sha256sum)', () => {
  it('stages at plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount, publishes at pods/<uid>/volumes/kubernetes.io~csi/<name>/mount', () => {
    assert.equal(csiStagingPath('/var/lib/nodelet', 'drv', 'vol-1'), '/var/lib/nodelet/plugins/kubernetes.io/csi/drv/d2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49/globalmount');
    assert.equal(csiTargetPath('/r', 'uid-1', 'pv-1'), '/r/pods/uid-1/volumes/kubernetes.io~csi/pv-1/mount');
    assert.throws(() => csiStagingPath('/r', '../x', 'vol'), /not usable as a directory name/);
    assert.throws(() => csiStagingPath('/r', 'drv', ''), /volume handle is empty/);
  });

  it('names VolumeAttachments, ephemeral handles and unique volume names as the kubelet does', () => {
    assert.equal(attachmentName('vol-1', 'drv', 'node-a'), 'csi-5ed64a17a5478ee39a9251186aa170c5a44e4bc43057644aea88bba0f36cd411');
    assert.equal(ephemeralVolumeHandle('uid', 'data'), 'csi-23e443c711b5dad0801c2e0a90f2be6e56dc28a2472cb2e8d6f0ead23e8765e9');
    assert.equal(uniqueVolumeName('drv', 'vol-1'), 'kubernetes.io/csi/drv^vol-1');
  });
});

describe('CSIDriver defaults', () => {
  it('attach is required without an object or without the field; podInfoOnMount only when set', () => {
    assert.equal(attachRequired(undefined), true);
    assert.equal(attachRequired(driver({})), true);
    assert.equal(attachRequired(driver({ attachRequired: false })), false);
    assert.equal(podInfoOnMount(undefined), false);
    assert.equal(podInfoOnMount(driver({ podInfoOnMount: true })), true);
  });

  it('fsGroupPolicy: ReadWriteOnceWithFSType without an object, an error for an object without one', () => {
    assert.deepEqual(fsGroupPolicyOf(undefined), { policy: 'ReadWriteOnceWithFSType' });
    assert.deepEqual(fsGroupPolicyOf(driver({ fsGroupPolicy: 'File' })), { policy: 'File' });
    assert.deepEqual(fsGroupPolicyOf(driver({})), { error: 'kubernetes.io/csi: expected valid fsGroupPolicy, received nil value or empty string' });
  });

  it('lifecycle modes: persistent without an object, ephemeral only when listed', () => {
    assert.equal(lifecycleModeRefusal('d', undefined, 'Persistent'), undefined);
    assert.equal(lifecycleModeRefusal('d', undefined, 'Ephemeral'), 'volume mode "Ephemeral" not supported by driver d (no CSIDriver object)');
    assert.equal(lifecycleModeRefusal('d', driver({ volumeLifecycleModes: ['Persistent'] }), 'Ephemeral'), 'volume mode "Ephemeral" not supported by driver d (only supports ["Persistent"])');
    assert.equal(lifecycleModeRefusal('d', driver({ volumeLifecycleModes: ['Persistent', 'Ephemeral'] }), 'Ephemeral'), undefined);
  });
});

describe('who applies the fsGroup (supportsFSGroup)', () => {
  const base: FsGroupCase = { fsGroup: 2000, policy: 'ReadWriteOnceWithFSType', readOnly: false, fsType: 'ext4', accessModes: ['ReadWriteOnce'], driverAppliesGroup: false };
  const cases: [string, Partial<FsGroupCase>, boolean][] = [
    ['RWO with an fsType', {}, true],
    ['no fsGroup', { fsGroup: undefined }, false],
    ['policy None', { policy: 'None' }, false],
    ['read-only', { readOnly: true }, false],
    ['policy File, even RWX without fsType', { policy: 'File', fsType: '', accessModes: ['ReadWriteMany'] }, true],
    ['no fsType', { fsType: '' }, false],
    ['RWX', { accessModes: ['ReadWriteMany'] }, false],
    ['inline volume (always RWO)', { accessModes: undefined }, true],
    ['the driver has VOLUME_MOUNT_GROUP', { driverAppliesGroup: true }, false],
  ];
  for (const [name, change, expected] of cases) {
    it(name, () => {
      assert.equal(kubeletAppliesFsGroup({ ...base, ...change }), expected);
    });
  }
  it('delegates the group to a VOLUME_MOUNT_GROUP driver', () => {
    assert.equal(delegatedFsGroup(2000, true), '2000');
    assert.equal(delegatedFsGroup(2000, false), undefined);
    assert.equal(delegatedFsGroup(undefined, true), undefined);
  });
});

describe('access modes and volume context', () => {
  it('maps the first access mode (asCSIAccessModeV1 / the multi-writer mapping)', () => {
    assert.equal(csiAccessMode(undefined, false), 'SINGLE_NODE_WRITER');
    assert.equal(csiAccessMode('ReadWriteOnce', true), 'SINGLE_NODE_MULTI_WRITER');
    assert.equal(csiAccessMode('ReadOnlyMany', false), 'MULTI_NODE_READER_ONLY');
    assert.equal(csiAccessMode('ReadWriteMany', false), 'MULTI_NODE_MULTI_WRITER');
    assert.equal(csiAccessMode('ReadWriteOncePod', false), 'SINGLE_NODE_WRITER');
    assert.equal(csiAccessMode('ReadWriteOncePod', true), 'SINGLE_NODE_SINGLE_WRITER');
  });

  it('adds the pod attributes only when the driver asks, ephemeral told', () => {
    assert.deepEqual(publishVolumeContext({ a: '1' }, pod, { podInfo: false, mode: 'Persistent' }), { a: '1' });
    assert.deepEqual(publishVolumeContext({ a: '1' }, pod, { podInfo: true, mode: 'Ephemeral' }), {
      a: '1',
      'csi.storage.k8s.io/pod.name': 'web',
      'csi.storage.k8s.io/pod.namespace': 'shop',
      'csi.storage.k8s.io/pod.uid': 'uid',
      'csi.storage.k8s.io/serviceAccount.name': 'sa',
      'csi.storage.k8s.io/ephemeral': 'true',
    });
  });
});

describe('VolumeAttachment verdicts (verifyAttachmentStatus)', () => {
  it('attached with its metadata as publish context; pending; failed with the attach error; deleted', () => {
    assert.deepEqual(attachmentVerdict({ spec: { attacher: 'd', nodeName: 'n', source: {} }, status: { attached: true, attachmentMetadata: { dev: '/dev/x' } } }), { state: 'attached', publishContext: { dev: '/dev/x' } });
    assert.deepEqual(attachmentVerdict({ spec: { attacher: 'd', nodeName: 'n', source: {} }, status: { attached: false } }), { state: 'pending' });
    assert.deepEqual(attachmentVerdict({ spec: { attacher: 'd', nodeName: 'n', source: {} }, status: { attached: false, attachError: { message: 'disk busy' } } }), { state: 'failed', message: 'disk busy' });
    assert.deepEqual(attachmentVerdict({ metadata: { deletionTimestamp: new Date() }, spec: { attacher: 'd', nodeName: 'n', source: {} } }), { state: 'failed', message: 'volume attachment is being deleted' });
    assert.deepEqual(attachmentVerdict(undefined), { state: 'failed', message: 'volume attachment has been deleted' });
  });
});

describe('CSI volume specs', () => {
  it('a PV: named by the PV, read-only from the claim, secrets refs, mount options and access modes', () => {
    const pv: V1PersistentVolume = { metadata: { name: 'pv-1' }, spec: { accessModes: ['ReadWriteOnce'], mountOptions: ['noatime'], csi: { driver: 'd', volumeHandle: 'h', fsType: 'xfs', volumeAttributes: { k: 'v' }, nodeStageSecretRef: { name: 's1', namespace: 'ns1' }, nodePublishSecretRef: { name: 's2', namespace: 'ns2' } } } };
    assert.deepEqual(persistentCsiSpec(pv, true), {
      specName: 'pv-1', driverName: 'd', volumeHandle: 'h', mode: 'Persistent', readOnly: true, fsType: 'xfs', mountOptions: ['noatime'], accessModes: ['ReadWriteOnce'], attributes: { k: 'v' },
      stageSecretRef: { namespace: 'ns1', name: 's1' }, publishSecretRef: { namespace: 'ns2', name: 's2' },
    });
    assert.equal(persistentCsiSpec({ spec: { hostPath: { path: '/x' } } }, false), undefined);
  });

  it('an inline volume: named by the pod volume, its handle from the pod UID, its secret in the pod namespace', () => {
    const spec = inlineCsiSpec(pod, 'data', { driver: 'd', readOnly: true, nodePublishSecretRef: { name: 's' } });
    assert.equal(spec.volumeHandle, ephemeralVolumeHandle('uid', 'data'));
    assert.deepEqual({ ...spec, volumeHandle: '' }, { specName: 'data', driverName: 'd', volumeHandle: '', mode: 'Ephemeral', readOnly: true, fsType: '', mountOptions: [], accessModes: undefined, attributes: {}, publishSecretRef: { namespace: 'shop', name: 's' } });
  });
});
