// The Analytics page's saved reports in a real browser, at 1280 px and 390 px: build a view (interval and
// entitlements) over seeded usage, save it (an empty name refused under the input), load it again from the picker and
// by its link (`?report=`), change and update it, rename and delete it, each step checked through the API; a viewer
// loads reports but gets no write controls.
import { expect } from 'chai';
import { type Page } from 'playwright-core';
import { sql } from '../../src/db/sql.js';
import { closePeople, people } from '../../src/people/better-auth.js';
import { createWorkspace } from '../../src/people/workspaces.js';
import { openBrowser, picture, type FileBrowser } from '../helpers/browser.js';
import { choose, ensureConsoleBuilt, expected, shoot, SCREENSHOT_DIR, watch } from '../helpers/console.js';
import { createTestApp, seedCatalog, type TestApp } from '../helpers/factories.js';
import { del, get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const stamp = Date.now();
const OWNER = { name: 'Ana Lytics', email: `analytics-${stamp}@example.com`, password: 'charts all the way down' };
const VIEWER = { name: 'Vera Viewer', email: `analytics-viewer-${stamp}@example.com`, password: 'only looking here' };
const WORKSPACE = `analytics_${stamp}`;

const daysAgo = (d: number) => {
  const t = new Date();
  t.setUTCHours(12, 0, 0, 0);
  return new Date(t.getTime() - d * 86_400_000).toISOString();
};

interface SavedReport {
  id: string;
  name: string;
  interval: string | null;
  entitlements: string[] | null;
}

describe('the Analytics page’s saved reports in a real browser (headless Chromium)', function () {
  this.timeout(240_000);
  let browser: FileBrowser;
  let page: Page;
  let problems: string[];
  const allowed: RegExp[] = [];
  let app: TestApp;
  const users: string[] = [];
  const url = (p: string) => `${testEnv().baseUrl}/console/apps/${app.id}${p}`;

  async function signIn(p: Page, who: { email: string; password: string }) {
    await p.goto(`${testEnv().baseUrl}/console/`);
    await p.getByLabel('Email').fill(who.email);
    await p.getByLabel(/^Password/).fill(who.password);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('button', { name: 'Sign out' }).waitFor();
    // What the first page loads finishes before a test navigates away (an aborted request counts as a problem).
    await p.waitForLoadState('networkidle');
  }

  before(async function () {
    this.timeout(15 * 60_000);
    ensureConsoleBuilt();
    app = await createTestApp('Analytics reports');
    await seedCatalog(app);
    // In the last 7 days: API calls 10 + 5 + 50 (accounts a, b), seats 2 (b); then seats 3 (c, 20 days ago) and
    // API calls 7 (c, 40 days ago).
    const usage = [
      { account_id: 'a', entitlement_id: 'api_calls', amount: 10, created_at: daysAgo(1) },
      { account_id: 'a', entitlement_id: 'api_calls', amount: 5, created_at: daysAgo(2) },
      { account_id: 'b', entitlement_id: 'api_calls', amount: 50, created_at: daysAgo(3) },
      { account_id: 'b', entitlement_id: 'seats', amount: 2, created_at: daysAgo(3) },
      { account_id: 'c', entitlement_id: 'seats', amount: 3, created_at: daysAgo(20) },
      { account_id: 'c', entitlement_id: 'api_calls', amount: 7, created_at: daysAgo(40) },
    ];
    const imported = await post(`/apps/${app.id}/import`, testEnv().adminKey, {
      accounts: ['a', 'b', 'c'].map((id) => ({ id, plan: 'pro' })),
      usage,
    });
    expect(imported.status, imported.text).to.equal(201);
    const p = await people(testEnv().deps);
    const owner = (await p.auth.api.signUpEmail({ body: OWNER })).user.id;
    const viewer = (await p.auth.api.signUpEmail({ body: VIEWER })).user.id;
    users.push(owner, viewer);
    await createWorkspace(p, { id: WORKSPACE, name: 'Analytics', ownerId: owner, appIds: [app.id] });
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
      await page.screenshot({ path: `${SCREENSHOT_DIR}/failed-analytics-${this.currentTest.title.slice(0, 30)}.png` });
    const unexpected = problems.filter((p) => !allowed.some((a) => a.test(p)));
    problems.length = 0;
    allowed.length = 0;
    if (this.currentTest?.state === 'passed') expect(unexpected, unexpected.join('\n')).to.deep.equal([]);
  });

  const reports = async (): Promise<SavedReport[]> => {
    const res = await get(`/apps/${app.id}/analytics/reports`, app.api_key);
    expect(res.status, res.text).to.equal(200);
    return res.body;
  };
  /** Waits until the API holds what the page just saved. */
  const landed = (check: (list: SavedReport[]) => void) =>
    eventually(async () => {
      check(await reports());
      return true;
    });
  /** The summary cards as shown: `name amount` per card, in order. */
  const cards = async (p: Page = page) => {
    const grid = p.locator('[aria-label="Usage per entitlement"]');
    await grid.waitFor();
    return (await grid.locator('.mantine-Card-root').allInnerTexts()).map((t) =>
      t
        .split('\n')
        .filter((line) => line.trim())
        .slice(0, 2)
        .join(' '),
    );
  };
  /** Waits until the cards read `want` (the page reloads them after each change of the controls). */
  const cardsRead = async (want: string[], p: Page = page) => {
    let seen: string[] = [];
    await eventually(async () => {
      seen = await cards(p);
      return JSON.stringify(seen) === JSON.stringify(want);
    }).catch(() => expect(seen, 'the summary cards').to.deep.equal(want));
  };
  const picker = (p: Page = page) => p.getByRole('combobox', { name: 'Saved report' });
  const interval = (v: string, p: Page = page) => p.getByRole('radio', { name: v, exact: true });
  const dialog = () => page.getByRole('dialog');
  // The MultiSelect's box, not its input: with a pill picked the input shrinks behind the box.
  const entitlements = () => page.locator('.mantine-MultiSelect-input');
  let reportId = '';

  it('builds a view, saves it as a report (an empty name refused under the input, typed values kept)', async () => {
    await page.goto(url('/analytics'));
    await page.getByRole('heading', { name: 'Analytics' }).waitFor();
    expect(await picker().getAttribute('placeholder')).to.equal('No saved reports yet');
    await cardsRead(['API calls 65', 'Seats 5']);
    // The view: the last 7 days, API calls only.
    await page.getByText('7d', { exact: true }).click();
    await choose(page, entitlements(), { name: 'API calls' });
    await page.keyboard.press('Escape');
    await cardsRead(['API calls 65']);
    expect(await interval('7d').isChecked()).to.equal(true);

    await page.getByRole('button', { name: 'Save as report' }).click();
    const name = dialog().getByRole('textbox', { name: 'Report name' });
    await name.fill('   ');
    await dialog().getByRole('button', { name: 'Save report' }).click();
    const nameError = dialog().locator('.mantine-TextInput-error');
    await nameError.waitFor();
    expect(await nameError.textContent()).to.equal('must not be empty');
    expect(await dialog().getByRole('alert').count()).to.equal(0);
    await expected(page, problems, allowed, /^400 from POST .*\/analytics\/reports$/);
    expect(await name.inputValue()).to.equal('   ');
    expect(await reports()).to.deep.equal([]);
    await page.waitForTimeout(300); // the dialog's opening transition
    await picture(page, { path: `${SCREENSHOT_DIR}/analytics-report-save-refused.png` });

    await name.fill('Weekly API calls');
    await dialog().getByRole('button', { name: 'Save report' }).click();
    await dialog().waitFor({ state: 'detached' });
    await landed((list) => {
      expect(list.map(({ name, interval, entitlements }) => ({ name, interval, entitlements }))).to.deep.equal([
        { name: 'Weekly API calls', interval: '7d', entitlements: ['api_calls'] },
      ]);
      reportId = list[0].id;
    });
    // The saved report is the loaded one: its id in the URL, its name in the picker.
    await page.waitForURL((u) => u.searchParams.get('report') === reportId);
    // The picker shows it once the page has read the new list (the URL can change first).
    let shown = '';
    await eventually(async () => (shown = await picker().inputValue()) === 'Weekly API calls').catch(() =>
      expect(shown, 'the picker').to.equal('Weekly API calls'),
    );
    await page.getByText('Saved view', { exact: true }).waitFor();
    await page.getByText('7d · API calls', { exact: true }).waitFor();
    await cardsRead(['API calls 65']);
    await shoot(page, 'analytics-report-saved');
  });

  it('loads the report from the picker after a reload, and from its link', async () => {
    await page.goto(url('/analytics'));
    await page.getByRole('heading', { name: 'Analytics' }).waitFor();
    // A fresh page: the default view (30 days, every entitlement) and no report loaded.
    await cardsRead(['API calls 65', 'Seats 5']);
    expect(await interval('30d').isChecked()).to.equal(true);
    expect(await picker().inputValue()).to.equal('');
    await choose(page, picker(), { name: 'Weekly API calls' });
    await page.waitForURL((u) => u.searchParams.get('report') === reportId);
    await cardsRead(['API calls 65']);
    expect(await interval('7d').isChecked()).to.equal(true);

    // The link alone opens the same view.
    await page.goto(url(`/analytics?report=${reportId}`));
    await page.getByRole('heading', { name: 'Analytics' }).waitFor();
    await eventually(async () => (await picker().inputValue()) === 'Weekly API calls');
    await cardsRead(['API calls 65']);
    expect(await interval('7d').isChecked()).to.equal(true);
    expect(await page.getByRole('button', { name: 'Update report' }).count()).to.equal(0);

    // A link to a report that is gone says so and shows the default view.
    await page.goto(url('/analytics?report=rpt_gone'));
    await page.getByRole('alert').filter({ hasText: 'There is no saved report rpt_gone in this app' }).waitFor();
    await cardsRead(['API calls 65', 'Seats 5']);

    // A report made through the API with a name only: the page's default interval and every entitlement.
    const bare = await post(`/apps/${app.id}/analytics/reports`, app.api_key, { name: 'Everything' });
    expect(bare.status, bare.text).to.equal(201);
    await page.goto(url(`/analytics?report=${bare.body.id}`));
    await eventually(async () => (await picker().inputValue()) === 'Everything');
    await page.getByText('30d · all entitlements', { exact: true }).waitFor();
    expect(await interval('30d').isChecked()).to.equal(true);
    await cardsRead(['API calls 65', 'Seats 5']);
    expect((await del(`/apps/${app.id}/analytics/reports/${bare.body.id}`, app.api_key)).status).to.equal(200);
  });

  it('changes the loaded view and updates the report; discards a change', async () => {
    await page.goto(url(`/analytics?report=${reportId}`));
    await cardsRead(['API calls 65']);
    await page.getByText('60d', { exact: true }).click();
    await choose(page, entitlements(), { name: 'Seats' });
    await page.keyboard.press('Escape');
    await cardsRead(['API calls 72', 'Seats 5']);
    await page.getByText('Unsaved changes', { exact: true }).waitFor();
    // Two entitlements: the top accounts add both up (b 52, a 15, c 10).
    await eventually(async () => (await page.locator('.recharts-bar-rectangle').count()) === 3);
    expect((await reports())[0]).to.include({ interval: '7d' });
    await page.getByRole('button', { name: 'Update report' }).click();
    await page.getByText('Saved view', { exact: true }).waitFor();
    await landed((list) => {
      expect(list).to.have.length(1);
      expect(list[0]).to.deep.include({ id: reportId, name: 'Weekly API calls', interval: '60d' });
      expect(list[0].entitlements).to.have.members(['api_calls', 'seats']);
    });
    expect(await page.getByRole('button', { name: 'Update report' }).count()).to.equal(0);

    // A change not wanted goes back to the saved view.
    await page.getByText('7d', { exact: true }).click();
    await page.getByText('Unsaved changes', { exact: true }).waitFor();
    await cardsRead(['API calls 65', 'Seats 2']);
    await page.getByRole('button', { name: 'Discard changes' }).click();
    await page.getByText('Saved view', { exact: true }).waitFor();
    expect(await interval('60d').isChecked()).to.equal(true);
    await cardsRead(['API calls 72', 'Seats 5']);
    expect((await reports())[0]).to.include({ interval: '60d' });
    await shoot(page, 'analytics-report-updated');
  });

  it('at 390 px: renames the report (an empty name refused under the input) and deletes it, the dialog naming it', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto(url(`/analytics?report=${reportId}`));
      await cardsRead(['API calls 72', 'Seats 5']);
      await page.getByRole('button', { name: 'Rename' }).click();
      const name = dialog().getByRole('textbox', { name: 'Report name' });
      expect(await name.inputValue()).to.equal('Weekly API calls');
      await name.fill('');
      await dialog().getByRole('button', { name: 'Rename' }).click();
      await dialog().locator('.mantine-TextInput-error').filter({ hasText: 'must not be empty' }).waitFor();
      await expected(page, problems, allowed, /^400 from PATCH .*\/analytics\/reports\/rpt_/);
      expect((await reports())[0].name).to.equal('Weekly API calls');
      await name.fill('Calls and seats, 60 days');
      await dialog().getByRole('button', { name: 'Rename' }).click();
      await dialog().waitFor({ state: 'detached' });
      await landed((list) => expect(list[0]).to.deep.include({ id: reportId, name: 'Calls and seats, 60 days' }));
      await eventually(async () => (await picker().inputValue()) === 'Calls and seats, 60 days');
      // Everything on the bar is reachable on a phone.
      for (const b of ['Save as report', 'Rename', 'Delete']) {
        const box = (await page.getByRole('button', { name: b, exact: true }).boundingBox())!;
        expect(box.x + box.width, b).to.be.at.most(390);
      }
      await shoot(page, 'analytics-reports-phone');

      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      expect(await dialog().getByRole('heading').textContent()).to.equal(
        'Delete the report “Calls and seats, 60 days”?',
      );
      await dialog().getByText('The saved view “Calls and seats, 60 days” goes for everyone').waitFor();
      await page.waitForTimeout(300); // the dialog's opening transition
      await picture(page, { path: `${SCREENSHOT_DIR}/analytics-report-delete-390.png` });
      await dialog().getByRole('button', { name: 'Delete report' }).click();
      await dialog().waitFor({ state: 'detached' });
      await landed((list) => expect(list).to.deep.equal([]));
      await page.waitForURL((u) => !u.searchParams.has('report'));
      await eventually(async () => (await picker().getAttribute('placeholder')) === 'No saved reports yet');
      // The charts stay as they were.
      await cardsRead(['API calls 72', 'Seats 5']);
      expect((await get(`/apps/${app.id}/analytics/reports/${reportId}`, app.api_key)).status).to.equal(404);
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it('a viewer loads a report by its link and from the picker, with no write controls', async () => {
    const made = await post(`/apps/${app.id}/analytics/reports`, app.api_key, {
      name: 'Seats this week',
      interval: '7d',
      entitlements: ['seats'],
    });
    expect(made.status, made.text).to.equal(201);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const viewer = await context.newPage();
      const seen = watch(viewer);
      await signIn(viewer, VIEWER);
      await viewer.goto(url(`/analytics?report=${made.body.id}`));
      await viewer.getByRole('heading', { name: 'Analytics' }).waitFor();
      await eventually(async () => (await picker(viewer).inputValue()) === 'Seats this week');
      await cardsRead(['Seats 2'], viewer);
      expect(await interval('7d', viewer).isChecked()).to.equal(true);
      await viewer.getByText('You are a viewer in this workspace: load any saved report').waitFor();
      for (const b of ['Save as report', 'Rename', 'Delete', 'Update report'])
        expect(await viewer.getByRole('button', { name: b, exact: true }).count(), b).to.equal(0);
      // A change is theirs to look at and to discard, not to save.
      await viewer.getByText('30d', { exact: true }).click();
      await viewer.getByText('Unsaved changes', { exact: true }).waitFor();
      await cardsRead(['Seats 5'], viewer);
      expect(await viewer.getByRole('button', { name: 'Update report' }).count()).to.equal(0);
      await viewer.getByRole('button', { name: 'Discard changes' }).click();
      await cardsRead(['Seats 2'], viewer);
      // The picker works for them too: cleared, then picked again.
      await viewer.goto(url('/analytics'));
      await cardsRead(['API calls 65', 'Seats 5'], viewer);
      await choose(viewer, picker(viewer), { name: 'Seats this week' });
      await viewer.waitForURL((u) => u.searchParams.get('report') === made.body.id);
      await cardsRead(['Seats 2'], viewer);
      await picture(viewer, { path: `${SCREENSHOT_DIR}/analytics-report-viewer.png`, fullPage: true });
      expect(seen, seen.join('\n')).to.deep.equal([]);
      expect((await reports()).map((r) => r.name)).to.deep.equal(['Seats this week']);
    } finally {
      await context.close();
    }
  });
});
