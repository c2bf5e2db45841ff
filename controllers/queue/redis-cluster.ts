/**
 * Redis Cluster as the queues' Redis (the large-fleet topology, issue 36): the settings, the
 * cluster client (ioredis' `Cluster`, with the same drop-at-shutdown semantics as the one-Redis
 * {@link ConnectionFamily}), and the one function that opens a connection of either kind from the
 * flags' topology.
 *
 * What makes the queue work on a cluster is its keyspace (`nodeQueueKeyspace` in `redis.ts`): every
 * key of a node's queue carries the hash tag `{<prefix>:<node>}`, so one node's queue lives in one
 * slot, BullMQ's scripts and nodelet's own multi-key commands stay single-slot, and the nodes'
 * queues spread over the shards. The client needs only a few of the cluster's nodes to start
 * (`--redis-cluster-nodes`); it asks one of them for the slot map (CLUSTER SLOTS, on a short-lived
 * connection of its own) and then connects, lazily, to the primaries that own the slots it uses:
 * an agent to its queue's shard only, its commands without a key included (its home, see
 * {@link ClusterFamily}): 2 connections per agent, as on one Redis. Replies `MOVED`/`ASK` (a resharding, a failover) refresh the map.
 *
 * What stays per Redis process and so is not offered on a cluster: the node users of
 * `nodelet redis-users` (ACL users are not replicated between cluster nodes) and databases other
 * than 0. Reads go to primaries only.
 */
import { Cluster, Command, type ClusterNode, type ClusterOptions, type Redis } from 'ioredis';
import { ConnectionDroppedError, ConnectionFamily, connectRedis, parseRedisAddresses, sentinelSettings, urlCredentials } from './redis.js';
import type { ConnectionRole, RedisAddress, SentinelSettings } from './redis.js';

/** A Redis Cluster, found through some of its nodes (any node will do; more survive one being down). */
export interface ClusterSettings {
  readonly nodes: readonly RedisAddress[];
}

/** Which Redis the URL's credentials are for: one Redis (the URL's host), the master the sentinels name, or a cluster. */
export interface RedisTopology {
  readonly sentinel?: SentinelSettings;
  readonly cluster?: ClusterSettings;
  /** On a cluster: a key whose shard receives the commands without a key (an agent's queue's hash tag). */
  readonly home?: string;
}

/**
 * Cluster settings from the flag's text (`HOST:PORT,...`): undefined when empty.
 * @throws RangeError on a bad address.
 */
export function clusterSettings(nodes: string): ClusterSettings | undefined {
  const addresses = parseRedisAddresses(nodes, 'a cluster node');
  return addresses.length === 0 ? undefined : { nodes: addresses };
}

/**
 * The ioredis `Cluster` options of a connection of `role`: the role's name and retry limit on
 * every node connection, the URL's user and password (and TLS for `rediss://`), reads from
 * primaries. The slot map is refreshed when Redis says it moved (`MOVED`, `ASK`, `CLUSTERDOWN`),
 * not on a timer: a periodic refresh would cost every agent a connection and a CLUSTER SLOTS.
 */
export function clusterOptions(redisUrl: string, role: ConnectionRole): ClusterOptions {
  const url = new URL(redisUrl);
  return {
    scaleReads: 'master',
    redisOptions: {
      connectionName: role.connectionName,
      maxRetriesPerRequest: role.maxRetriesPerRequest,
      ...urlCredentials(url),
      ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
    },
  };
}

/**
 * A cluster client that remembers the clients duplicated from it (BullMQ's Worker duplicates its
 * connection for its blocking reads), so that they can be dropped together and for good; the
 * cluster counterpart of {@link ConnectionFamily}.
 *
 * With a `home` key (an agent's: its queue's hash tag), commands without a key go to the shard
 * that owns the home key's slot instead of a random one. ioredis sends a keyless command (its
 * ready check's CLUSTER INFO, BullMQ's INFO and CLIENT SETNAME, the orphan recovery's CLIENT LIST)
 * to any node of the cluster, and every node it touches keeps a connection open from then on: an
 * agent held about 5 connections across a 3-shard cluster instead of its 2. Pinned, the queue's
 * command connection and the worker's blocking connection each open to the queue's shard alone.
 * The only other connection is ioredis' short-lived slot-map refresh (CLUSTER SLOTS, closed at once).
 */
