// The usage meter's credits (issue 42 item 6) in a real browser (headless Chromium): each pool's balance against
// what the plan grants a month, and the features that draw from it with the cost of a unit, marked when the balance
// no longer covers one.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { type BrowserContext, type Page } from 'playwright-core';
import { build } from '../../packages/elements/build.js';
import { createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { get, post } from '../helpers/http.js';
import { openBrowser, picture, type FileBrowser } from '../helpers/browser.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const SHOTS = path.resolve('.test-data/screenshots/elements');

describe('the usage meter shows credits pools (headless Chromium)', function () {
  this.timeout(180_000);
  let browser: FileBrowser;
  let context: BrowserContext;
  let page: Page;
  let problems: string[];
  let app: TestApp;
  let base: string;

  before(async function () {
    this.timeout(15 * 60_000);
    await build();
    fs.mkdirSync(SHOTS, { recursive: true });
    browser = await openBrowser();
    ({ app, base } = await seededApp({ name: 'Credits shop' }));
    const ok = async (p: string, body: unknown, status = 201) => {
      const res = await post(`${base}${p}`, app.api_key, body);
      expect(res.status, `${p} ${res.text}`).to.equal(status);
    };
    await ok('/entitlements', { id: 'credits', type: 'credits', name: 'AI credits' });
    await ok('/entitlements', {
      id: 'basic',
      type: 'usage',
      name: 'Basic messages',
      credits: { pool: 'credits', cost: 1 },
    });
    await ok('/entitlements', {
      id: 'premium',
      type: 'usage',
      name: 'Premium messages',
      credits: { pool: 'credits', cost: 10 },
    });
    await ok('/plans/free/entitlements', { id: 'credits', max: 100 });
    for (const id of ['basic', 'premium']) await ok('/plans/free/entitlements', { id, max: null });
    // The account's actor grants the plan's 100 for the month as the account is made; then 90 are drawn.
    await createAccount(app, { id: 'cy', plan: 'free' });
    await eventually(
      async () => (await get(`${base}/namespaces/cy/credits`, app.api_key)).body.data?.[0]?.balance === 100,
    );
    await ok('/namespaces/cy/usage/premium/amount', { amount: 9 }, 200);
  });
  after(async () => {
    await browser?.close();
  });
  beforeEach(async () => {
    problems = [];
    context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    page = await context.newPage();
    page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  });
  afterEach(async () => {
    await context?.close();
    expect(problems, 'no console errors').to.deep.equal([]);
  });

  const open = async (account: string) => {
    const q = new URLSearchParams({ app: app.id, key: app.public_key, account });
    await page.goto(`${testEnv().baseUrl}/elements?${q}`);
    await page.locator('offerkit-usage-meter').getByRole('heading', { name: 'Free plan' }).waitFor();
    return page.locator('offerkit-usage-meter');
  };
  const shot = async (name: string) => {
    for (const [suffix, size] of [
      ['', { width: 390, height: 844 }],
      ['-desktop', { width: 1280, height: 900 }],
    ] as const) {
      await page.setViewportSize(size);
      await picture(page.locator('#usage'), { path: path.join(SHOTS, `${name}${suffix}.png`) });
      const width = await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth);
      expect(width, `${name}: page width at ${size.width} px`).to.be.at.most(size.width);
    }
    await page.setViewportSize({ width: 390, height: 844 });
  };

  it('the balance against the monthly grant, and which features draw from it at what cost', async () => {
    const meter = await open('cy');
    const pools = meter.getByRole('list', { name: 'Credits' });
    const bar = pools.getByRole('meter', { name: 'AI credits' });
    expect(await bar.getAttribute('aria-valuenow')).to.equal('10');
    expect(await bar.getAttribute('aria-valuemax')).to.equal('100');
    expect(await bar.getAttribute('aria-valuetext')).to.equal('10 left of 100 a month');
    expect(await pools.getByText('Basic messages: 1 a unit').isVisible()).to.equal(true);
    expect(await pools.getByText('Premium messages: 10 a unit', { exact: true }).isVisible()).to.equal(true);
    // The features themselves still show as usage, without a limit of their own.
    expect(await meter.getByText('9 used, unlimited').isVisible()).to.equal(true);
    await shot('60-usage-meter-credits');

    // One basic message more: 9 left, no longer enough for a premium one (its `can` is false).
    const used = await post(`${base}/namespaces/cy/usage/basic/add`, app.api_key);
    expect(used.status, used.text).to.equal(200);
    await page.reload();
    await page.locator('offerkit-usage-meter').getByRole('heading', { name: 'Free plan' }).waitFor();
    expect(await bar.getAttribute('aria-valuenow')).to.equal('9');
    expect(await pools.getByText('Premium messages: 10 a unit (not enough)').isVisible()).to.equal(true);
    expect(await pools.locator('.count.warn').count()).to.equal(1);
    await shot('61-usage-meter-credits-low');
  });

  it('an account without credits shows no pools', async () => {
    // An app without pools: the seeded catalog alone.
    ({ app, base } = await seededApp({ name: 'No credits shop' }));
    await createAccount(app, { id: 'dee', plan: 'free' });
    const meter = await open('dee');
    await meter.getByRole('meter', { name: 'API calls' }).waitFor();
    expect(await meter.getByRole('list', { name: 'Credits' }).count()).to.equal(0);
  });
});
