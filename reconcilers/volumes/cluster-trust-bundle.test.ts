/**
 * The clusterTrustBundle projection as the kubelet's trust bundle manager computes it: one bundle
 * by name, or a signer's bundles whose labels match; certificates deduplicated and written again;
 * the `optional` cases; the selector in the API's syntax.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clusterTrustBundleContent, labelSelectorQuery, normalizeTrustAnchors, type TrustBundle } from './cluster-trust-bundle.js';
import { createFakeVolumeSourceApi } from '../../test/doubles/fake-volume-source-api.js';

/** A PEM block whose body is `bytes` (the projection does not parse the certificate itself). */
function pem(bytes: string, type = 'CERTIFICATE', width = 64): string {
  const body = Buffer.from(bytes).toString('base64');
  return `-----BEGIN ${type}-----\n${(body.match(new RegExp(`.{1,${width}}`, 'g')) ?? []).join('\n')}\n-----END ${type}-----\n`;
}
const bundle = (name: string, signerName: string, labels: Record<string, string>, ...certs: string[]): TrustBundle => ({ name, signerName, labels, trustBundle: certs.map((c) => pem(c)).join('') });
const long = 'x'.repeat(100);

describe('clusterTrustBundle projection', () => {
  it('writes each certificate once, as CERTIFICATE blocks of 64 columns, in a fixed order', () => {
    const a = bundle('a', '', {}, 'cert-b', long);
    const b: TrustBundle = { name: 'b', signerName: '', labels: {}, trustBundle: `${pem('cert-b', 'CERTIFICATE', 76)}junk between blocks\n${pem('cert-a')}` };
    const out = normalizeTrustAnchors([a, b]);
    const bodies = [...out.matchAll(/-----BEGIN CERTIFICATE-----\n([\s\S]*?)\n-----END CERTIFICATE-----\n/g)].map((m) => Buffer.from((m[1] ?? '').replace(/\n/g, ''), 'base64').toString());
    assert.deepEqual([...bodies].sort(), ['cert-a', 'cert-b', long].sort());
    assert.equal(bodies.length, 3, 'cert-b only once');
    assert.ok(out.split('\n').every((line) => line.length <= 64));
    assert.equal(normalizeTrustAnchors([b, a]), out, 'the same bundles give the same file');
  });

  it('selectors in the API syntax: none matches nothing, empty matches all', () => {
    assert.equal(labelSelectorQuery(undefined), undefined);
    assert.equal(labelSelectorQuery({}), '');
    assert.equal(
      labelSelectorQuery({ matchLabels: { team: 'a' }, matchExpressions: [{ key: 'env', operator: 'In', values: ['prod', 'dev'] }, { key: 'x', operator: 'NotIn', values: ['1'] }, { key: 'y', operator: 'Exists' }, { key: 'z', operator: 'DoesNotExist' }] }),
      'team=a,env in (dev,prod),x notin (1),y,!z',
    );
  });

  it("by name; a missing one fails unless optional (an empty file), with the kubelet's messages", async () => {
    const api = createFakeVolumeSourceApi();
    api.trustBundles.set('roots', bundle('roots', '', {}, 'root-1'));
    assert.equal(await clusterTrustBundleContent(api, { name: 'roots', path: 'ca.pem' }), pem('root-1'));
    await assert.rejects(clusterTrustBundleContent(api, { name: 'gone', path: 'ca.pem' }), /clustertrustbundles.certificates.k8s.io "gone" not found/);
    assert.equal(await clusterTrustBundleContent(api, { name: 'gone', path: 'ca.pem', optional: true }), '');
  });

  it("by signer and labels: only that signer's matching bundles; none matched fails unless optional", async () => {
    const api = createFakeVolumeSourceApi();
    api.trustBundles.set('s:a', bundle('s:a', 'example.com/s', { team: 'a' }, 'a-1'));
    api.trustBundles.set('s:b', bundle('s:b', 'example.com/s', { team: 'b' }, 'b-1'));
    api.trustBundles.set('o:a', bundle('o:a', 'example.com/other', { team: 'a' }, 'other'));
    assert.equal(await clusterTrustBundleContent(api, { signerName: 'example.com/s', labelSelector: { matchLabels: { team: 'a' } }, path: 'p' }), pem('a-1'));
    assert.equal((await clusterTrustBundleContent(api, { signerName: 'example.com/s', labelSelector: {}, path: 'p' })).match(/BEGIN/g)?.length, 2);
    await assert.rejects(clusterTrustBundleContent(api, { signerName: 'example.com/s', path: 'p' }), /matched zero ClusterTrustBundles/, 'no selector matches nothing');
    assert.equal(await clusterTrustBundleContent(api, { signerName: 'example.com/none', labelSelector: {}, path: 'p', optional: true }), '');
  });
});
