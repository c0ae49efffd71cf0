// The console's pages beyond test/browser/console.test.ts: where the owner lands after setup, the app home's
// getting-started checklist and its snippets (pasted into a page of their own and run with tsx), links into the
// Temporal UI only for workflows that exist, and the pages' create, edit and delete on a 390 px phone.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import { build as buildElements } from '../../packages/elements/build.js';
import { type BrowserContext, type Page } from 'playwright-core';
import { addAppToWorkspace, createWorkspace } from '../../src/people/workspaces.js';
import { closePeople, people } from '../../src/people/better-auth.js';
import { openBrowser, picture, type FileBrowser } from '../helpers/browser.js';
import { choose, ensureConsoleBuilt, expected, shoot, watch } from '../helpers/console.js';
import {
  billingApp,
  connectBilling,
  createTestApp,
  publishOffer,
  seedCatalog,
  type TestApp,
} from '../helpers/factories.js';
import { call, get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const PASSWORD = 'a long enough password';
let n = 0;

async function signIn(email: string): Promise<string> {
  const res = await call('POST', '/api/auth/sign-in/email', {
    body: { email, password: PASSWORD },
    headers: { Origin: testEnv().baseUrl },
  });
  expect(res.status, res.text).to.equal(200);
  return res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
}

/** The people and workspaces this file makes, removed after it so a later file still sees a service without an owner. */
const made = { users: [] as string[], orgs: [] as string[] };

/** An owner with a workspace of their own (no app yet), signed in: the session cookie for a browser context. */
async function owner() {
  const p = await people(testEnv().deps);
  const id = `pages_${++n}_${Date.now()}`;
  const email = `owner-${id}@example.com`;
  const { user } = await p.auth.api.signUpEmail({ body: { name: `Owner ${n}`, email, password: PASSWORD } });
  made.users.push(user.id);
  await createWorkspace(p, { id, name: `Pages ${n}`, ownerId: user.id });
  made.orgs.push(id);
  return { id, userId: user.id, cookie: await signIn(email) };
}

describe('console pages: landing, getting started, Temporal links, pages at 390 px (headless Chromium)', function () {
  this.timeout(300_000);
  let browser: FileBrowser;
  let ctx: BrowserContext;
  let page: Page;
  let problems: string[];
  const allowed: RegExp[] = [];
  let ws: Awaited<ReturnType<typeof owner>>;
  let inFlight = 0;
  const url = (p: string) => `${testEnv().baseUrl}/console${p}`;

  before(async function () {
    this.timeout(15 * 60_000);
    ensureConsoleBuilt();
    await buildElements(); // the components' bundle the pasted snippet loads from the service
    browser = await openBrowser();
    ws = await owner();
    ctx = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    await ctx.addCookies(
      ws.cookie.split('; ').map((c) => {
        const i = c.indexOf('=');
        return { name: c.slice(0, i), value: c.slice(i + 1), url: testEnv().baseUrl };
      }),
    );
    page = await ctx.newPage();
    problems = watch(page);
    page.on('request', () => inFlight++);
    page.on('requestfinished', () => inFlight--);
    page.on('requestfailed', () => inFlight--);
  });
  after(async () => {
    delete testEnv().deps.config.TEMPORAL_UI_URL;
    await browser?.close();
    const p = await people(testEnv().deps);
    await p.pool.query(`delete from workspace_invitations where org_id = any($1)`, [made.orgs]);
    await p.pool.query(`delete from workspace_members where org_id = any($1)`, [made.orgs]);
    await p.pool.query(`delete from orgs where id = any($1)`, [made.orgs]);
    for (const table of ['people_sessions', 'people_credentials'])
      await p.pool.query(`delete from ${table} where "userId" = any($1)`, [made.users]);
    await p.pool.query(`delete from people_users where id = any($1)`, [made.users]);
    await closePeople(testEnv().deps);
  });
  /** The page's reads are done (a navigation now aborts none). */
  const settled = () => eventually(async () => inFlight === 0, 10_000).catch(() => undefined);
  afterEach(async function () {
    // A test ends when its page's reads are done: the next test's navigation must not abort them.
    await settled();
    if (this.currentTest?.state === 'failed')
      await page.screenshot({ path: `.test-data/console/failed-pages-${this.currentTest.title.slice(0, 40)}.png` });
    // A read cancelled because the test moved on (a navigation under load) is not a problem a person sees.
    const unexpected = problems.filter((p) => !allowed.some((a) => a.test(p)) && !/ net::ERR_ABORTED$/.test(p));
    problems.length = 0;
    allowed.length = 0;
    if (this.currentTest?.state === 'passed') expect(unexpected, unexpected.join('\n')).to.deep.equal([]);
  });

  async function ownApp(): Promise<TestApp> {
    const app = await createTestApp();
    await addAppToWorkspace(await people(testEnv().deps), ws.id, app.id);
    return app;
  }

  it("after setup the owner lands on their own workspace (its first app, or creating one), never on the demo's app", async () => {
    // A read-only demo workspace with an app: the person sees it, but does not land on it.
    const pool = (await people(testEnv().deps)).pool;
    const hadDemo = (await pool.query(`select 1 from orgs where id = 'demo'`)).rowCount! > 0;
    const demoApp = await createTestApp('Demo app');
    if (!hadDemo) await post('/orgs', testEnv().adminKey, { id: 'demo', name: 'Demo', app_ids: [demoApp.id] });
    try {
      await page.goto(url('/'));
      await page.getByRole('heading', { name: /^Welcome, Owner/ }).waitFor();
      expect(new URL(page.url()).pathname).to.equal('/console/');
      const me: any = await page.evaluate(() => fetch('/console/api/me').then((r) => r.json()));
      expect(me.workspaces.some((w: { demo: boolean; apps: unknown[] }) => w.demo && w.apps.length)).to.equal(true);
      // The app picker does not preselect the demo's app (the demo stays pickable), and no app's sections lead into
      // the demo implicitly.
      const picker = page.getByRole('textbox', { name: 'App' }).or(page.getByRole('combobox', { name: 'App' }));
      expect(await picker.first().inputValue()).to.equal('');
      expect(await picker.first().getAttribute('placeholder')).to.equal('Pick an app');
      const nav = page.getByRole('navigation');
      expect(await nav.getByRole('link', { name: 'Catalog' }).count()).to.equal(0);
      await shoot(page, 'welcome-no-app');
      const demo = me.workspaces.find((w: { demo: boolean; apps: unknown[] }) => w.demo && w.apps.length).apps[0];
      await choose(page, picker.first(), { name: demo.name });
      await page.waitForURL(`**/console/apps/${demo.id}`);
      await nav.getByRole('link', { name: 'Catalog' }).waitFor();

      // Creating the first app lands on its home, the getting-started checklist, not on its catalog.
      await page.goto(url('/'));
      await page.getByRole('link', { name: 'Create your first app' }).click();
      await page.getByLabel(/^App name/).fill('First app');
      await page.getByRole('button', { name: 'Create app' }).click();
      await page.waitForURL(/\/console\/apps\/[^/]+$/);
      const created = new URL(page.url()).pathname.split('/').pop()!;
      await page.getByLabel('Getting started', { exact: true }).waitFor();
      await page.getByRole('heading', { name: 'First app' }).waitFor();
      // The picker names it once the session's list of apps is read again (the page can show the app first).
      let picked = '';
      await eventually(async () => (picked = await picker.first().inputValue()) === 'First app').catch(() =>
        expect(picked, 'the app picker').to.equal('First app'),
      );

      await page.goto(url('/'));
      await page.waitForURL(`**/console/apps/${created}`);
      await page.getByRole('heading', { name: 'First app' }).waitFor();
    } finally {
      if (!hadDemo) await call('DELETE', '/orgs/demo', { token: testEnv().adminKey });
    }
  });

  it('the getting-started checklist follows the real state, and its snippets work when pasted', async () => {
    const app = await ownApp();
    const step = (name: string) => page.getByRole('listitem', { name: new RegExp(`^${name}: `) });
    const state = async () =>
      Promise.all(
        [
          'Build the catalog',
          'Connect payments',
          'Publish an offer',
          'Embed the components',
          'Receive the first event',
        ].map(async (s) => (await step(s).getAttribute('aria-label'))!.split(': ')[1]),
      );
    await page.goto(url(`/apps/${app.id}`));
    await page.getByText('0 of 5 done').waitFor();
    expect(await state()).to.deep.equal(['to do', 'to do', 'to do', 'to do', 'to do']);
    // Each step links to where it is done.
    const hrefs = await page
      .getByLabel('Getting started', { exact: true })
      .getByRole('list')
      .getByRole('link')
      .evaluateAll((as) => as.map((a) => `${a.textContent} ${a.getAttribute('href')}`));
    const at = `/console/apps/${app.id}`;
    expect(hrefs).to.deep.equal([
      `Add plans ${at}/catalog`,
      `Connect ${at}/payments`,
      `Create one ${at}/offers`,
      'See the snippets #getting-started-snippets',
      `See usage ${at}/analytics`,
    ]);
    // Named apart from the navigation: one "Offers" link on the page.
    expect(await page.getByRole('link', { name: 'Offers' }).count()).to.equal(1);

    await seedCatalog(app);
    await connectBilling(app);
    await page.getByRole('button', { name: 'Check again' }).click();
    await page.getByText('2 of 5 done').waitFor();
    await publishOffer(app, {
      id: 'launch',
      name: 'Launch',
      plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }],
    });
    await page.getByRole('button', { name: 'Check again' }).click();
    await page.getByText('3 of 5 done').waitFor();
    expect(await state()).to.deep.equal(['done', 'done', 'done', 'to do', 'to do']);
    await shoot(page, 'getting-started');

    // The components snippet, pasted into a page served from another origin, shows the pricing table.
    const snippet = (await page.getByTestId('Components snippet').textContent())!;
    expect(snippet).to.include(app.public_key).and.include(`offer="launch"`).and.not.include(app.api_key);
    const site = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><html><body><h1>My product</h1>\n${snippet}\n</body></html>`);
    });
    await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
    try {
      const customer = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const customerProblems = watch(customer);
      await customer.goto(`http://127.0.0.1:${(site.address() as net.AddressInfo).port}/`);
      const table = customer.locator('offerkit-pricing-table');
      await table.getByText('Pro', { exact: true }).waitFor({ timeout: 20_000 });
      await table.getByText(/19/).first().waitFor();
      await picture(customer, { path: '.test-data/console/pasted-components.png', fullPage: true });
      // The usage meter's placeholder account is unknown: its 404 is the one failed request.
      expect(customerProblems.filter((p) => !/^404 from GET .*YOUR_CUSTOMER_ID/.test(p))).to.deep.equal([]);
      await customer.close();
    } finally {
      site.close();
    }
    const after = (await get(`/apps/${app.id}`, app.api_key)).body;
    expect(after.publishable_first_used_at).to.be.a('string');
    await page.getByRole('button', { name: 'Check again' }).click();
    await page.getByText('4 of 5 done').waitFor();

    // The SDK snippet, run as written with tsx, the secret key from the environment.
    const sdk = (await page.getByTestId('SDK snippet').textContent())!;
    expect(sdk).to.include('process.env.OFFERKIT_SECRET_KEY').and.not.include(app.api_key);
    const dir = path.resolve('.test-data/snippets');
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `sdk-${app.id}.mts`);
    fs.writeFileSync(file, sdk);
    // Asynchronously: the API answering the snippet runs in this process.
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      execFile(
        path.resolve('node_modules/.bin/tsx'),
        [file],
        { env: { ...process.env, OFFERKIT_SECRET_KEY: app.api_key }, timeout: 60_000 },
        (err, stdout, stderr) => resolve({ code: err ? ((err.code as number) ?? 1) : 0, stdout, stderr }),
      ),
    );
    fs.rmSync(file);
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout.trim()).to.equal('Plans: free, pro, scale, internal');

    // The first usage: the last step.
    await post(`/apps/${app.id}/namespaces`, app.api_key, { id: 'first', plan: 'free' });
    await post(`/apps/${app.id}/namespaces/first/usage/api_calls/add`, app.api_key, {});
    await page.getByRole('button', { name: 'Check again' }).click();
    await page.getByText('All done').waitFor();
    expect(await state()).to.deep.equal(['done', 'done', 'done', 'done', 'done']);
  });

  it("links into the Temporal UI only for the workflows a record names: the account's actor, a checkout's, a reservation's", async () => {
    testEnv().deps.config.TEMPORAL_UI_URL = 'http://temporal-ui.test';
    const { app, base } = await billingApp({ accounts: [{ id: 'ada', plan: 'free' }], purchases: ['ada'] });
    await addAppToWorkspace(await people(testEnv().deps), ws.id, app.id);
    await post(`${base}/incentives`, app.api_key, { id: 'promo', name: 'Promo', entitlements: [] });
    await post(`${base}/namespaces`, app.api_key, { id: 'plain', plan: 'free' });
    const ends = new Date(Date.now() + 86_400_000).toISOString();
    await post(`${base}/namespaces`, app.api_key, {
      id: 'timed',
      plan: 'free',
      incentive: 'promo',
      incentive_expires_at: ends,
    });
    const wf = (id: string) => `http://temporal-ui.test/namespaces/default/workflows/${encodeURIComponent(id)}`;

    await page.goto(url(`/apps/${app.id}/accounts/plain`));
    // The search for the account's workflows names its app too: account ids are unique only within an app.
    const search = page.getByRole('link', { name: "Search this account's workflows in Temporal" });
    expect(await search.getAttribute('href')).to.equal(
      `http://temporal-ui.test/namespaces/default/workflows?query=${encodeURIComponent(`AppId="${app.id}" AND AccountId="plain"`)}`,
    );
    expect(await page.getByRole('link', { name: /^Incentive expiry workflow/ }).count()).to.equal(0);
    expect(await page.getByRole('link', { name: /^Pause workflow/ }).count()).to.equal(0);
    await page.getByText('No usage reserved for this account.').waitFor();
    expect(await page.getByRole('link', { name: /^Expiry workflow/ }).count()).to.equal(0);

    // A reservation names its expiry workflow, listed on the account page.
    const held = await post(`${base}/namespaces/plain/usage/api_calls/reservations`, app.api_key, { amount: 3 });
    expect(held.status, held.text).to.equal(201);
    await page.reload();
    const expiry = page.getByRole('link', { name: /^Expiry workflow/ });
    expect(await expiry.getAttribute('href')).to.equal(wf(held.body.workflow_id));
    expect(held.body.workflow_id).to.equal(`reservation-expiry/${app.id}/${held.body.id}`);
    await shoot(page, 'account-reservation');

    // A timed incentive is ended by the account's actor, which the incentive links to.
    await page.goto(url(`/apps/${app.id}/accounts/timed`));
    const incentive = page.getByRole('link', { name: /^Incentive expiry workflow/ });
    expect(await incentive.getAttribute('href')).to.equal(wf(`account/${app.id}/timed`));
    expect(await page.getByRole('link', { name: /^Account actor workflow/ }).count(), 'no subscription').to.equal(0);

    // Ada's checkout has its workflow; her pause is her actor's, linked from the list and her page.
    await page.goto(url(`/apps/${app.id}/billing`));
    const chk = (await get(`${base}/checkouts`, app.api_key)).body.data[0];
    const checkoutLink = page.getByRole('link', { name: `Workflow: checkout/${chk.id}` });
    expect(await checkoutLink.getAttribute('href')).to.equal(wf(`checkout/${chk.id}`));
    expect(await page.getByRole('link', { name: /^Pause workflow/ }).count()).to.equal(0);
    await post(`${base}/namespaces/ada/subscription/pause`, app.api_key, { months: 1 });
    await page.reload();
    const pause = page.getByRole('link', { name: /^Pause workflow/ }).first();
    expect(await pause.getAttribute('href')).to.equal(wf(`account/${app.id}/ada`));
    await page.goto(url(`/apps/${app.id}/accounts/ada`));
    expect(await page.getByRole('link', { name: /^Account actor workflow/ }).getAttribute('href')).to.equal(
      wf(`account/${app.id}/ada`),
    );
    await shoot(page, 'account-workflows');
  });

  describe('at 390 px (a phone)', () => {
    let app: TestApp;
    before(async () => {
      ({ app } = await billingApp({ accounts: [{ id: 'ada', name: 'Ada', plan: 'free' }], purchases: ['ada'] }));
      await addAppToWorkspace(await people(testEnv().deps), ws.id, app.id);
    });
    beforeEach(() => page.setViewportSize({ width: 390, height: 844 }));
    afterEach(() => page.setViewportSize({ width: 1280, height: 860 }));

    /** Nothing sticks out sideways: the page is no wider than the phone. */
    const fits = async () =>
      expect(await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')).to.be.at.most(1);

    it('Offers: creates a draft, edits its name, deletes it after a confirmation naming it; the table fits', async () => {
      await page.goto(url(`/apps/${app.id}/offers`));
      await page.getByRole('heading', { name: 'New offer' }).waitFor();
      await page.getByLabel(/^Offer id/).fill('spring');
      await page.getByLabel(/^Offer name/).fill('Spring sale');
      // The monthly price starts at the picked plan's regular monthly price and follows the plan until one is typed.
      const monthly = page.getByLabel(/^Monthly price/);
      expect(await monthly.inputValue()).to.equal('');
      await choose(page, page.getByRole('combobox', { name: /^Plan/ }), { name: 'Scale' });
      expect(await monthly.inputValue()).to.equal('99');
      await choose(page, page.getByRole('combobox', { name: /^Plan/ }), { name: 'Internal' }); // no pricing card
      expect(await monthly.inputValue()).to.equal('');
      await choose(page, page.getByRole('combobox', { name: /^Plan/ }), { name: 'Pro' });
      expect(await monthly.inputValue()).to.equal('29');
      await page.setViewportSize({ width: 1280, height: 860 });
      await page.waitForTimeout(300); // the navbar done sliding back in
      await shoot(page, 'new-offer'); // at 1280 px, then 390 px
      await page.setViewportSize({ width: 390, height: 844 });
      await monthly.fill('25');
      await choose(page, page.getByRole('combobox', { name: /^Plan/ }), { name: 'Scale' });
      expect(await monthly.inputValue()).to.equal('25');
      await choose(page, page.getByRole('combobox', { name: /^Plan/ }), { name: 'Pro' });
      await page.getByRole('button', { name: 'Create draft' }).click();
      await page.waitForURL(`**/offers/spring`);
      const created = (await get(`/apps/${app.id}/offers/spring`, app.api_key)).body;
      expect(created.plans[0].prices[0]).to.include({ interval: 'month', amount: 25 });
      await page.getByLabel('Name', { exact: true }).fill('Spring sale 2');
      // A price's currency the API refuses: its 400 (`plans.0.prices.0.currency: ...`) shows under that input, not
      // as a loose alert, and what was typed stays.
      const price = page.getByLabel(/^Currency of pro (monthly|yearly) price$/).first();
      const typed = await price.inputValue();
      allowed.push(/^400 from POST .*\/offers\/draft-preview/); // the live preview refuses it too
      await price.fill('ZZ');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await eventually(async () => (await price.getAttribute('aria-invalid')) === 'true', 10_000);
      // (The live preview may say why it has nothing to show, "No preview", depending on when its answer comes: that
      // is the preview's own message, not the save's.)
      const loose = page.getByRole('alert').filter({ hasText: 'currency' }).filter({ hasNotText: 'No preview' });
      expect(await loose.count()).to.equal(0);
      expect(await page.getByLabel('Name', { exact: true }).inputValue()).to.equal('Spring sale 2');
      expect(await price.inputValue()).to.equal('ZZ');
      await expected(page, problems, allowed, /^400 from PATCH .*\/offers\/spring/);
      await shoot(page, 'offer-field-error');
      await price.fill(typed);
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await eventually(
        async () => (await get(`/apps/${app.id}/offers/spring`, app.api_key)).body.name === 'Spring sale 2',
      );
      await page.getByRole('link', { name: 'Spring sale 2' }).waitFor();
      await fits();
      // The row's Delete is on screen without scrolling sideways (it used to be clipped at 390 px).
      const del = page.getByRole('button', { name: 'Delete offer Spring sale 2' });
      const box = (await del.boundingBox())!;
      expect(box.x + box.width).to.be.at.most(390);
      await shoot(page, 'offers');
      await page.setViewportSize({ width: 390, height: 844 });
      await del.click();
      const dialog = page.getByRole('dialog', { name: 'Delete the offer Spring sale 2?' });
      await dialog.getByRole('button', { name: 'Delete the offer' }).click();
      await page.getByRole('link', { name: 'Spring sale 2' }).waitFor({ state: 'detached' });
      expect((await call('GET', `/apps/${app.id}/offers/spring`, { token: app.api_key })).status).to.equal(404);
    });

    it('Cancel flows: creates one from the template, deletes it after a confirmation naming it', async () => {
      await page.goto(url(`/apps/${app.id}/cancel-flows`));
      const fromTemplate = page.getByRole('button', { name: 'Create from the template' });
      const newFlow = page.getByRole('button', { name: 'New flow' });
      await fromTemplate.or(newFlow).first().waitFor();
      if (await fromTemplate.isVisible()) {
        await fromTemplate.click();
        await newFlow.waitFor();
      }
      await newFlow.click();
      const dialog = page.getByRole('dialog', { name: 'New cancel flow' });
      await dialog.getByLabel(/^Flow name/).fill('Phone flow');
      await dialog.getByRole('button', { name: 'Create flow' }).click();
      await page.getByText('Flow id phone_flow').waitFor();
      await fits();
      await shoot(page, 'cancel-flows');
      await page.setViewportSize({ width: 390, height: 844 });
      await page.getByRole('button', { name: 'Delete this flow' }).click();
      const confirm = page.getByRole('dialog', { name: 'Delete the cancel flow Phone flow?' });
      await confirm.getByRole('button', { name: 'Delete the flow' }).click();
      await page
        .getByRole('group', { name: 'Flows' })
        .getByRole('link', { name: /^Phone flow/ })
        .waitFor({
          state: 'detached',
        });
      expect((await call('GET', `/apps/${app.id}/cancel-flows/phone_flow`, { token: app.api_key })).status).to.equal(
        404,
      );
    });

    it('Accounts, Billing and Analytics (read-only pages) show their records and fit', async () => {
      await settled();
      await page.goto(url(`/apps/${app.id}/accounts`));
      await page.getByText('1 account', { exact: true }).waitFor(); // not "1 accounts"
      await page.getByRole('link', { name: 'Ada' }).click();
      await page.getByRole('heading', { name: 'Ada' }).waitFor();
      await page.getByText('Usage against limits').waitFor();
      await page.waitForLoadState('networkidle'); // the account's reads done before the next page
      await fits();
      await shoot(page, 'account-phone');
      await page.setViewportSize({ width: 390, height: 844 });
      testEnv().deps.config.TEMPORAL_UI_URL = 'http://temporal-ui.test';
      await settled();
      await page.goto(url(`/apps/${app.id}/billing`));
      await page.getByText('ada', { exact: true }).first().waitFor();
      // The checkout status filter is capitalised like the subscriptions' filter.
      const filter = page.getByLabel('Checkout status');
      for (const label of ['All', 'Created', 'Completed', 'Cancelled', 'Expired'])
        await filter.getByText(label, { exact: true }).waitFor();
      await fits();
      // The checkout's card keeps its status and workflow link on screen (the table scrolled them out of view).
      const link = (await page.getByRole('link', { name: /^Workflow: checkout\// }).boundingBox())!;
      expect(link.x + link.width).to.be.at.most(390);
      await shoot(page, 'billing');
      await page.setViewportSize({ width: 390, height: 844 });
      await settled();
      await page.goto(url(`/apps/${app.id}/analytics`));
      await page.getByRole('heading', { name: 'Analytics' }).waitFor();
      await fits();
      await shoot(page, 'analytics');
    });

    it('App home: the getting-started checklist and snippets fit a phone', async () => {
      await page.goto(url(`/apps/${app.id}`));
      await page.getByText(/of 5 done|All done/).waitFor();
      await fits();
      await page.getByRole('tab', { name: 'SDK' }).click();
      await page.getByTestId('SDK snippet').waitFor();
      await page.getByRole('button', { name: 'Copy SDK snippet', exact: true }).waitFor();
      await fits();
      await picture(page, { path: '.test-data/console/getting-started-sdk-390.png', fullPage: true });
    });
  });
});
