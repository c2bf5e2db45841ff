/**
 * End to end: `nodelet dashboard` (the real command) against the test cluster's Redis, where the
 * agent's queue holds real reconcile jobs of pods created with kubectl. Asserts what a user meets:
 * a 401 challenge without the token, the node's queue and the pod's jobs in bull-board (its API,
 * then the page in headless Chromium), the stuck pod's reconcile timeline, read-only refusals.
 * Takes two screenshots (never compared: they document, they do not test) into the untracked
 * `.test-results/dashboard/`. The tracked `docs/dashboard.png` and `docs/dashboard-pod-timeline.png`
 * are rewritten only on request: `NODELET_UPDATE_DOCS_IMAGES=1 bash test/run-suite.sh e2e
 * test/e2e/dashboard.test.ts`.
 *
 * The browser is Debian's `chromium` driven by playwright-core, never a downloaded build; it may
 * reach nothing but the dashboard on loopback (host resolver rules, a route guard, and the
 * dashboard's own content security policy), and the test asserts it did not try.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcessByStdio } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { chromium } from 'playwright-core';
import type { BrowserContext } from 'playwright-core';
import { NODE_NAME, apply, busyboxPod, createNamespace, deleteNamespace, eventually, getPod, requireCluster, waitForPhase } from './helpers.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const CHROMIUM = '/usr/bin/chromium';
const QUEUE = `nodelet-reconcile-${NODE_NAME}`;
/** Where screenshots go: the gitignored results folder, or the docs when asked to update them. */
const SCREENSHOT_DIR = process.env.NODELET_UPDATE_DOCS_IMAGES === '1' ? join(REPO, 'docs') : join(REPO, '.test-results/dashboard');

interface BoardJob {
  readonly id: string;
  readonly name: string;
  readonly data: { readonly uid?: string; readonly namespace?: string; readonly name?: string };
  readonly externalUrl?: { readonly href: string; readonly displayText?: string };
}
interface BoardQueues {
  readonly queues: readonly { readonly name: string; readonly readOnlyMode: boolean; readonly jobs: readonly BoardJob[] }[];
}

