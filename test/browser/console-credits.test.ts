// Credits in the console (issue 42 item 6) in a real browser: pools and draws in the catalog, an account's balances,
// grants and ledger with the grant dialog (shown only to the roles that may grant), and credits consumed and top-up
// revenue on the analytics page; each change checked through the API, screenshots at 1280 and 390 px.
import { expect } from 'chai';
import { type Page } from 'playwright-core';
import { sql } from '../../src/db/sql.js';
import { closePeople, people } from '../../src/people/better-auth.js';
import { createWorkspace } from '../../src/people/workspaces.js';
import { openBrowser, type FileBrowser } from '../helpers/browser.js';
import { choose, ensureConsoleBuilt, expected, shoot, SCREENSHOT_DIR, watch } from '../helpers/console.js';
import { connectBilling, createAccount, createTestApp, type TestApp } from '../helpers/factories.js';
import { get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const OWNER = { name: 'Cleo Credits', email: 'credits@example.com', password: 'credits all the way' };
const VIEWER = { name: 'Val Viewer', email: 'credits-viewer@example.com', password: 'only looking here' };
const WORKSPACE = 'credits_browser';

describe('credits in the console in a real browser (headless Chromium)', function () {
  this.timeout(240_000);
  let browser: FileBrowser;
  let page: Page;
  let problems: string[];
  const allowed: RegExp[] = [];
  /** The catalog is made through the page on `catalogApp`; `app` has its credits made through the API. */
  let catalogApp: TestApp;
  let app: TestApp;
  /** A team plan: seats counting entities and a pool kept per entity (an app of its own). */
  let team: TestApp;
  let ownerId: string;
  let viewerId: string;

  const ok = async (a: TestApp, path: string, body: unknown, status = 201) => {
    const res = await post(`/apps/${a.id}${path}`, a.api_key, body);
    expect(res.status, `${path} ${res.text}`).to.equal(status);
    return res.body;
  };

  const signIn = async (p: Page, who: typeof OWNER) => {
    await p.goto(`${testEnv().baseUrl}/console/`);
    await p.getByLabel('Email').fill(who.email);
    await p.getByLabel(/^Password/).fill(who.password);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('button', { name: 'Sign out' }).waitFor();
    await p.waitForLoadState('networkidle');
  };

  before(async function () {
    this.timeout(15 * 60_000);
    ensureConsoleBuilt();
    browser = await openBrowser();
    catalogApp = await createTestApp('Credits catalog');
    await ok(catalogApp, '/plans', { id: 'pro', name: 'Pro', pricingCard: { monthlyPrice: 29, currency: 'USD' } });

    // The other app: a pool, two features drawing from it, an account on a plan that grants none (so no grant of the
    // account's actor lands while the test reads numbers), 500 credits granted, then 30 + 22 drawn.
    app = await createTestApp('Credits accounts');
    await ok(app, '/plans', { id: 'starter', name: 'Starter' });
    await ok(app, '/entitlements', { id: 'credits', type: 'credits', name: 'AI credits' });
    await ok(app, '/entitlements', {
      id: 'basic',
      type: 'usage',
      name: 'Basic',
      credits: { pool: 'credits', cost: 1 },
    });
    await ok(app, '/entitlements', {
      id: 'premium',
      type: 'usage',
      name: 'Premium',
      credits: { pool: 'credits', cost: 10 },
    });
    for (const id of ['basic', 'premium']) await ok(app, '/plans/starter/entitlements', { id, max: null });
    await createAccount(app, { id: 'alice', plan: 'starter' });
    const expires = new Date(Date.now() + 30 * 86_400_000).toISOString();
    await ok(app, '/namespaces/alice/credits/grants', {
      pool: 'credits',
      amount: 500,
      expires_at: expires,
      reason: 'welcome',
    });
    await ok(app, '/namespaces/alice/usage/premium/amount', { amount: 3 }, 200);
    for (let i = 0; i < 22; i++) await ok(app, '/namespaces/alice/usage/basic/add', {}, 200);

    // An app of its own (two pools would change the other account's grant dialog): 3 seats counting entities, a pool
    // kept per entity granting 500 a month, two members, one of whom drew 40.
    team = await createTestApp('Credits team');
    await ok(team, '/plans', { id: 'team', name: 'Team' });
    await ok(team, '/entitlements', { id: 'seats', type: 'usage', name: 'Seats', counts: 'entities' });
    await ok(team, '/entitlements', {
      id: 'team_credits',
      type: 'credits',
      name: 'Team credits',
      credits: { per: 'entity' },
    });
    await ok(team, '/entitlements', {
      id: 'chat',
      type: 'usage',
      name: 'Chat',
      credits: { pool: 'team_credits', cost: 1 },
    });
    await ok(team, '/plans/team/entitlements', { id: 'seats', max: 3 });
    await ok(team, '/plans/team/entitlements', { id: 'team_credits', max: 500 });
    await ok(team, '/plans/team/entitlements', { id: 'chat', max: null });
    await createAccount(team, { id: 'acme', plan: 'team' });
    await ok(team, '/namespaces/acme/entities', { id: 'u_ada', name: 'Ada Lovelace' });
    await ok(team, '/namespaces/acme/entities', { id: 'u_bob' });
    await ok(team, '/namespaces/acme/usage/chat/amount', { amount: 40, entity: 'u_ada' }, 200);

    const p = await people(testEnv().deps);
    ownerId = (await p.auth.api.signUpEmail({ body: OWNER })).user.id;
    await createWorkspace(p, { id: WORKSPACE, name: 'Credits', ownerId, appIds: [catalogApp.id, app.id, team.id] });
    viewerId = (await p.auth.api.signUpEmail({ body: VIEWER })).user.id;
    await p.pool.query(`insert into workspace_members (org_id, user_id, role) values ($1, $2, 'viewer')`, [
      WORKSPACE,
      viewerId,
    ]);
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    problems = watch(page);
    await signIn(page, OWNER);
  });
  after(async () => {
    await browser?.close();
    const em = testEnv().deps.orm.em.fork();
    await sql(em, 'delete from orgs where id = $1', [WORKSPACE]);
    for (const id of [ownerId, viewerId].filter(Boolean)) {
      await sql(em, 'delete from people_sessions where "userId" = $1', [id]);
      await sql(em, 'delete from people_credentials where "userId" = $1', [id]);
      await sql(em, 'delete from people_users where id = $1', [id]);
    }
    await closePeople(testEnv().deps);
  });
  afterEach(async function () {
    if (this.currentTest?.state === 'failed')
      await page.screenshot({ path: `${SCREENSHOT_DIR}/failed-credits-${this.currentTest.title.slice(0, 30)}.png` });
    const unexpected = problems.filter((x) => !allowed.some((a) => a.test(x)) && !/ net::ERR_ABORTED$/.test(x));
    problems.length = 0;
    allowed.length = 0;
    if (this.currentTest?.state === 'passed') expect(unexpected, unexpected.join('\n')).to.deep.equal([]);
  });

  const landed = (a: TestApp, path: string, check: (body: any) => void) =>
    eventually(async () => {
      check((await get(`/apps/${a.id}${path}`, a.api_key)).body);
      return true;
    });

  it('catalog: a pool with its rollover, a feature drawing from it at a cost, the monthly grant of a plan', async () => {
    await page.goto(`${testEnv().baseUrl}/console/apps/${catalogApp.id}/catalog`);
    await page.getByRole('heading', { name: 'Catalog' }).waitFor();
    const form = page.getByRole('form', { name: 'New entitlement' });

    // ---- the pool: unused plan credits roll over up to 500 ----
    await form.getByLabel('Entitlement id').fill('credits');
    await form.getByLabel('Entitlement name').fill('AI credits');
    await choose(page, form.getByRole('combobox', { name: 'Type' }), { name: /^Credits/ });
    await choose(page, form.getByRole('combobox', { name: 'Unused plan credits at the period end' }), {
      name: 'Roll over, up to a cap',
    });
    await form.getByLabel('Rollover cap').fill('500');
    await form.getByRole('button', { name: 'Add entitlement' }).click();
    await landed(catalogApp, '/entitlements/credits', (e) =>
      expect(e).to.deep.include({
        type: 'credits',
        name: 'AI credits',
        credits: { rollover: { cap: 500 }, per: 'account' },
      }),
    );
    await page.getByLabel('AI credits credits').filter({ hasText: 'keeps up to 500 unused plan credits' }).waitFor();

    // ---- a feature drawing 10 credits a unit; a cost of 0 is refused at its input ----
    await form.getByLabel('Entitlement id').fill('premium');
    await form.getByLabel('Entitlement name').fill('Premium messages');
    await choose(page, form.getByRole('combobox', { name: 'Draws credits from' }), { name: 'AI credits' });
    await form.getByLabel('Credits per unit').fill('0');
    await form.getByRole('button', { name: 'Add entitlement' }).click();
    await form.getByText(/must be greater than or equal to 1|Too small/i).waitFor();
    await expected(page, problems, allowed, /^400 from POST .*\/entitlements$/);
    await form.getByLabel('Credits per unit').fill('10');
    await form.getByRole('button', { name: 'Add entitlement' }).click();
    await landed(catalogApp, '/entitlements/premium', (e) =>
      expect(e).to.deep.include({ type: 'usage', credits: { pool: 'credits', cost: 10 } }),
    );
    await page.getByLabel('Premium messages credits').filter({ hasText: 'draws 10 AI credits a unit' }).waitFor();

    // ---- Pro grants 2,000 a month: the grid's cell on the pool ----
    await page.getByRole('button', { name: 'Include Pro × AI credits' }).click();
    const cell = page.getByLabel('Pro × AI credits credits a month');
    await cell.fill('2000');
    await cell.press('Enter');
    await landed(catalogApp, '/plans/pro', (p) => expect(p.entitlements).to.deep.include({ id: 'credits', max: 2000 }));
    const pool = page.getByRole('region', { name: 'Entitlement AI credits' });
    await pool.getByText('Granted by plans: Pro 2,000 a month').waitFor();
    await pool.getByText('Drawn by: Premium messages (10 a unit)').waitFor();
    // The pool cannot be deleted while a feature draws from it (nor while on a plan): said before the click.
    expect(await page.getByRole('button', { name: 'Delete entitlement AI credits' }).isDisabled()).to.equal(true);
    await pool.getByText(/drawn from by Premium messages/).waitFor();
    await shoot(page, 'credits-catalog');

    // ---- edit: the cost changes; then the feature stops drawing ----
    await page.getByRole('button', { name: 'Edit entitlement Premium messages' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Credits per unit').fill('5');
    await dialog.getByRole('button', { name: 'Save entitlement' }).click();
    await landed(catalogApp, '/entitlements/premium', (e) =>
      expect(e.credits).to.deep.equal({ pool: 'credits', cost: 5 }),
    );
    await dialog.waitFor({ state: 'hidden' });
    await page.getByRole('button', { name: 'Edit entitlement Premium messages' }).click();
    await choose(page, dialog.getByRole('combobox', { name: 'Draws credits from' }), { name: /^None/ });
    await dialog.getByRole('button', { name: 'Save entitlement' }).click();
    await landed(catalogApp, '/entitlements/premium', (e) => expect(e.credits).to.equal(null));
  });

  it('catalog: team plans: a pool kept per member, the seats, a limit per member; changed back on edit', async () => {
    await page.goto(`${testEnv().baseUrl}/console/apps/${catalogApp.id}/catalog`);
    await page.getByRole('heading', { name: 'Catalog' }).waitFor();
    const form = page.getByRole('form', { name: 'New entitlement' });
    // A pool with one balance per member.
    await form.getByLabel('Entitlement id').fill('team_credits');
    await form.getByLabel('Entitlement name').fill('Team credits');
    await choose(page, form.getByRole('combobox', { name: 'Type' }), { name: /^Credits/ });
    await choose(page, form.getByRole('combobox', { name: 'Balance kept' }), { name: 'One per member (entity)' });
    await form.getByRole('button', { name: 'Add entitlement' }).click();
    await landed(catalogApp, '/entitlements/team_credits', (e) =>
      expect(e.credits).to.deep.equal({ rollover: 'none', per: 'entity' }),
    );
    await page.getByLabel('Team credits credits').filter({ hasText: 'a balance per member' }).waitFor();
    await eventually(async () => (await form.getByLabel('Entitlement id').inputValue()) === '');
    // The seats: the counter is the number of members registered.
    await form.getByLabel('Entitlement id').fill('seats');
    await form.getByLabel('Entitlement name').fill('Seats');
    await choose(page, form.getByRole('combobox', { name: 'Type' }), { name: /^Usage/ });
    await choose(page, form.getByRole('combobox', { name: 'Counts' }), { name: 'Members registered (the seats)' });
    await form.getByRole('button', { name: 'Add entitlement' }).click();
    await landed(catalogApp, '/entitlements/seats', (e) => expect(e).to.deep.include({ counts: 'entities' }));
    // The form empties once its save's answer reached the page, which can be after the record is readable: filling
    // it before then loses what was typed.
    await eventually(async () => (await form.getByLabel('Entitlement id').inputValue()) === '');
    // A limit per member.
    await form.getByLabel('Entitlement id').fill('images');
    await form.getByLabel('Entitlement name').fill('Images');
    await choose(page, form.getByRole('combobox', { name: 'Counts' }), { name: 'Calls, for each member (entity)' });
    await form.getByRole('button', { name: 'Add entitlement' }).click();
    await landed(catalogApp, '/entitlements/images', (e) => expect(e).to.deep.include({ counts: null, per: 'entity' }));
    const images = page.getByRole('region', { name: 'Entitlement Images' });
    await images.getByText(/usage · per member/).waitFor();
    await page
      .getByRole('region', { name: 'Entitlement Seats' })
      .getByText(/usage · the seats/)
      .waitFor();
    await shoot(page, 'credits-catalog-team');
    // Edit: back to one counter for the account (no counters yet, so the API allows it); the form shows what is set.
    await page.getByRole('button', { name: 'Edit entitlement Images' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.getByRole('combobox', { name: 'Counts' }).inputValue()).to.equal(
      'Calls, for each member (entity)',
    );
    await choose(page, dialog.getByRole('combobox', { name: 'Counts' }), { name: 'Calls, for the whole account' });
    await dialog.getByRole('button', { name: 'Save entitlement' }).click();
    await landed(catalogApp, '/entitlements/images', (e) =>
      expect(e).to.deep.include({ counts: null, per: 'account' }),
    );
    await dialog.waitFor({ state: 'hidden' });
    // A save that changes neither sends neither (the seats keep counting members).
    await page.getByRole('button', { name: 'Edit entitlement Seats' }).click();
    await dialog.getByLabel('Entitlement name').fill('Team seats');
    await dialog.getByRole('button', { name: 'Save entitlement' }).click();
    await landed(catalogApp, '/entitlements/seats', (e) =>
      expect(e).to.deep.include({ name: 'Team seats', counts: 'entities', per: 'account' }),
    );
  });

  it("account: each pool's balance and grants, the ledger page by page, and granting credits", async () => {
    await page.goto(`${testEnv().baseUrl}/console/apps/${app.id}/accounts/alice`);
    const credits = page.getByRole('region', { name: 'Credits' });
    await credits.getByLabel('AI credits balance').filter({ hasText: '448' }).waitFor();
    const grants = credits.getByRole('table', { name: 'AI credits grants' });
    await grants.getByRole('row').filter({ hasText: '448 / 500' }).filter({ hasText: 'welcome' }).waitFor();
    // The features drawing from it, beside their usage.
    await page.getByText(/draws 10 AI credits a unit/).waitFor();

    // ---- the ledger, newest first, 20 a page: 22 + 1 debits and the grant make two pages ----
    const ledger = credits.getByRole('table', { name: 'Credits ledger' });
    await eventually(async () => (await ledger.getByRole('row').count()) === 21);
    expect(await ledger.getByRole('row').nth(1).textContent()).to.match(/-1debit basiccredits/);
    await credits.getByRole('button', { name: 'Older' }).click();
    await credits.getByText('Page 2').waitFor();
    await eventually(async () => (await ledger.getByRole('row').count()) === 5);
    await ledger.getByRole('row').filter({ hasText: '+500' }).filter({ hasText: 'grant' }).waitFor();
    await ledger.getByRole('row').filter({ hasText: '-30' }).filter({ hasText: 'premium' }).waitFor();
    await credits.getByRole('button', { name: 'Newer' }).click();
    await credits.getByText('Page 2').waitFor({ state: 'hidden' });
    await shoot(page, 'credits-account');

    // ---- grant: an expiry in the past is refused at its input; then 50 credits with a reason ----
    await credits.getByRole('button', { name: 'Grant credits' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('textbox', { name: 'Credits', exact: true }).fill('50');
    await dialog.getByLabel('Expires').fill('2020-01-01T00:00');
    await dialog.getByRole('button', { name: 'Grant' }).click();
    await dialog.getByText(/must be in the future/).waitFor();
    await expected(page, problems, allowed, /^400 from POST .*\/credits\/grants$/);
    await dialog.getByLabel('Expires').fill('');
    await dialog.getByLabel('Reason').fill('support: outage credit');
    await shoot(page, 'credits-grant-dialog');
    await dialog.getByRole('button', { name: 'Grant' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await credits.getByLabel('AI credits balance').filter({ hasText: '498' }).waitFor();
    await grants
      .getByRole('row')
      .filter({ hasText: '50 / 50' })
      .filter({ hasText: 'support: outage credit' })
      .waitFor();
    await landed(app, '/namespaces/alice/credits', (c) => {
      expect(c.data[0].balance).to.equal(498);
      expect(c.data[0].grants.map((g: { reason: string; amount: number }) => [g.reason, g.amount])).to.deep.equal([
        ['welcome', 500],
        ['support: outage credit', 50],
      ]);
    });

    // ---- a viewer reads the same and is offered no grant (the route table: members and above) ----
    const viewer = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
    const seen = watch(viewer);
    await signIn(viewer, VIEWER);
    await viewer.goto(`${testEnv().baseUrl}/console/apps/${app.id}/accounts/alice`);
    const theirs = viewer.getByRole('region', { name: 'Credits' });
    await theirs.getByLabel('AI credits balance').filter({ hasText: '498' }).waitFor();
    await theirs.getByRole('table', { name: 'Credits ledger' }).waitFor();
    expect(await theirs.getByRole('button', { name: 'Grant credits' }).count()).to.equal(0);
    await shoot(viewer, 'credits-account-viewer');
    expect(seen.filter((x) => !/ net::ERR_ABORTED$/.test(x))).to.deep.equal([]);
    await viewer.context().close();
  });

  it('account: a pool kept per member lists each member with its balance, and a grant names the member', async () => {
    await page.goto(`${testEnv().baseUrl}/console/apps/${team.id}/accounts/acme`);
    const credits = page.getByRole('region', { name: 'Credits' });
    await credits.getByLabel('Team credits balance').filter({ hasText: '960' }).waitFor();
    const members = credits.getByRole('table', { name: 'Team credits by member' });
    await members.getByRole('row').filter({ hasText: 'Ada Lovelace' }).filter({ hasText: '460' }).waitFor();
    await members.getByRole('row').filter({ hasText: 'u_bob' }).filter({ hasText: '500' }).waitFor();
    await page.getByText(/grants 500 a month to each member/).waitFor();
    await shoot(page, 'credits-account-members');

    await credits.getByRole('button', { name: 'Grant credits' }).click();
    const dialog = page.getByRole('dialog');
    await choose(page, dialog.getByLabel(/^Member/), { name: 'u_bob' });
    await dialog.getByRole('textbox', { name: 'Credits', exact: true }).fill('25');
    await shoot(page, 'credits-grant-member-dialog');
    await dialog.getByRole('button', { name: 'Grant' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await members.getByRole('row').filter({ hasText: 'u_bob' }).filter({ hasText: '525' }).waitFor();
    await landed(team, '/namespaces/acme/credits?entity=u_bob', (c) => expect(c.data[0].balance).to.equal(525));
  });

  it('analytics: credits consumed per pool and per feature, and top-up revenue', async () => {
    // A pack bought at the PayPal stand-in by another account (alice's numbers stay), captured, then 2.50 refunded;
    // a second order only created (never paid) counts nothing.
    await ok(app, '/credit-packs', { id: 'boost', pool: 'credits', amount: 1000, price: '10.00', currency: 'USD' });
    await connectBilling(app);
    await createAccount(app, { id: 'bob', plan: 'starter' });
    const order = await ok(app, '/credit-packs/boost/checkout', { account: 'bob' });
    await ok(app, '/credit-packs/boost/checkout', { account: 'bob' });
    await testEnv().paypal.approve(order.approve_url);
    const paid = await eventually(async () => {
      const o = await post(`/apps/${app.id}/credit-pack-orders/${order.id}/complete`, app.api_key);
      return o.body.status === 'completed' ? o.body : undefined;
    });
    testEnv().paypal.refundAtProvider(paid.capture_id, '2.50');
    await landed(app, `/credit-pack-orders/${order.id}`, (o) => expect(o.refunded).to.equal(2.5));

    await page.goto(`${testEnv().baseUrl}/console/apps/${app.id}/analytics`);
    const section = page.getByRole('region', { name: 'Credits consumed' });
    await section.getByLabel('AI credits consumed').filter({ hasText: '52' }).waitFor();
    const table = section.getByRole('table', { name: 'Credits consumed per feature' });
    await table.getByRole('row').filter({ hasText: 'Premium' }).filter({ hasText: '30' }).waitFor();
    await table.getByRole('row').filter({ hasText: 'Basic' }).filter({ hasText: '22' }).waitFor();
    const topups = page.getByRole('region', { name: 'Top-up revenue' });
    await topups.getByLabel('Net USD').filter({ hasText: '7.50 USD' }).waitFor();
    const row = topups
      .getByRole('table', { name: 'Top-up revenue per pack' })
      .getByRole('row')
      .filter({ hasText: 'boost' });
    // Amounts in the pack's currency, named beside the pack.
    const cells = (await row.getByRole('cell').allInnerTexts()).map((c) => c.replace(/\s+/g, ' ').trim());
    expect(cells).to.deep.equal(['boost USD', '1', '10.00', '2.50', '7.50']);
    await shoot(page, 'credits-analytics');
    // The catalog app has a pool and nothing drawn: the section says so.
    await page.goto(`${testEnv().baseUrl}/console/apps/${catalogApp.id}/analytics`);
    await page
      .getByRole('region', { name: 'Credits consumed' })
      .getByText('No feature drew credits in this interval.')
      .waitFor();
    await page
      .getByRole('region', { name: 'Top-up revenue' })
      .getByText('No credit pack was paid for in this interval.')
      .waitFor();
  });
});