export class ClusterFamily extends Cluster {
  private readonly duplicates = new Set<ClusterFamily>();
  private dropped = false;
  private readonly startup: readonly ClusterNode[];
  private readonly home: string | undefined;
  private readonly homeSlot: number | undefined;
  /** Pending while a connect attempt waits for the client's next `ready` (see {@link connect}). */
  private readyWaiter: Promise<void> | undefined;

  constructor(startupNodes: readonly ClusterNode[], options: ClusterOptions, home?: string) {
    super([...startupNodes], options);
    removeOnlyEndedNodes(this);
    this.startup = startupNodes;
    this.home = home;
    this.homeSlot = home === undefined ? undefined : new Command('exists', [home]).getSlot();
    if (this.homeSlot !== undefined) {
      retryAtHome(this, this.homeSlot);
      closeStrayConnections(this, this.homeSlot);
    }
  }

  /** A copy of this client (ioredis' own `duplicate`: same startup nodes unless given, same home), dropped with it. */
  override duplicate(overrideStartupNodes: ClusterNode[] = [], overrideOptions: ClusterOptions = {}): ClusterFamily {
    const nodes = overrideStartupNodes.length > 0 ? overrideStartupNodes : this.startup;
    const copy = new ClusterFamily(nodes, { ...this.options, ...overrideOptions }, this.home);
    if (this.dropped) copy.dropAll();
    this.duplicates.add(copy);
    return copy;
  }

  /**
   * ioredis' routing, except that a command without a key, sent on its own (not in a pipeline,
   * which pins its node itself), goes to the home slot's primary: ioredis' own way of pinning a
   * command to a slot (what its pipelines pass). Such a command cannot be redirected (MOVED and
   * ASK answer keyed commands only), so nothing of ioredis' redirection handling is lost.
   */
  override sendCommand(command: Command, stream?: Parameters<Cluster['sendCommand']>[1], node?: unknown): unknown {
    const keyless = (command.getSlot() as number | null) === null;
    if (node === undefined && keyless && this.homeSlot !== undefined) return super.sendCommand(command, stream, { slot: this.homeSlot });
    return super.sendCommand(command, stream, node);
  }

  /**
   * ioredis' disconnect, except that a client between two reconnect attempts ends too: ioredis
   * only cancels the next attempt and, its node pool being empty already, never reaches `end`
   * (BullMQ's close waits for it). One in `wait` ends properly, failing its queued commands.
   */
  override disconnect(reconnect = false): void {
    if (!reconnect && this.status === 'reconnecting') this.status = 'wait';
    super.disconnect(reconnect);
    if (!reconnect && this.status === 'disconnecting' && this.nodes().length === 0) endWithoutNodes(this);
  }

  /**
   * ioredis' connect, except that the promise settles once the client is ready even when ioredis
   * had to retry on its own. When the ready check fails (its CLUSTER INFO refused: the home shard
   * is down, or just restarted and not yet `cluster_state:ok`), ioredis reconnects by itself but
   * leaves this attempt's promise pending for good. BullMQ's recovery of its blocking connection
   * awaits that promise, so a worker whose shard restarted waited for jobs forever (issue 36's
   * fleet outage test: about two thirds of a restarted shard's 330 agents, 1,000 in all). It
   * resolves on `ready` and rejects when the attempt fails or the client ends.
   */
  override connect(): Promise<void> {
    if (this.dropped) return Promise.reject(new ConnectionDroppedError());
    const attempt = super.connect();
    const ready = this.nextReady();
    return new Promise<void>((resolve, reject) => {
      attempt.then(resolve, reject);
      ready.then(resolve, reject);
    });
  }

  /**
   * Settles at this client's next `ready` (resolved) or `end` (rejected); one listener pair however
   * many attempts wait (ioredis' own retries call {@link connect} every couple of seconds while the
   * shard is down).
   */
  private nextReady(): Promise<void> {
    this.readyWaiter ??= new Promise<void>((resolve, reject) => {
      const settle = (outcome: () => void): void => {
        this.off('ready', onReady);
        this.off('end', onEnd);
        this.readyWaiter = undefined;
        outcome();
      };
      // ioredis emits a status one tick after it set it: an `end` of the disconnect that came
      // just before a connect (BullMQ reconnects so) arrives when the client is connecting again.
      const onReady = (): void => { if (this.status === 'ready') settle(resolve); };
      const onEnd = (): void => { if (this.status === 'end') settle(() => { reject(new ClusterClientEndedError()); }); };
      this.on('ready', onReady);
      this.on('end', onEnd);
    });
    return this.readyWaiter;
  }

