// The account page's billing in a real headless Chromium (issue 40, items 4 and 7): a member changes a plan through
// the quote and its confirm step (and gets the link the customer approves it at), withdraws it, pauses and resumes,
// cancels at the period end and undoes it, and sees the timeline grow with their email as who asked; a stale page's
// refused change says what is pending in words with its steps; the subscriptions list says "scheduled for <date>"; a
// renewal that the stand-in declines makes the subscription past due (since when, its next retry and grace end), a
// retry the provider declines again is said in words and one that goes through recovers it; a viewer sees all of it
// and no action. The real account actor, PayPal stand-in and test clock; screenshots at 1280 and 390 px of each
// state (active, a scheduled downgrade, paused, cancelling, past due).
import { expect } from 'chai';
import { type BrowserContext, type Page } from 'playwright-core';
import { people } from '../../src/people/better-auth.js';
import { addAppToWorkspace, createWorkspace } from '../../src/people/workspaces.js';
import { accountWorkflowId } from '../../workflows/shared.js';
import { openBrowser, type FileBrowser } from '../helpers/browser.js';
import { choose, ensureConsoleBuilt, expected, shoot, tap, watch } from '../helpers/console.js';
import { billingApp, type TestApp } from '../helpers/factories.js';
import { call, get, post } from '../helpers/http.js';
import { advanceClock, DAY, HOUR } from '../helpers/actor.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const PASSWORD = 'a long enough password';
const TEMPORAL_UI = 'http://temporal-ui.test';

async function signIn(email: string) {
  const res = await call('POST', '/api/auth/sign-in/email', {
    body: { email, password: PASSWORD },
    headers: { Origin: testEnv().baseUrl },
  });
  expect(res.status, res.text).to.equal(200);
  return res.headers.getSetCookie().map((c) => {
    const [pair] = c.split(';');
    const i = pair.indexOf('=');
    return { name: pair.slice(0, i), value: pair.slice(i + 1), url: testEnv().baseUrl };
  });
}

