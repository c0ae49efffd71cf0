// The console's operations pages in a real headless Chromium, at 1280 px and 390 px: payments (connect to the PayPal
// stand-in, the offer editor's 409 pointing there, disconnect), a webhook endpoint's edit, disable, delete, signing
// secret (reveal, rotate: the next delivery is signed with the new one) and its delivery's Temporal link, the keys'
// confirmations, and a workspace's people (invite, revoke, change a role, remove).
import { expect } from 'chai';
import { chromium, type Browser, type Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { people } from '../../src/people/better-auth.js';
import { addAppToWorkspace, createWorkspace } from '../../src/people/workspaces.js';
import { CHROMIUM_ARGS, ensureChromium } from '../helpers/chromium.js';
import { choose, ensureConsoleBuilt, expected, shoot, watch } from '../helpers/console.js';
import { createTestApp, seedCatalog, type TestApp } from '../helpers/factories.js';
import { call, get, post } from '../helpers/http.js';
import { startReceiver } from '../helpers/receiver.js';
import { connectMcp } from '../helpers/mcp.js';
import { PAYPAL_TEST_CREDENTIALS, testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const PASSWORD = 'correct horse battery staple';

describe('the console’s operations pages (payments, webhook endpoints, keys, people) in Chromium', function () {
  this.timeout(180_000);
  let browser: Browser;
  let page: Page;
  let problems: string[];
  const allowed: RegExp[] = [];
  let app: TestApp;
  const made = { users: [] as string[], org: `ops_${Date.now()}` };
  const owner = { email: `ops-owner-${Date.now()}@example.com`, name: 'Olga Ops' };
  const member = { email: `ops-member-${Date.now()}@example.com`, name: 'Max Member', id: '' };
  const url = (p: string) => `${testEnv().baseUrl}/console${p}`;

  before(async function () {
    this.timeout(15 * 60_000);
    ensureConsoleBuilt();
    app = await createTestApp('Ops shop');
    await seedCatalog(app);
    const p = await people(testEnv().deps);
    const o = await p.auth.api.signUpEmail({ body: { ...owner, password: PASSWORD } });
    const m = await p.auth.api.signUpEmail({ body: { ...member, password: PASSWORD } });
    member.id = m.user.id;
    made.users.push(o.user.id, m.user.id);
    await createWorkspace(p, { id: made.org, name: 'Ops workspace', ownerId: o.user.id });
    await addAppToWorkspace(p, made.org, app.id);
    await p.pool.query(`insert into workspace_members (org_id, user_id, role) values ($1, $2, 'member')`, [
      made.org,
      m.user.id,
    ]);
    browser = await chromium.launch({ executablePath: ensureChromium(), args: CHROMIUM_ARGS });
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    page = await context.newPage();
    problems = watch(page);
    await page.goto(url('/'));
    await page.getByLabel('Email').fill(owner.email);
    await page.getByRole('textbox', { name: 'Password' }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    // Lands on the app's page: let it finish loading (members, invitations) before a test navigates away.
    await page.getByRole('heading', { name: 'Pending invitations' }).waitFor();
    await page.waitForLoadState('networkidle');
  });
  after(async () => {
    await browser?.close();
    const p = await people(testEnv().deps);
    await p.pool.query(`delete from workspace_invitations where org_id = $1`, [made.org]);
    await p.pool.query(`delete from workspace_members where org_id = $1`, [made.org]);
    await p.pool.query(`delete from orgs where id = $1`, [made.org]);
    for (const table of ['people_sessions', 'people_credentials'])
      await p.pool.query(`delete from ${table} where "userId" = any($1)`, [made.users]);
    await p.pool.query(`delete from people_users where id = any($1)`, [made.users]);
  });
  afterEach(async function () {
    if (this.currentTest?.state === 'failed')
      await page.screenshot({ path: `.test-data/console/failed-ops-${this.currentTest.title.slice(0, 30)}.png` });
    const unexpected = problems.filter((p) => !allowed.some((a) => a.test(p)));
    problems.length = 0;
    allowed.length = 0;
    if (this.currentTest?.state === 'passed') expect(unexpected, unexpected.join('\n')).to.deep.equal([]);
  });

  it('payments: the offer editor’s 409 links here; connect sandbox (a wrong secret refused under it), disconnect', async () => {
    const base = `/apps/${app.id}`;
    const made = await post(`${base}/offers`, app.api_key, {
      id: 'launch',
      name: 'Launch',
      plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }],
    });
    expect(made.status, made.text).to.equal(201);
    await page.goto(url(`${base}/offers/launch`));
    await page.getByRole('button', { name: 'Publish', exact: true }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'payment provider not connected' });
    await alert.waitFor();
    await expected(page, problems, allowed, /^409 from POST .*\/offers\/launch\/publish/);
    await alert.getByRole('link', { name: 'Connect PayPal on the Payments page' }).click();
    await page.getByRole('heading', { name: 'Payments', level: 2 }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Not connected' }).waitFor();
    // The URL PayPal calls, with a copy button.
    expect(await page.getByLabel('Notification URL').textContent()).to.equal(
      `${testEnv().baseUrl}/payments/webhooks/${app.id}`,
    );
    const [[clientId, clientSecret]] = Object.entries(PAYPAL_TEST_CREDENTIALS);
    await page.getByRole('textbox', { name: 'Client id' }).fill(clientId);
    await page.getByRole('textbox', { name: 'Client secret' }).fill('not-the-secret');
    await page.getByRole('button', { name: 'Test and connect' }).click();
    // PayPal's refusal lands under the secret, and what was typed stays.
    const secretInput = page.getByRole('textbox', { name: 'Client secret' });
    // Mantine puts the error under the input, outside any alert: the secret's own error slot.
    const secretError = page.locator('.mantine-PasswordInput-error');
    await secretError.waitFor();
    expect(await secretError.textContent()).to.match(/^PayPal: .*check client_id, client_secret and env/);
    expect(await page.getByRole('alert').count()).to.equal(0);
    await expected(page, problems, allowed, /^400 from PUT .*\/payments/);
    expect(await page.getByRole('textbox', { name: 'Client id' }).inputValue()).to.equal(clientId);
    expect((await get(`${base}/payments`, app.api_key)).body.connected).to.equal(false);
    await secretInput.fill(clientSecret);
    await page.getByRole('button', { name: 'Test and connect' }).click();
    await page.getByRole('status').filter({ hasText: 'PayPal accepted the credentials' }).waitFor();
    const conn = (await get(`${base}/payments`, app.api_key)).body;
    expect(conn).to.include({ connected: true, env: 'sandbox', client_id: clientId });
    expect(await page.getByText('sandbox', { exact: true }).count()).to.equal(1);
    await shoot(page, 'payments');

    // The offer publishes now.
    const published = await post(`${base}/offers/launch/publish`, app.api_key);
    expect(published.status, published.text).to.equal(200);

    await page.getByRole('button', { name: 'Disconnect PayPal' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('new checkouts').waitFor();
    expect(await dialog.textContent()).to.match(/Subscriptions already live keep billing at PayPal/);
    expect(await dialog.getByRole('heading').textContent()).to.contain(clientId);
    await dialog.getByRole('button', { name: 'Disconnect' }).click();
    await page.getByRole('status').filter({ hasText: 'Not connected' }).waitFor();
    expect((await get(`${base}/payments`, app.api_key)).body.connected).to.equal(false);
    // Nav entry.
    expect(await page.getByRole('link', { name: 'Payments' }).getAttribute('href')).to.equal(
      `/console/apps/${app.id}/payments`,
    );
  });

  it('webhook endpoint: create, edit, disable, enable, reveal and rotate the secret (the next delivery uses it), delete', async () => {
    const base = `/apps/${app.id}`;
    const config = testEnv().deps.config as { embeddedTemporal: boolean };
    const wasEmbedded = config.embeddedTemporal;
    config.embeddedTemporal = true; // the console then links into the Temporal UI
    const receiver = await startReceiver();
    try {
      await page.goto(url(`${base}/webhooks`));
      await page.getByRole('textbox', { name: 'Endpoint URL' }).fill(receiver.url);
      await page.getByRole('textbox', { name: 'Event types' }).fill('plan.created');
      await page.getByRole('textbox', { name: 'Description' }).fill('Warehouse');
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.getByText(receiver.url).waitFor();
      const [ep] = (await get(`${base}/webhooks`, app.api_key)).body;
      expect(ep).to.include({ url: receiver.url, description: 'Warehouse', enabled: true });
      await page.getByText(receiver.url).click();

      // Edit: the events and the description.
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      const edit = page.getByRole('dialog', { name: 'Edit endpoint' });
      await edit.getByRole('textbox', { name: 'Event types' }).fill('plan.created, plan.updated');
      await edit.getByRole('textbox', { name: 'Description' }).fill('Warehouse sync');
      await edit.getByRole('textbox', { name: 'Endpoint URL' }).fill('not a url');
      await edit.getByRole('button', { name: 'Save endpoint' }).click();
      // The 400 under the URL input; the other edits kept.
      await eventually(
        async () => (await edit.getByRole('textbox', { name: 'Endpoint URL' }).getAttribute('aria-invalid')) === 'true',
      );
      await expected(page, problems, allowed, /^400 from PATCH .*\/webhooks\//);
      expect(await edit.getByRole('textbox', { name: 'Description' }).inputValue()).to.equal('Warehouse sync');
      await edit.getByRole('textbox', { name: 'Endpoint URL' }).fill(receiver.url);
      await edit.getByRole('button', { name: 'Save endpoint' }).click();
      await edit.waitFor({ state: 'detached' });
      const edited = (await get(`${base}/webhooks/${ep.id}`, app.api_key)).body;
      expect(edited).to.include({ description: 'Warehouse sync' });
      expect(edited.events).to.deep.equal(['plan.created', 'plan.updated']);

      // Disable, enable.
      await page.getByRole('button', { name: 'Disable', exact: true }).click();
      await page.getByRole('button', { name: 'Enable', exact: true }).waitFor();
      expect((await get(`${base}/webhooks/${ep.id}`, app.api_key)).body.enabled).to.equal(false);
      await page.getByRole('button', { name: 'Enable', exact: true }).click();
      await page.getByRole('button', { name: 'Disable', exact: true }).waitFor();
      expect((await get(`${base}/webhooks/${ep.id}`, app.api_key)).body.enabled).to.equal(true);

      // Reveal the secret: the one the API holds.
      await page.getByRole('button', { name: 'Reveal signing secret' }).click();
      const shown = page.getByLabel('Signing secret');
      await shown.waitFor();
      const oldSecret = (await shown.textContent())!;
      expect(oldSecret).to.equal(edited.secret);

      // Rotate: the dialog names the endpoint and says the old one stops at once.
      await page.getByRole('button', { name: 'Rotate secret' }).click();
      const rotate = page.getByRole('dialog');
      expect(await rotate.getByRole('heading').textContent()).to.contain('Warehouse sync');
      expect(await rotate.textContent()).to.match(/old secret stops working at once/);
      await rotate.getByRole('button', { name: 'Rotate now' }).click();
      await eventually(async () => {
        const t = await shown.textContent();
        return t && t !== oldSecret ? t : undefined;
      });
      const newSecret = (await shown.textContent())!;
      expect((await get(`${base}/webhooks/${ep.id}`, app.api_key)).body.secret).to.equal(newSecret);
      // The next delivery is signed with the new secret, and not with the old one.
      expect((await post(`${base}/plans`, app.api_key, { id: 'team', name: 'Team' })).status).to.equal(201);
      const [req] = await receiver.waitFor(1);
      const payload = new Webhook(newSecret).verify(req.body, req.headers as Record<string, string>) as {
        type: string;
      };
      expect(payload.type).to.equal('plan.created');
      expect(() => new Webhook(oldSecret).verify(req.body, req.headers as Record<string, string>)).to.throw();

      // The delivery links to its workflow in the Temporal UI; a test send (no workflow) does not.
      const [delivery] = await eventually(async () => {
        const list = (await get(`${base}/webhooks/${ep.id}/deliveries`, app.api_key)).body.data;
        return list[0]?.status === 'succeeded' ? list : undefined;
      });
      await page.getByRole('button', { name: 'Send test event' }).click();
      await page
        .getByRole('button', { name: /^Delivery plan\.created succeeded/ })
        .first()
        .waitFor();
      const rows = page.getByRole('button', { name: /^Delivery plan\.created succeeded/ });
      await eventually(async () => (await rows.count()) === 2);
      // Newest first: the test send, then the event's delivery.
      await rows.nth(0).click();
      await page.getByText('Response', { exact: true }).first().waitFor();
      expect(await page.getByRole('link', { name: 'Delivery workflow in the Temporal UI' }).count()).to.equal(0);
      await rows.nth(1).click();
      const link = page.getByRole('link', { name: 'Delivery workflow in the Temporal UI' });
      await link.waitFor();
      expect(await link.getAttribute('href')).to.equal(
        `http://127.0.0.1:${testEnv().deps.config.TEMPORAL_UI_PORT}/namespaces/default/workflows/${delivery.id}`,
      );
      await testEnv().deps.temporal.client.workflow.getHandle(delivery.id).describe();
      await shoot(page, 'webhook-endpoint');

      // Delete: the dialog names the endpoint and what stops.
      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      const del = page.getByRole('dialog');
      expect(await del.getByRole('heading').textContent()).to.contain(receiver.url);
      expect(await del.textContent()).to.match(/pending deliver(y|ies) stops? without being sent/);
      await del.getByRole('button', { name: 'Delete endpoint' }).click();
      await page.getByText('No endpoints yet.').waitFor();
      expect((await get(`${base}/webhooks`, app.api_key)).body).to.deep.equal([]);
    } finally {
      config.embeddedTemporal = wasEmbedded;
      await receiver.close();
    }
  });

  it('keys: regenerating the publishable key names what breaks; the old key stops working', async () => {
    const before = (await get(`/apps/${app.id}`, app.api_key)).body.public_key as string;
    await page.goto(url(`/apps/${app.id}`));
    const card = page.locator('.mantine-Card-root').filter({ hasText: 'Publishable key' });
    await card.getByRole('button', { name: 'Regenerate' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).to.match(/every page that embeds the components/);
    await dialog.getByRole('button', { name: 'Regenerate now' }).click();
    await dialog.waitFor({ state: 'detached' });
    const after = (await get(`/apps/${app.id}`, app.api_key)).body.public_key as string;
    expect(after).to.not.equal(before);
    await card.getByRole('button', { name: 'Reveal' }).click();
    expect(await card.getByLabel('Publishable key value').textContent()).to.equal(after);
    expect((await call('GET', `/apps/${app.id}/offers`, { token: before })).status).to.equal(401);
    app.public_key = after;
    // The secret key's confirmation names the servers using it.
    await page
      .locator('.mantine-Card-root')
      .filter({ hasText: 'Secret key' })
      .getByRole('button', { name: 'Regenerate' })
      .click();
    expect(await page.getByRole('dialog').textContent()).to.match(/every server, job and MCP client/);
    await page.getByRole('button', { name: 'Keep the old key' }).click();
  });

  it('people at 390 px: invite with a role, revoke the invitation, change a member’s role, remove them', async () => {
    await page.goto(url(`/apps/${app.id}`));
    await page.getByRole('table', { name: 'Members' }).getByText(member.email).waitFor();
    await shoot(page, 'people');
    // The rest on a phone.
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      const section = page.locator('.mantine-Card-root').filter({ hasText: 'People of Ops workspace' });
      const members = section.getByRole('table', { name: 'Members' });
      await members.getByText(member.email).waitFor();
      expect(await members.getByText(owner.email).count()).to.equal(1);

      await section.getByRole('textbox', { name: 'Email' }).fill('not-an-email');
      await section.getByRole('button', { name: 'Create invitation link' }).click();
      // The browser's own check stops it first; then a real address with a role.
      await section.getByRole('textbox', { name: 'Email' }).fill('newbie@example.com');
      await choose(page, section.getByRole('combobox', { name: 'Role', exact: true }), { name: 'Viewer' });
      await section.getByRole('button', { name: 'Create invitation link' }).click();
      const link = section.getByLabel('Invitation link');
      await link.waitFor();
      const pending = section.getByRole('table', { name: 'Pending invitations' });
      await pending.getByText('newbie@example.com').waitFor();
      expect(await pending.textContent()).to.contain('Viewer');
      const p = await people(testEnv().deps);
      const inv = await p.pool.query(`select id, role, status from workspace_invitations where org_id = $1`, [
        made.org,
      ]);
      expect(inv.rows).to.deep.equal([{ id: inv.rows[0].id, role: 'viewer', status: 'pending' }]);
      expect(await link.textContent()).to.contain(inv.rows[0].id);
      await shoot(page, 'people-invited');

      await pending.getByRole('button', { name: 'Revoke' }).click();
      const dialog = page.getByRole('dialog');
      expect(await dialog.getByRole('heading').textContent()).to.contain('newbie@example.com');
      await dialog.getByRole('button', { name: 'Revoke' }).click();
      await section.getByText('None.').waitFor();
      expect((await call('GET', `/console/api/invitations/${inv.rows[0].id}`)).status).to.equal(404);

      // Change the member's role.
      await choose(page, section.getByRole('combobox', { name: `Role of ${member.email}` }), { name: 'Admin' });
      await eventually(async () => {
        const { rows } = await p.pool.query(`select role from workspace_members where org_id = $1 and user_id = $2`, [
          made.org,
          member.id,
        ]);
        return rows[0]?.role === 'admin';
      });

      // Remove them: the dialog names them.
      await members.getByRole('row').filter({ hasText: member.email }).getByRole('button', { name: 'Remove' }).click();
      const remove = page.getByRole('dialog');
      expect(await remove.getByRole('heading').textContent()).to.contain(member.name);
      expect(await remove.textContent()).to.contain(member.email);
      await remove.getByRole('button', { name: 'Remove' }).click();
      await members.getByText(member.email).waitFor({ state: 'detached' });
      const { rowCount } = await p.pool.query(`select 1 from workspace_members where org_id = $1 and user_id = $2`, [
        made.org,
        member.id,
      ]);
      expect(rowCount).to.equal(0);
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
    }
  });

  it('deleting an app (owners) names what goes with it and what keeps running; its keys stop working', async () => {
    const doomed = await createTestApp('Doomed shop');
    await addAppToWorkspace(await people(testEnv().deps), made.org, doomed.id);
    await page.goto(url(`/apps/${doomed.id}`));
    await page.getByRole('button', { name: 'Delete app' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.getByRole('heading').textContent()).to.contain('Doomed shop');
    expect(await dialog.textContent()).to.match(/Subscriptions already live keep billing at PayPal/);
    await dialog.getByRole('button', { name: 'Delete Doomed shop' }).click();
    await page.waitForURL((u) => !u.pathname.includes(doomed.id));
    await page.getByRole('heading', { name: 'Ops shop', level: 2 }).waitFor();
    expect((await call('GET', `/apps/${doomed.id}`, { token: doomed.api_key })).status).to.be.oneOf([401, 404]);
    expect((await get(`/apps/${app.id}`, app.api_key)).status).to.equal(200);
  });

  it('MCP: removing a connection asks first, naming it', async () => {
    const { client } = await connectMcp(app.id, { key: app.api_key }, 'Ops agent');
    await client.close();
    const list = async () =>
      (await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey)).body as { name: string }[];
    expect((await list()).map((c) => c.name)).to.include('Ops agent');
    await page.goto(url(`/apps/${app.id}/mcp`));
    const row = page.getByRole('table', { name: 'Connections' }).getByRole('row').filter({ hasText: 'Ops agent' });
    await row.getByRole('button', { name: 'Remove' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.getByRole('heading').textContent()).to.contain('Ops agent');
    await dialog.getByRole('button', { name: 'Keep it' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect((await list()).map((c) => c.name)).to.include('Ops agent');
    await row.getByRole('button', { name: 'Remove' }).click();
    await dialog.getByRole('button', { name: 'Remove connection' }).click();
    await row.waitFor({ state: 'detached' });
    expect((await list()).map((c) => c.name)).to.not.include('Ops agent');
  });
});
