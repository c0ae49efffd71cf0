import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
// page.evaluate callbacks run in the page and use its globals as (globalThis as any): tests compile without the DOM.
import { type BrowserContext, type Page } from 'playwright-core';
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
import { openBrowser, picture, type FileBrowser } from '../helpers/browser.js';
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

/** The WCAG contrast ratio of two `rgb(...)` / `rgba(...)` colours (the second opaque). */
function contrast(a: string, b: string): number {
  const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number);
  const lum = (c: string) => {
    const [r, g, bl] = rgb(c).map((v) => {
      const s = v / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}

describe('drop-in components in a real browser (headless Chromium)', function () {
  this.timeout(180_000);
  let browser: FileBrowser;
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
    // "Small" as the docs state it (packages/elements/README.md, checked against the build in elements-returns.test.ts):
    // a guard, not a target. Raised from 27,000 for the quote/confirm step (issue 40) and the SDK's table of the
    // round's operations (credits, the stream, the test clock); to 31,000 when base.ts and pricing-table.ts were split
    // by capability (issue 41: the theme, the words and the table's styles in files of their own), which left it 23
    // bytes under the old guard before and 36 over after.
    expect(built.gzip, 'the bundle, gzipped').to.be.below(31_000);
    fs.mkdirSync(SHOTS, { recursive: true });
    browser = await openBrowser();
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
      await picture(page, { path: path.join(SHOTS, `${name}${suffix}-page.png`), fullPage: true });
      if (section) await picture(page.locator(section), { path: path.join(SHOTS, `${name}${suffix}.png`) });
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

    // As the browser gets it: compressed, with an ETag to revalidate against.
    const bundle = page.waitForResponse((r) => r.url().endsWith('/elements/assets/offerkit-elements.js'));
    await page.goto(`${testEnv().baseUrl}/elements`);
    const got = await bundle;
    expect(got.status()).to.equal(200);
    expect(await got.headerValue('content-encoding')).to.equal('br');
    expect(await got.headerValue('etag')).to.match(/^"[0-9a-f]{32}"$/);
    expect(await got.headerValue('cache-control')).to.equal('public, max-age=0, must-revalidate');
    // A page on another origin reads what it needs of the API's answers (CORS).
    const cors = await fetch(`${testEnv().baseUrl}/health`, { headers: { Origin: 'https://shop.example' } });
    const exposed = (cors.headers.get('access-control-expose-headers') ?? '').toLowerCase().split(/\s*,\s*/);
    expect(exposed).to.include.members(['retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']);
    expect(exposed).to.include.members(['idempotent-replayed', 'x-request-id']);
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
      await page.waitForURL((u) => u.pathname.endsWith('/elements'));
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
      const meter = page.locator('offerkit-usage-meter');
      await meter.getByRole('heading', { name: 'Pro plan' }).waitFor();
      await flow.getByRole('button', { name: 'Cancel subscription' }).focus();
      await page.keyboard.press('Enter');
      await flow.getByRole('heading', { name: 'Your subscription is cancelled' }).waitFor();
      // The outcome reaches every component of the account on the page, without a reload.
      await meter.getByRole('heading', { name: 'Free plan' }).waitFor();
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
    await page.waitForURL((u) => u.pathname.endsWith('/elements'));
    await table.getByText('Thank you! Your purchase is complete.').waitFor({ timeout: 40_000 });
    expect(
      ['subscription_id', 'ba_token', 'token'].filter((k) => new URL(page.url()).searchParams.has(k)),
      'the return taken, the address bar drops what the provider added',
    ).to.deep.equal([]);
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

  it(
    'one account on one page: "Current plan", "Switch" through the change route (paywall and table), the pending ' +
      'downgrade, and every component showing the new state without a reload',
    async () => {
      await connectProvider(app);
      const offer = await post(`${base}/offers`, app.api_key, {
        id: 'launch',
        name: 'Launch',
        plans: [
          { plan: 'pro', prices: [{ interval: 'month', amount: 19 }] },
          { plan: 'scale', prices: [{ interval: 'month', amount: 99 }] },
        ],
      });
      expect(offer.status, offer.text).to.equal(201);
      expect((await post(`${base}/offers/launch/publish`, app.api_key)).status).to.equal(200);
      await purchase(app, 'ada'); // Pro at $19/month through `launch`
      for (let i = 0; i < 5; i++) await post(`${base}/namespaces/ada/usage/seats/add`, app.api_key); // 5 of 5
      const token = await tokenFor('ada');
      const sub = async () => (await get(`${base}/namespaces/ada/subscription`, app.api_key)).body;
      const first = await sub();
      expectedErrors.push(/status of 402 \(Payment Required\)/); // the blocked usage call

      // The example page shows the cancel flow for the token too: the app's flow, so it has one to show.
      expect((await post(`${base}/cancel-flows`, app.api_key, { status: 'active', steps: flowSteps })).status).to.equal(
        201,
      );
      // What the host page hears: each component says when it shows a new state of the account.
      await page.addInitScript(() => {
        const w = globalThis as any;
        w.updates = [];
        w.document.addEventListener('offerkit-account-updated', (e: any) =>
          w.updates.push({ from: e.target.localName, plan: e.detail.access.plan.id }),
        );
      });
      await page.goto(exampleUrl({ account: 'ada', account_token: token, offer: 'launch', entitlement: 'seats' }));
      const table = page.locator('offerkit-pricing-table');
      const meter = page.locator('offerkit-usage-meter');
      const paywall = page.locator('offerkit-paywall');
      const pro = table.getByRole('article', { name: /Pro/ });
      const scale = table.getByRole('article', { name: /Scale/ });
      await pro.getByText('Current plan', { exact: true }).first().waitFor();
      expect(await pro.getByRole('button', { name: 'Current plan' }).isDisabled()).to.equal(true);
      expect(await scale.getByRole('button', { name: 'Switch to Scale' }).isEnabled()).to.equal(true);
      expect(await table.getByRole('button', { name: /Choose/ }).count(), 'no second purchase offered').to.equal(0);
      // What each costs this buyer: the current plan what the subscription bills, another its regular price.
      expect(await pro.locator('.price').innerText()).to.equal('$19.00/month');
      await meter.getByRole('heading', { name: 'Pro plan' }).waitFor();
      await shot('44-pricing-current-plan', '#pricing');

      // The sixth seat: a 402; the paywall knows the plan and offers a switch, not a second subscription.
      await page.getByRole('button', { name: 'Use one' }).click();
      await paywall.getByRole('heading', { name: 'You have reached your Seats limit' }).waitFor();
      const real = await post(`${base}/namespaces/ada/usage/seats/add`, app.public_key);
      expect(real.status).to.equal(402);
      expect(real.body.offer.plan.id).to.equal('scale');
      expect(await paywall.getByText('Current plan: Pro').isVisible()).to.equal(true);
      expect(await paywall.getByRole('link').count(), 'no checkout link for a subscribed account').to.equal(0);
      await shot('52-paywall-switch', '#paywall-demo');

      // Switch from the paywall: first the quote (what is charged today and from when), confirmed by the buyer, then
      // the prorated difference's order (exactly the quoted amount), then the revision, at the stand-in.
      await paywall.getByRole('button', { name: 'Switch to Scale' }).click();
      const summary = paywall.locator('[part="confirm-summary"]');
      await summary.waitFor();
      expect(await summary.innerText()).to.match(
        /^\$\d+\.\d\d today for the rest of this period, then \$99\.00\/month\.$/,
      );
      const quoted = Number((await summary.innerText()).match(/^\$(\d+\.\d\d)/)![1]);
      expect(page.url(), 'nothing asked of the provider before the confirm').to.not.match(/checkoutnow/);
      await shot('53-paywall-confirm', '#paywall-demo');
      await paywall.getByRole('button', { name: `Pay $${quoted.toFixed(2)} and switch` }).click();
      await page.waitForURL(/\/checkoutnow\?token=/);
      const orderId = new URL(page.url()).searchParams.get('token')!;
      expect(
        Number(testEnv().paypal.order(orderId)?.purchase_units[0].amount.value),
        'the quote is what is charged',
      ).to.equal(quoted);
      await page.getByRole('button', { name: /Agree/ }).click();
      await page.waitForURL(/\/checkoutnow\?ba_token=/);
      await page.getByRole('button', { name: 'Agree & Subscribe' }).click();
      await page.waitForURL((u) => u.pathname.endsWith('/elements'));
      await paywall.getByText('Your plan is now Scale.').waitFor({ timeout: 40_000 });
      await scale.getByRole('button', { name: 'Current plan' }).waitFor();
      await meter.getByRole('heading', { name: 'Scale plan' }).waitFor();
      expect(await pro.getByRole('button', { name: 'Switch to Pro' }).isEnabled()).to.equal(true);
      expect(await pro.locator('.price').innerText(), 'a change bills the regular price').to.equal('$29.00/month');
      await shot('45-pricing-switched', '#pricing');
      const upgraded = await sub();
      expect(upgraded, 'the same subscription, revised').to.deep.include({ id: first.id, plan: 'scale', price: 99 });
      expect((await get(`${base}/checkouts`, app.api_key)).body.data, 'no second checkout').to.have.length(1);

      // Back down to Pro from the table: at the renewal, so Scale stays current and the change is shown. The confirm
      // step says nothing is charged today, and from when.
      await pro.getByRole('button', { name: 'Switch to Pro' }).click();
      const confirm = pro.locator('[part="confirm-summary"]');
      await confirm.waitFor();
      expect(await confirm.innerText()).to.match(
        /^Nothing today\. Pro and \$29\.00\/month from .+; your current plan stays until then\.$/,
      );
      await shot('47-pricing-confirm-downgrade', '#pricing');
      await pro.getByRole('button', { name: /^Switch on / }).click();
      await page.waitForURL(/\/checkoutnow\?ba_token=/);
      await page.getByRole('button', { name: 'Agree & Subscribe' }).click();
      await page.waitForURL((u) => u.pathname.endsWith('/elements'));
      await table.getByText('Your plan change is scheduled.').waitFor({ timeout: 40_000 });
      const scheduled = await sub();
      expect(scheduled.pending_change).to.deep.include({ plan: 'pro', effective: 'renewal' });
      const when = await page.evaluate(
        (iso) => new Date(iso).toLocaleDateString(undefined, { year: 'numeric', month: 'long', day: 'numeric' }),
        scheduled.renews_at,
      );
      expect(await table.locator('.pending').textContent()).to.equal(`Changes to Pro on ${when}`);
      expect(await scale.getByRole('button', { name: 'Current plan' }).isDisabled()).to.equal(true);
      expect(await pro.getByRole('button', { name: 'Switch to Pro' }).isDisabled(), 'one change at a time').to.equal(
        true,
      );
      await shot('46-pricing-pending-downgrade', '#pricing');

      // The renewal moves the account to Pro at the provider; the page is not reloaded. One use of a seat (now over
      // Pro's limit again) refreshes the account once, and every component shows it.
      await page.evaluate(() => ((globalThis as any).updates.length = 0));
      await testEnv().paypal.renew(scheduled.id);
      await eventually(async () => ((await sub()).plan === 'pro' ? true : undefined));
      await page.getByRole('button', { name: 'Use one' }).click();
      await paywall.getByRole('heading', { name: 'You have reached your Seats limit' }).waitFor();
      await meter.getByRole('heading', { name: 'Pro plan' }).waitFor();
      await pro.getByRole('button', { name: 'Current plan' }).waitFor();
      expect(await table.locator('.pending').count(), 'the change happened').to.equal(0);
      expect(await paywall.getByText('Current plan: Pro').isVisible()).to.equal(true);
      const updates = await page.evaluate(() => (globalThis as any).updates as { from: string; plan: string }[]);
      const heard = new Set(updates.filter((u) => u.plan === 'pro').map((u) => u.from));
      // (The cancel flow shows the token's account, the same one, so it hears it too.)
      expect([...heard].sort()).to.deep.equal([
        'offerkit-cancel-flow',
        'offerkit-paywall',
        'offerkit-pricing-table',
        'offerkit-usage-meter',
      ]);
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
    // The page's client (the bundle's) tells the meter after each use; the page does not call meter.refresh().
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
  describe('one product on one page: shared state, loading and error states, events, return, focus, numbers', () => {
    /** Every `offerkit-*` event that reaches the document, as the host page hears it. */
    const recordEvents = () =>
      page.addInitScript(() => {
        const w = globalThis as any;
        w.heard = [];
        w.sessionStorage.setItem('loads', String(Number(w.sessionStorage.getItem('loads') ?? 0) + 1));
        for (const type of [
          'offerkit-account-updated',
          'offerkit-loaded',
          'offerkit-error',
          'offerkit-shown',
          'offerkit-resolved',
          'offerkit-checkout',
          'offerkit-checkout-completed',
        ])
          w.document.addEventListener(type, (e: any) =>
            w.heard.push({
              type,
              from: e.target.localName,
              bubbles: e.bubbles,
              composed: e.composed,
              plan: e.detail?.access?.plan?.id ?? null,
              seats: e.detail?.access?.entitlements?.find((x: any) => x.id === 'seats')?.usage ?? null,
              message: e.detail?.message ?? null,
              status: e.detail?.status ?? null,
              name: e.detail?.error?.name ?? null,
            }),
          );
      });
    type Heard = {
      type: string;
      from: string;
      bubbles: boolean;
      composed: boolean;
      plan: string | null;
      seats: number | null;
      message: string | null;
      status: number | null;
      name: string | null;
    };
    const heard = () => page.evaluate(() => (globalThis as any).heard as Heard[]);
    /** Offer `launch`: Pro at $19 a month (its regular price is $29). */
    const publishLaunch = async () => {
      const offer = await post(`${base}/offers`, app.api_key, {
        id: 'launch',
        name: 'Launch',
        plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }],
      });
      expect(offer.status, offer.text).to.equal(201);
      expect((await post(`${base}/offers/launch/publish`, app.api_key)).status).to.equal(200);
    };

    it(
      "a 402's upgrade bought in the paywall returns to the page that started it, and the meter shows the new " +
        'plan without a reload; usage through the bundle client updates meter and paywall',
      async () => {
        await connectProvider(app); // no app checkout_url: the 402's link is the service's own
        await createAccount(app, { id: 'dee', plan: 'free' });
        expectedErrors.push(/status of 402 \(Payment Required\)/);
        await recordEvents();
        const start = exampleUrl({ account: 'dee', entitlement: 'seats' });
        await page.goto(start);
        const meter = page.locator('offerkit-usage-meter');
        const paywall = page.locator('offerkit-paywall');
        await meter.getByRole('heading', { name: 'Free plan' }).waitFor();

        // One seat through the page's client (the bundle's PublishableClient): the meter shows it, nobody called
        // meter.refresh(); the paywall, bound to the same account, heard the same new state.
        await page.evaluate(() => ((globalThis as any).heard.length = 0));
        await page.getByRole('button', { name: 'Use one' }).click();
        await page.getByText('seats: 1').waitFor();
        const seats = meter.getByRole('meter', { name: 'Seats' });
        await eventually(async () => (await seats.getAttribute('aria-valuenow')) === '1', 10_000);
        const afterUse = await heard();
        const updatedBy = new Set(
          afterUse.filter((h) => h.type === 'offerkit-account-updated' && h.seats === 1).map((h) => h.from),
        );
        expect([...updatedBy].sort()).to.deep.equal([
          'offerkit-paywall',
          'offerkit-pricing-table',
          'offerkit-usage-meter',
        ]);
        expect(
          afterUse.every((h) => h.bubbles && h.composed),
          'bubbling, composed events',
        ).to.equal(true);

        // The second seat is over the free limit: the paywall's upgrade is a checkout of its own.
        await page.getByRole('button', { name: 'Use one' }).click();
        await paywall.getByRole('heading', { name: 'You have reached your Seats limit' }).waitFor();
        expect((await heard()).some((h) => h.type === 'offerkit-shown' && h.from === 'offerkit-paywall')).to.equal(
          true,
        );
        const upgrade = paywall.getByRole('button', { name: 'Upgrade to Pro' });
        expect(await paywall.getByRole('link').count(), 'not the link to the service page').to.equal(0);
        await upgrade.click();
        await page.waitForURL(/\/checkoutnow\?ba_token=/);
        await page.getByRole('button', { name: 'Agree & Subscribe' }).click();
        await page.waitForURL((u) => u.pathname.endsWith('/elements'));
        await paywall
          .getByText(/Thank you! Your purchase is complete\. Your plan is now Pro\./)
          .waitFor({ timeout: 40_000 });
        // Back on the page that started it; the return taken, the address bar is the page's own again, without what
        // the provider added (nothing for a reload to replay).
        expect(page.url()).to.equal(start);
        await meter.getByRole('heading', { name: 'Pro plan' }).waitFor();
        expect(await meter.getByText('1 of 5 used').isVisible()).to.equal(true);
        // The pricing table on the page too: Pro is the account's plan now.
        const table = page.locator('offerkit-pricing-table');
        await table.getByRole('article', { name: /Pro/ }).getByRole('button', { name: 'Current plan' }).waitFor();
        await shot('70-paywall-bought', '#paywall-demo');
        expect(
          await page.evaluate(() => (globalThis as any).sessionStorage.getItem('loads')),
          'the first load and the return, no reload',
        ).to.equal('2');
        const events = await heard();
        expect(events.filter((h) => h.type === 'offerkit-checkout-completed').map((h) => h.from)).to.deep.equal([
          'offerkit-paywall',
        ]);
        expect(
          events.some(
            (h) => h.type === 'offerkit-account-updated' && h.from === 'offerkit-usage-meter' && h.plan === 'pro',
          ),
        ).to.equal(true);
        expect((await get(`${base}/namespaces/dee`, app.api_key)).body.plan).to.equal('pro');
        const checkouts = (await get(`${base}/checkouts`, app.api_key)).body.data as { status: string }[];
        expect(checkouts.filter((c) => c.status === 'completed')).to.have.length(1);
      },
    );

    it('a wrong publishable key: each component says so in words, and offerkit-error names the error', async () => {
      await connectProvider(app);
      await publishLaunch();
      expectedErrors.push(/status of 401 \(Unauthorized\)/);
      await recordEvents();
      await page.goto(
        `${testEnv().baseUrl}/elements?${new URLSearchParams({ app: app.id, key: 'pub_not_this_one', account: 'eve' })}`,
      );
      const words =
        "This page's publishable key was not accepted: check the publishable-key (pub_...) and app-id attributes.";
      const table = page.locator('offerkit-pricing-table');
      const meter = page.locator('offerkit-usage-meter');
      await table.getByRole('alert').getByText(words).waitFor();
      await meter.getByRole('alert').getByText(words).waitFor();
      expect(await page.getByText('Unauthorized', { exact: true }).count()).to.equal(0);
      await shot('71-wrong-key', 'main');
      const errors = (await heard()).filter((h) => h.type === 'offerkit-error');
      expect(new Set(errors.map((e) => e.from))).to.include.members(['offerkit-pricing-table', 'offerkit-usage-meter']);
      for (const e of errors) {
        expect(e).to.include({
          status: 401,
          name: 'AuthenticationError',
          message: words,
          bubbles: true,
          composed: true,
        });
      }
    });

    it('loading: the table and the meter say they are loading until the service answers', async () => {
      await connectProvider(app);
      await publishLaunch();
      await createAccount(app, { id: 'fay', plan: 'free' });
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      // Real answers, held back until the loading state has been seen.
      await page.route(/\/offers\/launch\/public|\/namespaces\/fay\/plan/, async (route) => {
        await held;
        await route.continue();
      });
      await page.goto(exampleUrl({ account: 'fay' }));
      const table = page.locator('offerkit-pricing-table');
      const meter = page.locator('offerkit-usage-meter');
      await table.getByRole('status').getByText('Loading prices…').waitFor();
      await meter.getByRole('status').getByText('Loading usage…').waitFor();
      expect(await table.locator('section').getAttribute('aria-busy')).to.equal('true');
      await shot('72-loading', 'main');
      release();
      await table.getByRole('article', { name: 'Pro' }).waitFor();
      await meter.getByRole('heading', { name: 'Free plan' }).waitFor();
      expect(await table.getByText('Loading prices…').count()).to.equal(0);
      expect(await table.locator('section').getAttribute('aria-busy')).to.equal('false');
    });

    it('focus ring at 3:1 or better against white and the component background; numbers in the page language or locale', async () => {
      await connectProvider(app);
      await publishLaunch();
      await createAccount(app, { id: 'gus', plan: 'free' });
      await page.goto(exampleUrl({ account: 'gus' }));
      const table = page.locator('offerkit-pricing-table');
      const pro = table.getByRole('article', { name: 'Pro' });
      await pro.waitFor();
      // Keyboard focus on the table's first plan button.
      const cta = pro.getByRole('button', { name: 'Choose Pro' });
      await cta.focus();
      await page.keyboard.press('Shift+Tab');
      await page.keyboard.press('Tab');
      const ring = await cta.evaluate((b: any) => {
        const g = (globalThis as any).getComputedStyle;
        const st = g(b);
        const card = b.closest('.card');
        return {
          focused: b.matches(':focus-visible'),
          style: st.outlineStyle,
          width: parseFloat(st.outlineWidth),
          color: st.outlineColor,
          card: g(card).backgroundColor,
          host: g(b.getRootNode().host.parentElement).backgroundColor,
        };
      });
      expect(ring.focused).to.equal(true);
      expect(ring.style).to.equal('solid');
      expect(ring.width).to.be.at.least(2);
      expect(contrast(ring.color, 'rgb(255, 255, 255)'), `${ring.color} on white`).to.be.at.least(3);
      expect(contrast(ring.color, ring.card), `${ring.color} on ${ring.card}`).to.be.at.least(3);
      expect(contrast(ring.color, ring.host), `${ring.color} on the page ${ring.host}`).to.be.at.least(3);
      await shot('73-focus-ring', '#pricing');

      // Numbers one way: the page's language (en), then the locale attribute (de-DE) on the same page.
      expect(await pro.locator('.price').innerText()).to.match(/^\$19\.00\/month/);
      expect(await pro.getByRole('listitem').first().innerText()).to.match(/^1,000 API calls/);
      await page.evaluate(() => {
        for (const el of (globalThis as any).document.querySelectorAll('offerkit-pricing-table, offerkit-usage-meter'))
          el.setAttribute('locale', 'de-DE');
      });
      await eventually(async () => /^19,00\s\$\/month/.test(await pro.locator('.price').innerText()), 5000);
      expect(await pro.getByRole('listitem').first().innerText()).to.match(/^1\.000 API calls/);
    });
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
