import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
// page.evaluate callbacks run in the page and use its globals as (globalThis as any): tests compile without the DOM.
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { build } from '../../packages/elements/build.js';
import { prepareElementsExample, type ExampleOptions } from '../../src/dev/elements-example.js';
import {
  connectBilling,
  connectProvider,
  createAccount,
  purchase,
  seededApp,
  type TestApp,
} from '../helpers/factories.js';
import { get, patch, post } from '../helpers/http.js';
import { CHROMIUM_ARGS, ensureChromium } from '../helpers/chromium.js';
import { PAYPAL_TEST_CREDENTIALS, testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

/** Screenshots of every state the tests reach, for people to look at (kept out of git). */
const SHOTS = path.resolve('.test-data/screenshots/elements');
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };

/** A cancel flow with every step type: a question that branches to a discount or a pause offer, text, confirm. */
const flowSteps = [
  {
    id: 'reason',
    type: 'question',
    title: 'Why are you leaving?',
    answers: [
      { id: 'too_expensive', label: 'Too expensive', next: 'price_offer' },
      { id: 'not_using', label: 'Not using it', next: 'pause_offer' },
      { id: 'missing_features', label: 'Missing features', next: 'feedback' },
    ],
  },
  {
    id: 'price_offer',
    type: 'offer',
    title: 'A better price',
    decline_label: 'No thanks',
    next: 'confirm',
    offers: [{ kind: 'discount', percent: 25, cycles: 3, headline: '25% off for 3 months', cta: 'Keep it cheaper' }],
  },
  {
    id: 'pause_offer',
    type: 'offer',
    title: 'Take a break',
    decline_label: 'No, cancel anyway',
    next: 'confirm',
    offers: [{ kind: 'pause', months: 2, headline: 'Pause instead of cancelling', cta: 'Pause for 2 months' }],
  },
  { id: 'feedback', type: 'text', title: 'We are building it', body: 'Thanks, our roadmap has it.' },
  { id: 'confirm', type: 'confirm', title: 'Confirm cancellation', decline_label: null },
];

