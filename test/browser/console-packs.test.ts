// Credit packs in the console's catalog (issue 42 item 6) in a real browser: a pack made through the form (a price
// in fractions of a cent refused in words first), seen in the list, archived, another deleted, each change checked
// through the API; a viewer sees the packs and no create, archive or delete. Screenshots at 1280 and 390 px.
import { expect } from 'chai';
import { type Page } from 'playwright-core';
import { sql } from '../../src/db/sql.js';
import { closePeople, people } from '../../src/people/better-auth.js';
import { createWorkspace } from '../../src/people/workspaces.js';
import { openBrowser, type FileBrowser } from '../helpers/browser.js';
import { choose, ensureConsoleBuilt, expected, shoot, SCREENSHOT_DIR, watch } from '../helpers/console.js';
import { createTestApp, type TestApp } from '../helpers/factories.js';
import { get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const OWNER = { name: 'Pia Packs', email: 'packs@example.com', password: 'packs of credits' };
const VIEWER = { name: 'Vic Viewer', email: 'packs-viewer@example.com', password: 'only looking at packs' };
const WORKSPACE = 'packs_browser';

describe('credit packs in the console in a real browser (headless Chromium)', function () {
  this.timeout(240_000);
  let browser: FileBrowser;
  let page: Page;
  let problems: string[];
  const allowed: RegExp[] = [];
  let app: TestApp;
  let ownerId: string;
  let viewerId: string;

  const ok = async (path: string, body: unknown, status = 201) => {
    const res = await post(`/apps/${app.id}${path}`, app.api_key, body);
    expect(res.status, `${path} ${res.text}`).to.equal(status);
    return res.body;
  };
  const landed = (path: string, check: (res: { status: number; body: any }) => void) =>
    eventually(async () => {
      check(await get(`/apps/${app.id}${path}`, app.api_key));
      return true;
    });

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
    // Two pools, so the form's pool select has a choice to make; a pack to delete made through the API.
    app = await createTestApp('Packs catalog');
    await ok('/entitlements', { id: 'credits', type: 'credits', name: 'AI credits' });
    await ok('/entitlements', { id: 'images', type: 'credits', name: 'Image credits' });
    await ok('/credit-packs', { id: 'starter_pack', pool: 'credits', amount: 500, price: 5 });

    const p = await people(testEnv().deps);
    ownerId = (await p.auth.api.signUpEmail({ body: OWNER })).user.id;
    await createWorkspace(p, { id: WORKSPACE, name: 'Packs', ownerId, appIds: [app.id] });
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
      await page.screenshot({ path: `${SCREENSHOT_DIR}/failed-packs-${this.currentTest.title.slice(0, 30)}.png` });
    const unexpected = problems.filter((x) => !allowed.some((a) => a.test(x)) && !/ net::ERR_ABORTED$/.test(x));
    problems.length = 0;
    allowed.length = 0;
    if (this.currentTest?.state === 'passed') expect(unexpected, unexpected.join('\n')).to.deep.equal([]);
  });

  it('an owner creates a pack (a bad price refused in words), sees it, archives it and deletes another', async () => {
    await page.goto(`${testEnv().baseUrl}/console/apps/${app.id}/catalog`);
    await page.getByRole('heading', { name: 'Credit packs' }).waitFor();
    await page
      .getByRole('region', { name: 'Credit pack starter_pack' })
      .filter({ hasText: '500 AI credits for 5.00 USD' })
      .filter({ hasText: 'active' })
      .waitFor();

    // ---- the form: 10,000 image credits; a price in fractions of a cent is refused, at the price input ----
    const form = page.getByRole('form', { name: 'New credit pack' });
    await form.getByLabel('Pack id').fill('images_10k');
    await choose(page, form.getByRole('combobox', { name: 'Pool' }), { name: 'Image credits' });
    await form.getByLabel('Credits in the pack').fill('10000');
    await form.getByLabel('Price').fill('9.999');
    await form.getByLabel('Currency').fill('eur');
    await form.getByRole('button', { name: 'Add pack' }).click();
    await form.getByText(/decimal above 0|whole cents/).waitFor();
    await expected(page, problems, allowed, /^400 from POST .*\/credit-packs$/);
    await form.getByLabel('Price').fill('9.99');
    await form.getByRole('button', { name: 'Add pack' }).click();
    await landed('/credit-packs/images_10k', (r) =>
      expect(r.body).to.deep.include({ pool: 'images', amount: 10000, price: 9.99, currency: 'EUR', archived: false }),
    );
    const made = page.getByRole('region', { name: 'Credit pack images_10k' });
    await made.filter({ hasText: '10,000 Image credits for 9.99 EUR' }).filter({ hasText: 'active' }).waitFor();
    // The form is cleared for the next one.
    expect(await form.getByLabel('Pack id').inputValue()).to.equal('');

    // ---- the same id again: the API's 409 in words ----
    await form.getByLabel('Pack id').fill('images_10k');
    await form.getByLabel('Credits in the pack').fill('1');
    await form.getByLabel('Price').fill('1');
    await form.getByRole('button', { name: 'Add pack' }).click();
    await form.getByRole('alert').filter({ hasText: 'Credit pack images_10k already exists' }).waitFor();
    await expected(page, problems, allowed, /^409 from POST .*\/credit-packs$/);
    await shoot(page, 'packs-catalog');

    // ---- archive, through its dialog: no longer sold, still listed ----
    await page.getByRole('button', { name: 'Archive credit pack images_10k' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText(/no longer sold/).waitFor();
    await dialog.getByRole('button', { name: 'Archive credit pack images_10k' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await landed('/credit-packs/images_10k', (r) => expect(r.body.archived).to.equal(true));
    await made.getByText('archived', { exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'Archive credit pack images_10k' }).count()).to.equal(0);

    // ---- delete the other one ----
    await page.getByRole('button', { name: 'Delete credit pack starter_pack' }).click();
    await dialog.getByRole('button', { name: 'Delete credit pack starter_pack' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await landed('/credit-packs/starter_pack', (r) => expect(r.status).to.equal(404));
    await page.getByRole('region', { name: 'Credit pack starter_pack' }).waitFor({ state: 'detached' });
    const listed = (await get(`/apps/${app.id}/credit-packs`, app.api_key)).body as { id: string }[];
    expect(listed.map((x) => x.id)).to.deep.equal(['images_10k']);
    await shoot(page, 'packs-after');
  });

  it('a viewer sees the packs and no create, archive or delete', async () => {
    await ok('/credit-packs', { id: 'credits_1k', pool: 'credits', amount: 1000, price: '10.00' });
    const viewer = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
    const seen = watch(viewer);
    await signIn(viewer, VIEWER);
    await viewer.goto(`${testEnv().baseUrl}/console/apps/${app.id}/catalog`);
    await viewer
      .getByRole('region', { name: 'Credit pack credits_1k' })
      .filter({ hasText: '1,000 AI credits for 10.00 USD' })
      .waitFor();
    await viewer
      .getByRole('region', { name: 'Credit pack images_10k' })
      .getByText('archived', { exact: true })
      .waitFor();
    expect(await viewer.getByRole('form', { name: 'New credit pack' }).count()).to.equal(0);
    expect(await viewer.getByRole('button', { name: /^(Archive|Delete) credit pack/ }).count()).to.equal(0);
    expect(await viewer.locator('[data-route^="creditPacks."]').count()).to.equal(0);
    await viewer.getByRole('heading', { name: 'Credit packs' }).scrollIntoViewIfNeeded();
    await shoot(viewer, 'packs-viewer');
    expect(seen.filter((x) => !/ net::ERR_ABORTED$/.test(x))).to.deep.equal([]);
    await viewer.context().close();
  });
});
