/**
 * The node's own registry credentials, from the configured credential provider plugins, looked up
 * for one image repository as the kubelet's plugin providers do (pluginProvider.provide):
 *
 * - a provider is asked only about repositories one of its `matchImages` matches (the keyring's
 *   glob rules, docker-keyring.ts);
 * - its answer is cached under the repository, its registry host or one global key, as the
 *   response's `cacheKeyType` says, for the response's `cacheDuration`, else the provider's
 *   `defaultCacheDuration` (0: not cached); a lookup tries the repository, then the registry,
 *   then the global entry;
 * - concurrent lookups of the same repository share one plugin run;
 * - of the answer's credentials, those whose key matches the repository apply, most specific first;
 * - a plugin that fails is logged and skipped: the pull goes on with what the others gave.
 *
 * Every provider that matches contributes, in config order.
 */
import type { Logger } from 'pino';
import type { Clock } from '../../../util/clock.js';
import { DockerKeyring, keyMatchesImage, type RegistryCredential } from '../docker-keyring.js';
import type { CredentialProviderSpec } from './config.js';
import type { CredentialProviderResponse, RunCredentialPlugin } from './exec-plugin.js';

/** The registry host of a repository (`127.0.0.1:5000` of `127.0.0.1:5000/private/busybox`). */
function registryOf(repository: string): string {
  return repository.split('/', 1)[0] ?? repository;
}

const GLOBAL_KEY = '<global>';

interface CachedAnswer {
  readonly credentials: readonly (readonly [string, RegistryCredential])[];
  readonly expiresAtMs: number;
}

/** One provider: its cache and its plugin runs in flight. */
class Provider {
  private readonly cache = new Map<string, CachedAnswer>();
  private readonly inFlight = new Map<string, Promise<CredentialProviderResponse>>();

  constructor(readonly spec: CredentialProviderSpec, private readonly run: RunCredentialPlugin, private readonly clock: Clock) {}

  matches(repository: string): boolean {
    return this.spec.matchImages.some((pattern) => keyMatchesImage(pattern, repository));
  }

  /** The provider's credentials entries for a repository (unfiltered), from the cache or the plugin. */
  async entries(repository: string, signal: AbortSignal | undefined): Promise<readonly (readonly [string, RegistryCredential])[]> {
    const cached = this.cached(repository);
    if (cached !== undefined) return cached;
    const response = await this.shared(repository, signal);
    this.store(repository, response);
    return response.auth;
  }

  private cached(repository: string): CachedAnswer['credentials'] | undefined {
    const now = this.clock.now();
    for (const key of [repository, registryOf(repository), GLOBAL_KEY]) {
      const entry = this.cache.get(key);
      if (entry === undefined) continue;
      if (entry.expiresAtMs > now) return entry.credentials;
      this.cache.delete(key);
    }
    return undefined;
  }

  private shared(repository: string, signal: AbortSignal | undefined): Promise<CredentialProviderResponse> {
    const running = this.inFlight.get(repository);
    if (running !== undefined) return running;
    const started = this.run(this.spec, repository, signal).finally(() => this.inFlight.delete(repository));
    this.inFlight.set(repository, started);
    return started;
  }

  private store(repository: string, response: CredentialProviderResponse): void {
    const durationMs = response.cacheDurationMs ?? this.spec.defaultCacheDurationMs;
    if (durationMs <= 0) return;
    const key = response.cacheKeyType === 'Image' ? repository : response.cacheKeyType === 'Registry' ? registryOf(repository) : GLOBAL_KEY;
    this.cache.set(key, { credentials: response.auth, expiresAtMs: this.clock.now() + durationMs });
  }
}

/** What {@link NodeCredentials} is built from. */
export interface NodeCredentialsOptions {
  readonly providers: readonly CredentialProviderSpec[];
  readonly run: RunCredentialPlugin;
  readonly clock: Clock;
  readonly logger?: Logger;
}

/** The credential provider plugins of the node. */
export class NodeCredentials {
  private readonly providers: readonly Provider[];

  constructor(private readonly options: NodeCredentialsOptions) {
    this.providers = options.providers.map((spec) => new Provider(spec, options.run, options.clock));
  }

  /**
   * Credentials to try for a repository without tag or digest (`registry.io/team/app`), in
   * provider order; empty when no provider matches or none answered.
   */
  async lookup(repository: string, signal?: AbortSignal): Promise<RegistryCredential[]> {
    const found: RegistryCredential[] = [];
    for (const provider of this.providers.filter((p) => p.matches(repository))) {
      try {
        const keyring = new DockerKeyring();
        keyring.add(await provider.entries(repository, signal));
        found.push(...keyring.lookup(repository));
      } catch (error) {
        if (signal?.aborted === true) throw error;
        this.options.logger?.warn({ provider: provider.spec.name, repository, err: error }, 'credential provider plugin failed; pulling without its credentials');
      }
    }
    return found;
  }
}