describe("the account page's billing: intents with their quote, refusals in words, the timeline (Chromium)", function () {
  this.timeout(180_000);
  let browser: FileBrowser;
  let app: TestApp;
  let base: string;
  const made = { users: [] as string[], org: `billing_${Date.now()}` };
  const member = { email: `billing-member-${Date.now()}@example.com`, name: 'Mia Member' };
  const viewer = { email: `billing-viewer-${Date.now()}@example.com`, name: 'Vic Viewer' };
  const sessions: { page: Page; ctx: BrowserContext; problems: string[]; allowed: RegExp[] }[] = [];
  let page: Page;
  let problems: string[];
  let allowed: RegExp[];
  const url = (p: string) => `${testEnv().baseUrl}/console${p}`;
  const sub = async (account: string) => (await get(`${base}/namespaces/${account}/subscription`, app.api_key)).body;
  const card = () => page.getByLabel('Subscription', { exact: true });
  const dialog = () => page.getByRole('dialog');
  const timeline = () => page.getByRole('list', { name: 'Billing timeline' });
  /** The buyer clicks through the stand-in's approval pages, then lands back on the service's return route. */
  const approveAll = async (approveUrl: string) => {
    let next = await testEnv().paypal.approve(approveUrl);
    while (next.includes('/checkoutnow')) next = await testEnv().paypal.approve(next);
    const back = new URL(next);
    return get(back.pathname + back.search);
  };
  /** From a test driving the phone layout: the page at 1280 and 390 px, then back to the phone. */
  const shootBoth = async (name: string) => {
    await page.setViewportSize({ width: 1280, height: 860 });
    await shoot(page, name);
    await page.setViewportSize({ width: 390, height: 844 });
  };
  const openAccount = async (account: string) => {
    await page.goto(url(`/apps/${app.id}/accounts/${account}`));
    await card().waitFor();
    await timeline().waitFor();
  };

  before(async function () {
    this.timeout(15 * 60_000);
    ensureConsoleBuilt();
    testEnv().deps.config.TEMPORAL_UI_URL = TEMPORAL_UI;
    // Ada, Bob and Cy on Pro at $19/month (the offer `launch`); Lite at $9 and Scale at $99 at regular prices.
    ({ app, base } = await billingApp({
      accounts: ['ada', 'bob', 'cy'].map((id) => ({ id, name: id[0].toUpperCase() + id.slice(1), plan: 'free' })),
      purchases: ['ada', 'bob', 'cy'],
    }));
    const lite = await post(`${base}/plans`, app.api_key, {
      id: 'lite',
      name: 'Lite',
      pricingCard: { monthlyPrice: 9 },
    });
    expect(lite.status, lite.text).to.equal(201);
    const p = await people(testEnv().deps);
    const ids: string[] = [];
    for (const person of [member, viewer])
      ids.push((await p.auth.api.signUpEmail({ body: { ...person, password: PASSWORD } })).user.id);
    const owner = await p.auth.api.signUpEmail({
      body: { name: 'Owen Owner', email: `billing-owner-${Date.now()}@example.com`, password: PASSWORD },
    });
    made.users.push(...ids, owner.user.id);
    await createWorkspace(p, { id: made.org, name: 'Billing workspace', ownerId: owner.user.id });
    await addAppToWorkspace(p, made.org, app.id);
    for (const [id, role] of [
      [ids[0], 'member'],
      [ids[1], 'viewer'],
    ])
      await p.pool.query(`insert into workspace_members (org_id, user_id, role) values ($1, $2, $3)`, [
        made.org,
        id,
        role,
      ]);
    browser = await openBrowser();
    for (const person of [member, viewer]) {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 } });
      await ctx.addCookies(await signIn(person.email));
      const pg = await ctx.newPage();
      sessions.push({ page: pg, ctx, problems: watch(pg), allowed: [] });
    }
    ({ page, problems, allowed } = sessions[0]);
  });
  after(async () => {
    delete testEnv().deps.config.TEMPORAL_UI_URL;
    await browser?.close();
    const p = await people(testEnv().deps);
    await p.pool.query(`delete from workspace_members where org_id = $1`, [made.org]);
    await p.pool.query(`delete from orgs where id = $1`, [made.org]);
    for (const table of ['people_sessions', 'people_credentials'])
      await p.pool.query(`delete from ${table} where "userId" = any($1)`, [made.users]);
    await p.pool.query(`delete from people_users where id = any($1)`, [made.users]);
  });
  afterEach(async function () {
    for (const [i, s] of sessions.entries()) {
      if (this.currentTest?.state === 'failed')
        await s.page.screenshot({
          path: `.test-data/console/failed-billing-${i}-${this.currentTest.title.slice(0, 40)}.png`,
        });
      await s.page.setViewportSize({ width: 1280, height: 860 });
      const unexpected = s.problems.filter((p) => !s.allowed.some((a) => a.test(p)) && !/ net::ERR_ABORTED$/.test(p));
      s.problems.length = 0;
      s.allowed.length = 0;
      if (this.currentTest?.state === 'passed') expect(unexpected, unexpected.join('\n')).to.deep.equal([]);
    }
    ({ page, problems, allowed } = sessions[0]);
  });

  it('a member changes the plan through the quote and its confirm step, gets the approval link, and withdraws it', async () => {
    await openAccount('ada');
    await card().getByText('Renews ').waitFor();
    expect(await card().getByLabel('Subscription status').textContent()).to.equal('active');
    expect(await card().getByRole('link', { name: 'Account actor workflow' }).getAttribute('href')).to.equal(
      `${TEMPORAL_UI}/namespaces/default/workflows/${encodeURIComponent(accountWorkflowId(app.id, 'ada'))}`,
    );
    await tap(card().getByRole('button', { name: 'Change plan' }));
    const quoted = page.waitForResponse((r) => r.url().endsWith('/subscription/change/quote'));
    await choose(page, dialog().getByRole('combobox', { name: 'New plan' }), { name: /^Scale: 99 USD \/ month/ });
    const quote = await (await quoted).json();
    expect(quote).to.deep.include({ direction: 'upgrade', policy: 'prorate_now', effective: 'now', price: 99 });
    expect(quote.amount_due_now).to.be.greaterThan(0);
    // What is charged now, the new price and from when, before anything is asked of the provider.
    const rows = dialog().getByRole('table', { name: 'Quote' });
    await rows.getByText(`${quote.amount_due_now.toFixed(2)} USD (the difference for`).waitFor();
    await rows.getByText('99.00 USD / month').waitFor();
    await rows.getByText('When the customer approves it').waitFor();
    await rows.getByText('upgrade (policy prorate now)').waitFor();
    expect((await sub('ada')).pending_change, 'a quote changes nothing').to.equal(null);
    await shoot(page, 'account-billing-quote');

    // Confirm asks for the change with the quote's proration date: the provider is asked for exactly the quote.
    const asked = page.waitForRequest((r) => r.url().endsWith('/subscription/change') && r.method() === 'POST');
    await tap(dialog().getByRole('button', { name: 'Confirm change' }));
    expect((await asked).postDataJSON()).to.deep.equal({
      plan: 'scale',
      interval: 'month',
      proration_date: quote.proration_date,
    });
    const link = await dialog().getByLabel('Approval link').textContent();
    expect(link).to.match(/\/checkoutnow\?token=/);
    expect(await dialog().getByRole('link', { name: 'Open the approval page' }).getAttribute('href')).to.equal(link);
    expect((await sub('ada')).pending_change).to.deep.include({ plan: 'scale', status: 'awaiting_approval' });
    await shoot(page, 'account-billing-approval-link');
    await tap(dialog().getByRole('button', { name: 'Done' }));

    // Waiting for the customer: said until when; a change or pause would be refused now, so neither is offered.
    await card()
      .getByText(/^→ scale \/ month at 99 USD, awaiting approval until \d{4}-\d\d-\d\d \d\d:\d\d$/)
      .waitFor();
    const actions = card().getByLabel('Subscription actions');
    expect(await actions.getByRole('button').allTextContents()).to.deep.equal([
      'Withdraw the change',
      'Cancel subscription',
    ]);
    // The timeline's newest lines: the outcome (waiting for the customer, until when), then the member's intent, by
    // their email, with the actor's run in the Temporal UI.
    await timeline()
      .getByRole('listitem')
      .first()
      .getByText(
        /^Waiting for the buyer's approval at the provider until \d{4}-\d\d-\d\d \d\d:\d\d UTC: change to Scale/,
      )
      .waitFor();
    const newest = timeline().getByRole('listitem').nth(1);
    await newest.getByText('Change to plan scale (monthly)').waitFor();
    await newest.getByText(`by ${member.email}`).waitFor();
    const run = await newest.getByRole('link', { name: /^Workflow run/ }).getAttribute('href');
    expect(run).to.match(
      new RegExp(
        `^${TEMPORAL_UI}/namespaces/default/workflows/${encodeURIComponent(accountWorkflowId(app.id, 'ada'))}/[^/]+/history$`,
      ),
    );

    await tap(actions.getByRole('button', { name: 'Withdraw the change' }));
    await dialog().getByText("The change to scale waiting for the customer's approval is dropped now").waitFor();
    await tap(dialog().getByRole('button', { name: 'Withdraw the change' }));
    await dialog().waitFor({ state: 'detached' });
    await eventually(async () => (await card().getByLabel('Plan change').count()) === 0);
    expect((await sub('ada')).pending_change).to.equal(null);
    await timeline().getByText('subscription.change_dropped').first().waitFor();
    await shoot(page, 'account-billing');
  });

  it("a stale page's refused change says what is pending in words, with its steps; the list says scheduled for <date>", async () => {
    await openAccount('bob');
    // Meanwhile the customer downgrades to Lite at the renewal and approves it at PayPal.
    const down = await post(`${base}/namespaces/bob/subscription/change`, app.api_key, { plan: 'lite' });
    expect(down.status, down.text).to.equal(200);
    await approveAll(down.body.approve_url);
    const scheduled = await eventually(async () => ((await sub('bob')).scheduled_change ? sub('bob') : undefined));
    const renewal = new Date(scheduled.renews_at).toLocaleDateString('en-CA');
    // A page opened now says the approved downgrade is scheduled for the renewal, and offers what that state takes.
    const fresh = await page.context().newPage();
    const freshProblems = watch(fresh);
    await fresh.goto(url(`/apps/${app.id}/accounts/bob`));
    const freshCard = fresh.getByLabel('Subscription', { exact: true });
    await freshCard.getByText(`→ lite / month at 9 USD, scheduled for ${renewal}`, { exact: true }).waitFor();
    await freshCard.getByText(`Renews ${renewal}`, { exact: true }).waitFor();
    await fresh
      .getByRole('list', { name: 'Billing timeline' })
      .getByText(`Change to lite scheduled for ${scheduled.renews_at.slice(0, 10)}`, { exact: true })
      .waitFor();
    expect(await freshCard.getByLabel('Subscription actions').getByRole('button').allTextContents()).to.deep.equal([
      'Change plan',
      'Withdraw the change',
      'Pause',
      'Cancel subscription',
    ]);
    await shoot(fresh, 'account-billing-scheduled');
    await fresh.close();
    expect(freshProblems, freshProblems.join('\n')).to.deep.equal([]);

    await tap(card().getByRole('button', { name: 'Change plan' }));
    await choose(page, dialog().getByRole('combobox', { name: 'New plan' }), { name: /^Scale/ });
    const refusal = dialog().getByRole('alert');
    await refusal.getByText(`A downgrade to Lite is scheduled for ${scheduled.renews_at.slice(0, 10)}.`).waitFor();
    expect(await refusal.textContent()).to.not.include('POST');
    await expected(page, problems, allowed, /^409 from POST .*\/subscription\/change\/quote$/);
    expect(await refusal.getByRole('button').allTextContents()).to.deep.equal(['Withdraw it', 'Replace it']);
    expect(await dialog().getByRole('button', { name: 'Confirm change' }).isDisabled()).to.equal(true);
    await shoot(page, 'account-billing-refused');
    // Replace it: quoted again as a replacement of the scheduled change, then asked for.
    await tap(refusal.getByRole('button', { name: 'Replace it' }));
    await dialog()
      .getByRole('table', { name: 'Quote' })
      .getByText('The change to lite scheduled for the renewal')
      .waitFor();
    await tap(dialog().getByRole('button', { name: 'Confirm change' }));
    await dialog().getByLabel('Approval link').waitFor();
    await tap(dialog().getByRole('button', { name: 'Done' }));
    const changes = card().getByLabel('Plan change');
    await changes.nth(1).waitFor();
    expect(await changes.allTextContents()).to.satisfy(
      (t: string[]) =>
        /^→ scale .*awaiting approval until/.test(t[0]) && t[1] === `→ lite / month at 9 USD, scheduled for ${renewal}`,
    );

    // Cancelling would drop both changes, each said once; at the period end is not offered while one waits.
    await tap(card().getByRole('button', { name: 'Cancel subscription' }));
    await dialog()
      .getByText('The change to scale is dropped. The change to lite is dropped.', { exact: true })
      .waitFor();
    expect(
      await dialog()
        .getByRole('radio', { name: /^At the end of the period/ })
        .isDisabled(),
    ).to.equal(true);
    await tap(dialog().getByRole('button', { name: 'Keep the subscription' }));
    await dialog().waitFor({ state: 'detached' });

    // The app's list: the approved change is scheduled for the renewal date, the replacement awaits approval.
    await page.goto(url(`/apps/${app.id}/billing`));
    const row = page.getByRole('table', { name: 'Subscriptions' }).getByRole('row').filter({ hasText: 'bob' });
    await row.getByText(`→ lite / month at 9 USD, scheduled for ${renewal}`).waitFor();
    await row.getByText(/^→ scale \/ month at 99 USD, awaiting approval until /).waitFor();
    expect(await row.textContent()).to.not.match(/lite[^→]*awaiting approval/);
    await shoot(page, 'billing-scheduled');
  });

  it('at 390 px: pauses and resumes, cancels at the period end and undoes it; the lines carry the moved clock', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    // The app's clock a day ahead: every line written from now on says the app's time beside the real one.
    await advanceClock(app, { ms: DAY });
    await openAccount('ada');
    await tap(card().getByRole('button', { name: 'Pause' }));
    await choose(page, dialog().getByRole('combobox', { name: 'Months' }), { name: '2 months', exact: true });
    await dialog().getByLabel('Reason').fill('Travelling');
    await shoot(page, 'account-billing-pause');
    await tap(dialog().getByRole('button', { name: 'Pause', exact: true }));
    await dialog().waitFor({ state: 'detached' });
    await card()
      .getByText(/^Paused until \d{4}-\d\d-\d\d: resumes in 2 months on pro$/)
      .waitFor();
    await card().getByText('Reason: Travelling').waitFor();
    const paused = await sub('ada');
    expect(paused.status).to.equal('paused');
    expect(await card().getByLabel('Subscription actions').getByRole('button').allTextContents()).to.deep.equal([
      'Resume',
      'Cancel subscription',
    ]);
    // The event's line says the day it resumes, as the card does.
    await timeline()
      .getByText(`Paused until ${paused.pause.resume_at.slice(0, 10)}`, { exact: true })
      .waitFor();
    await shootBoth('account-billing-paused');
    const pauseLine = timeline().getByRole('listitem').filter({ hasText: 'Pause for 2 month(s)' });
    await pauseLine.getByText(`by ${member.email}`).waitFor();
    await pauseLine.getByText(/app time \d{4}-\d\d-\d\d/).waitFor();

    await tap(card().getByRole('button', { name: 'Resume' }));
    await tap(dialog().getByRole('button', { name: 'Resume now' }));
    await dialog().waitFor({ state: 'detached' });
    await card()
      .getByText(/^Renews /)
      .waitFor();
    expect((await sub('ada')).status).to.equal('active');

    await tap(card().getByRole('button', { name: 'Cancel subscription' }));
    const renews = (await sub('ada')).renews_at.slice(0, 10);
    // Each choice says what it does; at the period end is picked first (it can be undone).
    await dialog()
      .getByText(/^Billing stops at the payment provider now; pro stays until/)
      .waitFor();
    await dialog()
      .getByText(/nothing more is charged and the account moves to the free plan now\. This cannot be undone\./)
      .waitFor();
    await shoot(page, 'account-billing-cancel');
    await tap(dialog().getByRole('button', { name: 'Cancel at the period end' }));
    await dialog().waitFor({ state: 'detached' });
    await card()
      .getByText(/^Cancelling at \d{4}-\d\d-\d\d: billing has stopped, the plan stays until then$/)
      .waitFor();
    expect(await card().getByLabel('Subscription status').textContent()).to.equal('cancelling');
    expect((await sub('ada')).cancel_at.slice(0, 10)).to.equal(renews);
    await shootBoth('account-billing-cancelling');

    await tap(card().getByRole('button', { name: 'Undo cancellation' }));
    await tap(dialog().getByRole('button', { name: 'Undo the cancellation' }));
    await dialog().waitFor({ state: 'detached' });
    await card()
      .getByText(/^Renews /)
      .waitFor();
    expect((await sub('ada')).cancel_at).to.equal(null);
    // The timeline grew by each intent and its event, newest first.
    await timeline().getByText('subscription.cancel_undone').first().waitFor();
    const summaries = await timeline().getByRole('listitem').allTextContents();
    const at = (s: string) => summaries.findIndex((l) => l.includes(s));
    expect(at('Resume')).to.be.lessThan(at('Cancel at the end of the period'));
    expect(at('Cancel at the end of the period')).to.be.lessThan(at('Pause for 2 month(s)'));
  });

  it('a declined renewal: past due with its dates; a retry declined again is said in words, the next one recovers it', async () => {
    // The stand-in declines Cy's renewal and the first retry, as PayPal's sandbox can; the app's clock moves past the
    // renewal (Ada's and Bob's renew too).
    const before = await sub('cy');
    testEnv().paypal.failPayments(before.id, 2);
    await advanceClock(app, new Date(Date.parse(before.renews_at) + HOUR));
    const due = await sub('cy');
    expect(due.status, JSON.stringify(due)).to.equal('past_due');
    const d = (iso: string) => new Date(iso).toLocaleDateString('en-CA');
    await openAccount('cy');
    expect(await card().getByLabel('Subscription status').textContent()).to.equal('past due');
    await card()
      .getByText(
        `Past due since ${d(due.dunning.since)}, next retry ${d(due.dunning.next_retry_at)}, grace ends ` +
          `${d(due.dunning.grace_ends_at)} (then it is cancelled)`,
        { exact: true },
      )
      .waitFor();
    await card().getByText('1 failed payment, 19 USD outstanding').waitFor();
    expect(await card().getByLabel('Subscription actions').getByRole('button').allTextContents()).to.deep.equal([
      'Retry payment',
      'Cancel subscription',
    ]);
    await timeline().getByText('subscription.payment_failed').first().waitFor();
    await shoot(page, 'account-billing-past-due');

    // The list shows it under its own filter, the renewal column saying since when.
    await page.goto(url(`/apps/${app.id}/billing`));
    await page
      .locator('[aria-label="Subscription status"]')
      .getByRole('radio', { name: 'Past due', exact: true })
      .dispatchEvent('click');
    const table = page.getByRole('table', { name: 'Subscriptions' });
    await table.getByText(`past due since ${d(due.dunning.since)}`, { exact: true }).waitFor();
    expect(await table.locator('tbody tr').count()).to.equal(1);

    // The first retry: the provider declines it, the dialog says so in words, and the card counts one more failure.
    await openAccount('cy');
    await tap(card().getByRole('button', { name: 'Retry payment' }));
    await dialog()
      .getByText(/charge the outstanding 19 USD now/)
      .waitFor();
    await tap(dialog().getByRole('button', { name: 'Retry the payment' }));
    const refusal = dialog().getByRole('alert');
    await refusal
      .getByText(/^The provider declined the payment of 19\.00 USD; the subscription of account cy stays past due/)
      .waitFor();
    await expected(page, problems, allowed, /^409 from POST .*\/subscription\/retry-payment$/);
    expect(await dialog().getByRole('button', { name: 'Retry the payment' }).isDisabled()).to.equal(true);
    await shoot(page, 'account-billing-retry-declined');
    await tap(dialog().getByRole('button', { name: 'Close' }));
    await card().getByText('2 failed payments, 19 USD outstanding').waitFor();
    expect((await sub('cy')).status).to.equal('past_due');

    // The second goes through: active again, renewing, and the timeline says it recovered.
    await tap(card().getByRole('button', { name: 'Retry payment' }));
    await tap(dialog().getByRole('button', { name: 'Retry the payment' }));
    await dialog().waitFor({ state: 'detached' });
    await card()
      .getByText(/^Renews \d{4}-\d\d-\d\d$/)
      .waitFor();
    expect(await card().getByLabel('Subscription status').textContent()).to.equal('active');
    const recovered = await sub('cy');
    expect(recovered).to.deep.include({ status: 'active', dunning: null });
    await timeline().getByText('subscription.recovered').first().waitFor();
    const retried = timeline().getByRole('listitem').filter({ hasText: /Retry/ }).first();
    await retried.getByText(`by ${member.email}`).waitFor();
  });

  it('a viewer sees the subscription and the timeline, and no action', async () => {
    ({ page, problems, allowed } = sessions[1]);
    await openAccount('ada');
    await timeline().getByText(`by ${member.email}`).first().waitFor();
    expect(await timeline().getByRole('listitem').count()).to.be.greaterThan(5);
    await card()
      .getByText(/^Renews /)
      .waitFor();
    expect(await page.locator('main [data-route]').count(), 'no control of an intent').to.equal(0);
    expect(await card().getByRole('button').count()).to.equal(0);
    // The timeline pages on with its cursor: a first page of 20 lines, then the rest. Three refusals of the secret
    // key (nothing to resume) make sure there is more than a page.
    for (let i = 0; i < 3; i++)
      expect((await post(`${base}/namespaces/ada/subscription/resume`, app.api_key)).status).to.equal(409);
    await page.reload();
    await timeline().getByText('by the secret key').first().waitFor();
    const all = (await get(`${base}/namespaces/ada/timeline?limit=200`, app.api_key)).body.data;
    expect(all.length, 'more lines than a page').to.be.greaterThan(20);
    expect(await timeline().getByRole('listitem').count()).to.equal(20);
    await tap(page.getByRole('button', { name: 'Load more' }));
    await eventually(async () => (await timeline().getByRole('listitem').count()) === Math.min(40, all.length));
    await shoot(page, 'account-billing-viewer');
  });
});
