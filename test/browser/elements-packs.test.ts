// Credit packs in the drop-in components (issue 42 item 6) in a real browser (headless Chromium): the usage meter's
// "Top up" and the paywall's pack buttons for a `credits_exhausted` 402 buy a pack through the PayPal stand-in's
// approval page, and back on the page the order completes and the credits are granted (the account's balance).
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { type BrowserContext, type Page } from 'playwright-core';
import { build } from '../../packages/elements/build.js';
import { connectBilling, createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { get, post } from '../helpers/http.js';
import { openBrowser, picture, type FileBrowser } from '../helpers/browser.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const SHOTS = path.resolve('.test-data/screenshots/elements');

describe('credit packs in the usage meter and the paywall (headless Chromium)', function () {
  this.timeout(180_000);
  let browser: FileBrowser;
  let context: BrowserContext;
  let page: Page;
  let problems: string[];
  let app: TestApp;
  let base: string;

  const ok = async (p: string, body: unknown, status = 201) => {
    const res = await post(`${base}${p}`, app.api_key, body);
    expect(res.status, `${p} ${res.text}`).to.equal(status);
    return res.body;
  };
  const balance = async (account: string) =>
    (await get(`${base}/namespaces/${account}/credits`, app.api_key)).body.data?.[0]?.balance as number;
  /** An account on the free plan (95 AI credits a month) with 90 spent: 5 left, not enough for a premium message. */
  const spent = async (id: string) => {
    await createAccount(app, { id, plan: 'free' });
    await eventually(async () => (await balance(id)) === 95);
    await ok(`/namespaces/${id}/usage/premium/amount`, { amount: 9 }, 200);
  };

  before(async function () {
    this.timeout(15 * 60_000);
    const built = await build();
    expect(built.gzip, 'the bundle, gzipped (the guard in elements.test.ts)').to.be.below(31_000);
    fs.mkdirSync(SHOTS, { recursive: true });
    browser = await openBrowser();
    ({ app, base } = await seededApp({ name: 'Packs shop' }));
    await connectBilling(app);
    await ok('/entitlements', { id: 'credits', type: 'credits', name: 'AI credits' });
    await ok('/entitlements', {
      id: 'premium',
      type: 'usage',
      name: 'Premium messages',
      credits: { pool: 'credits', cost: 10 },
    });
    await ok('/plans/free/entitlements', { id: 'credits', max: 95 });
    await ok('/plans/free/entitlements', { id: 'premium', max: null });
    // Pro grants more of the pool: the 402's upgrade, shown beside the packs.
    await ok('/plans/pro/entitlements', { id: 'credits', max: 20000 });
    await ok('/plans/pro/entitlements', { id: 'premium', max: null });
    await ok('/credit-packs', { id: 'boost', pool: 'credits', amount: 10000, price: '10.00' });
    await ok('/credit-packs', { id: 'mega', pool: 'credits', amount: 50000, price: '40.00' });
    // An archived pack is not sold: neither the meter nor the paywall offers it.
    await ok('/credit-packs', { id: 'old', pool: 'credits', amount: 500, price: '1.00' });
    await ok('/credit-packs/old/archive', undefined, 200);
  });
  after(async () => {
    await browser?.close();
  });
  beforeEach(async () => {
    problems = [];
    context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.location().url.startsWith(testEnv().paypal.baseUrl)) return; // the stand-in's page is not ours
      // Chromium logs each non-2xx fetch as an error: the blocked usage call's 402 (what the paywall shows) and the
      // archived pack's 409 (what the paywall says) are the point of these tests.
      if (m.type() === 'error' && !/status of (402|409)/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  });
  afterEach(async () => {
    await context?.close();
    expect(problems, 'no console errors').to.deep.equal([]);
  });

  const open = async (q: Record<string, string>) => {
    await page.goto(`${testEnv().baseUrl}/elements?${new URLSearchParams({ app: app.id, key: app.public_key, ...q })}`);
    await page.locator('offerkit-usage-meter').getByRole('heading', { name: 'Free plan' }).waitFor();
  };
  const shot = async (name: string, section: string) => {
    for (const [suffix, size] of [
      ['', { width: 390, height: 844 }],
      ['-desktop', { width: 1280, height: 900 }],
    ] as const) {
      await page.setViewportSize(size);
      await picture(page.locator(section), { path: path.join(SHOTS, `${name}${suffix}.png`) });
      const width = await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth);
      expect(width, `${name}: page width at ${size.width} px`).to.be.at.most(size.width);
    }
    await page.setViewportSize({ width: 390, height: 844 });
  };
  /** At the stand-in's approval page: approve, and wait to be back on the example page. */
  const approve = async () => {
    await page.waitForURL(/\/checkoutnow\?/);
    expect(page.url().startsWith(testEnv().paypal.baseUrl)).to.equal(true);
    await page.getByRole('button', { name: 'Agree & Subscribe' }).click();
    await page.waitForURL((u) => u.pathname.endsWith('/elements'));
  };

  it('a publishable key reads only the packs on sale', async () => {
    const res = await get(`${base}/credit-packs?archived=true`, app.public_key);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.map((p: { id: string }) => p.id)).to.deep.equal(['boost', 'mega']);
    const all = await get(`${base}/credit-packs`, app.api_key);
    expect(all.body.map((p: { id: string }) => p.id)).to.deep.equal(['boost', 'mega', 'old']);
  });

  it('the meter: "Top up" lists the packs, one is bought at the stand-in, and back on the page the credits are granted', async () => {
    await spent('mo');
    await open({ account: 'mo' });
    const meter = page.locator('offerkit-usage-meter');
    const topUp = meter.getByRole('button', { name: 'Top up AI credits' });
    await topUp.waitFor();
    await shot('70-usage-meter-top-up', '#usage');
    await topUp.click();
    // The button clicked gives way to the pack buttons: the first of them has the focus.
    await eventually(async () =>
      meter.getByRole('button', { name: /^Buy 10,000/ }).evaluate((el) => el.matches(':focus')),
    );
    const buttons = meter.getByRole('button', { name: /^Buy / });
    expect(await buttons.allInnerTexts()).to.deep.equal([
      'Buy 10,000 AI credits for $10.00',
      'Buy 50,000 AI credits for $40.00',
    ]);
    await shot('71-usage-meter-packs', '#usage');
    await meter.getByRole('button', { name: 'Buy 10,000 AI credits for $10.00' }).click();
    await approve();
    await meter.getByRole('status').getByText('Thank you! 10,000 AI credits were added.').waitFor();
    const bar = meter.getByRole('meter', { name: 'AI credits' });
    expect(await bar.getAttribute('aria-valuenow')).to.equal('10005');
    expect(await balance('mo')).to.equal(10005);
    // The trip's marker and PayPal's parameters are gone from the address; the page's own stay.
    const url = new URL(page.url());
    expect([...url.searchParams.keys()].sort()).to.deep.equal(['account', 'app', 'key']);
    await shot('72-usage-meter-pack-bought', '#usage');
    const orders = await get(`${base}/namespaces/mo/credit-pack-orders`, app.api_key);
    expect(orders.body.map((o: { pack: string; status: string }) => [o.pack, o.status])).to.deep.equal([
      ['boost', 'completed'],
    ]);
  });

  it('the paywall: a credits_exhausted 402 offers each pack beside the upgrade; the pack bought is granted', async () => {
    await spent('pat');
    await open({ account: 'pat', entitlement: 'premium' });
    const paywall = page.locator('offerkit-paywall');
    await page.getByRole('button', { name: 'Use one' }).click();
    await paywall.getByRole('heading', { name: 'You are out of AI credits' }).waitFor();
    expect(await paywall.getByText('Premium messages costs 10 AI credits a unit').isVisible()).to.equal(true);
    const real = await post(`${base}/namespaces/pat/usage/premium/add`, app.public_key);
    expect(real.status).to.equal(402);
    expect(real.body.packs.map((p: { id: string }) => p.id)).to.deep.equal(['boost', 'mega']);
    const packs = paywall.locator('[part="packs"]').getByRole('button');
    expect(await packs.allInnerTexts()).to.deep.equal([
      'Buy 10,000 AI credits for $10.00',
      'Buy 50,000 AI credits for $40.00',
    ]);
    // Beside them, the upgrade the 402 found: Pro, with the pool's monthly grant.
    expect(real.body.offer?.plan.id).to.equal('pro');
    expect(await paywall.getByText('20,000 AI credits', { exact: true }).isVisible()).to.equal(true);
    expect(await paywall.getByRole('link', { name: 'Upgrade to Pro' }).count()).to.equal(1);
    await shot('73-paywall-packs', '#paywall-demo');

    // A refused checkout is said in the component: the pack archived since the 402 was shown.
    await ok('/credit-packs/mega/archive', undefined, 200);
    await paywall.getByRole('button', { name: 'Buy 50,000 AI credits for $40.00' }).click();
    await paywall
      .getByRole('alert')
      .getByText(/archived/)
      .waitFor();
    await shot('74-paywall-pack-refused', '#paywall-demo');

    await paywall.getByRole('button', { name: 'Buy 10,000 AI credits for $10.00' }).click();
    await approve();
    await paywall.getByRole('status').getByText('Thank you! 10,000 AI credits were added.').waitFor();
    expect(await balance('pat')).to.equal(10005);
    await shot('75-paywall-pack-bought', '#paywall-demo');
    // The usage that was refused goes through now.
    const again = await post(`${base}/namespaces/pat/usage/premium/add`, app.public_key);
    expect(again.status, again.text).to.equal(200);
  });
});
