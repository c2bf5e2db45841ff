/**
 * The dashboard server: bull-board over every node's reconcile queue (found in Redis and kept
 * current by a {@link QueueDirectory}), the pod timeline pages, authentication in front of all of
 * it, and writes refused unless actions are allowed. Only `/healthz` answers without credentials.
 *
 * Routes: `/` index · `/pods?namespace=&name=` or `?uid=` search · `/pods/:uid` timeline ·
 * `/queues/…` bull-board · `/healthz`.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createBullBoard } from '@bull-board/api';
import { ExpressAdapter } from '@bull-board/express';
import express from 'express';
import type { NextFunction, Request, Response, Router } from 'express';
import type { Logger } from 'pino';
import { systemClock } from '../util/clock.js';
import type { Clock } from '../util/clock.js';
import { logConnectionErrors } from '../controllers/queue/redis.js';
import { connectTopology } from '../controllers/queue/redis-cluster.js';
import { authenticate, guardWrites } from './auth.js';
import { JobHistory } from './job-history.js';
import { BULL_BOARD_BASE, timelinePath } from './paths.js';
import { ReconcileQueueAdapter } from './queue-adapter.js';
import { QueueDirectory } from './queue-directory.js';
import { ClientListing } from './queue-workers.js';
import { pageRoutes } from './routes.js';
import type { DashboardSettings } from './settings.js';

/** What {@link startDashboard} needs. */
export interface DashboardOptions {
  readonly settings: DashboardSettings;
  readonly logger: Logger;
  /** Default the system clock. */
  readonly clock?: Clock;
}

/** A listening dashboard. */
export interface RunningDashboard {
  /** `http://host:port` it listens on (the real port when 0 was asked). */
  readonly url: string;
  readonly port: number;
  /** Scans Redis for node queues now; resolves true when the scan worked. */
  refreshQueues(): Promise<boolean>;
  /** Stops listening, closes the queues and the Redis connection. */
  close(): Promise<void>;
}

/** Starts the dashboard; resolves once it listens (Redis may still be connecting). */
export async function startDashboard(options: DashboardOptions): Promise<RunningDashboard> {
  const { settings } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger.child({ component: 'dashboard' });
  const topology = { ...(settings.redisSentinel === undefined ? {} : { sentinel: settings.redisSentinel }), ...(settings.redisCluster === undefined ? {} : { cluster: settings.redisCluster }) };
  const redis = connectTopology(settings.redisUrl, { maxRetriesPerRequest: 3, connectionName: 'nodelet-dashboard' }, topology);
  logConnectionErrors(redis, logger, 'dashboard');
  const board = createBoard(settings.allowActions);
  const listing = new ClientListing(redis, clock);
  const directory = new QueueDirectory({
    redis,
    layout: { prefix: settings.prefix, hashTagged: settings.redisCluster !== undefined },
    intervalMs: settings.refreshIntervalMs,
    clock,
    logger,
    listener: {
      added: (entry) => {
        board.addQueue(new ReconcileQueueAdapter(entry.queue, { node: entry.node, allowActions: settings.allowActions, timelinePath, listing }));
      },
      removed: (entry) => {
        board.removeQueue(entry.name);
      },
    },
  });
  const app = buildApp({
    settings,
    logger,
    bullBoard: board.router,
    pages: pageRoutes({ history: new JobHistory(directory, redis, listing), clock, readOnly: !settings.allowActions, refreshQueues: () => directory.refresh() }),
  });
  directory.start();
  let server: Server;
  try {
    server = await listen(app, settings);
  } catch (error) {
    await directory.stop();
    redis.disconnect();
    throw error;
  }
  const port = (server.address() as AddressInfo).port;
  const host = settings.listen.host.includes(':') ? `[${settings.listen.host}]` : settings.listen.host;
  logger.info({ url: `http://${host}:${port}`, auth: settings.auth.kind, readOnly: !settings.allowActions }, 'dashboard listening');
  return {
    url: `http://${host}:${port}`,
    port,
    refreshQueues: () => directory.refresh(),
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      });
      await directory.stop();
      await redis.quit().catch(() => {
        redis.disconnect();
      });
    },
  };
}

interface Board {
  readonly router: Router;
  addQueue(adapter: ReconcileQueueAdapter): void;
  removeQueue(name: string): void;
}

function createBoard(allowActions: boolean): Board {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(BULL_BOARD_BASE);
  const board = createBullBoard({
    queues: [],
    serverAdapter,
    options: {
      uiConfig: {
        boardTitle: allowActions ? 'nodelet' : 'nodelet (read-only)',
        miscLinks: [{ text: 'Pods & nodes', url: '/' }],
        jobDetails: { defaultTab: 'Logs' },
      },
    },
  });
  return {
    router: serverAdapter.getRouter() as Router,
    addQueue: (adapter) => {
      board.addQueue(adapter);
    },
    removeQueue: (name) => {
      board.removeQueue(name);
    },
  };
}

function buildApp(parts: { settings: DashboardSettings; logger: Logger; bullBoard: Router; pages: Router }): express.Express {
  const { settings, logger } = parts;
  const app = express();
  app.disable('x-powered-by');
  app.use((req, res, next) => {
    res.set({ 'X-Content-Type-Options': 'nosniff', 'X-Frame-Options': 'DENY', 'Referrer-Policy': 'same-origin' });
    res.on('finish', () => {
      logger.debug({ method: req.method, path: req.path, status: res.statusCode }, 'request');
    });
    next();
  });
  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok\n');
  });
  app.use(authenticate(settings.auth));
  app.use(guardWrites(settings.allowActions));
  app.use(parts.pages);
  app.use(BULL_BOARD_BASE, bullBoardPolicy, parts.bullBoard);
  app.use((err: unknown, req: Request, res: Response, next: NextFunction) => {
    logger.warn({ err, path: req.path }, 'request failed');
    if (res.headersSent) {
      next(err);
      return;
    }
    res.status(503).type('text/plain').send('the dashboard cannot read the queues right now (is Redis reachable?)\n');
  });
  return app;
}

/**
 * bull-board's page asks for web fonts from a public CDN; the browser is told to load nothing
 * from anywhere but the dashboard (the system fonts serve), so looking at a queue never tells a
 * third party about it.
 */
function bullBoardPolicy(_req: Request, res: Response, next: NextFunction): void {
  res.set(
    'Content-Security-Policy',
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'",
  );
  next();
}

function listen(app: express.Express, settings: DashboardSettings): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(settings.listen.port, settings.listen.host);
    server.once('listening', () => {
      server.off('error', reject);
      resolve(server);
    });
    server.once('error', reject);
  });
}
