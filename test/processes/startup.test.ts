import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { expect } from 'chai';
import { build } from '../../packages/elements/build.js';
import { serviceArgs } from '../../scripts/build-service.js';
import { childEnv } from '../../scripts/procs.js';
import { openBrowser } from '../helpers/browser.js';
import { freePort, tempDir, testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';
import { pingDef } from '../../workflows/shared.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface Started {
  child: ChildProcess;
  output: () => string;
  apiUrl: string;
  adminKey: string;
  uiUrl: string;
  /** The example page of the drop-in components, as the banner prints it. */
  elementsUrl?: string;
}

/** Every `npm start` a test began and has not seen exit: stopped after each test, even one that failed. */
const running = new Set<ChildProcess>();

/** Runs `src/main.ts` like `npm start` does (its bundle), and waits for its banner. */
function startMain(env: Record<string, string>, expectFailure = false): Promise<Started & { code?: number | null }> {
  const child = spawn(process.execPath, serviceArgs('main'), {
    cwd: root,
    env: {
      ...childEnv(),
      LOG_LEVEL: 'warn',
      // The CLI the test servers use, so main does not look for (or build) another one.
      ...(process.env.TEMPORAL_CLI ? { TEMPORAL_CLI: process.env.TEMPORAL_CLI } : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no banner within 240 s:\n${out}`));
    }, 240_000); // the first start seeds the demo workspace: over 120 s at a load of 20 on two cores
    const early = (code: number | null) => {
      clearTimeout(timer);
      if (expectFailure) resolve({ child, output: () => out, apiUrl: '', adminKey: '', uiUrl: '', code });
      else reject(new Error(`main exited early with ${code}:\n${out}`));
    };
    child.on('exit', early);
    const check = () => {
      const api = /API\s+(http:\/\/\S+)/.exec(out);
      const key = /Admin key\s+(\S+)/.exec(out);
      const ui = /Temporal UI\s+(\S+)/.exec(out);
      if (api && key && ui && out.includes('Ctrl-C stops everything')) {
        clearTimeout(timer);
        // Once only, and only this function's own listeners: output written later (logs at LOG_LEVEL=info)
        // must not remove the 'exit' listener stop() adds, or stop() would wait for ever.
        child.stdout!.off('data', check);
        child.off('exit', early);
        const elements = /Elements\s+(http:\/\/\S+)/.exec(out)?.[1];
        resolve({ child, output: () => out, apiUrl: api[1], adminKey: key[1], uiUrl: ui[1], elementsUrl: elements });
      }
    };
    child.stdout!.on('data', check);
  });
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
    child.kill('SIGINT');
  });
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1' });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

async function json(url: string, init: RequestInit = {}) {
  const res = await fetch(url, init);
  return { status: res.status, body: (await res.json()) as any };
}

/**
 * Opens the printed example page in headless Chromium: the four components show the example app's data (the
 * paywall after the 402 of its second "Use one"), without console errors. Returns the app the page is on.
 */
async function checkElementsPage(url: string, demo = false): Promise<string> {
  const browser = await openBrowser();
  const problems: string[] = [];
  try {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of 402/.test(m.text())) problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(url);
    const table = page.locator('offerkit-pricing-table');
    await table.getByRole('heading', { name: 'Launch offer' }).waitFor();
    expect(await table.getByRole('button', { name: 'Choose Pro' }).isEnabled()).to.equal(true);
    const meter = page.locator('offerkit-usage-meter');
    await meter.getByRole('meter', { name: 'PDF exports' }).waitFor();
    const flow = page.locator('offerkit-cancel-flow');
    if (demo) {
      // The demo workspace is read-only for every credential: the components read its data, and a write (starting
      // a cancel session with the account token, a usage add with the publishable key) says so in the component.
      await flow.getByRole('alert').filter({ hasText: 'read-only' }).waitFor();
      await page.getByRole('button', { name: 'Use one' }).click();
      await page.locator('#use-log').filter({ hasText: 'read-only' }).waitFor();
      expect(await page.locator('offerkit-paywall').getByRole('heading').count()).to.equal(0);
      expect(
        problems.filter((p) => !/status of 403/.test(p)),
        'no console errors',
      ).to.deep.equal([]);
      return new URL(url).searchParams.get('app')!;
    }
    await flow.getByRole('heading', { name: 'Why are you cancelling?' }).waitFor();
    // The buyer has at most one export left: the second use at the latest is refused and the paywall shows it.
    const paywall = page.locator('offerkit-paywall');
    for (let i = 0; i < 2 && !(await paywall.getByRole('heading').count()); i++) {
      await page.getByRole('button', { name: 'Use one' }).click();
      await page.locator('#use-log').filter({ hasText: /\S/ }).waitFor();
      await page.waitForTimeout(300);
    }
    const upgrade = paywall.getByRole('link', { name: 'Upgrade to Pro' });
    await upgrade.waitFor();
    // The upgrade link leads back to this page's pricing table (served here, so it works offline).
    const href = new URL((await upgrade.getAttribute('href'))!);
    expect(href.origin + href.pathname).to.equal(new URL('/elements', url).toString());
    expect(problems, 'no console errors').to.deep.equal([]);
    return new URL(url).searchParams.get('app')!;
  } finally {
    await browser.close();
  }
}

/**
 * Supervision: kills PostgreSQL and the Temporal dev server that `main` started (SIGKILL) and checks each is restarted,
 * that /health says what is degraded meanwhile (503 for PostgreSQL, never 500) and that the service works after each;
 * then that Ctrl-C stops main and every child it started, the restarted ones included. Needs main at LOG_LEVEL=info
 * (its JSON lines name the children's process ids).
 */
async function superviseChildren(
  main: Started,
  temporalPort: number,
  taskQueue: string,
  external: string | undefined,
): Promise<void> {
  // Every child process main reported starting, to kill if main leaves one behind.
  const childPids = () =>
    main
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => {
        try {
          return JSON.parse(l) as { msg?: string; serverPid?: number; component?: string };
        } catch {
          return {};
        }
      })
      .filter((l) => (l.msg === 'embedded PostgreSQL ready' || l.msg === 'Temporal dev server ready') && l.serverPid)
      .map((l) => ({ component: l.component!, pid: l.serverPid! }));
  const newest = (component: string) =>
    childPids()
      .filter((c) => c.component === component)
      .at(-1)!.pid;
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const until = async (cond: () => Promise<boolean> | boolean, what: string, ms = 120_000) => {
    const end = Date.now() + ms;
    while (!(await cond())) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}:\n${main.output().slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const health = async () => {
    try {
      const res = await fetch(`${main.apiUrl}/health`, { signal: AbortSignal.timeout(5000) });
      return { status: res.status, body: (await res.json()) as { degraded?: string[]; temporal?: string } };
    } catch {
      return { status: 0, body: {} as { degraded?: string[]; temporal?: string } };
    }
  };
  /** Kills `pid`, then polls /health until `name` was reported degraded and is back; returns the answers seen. */
  const killAndWatch = async (name: string, pid: number) => {
    const seen: { status: number; degraded: string[] }[] = [];
    process.kill(pid, 'SIGKILL');
    // Also asked every 100 ms without waiting for the last answer: with the Temporal frontend gone, one /health
    // can take longer than the whole degraded window (the supervisor restarts it within about 2 s).
    const polls: Promise<void>[] = [];
    const ticker = setInterval(
      () => polls.push(health().then((h) => void seen.push({ status: h.status, degraded: h.body.degraded ?? [] }))),
      100,
    );
    await until(async () => {
      const h = await health();
      seen.push({ status: h.status, degraded: h.body.degraded ?? [] });
      return (
        main.output().includes(`restarted ${name}`) && h.status === 200 && !h.body.degraded && h.body.temporal === 'ok'
      );
    }, `${name} restarted`).finally(() => clearInterval(ticker));
    await Promise.all(polls);
    expect(main.output()).to.include(`${name} is down; restarting it with backoff`);
    expect(
      seen.some((s) => s.degraded.includes(name)),
      `/health named ${name} degraded: ${JSON.stringify(seen.slice(0, 5))}`,
    ).to.equal(true);
    expect(newest(name === 'postgres' ? 'postgres' : 'temporal-dev-server')).to.not.equal(pid);
    return seen;
  };
  const createApp = async (name: string) => {
    const res = await fetch(`${main.apiUrl}/apps`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${main.adminKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name }),
      signal: AbortSignal.timeout(10_000),
    });
    return res.status;
  };
  try {
    expect(await createApp('before')).to.equal(201);

    // PostgreSQL: the postmaster killed. Requests answer 503 meanwhile, never 500.
    const pgSeen = await killAndWatch('postgres', newest('postgres'));
    expect(pgSeen.some((s) => s.status === 503 && s.degraded.includes('postgres'))).to.equal(true);
    expect(pgSeen.map((s) => s.status)).to.not.include(500);
    expect(await createApp('after PostgreSQL')).to.equal(201);

    if (!external) {
      // The Temporal dev server killed: restarted on its SQLite file; main's worker serves its queue again.
      await killAndWatch('temporal', newest('temporal-dev-server'));
      const connection = await Connection.connect({ address: `127.0.0.1:${temporalPort}` });
      try {
        const result = await new Client({ connection }).workflow.execute(pingDef.name, {
          taskQueue,
          workflowId: `diagnostics/ping/supervised-${process.pid}`,
          args: [{ message: 'after the restart' }],
          workflowExecutionTimeout: '90s',
        });
        expect((result as { message: string }).message).to.equal('after the restart');
      } finally {
        await connection.close();
      }
    }
    expect(await stop(main.child), main.output().slice(-4000)).to.equal(0);
    for (const c of childPids()) expect(alive(c.pid), `${c.component} ${c.pid} stopped with main`).to.equal(false);
  } finally {
    if (main.child.exitCode === null && main.child.signalCode === null) main.child.kill('SIGKILL');
    for (const c of childPids()) if (alive(c.pid)) process.kill(c.pid, 'SIGKILL');
  }
}

/** The first test: one `npm start` on a clean DATA_DIR, a second on the same folder, SIGKILLs under that second one. */
const WHOLE_LIFE =
  'starts everything on a clean DATA_DIR, keeps data across a restart, restarts PostgreSQL and the Temporal dev ' +
  'server killed with SIGKILL (/health says what is degraded meanwhile), and Ctrl-C stops every child';

describe('npm start (src/main.ts) on embedded defaults', function () {
  this.timeout(500_000); // the first test, with its supervision checks; the others start main once
  const external = process.env.TEMPORAL_ADDRESS; // without a Temporal CLI, the suite runs against an external server
  let dataDir: string;
  let ports: { api: number; pg: number; temporal: number; ui: number };
  let env: Record<string, string>;

  before(async () => {
    await build(); // `npm start` builds the components first (prestart); the example page needs them
    dataDir = tempDir('offerkit-start-');
    ports = { api: await freePort(), pg: await freePort(), temporal: await freePort(), ui: await freePort() };
    env = {
      DATA_DIR: dataDir,
      PORT: String(ports.api),
      HOST: '127.0.0.1',
      EMBEDDED_POSTGRES_PORT: String(ports.pg),
      TEMPORAL_PORT: String(ports.temporal),
      TEMPORAL_UI_PORT: String(ports.ui),
      TEMPORAL_TASK_QUEUE: `offerkit-startup-${process.pid}`,
      PAYPAL_STANDIN_PORT: String(await freePort()),
      MAIL_CATCHER_SMTP_PORT: String(await freePort()),
      MAIL_CATCHER_PORT: String(await freePort()),
      ...(external ? { TEMPORAL_ADDRESS: external } : {}),
    };
  });
  // A failed assertion must not leave its npm start holding ports (the next test would get EADDRINUSE).
  afterEach(async () => {
    await Promise.all([...running].map((child) => stop(child)));
  });
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it(WHOLE_LIFE, async () => {
    // First start: creates the cluster, generates the admin key, prints the URLs. Logged as a person reads them on a
    // terminal (LOG_FORMAT=auto picks this when stdout is one), with /health asked meanwhile.
    let started = false;
    const healthDuringStart: string[] = [];
    const starting = startMain({ ...env, LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' }).finally(() => (started = true));
    while (!started) {
      const answer = await fetch(`http://127.0.0.1:${ports.api}/health`, { signal: AbortSignal.timeout(3000) }).then(
        async (r) => `${r.status} ${JSON.stringify(await r.json())}`,
        () => null,
      );
      if (answer && !started) healthDuringStart.push(answer);
      await new Promise((r) => setTimeout(r, 500)); // the demo seed takes tens of seconds: many answers still
    }
    const first = await starting;
    // Until the start-up work (the demo seed) is done, /health says so (503); it is ok once the banner is out.
    expect(healthDuringStart.length, first.output()).to.be.greaterThan(0);
    expect(healthDuringStart[0]).to.match(/^503 \{"ok":false,"starting":true,/);
    // The banner is the last thing of the start-up: every log line comes before it, short and readable, and the
    // seed's hundreds of requests are not among them (debug level).
    const beforeBanner = first.output().split('\n  Console ')[0];
    const lines = beforeBanner.split('\n').filter((l) => /^\[\d\d:\d\d:\d\d\] /.test(l));
    expect(lines.length, beforeBanner).to.be.within(5, 30);
    expect(
      lines.filter((l) => l.length > 200),
      'short lines',
    ).to.deep.equal([]);
    expect(beforeBanner, 'no JSON records').to.not.match(/^\{"level"/m);
    expect(
      lines.filter((l) => /\] INFO: (GET|POST|PUT|PATCH|DELETE) \//.test(l)),
      'no request lines',
    ).to.deep.equal([]);
    expect(lines.at(-1)).to.match(/INFO: ready url=/);
    expect(first.apiUrl).to.equal(`http://127.0.0.1:${ports.api}`);
    expect(first.adminKey).to.match(/^adm_/);
    expect(first.output()).to.include('generated now');
    expect(fs.readFileSync(path.join(dataDir, 'admin-api-key'), 'utf8').trim()).to.equal(first.adminKey);
    expect(fs.existsSync(path.join(dataDir, 'postgres', 'PG_VERSION'))).to.equal(true);
    if (!external) {
      expect(first.uiUrl).to.equal(`http://127.0.0.1:${ports.ui}`);
      expect((await fetch(first.uiUrl)).status).to.equal(200);
      expect(fs.existsSync(path.join(dataDir, 'temporal', 'temporal.sqlite'))).to.equal(true);
    }
    expect((await json(`${first.apiUrl}/health`)).body).to.deep.equal({ ok: true, database: 'ok', temporal: 'ok' });
    // The embedded PayPal stand-in is up and accepts the printed credentials.
    expect(first.output()).to.match(
      new RegExp(`PayPal\\s+local stand-in at http://127\\.0\\.0\\.1:${env.PAYPAL_STANDIN_PORT}`),
    );
    const token = await fetch(`http://127.0.0.1:${env.PAYPAL_STANDIN_PORT}/v1/oauth2/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from('local-sandbox:local-sandbox-secret').toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    expect(token.status).to.equal(200);
    // The local mail catcher (MailDev) is up where the banner says: invitation links land there.
    const mailUrl = `http://127.0.0.1:${env.MAIL_CATCHER_PORT}`;
    expect(first.output()).to.match(new RegExp(`Mail\\s+${mailUrl.replace(/\./g, '\\.')}\\s`));
    expect((await fetch(`${mailUrl}/api/email`)).status).to.equal(200);
    expect((await fetch(mailUrl, { headers: { Accept: 'text/html' } })).status).to.equal(200);

    // The printed example page of the drop-in components works on the console's demo workspace (on by default).
    expect(first.output()).to.match(new RegExp(`Console\\s+http://127\\.0\\.0\\.1:${ports.api}/console/`));
    expect(first.elementsUrl, first.output()).to.match(new RegExp(`^http://127\\.0\\.0\\.1:${ports.api}/elements\\?`));
    expect(first.output()).to.include('(the components on the demo workspace)');
    // No owner yet: a one-time setup link, and a new one on every start until an owner exists.
    const setupLink = /Owner setup\s+(\S+)/;
    expect(first.output()).to.match(setupLink);
    const exampleApp = await checkElementsPage(first.elementsUrl!, true);
    // The demo's webhooks go to the receiver built into the service: its delivery log fills with the private-URL
    // policy on (the default) and without internet.
    const admin = { headers: { Authorization: `Bearer ${first.adminKey}` } };
    const demo = (await json(`${first.apiUrl}/orgs/demo`, admin)).body.app_ids[0];
    const hooks: { id: string; url: string }[] = (await json(`${first.apiUrl}/apps/${demo}/webhooks`, admin)).body;
    expect(hooks.map((h) => h.url.startsWith(`${first.apiUrl}/console/api/demo-receiver/${demo}/`))).to.deep.equal([
      true,
      true,
    ]);
    await eventually(async () => {
      const d: { status: string }[] = (
        await json(`${first.apiUrl}/apps/${demo}/webhooks/${hooks[0].id}/deliveries?limit=100`, admin)
      ).body.data;
      return d.length > 10 && d.every((x) => x.status === 'succeeded');
    }, 30_000);
    const warehouse: { test: boolean }[] = (
      await json(`${first.apiUrl}/apps/${demo}/webhooks/${hooks[1].id}/deliveries?limit=100`, admin)
    ).body.data;
    expect(warehouse.filter((d) => d.test)).to.have.length(1);
    expect(warehouse.find((d) => d.test)).to.include({ status: 'failed', response_status: 503 });

    const created = await json(`${first.apiUrl}/apps`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${first.adminKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'Survives restarts' }),
    });
    expect(created.status).to.equal(201);

    // A workflow run by main's own worker, to find again after the restart.
    const workflowId = `diagnostics/ping/startup-${process.pid}`;
    const connection = await Connection.connect({ address: external ?? `127.0.0.1:${ports.temporal}` });
    try {
      const client = new Client({ connection });
      const result = await client.workflow.execute(pingDef.name, {
        taskQueue: env.TEMPORAL_TASK_QUEUE,
        workflowId,
        args: [{ message: 'before restart' }],
      });
      expect((result as { message: string }).message).to.equal('before restart');
    } finally {
      await connection.close();
    }

    expect(await stop(first.child)).to.equal(0);
    expect(await portOpen(ports.api)).to.equal(false);
    expect(await portOpen(ports.pg)).to.equal(false);
    if (!external) expect(await portOpen(ports.temporal)).to.equal(false);

    // Second start on the same DATA_DIR: same admin key, same records, same workflow history. Its log lines at info
    // (JSON, as stdout is not a terminal) name the children it starts, for the supervision checks that follow.
    const second = await startMain({ ...env, LOG_LEVEL: 'info' });
    expect(second.adminKey).to.equal(first.adminKey);
    expect(second.output()).to.not.include('generated now');
    const links = [first, second].map((m) => setupLink.exec(m.output())?.[1]);
    expect(links[1], second.output()).to.be.a('string').and.not.equal(links[0]);
    const read = await json(`${second.apiUrl}/apps/${created.body.id}`, {
      headers: { Authorization: `Bearer ${created.body.api_key}` },
    });
    expect(read.status).to.equal(200);
    expect(read.body.name).to.equal('Survives restarts');
    // The same example app again, still read-only after a restart.
    expect(new URL(second.elementsUrl!).searchParams.get('app')).to.equal(exampleApp);
    await checkElementsPage(second.elementsUrl!, true);
    const again = await Connection.connect({ address: external ?? `127.0.0.1:${ports.temporal}` });
    try {
      const desc = await new Client({ connection: again }).workflow.getHandle(workflowId).describe();
      expect(desc.status.name).to.equal('COMPLETED');
    } finally {
      await again.close();
    }
    // The same process then has PostgreSQL and the Temporal dev server killed under it, and is stopped with Ctrl-C
    // (one start of main fewer than a test of its own: the module loading, an initdb and the migrations).
    await superviseChildren(second, ports.temporal, env.TEMPORAL_TASK_QUEUE, external);
  });

  it('refuses to start in production without ADMIN_API_KEY', async () => {
    const res = await startMain({ ...env, NODE_ENV: 'production', DATA_DIR: path.join(dataDir, 'prod') }, true);
    expect(res.code).to.equal(1);
    expect(res.output()).to.include('ADMIN_API_KEY must be set when NODE_ENV=production');
  });

  it('starts nothing embedded when DATABASE_URL and TEMPORAL_ADDRESS are set', async () => {
    const { config } = testEnv();
    const extDir = path.join(dataDir, 'external');
    const started = await startMain({
      ...env,
      DATA_DIR: extDir,
      DATABASE_URL: config.databaseUrl,
      TEMPORAL_ADDRESS: config.temporalAddress,
      ADMIN_API_KEY: 'adm_external_test',
      ELEMENTS_EXAMPLE: 'false', // the example app stays out of the shared test database
      DEMO_WORKSPACE: 'false', // and so does the demo workspace (its seed is the first test's)
      PORT: String(await freePort()),
    });
    try {
      expect(started.adminKey).to.equal('adm_external_test');
      expect(started.output()).to.include('(external servers)');
      expect(started.output()).to.include('Elements     (off: ELEMENTS_EXAMPLE)');
      expect(fs.existsSync(path.join(extDir, 'postgres'))).to.equal(false);
      expect(fs.existsSync(path.join(extDir, 'temporal'))).to.equal(false);
      expect((await json(`${started.apiUrl}/health`)).body.ok).to.equal(true);
    } finally {
      expect(await stop(started.child)).to.equal(0);
    }
  });
});
