// Issue 44, item 3, in a real browser (headless Chromium): with an account token the usage meter and the paywall
// follow the account's change stream (GET /apps/:appId/stream, the token in the Authorization header), so usage
// added elsewhere and a plan change show without a reload and without polling; a cut stream resumes with
// Last-Event-ID and gets what it missed. The host page is on another origin (a product's own site).
import fs from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
// page.evaluate callbacks run in the page and use its globals as (globalThis as any): tests compile without the DOM.
import { type BrowserContext, type Page, type Request } from 'playwright-core';
import { build } from '../../packages/elements/build.js';
import { connectBilling, createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { patch, post } from '../helpers/http.js';
import { openBrowser, picture, type FileBrowser } from '../helpers/browser.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const SHOTS = path.resolve('.test-data/screenshots/elements');

/**
 * The host page: the meter and the paywall of one account, given its account token (from `?token`) only, talking to
 * the service at `?api` (default: the service itself).
 */
const hostPage = (service: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Shop</title><link rel="icon" href="data:,"></head>
<body><main><h1>Your usage</h1>
<offerkit-usage-meter></offerkit-usage-meter>
<offerkit-paywall></offerkit-paywall></main>
<script type="module">
  await import('${service}/elements/assets/offerkit-elements.js');
  const q = new URL(location.href).searchParams;
  const token = q.get('token');
  for (const el of document.querySelectorAll('offerkit-usage-meter, offerkit-paywall')) {
    el.setAttribute('base-url', q.get('api') ?? '${service}');
    el.setAttribute('account-token', token);
  }
  window.heard = [];
  for (const type of ['offerkit-resolved', 'offerkit-account-updated'])
    document.addEventListener(type, (e) => window.heard.push({ type, from: e.target.localName }));
</script></body></html>`;

describe('drop-in components follow the change stream with an account token (issue 44)', function () {
  this.timeout(180_000);
  let browser: FileBrowser;
  let context: BrowserContext;
  let page: Page;
  let problems: string[];
  /** Console errors a test expects (Chromium logs a fetch cut by going offline). */
  let expectedErrors: RegExp[];
  let app: TestApp;
  let base: string;
  let shop: string;
  let host: http.Server;
  /** Every request the page made, in order. */
  let requests: Request[];

  before(async function () {
    this.timeout(15 * 60_000); // a fresh CI machine installs Chromium first
    await build();
    fs.mkdirSync(SHOTS, { recursive: true });
    browser = await openBrowser();
    host = http.createServer((req, res) => {
      if (new URL(req.url ?? '/', 'http://host').pathname !== '/host-shop') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(hostPage(testEnv().baseUrl));
    });
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    shop = `http://127.0.0.1:${(host.address() as AddressInfo).port}/host-shop`;
  });
  after(async () => {
    await browser?.close();
    await new Promise((resolve) => host?.close(resolve));
  });
  beforeEach(async () => {
    problems = [];
    expectedErrors = [];
    requests = [];
    ({ app, base } = await seededApp({ name: 'Live shop' }));
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' && !expectedErrors.some((re) => re.test(m.text())))
        problems.push(`console: ${m.text()} (${m.location().url})`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('request', (r) => requests.push(r));
  });
  afterEach(async () => {
    await context?.close();
    expect(problems, 'no console errors').to.deep.equal([]);
  });

  const tokenFor = async (account: string) =>
    (await post(`${base}/namespaces/${account}/token`, app.api_key, {})).body.token as string;
  /** The page's requests to the service, by path (the API's only; the host page and the bundle left out). */
  const apiCalls = (from = 0) =>
    requests
      .slice(from)
      .filter((r) => new URL(r.url()).pathname.startsWith('/apps/'))
      .map((r) => `${r.method()} ${new URL(r.url()).pathname.replace(base, '')}`);
  /** Opens the host page for an account and waits until the meter shows it and the stream answered. */
  const open = async (account: string, api?: string) => {
    const streamed = page.waitForResponse((r) => r.url().endsWith(`${base}/stream`) && r.status() === 200);
    const q = new URLSearchParams({ token: await tokenFor(account), ...(api ? { api } : {}) });
    await page.goto(`${shop}?${q}`);
    await page.locator('offerkit-usage-meter').getByRole('heading', { name: 'Free plan' }).waitFor();
    const res = await streamed;
    expect(res.request().headers().authorization, 'the token as a header').to.match(/^Bearer act_/);
    expect(res.url(), 'no credential in the address').to.not.include('act_');
  };
  const shot = async (name: string) => {
    for (const [suffix, size] of [
      ['', { width: 390, height: 844 }],
      ['-desktop', { width: 1280, height: 900 }],
    ] as const) {
      await page.setViewportSize(size);
      await picture(page, { path: path.join(SHOTS, `${name}${suffix}-page.png`), fullPage: true });
    }
  };

  it('usage added through the API shows in the meter without a reload and without a poll', async () => {
    await createAccount(app, { id: 'ada', plan: 'free' });
    await open('ada');
    const meter = page.locator('offerkit-usage-meter');
    const calls = meter.getByRole('meter', { name: 'API calls' });
    expect(await calls.getAttribute('aria-valuenow')).to.equal('0');
    // On load: the stream and one read of the account, nothing else.
    expect(apiCalls().sort()).to.deep.equal(['GET /namespaces/ada/plan', 'GET /stream']);

    // Quiet: no change, no request (a poll would show here; the stream's keep-alives are not requests).
    await page.evaluate(() => ((globalThis as any).marker = 'set'));
    const before = requests.length;
    await page.waitForTimeout(2500);
    expect(apiCalls(before), 'no request while nothing changes').to.deep.equal([]);

    // Usage from the product's server (not through the page): the stream's `usage` event has the meter read it.
    expect((await post(`${base}/namespaces/ada/usage/api_calls/amount`, app.api_key, { amount: 7 })).status).to.equal(
      200,
    );
    await meter.getByText('7 of 100 used').waitFor();
    expect(await calls.getAttribute('aria-valuenow')).to.equal('7');
    const after = apiCalls(before);
    expect(after.length, 'read because the stream said so').to.be.at.least(1);
    expect(new Set(after)).to.deep.equal(new Set(['GET /namespaces/ada/plan']));
    expect(await page.evaluate(() => (globalThis as any).marker), 'the same page: no reload').to.equal('set');
    expect(
      requests.filter((r) => r.url().endsWith(`${base}/stream`)),
      'one stream',
    ).to.have.length(1);
    await shot('80-meter-live');
  });

  it('a plan change made elsewhere updates the paywall: it closes (offerkit-resolved) and the meter shows the plan', async () => {
    await connectBilling(app);
    await createAccount(app, { id: 'bo', plan: 'free' });
    expect((await post(`${base}/namespaces/bo/usage/seats/add`, app.api_key)).status).to.equal(200);
    const blocked = await post(`${base}/namespaces/bo/usage/seats/add`, app.api_key);
    expect(blocked.status).to.equal(402);
    await open('bo');
    const paywall = page.locator('offerkit-paywall');
    await page.evaluate(
      (body) => (globalThis as any).document.querySelector('offerkit-paywall').show(body),
      blocked.body,
    );
    await paywall.getByRole('heading', { name: 'You have reached your Seats limit' }).waitFor();
    await shot('81-paywall-live-before');

    const before = requests.length;
    expect((await patch(`${base}/namespaces/bo`, app.api_key, { plan: 'pro' })).status).to.equal(200);
    const meter = page.locator('offerkit-usage-meter');
    await meter.getByRole('heading', { name: 'Pro plan' }).waitFor();
    await eventually(async () => (await paywall.getByRole('heading').count()) === 0, 10_000);
    expect(await meter.getByText('1 of 5 used').isVisible()).to.equal(true);
    const heard = (await page.evaluate(() => (globalThis as any).heard)) as { type: string; from: string }[];
    expect(heard.filter((h) => h.type === 'offerkit-resolved').map((h) => h.from)).to.deep.equal(['offerkit-paywall']);
    expect(new Set(apiCalls(before)), 'the account read again, nothing else').to.deep.equal(
      new Set(['GET /namespaces/bo/plan']),
    );
    await shot('82-paywall-live-resolved');
  });

  it('a cut stream reconnects with Last-Event-ID and gets the change it missed', async () => {
    // The page reaches the service through a TCP relay the test can cut (a network drop between browser and API).
    const target = new URL(testEnv().baseUrl);
    const sockets = new Set<net.Socket>();
    let down = false;
    const relay = net.createServer((inbound) => {
      if (down) return void inbound.destroy();
      const outbound = net.connect(Number(target.port), target.hostname);
      for (const [a, b] of [
        [inbound, outbound],
        [outbound, inbound],
      ]) {
        sockets.add(a);
        a.pipe(b);
        a.on('error', () => b.destroy());
        a.on('close', () => (b.destroy(), sockets.delete(a)));
      }
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    try {
      await createAccount(app, { id: 'cy', plan: 'free' });
      await open('cy', `http://127.0.0.1:${(relay.address() as AddressInfo).port}`);
      const meter = page.locator('offerkit-usage-meter');
      // One change seen live, so the page has an event id to resume after.
      const add = async (amount: number) =>
        expect((await post(`${base}/namespaces/cy/usage/api_calls/amount`, app.api_key, { amount })).status).to.equal(
          200,
        );
      await add(3);
      await meter.getByText('3 of 100 used').waitFor();
      // The network drops; a change happens meanwhile (its event written); the network comes back.
      expectedErrors.push(/net::ERR_|Failed to fetch|network error/);
      down = true;
      for (const s of sockets) s.destroy();
      await add(4);
      await new Promise((r) => setTimeout(r, 1000)); // the usage event is written (250 ms flushes)
      expect(await meter.getByText('3 of 100 used').isVisible(), 'not seen while down').to.equal(true);
      down = false;
      // Only a resumed stream can tell the page: a stream from "now" would not carry the missed event.
      await meter.getByText('7 of 100 used').waitFor({ timeout: 40_000 });
      const streams = requests.filter((r) => r.url().endsWith(`${base}/stream`));
      expect(streams.length).to.be.at.least(2);
      expect(streams.at(-1)!.headers()['last-event-id'], 'resumed after the last event seen').to.match(/^\d+-\d+$/);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => relay.close(resolve));
    }
  });
});
