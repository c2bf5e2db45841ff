/**
 * End to end: the Node's `status.images` is the runtime's image list as the kubelet reports it
 * (largest 50, up to five names each, digests first), checked against `crictl images` itself, and
 * it follows an image the runtime gains.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { V1ContainerImage, V1Node } from '@kubernetes/client-node';
import { NODE_NAME, crictl, eventually, kubectl, requireCluster } from './helpers.js';
import { execFile } from 'node:child_process';
import { isDeepStrictEqual, promisify } from 'node:util';

/** ctr in the cluster's containerd (CONTAINERD_ADDRESS and CONTAINERD_NAMESPACE from .cluster/env). */
async function ctr(args: readonly string[]): Promise<void> {
  await promisify(execFile)('ctr', [...args], { timeout: 60_000 });
}

interface CrictlImage {
  readonly repoTags: string[] | null;
  readonly repoDigests: string[] | null;
  readonly size: string;
}

/** What the Node should say, computed from crictl's listing (not from nodelet's code). */
async function expectedFromRuntime(): Promise<V1ContainerImage[]> {
  const { images } = JSON.parse(await crictl(['images', '-o', 'json'])) as { images: CrictlImage[] };
  return images
    .map((i) => ({ names: [...(i.repoDigests ?? []), ...(i.repoTags ?? [])].slice(0, 5), sizeBytes: Number(i.size) }))
    .sort((a, b) => b.sizeBytes - a.sizeBytes)
    .slice(0, 50);
}

async function nodeImages(): Promise<V1ContainerImage[]> {
  const node = JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as V1Node;
  return (node.status?.images ?? []).map((i) => ({ names: i.names ?? [], sizeBytes: i.sizeBytes ?? 0 }));
}

/** Equal up to the order of images of the same size (the sort is by size only). */
function sameList(a: V1ContainerImage[], b: V1ContainerImage[]): boolean {
  const key = (l: V1ContainerImage[]): string[] => l.map((i) => JSON.stringify(i)).sort();
  return a.length === b.length && isDeepStrictEqual(key(a), key(b)) && a.every((img, i) => img.sizeBytes === b[i]?.sizeBytes);
}

describe("the Node's images on nodelet", () => {
  before(() => {
    requireCluster();
  });

  it("reports the runtime's images, largest first, within a refresh period (30 s) of the listing", async () => {
    const agreed = await eventually('the Node and crictl agreeing', async () => {
      const [reported, expected] = await Promise.all([nodeImages(), expectedFromRuntime()]);
      return reported.length > 0 && sameList(reported, expected) ? reported : undefined;
    }, 90_000);
    console.log(`node images: ${agreed.length}, largest ${agreed[0]?.names?.[0] ?? ''} (${agreed[0]?.sizeBytes ?? 0} bytes)`);
    assert.ok(agreed.some((i) => i.names?.some((n) => n.endsWith('/busybox:1.35'))), 'the test image busybox:1.35 is among them');
    assert.ok(agreed.every((i) => (i.names?.length ?? 0) <= 5));
  });

  it('follows a tag the runtime gains', async () => {
    const tag = `registry.local/e2e-node-images:${Date.now()}`;
    const { images } = JSON.parse(await crictl(['images', '-o', 'json'])) as { images: (CrictlImage & { id: string })[] };
    const busybox = images.find((i) => (i.repoTags ?? []).some((t) => t.endsWith('/busybox:1.35')));
    assert.ok(busybox !== undefined, 'busybox:1.35 in the runtime');
    await ctr(['images', 'tag', busybox.repoTags?.find((t) => t.endsWith('/busybox:1.35')) ?? '', tag]);
    try {
      await eventually(`the Node naming ${tag}`, async () => ((await nodeImages()).some((i) => i.names?.includes(tag)) ? true : undefined), 90_000);
    } finally {
      await ctr(['images', 'rm', tag]);
    }
  });
});