describe('drop-in components in a real browser (headless Chromium)', function () {
  this.timeout(180_000);
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let problems: string[];
  /** Browser console messages the page is expected to log (Chromium logs every non-2xx fetch as an error). */
  let expectedErrors: RegExp[];
  let app: TestApp;
  let base: string;

  before(async function () {
    this.timeout(15 * 60_000); // a fresh CI machine installs Chromium first
    const built = await build();
    expect(built.bytes).to.be.greaterThan(10_000);
    // "Small" as the docs state it (72 kB minified, 19 kB gzipped with Lit and the SDK): a guard, not a target.
    expect(built.gzip, 'the bundle, gzipped').to.be.below(25_000);
    fs.mkdirSync(SHOTS, { recursive: true });
    browser = await chromium.launch({ executablePath: ensureChromium(), args: CHROMIUM_ARGS });
  });
  after(async () => {
    await browser?.close();
  });
  beforeEach(async () => {
    problems = [];
    expectedErrors = [];
    context = await browser.newContext({ viewport: PHONE });
    page = await context.newPage();
    page.on('console', (m) => {
      // The PayPal stand-in's approval page is not ours (it has no favicon); only our pages count.
      if (m.location().url.startsWith(testEnv().paypal.baseUrl)) return;
      if (m.type() === 'error' && !expectedErrors.some((re) => re.test(m.text())))
        problems.push(`console: ${m.text()} (${m.location().url})`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    ({ app, base } = await seededApp({ name: 'Elements shop' }));
  });
  afterEach(async () => {
    await context?.close();
    expect(problems, 'no console errors').to.deep.equal([]);
  });

  const exampleUrl = (q: Record<string, string>) =>
    `${testEnv().baseUrl}/elements?${new URLSearchParams({ app: app.id, key: app.public_key, ...q })}`;
  /**
   * The whole page, and the component's section alone (easier to look at), at 390 px wide (the tests' viewport)
   * and at 1280 px (`-desktop`).
   */
  const shot = async (name: string, section?: string) => {
    for (const [suffix, size] of [
      ['', PHONE],
      ['-desktop', DESKTOP],
    ] as const) {
      await page.setViewportSize(size);
      await page.screenshot({ path: path.join(SHOTS, `${name}${suffix}-page.png`), fullPage: true });
      if (section) await page.locator(section).screenshot({ path: path.join(SHOTS, `${name}${suffix}.png`) });
      // Usable at either width: nothing wider than the viewport.
      const width = await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth);
      expect(width, `${name}: page width at ${size.width} px`).to.be.at.most(size.width);
    }
    await page.setViewportSize(PHONE);
  };
  const tokenFor = async (account: string) =>
    (await post(`${base}/namespaces/${account}/token`, app.api_key, {})).body.token as string;
  const cancelFlow = () => page.locator('offerkit-cancel-flow');

  it('the example page and the bundle are served; without a connection it says what to fill in', async () => {
    const asset = await fetch(`${testEnv().baseUrl}/elements/assets/offerkit-elements.js`);
    expect(asset.status).to.equal(200);
    expect(asset.headers.get('content-type')).to.match(/javascript/);
    expect((await fetch(`${testEnv().baseUrl}/elements/assets/nope.js`)).status).to.equal(404);

    await page.goto(`${testEnv().baseUrl}/elements`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('offerkit elements');
    await page.locator('#missing').waitFor();
    expect(await page.getByLabel('Publishable key').isVisible()).to.equal(true);
    for (const tag of ['offerkit-pricing-table', 'offerkit-usage-meter', 'offerkit-paywall', 'offerkit-cancel-flow'])
      expect(await page.evaluate((t) => !!(globalThis as any).customElements.get(t), tag), tag).to.equal(true);
    expect(await cancelFlow().textContent()).to.equal(''); // light DOM stays empty; the UI is in the shadow root
    expect(await cancelFlow().getByText('Set account-token to start.').isVisible()).to.equal(true);
    // Each element says what it needs instead of loading for ever.
    const meter = page.locator('offerkit-usage-meter');
    expect(await meter.getByText('Set publishable-key and account, or account-token, to start.').isVisible()).to.equal(
      true,
    );
    const table = page.locator('offerkit-pricing-table');
    expect(await table.getByText('Set offer, app-id and publishable-key to show prices.').isVisible()).to.equal(true);
    await shot('00-example-empty');
  });

  describe('cancel flow, driven with an account token', () => {
    let token: string;
    beforeEach(async () => {
      await createAccount(app, { id: 'ada', plan: 'free' });
      await purchase(app, 'ada'); // Pro at $19/month through the PayPal stand-in
      const flow = await post(`${base}/cancel-flows`, app.api_key, { status: 'active', steps: flowSteps });
      expect(flow.status, flow.text).to.equal(201);
      token = await tokenFor('ada');
    });
    const sub = async () => (await get(`${base}/namespaces/ada/subscription`, app.api_key)).body;

    it('saved with a pause: question, offer (with back), accept; the subscription is paused', async () => {
      await page.goto(exampleUrl({ account: 'ada', account_token: token }));
      const flow = cancelFlow();
      await flow.getByRole('heading', { name: 'Why are you leaving?' }).waitFor();
      const progress = flow.getByRole('progressbar');
      expect(await progress.getAttribute('aria-valuenow')).to.equal('1');
      expect(await progress.getAttribute('aria-valuemax')).to.equal('3');
      expect(await flow.getByRole('button', { name: 'Back' }).count()).to.equal(0);
      await shot('10-cancel-question', '#cancel');

      // Continue without an answer: told what to do, nothing sent.
      await flow.getByRole('button', { name: 'Continue' }).click();
      expect(await flow.getByRole('alert').textContent()).to.equal('Choose an answer.');

      await flow.getByRole('radio', { name: 'Not using it' }).check();
      await flow.getByRole('button', { name: 'Continue' }).click();
      await flow.getByRole('heading', { name: 'Pause instead of cancelling' }).waitFor();
      expect(await progress.getAttribute('aria-valuenow')).to.equal('2');
      expect(await flow.locator('.offer').innerText()).to.match(/2 months/);
      // Focus moves to the new step's title, for keyboard and screen reader users.
      expect(
        await page.evaluate(() => (globalThis as any).document.activeElement?.shadowRoot?.activeElement?.textContent),
      ).to.equal('Take a break');
      await shot('11-cancel-pause-offer', '#cancel');

      // Back to the question, the answer still chosen; forward again.
      await flow.getByRole('button', { name: 'Back' }).click();
      await flow.getByRole('heading', { name: 'Why are you leaving?' }).waitFor();
      expect(await flow.getByRole('radio', { name: 'Not using it' }).isChecked()).to.equal(true);
      await flow.getByRole('button', { name: 'Continue' }).click();

      const saved = page.evaluate(
        () =>
          new Promise<string>((resolve) =>
            (globalThis as any).document.addEventListener('offerkit-saved', (e: any) => resolve(e.detail.status), {
              once: true,
            }),
          ),
      );
      await flow.getByRole('button', { name: 'Pause for 2 months' }).click();
      await flow.getByRole('heading', { name: 'Your subscription is paused' }).waitFor();
      expect(await saved).to.equal('saved');
      expect(await flow.getByRole('status').textContent()).to.match(/^Billing resumes on /);
      await shot('12-cancel-paused', '#cancel');
      expect((await sub()).status).to.equal('paused');
      const [session] = (await get(`${base}/cancel-sessions?account=ada`, app.api_key)).body.data;
      expect(session.result).to.include({ outcome: 'pause', months: 2 });
    });

    it('saved with a discount: accept goes to the provider, the customer approves, comes back, the price drops', async () => {
      await page.goto(exampleUrl({ account: 'ada', account_token: token }));
      const flow = cancelFlow();
      await flow.getByRole('radio', { name: 'Too expensive' }).check();
      await flow.getByRole('button', { name: 'Continue' }).click();
      await flow.getByRole('heading', { name: '25% off for 3 months' }).waitFor();
      expect(await flow.locator('.terms').innerText()).to.match(/\$14\.25 per month for 3 renewals\s+\$19\.00/);
      await shot('20-cancel-discount-offer', '#cancel');

      await flow.getByRole('button', { name: 'Keep it cheaper' }).click();
      await page.waitForURL(/\/checkoutnow\?/); // the PayPal stand-in's approval page
      expect(page.url().startsWith(testEnv().paypal.baseUrl)).to.equal(true);
      await page.getByRole('button', { name: 'Agree & Subscribe' }).click();
      await page.waitForURL(/\/elements\?.*subscription_id=/);
      await flow.getByRole('heading', { name: 'You are all set' }).waitFor();
      expect(await flow.getByRole('status').textContent()).to.match(/Thanks for approving/);
      await shot('21-cancel-discount-approved', '#cancel');
      const applied = await eventually(async () => ((await sub()).price === 14.25 ? sub() : undefined));
      expect(applied.discount).to.deep.include({ percent: 25, cycles_left: 3 });
    });

    it('cancelled: decline the offer, confirm with the keyboard; the account moves to the free plan', async () => {
      await page.goto(exampleUrl({ account: 'ada', account_token: token }));
      const flow = cancelFlow();
      await flow.getByRole('radio', { name: 'Not using it' }).focus();
      await page.keyboard.press('Space');
      await page.keyboard.press('Tab'); // out of the radio group, to Continue
      await page.keyboard.press('Enter');
      await flow.getByRole('button', { name: 'No, cancel anyway' }).click();
      await flow.getByRole('heading', { name: 'Confirm cancellation' }).waitFor();
      expect(await flow.locator('section').innerText()).to.match(/You are on Pro at \$19\.00 per month/);
      await shot('30-cancel-confirm', '#cancel');
      await flow.getByRole('button', { name: 'Cancel subscription' }).focus();
      await page.keyboard.press('Enter');
      await flow.getByRole('heading', { name: 'Your subscription is cancelled' }).waitFor();
      await shot('31-cancel-cancelled', '#cancel');
      expect((await get(`${base}/namespaces/ada`, app.api_key)).body.plan).to.equal('free');
      expect((await sub()).status).to.equal('cancelled');
    });
  });

  it('pricing table: a buyer picks yearly Pro with an order bump, approves both at the stand-in, and the checkout completes', async () => {
    await connectProvider(app);
    await createAccount(app, { id: 'bea', plan: 'free' });
    const offer = await post(`${base}/offers`, app.api_key, {
      id: 'launch',
      name: 'Launch offer',
      description: 'Our first-year prices.',
      plans: [
        {
          plan: 'pro',
          prices: [
            { interval: 'month', amount: 19 },
            { interval: 'year', amount: 190 },
          ],
          extras: { entitlements: [{ id: 'api_calls', max: 5000 }] },
        },
        { plan: 'scale', prices: [{ interval: 'month', amount: 79 }] },
      ],
      bumps: [{ id: 'support', name: 'Priority support', addon: 'priority', price: 9 }],
    });
    expect(offer.status, offer.text).to.equal(201);
    expect((await post(`${base}/offers/launch/publish`, app.api_key)).status).to.equal(200);

    await page.goto(exampleUrl({ account: 'bea', offer: 'launch', ref: 'newsletter' }));
    const table = page.locator('offerkit-pricing-table');
    await table.getByRole('heading', { name: 'Launch offer' }).waitFor();
    const pro = table.getByRole('article', { name: 'Pro' });
    expect(await pro.locator('.price').innerText()).to.match(/\$19\.00\/month\s+\$29\.00/);
    expect(await pro.getByText('5,000 API calls').isVisible()).to.equal(true);
    // Named as the catalog names them; an on/off feature is just its name.
    expect(await pro.getByRole('listitem').allInnerTexts()).to.deep.equal(['5,000 API calls BONUS', '5 Seats', 'SSO']);
    await shot('40-pricing-monthly', '#pricing');
    await table.getByRole('radio', { name: 'Yearly' }).check();
    expect(await pro.locator('.price').innerText()).to.match(/\$190\.00\/year\s+\$290\.00/);
    expect(await table.getByRole('button', { name: 'Choose Scale' }).isDisabled()).to.equal(true);
    await table.getByRole('checkbox', { name: /Priority support/ }).check();
    await shot('41-pricing-yearly-bump', '#pricing');

    // The order bump's approval first, then (back on the page, sent on by the table) the subscription's.
    await table.getByRole('button', { name: 'Choose Pro' }).click();
    await page.waitForURL(/\/checkoutnow\?token=/);
    expect(await page.locator('#summary').textContent()).to.match(/Priority support/);
    await page.getByRole('button', { name: /Agree/ }).click();
    await page.waitForURL(/\/checkoutnow\?ba_token=/);
    expect(await page.locator('#summary').textContent()).to.match(/190/);
    await page.getByRole('button', { name: 'Agree & Subscribe' }).click();
    await page.waitForURL(/\/elements\?.*subscription_id=/);
    await table.getByText('Thank you! Your purchase is complete.').waitFor({ timeout: 40_000 });
    await page.locator('offerkit-usage-meter').getByRole('heading', { name: 'Pro plan' }).waitFor();
    // Back on the page: the interval bought, and no bump for the add-on the account owns now.
    expect(await table.getByRole('radio', { name: 'Yearly' }).isChecked()).to.equal(true);
    await eventually(async () => (await table.getByRole('group', { name: 'Add to your order' }).count()) === 0);
    await shot('42-pricing-completed', '#pricing');

    const account = (await get(`${base}/namespaces/bea`, app.api_key)).body;
    expect(account.plan).to.equal('pro');
    expect(account.addons).to.deep.equal(['priority']);
    const [checkout] = (await get(`${base}/checkouts?offer=launch`, app.api_key)).body.data;
    expect(checkout).to.include({ status: 'completed', interval: 'year', price: 190, ref: 'newsletter' });
  });

  it(
    'pricing table on a stale page: a bump taken off the offer since the page loaded is refused, ' +
      'the table reloads, the next click buys',
    async () => {
      await connectProvider(app);
      const offer = await post(`${base}/offers`, app.api_key, {
        id: 'launch',
        name: 'Launch offer',
        plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }],
        bumps: [{ id: 'support', name: 'Priority support', addon: 'priority', price: 9 }],
      });
      expect(offer.status, offer.text).to.equal(201);
      expect((await post(`${base}/offers/launch/publish`, app.api_key)).status).to.equal(200);
      await page.goto(exampleUrl({ offer: 'launch' }));
      const table = page.locator('offerkit-pricing-table');
      await table.getByRole('checkbox', { name: /Priority support/ }).check();

      // Meanwhile the operator takes the bump off the offer.
      expect((await patch(`${base}/offers/launch`, app.api_key, { bumps: [] })).status).to.equal(200);
      expectedErrors.push(/status of 409 \(Conflict\)/); // Chromium logs the refused checkout
      await table.getByRole('button', { name: 'Choose Pro' }).click();
      const alert = table.getByRole('alert');
      await alert.getByText(/has changed/).waitFor();
      expect(await alert.textContent()).to.equal(
        'This offer has changed since the page was loaded. Please check the prices and choose again.',
      );
      await eventually(async () => (await table.getByRole('checkbox').count()) === 0);
      await shot('43-pricing-stale-bump', '#pricing');
      expect((await get(`${base}/checkouts?offer=launch`, app.api_key)).body.data).to.deep.equal([]);

      // The next click buys what the table shows: the subscription alone, no bump order to approve.
      await table.getByRole('button', { name: 'Choose Pro' }).click();
      await page.waitForURL(/\/checkoutnow\?ba_token=/);
      const [checkout] = (await get(`${base}/checkouts?offer=launch`, app.api_key)).body.data;
      expect(checkout.bumps).to.deep.equal([]);
    },
  );

  it('usage meter and paywall: bars against limits, then a real 402 shows the upgrade offer and its checkout link', async () => {
    await connectBilling(app);
    await createAccount(app, { id: 'cy', plan: 'free' });
    for (let i = 0; i < 85; i++) await post(`${base}/namespaces/cy/usage/api_calls/add`, app.api_key);
    // Chromium logs the 402 answer of the blocked usage call as a console error; that one is the point here.
    expectedErrors.push(/status of 402 \(Payment Required\)/);

    await page.goto(exampleUrl({ account: 'cy', entitlement: 'seats' }));
    const meter = page.locator('offerkit-usage-meter');
    await meter.getByRole('heading', { name: 'Free plan' }).waitFor();
    const calls = meter.getByRole('meter', { name: 'API calls' });
    expect(await calls.getAttribute('aria-valuenow')).to.equal('85');
    expect(await calls.getAttribute('aria-valuemax')).to.equal('100');
    expect(await meter.getByText('85 of 100 used').isVisible()).to.equal(true);
    expect(await meter.getByText('SSO', { exact: false }).count()).to.equal(0); // not on the free plan
    await shot('50-usage-meter', '#usage');

    const paywall = page.locator('offerkit-paywall');
    await page.getByRole('button', { name: 'Use one' }).click();
    await page.getByText('seats: 1').waitFor();
    // The page refreshes the meter after each use.
    const seats = meter.getByRole('meter', { name: 'Seats' });
    await eventually(async () => (await seats.getAttribute('aria-valuenow')) === '1', 10_000);
    await page.getByRole('button', { name: 'Use one' }).click();
    await paywall.getByRole('heading', { name: 'You have reached your Seats limit' }).waitFor();
    const real = await post(`${base}/namespaces/cy/usage/seats/add`, app.public_key);
    expect(real.status).to.equal(402);
    expect(await paywall.getByRole('heading', { level: 3 }).textContent()).to.include(real.body.offer.plan.name);
    const link = paywall.getByRole('link', { name: `Upgrade to ${real.body.offer.plan.name}` });
    expect(await link.getAttribute('href')).to.equal(real.body.offer.checkout_url);
    expect(await paywall.getByText('5 Seats').isVisible()).to.equal(true); // the new limit
    await shot('51-paywall', '#paywall-demo');
    await paywall.getByRole('button', { name: 'Not now' }).click();
    expect(await paywall.getByRole('heading').count()).to.equal(0);

    // What the page's code does, spelled out: the SDK from the bundle throws a LimitReachedError for the 402,
    // and the paywall takes it as it is.
    const thrown = await page.evaluate(
      async ({ appId, key }) => {
        const bundle = '/elements/assets/offerkit-elements.js';
        const sdk = await import(bundle);
        const client = new sdk.PublishableClient({
          baseUrl: (globalThis as any).location.origin,
          appId,
          publishableKey: key,
        });
        try {
          await client.usage.add('cy', 'seats');
          return null;
        } catch (e: any) {
          const shown = (globalThis as any).document.querySelector('offerkit-paywall').show(e);
          return { limitReached: e instanceof sdk.LimitReachedError, status: e.status, shown, offer: e.offer?.plan.id };
        }
      },
      { appId: app.id, key: app.public_key },
    );
    expect(thrown).to.deep.equal({ limitReached: true, status: 402, shown: true, offer: real.body.offer.plan.id });
    await paywall.getByRole('heading', { name: 'You have reached your Seats limit' }).waitFor();
  });
  describe('the example page on example data (the URL `npm start` prints)', () => {
    /** What main.ts passes, on the test servers, with orgs of this test's own (the real ones are global). */
    const options = (): ExampleOptions => {
      const suffix = Math.random().toString(36).slice(2, 10);
      const [[client_id, client_secret]] = Object.entries(PAYPAL_TEST_CREDENTIALS);
      return {
        baseUrl: testEnv().baseUrl,
        adminKey: testEnv().adminKey,
        paypal: { approve: (u) => testEnv().paypal.approve(u), credentials: { client_id, client_secret } },
        logger: testEnv().deps.logger,
        orgs: { demo: `demo-${suffix}`, example: `elements-example-${suffix}` },
      };
    };

    it('fills an app with what the four components show, once across restarts, and the page shows all four', async () => {
      const opts = options();
      const first = await prepareElementsExample(opts);
      expect(first.source).to.equal('example');
      // A restart: the same app, nothing doubled.
      const again = await prepareElementsExample(opts);
      expect(again.appId).to.equal(first.appId);
      const example = (await get(`/orgs/${opts.orgs!.example}/apps`, testEnv().adminKey)).body;
      expect(example.map((a: { id: string }) => a.id)).to.deep.equal([first.appId]);
      const key = example[0].api_key as string;
      expect((await get(`/apps/${first.appId}/offers`, key)).body).to.have.length(1);
      expect((await get(`/apps/${first.appId}/checkouts?status=completed`, key)).body.data).to.have.length(1);

      const url = new URL(again.url);
      expect(url.origin + url.pathname).to.equal(`${testEnv().baseUrl}/elements`);
      expectedErrors.push(/status of 402 \(Payment Required\)/); // the paywall's 402, on purpose
      await page.goto(again.url);

      const table = page.locator('offerkit-pricing-table');
      await table.getByRole('heading', { name: 'Launch offer' }).waitFor();
      expect(await table.getByRole('article').count()).to.equal(2);
      expect(await table.getByRole('article', { name: 'Pro' }).locator('.price').innerText()).to.match(
        /\$9\.00\/month\s+\$12\.00/,
      );
      expect(await table.getByRole('checkbox', { name: /Priority support/ }).isVisible()).to.equal(true);

      const meter = page.locator('offerkit-usage-meter');
      await meter.getByRole('heading', { name: 'Free plan' }).waitFor();
      const exports = meter.getByRole('meter', { name: 'PDF exports' });
      expect(await exports.getAttribute('aria-valuenow')).to.equal('9');
      expect(await exports.getAttribute('aria-valuemax')).to.equal('10');
      expect(await meter.getByRole('meter', { name: 'AI credits' }).getAttribute('aria-valuenow')).to.equal('140');

      const flow = cancelFlow();
      await flow.getByRole('heading', { name: 'Why are you cancelling?' }).waitFor();
      expect(await flow.getByRole('radio').count()).to.equal(4);
      await shot('60-example-data', 'main');

      // The paywall: one export left, then the 402 with the offer, whose link is this page's pricing table.
      await page.getByRole('button', { name: 'Use one' }).click();
      await page.getByText('exports: 10').waitFor();
      await page.getByRole('button', { name: 'Use one' }).click();
      const paywall = page.locator('offerkit-paywall');
      await paywall.getByRole('heading', { name: 'You have reached your PDF exports limit' }).waitFor();
      const upgrade = paywall.getByRole('link', { name: 'Upgrade to Pro' });
      const link = new URL((await upgrade.getAttribute('href'))!);
      expect(link.origin + link.pathname).to.equal(`${testEnv().baseUrl}/elements`);
      expect(Object.fromEntries(link.searchParams)).to.deep.include({
        app: first.appId,
        offer: 'launch',
        plan: 'pro',
        account: 'elements_buyer',
      });
      await shot('61-example-paywall', '#paywall-demo');
      await upgrade.click();
      await table.getByRole('heading', { name: 'Launch offer' }).waitFor();
      expect(await meter.getByRole('meter', { name: 'PDF exports' }).getAttribute('aria-valuenow')).to.equal('10');
    });

    it("uses the demo workspace's app when there is one", async () => {
      const opts = options();
      const seeded = await prepareElementsExample(opts);
      // Stand the example app in for the console's demo workspace (its seed marks its app with an org).
      expect(
        (await post('/orgs', testEnv().adminKey, { id: opts.orgs!.demo, app_ids: [seeded.appId] })).status,
      ).to.equal(201);
      const found = await prepareElementsExample({
        ...opts,
        orgs: { ...opts.orgs!, example: `${opts.orgs!.example}-unused` },
      });
      expect(found).to.deep.include({ appId: seeded.appId, source: 'demo' });
      expect((await get(`/orgs/${opts.orgs!.example}-unused`, testEnv().adminKey)).status).to.equal(404);
    });
  });
});