/** Starts `nodelet dashboard` on a free loopback port; resolves with its URL once it listens. */
async function startDashboardCommand(token: string): Promise<{ child: ChildProcessByStdio<null, Readable, Readable>; url: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'cmd/nodelet.ts', 'dashboard', '--listen', '127.0.0.1:0', '--refresh-interval', '1'],
    { cwd: REPO, env: { ...process.env, NODELET_DASHBOARD_TOKEN: token }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const stderr: string[] = [];
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`the dashboard did not start within 60 s: ${stderr.join('')}`));
    }, 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the dashboard exited with ${code}: ${stderr.join('')}`));
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      const entry = parseJson(line) as { msg?: string; url?: string } | undefined;
      if (entry?.msg === 'dashboard listening' && entry.url !== undefined) {
        clearTimeout(timer);
        resolve(entry.url);
      }
    });
  });
  return { child, url };
}

function parseJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

/** Launches Debian's Chromium with a fresh profile; every request to anything but loopback is refused and recorded. */
async function launchBrowser(profileDir: string, token: string): Promise<{ context: BrowserContext; offLoopback: string[] }> {
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    ],
    httpCredentials: { username: 'e2e', password: token },
    viewport: { width: 1440, height: 900 },
  });
  const offLoopback: string[] = [];
  await context.route(
    (url) => url.hostname !== '127.0.0.1',
    async (route) => {
      offLoopback.push(route.request().url());
      await route.abort('blockedbyclient');
    },
  );
  return { context, offLoopback };
}

describe('nodelet dashboard on the test cluster', () => {
  const token = randomBytes(24).toString('hex');
  let namespace = '';
  let dashboard: Awaited<ReturnType<typeof startDashboardCommand>> | undefined;
  let webUid = '';
  let stuckUid = '';
  let webJobId = '';
  let profileDir = '';

  const get = (path: string, init: RequestInit = {}): Promise<Response> =>
    fetch(`${dashboard!.url}${path}`, { redirect: 'manual', ...init, headers: { authorization: `Bearer ${token}`, ...init.headers } });

  before(async () => {
    requireCluster();
    assert.ok(process.env.REDIS_URL, 'REDIS_URL is set by .cluster/env');
    namespace = await createNamespace('e2e-dash');
    await apply(busyboxPod({ name: 'web', namespace, nodeName: NODE_NAME, script: 'sleep 3600' }));
    // An image that is absent with pull policy Never: every reconcile fails and is retried with backoff.
    await apply(busyboxPod({ name: 'stuck', namespace, nodeName: NODE_NAME, script: 'true', image: 'example.com/absent:1', pullPolicy: 'Never' }));
    webUid = (await waitForPhase(namespace, 'web', 'Running')).metadata?.uid ?? '';
    stuckUid = (await eventually('stuck pod', () => getPod(namespace, 'stuck'))).metadata?.uid ?? '';
    assert.ok(webUid !== '' && stuckUid !== '');
    dashboard = await startDashboardCommand(token);
    profileDir = await mkdtemp(join(tmpdir(), 'nodelet-dashboard-chromium-'));
  });

  after(async () => {
    if (dashboard?.child.exitCode === null) dashboard.child.kill('SIGKILL');
    if (namespace !== '') await deleteNamespace(namespace);
    if (profileDir !== '') await rm(profileDir, { recursive: true, force: true });
  });

  it('answers 401 with a basic-auth challenge without credentials or with a wrong token, and /healthz to anyone', async () => {
    const anonymous = await fetch(`${dashboard!.url}/`);
    assert.equal(anonymous.status, 401);
    assert.match(anonymous.headers.get('www-authenticate') ?? '', /^Basic realm="nodelet"/);
    const api = await fetch(`${dashboard!.url}/queues/api/queues`);
    assert.equal(api.status, 401);
    const wrong = await fetch(`${dashboard!.url}/`, { headers: { authorization: 'Bearer not-the-token' } });
    assert.equal(wrong.status, 401);
    assert.equal((await fetch(`${dashboard!.url}/healthz`)).status, 200);
  });

  it('lists the node’s queue and a job naming the pod in the bull-board API, labelled and linked to its timeline', async () => {
    const job = await eventually('a job of the web pod in the bull-board API', async () => {
      const res = await get(`/queues/api/queues?activeQueue=${QUEUE}&status=latest&page=1&jobsPerPage=100`);
      assert.equal(res.status, 200);
      const body = (await res.json()) as BoardQueues;
      const queue = body.queues.find((q) => q.name === QUEUE);
      assert.ok(queue, `queue ${QUEUE} listed among ${body.queues.map((q) => q.name).join(', ')}`);
      assert.equal(queue.readOnlyMode, true);
      return queue.jobs.find((j) => j.data.uid === webUid);
    });
    assert.equal(job.data.namespace, namespace);
    assert.equal(job.data.name, 'web');
    assert.ok(job.id.startsWith(`${webUid}.`), job.id);
    webJobId = job.id;
    assert.ok(job.name.startsWith(`${namespace}/web · `), job.name);
    assert.deepEqual(job.externalUrl, { displayText: `Reconcile timeline of ${namespace}/web`, href: `/pods/${webUid}` });
  });

  it('accepts the token as the password of basic authentication, with any user name', async () => {
    const res = await fetch(`${dashboard!.url}/`, { headers: { authorization: `Basic ${Buffer.from(`anyone:${token}`).toString('base64')}` } });
    assert.equal(res.status, 200);
    const page = await res.text();
    assert.match(page, new RegExp(`<tr data-node="${NODE_NAME}">`));
  });

  it('shows why the stuck pod is stuck: failed runs with attempts, the error, and the next retry', async () => {
    const page = await eventually('two failed runs on the stuck pod’s timeline', async () => {
      const res = await get(`/pods/${stuckUid}`);
      const text = await res.text();
      // Between retries the newest job is delayed (retrying); while a retry runs it is active.
      const retrying = text.includes('badge b-retrying">retrying');
      return res.status === 200 && retrying && (text.match(/data-outcome="error"/g) ?? []).length >= 2 ? text : undefined;
    });
    assert.match(page, new RegExp(`<h1>Pod ${namespace}/stuck</h1>`));
    assert.match(page, /consecutive failed reconciles; next attempt/);
    assert.match(page, /error \(attempt 2\)/);
    assert.match(page, /example\.com\/absent:1/);
  });

  it('lists the running pod’s successful runs on its timeline', async () => {
    const res = await get(`/pods/${webUid}`);
    assert.equal(res.status, 200);
    const page = await res.text();
    assert.match(page, /data-outcome="success"/);
    assert.match(page, new RegExp(`href="/queues/queue/${QUEUE}/${webUid}\\.`));
  });

  it('finds a pod by namespace and name', async () => {
    const res = await get(`/pods?namespace=${namespace}&name=web`);
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), `/pods/${webUid}`);
    assert.equal((await get(`/pods?namespace=${namespace}&name=no-such-pod`)).status, 404);
  });

  it('is read-only: retries and cleans are refused even with the token', async () => {
    const retry = await get(`/queues/api/queues/${QUEUE}/retry/failed`, { method: 'PUT' });
    assert.equal(retry.status, 403);
    const clean = await get(`/queues/api/queues/${QUEUE}/clean/completed`, { method: 'PUT' });
    assert.equal(clean.status, 403);
  });

  it('shows the node’s queue and the pod’s jobs in Chromium, and the pod’s timeline, contacting no other host', async () => {
    const { context, offLoopback } = await launchBrowser(profileDir, token);
    try {
      const page = await context.newPage();
      await page.goto(`${dashboard!.url}/`);
      await page.getByRole('link', { name: NODE_NAME, exact: true }).first().waitFor();
      // The web pod's job page: its label and the link to its timeline.
      assert.notEqual(webJobId, '', 'the API test found the web pod’s job');
      await page.goto(`${dashboard!.url}/queues/queue/${QUEUE}/${encodeURIComponent(webJobId)}`);
      await page.getByText(`${namespace}/web · `).first().waitFor({ timeout: 30_000 });
      await page.getByText(`Reconcile timeline of ${namespace}/web`).first().waitFor();
      // The queue's newest jobs of every state: the stuck pod's job is always among them (delayed
      // between retries, active while one runs), however busy the node is with other tests' pods.
      await page.goto(`${dashboard!.url}/queues/queue/${QUEUE}?status=latest`);
      await page.getByText(QUEUE).first().waitFor({ timeout: 30_000 });
      await page.getByText(`${namespace}/stuck · `).first().waitFor({ timeout: 30_000 });
      await mkdir(SCREENSHOT_DIR, { recursive: true });
      await page.screenshot({ path: join(SCREENSHOT_DIR, 'dashboard.png') });

      await page.goto(`${dashboard!.url}/pods/${stuckUid}`);
      await page.getByRole('heading', { name: `Pod ${namespace}/stuck` }).waitFor();
      assert.ok((await page.locator('table.timeline tbody tr').count()) >= 2);
      await page.getByText(/error \(attempt \d+\)/).first().waitFor();
      await page.screenshot({ path: join(SCREENSHOT_DIR, 'dashboard-pod-timeline.png'), fullPage: true });
    } finally {
      await context.close();
    }
    assert.deepEqual(offLoopback, [], 'the browser tried to reach hosts other than the dashboard');
  });

  it('stops cleanly on SIGTERM', async () => {
    const child = dashboard!.child;
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  });
});
