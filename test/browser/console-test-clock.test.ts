// The Billing page's test clock card in a real browser, at 1280 px and 390 px: a test app's clock, "+1 month" moves
// it (the subscription renews and the list shows the next date), a date moves it there; the card is not shown to a
// viewer, nor on an app with live payments.
import { expect } from 'chai';
import { type Page } from 'playwright-core';
import { sql } from '../../src/db/sql.js';
import { closePeople, people } from '../../src/people/better-auth.js';
import { createWorkspace } from '../../src/people/workspaces.js';
import { openBrowser, type FileBrowser } from '../helpers/browser.js';
import { ensureConsoleBuilt, shoot, SCREENSHOT_DIR, watch } from '../helpers/console.js';
import { billingApp, type TestApp } from '../helpers/factories.js';
import { call, get } from '../helpers/http.js';
import { PAYPAL_TEST_CREDENTIALS, testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const stamp = Date.now();
const OWNER = { name: 'Tim Clock', email: `clock-${stamp}@example.com`, password: 'moving time along' };
const VIEWER = { name: 'Vic Viewer', email: `clock-viewer-${stamp}@example.com`, password: 'only looking here' };
const WORKSPACE = `clock_${stamp}`;

describe('the Billing page’s test clock in a real browser (headless Chromium)', function () {
  this.timeout(240_000);
  let browser: FileBrowser;
  let page: Page;
  let problems: string[];
  let app: TestApp;
  let base: string;
  let live: TestApp;
  const users: string[] = [];
  const url = (appId: string, p: string) => `${testEnv().baseUrl}/console/apps/${appId}${p}`;

  async function signIn(p: Page, who: { email: string; password: string }) {
    await p.goto(`${testEnv().baseUrl}/console/`);
    await p.getByLabel('Email').fill(who.email);
    await p.getByLabel(/^Password/).fill(who.password);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('button', { name: 'Sign out' }).waitFor();
    await p.waitForLoadState('networkidle');
  }

  before(async function () {
    this.timeout(15 * 60_000);
    ensureConsoleBuilt();
    ({ app, base } = await billingApp({ accounts: [{ id: 'ada', name: 'Ada', plan: 'free' }], purchases: ['ada'] }));
    ({ app: live } = await billingApp());
    const [[client_id, client_secret]] = Object.entries(PAYPAL_TEST_CREDENTIALS);
    const res = await call('PUT', `/apps/${live.id}/payments`, {
      token: live.api_key,
      body: { client_id, client_secret, env: 'live' },
    });
    expect(res.status, res.text).to.equal(200);
    const p = await people(testEnv().deps);
    const owner = (await p.auth.api.signUpEmail({ body: OWNER })).user.id;
    const viewer = (await p.auth.api.signUpEmail({ body: VIEWER })).user.id;
    users.push(owner, viewer);
    await createWorkspace(p, { id: WORKSPACE, name: 'Clock', ownerId: owner, appIds: [app.id, live.id] });
    await p.pool.query(`insert into workspace_members (org_id, user_id, role) values ($1, $2, 'viewer')`, [
      WORKSPACE,
      viewer,
    ]);
    browser = await openBrowser();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    problems = watch(page);
    await signIn(page, OWNER);
  });
  after(async () => {
    await browser?.close();
    const em = testEnv().deps.orm.em.fork();
    await sql(em, 'delete from workspace_members where org_id = $1', [WORKSPACE]);
    await sql(em, 'delete from orgs where id = $1', [WORKSPACE]);
    for (const id of users) {
      await sql(em, 'delete from people_sessions where "userId" = $1', [id]);
      await sql(em, 'delete from people_credentials where "userId" = $1', [id]);
      await sql(em, 'delete from people_users where id = $1', [id]);
    }
    await closePeople(testEnv().deps);
  });
  afterEach(async function () {
    if (this.currentTest?.state === 'failed')
      await page.screenshot({ path: `${SCREENSHOT_DIR}/failed-clock-${this.currentTest.title.slice(0, 30)}.png` });
    const seen = [...problems];
    problems.length = 0;
    if (this.currentTest?.state === 'passed') expect(seen, seen.join('\n')).to.deep.equal([]);
  });

  const clockNow = async () => (await get(`${base}/test-clock`, app.api_key)).body.now as string;
  const sub = async () => (await get(`${base}/namespaces/ada/subscription`, app.api_key)).body;

  it('shows the clock; +1 month renews the subscription and the list follows; a date moves it there', async () => {
    const before = await sub();
    await page.goto(url(app.id, '/billing'));
    const card = page.locator('[aria-labelledby="test-clock-title"]');
    await card.getByText('real time', { exact: true }).waitFor();
    const shown = await page.getByTestId('test-clock-now').innerText();
    expect(shown).to.equal(`${(await clockNow()).slice(0, 10)} ${(await clockNow()).slice(11, 16)} UTC`);
    await page
      .getByRole('cell', { name: before.renews_at.slice(0, 10) })
      .first()
      .waitFor();
    await shoot(page, 'billing-test-clock');

    await page.getByRole('button', { name: '+1 month' }).click();
    await card.getByText(/^(2[89]|3[01]) days ahead of real time$/).waitFor({ timeout: 60_000 });
    const renewed = await eventually(async () =>
      (await sub()).last_payment_at === before.renews_at ? sub() : undefined,
    );
    // The list was read again: it shows the next renewal.
    await page
      .getByRole('cell', { name: renewed.renews_at.slice(0, 10) })
      .first()
      .waitFor();
    expect(await page.getByTestId('test-clock-now').innerText()).to.equal(
      `${(await clockNow()).slice(0, 10)} ${(await clockNow()).slice(11, 16)} UTC`,
    );

    const target = new Date(Date.parse(await clockNow()) + 10 * 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel('Move the clock to this date').fill(target);
    await page.getByRole('button', { name: 'Move', exact: true }).click();
    await eventually(async () => (await page.getByTestId('test-clock-now').innerText()).startsWith(target), 60_000);
    expect((await clockNow()).slice(0, 10)).to.equal(target);
    await shoot(page, 'billing-test-clock-moved');
  });

  it('no card for a viewer, nor on an app with live payments', async () => {
    await page.goto(url(live.id, '/billing'));
    await page.getByRole('heading', { name: 'Subscriptions and pauses' }).waitFor();
    await page.waitForLoadState('networkidle');
    expect(await page.getByText('Test clock').count(), 'live payments').to.equal(0);

    const viewer = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    const seen = watch(viewer);
    await signIn(viewer, VIEWER);
    await viewer.goto(url(app.id, '/billing'));
    await viewer.getByRole('heading', { name: 'Subscriptions and pauses' }).waitFor();
    await viewer.waitForLoadState('networkidle');
    expect(await viewer.getByText('Test clock').count(), 'a viewer').to.equal(0);
    expect(seen).to.deep.equal([]);
    await viewer.context().close();
  });
});
