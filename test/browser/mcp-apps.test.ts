/// <reference lib="dom" />
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import * as esbuild from 'esbuild';
import { type Page } from 'playwright-core';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { build } from '../../packages/elements/build.js';
import { connectProvider, createAccount, createTestApp, seedCatalog, type TestApp } from '../helpers/factories.js';
import { post } from '../helpers/http.js';
import { ALL_TOOLSETS, connectMcp } from '../helpers/mcp.js';
import { openBrowser, picture, type FileBrowser } from '../helpers/browser.js';

const here = path.dirname(fileURLToPath(import.meta.url));
/** The screenshots of each app in its host, at 1280 and 390 px wide. */
const SHOTS = path.resolve('.test-data/mcp-apps');

async function screenshots(page: Page, name: string) {
  fs.mkdirSync(SHOTS, { recursive: true });
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 700 });
    // The view reports its new height; the host resizes the frame.
    await page.waitForTimeout(300);
    await picture(page, { path: path.join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
}

/**
 * A host as the MCP Apps extension describes one, in a real browser: the package's own host side (AppBridge and
 * PostMessageTransport from @modelcontextprotocol/ext-apps/app-bridge), bundled here for the page. It puts the UI
 * resource's HTML in a sandboxed iframe, waits for the view to initialize, and passes the tool's input and result.
 */
const HOST_SCRIPT = `
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';
window.mountApp = async (html, args, result, border) => {
  const iframe = document.createElement('iframe');
  iframe.setAttribute('sandbox', 'allow-scripts');
  // As wide as the host's column, as tall as the view says it is (ui/notifications/size-changed).
  // A border only when the page asks for one (_meta.ui.prefersBorder).
  iframe.style.cssText = 'width:100%;height:400px;display:block;border:' + (border ? '1px solid #d9dce3' : '0');
  document.body.append(iframe);
  const bridge = new AppBridge(
    null,
    { name: 'test-host', version: '1.0.0' },
    { openLinks: {}, serverTools: {}, logging: {} },
  );
  // The view's calls to the server go through the host (here: the test's MCP client), links it asks to open and
  // messages it sends are recorded.
  window.opened = [];
  window.messages = [];
  window.sizes = [];
  bridge.onsizechange = (size) => {
    window.sizes.push(size);
    if (size.height) iframe.style.height = size.height + 2 + 'px';
  };
  bridge.oncalltool = (params) => window.hostCallTool(params);
  bridge.onopenlink = async ({ url }) => (window.opened.push(url), {});
  bridge.onmessage = async (params) => (window.messages.push(params), {});
  const initialized = new Promise((resolve) => (bridge.oninitialized = resolve));
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = html;
  await initialized;
  await bridge.sendToolInput({ arguments: args });
  await bridge.sendToolResult(result);
  return true;
};
`;

describe('MCP App UI resources in a host (browser)', function () {
  this.timeout(120_000);
  let browser: FileBrowser;
  let host: string;
  let app: TestApp;
  let client: Client;

  before(async () => {
    await build();
    const out = await esbuild.build({
      stdin: { contents: HOST_SCRIPT, resolveDir: here, loader: 'js' },
      bundle: true,
      format: 'esm',
      target: 'es2022',
      write: false,
      logLevel: 'warning',
    });
    host = out.outputFiles[0].text.replace(/<\/script/gi, '<\\/script');
    browser = await openBrowser();
  });
  after(async () => {
    await client?.close();
    await browser?.close();
  });
  beforeEach(async () => {
    app = await createTestApp('MCP Apps');
    await seedCatalog(app);
    await createAccount(app, { id: 'alice', plan: 'free' });
    // Every toolset: the pages' tools (get_offer, list_pricing_cards) are in toolsets, not the default list.
    ({ client } = await connectMcp(app.id, { key: app.api_key, headers: ALL_TOOLSETS }, 'apps-host'));
  });

  /** Loads a UI resource the way a host does and shows a tool result in it; the frame of the view. */
  async function show(uri: string, args: Record<string, unknown>, result: unknown): Promise<Page> {
    const read = await client.readResource({ uri });
    const [content] = read.contents as {
      uri: string;
      mimeType: string;
      text: string;
      _meta: { ui: { prefersBorder?: boolean } };
    }[];
    expect(content.mimeType).to.equal('text/html;profile=mcp-app');
    // Self-contained: nothing is fetched from anywhere (no CDN, not even this server).
    expect(content.text).not.to.match(/<script[^>]+src=|<link[^>]+href=|https?:\/\/cdn/i);
    const page = await browser.newPage();
    called.length = 0;
    await page.exposeFunction('hostCallTool', (params: { name: string; arguments?: Record<string, unknown> }) => {
      called.push(params);
      return client.callTool(params);
    });
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    // No console error in the host or the view (a CSP violation, a failed handshake, a component's error).
    errors.set(page, []);
    page.on('console', (m) => {
      if (m.type() === 'error') errors.get(page)!.push(m.text());
    });
    page.on('pageerror', (e) => errors.get(page)!.push(e.message));
    await page.setContent(
      `<!doctype html><html><body style="margin:16px;font-family:sans-serif"><p>Host conversation</p>` +
        `<script type="module">${host}</script></body></html>`,
    );
    await page.waitForFunction(() => 'mountApp' in window);
    await page.evaluate(
      ([html, a, r, b]) =>
        (window as unknown as { mountApp: (...x: unknown[]) => Promise<boolean> }).mountApp(html, a, r, b),
      [content.text, args, result, content._meta.ui.prefersBorder === true] as const,
    );
    expect(requests.filter((u) => !u.startsWith('about:') && !u.startsWith('data:'))).to.deep.equal([]);
    return page;
  }

  const errors = new Map<Page, string[]>();
  /** The tools the view called through the host, in order. */
  const called: { name: string; arguments?: Record<string, unknown> }[] = [];
  /** Closes a host page, asserting that neither it nor the view logged an error and that the view reported its size. */
  async function done(page: Page, shot?: string) {
    if (shot) await screenshots(page, shot);
    const sizes = await page.evaluate(() => (window as unknown as { sizes: { height: number }[] }).sizes);
    expect(sizes.length, 'ui/notifications/size-changed').to.be.greaterThan(0);
    expect(sizes.at(-1)!.height).to.be.greaterThan(0);
    await page.close();
    expect(errors.get(page)).to.deep.equal([]);
  }

  /** The frame of the view in a host page. */
  const viewFrame = (page: Page) => page.frames().find((f) => f !== page.mainFrame())!;

  /** The rendered text of a component inside the view's frame (its shadow root). */
  async function componentText(page: Page, element: string, expected: RegExp): Promise<string> {
    const frame = page.frames().find((f) => f !== page.mainFrame())!;
    await frame.waitForFunction(
      ([el, re]) => new RegExp(re).test(document.querySelector(el)?.shadowRoot?.textContent ?? ''),
      [element, expected.source] as const,
      { timeout: 20_000 },
    );
    return frame.evaluate((el) => document.querySelector(el)!.shadowRoot!.textContent!.replace(/\s+/g, ' '), element);
  }

  it('lists the four pages; the usage meter shows get_account_usage against the limits it reads through the host', async () => {
    const resources = (await client.listResources()).resources;
    expect(resources.filter((r) => r.uri.startsWith('ui://')).map((r) => [r.uri, r.mimeType])).to.deep.equal([
      ['ui://offerkit/account-balance', 'text/html;profile=mcp-app'],
      ['ui://offerkit/usage-meter', 'text/html;profile=mcp-app'],
      ['ui://offerkit/paywall', 'text/html;profile=mcp-app'],
      ['ui://offerkit/pricing-table', 'text/html;profile=mcp-app'],
    ]);
    const tools = (await client.listTools()).tools;
    const meta = (name: string) => tools.find((t) => t.name === name)!._meta as { ui?: { resourceUri: string } };
    expect(meta('get_account_usage').ui!.resourceUri).to.equal('ui://offerkit/usage-meter');
    expect(meta('list_plans')).to.equal(undefined);

    const used = await post(`/apps/${app.id}/namespaces/alice/usage/api_calls/amount`, app.api_key, { amount: 37 });
    expect(used.status, used.text).to.equal(200);
    // The counters alone ({ api_calls: 37, ... }): the view asks the host for get_account_access for the limits.
    const result = await client.callTool({ name: 'get_account_usage', arguments: { namespaceId: 'alice' } });
    expect(result.isError).to.equal(false);
    expect((result.structuredContent as Record<string, number>).api_calls).to.equal(37);
    const page = await show('ui://offerkit/usage-meter', { namespaceId: 'alice' }, result);
    const text = await componentText(page, 'offerkit-usage-meter', /37 of 100 used/);
    expect(text).to.include('Free plan');
    expect(text).to.include('API calls');
    expect(text).to.include('0 of 1 used'); // seats
    expect(called).to.deep.equal([{ name: 'get_account_access', arguments: { namespaceId: 'alice' } }]);
    // The view's height, not the frame's 400 px default: the host fits the frame to the card.
    // The size arrives by message after the view has laid out (a ResizeObserver, then postMessage), so wait for the
    // report of the card as it now stands rather than reading whichever report came first.
    const frame = page.frames().find((f) => f !== page.mainFrame())!;
    const laidOut = await frame.evaluate(() => Math.ceil(document.body.getBoundingClientRect().height));
    await page.waitForFunction(
      (h) => Math.abs(((window as unknown as { sizes: { height: number }[] }).sizes.at(-1)?.height ?? 0) - h) <= 2,
      laidOut,
      { timeout: 10_000 },
    );
    const height = await page.evaluate(
      () => (window as unknown as { sizes: { height: number }[] }).sizes.at(-1)!.height,
    );
    expect(height).to.be.within(100, 399);
    await done(page, 'usage-meter');
  });

  /** A credits pool alice holds 500 of (a grant expiring on 1 January 2027) and a feature that draws 10 a use. */
  async function credits() {
    const base = `/apps/${app.id}`;
    for (const [p, body] of [
      ['/entitlements', { id: 'credits', type: 'credits', name: 'AI credits' }],
      [
        '/entitlements',
        { id: 'premium', type: 'usage', name: 'Premium answers', credits: { pool: 'credits', cost: 10 } },
      ],
      ['/plans/free/entitlements', { id: 'premium', max: null }],
      ['/namespaces/alice/credits/grants', { pool: 'credits', amount: 500, expires_at: '2027-01-01T00:00:00Z' }],
    ] as const) {
      const res = await post(`${base}${p}`, app.api_key, body);
      expect(res.status, `${p} ${res.text}`).to.equal(201);
    }
  }

  /** The view's credits section (light DOM), once it says `expected`. */
  async function creditsText(page: Page, expected: RegExp): Promise<string> {
    await viewFrame(page).waitForFunction(
      (re) => new RegExp(re).test(document.getElementById('credits')?.textContent ?? ''),
      expected.source,
      { timeout: 20_000 },
    );
    return viewFrame(page).evaluate(() => document.getElementById('credits')!.textContent!.replace(/\s+/g, ' '));
  }

  it("the balance app shows get_account_access: the plan, usage, the pool's balance and, read through the host, its grants", async () => {
    await credits();
    const used = await post(`/apps/${app.id}/namespaces/alice/usage/api_calls/amount`, app.api_key, { amount: 12 });
    expect(used.status, used.text).to.equal(200);
    const tools = (await client.listTools()).tools;
    for (const name of ['get_account_access', 'get_account_access_private', 'get_credit_balance'])
      expect((tools.find((t) => t.name === name)!._meta as { ui: { resourceUri: string } }).ui.resourceUri).to.equal(
        'ui://offerkit/account-balance',
      );
    const result = await client.callTool({ name: 'get_account_access', arguments: { namespaceId: 'alice' } });
    expect(result.isError).to.equal(false);
    const page = await show('ui://offerkit/account-balance', { namespaceId: 'alice' }, result);
    const meter = await componentText(page, 'offerkit-usage-meter', /12 of 100 used/);
    expect(meter).to.include('Free plan');
    const text = await creditsText(page, /expires/);
    expect(text).to.include('AI credits');
    expect(text).to.include('500 left');
    expect(text).to.include('Premium answers: 10 per use');
    expect(text).to.include('500 of 500 left, granted, expires Jan 1, 2027');
    expect(called).to.deep.equal([{ name: 'get_credit_balance', arguments: { namespaceId: 'alice' } }]);
    await done(page, 'account-balance');
  });

  it('the balance app shows get_credit_balance, with the plan and usage read through the host', async () => {
    await credits();
    const result = await client.callTool({ name: 'get_credit_balance', arguments: { namespaceId: 'alice' } });
    expect(result.isError).to.equal(false);
    const page = await show('ui://offerkit/account-balance', { namespaceId: 'alice' }, result);
    const text = await creditsText(page, /Premium answers: 10 per use/);
    expect(text).to.include('500 left');
    expect(text).to.match(/expires Jan 1, 2027/);
    const meter = await componentText(page, 'offerkit-usage-meter', /Free plan/);
    expect(meter).to.include('0 of 100 used');
    expect(called).to.deep.equal([{ name: 'get_account_access', arguments: { namespaceId: 'alice' } }]);
    await done(page, 'account-balance-credits');
  });

  it("the balance app says when an account has no credits; a refused call's error is shown as it is", async () => {
    const result = await client.callTool({ name: 'get_account_access', arguments: { namespaceId: 'alice' } });
    const page = await show('ui://offerkit/account-balance', { namespaceId: 'alice' }, result);
    expect(await creditsText(page, /No credits pools/)).to.include('Credits');
    await done(page);
    const missing = await client.callTool({ name: 'get_credit_balance', arguments: { namespaceId: 'nobody' } });
    expect(missing.isError).to.equal(true);
    const refused = await show('ui://offerkit/account-balance', { namespaceId: 'nobody' }, missing);
    await viewFrame(refused).waitForFunction(() => /nobody/.test(document.getElementById('note')?.textContent ?? ''));
    await done(refused);
  });

  it('the paywall shows the 402 of increment_usage: the limit, the usage and the upgrade offer, whose link the host opens', async () => {
    await connectProvider(app);
    const first = await client.callTool({
      name: 'increment_usage',
      arguments: { namespaceId: 'alice', entitlementId: 'seats' },
    });
    expect(first.isError).to.equal(false);
    const refused = await client.callTool({
      name: 'increment_usage',
      arguments: { namespaceId: 'alice', entitlementId: 'seats' },
    });
    expect(refused.isError).to.equal(true);
    expect((refused.structuredContent as { error: string }).error).to.equal('limit_reached');
    const page = await show('ui://offerkit/paywall', { namespaceId: 'alice', entitlementId: 'seats' }, refused);
    const text = await componentText(page, 'offerkit-paywall', /You have reached your Seats limit/);
    expect(text).to.match(/You have used 1 of 1 Seats/);
    expect(text).to.include('Pro');
    expect(text).to.include('$29');
    expect(text).to.include('5 Seats');
    // The upgrade link: the sandboxed frame may not navigate, so the click has the host open it (ui/open-link).
    const checkout = (refused.structuredContent as { offer: { checkout_url: string } }).offer.checkout_url;
    expect(checkout).to.match(/^http/);
    await viewFrame(page).evaluate(() =>
      (document.querySelector('offerkit-paywall')!.shadowRoot!.querySelector('a[part=cta]') as HTMLElement).click(),
    );
    await page.waitForFunction(() => (window as unknown as { opened: string[] }).opened.length === 1);
    expect(await page.evaluate(() => (window as unknown as { opened: string[] }).opened)).to.deep.equal([checkout]);
    await done(page, 'paywall');

    // A call that went through says where the counter stands, and no paywall shows.
    const ok = await show(
      'ui://offerkit/paywall',
      { namespaceId: 'alice', entitlementId: 'api_calls' },
      await client.callTool({
        name: 'increment_usage',
        arguments: { namespaceId: 'alice', entitlementId: 'api_calls' },
      }),
    );
    const frame = ok.frames().find((f) => f !== ok.mainFrame())!;
    await frame.waitForFunction(() => document.getElementById('note')?.textContent === 'api_calls: 1 used');
    expect(
      await frame.evaluate(() => document.querySelector('offerkit-paywall')!.shadowRoot!.textContent!.trim()),
    ).to.equal('');
    await done(ok);
  });

  it("the pricing table shows get_offer's plans; choosing one makes the account's checkout link and opens it", async () => {
    await connectProvider(app);
    // No offer by that id: get_offer answers the regular prices (never 404), as the pricing table shows them.
    const result = await client.callTool({ name: 'get_offer', arguments: { offerId: 'spring', namespaceId: 'alice' } });
    expect(result.isError).to.equal(false);
    expect((result.structuredContent as { source: string }).source).to.equal('regular');
    const page = await show('ui://offerkit/pricing-table', { offerId: 'spring', namespaceId: 'alice' }, result);
    const text = await componentText(page, 'offerkit-pricing-table', /Choose Pro/);
    expect(text).to.include('$29');
    expect(text).to.include('Free');
    expect(text).to.include('No payment needed');
    expect(text).not.to.include('publishable-key'); // not the "set the attributes" hint

    // The button asks the server, through the host, for alice's link (create_upgrade_link), and the host opens it.
    await viewFrame(page).evaluate(() =>
      Array.from(document.querySelector('offerkit-pricing-table')!.shadowRoot!.querySelectorAll('button'))
        .find((b) => b.textContent!.includes('Choose Pro'))!
        .click(),
    );
    await page.waitForFunction(() => (window as unknown as { opened: string[] }).opened.length === 1, null, {
      timeout: 20_000,
    });
    const [url] = await page.evaluate(() => (window as unknown as { opened: string[] }).opened);
    expect(url).to.match(/\/checkoutnow\?ba_token=BA-/);
    await viewFrame(page).waitForFunction(
      () => document.getElementById('note')?.textContent === 'Checkout for pro opened.',
    );
    await done(page, 'pricing-table');
  });

  it('the pricing table shows list_pricing_cards; without an account, choosing a plan asks the conversation', async () => {
    const result = await client.callTool({ name: 'list_pricing_cards', arguments: {} });
    expect(result.isError).to.equal(false);
    const page = await show('ui://offerkit/pricing-table', {}, result);
    const text = await componentText(page, 'offerkit-pricing-table', /Choose Pro/);
    expect(text).to.include('$29');
    await viewFrame(page).evaluate(() =>
      Array.from(document.querySelector('offerkit-pricing-table')!.shadowRoot!.querySelectorAll('button'))
        .find((b) => b.textContent!.includes('Choose Pro'))!
        .click(),
    );
    await page.waitForFunction(() => (window as unknown as { messages: unknown[] }).messages.length === 1);
    const [message] = (await page.evaluate(() => (window as unknown as { messages: unknown[] }).messages)) as {
      role: string;
      content: { type: string; text: string }[];
    }[];
    expect(message.role).to.equal('user');
    expect(message.content[0].text).to.match(/the pro plan, billed per month/);
    expect(await page.evaluate(() => (window as unknown as { opened: string[] }).opened)).to.deep.equal([]);
    await done(page, 'pricing-table-cards');
  });
});