  /** Whether this client and every duplicate is connected or closed for good. */
  everyConnectionSettled(): boolean {
    const settled = (c: Cluster): boolean => c.status === 'ready' || c.status === 'end';
    return settled(this) && [...this.duplicates].every(settled);
  }

  /** Drops this client and every duplicate at once: their waiting commands fail, none connects again. */
  dropAll(): void {
    this.dropped = true;
    this.disconnect();
    for (const copy of this.duplicates) copy.dropAll();
  }
}

/**
 * Closes, at each refresh of the slot map that names the home slot's owner, the client's
 * connections to every other node. While the home shard is down, ioredis sends the agent's
 * commands to other primaries (retries on "a random node", and the slot map then lacks the home
 * slot), which answer MOVED; each primary so tried kept a connection open for good: after one
 * shard's outage, each agent of that shard held connections to the other primaries too (the fleet
 * outage test counts them). The refresh that follows the shard's return (a MOVED triggers one) closes them;
 * ioredis reconnects to a node on demand, so nothing is lost if one is needed again.
 */
function closeStrayConnections(client: ClusterFamily, homeSlot: number): void {
  client.on('refresh', () => {
    const owner = client.slots[homeSlot]?.[0];
    if (owner === undefined) return;
    for (const node of client.nodes('all')) {
      const connected = node.status !== 'wait' && node.status !== 'end';
      if (connected && `${node.options.host}:${node.options.port}` !== owner) node.disconnect();
    }
  });
}

/** The part of ioredis' `Cluster` (5.x, `built/cluster/ConnectionPool.js`) this file corrects. */
interface ClusterPoolInternals {
  readonly connectionPool: {
    readonly nodes: { readonly all: Readonly<Record<string, Redis>> };
    on(event: '+node', listener: (redis: Redis) => void): unknown;
    getSampleInstance(role: string): unknown;
    getInstanceByKey(key: string): unknown;
    removeNode(key: string): void;
  };
}

const poolOf = (client: Cluster): ClusterPoolInternals['connectionPool'] => (client as unknown as ClusterPoolInternals).connectionPool;

/**
 * Lets a node's `end` remove that node from the pool only, not a newer node of the same address.
 * ioredis' pool removes "the node at host:port" when a node ends. A client that reconnects
 * (BullMQ reconnects its blocking cluster client after a stuck read) disconnects its nodes and
 * creates new ones at once; the old node's `end` comes later and dropped the new node from the pool
 * while its socket stayed open: after a 60 s freeze of one shard at 1,000 agents, each agent of
 * that shard held a third connection, idle for good (the fleet outage test counts them).
 */
function removeOnlyEndedNodes(client: Cluster): void {
  const pool = poolOf(client);
  let ending: Redis | undefined;
  pool.on('+node', (redis) => {
    // Around the pool's own `end` listener (registered before `+node` is emitted).
    redis.prependOnceListener('end', () => { ending = redis; });
    redis.once('end', () => { ending = undefined; });
  });
  const remove = pool.removeNode.bind(pool);
  pool.removeNode = (key: string): void => {
    const current = pool.nodes.all[key];
    if (ending !== undefined && current !== undefined && current !== ending) return;
    remove(key);
  };
}

/**
 * Sends the retries ioredis makes on "a random node" (after a closed connection, CLUSTERDOWN or
 * TRYAGAIN) to the home slot's owner when the slot map names one: any other primary would only
 * answer MOVED, and keep a connection (see {@link closeStrayConnections}). A failover is still
 * found: ioredis refreshes the map on such errors, and the refreshed map names the new owner.
 */
function retryAtHome(client: ClusterFamily, homeSlot: number): void {
  const pool = poolOf(client);
  const sample = pool.getSampleInstance.bind(pool);
  pool.getSampleInstance = (role: string): unknown => {
    const owner = client.slots[homeSlot]?.[0];
    return (owner === undefined ? undefined : pool.getInstanceByKey(owner)) ?? sample(role);
  };
}

