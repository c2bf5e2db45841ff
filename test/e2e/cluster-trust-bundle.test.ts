/**
 * End to end: projected `clusterTrustBundle` sources (GA and on in the kubelet 1.37). Real
 * ClusterTrustBundles (certificates.k8s.io/v1) holding certificates made here with openssl; a pod
 * reads the projected files. Asserted on what the container read (the certificates, compared by
 * their DER bytes) and the runtime (its container ran and exited 0); a required bundle that does
 * not exist holds the pod with a FailedMount event and no sandbox.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { NODE_NAME, apply, createNamespace, deleteNamespace, eventually, getPod, kubectl, podEvents, requireCluster, runtimePicture, sandboxesOf, waitForPhase } from './helpers.js';

const SIGNER = 'e2e.nodelet.dev/trust';
const BY_NAME = 'e2e-nodelet-roots';
/** Signer-linked bundles must be named `<signer with / as :>:<anything>`. */
const SIGNED_A = 'e2e.nodelet.dev:trust:a';
const SIGNED_B = 'e2e.nodelet.dev:trust:b';

async function selfSignedCert(dir: string, cn: string): Promise<string> {
  const out = path.join(dir, `${cn}.pem`);
  await promisify(execFile)('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', '/dev/null', '-subj', `/CN=${cn}`, '-days', '1', '-out', out]);
  return readFile(out, 'utf8');
}

/** The DER bytes (base64) of each CERTIFICATE block, sorted. */
function ders(pem: string): string[] {
  return [...pem.matchAll(/-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g)].map((m) => (m[1] ?? '').replace(/\s/g, '')).sort();
}

function bundle(name: string, trustBundle: string, signerName?: string, labels?: Record<string, string>): object {
  return { apiVersion: 'certificates.k8s.io/v1', kind: 'ClusterTrustBundle', metadata: { name, ...(labels === undefined ? {} : { labels }) }, spec: { trustBundle, ...(signerName === undefined ? {} : { signerName }) } };
}

function pod(namespace: string, name: string, sources: object[], script: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      volumes: [{ name: 'trust', projected: { sources } }],
      containers: [{ name: 'main', image: 'busybox:1.35', command: ['sh', '-c', script], volumeMounts: [{ name: 'trust', mountPath: '/trust' }] }],
    },
  };
}

describe('projected clusterTrustBundle volumes on nodelet', () => {
  let ns = '';
  let dir = '';
  const certs: Record<string, string> = {};

  before(async () => {
    requireCluster();
    ns = await createNamespace('e2e-ctb');
    dir = await mkdtemp(path.join(os.tmpdir(), 'e2e-ctb-'));
    for (const cn of ['root-1', 'root-2', 'team-a', 'team-b']) certs[cn] = await selfSignedCert(dir, cn);
    await apply(bundle(BY_NAME, `${certs['root-1'] ?? ''}${certs['root-2'] ?? ''}`));
    await apply(bundle(SIGNED_A, certs['team-a'] ?? '', SIGNER, { team: 'a' }));
    // root-1 again in b: the signer's file holds it once.
    await apply(bundle(SIGNED_B, `${certs['team-b'] ?? ''}${certs['root-1'] ?? ''}`, SIGNER, { team: 'b' }));
  });

  after(async () => {
    if (ns !== '') await deleteNamespace(ns);
    await kubectl(['delete', 'clustertrustbundle', BY_NAME, SIGNED_A, SIGNED_B, '--ignore-not-found']);
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  it("projects a bundle by name, a signer's bundles by label, deduplicated, and an optional missing one as an empty file", async () => {
    const sources = [
      { clusterTrustBundle: { name: BY_NAME, path: 'by-name.pem' } },
      { clusterTrustBundle: { signerName: SIGNER, labelSelector: {}, path: 'signer-all.pem' } },
      { clusterTrustBundle: { signerName: SIGNER, labelSelector: { matchLabels: { team: 'a' } }, path: 'signer-a.pem' } },
      { clusterTrustBundle: { name: 'e2e-nodelet-missing', path: 'none.pem', optional: true } },
    ];
    const script = 'for f in by-name signer-all signer-a none; do echo "== $f $(wc -c < /trust/$f.pem)"; cat /trust/$f.pem; done';
    await apply(pod(ns, 'reader', sources, script));
    const p = await waitForPhase(ns, 'reader', 'Succeeded', 120_000);
    const out = await kubectl(['logs', '-n', ns, 'reader']);
    const files = new Map(out.split(/^== /m).filter((x) => x !== '').map((chunk) => [chunk.slice(0, chunk.indexOf(' ')), chunk.slice(chunk.indexOf('\n') + 1)]));
    const c = (name: string): string => certs[name] ?? '';
    assert.deepEqual(ders(files.get('by-name') ?? ''), ders(c('root-1') + c('root-2')));
    assert.deepEqual(ders(files.get('signer-all') ?? ''), ders(c('team-a') + c('team-b') + c('root-1')));
    assert.deepEqual(ders(files.get('signer-a') ?? ''), ders(c('team-a')));
    assert.match(out, /^== none 0$/m, 'the optional missing bundle is an empty file');
    assert.deepEqual((await runtimePicture(p.metadata?.uid ?? '')).containers, ['main#0:EXITED(0)']);
  });

  it('holds a pod whose required bundle does not exist: FailedMount, no sandbox', async () => {
    await apply(pod(ns, 'missing', [{ clusterTrustBundle: { name: 'e2e-nodelet-missing', path: 'ca.pem' } }], 'true'));
    const event = await eventually('a FailedMount event', async () => (await podEvents(ns, 'missing')).find((e) => e.reason === 'FailedMount'));
    assert.match(event.message ?? '', /^MountVolume.SetUp failed for volume "trust" : .*clustertrustbundles.certificates.k8s.io "e2e-nodelet-missing" not found/);
    const held = await getPod(ns, 'missing');
    assert.equal(held?.status?.phase, 'Pending');
    assert.deepEqual(await sandboxesOf(held?.metadata?.uid ?? ''), []);
  });
});
