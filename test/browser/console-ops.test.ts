// The console's operations pages in a real headless Chromium. At 1280 px and at 390 px (a phone), each action done as
// a person would do it (every control checked to be on screen, uncovered and big enough before it is tapped):
// payments (connect to the PayPal stand-in, the offer editor's 409 pointing there, disconnect), a webhook endpoint's
// create, edit, disable, delete, signing secret (reveal, rotate: the next delivery is signed with the new one) and its
// delivery's Temporal link, and the MCP page (settings, key caps, a connection's caps, removing connections). Also
// the keys' confirmations, deleting an app, and a workspace's people (invite, revoke, change a role, remove).
import { expect } from 'chai';
import { type Locator, type Page } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Webhook } from 'standardwebhooks';
import { people } from '../../src/people/better-auth.js';
import { addAppToWorkspace, createWorkspace } from '../../src/people/workspaces.js';
import { openBrowser, type FileBrowser } from '../helpers/browser.js';
import { choose, ensureConsoleBuilt, expected, reachable, shoot, tap, watch } from '../helpers/console.js';
import { sql } from '../../src/db/sql.js';
import { connectProvider, createTestApp, seedCatalog, type TestApp } from '../helpers/factories.js';
import { call, get, post } from '../helpers/http.js';
import { inbox, invitationToken } from '../helpers/mail.js';
import { startReceiver } from '../helpers/receiver.js';
import { connectMcp, mcpUrl } from '../helpers/mcp.js';
import { approveWith, TestOAuthProvider } from '../helpers/oauth.js';
import { PAYPAL_TEST_CREDENTIALS, testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const PASSWORD = 'correct horse battery staple';

describe('the console’s operations pages (payments, webhook endpoints, MCP, keys, people) in Chromium', function () {
  this.timeout(180_000);
  let browser: FileBrowser;
  let page: Page;
  let problems: string[];
  const allowed: RegExp[] = [];
  let app: TestApp;
  const made = { users: [] as string[], org: `ops_${Date.now()}` };
  const owner = { email: `ops-owner-${Date.now()}@example.com`, name: 'Olga Ops' };
  const member = { email: `ops-member-${Date.now()}@example.com`, name: 'Max Member', id: '' };
  const url = (p: string) => `${testEnv().baseUrl}/console${p}`;
  // Each page's create, edit and delete run on a laptop's width and on a phone's.
  const WIDTHS = [1280, 390] as const;
  const atWidth = (width: number) => page.setViewportSize({ width, height: width === 1280 ? 860 : 844 });
  /** A screenshot of a state on the phone (at 1280 px, `shoot` takes the 390 px one of the states it pictures). */
  const phoneShot = async (name: string) => {
    if (page.viewportSize()!.width === 390) await shoot(page, name);
  };
  const fillIn = async (input: Locator, value: string) => {
    await reachable(input);
    await input.fill(value);
  };
  /** An MCP client named `name` signs in with OAuth and the owner approves it (write): an OAuth connection. */
  const approveOAuthClient = async (name: string) => {
    const provider = new TestOAuthProvider(
      approveWith('write', { id: 'user_ops', name: owner.name, email: owner.email }, app.id),
    );
    Object.defineProperty(provider, 'clientMetadata', { value: { ...provider.clientMetadata, client_name: name } });
    const transport = new StreamableHTTPClientTransport(mcpUrl(app.id), { authProvider: provider });
    let refused: unknown;
    await new Client({ name, version: '1' }).connect(transport).catch((err) => (refused = err));
    expect(refused).to.be.instanceOf(UnauthorizedError);
    await transport.finishAuth(provider.code!);
  };

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
    browser = await openBrowser();
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
      await page.screenshot({ path: `.test-data/console/failed-ops-${this.currentTest.title.slice(0, 40)}.png` });
    await atWidth(1280);
    const unexpected = problems.filter((p) => !allowed.some((a) => a.test(p)));
    problems.length = 0;
    allowed.length = 0;
    if (this.currentTest?.state === 'passed') expect(unexpected, unexpected.join('\n')).to.deep.equal([]);
  });

  for (const width of WIDTHS) {
    it(`payments at ${width} px: the offer editor’s 409 links here; connect sandbox (a wrong secret refused), disconnect`, async () => {
      await atWidth(width);
      const base = `/apps/${app.id}`;
      const offer = `launch${width}`;
      const made = await post(`${base}/offers`, app.api_key, {
        id: offer,
        name: 'Launch',
        plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }],
      });
      expect(made.status, made.text).to.equal(201);
      await page.goto(url(`${base}/offers/${offer}`));
      await tap(page.getByRole('button', { name: 'Publish', exact: true }));
      const alert = page.getByRole('alert').filter({ hasText: 'payment provider not connected' });
      await alert.waitFor();
      await expected(page, problems, allowed, new RegExp(`^409 from POST .*/offers/${offer}/publish`));
      await tap(alert.getByRole('link', { name: 'Connect PayPal on the Payments page' }));
      await page.getByRole('heading', { name: 'Payments', level: 2 }).waitFor();
      await page.getByRole('status').filter({ hasText: 'Not connected' }).waitFor();
      // The URL PayPal calls, with a copy button.
      expect(await page.getByLabel('Notification URL').textContent()).to.equal(
        `${testEnv().baseUrl}/payments/webhooks/${app.id}`,
      );
      await reachable(page.getByRole('button', { name: 'Copy', exact: true }));
      const [[clientId, clientSecret]] = Object.entries(PAYPAL_TEST_CREDENTIALS);
      await tap(page.getByRole('radio', { name: 'Live' }).locator('xpath=following-sibling::label'));
      await page.getByText('Real money: buyers are charged.').waitFor();
      await tap(page.getByRole('radio', { name: 'Sandbox' }).locator('xpath=following-sibling::label'));
      await fillIn(page.getByRole('textbox', { name: 'Client id' }), clientId);
      const secretInput = page.getByRole('textbox', { name: 'Client secret' });
      await fillIn(secretInput, 'not-the-secret');
      await tap(page.getByRole('button', { name: 'Test and connect' }));
      // PayPal's refusal lands under the secret, and what was typed stays.
      // Mantine puts the error under the input, outside any alert: the secret's own error slot.
      const secretError = page.locator('.mantine-PasswordInput-error');
      await secretError.waitFor();
      expect(await secretError.textContent()).to.match(/^PayPal: .*check client_id, client_secret and env/);
      expect(await page.getByRole('alert').count()).to.equal(0);
      await expected(page, problems, allowed, /^422 from PUT .*\/payments/);
      expect(await page.getByRole('textbox', { name: 'Client id' }).inputValue()).to.equal(clientId);
      expect((await get(`${base}/payments`, app.api_key)).body.connected).to.equal(false);
      await phoneShot('payments-refused');
      await fillIn(secretInput, clientSecret);
      await tap(page.getByRole('button', { name: 'Test and connect' }));
      await page.getByRole('status').filter({ hasText: 'PayPal accepted the credentials' }).waitFor();
      const conn = (await get(`${base}/payments`, app.api_key)).body;
      expect(conn).to.include({ connected: true, env: 'sandbox', client_id: clientId });
      expect(await page.getByText('sandbox', { exact: true }).count()).to.equal(1);
      await shoot(page, width === 1280 ? 'payments' : 'payments-connected');

      // The offer publishes now.
      const published = await post(`${base}/offers/${offer}/publish`, app.api_key);
      expect(published.status, published.text).to.equal(200);

      await tap(page.getByRole('button', { name: 'Disconnect PayPal' }));
      const dialog = page.getByRole('dialog');
      await dialog.getByText('new checkouts').waitFor();
      expect(await dialog.textContent()).to.match(/Subscriptions already live keep billing at PayPal/);
      expect(await dialog.getByRole('heading').textContent()).to.contain(clientId);
      await phoneShot('payments-disconnect');
      await tap(dialog.getByRole('button', { name: 'Disconnect' }));
      await dialog.waitFor({ state: 'detached' });
      await page.getByRole('status').filter({ hasText: 'Not connected' }).waitFor();
      expect((await get(`${base}/payments`, app.api_key)).body.connected).to.equal(false);
      // The menu entry (behind the menu button on a phone).
      if (width === 390) await tap(page.getByRole('button', { name: 'Menu' }));
      const nav = page.getByRole('link', { name: 'Payments' });
      expect(await nav.getAttribute('href')).to.equal(`/console/apps/${app.id}/payments`);
      await reachable(nav);
    });
  }

  for (const width of WIDTHS) {
    it(`webhook endpoint at ${width} px: create, edit, disable, enable, reveal and rotate the secret, delete`, async () => {
      await atWidth(width);
      const base = `/apps/${app.id}`;
      const config = testEnv().deps.config as { embeddedTemporal: boolean };
      const wasEmbedded = config.embeddedTemporal;
      config.embeddedTemporal = true; // the console then links into the Temporal UI
      const receiver = await startReceiver();
      try {
        await page.goto(url(`${base}/webhooks`));
        // The event log's words are true: the usage threshold events are recorded only while an endpoint listens.
        await tap(page.getByRole('tab', { name: 'Event log' }));
        await page
          .getByText(
            /usage\.limit_warning, usage\.limit_reached\) are recorded only while an enabled endpoint subscribes/,
          )
          .waitFor();
        if (width === 1280) await shoot(page, 'event-log'); // at 1280 px, then 390 px
        await tap(page.getByRole('tab', { name: 'Endpoints' }));
        await fillIn(page.getByRole('textbox', { name: 'Endpoint URL' }), receiver.url);
        await fillIn(page.getByRole('textbox', { name: 'Event types' }), 'plan.created');
        await fillIn(page.getByRole('textbox', { name: 'Description' }), 'Warehouse');
        await tap(page.getByRole('button', { name: 'Add endpoint' }));
        await page.getByText(receiver.url).waitFor();
        const [ep] = (await get(`${base}/webhooks`, app.api_key)).body;
        expect(ep).to.include({ url: receiver.url, description: 'Warehouse', enabled: true });
        // The form starts over for the next endpoint.
        expect(await page.getByRole('textbox', { name: 'Event types' }).inputValue()).to.equal('*');
        expect(await page.getByRole('textbox', { name: 'Endpoint URL' }).inputValue()).to.equal('');
        await tap(page.getByText(receiver.url));
        await page.getByRole('button', { name: 'Edit', exact: true }).waitFor();
        await phoneShot('webhook-endpoint-open');

        // Edit: the events and the description.
        await tap(page.getByRole('button', { name: 'Edit', exact: true }));
        const edit = page.getByRole('dialog', { name: 'Edit endpoint' });
        await fillIn(edit.getByRole('textbox', { name: 'Event types' }), 'plan.created, plan.updated');
        await fillIn(edit.getByRole('textbox', { name: 'Description' }), 'Warehouse sync');
        await fillIn(edit.getByRole('textbox', { name: 'Endpoint URL' }), 'not a url');
        await tap(edit.getByRole('button', { name: 'Save endpoint' }));
        // The 400 under the URL input; the other edits kept.
        await eventually(
          async () =>
            (await edit.getByRole('textbox', { name: 'Endpoint URL' }).getAttribute('aria-invalid')) === 'true',
        );
        await expected(page, problems, allowed, /^400 from PATCH .*\/webhooks\//);
        expect(await edit.getByRole('textbox', { name: 'Description' }).inputValue()).to.equal('Warehouse sync');
        await phoneShot('webhook-edit-error');
        await fillIn(edit.getByRole('textbox', { name: 'Endpoint URL' }), receiver.url);
        await tap(edit.getByRole('button', { name: 'Save endpoint' }));
        await edit.waitFor({ state: 'detached' });
        const edited = (await get(`${base}/webhooks/${ep.id}`, app.api_key)).body;
        expect(edited).to.include({ description: 'Warehouse sync' });
        expect(edited.events).to.deep.equal(['plan.created', 'plan.updated']);

        // Disable, enable.
        await tap(page.getByRole('button', { name: 'Disable', exact: true }));
        await page.getByRole('button', { name: 'Enable', exact: true }).waitFor();
        expect((await get(`${base}/webhooks/${ep.id}`, app.api_key)).body.enabled).to.equal(false);
        await tap(page.getByRole('button', { name: 'Enable', exact: true }));
        await page.getByRole('button', { name: 'Disable', exact: true }).waitFor();
        expect((await get(`${base}/webhooks/${ep.id}`, app.api_key)).body.enabled).to.equal(true);

        // Reveal the secret: the one the API holds.
        await tap(page.getByRole('button', { name: 'Reveal signing secret' }));
        const shown = page.getByLabel('Signing secret', { exact: true });
        await shown.waitFor();
        const oldSecret = (await shown.textContent())!;
        expect(oldSecret).to.equal(edited.secret);

        // Rotate: the dialog names the endpoint and says the old one stops at once.
        await tap(page.getByRole('button', { name: 'Rotate secret' }));
        const rotate = page.getByRole('dialog');
        expect(await rotate.getByRole('heading').textContent()).to.contain('Warehouse sync');
        expect(await rotate.textContent()).to.match(/old secret stops working at once/);
        await phoneShot('webhook-rotate');
        await tap(rotate.getByRole('button', { name: 'Rotate now' }));
        // The new secret is not sent to the page: it is revealed on purpose (logged), as the first was.
        await page.getByRole('status').filter({ hasText: 'The secret was rotated' }).waitFor();
        expect(await shown.count()).to.equal(0);
        await tap(page.getByRole('button', { name: 'Reveal signing secret' }));
        await shown.waitFor();
        const newSecret = (await shown.textContent())!;
        expect(newSecret).to.not.equal(oldSecret);
        expect((await get(`${base}/webhooks/${ep.id}`, app.api_key)).body.secret).to.equal(newSecret);
        await reachable(page.getByRole('button', { name: 'Copy', exact: true }));
        await phoneShot('webhook-secret');
        // The next delivery is signed with the new secret, and not with the old one.
        expect((await post(`${base}/plans`, app.api_key, { id: `team-${width}`, name: 'Team' })).status).to.equal(201);
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
        await tap(page.getByRole('button', { name: 'Send test event' }));
        await page
          .getByRole('button', { name: /^Delivery plan\.created succeeded/ })
          .first()
          .waitFor();
        const rows = page.getByRole('button', { name: /^Delivery plan\.created succeeded/ });
        await eventually(async () => (await rows.count()) === 2);
        // Newest first: the test send, then the event's delivery.
        await tap(rows.nth(0));
        await page.getByText('Response', { exact: true }).first().waitFor();
        expect(await page.getByRole('link', { name: 'Delivery workflow in the Temporal UI' }).count()).to.equal(0);
        await tap(rows.nth(1));
        const link = page.getByRole('link', { name: 'Delivery workflow in the Temporal UI' });
        await link.waitFor();
        expect(await link.getAttribute('href')).to.equal(
          `http://127.0.0.1:${testEnv().deps.config.TEMPORAL_UI_PORT}/namespaces/default/workflows/${delivery.id}`,
        );
        await testEnv().deps.temporal.client.workflow.getHandle(delivery.id).describe();
        await shoot(page, width === 1280 ? 'webhook-endpoint' : 'webhook-delivery');

        // Delete: the dialog names the endpoint and what stops.
        await tap(page.getByRole('button', { name: 'Delete', exact: true }));
        const del = page.getByRole('dialog');
        expect(await del.getByRole('heading').textContent()).to.contain(receiver.url);
        expect(await del.textContent()).to.match(/pending deliver(y|ies) stops? without being sent/);
        await phoneShot('webhook-delete');
        await tap(del.getByRole('button', { name: 'Delete endpoint' }));
        await page.getByText('No endpoints yet.').waitFor();
        expect((await get(`${base}/webhooks`, app.api_key)).body).to.deep.equal([]);
      } finally {
        config.embeddedTemporal = wasEmbedded;
        await receiver.close();
      }
    });
  }

  for (const width of WIDTHS) {
    it(`checkouts at ${width} px: an open checkout is expired from the console, its dialog naming what it sells`, async () => {
      await atWidth(width);
      const base = `/apps/${app.id}`;
      await connectProvider(app);
      try {
        const publicKey = (await get(base, app.api_key)).body.public_key as string;
        const account = `walk_${width}`;
        const chk = await post(`${base}/plans/pro/checkout`, publicKey, { interval: 'month', account });
        expect(chk.status, chk.text).to.equal(201);
        await page.goto(url(`${base}/billing`));
        await tap(page.getByRole('button', { name: 'Expire', exact: true }));
        const dialog = page.getByRole('dialog', { name: `Expire checkout ${chk.body.id}?` });
        expect(await dialog.textContent()).to.match(
          new RegExp(`account ${account}\\) can no longer pay for pro / month`),
        );
        await phoneShot('checkout-expire');
        await tap(dialog.getByRole('button', { name: 'Expire checkout' }));
        await dialog.waitFor({ state: 'detached' });
        expect((await get(`${base}/checkouts/${chk.body.id}`, app.api_key)).body.status).to.equal('expired');
        // The list shows it expired, with nothing left to expire.
        // (The status badge shown at this width: the filter's label is "Expired" now.)
        await page.getByText('expired', { exact: true }).filter({ visible: true }).first().waitFor();
        expect(await page.getByRole('button', { name: 'Expire', exact: true }).count()).to.equal(0);
        // A checkout cancelled as a duplicate says why and what was refunded, not only "cancelled".
        const dup = await post(`${base}/plans/pro/checkout`, publicKey, { interval: 'month', account: `dup_${width}` });
        const refund = { status: 'refunded', amount: 29, currency: 'USD', payments: [], refunded_at: '2026-11-26' };
        await sql(
          testEnv().deps.orm.em.fork(),
          `update checkouts set status = 'cancelled', cancel_reason = $2, refund = $3::jsonb where id = $1`,
          [dup.body.id, 'The account already had a subscription.', JSON.stringify(refund)],
        );
        await page.reload();
        await page
          .getByText('The account already had a subscription. Refunded 29 USD.')
          .locator('visible=true')
          .first()
          .waitFor();
      } finally {
        await call('DELETE', `/apps/${app.id}/payments`, { token: app.api_key });
      }
    });
  }

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
      // The only owner can be neither removed nor demoted: the controls are disabled, and the row says why.
      const ownerRow = members.getByRole('row').filter({ hasText: owner.email });
      expect(await ownerRow.getByRole('button', { name: 'Remove' }).isDisabled()).to.equal(true);
      expect(
        await section
          .getByRole('textbox', { name: `Role of ${owner.email}` })
          .or(section.getByRole('combobox', { name: `Role of ${owner.email}` }))
          .first()
          .isDisabled(),
      ).to.equal(true);
      await ownerRow.getByText('A workspace keeps at least one owner').waitFor();
      await shoot(page, 'people-only-owner');

      await section.getByRole('textbox', { name: 'Email' }).fill('not-an-email');
      await section.getByRole('button', { name: 'Send invitation' }).click();
      // The browser's own check stops it first; then a real address with a role.
      await section.getByRole('textbox', { name: 'Email' }).fill('newbie@example.com');
      await choose(page, section.getByRole('combobox', { name: 'Role', exact: true }), { name: 'Viewer' });
      const before = (await inbox('newbie@example.com')).length;
      await section.getByRole('button', { name: 'Send invitation' }).click();
      // Sent by email to the address; the page shows that it went, never the link.
      await section.getByRole('status').filter({ hasText: 'The invitation was sent to newbie@example.com.' }).waitFor();
      const token = await invitationToken('newbie@example.com', before);
      expect(await section.textContent()).to.not.contain(token);
      const pending = section.getByRole('table', { name: 'Pending invitations' });
      await pending.getByText('newbie@example.com').waitFor();
      expect(await pending.textContent()).to.contain('Viewer');
      const p = await people(testEnv().deps);
      const inv = await p.pool.query(`select id, role, status from workspace_invitations where org_id = $1`, [
        made.org,
      ]);
      expect(inv.rows).to.deep.equal([{ id: inv.rows[0].id, role: 'viewer', status: 'pending' }]);
      await shoot(page, 'people-invited');
      // Sent again: a new link by email, the older one stops.
      await pending.getByRole('button', { name: 'Send the invitation of newbie@example.com again' }).click();
      const again = await invitationToken('newbie@example.com', before + 1);
      expect(again).to.not.equal(token);
      const lookup = (t: string) => call('POST', '/console/api/invitations/lookup', { body: { token: t } });
      expect((await lookup(token)).status).to.equal(404);

      await pending.getByRole('button', { name: 'Revoke' }).click();
      const dialog = page.getByRole('dialog');
      expect(await dialog.getByRole('heading').textContent()).to.contain('newbie@example.com');
      await dialog.getByRole('button', { name: 'Revoke' }).click();
      await section.getByText('None.').waitFor();
      expect((await lookup(again)).status).to.equal(404);

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

  for (const width of WIDTHS) {
    it(`MCP at ${width} px: settings, key caps, a connection's caps; removing one asks first, naming it`, async () => {
      await atWidth(width);
      const admin = testEnv().adminKey;
      const settings = async () => (await get(`/apps/${app.id}/mcp/settings`, admin)).body;
      const list = async () =>
        (await get(`/apps/${app.id}/mcp/connections`, admin)).body as {
          name: string;
          guardrails: { spend_cap: { amount: number; currency: string } | null } | null;
        }[];
      // From the same settings at each width.
      const reset = await call('PATCH', `/apps/${app.id}/mcp/settings`, {
        token: admin,
        body: {
          enabled: true,
          access_level: 'write',
          tool_overrides: {},
          key_guardrails: { spend_cap: null, usage_caps: [] },
        },
      });
      expect(reset.status, reset.text).to.equal(200);
      // A client on the secret key, and one a person approved (OAuth: it has caps of its own).
      const agent = `Ops agent ${width}`;
      const assistant = `Ops assistant ${width}`;
      const { client } = await connectMcp(app.id, { key: app.api_key }, agent);
      await client.close();
      await approveOAuthClient(assistant);
      expect((await list()).map((c) => c.name)).to.include.members([agent, assistant]);

      await page.goto(url(`/apps/${app.id}/mcp`));
      // The connections: a table on a laptop, cards on a phone (nothing to scroll sideways for).
      const connection = (name: string) =>
        width === 1280
          ? page.getByRole('table', { name: 'Connections' }).getByRole('row').filter({ hasText: name })
          : page.getByRole('list', { name: 'Connections' }).getByRole('listitem').filter({ hasText: name });
      await connection(assistant).waitFor();

      // Settings: a tool switched off against the level's default, and the default level.
      await tap(page.getByRole('switch', { name: 'Tool create_plan' }));
      expect(await page.getByRole('switch', { name: 'Tool create_plan' }).isChecked()).to.equal(false);
      await choose(page, page.getByRole('combobox', { name: 'Default access level' }), { name: 'Read only' });
      await tap(page.getByRole('button', { name: 'Save MCP settings' }));
      await eventually(async () => {
        const s = await settings();
        return s.access_level === 'read' && s.tool_overrides.create_plan === false;
      });
      await page.getByText('(override)').waitFor();
      await phoneShot('mcp-settings');

      // The key guard-rails.
      const keys = page.locator('.mantine-Card-root').filter({ hasText: 'Key guard-rails' });
      await fillIn(keys.getByLabel('Spend cap amount'), '200');
      await tap(keys.getByRole('button', { name: 'Add a usage cap' }));
      await fillIn(keys.getByLabel('Usage cap amount'), '1000');
      await tap(keys.getByRole('button', { name: 'Save key guard-rails' }));
      await keys.getByText('Spend: 0 of 200 USD per month (200 left)').waitFor();
      const caps = (await settings()).key_guardrails;
      expect(caps.spend_cap).to.include({ amount: 200, currency: 'USD', period: 'month' });
      expect(caps.usage_caps.map((c: { amount: number }) => c.amount)).to.deep.equal([1000]);

      // The OAuth connection's own caps, in a dialog.
      await tap(connection(assistant).getByRole('button', { name: 'Edit caps' }));
      const capsDialog = page.getByRole('dialog', { name: `Guard-rails of ${assistant}` });
      await fillIn(capsDialog.getByLabel('Spend cap amount'), '25');
      await fillIn(capsDialog.getByLabel('Spend cap currency'), 'eur');
      await phoneShot('mcp-connection-caps');
      await tap(capsDialog.getByRole('button', { name: 'Save guard-rails' }));
      await capsDialog.waitFor({ state: 'detached' });
      await connection(assistant).getByText('Spend: 0 of 25 EUR per month (25 left)').waitFor();
      const saved = (await list()).find((c) => c.name === assistant)!;
      expect(saved.guardrails?.spend_cap).to.include({ amount: 25, currency: 'EUR' });
      await phoneShot('mcp-connections');

      // Remove: the dialog names the connection; keeping it keeps it.
      await tap(connection(agent).getByRole('button', { name: 'Remove' }));
      const dialog = page.getByRole('dialog');
      expect(await dialog.getByRole('heading').textContent()).to.contain(agent);
      await tap(dialog.getByRole('button', { name: 'Keep it' }));
      await dialog.waitFor({ state: 'detached' });
      expect((await list()).map((c) => c.name)).to.include(agent);
      await tap(connection(agent).getByRole('button', { name: 'Remove' }));
      await tap(dialog.getByRole('button', { name: 'Remove connection' }));
      await connection(agent).waitFor({ state: 'detached' });
      expect((await list()).map((c) => c.name)).to.not.include(agent);
      // The approved one: its dialog says who approved it and that it must sign in again.
      await tap(connection(assistant).getByRole('button', { name: 'Remove' }));
      expect(await dialog.getByRole('heading').textContent()).to.contain(assistant);
      expect(await dialog.textContent()).to.contain(`approved by ${owner.email}`);
      await phoneShot('mcp-remove');
      await tap(dialog.getByRole('button', { name: 'Remove connection' }));
      await connection(assistant).waitFor({ state: 'detached' });
      expect((await list()).map((c) => c.name)).to.not.include(assistant);
    });
  }
});