/**
 * A cluster client ended while it was connecting (dropped, or ioredis gave up). Its message is
 * ioredis' own words for a closed connection, which BullMQ takes for a connection error.
 */
export class ClusterClientEndedError extends Error {
  constructor() {
    super('Connection is closed.');
    this.name = 'ClusterClientEndedError';
  }
}

/** The part of ioredis' `Cluster` (5.x, `built/cluster/index.js`) that ends a client whose node pool drained. */
interface ClusterCloseInternals {
  handleCloseEvent(reason?: Error): void;
}

/**
 * Ends a cluster client that is disconnecting with no node in its pool, as ioredis does when the
 * pool drains: status `end`, and the commands of its offline queue rejected. ioredis waits for the
 * pool's `drain`, which an already empty pool never emits: a client disconnected while it was
 * finding the cluster again (just after its shard came back) stayed `disconnecting` for good, with
 * BullMQ's blocking read parked in its offline queue. BullMQ's graceful close of the worker then
 * waited on that read, its lock-renewal timer and its blocking-read watchdog kept running, and the
 * agent's process did not exit after "nodelet agent stopped".
 */
function endWithoutNodes(client: ClusterFamily): void {
  (client as unknown as ClusterCloseInternals).handleCloseEvent();
}

/**
 * A connection of `role` to the cluster, with the URL's credentials (its host and database are not
 * used); `home`, a key whose shard receives the commands without a key (see {@link ClusterFamily}).
 */
export function connectRedisCluster(redisUrl: string, role: ConnectionRole, cluster: ClusterSettings, home?: string): ClusterFamily {
  return new ClusterFamily(
    cluster.nodes.map((n) => ({ host: n.host, port: n.port })),
    clusterOptions(redisUrl, role),
    home,
  );
}

/** A connection that can be dropped with its duplicates, to one Redis or to a cluster. */
export type DroppableConnection = ConnectionFamily | ClusterFamily;

/** A connection of `role` to the Redis the topology names; see `connectRedis` and {@link connectRedisCluster}. */
export function connectTopology(redisUrl: string, role: ConnectionRole, topology: RedisTopology): DroppableConnection {
  if (topology.cluster !== undefined && topology.sentinel !== undefined) throw new RangeError('Redis is either a cluster or found through sentinels, not both');
  if (topology.cluster !== undefined) return connectRedisCluster(redisUrl, role, topology.cluster, topology.home);
  return connectRedis(redisUrl, role, topology.sentinel);
}

/** The Redis flags' text, as the agent and the dashboard take them. */
export interface RedisTopologyFlags {
  /** `--redis-sentinels`. */
  readonly sentinels: string;
  /** `--redis-sentinel-master`. */
  readonly masterName: string;
  /** `--redis-cluster-nodes`. */
  readonly clusterNodes: string;
}

/** The topology's parts as settings carry them: each undefined unless its flag is given. */
export interface ParsedTopology {
  readonly sentinel: SentinelSettings | undefined;
  readonly cluster: ClusterSettings | undefined;
}

/**
 * The topology the flags name: sentinels, a cluster, or neither (the URL's Redis).
 * @throws RangeError naming the flag: a bad address, a missing master name, or both kinds at once.
 */
export function parseRedisTopology(flags: RedisTopologyFlags): ParsedTopology {
  let sentinel: SentinelSettings | undefined;
  let cluster: ClusterSettings | undefined;
  try {
    sentinel = sentinelSettings(flags.sentinels, flags.masterName);
  } catch (error) {
    if (error instanceof RangeError) throw new RangeError(`--redis-sentinels: ${error.message}`);
    throw error;
  }
  try {
    cluster = clusterSettings(flags.clusterNodes);
  } catch (error) {
    if (error instanceof RangeError) throw new RangeError(`--redis-cluster-nodes: ${error.message}`);
    throw error;
  }
  if (sentinel !== undefined && cluster !== undefined) throw new RangeError('--redis-sentinels and --redis-cluster-nodes exclude each other: Redis is either found through sentinels or a cluster');
  return { sentinel, cluster };
}
