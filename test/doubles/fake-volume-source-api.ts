/**
 * A recording, plain-data {@link VolumeSourceApi} for tests (volume tests here, executor tests
 * elsewhere): config maps, secrets, claims and persistent volumes live in maps the test edits, tokens are minted from a counter
 * with the expiry computed from the injected clock, and every call is recorded.
 */
import type { V1ConfigMap, V1PersistentVolume, V1PersistentVolumeClaim, V1Secret } from '@kubernetes/client-node';
import type { IssuedToken, ServiceAccountTokenRequest, VolumeSourceApi } from '../../reconcilers/volumes/types.js';
import type { TrustBundle } from '../../reconcilers/volumes/cluster-trust-bundle.js';

/** The fake's state and recordings; mutate `configMaps`/`secrets` to change what the API serves. */
export interface FakeVolumeSourceApi extends VolumeSourceApi {
  /** `namespace/name` → object. */
  readonly configMaps: Map<string, V1ConfigMap>;
  /** `namespace/name` → object (`data` base64-encoded, as the API serves it). */
  readonly secrets: Map<string, V1Secret>;
  /** `namespace/name` → claim. */
  readonly claims: Map<string, V1PersistentVolumeClaim>;
  /** name → persistent volume. */
  readonly persistentVolumes: Map<string, V1PersistentVolume>;
  readonly tokenRequests: ServiceAccountTokenRequest[];
  /** name → ClusterTrustBundle. */
  readonly trustBundles: Map<string, TrustBundle>;
  /** When set, every call fails with it (an unreachable API server). */
  failWith: Error | undefined;
}

/** Options of {@link createFakeVolumeSourceApi}. */
export interface FakeVolumeSourceApiOptions {
  /** Issue time of minted tokens; defaults to `new Date()`. */
  readonly clock?: () => Date;
}

/** A fake API server with nothing in it. */
export function createFakeVolumeSourceApi(options: FakeVolumeSourceApiOptions = {}): FakeVolumeSourceApi {
  const clock = options.clock ?? ((): Date => new Date());
  let minted = 0;
  const fake: FakeVolumeSourceApi = {
    configMaps: new Map(),
    secrets: new Map(),
    claims: new Map(),
    persistentVolumes: new Map(),
    tokenRequests: [],
    trustBundles: new Map(),
    failWith: undefined,
    readClusterTrustBundle(name: string): Promise<TrustBundle | undefined> {
      if (fake.failWith !== undefined) return Promise.reject(fake.failWith);
      return Promise.resolve(fake.trustBundles.get(name));
    },
    listClusterTrustBundles(labelSelector: string): Promise<TrustBundle[]> {
      if (fake.failWith !== undefined) return Promise.reject(fake.failWith);
      // Equality terms only (what the tests use): `k=v,k2=v2`; empty: every bundle.
      const terms = labelSelector === '' ? [] : labelSelector.split(',').map((t) => t.split('='));
      return Promise.resolve([...fake.trustBundles.values()].filter((b) => terms.every(([k = '', v]) => b.labels[k] === v)));
    },
    readConfigMap(namespace: string, name: string): Promise<V1ConfigMap | undefined> {
      if (fake.failWith !== undefined) return Promise.reject(fake.failWith);
      return Promise.resolve(fake.configMaps.get(`${namespace}/${name}`));
    },
    readSecret(namespace: string, name: string): Promise<V1Secret | undefined> {
      if (fake.failWith !== undefined) return Promise.reject(fake.failWith);
      return Promise.resolve(fake.secrets.get(`${namespace}/${name}`));
    },
    readPersistentVolumeClaim(namespace: string, name: string): Promise<V1PersistentVolumeClaim | undefined> {
      if (fake.failWith !== undefined) return Promise.reject(fake.failWith);
      return Promise.resolve(fake.claims.get(`${namespace}/${name}`));
    },
    readPersistentVolume(name: string): Promise<V1PersistentVolume | undefined> {
      if (fake.failWith !== undefined) return Promise.reject(fake.failWith);
      return Promise.resolve(fake.persistentVolumes.get(name));
    },
    requestServiceAccountToken(req: ServiceAccountTokenRequest): Promise<IssuedToken> {
      if (fake.failWith !== undefined) return Promise.reject(fake.failWith);
      fake.tokenRequests.push(req);
      minted += 1;
      const expiresAt = new Date(clock().getTime() + req.expirationSeconds * 1000);
      return Promise.resolve({ token: `token-${minted}-${req.serviceAccountName}-${req.audience ?? 'default'}`, expiresAt });
    },
  };
  return fake;
}
