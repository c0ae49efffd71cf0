import http from 'node:http';
import type net from 'node:net';
import { expect } from 'chai';
import { type BrowserContext, type Page, type Route } from 'playwright-core';
import { markWorkspaceReadOnly } from '../../src/apps/apps.service.js';
import { seedDemo } from '../../src/dev/demo-seed.js';
import { closePeople, issueSetupToken, people } from '../../src/people/better-auth.js';
import { openBrowser, type FileBrowser } from '../helpers/browser.js';
import { choose, ensureConsoleBuilt, expected, rawRequest, shoot, watch } from '../helpers/console.js';
import { invitationLink } from '../helpers/mail.js';
import { call, del, get, patch, post } from '../helpers/http.js';
import { pkce, postForm } from '../helpers/oauth.js';
import { startReceiver } from '../helpers/receiver.js';
import { PAYPAL_TEST_CREDENTIALS, testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';
import { sql } from '../../src/db/sql.js';
import type { Resolver } from '../../src/webhooks/url-policy.js';

const OWNER = { name: 'Olivia Owner', email: 'owner@example.com', password: 'correct horse battery' };

describe('the operator console in a real browser (headless Chromium)', function () {
  this.timeout(180_000);
  let browser: FileBrowser;
  let owner: BrowserContext;
  let page: Page;
  let problems: string[];
  const allowed: RegExp[] = [];
  let appId: string;
  const url = (p: string) => `${testEnv().baseUrl}/console${p}`;

  before(async function () {
    this.timeout(15 * 60_000);
    ensureConsoleBuilt();
    browser = await openBrowser();
    owner = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    page = await owner.newPage();
    problems = watch(page);
  });
  after(async () => {
    await browser?.close();
    await closePeople(testEnv().deps);
  });
  afterEach(async function () {
    if (this.currentTest?.state === 'failed')
      await page.screenshot({ path: `.test-data/console/failed-${this.currentTest.title.slice(0, 40)}.png` });
    // Every step of a person's visit: no errors in the browser console, no failed requests.
    const unexpected = problems.filter((p) => !allowed.some((a) => a.test(p)));
    problems.length = 0;
    allowed.length = 0;
    if (this.currentTest?.state === 'passed') expect(unexpected, unexpected.join('\n')).to.deep.equal([]);
  });

  it('the first owner signs up from the one-time setup link; the link then stops working', async () => {
    const token = (await issueSetupToken(await people(testEnv().deps)))!;
    expect(token).to.be.a('string');
    await page.goto(url(`/setup?token=${token}`));
    await page.getByLabel('Your name').fill(OWNER.name);
    await page.getByLabel(/^Email/).fill(OWNER.email);
    await page.getByLabel(/^Password/).fill('short');
    await page.getByLabel('Workspace name').fill('Acme');
    await page.getByRole('button', { name: 'Create the owner' }).click();
    // The server's words, not a generic failure.
    await page.getByRole('alert').filter({ hasText: 'password' }).waitFor();
    await expected(page, problems, allowed, /^400 from POST .*\/console\/api\/setup/);
    await page.getByLabel(/^Password/).fill(OWNER.password);
    await page.getByRole('button', { name: 'Create the owner' }).click();
    await page.getByRole('heading', { name: `Welcome, ${OWNER.name}` }).waitFor();
    await shoot(page, 'welcome');

    // The session is an HTTP-only cookie; no key sits in the page's storage.
    const cookies = await owner.cookies();
    const session = cookies.find((c) => c.name.includes('session_token'))!;
    expect(session).to.include({ httpOnly: true, sameSite: 'Lax' });
    expect(await page.evaluate(() => JSON.stringify(localStorage) + JSON.stringify(sessionStorage))).to.not.match(
      /key_|pub_/,
    );

    // The link was single use, and nobody else can set up an owner now.
    const again = await call('POST', '/console/api/setup', {
      body: { ...OWNER, email: 'x@example.com', token },
      headers: { Origin: testEnv().baseUrl },
    });
    expect(again.status).to.equal(409);
    // From another site the link is refused before it is even looked at.
    const forged = await call('POST', '/console/api/setup', {
      body: { ...OWNER, email: 'x@example.com', token },
      headers: { Origin: 'https://evil.example' },
    });
    expect(forged.status).to.equal(403);
    const withAdmin = await post('/console/api/setup', testEnv().adminKey, { ...OWNER, email: 'y@example.com' });
    expect(withAdmin.status).to.equal(409);
  });

  it('creates an app, a plan and an entitlement, and sets a limit in the plans × entitlements grid', async () => {
    await page.getByRole('link', { name: 'Create your first app' }).click();
    await page.getByLabel('App name').fill('Notes');
    await page.getByRole('button', { name: 'Create app' }).click();
    // A new app opens on its home, the getting-started checklist; the catalog is its first step.
    await page.getByLabel('Getting started').waitFor();
    appId = /\/apps\/([^/?#]+)$/.exec(new URL(page.url()).pathname)![1];
    await page.getByRole('link', { name: 'Catalog', exact: true }).first().click();
    await page.getByRole('heading', { name: 'Catalog' }).waitFor();
    // The app belongs to the owner's workspace (the spec's org, app_ids in order).
    const org = await get('/orgs/acme', testEnv().adminKey);
    expect(org.body.app_ids).to.deep.equal([appId]);

    await page.getByLabel('Entitlement id').fill('ai_credits');
    await page.getByLabel('Entitlement name').fill('AI credits');
    await page.getByRole('button', { name: 'Add entitlement' }).click();
    await page.getByLabel('Plan id').fill('pro');
    await page.getByLabel('Plan name').fill('Pro');
    await page.getByRole('button', { name: 'Add plan' }).click();
    await page.getByRole('button', { name: 'Include Pro × AI credits' }).waitFor();
    // An id that exists: the API's 409 message shown as worded.
    await page.getByLabel('Plan id').fill('pro');
    await page.getByLabel('Plan name').fill('Pro again');
    await page.getByRole('button', { name: 'Add plan' }).click();
    const conflict = await get(`/apps/${appId}/plans`, testEnv().adminKey);
    expect(conflict.body).to.have.length(1);
    await page
      .getByRole('alert')
      .filter({ hasText: /exists/i })
      .waitFor();
    await expected(page, problems, allowed, /^409 from POST .*\/plans$/);

    await page.getByRole('button', { name: 'Include Pro × AI credits' }).click();
    const cell = page.getByLabel('Pro × AI credits limit');
    await cell.fill('100');
    await cell.press('Enter');
    await eventually(async () => {
      const plan = await get(`/apps/${appId}/plans/pro`, testEnv().adminKey);
      expect(plan.body.entitlements).to.deep.equal([{ id: 'ai_credits', max: 100 }]);
      return true;
    });
    await page.getByLabel('Plan id').fill('');
    await shoot(page, 'catalog');
  });

  it('shows an account with usage against its limit, and the bar moves after API calls', async () => {
    const app = (await get(`/apps/${appId}`, testEnv().adminKey)).body;
    expect(
      (await post(`/apps/${appId}/namespaces`, app.api_key, { id: 'acct_1', name: 'Ada', plan: 'pro' })).status,
    ).to.equal(201);
    await page.getByRole('link', { name: 'Accounts' }).click();
    await page.getByRole('link', { name: 'Ada' }).click();
    expect(await page.getByLabel('AI credits usage', { exact: true }).textContent()).to.equal('0 / 100');
    await post(`/apps/${appId}/namespaces/acct_1/usage/ai_credits/amount`, app.api_key, { amount: 85 });
    await page.reload();
    expect(await page.getByLabel('AI credits usage', { exact: true }).textContent()).to.equal('85 / 100');
    const bar = page.getByLabel('AI credits usage bar');
    expect(await bar.getAttribute('aria-valuenow')).to.equal('85');
    await page.getByText('limit set by plan Pro').waitFor();
    await shoot(page, 'account');
  });

  it('reveals, copies and regenerates keys after a confirmation', async () => {
    await page.getByRole('link', { name: 'App and keys' }).click();
    const before = (await get(`/apps/${appId}`, testEnv().adminKey)).body.api_key;
    const value = page.getByLabel('Secret key value');
    expect(await value.textContent()).to.not.contain(before);
    await page.getByRole('button', { name: 'Reveal' }).first().click();
    // Asked for on the click (an explicit, logged reveal), not sent with the page.
    await page.getByText(before, { exact: true }).waitFor();
    expect(await value.textContent()).to.equal(before);
    await page.getByRole('button', { name: 'Regenerate' }).first().click();
    await page.getByRole('button', { name: 'Keep the old key' }).click();
    expect((await get(`/apps/${appId}`, testEnv().adminKey)).body.api_key).to.equal(before);
    await page.getByRole('button', { name: 'Regenerate' }).first().click();
    await page.getByRole('button', { name: 'Regenerate now' }).click();
    await eventually(async () => (await get(`/apps/${appId}`, testEnv().adminKey)).body.api_key !== before);
    // The new key is masked again until someone asks to see it.
    await eventually(async () => /^key_•+$/.test((await value.textContent()) ?? ''));
    const after = (await get(`/apps/${appId}`, testEnv().adminKey)).body.api_key;
    await page.getByRole('button', { name: 'Reveal' }).first().click();
    await page.getByText(after, { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Hide' }).first().click();
    await shoot(page, 'app');
  });

  it('retries a failed webhook delivery from the delivery log', async () => {
    let healthy = false;
    const receiver = await startReceiver(() =>
      healthy ? { status: 200, body: 'thanks' } : { status: 500, body: 'down' },
    );
    try {
      const app = (await get(`/apps/${appId}`, testEnv().adminKey)).body;
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByText('No endpoints yet').waitFor();
      await page.getByLabel('Endpoint URL').fill(receiver.url);
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.getByText(receiver.url).waitFor();
      await post(`/apps/${appId}/namespaces`, app.api_key, { id: 'acct_2', plan: 'pro' });
      // Seven attempts on the test schedule (300 ms apart), then failed.
      await eventually(async () => {
        const [hook] = (await get(`/apps/${appId}/webhooks`, app.api_key)).body;
        const [d] = (await get(`/apps/${appId}/webhooks/${hook.id}/deliveries`, app.api_key)).body.data;
        return d.status === 'failed';
      }, 20_000);
      await page.reload();
      await page.getByText(receiver.url).click();
      await page.getByRole('button', { name: 'Delivery account.created failed' }).click();
      await page.getByText('"account.created"').first().waitFor();
      healthy = true;
      await page.getByRole('button', { name: 'Retry' }).click();
      await page.getByRole('button', { name: 'Delivery account.created succeeded' }).waitFor();
      expect(receiver.received.at(-1)!.body).to.contain('acct_2');
      await shoot(page, 'webhooks');
    } finally {
      await receiver.close();
    }
  });

  it('an invited member signs in and sees only the apps of their workspaces', async () => {
    await page.getByRole('link', { name: 'App and keys' }).click();
    await page.getByLabel(/^Email/).fill('member@example.com');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    // The link goes to the address by email (the run's mail catcher), not to this page.
    await page.getByRole('status').filter({ hasText: 'The invitation was sent to member@example.com.' }).waitFor();
    expect(await page.getByText(/invite\?token=/).count()).to.equal(0);
    const link = (await invitationLink('member@example.com')).url;

    // Someone else's app, in a workspace the member is not in.
    const other = (await post('/apps', testEnv().adminKey, { name: 'Not yours' })).body;
    await post('/orgs', testEnv().adminKey, { id: 'other', app_ids: [other.id] });

    const member = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const mp = await member.newPage();
    const memberProblems = watch(mp);
    await mp.goto(link);
    await mp.getByText('member@example.com').waitFor();
    await mp.getByLabel('Your name').fill('Max Member');
    await mp.getByLabel(/^Password/).fill('another long password');
    await mp.getByRole('button', { name: 'Join the workspace' }).click();
    await mp
      .getByRole('heading', { name: 'Notes' })
      .waitFor()
      .catch(async (err) => {
        await mp.screenshot({ path: '.test-data/console/failed-member.png' });
        throw new Error(`${err}\n${memberProblems.join('\n')}`);
      });
    const me: any = await mp.evaluate(() => fetch('/console/api/me').then((r) => r.json()));
    expect(me.workspaces.map((w: { id: string }) => w.id)).to.deep.equal(['acme']);
    expect(me.workspaces[0].role).to.equal('member');
    // The public API on their behalf: their app yes, another workspace's app no.
    const mine = await mp.evaluate((id) => fetch(`/console/api/apps/${id}/plans`).then((r) => r.status), appId);
    const theirs = await mp.evaluate((id) => fetch(`/console/api/apps/${id}/plans`).then((r) => r.status), other.id);
    expect([mine, theirs]).to.deep.equal([200, 404]);
    // Cross-site writes with the member's session cookie are refused (CSRF), with plain node:http so that
    // exactly these headers are sent.
    const cookie = (await member.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const target = `${testEnv().baseUrl}/console/api/apps/${appId}/plans`;
    const forge = (headers: Record<string, string>) =>
      rawRequest(target, 'POST', { cookie, ...headers }, { id: 'evil', name: 'Evil' });
    const forged: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      {},
    ];
    for (const headers of forged) {
      const res = await forge(headers);
      expect(res.status, JSON.stringify(headers)).to.equal(403);
      expect(JSON.parse(res.body).error).to.match(/^Cross-site request refused/);
    }
    expect((await get(`/apps/${appId}/plans/evil`, testEnv().adminKey)).status).to.equal(404);
    // The same cookie from the console's own origin is the member's ordinary write.
    const own = await forge({ origin: testEnv().baseUrl });
    expect(own.status).to.equal(201);
    expect((await del(`/apps/${appId}/plans/evil`, testEnv().adminKey)).status).to.equal(200);
    // Better Auth refuses a cross-site sign-out (and every other state-changing /api/auth call) with the cookie.
    const signOut = await rawRequest(
      `${testEnv().baseUrl}/api/auth/sign-out`,
      'POST',
      { cookie, origin: 'https://evil.example' },
      {},
    );
    expect(signOut.status).to.equal(403);
    const still = await mp.evaluate(() => fetch('/console/api/me').then((r) => r.json()));
    expect((still as { user: unknown }).user).to.not.equal(null);
    // The one problem the member's page saw is the 404 provoked above.
    const unexpected = memberProblems.filter((p) => !p.includes(`/console/api/apps/${other.id}/plans`));
    expect(unexpected, unexpected.join('\n')).to.deep.equal([]);
    await member.close();
  });

  it('approves an MCP client on the console consent page as the signed-in person', async () => {
    // The MCP client: registered, with a loopback redirect URI that records where the browser comes back.
    const hits: URL[] = [];
    const cb = http.createServer((req, res) => {
      const u = new URL(req.url!, 'http://127.0.0.1');
      if (u.pathname === '/callback') hits.push(u);
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>Back in the client</title><h1>Signed in</h1>');
    });
    await new Promise<void>((resolve) => cb.listen(0, '127.0.0.1', () => resolve()));
    const redirect = `http://127.0.0.1:${(cb.address() as net.AddressInfo).port}/callback`;
    const client = (await post('/oauth/register', null, { redirect_uris: [redirect], client_name: 'Claude <Desktop>' }))
      .body;
    const { verifier, challenge } = pkce();
    const q = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirect,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      scope: 'mcp:write',
      state: 'xyz',
    });
    // A signed-out browser: /oauth/authorize sends it to the console, which asks the person to sign in first.
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const cp = await context.newPage();
    const consentProblems = watch(cp);
    try {
      await cp.goto(`${testEnv().baseUrl}/oauth/authorize?${q}`);
      expect(new URL(cp.url()).pathname).to.equal('/console/oauth/consent');
      await cp.getByLabel(/^Email/).fill(OWNER.email);
      await cp.getByLabel(/^Password/).fill(OWNER.password);
      await cp.getByRole('button', { name: 'Sign in' }).click();
      await cp.getByTestId('client-name').waitFor();
      expect(await cp.getByTestId('client-name').textContent()).to.equal('Claude <Desktop>');
      await cp.getByText(OWNER.email).waitFor();
      // The requested level is preselected; the person may choose another.
      expect(await cp.getByRole('radio', { name: 'Read and write' }).isChecked()).to.equal(true);
      await shoot(cp, 'consent');

      // A cross-site approval with the person's cookie is refused.
      const requestId = new URL(cp.url()).searchParams.get('request')!;
      const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
      const forged = await rawRequest(
        `${testEnv().baseUrl}/console/api/oauth/requests/${requestId}/approve`,
        'POST',
        { cookie, origin: 'https://evil.example' },
        { access_level: 'full', app_id: appId },
      );
      expect(forged.status).to.equal(403);

      // Limits the person may set for the assistant (optional; shown for the levels that can write).
      await cp.getByRole('button', { name: 'Set limits for this assistant (optional)' }).click();
      await cp.getByLabel('Spend cap amount').fill('50');
      await cp.getByRole('button', { name: 'Add a usage cap' }).click();
      await cp.getByLabel('Usage cap entitlement').fill('api_calls');
      await shoot(cp, 'consent-limits');

      await cp.getByRole('radio', { name: 'Read only' }).check();
      await cp.getByRole('button', { name: 'Approve' }).click();
      await cp.waitForURL(/\/callback\?/);
      const back = hits.at(-1)!;
      expect(back.searchParams.get('state')).to.equal('xyz');
      const tokens = await postForm('/oauth/token', {
        grant_type: 'authorization_code',
        code: back.searchParams.get('code')!,
        code_verifier: verifier,
        client_id: client.client_id,
        redirect_uri: redirect,
      });
      expect(tokens.status).to.equal(200);
      expect(tokens.body.scope).to.equal('mcp:read');
      // The connection belongs to the person who approved it.
      const [conn] = (await get(`/apps/${appId}/mcp/connections`, testEnv().adminKey)).body;
      expect(conn).to.include({ kind: 'oauth', access_level: 'read', name: 'Claude <Desktop>' });
      const me: any = await page.evaluate(() => fetch('/console/api/me').then((r) => r.json()));
      expect(conn.user).to.deep.include({ id: me.user.id, email: OWNER.email, name: OWNER.name });
      expect(consentProblems, consentProblems.join('\n')).to.deep.equal([]);
    } finally {
      await context.close();
      await new Promise<void>((resolve) => cb.close(() => resolve()));
    }
  });

  it('creates an offer, previews it live and publishes it against the PayPal stand-in', async () => {
    const [[client_id, client_secret]] = Object.entries(PAYPAL_TEST_CREDENTIALS);
    await call('PUT', `/apps/${appId}/payments`, {
      token: testEnv().adminKey,
      body: { client_id, client_secret, env: 'sandbox' },
    });
    await page.getByRole('link', { name: 'Offers' }).click();
    await page.getByText('No offers yet').waitFor();
    await page.getByLabel('Offer id').fill('launch');
    await page.getByLabel('Offer name').fill('Launch week');
    await choose(page, page.getByRole('combobox', { name: /^Plan/ }), { name: 'Pro' });
    await page.getByLabel('Monthly price (USD)').fill('7');
    await page.getByRole('button', { name: 'Create draft' }).click();
    await page.getByLabel('Offer status').filter({ hasText: 'draft' }).waitFor();
    // The live preview follows unsaved edits.
    await page.getByLabel('pro monthly price', { exact: true }).fill('6');
    await page.getByLabel('Live preview').getByText('6 USD').waitFor();
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('button', { name: 'Publish' }).click();
    await page.getByLabel('Offer status').filter({ hasText: 'active' }).waitFor();
    const offer = (await get(`/apps/${appId}/offers/launch`, testEnv().adminKey)).body;
    expect(offer).to.include({ status: 'active', published: true });
    expect(offer.plans[0].prices[0]).to.include({ interval: 'month', amount: 6 });
    await shoot(page, 'offer-editor');
    await page.getByRole('button', { name: 'Archive' }).click();
    await page.getByLabel('Offer status').filter({ hasText: 'archived' }).waitFor();
  });

  it('shows the offer funnel (prepared, opened, upgrade links) and the 402 upgrade funnel as the API counts them', async () => {
    const admin = testEnv().adminKey;
    const base = `/apps/${appId}`;
    const ok = async (path: string, body: unknown) => {
      const res = await post(`${base}${path}`, admin, body);
      expect(res.status, `${path} ${res.text}`).to.be.oneOf([200, 201]);
      return res.body;
    };
    // A blocking limit whose upgrade is an offer; the app has no pricing page, so a 402 makes a PayPal link.
    expect((await patch(base, admin, { checkout_url: null })).status).to.equal(200);
    await ok('/entitlements', { id: 'exports', type: 'usage', name: 'Exports', overage: { mode: 'block' } });
    await ok('/plans', { id: 'basic', name: 'Basic', pricingCard: { monthlyPrice: 5, currency: 'USD' } });
    await ok('/plans/basic/entitlements', { id: 'exports', max: 1 });
    await ok('/plans', { id: 'plus', name: 'Plus', pricingCard: { monthlyPrice: 15, currency: 'USD' } });
    await ok('/plans/plus/entitlements', { id: 'exports', max: 100 });
    await ok('/offers', {
      id: 'more_exports',
      name: 'More exports',
      plans: [{ plan: 'plus', prices: [{ interval: 'month', amount: 12 }] }],
    });
    await ok('/offers/more_exports/publish', {});
    const limit = await patch(`${base}/entitlements/exports`, admin, {
      overage: { mode: 'block', offer_id: 'more_exports' },
    });
    expect(limit.status, limit.text).to.equal(200);
    const { public_key } = (await get(base, admin)).body;
    const links: string[] = [];
    for (const id of ['ex1', 'ex2', 'ex3']) {
      await ok('/namespaces', { id, plan: 'basic' });
      await ok(`/namespaces/${id}/usage/exports/add`, {});
      const res = await post(`${base}/namespaces/${id}/usage/exports/add`, public_key);
      expect(res.status, res.text).to.equal(402);
      links.push(res.body.offer.checkout_url);
    }
    // ex1 opens the link and pays; ex2 opens it and leaves; ex3 never opens it.
    const open = async (link: string) => (await fetch(link, { redirect: 'manual' })).headers.get('location')!;
    await testEnv().paypal.approve(await open(links[0]));
    await open(links[1]);
    const paid = (await get(`${base}/checkouts?offer=more_exports`, admin)).body.data.find(
      (c: { account: string }) => c.account === 'ex1',
    );
    await eventually(
      async () => (await post(`${base}/checkouts/${paid.id}/complete`, public_key)).body.status === 'completed',
    );
    const stats = (await get(`${base}/offers/more_exports/stats`, admin)).body;
    const funnel = (await get(`${base}/analytics/upgrades?interval=30d`, admin)).body;
    expect(stats).to.deep.include({ prepared: 3, checkouts: 2, completed: 1 });
    expect(stats.upgrade_links).to.deep.equal({ prepared: 3, opened: 2, completed: 1 });
    expect(funnel).to.deep.include({ limit_reached: 3, link_shown: 3, opened: 2, paid: 1 });

    await page.goto(url(`/apps/${appId}/offers/more_exports`));
    const figure = async (label: string) =>
      Number((await page.getByLabel(label, { exact: true }).locator('p').nth(1).textContent())?.trim());
    await page.getByLabel('Checkouts prepared', { exact: true }).waitFor();
    expect({
      prepared: await figure('Checkouts prepared'),
      checkouts: await figure('Checkouts opened'),
      completed: await figure('Checkouts completed'),
    }).to.deep.equal({ prepared: stats.prepared, checkouts: stats.checkouts, completed: stats.completed });
    expect({
      prepared: await figure('Upgrade links prepared'),
      opened: await figure('Upgrade links opened'),
      completed: await figure('Upgrade links completed'),
    }).to.deep.equal(stats.upgrade_links);
    expect({
      limit_reached: await figure('Upgrade funnel limit reached'),
      link_shown: await figure('Upgrade funnel link shown'),
      opened: await figure('Upgrade funnel opened'),
      paid: await figure('Upgrade funnel paid'),
    }).to.deep.equal({
      limit_reached: funnel.limit_reached,
      link_shown: funnel.link_shown,
      opened: funnel.opened,
      paid: funnel.paid,
    });
    const row = page
      .getByRole('table', { name: 'Upgrade funnel by entitlement' })
      .getByRole('row', { name: /exports/ });
    expect((await row.getByRole('cell').allInnerTexts()).map((t) => t.trim())).to.deep.equal([
      'exports',
      ...[funnel.by_entitlement[0].limit_reached, funnel.by_entitlement[0].link_shown, funnel.by_entitlement[0].opened]
        .concat(funnel.by_entitlement[0].paid)
        .map(String),
    ]);
    expect(await page.getByLabel('Upgrade conversion').textContent()).to.include(`${funnel.revenue.USD} USD`);
    await page.locator('.recharts-surface').nth(1).waitFor();
    await shoot(page, 'offer-funnels'); // at 1280 px and 390 px

    // Leave the owner's app as the later tests expect it: no offer, account or subscription of this test.
    expect((await post(`${base}/namespaces/ex1/subscription/cancel`, admin, {})).status).to.equal(200);
    for (const id of ['ex1', 'ex2', 'ex3']) expect((await del(`${base}/namespaces/${id}`, admin)).status).to.equal(200);
    expect((await del(`${base}/offers/more_exports`, admin)).status).to.be.oneOf([200, 204]);
  });

  it('edits a cancel flow: a branch for one answer, the offer preview for chosen answers', async () => {
    await page.getByRole('link', { name: 'Cancel flows' }).click();
    await page.getByRole('button', { name: 'Create from the template' }).click();
    await page.getByLabel('Steps').waitFor();
    // "Something else" skips the offer and goes straight to the confirm step.
    await choose(page, page.getByRole('combobox', { name: 'After “Something else”' }), { name: 'confirm' });
    await page.getByRole('button', { name: 'Save flow' }).click();
    await eventually(async () => {
      const [flow] = (await get(`/apps/${appId}/cancel-flows`, testEnv().adminKey)).body;
      const reason = flow.steps.find((x: { id: string }) => x.id === 'reason');
      return reason.answers.find((a: { id: string }) => a.id === 'other').next === 'confirm';
    });
    // The page reloads the saved flow and mounts the editor and the preview again: wait for that first.
    await page.locator('button:disabled:not([data-loading])', { hasText: 'Save flow' }).waitFor();
    // The preview: "too expensive" gets the discount.
    await choose(page, page.getByRole('combobox', { name: 'Why are you cancelling?' }), {
      name: 'It is too expensive',
    });
    await page.getByLabel('Offer preview').getByText(/25%/).first().waitFor();
    await shoot(page, 'cancel-flow-editor');
  });

  it('builds an offer: adds a plan with its catalog pricing, extras and an order bump, then publishes it', async () => {
    const admin = testEnv().adminKey;
    const base = `/apps/${appId}`;
    expect(
      (
        await post(`${base}/plans`, admin, {
          id: 'team',
          name: 'Team',
          pricingCard: { title: 'Team', monthlyPrice: 30, yearlyPrice: 300, currency: 'USD' },
        })
      ).status,
    ).to.equal(201);
    expect((await post(`${base}/addons`, admin, { id: 'priority_support', name: 'Priority support' })).status).to.equal(
      201,
    );
    await page.getByRole('link', { name: 'Offers' }).click();
    await page.getByLabel('Offer id').fill('summer');
    await page.getByLabel('Offer name').fill('Summer deal');
    await choose(page, page.getByRole('combobox', { name: /^Plan/ }), { name: 'Pro' });
    await page.getByLabel('Monthly price (USD)').fill('8');
    await page.getByRole('button', { name: 'Create draft' }).click();
    await page.getByLabel('Offer status').filter({ hasText: 'draft' }).waitFor();
    const preview = page.getByLabel('Live preview');

    // A plan from the catalog arrives with its regular prices, which the person then lowers.
    await choose(page, page.getByRole('combobox', { name: 'Add a plan from the catalog' }), { name: 'Team' });
    await page.getByRole('button', { name: 'Add plan' }).click();
    await preview.getByText('300 USD').waitFor();
    await page.getByLabel('team monthly price', { exact: true }).fill('24');
    await preview.getByText('24 USD').waitFor();
    await page.getByRole('button', { name: 'Remove team yearly price' }).click();
    await preview.getByText('300 USD').waitFor({ state: 'detached' });
    // Extras: a higher limit for buyers of Team through this offer.
    const team = page.getByRole('group', { name: 'Plan Team' });
    await choose(page, team.getByRole('combobox', { name: 'Extra limit for Team' }), { name: 'AI credits' });
    await team.getByRole('button', { name: 'Add extra' }).click();
    await page.getByLabel('Team extra AI credits limit').fill('500');
    await preview.getByText('AI credits: 500').waitFor();
    // Team first: buyers see the plans in the offer's order.
    await page.getByRole('button', { name: 'Move Team up' }).click();
    // The order bump.
    await choose(page, page.getByRole('combobox', { name: 'Add an order bump' }), { name: 'Priority support' });
    await page.getByLabel('Bump price', { exact: true }).fill('15');
    await page.getByRole('button', { name: 'Add bump' }).click();
    await preview.getByText('Add Priority support for 15 USD').waitFor();

    // A price that cannot be billed: the API's own words under the preview, nothing saved.
    await page.getByLabel('Cycles of pro monthly price').fill('3');
    await preview
      .getByRole('alert')
      .filter({ hasText: 'plan pro has no regular monthly USD price to continue at after 3 cycles' })
      .waitFor();
    await expected(page, problems, allowed, /^409 from POST .*\/offers\/draft-preview$/);
    await page.getByLabel('Cycles of pro monthly price').fill('');
    await preview.getByRole('alert').waitFor({ state: 'detached' });

    await page.getByRole('button', { name: 'Save and publish' }).click();
    await page.getByLabel('Offer status').filter({ hasText: 'active' }).waitFor();
    const offer = (await get(`${base}/offers/summer`, admin)).body;
    expect(offer).to.include({ status: 'active', published: true });
    expect(offer.plans.map((p: { plan: string }) => p.plan)).to.deep.equal(['team', 'pro']);
    expect(offer.plans[0]).to.deep.equal({
      plan: 'team',
      prices: [{ interval: 'month', currency: 'USD', amount: 24, cycles: null }],
      extras: { entitlements: [{ id: 'ai_credits', max: 500 }], addons: [], cycles: null },
    });
    expect(offer.bumps).to.deep.equal([
      { id: 'priority_support', name: 'Priority support', addon: 'priority_support', price: 15, currency: 'USD' },
    ]);
    // What a buyer's checkout page gets.
    const pub = (await get(`${base}/offers/summer/public`, admin)).body;
    expect(pub.source).to.equal('offer');
    expect(pub.bumps).to.deep.equal([{ id: 'priority_support', name: 'Priority support', price: 15, currency: 'USD' }]);
    await page.getByText('Live: saved changes apply to future purchases only').waitFor();
    await shoot(page, 'offer-builder');
  });

  it('edits a cancel flow: adds an offer step, edits its terms and a branch to it; the API has them', async () => {
    await page.getByRole('link', { name: 'Cancel flows' }).click();
    await page.getByLabel('Steps').waitFor();
    const add = page.getByRole('group', { name: 'Add a step' });
    await choose(page, add.getByRole('combobox', { name: 'Kind of step' }), { name: 'Save offer' });
    await choose(page, add.getByRole('combobox', { name: 'After' }), { name: 'offer', exact: true });
    await add.getByLabel('New step title').fill('One more thing');
    await add.getByRole('button', { name: 'Add step' }).click();
    const step = page.getByRole('group', { name: 'Step one_more_thing' });
    await step.waitFor();
    // Its offer: a pause by default; the person makes it a discount and writes its copy.
    await choose(page, step.getByRole('combobox', { name: 'one_more_thing offer 1 kind' }), { name: 'Discount' });
    // Checked as the API's schema checks it, before anything is sent.
    await step.getByLabel('one_more_thing offer 1 percent off').fill('150');
    await step.getByText('must be between 1 and 100').waitFor();
    expect(await page.getByRole('button', { name: 'Save flow' }).isDisabled()).to.equal(true);
    await step.getByLabel('one_more_thing offer 1 percent off').fill('40');
    await step.getByLabel('one_more_thing offer 1 renewals').fill('2');
    // The copy is written from the terms unless the person writes it.
    await step.getByRole('button', { name: 'Write the copy of one_more_thing offer 1' }).click();
    await step.getByLabel('one_more_thing offer 1 headline').fill('Stay for 40% less');
    await choose(page, step.getByRole('combobox', { name: 'one_more_thing offer 1 answers' }), {
      name: 'It is missing features I need',
    });
    await page.keyboard.press('Escape');
    // The answer "missing features" branches to the new step; a new answer joins the question.
    await choose(page, page.getByRole('combobox', { name: 'After “It is missing features I need”' }), {
      name: 'one_more_thing (offer)',
    });
    await page.getByLabel('New answer to reason').fill('Switching to another tool');
    await page.getByRole('button', { name: 'Add answer' }).click();
    // A text step added and removed again leaves nothing behind.
    await choose(page, add.getByRole('combobox', { name: 'Kind of step' }), { name: 'Text' });
    await add.getByLabel('New step title').fill('A word from us');
    await add.getByRole('button', { name: 'Add step' }).click();
    await page.getByRole('button', { name: 'Remove step a_word_from_us' }).click();

    // Model-chosen offers: guardrails appear (with a word that no model is configured here); back to static
    // rules, nothing about a model is saved.
    await step.getByText('Model, within guardrails').click();
    const rails = page.getByRole('group', { name: 'Guardrails of one_more_thing' });
    await rails.getByText('No model is configured on the service').waitFor();
    await rails.getByLabel('one_more_thing max percent').fill('0');
    await rails.getByText('must be between 1 and 100').waitFor();
    await rails.getByLabel('one_more_thing max percent').fill('35');
    await shoot(page, 'cancel-flow-guardrails');
    await step.getByText('Static rules').click();
    await rails.waitFor({ state: 'detached' });

    await page.getByRole('button', { name: 'Save flow' }).click();
    await eventually(async () => {
      const flow = (await get(`/apps/${appId}/cancel-flows/default`, testEnv().adminKey)).body;
      expect(flow.steps.map((s: { id: string }) => s.id)).to.deep.equal([
        'reason',
        'offer',
        'one_more_thing',
        'confirm',
      ]);
      const reason = flow.steps[0];
      expect(reason.answers.find((a: { id: string }) => a.id === 'missing_features').next).to.equal('one_more_thing');
      expect(reason.answers.at(-1)).to.deep.equal({
        id: 'switching_to_another_tool',
        label: 'Switching to another tool',
      });
      expect(flow.steps[2]).to.deep.include({
        type: 'offer',
        title: 'One more thing',
        decline_label: 'No thanks, continue cancelling',
        offers: [
          {
            kind: 'discount',
            percent: 40,
            cycles: 2,
            headline: 'Stay for 40% less',
            when: { answers: ['missing_features'] },
          },
        ],
      });
      expect(flow.steps[2]).to.not.have.property('dynamic');
      return true;
    });
    // The preview of the new step for that answer.
    await choose(page, page.getByRole('combobox', { name: 'Offer step' }), { name: /One more thing/ });
    await choose(page, page.getByRole('combobox', { name: 'Why are you cancelling?' }), {
      name: 'It is missing features I need',
    });
    await page.getByLabel('Offer preview').getByText('Stay for 40% less').waitFor();

    // On a phone each branch's arrow stays on the line of its list.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(150);
    // (A string: the tests are compiled without the DOM's types.)
    const apart: string[] = await page.evaluate(`
      [...document.querySelectorAll('input[aria-label^="After “"]')]
        .map((input) => {
          const arrow = input.closest('.mantine-Group-root').firstElementChild.getBoundingClientRect();
          const box = input.getBoundingClientRect();
          const level = arrow.top < box.bottom && arrow.bottom > box.top;
          return level && box.left - arrow.right < 24 ? null : input.getAttribute('aria-label');
        })
        .filter(Boolean)`);
    await page.setViewportSize({ width: 1280, height: 860 });
    expect(apart).to.deep.equal([]);
    await shoot(page, 'cancel-flow-offer-terms');
  });

  it('creates a second cancel flow, switches between the two, deletes it after confirming; deletes an offer', async () => {
    const admin = testEnv().adminKey;
    const base = `/apps/${appId}`;
    await page.getByRole('link', { name: 'Cancel flows' }).click();
    await page.getByLabel('Steps').waitFor();
    await page.getByRole('button', { name: 'New flow' }).click();
    const dialog = page.getByRole('dialog', { name: 'New cancel flow' });
    await dialog.getByLabel(/^Flow name/).fill('Annual plans');
    // The id follows the name unless the person writes one; a taken one is said before anything is sent.
    await dialog.getByLabel(/^Flow id/).fill('Default');
    await dialog.getByText('default is taken').waitFor();
    expect(await dialog.getByRole('button', { name: 'Create flow' }).isDisabled()).to.equal(true);
    await shoot(page, 'cancel-flow-new');
    await dialog.getByLabel(/^Flow id/).fill('');
    await dialog.getByRole('button', { name: 'Create flow' }).click();
    await page.waitForURL(/\/cancel-flows\/annual_plans$/);
    await page.getByText('Flow id annual_plans').waitFor();
    const created = (await get(`${base}/cancel-flows/annual_plans`, admin)).body;
    expect(created).to.include({ name: 'Annual plans', status: 'draft' });
    expect(created.steps.map((x: { id: string; type: string }) => [x.id, x.type])).to.deep.equal([
      ['reason', 'question'],
      ['confirm', 'confirm'],
    ]);

    // Two flows: the person switches between them.
    const flows = page.getByRole('group', { name: 'Flows' });
    await flows.getByRole('link', { name: /^Default cancel flow/ }).click();
    await page.getByText('Flow id default').waitFor();
    await page.getByLabel('Offer preview').waitFor();
    await flows.getByRole('link', { name: /^Annual plans/ }).click();
    await page.getByText('Flow id annual_plans').waitFor();
    expect(await flows.getByRole('link', { name: /^Annual plans/ }).getAttribute('aria-current')).to.equal('page');
    await shoot(page, 'cancel-flows-two');

    // Deleting asks first; keeping it changes nothing.
    await page.getByRole('button', { name: 'Delete this flow' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete the cancel flow Annual plans?' });
    await confirm.getByText('Its sessions are kept').waitFor();
    await confirm.getByRole('button', { name: 'Keep it' }).click();
    await confirm.waitFor({ state: 'detached' });
    expect((await get(`${base}/cancel-flows`, admin)).body).to.have.length(2);
    await page.getByRole('button', { name: 'Delete this flow' }).click();
    await confirm.getByRole('button', { name: 'Delete the flow' }).click();
    await page.waitForURL(/\/cancel-flows$/);
    await page.getByText('Flow id default').waitFor();
    await flows.getByRole('link', { name: /^Annual plans/ }).waitFor({ state: 'detached' });
    expect((await get(`${base}/cancel-flows`, admin)).body.map((f: { id: string }) => f.id)).to.deep.equal(['default']);
    expect((await get(`${base}/cancel-flows/annual_plans`, admin)).status).to.equal(404);

    // An offer another falls back to: the dialog says the fallback goes, and the API removes it.
    expect(
      (await call('PATCH', `${base}/offers/summer`, { token: admin, body: { fallback: 'launch' } })).status,
    ).to.equal(200);
    // And an entitlement whose 402 upgrade it is: the dialog names it, and the API clears the pointer.
    const ent = (await get(`${base}/entitlements`, admin)).body.find((e: { type: string }) => e.type === 'usage');
    expect(
      (
        await call('PATCH', `${base}/entitlements/${ent.id}`, {
          token: admin,
          body: { overage: { mode: 'block', offer_id: 'launch' } },
        })
      ).status,
    ).to.equal(200);
    await page.getByRole('link', { name: 'Offers' }).click();
    await page.getByRole('button', { name: 'Delete offer Launch week' }).click();
    const offerDialog = page.getByRole('dialog', { name: 'Delete the offer Launch week?' });
    await offerDialog.getByText('Offers that fall back to it lose their fallback: Summer deal.').waitFor();
    await offerDialog
      .getByText(`Entitlements whose upgrade it offers at their limit fall back to regular prices: ${ent.name}.`)
      .waitFor();
    await shoot(page, 'offer-delete');
    await offerDialog.getByRole('button', { name: 'Delete the offer' }).click();
    await offerDialog.waitFor({ state: 'detached' });
    await page.getByRole('link', { name: 'Launch week' }).waitFor({ state: 'detached' });
    expect((await get(`${base}/offers/launch`, admin)).status).to.equal(404);
    expect((await get(`${base}/offers/summer`, admin)).body.fallback).to.equal(null);
    expect((await get(`${base}/entitlements/${ent.id}`, admin)).body.overage).to.deep.equal({
      mode: 'block',
      offer_id: null,
    });
    expect((await get(`${base}/offers`, admin)).body.map((o: { id: string }) => o.id)).to.deep.equal(['summer']);
  });

  it('switches an MCP tool off and lists the connection a person approved', async () => {
    await page.getByRole('link', { name: 'MCP server' }).click();
    await page.getByRole('table', { name: 'Connections' }).getByText('Claude <Desktop>').waitFor();
    await page.getByLabel('Tool delete_account').waitFor();
    // A click as the browser delivers it (the switch sits under the sticky header when scrolled to).
    await page.getByRole('switch', { name: 'Tool create_plan' }).dispatchEvent('click');
    // The reload after the save is held back: until it lands the card is locked, since it is then drawn anew from
    // what was saved and an edit made meanwhile would vanish (a CI run clicked into it and lost its dropdown).
    let release = () => {};
    const held = new Promise<void>((done) => (release = done));
    const hold = async (route: Route) => {
      if (route.request().method() === 'GET') await held;
      await route.continue();
    };
    await page.route('**/mcp/settings', hold);
    const toolsets = page.getByRole('combobox', { name: 'Toolsets listed' });
    try {
      await page.getByRole('button', { name: 'Save MCP settings' }).click();
      await eventually(async () => {
        const s = (await get(`/apps/${appId}/mcp/settings`, testEnv().adminKey)).body;
        return s.tool_overrides.create_plan === false;
      });
      expect(await toolsets.isDisabled(), 'the card is locked while its reload runs').to.equal(true);
    } finally {
      release();
      await page.unroute('**/mcp/settings', hold);
    }
    await page.getByText('(override)').waitFor();
    // The toolsets an agent's tool list names beside the core (issue 43, item 3).
    await toolsets.click();
    await page.getByRole('option', { name: 'Webhooks and events' }).click();
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Save MCP settings' }).click();
    await eventually(async () => {
      const s = (await get(`/apps/${appId}/mcp/settings`, testEnv().adminKey)).body;
      return JSON.stringify(s.toolsets) === '["webhooks"]';
    });
    await shoot(page, 'mcp');
  });

  it("sets the key guard-rails and a connection's caps on the MCP page; the list shows what is used", async () => {
    await page.getByRole('heading', { name: 'Key guard-rails' }).waitFor();
    const keys = page.locator('.mantine-Card-root').filter({ hasText: 'Key guard-rails' });
    // A tool switched but not saved: saving another card reloads the page's data and keeps this edit.
    const unsaved = page.getByRole('switch', { name: 'Tool delete_account' });
    const was = await unsaved.isChecked();
    await unsaved.dispatchEvent('click');
    await keys.getByLabel('Spend cap amount').fill('200');
    await keys.getByRole('button', { name: 'Add a usage cap' }).click();
    await keys.getByLabel('Usage cap amount').fill('1000');
    await keys.getByRole('button', { name: 'Save key guard-rails' }).click();
    await eventually(async () => {
      const s = (await get(`/apps/${appId}/mcp/settings`, testEnv().adminKey)).body;
      return s.key_guardrails.spend_cap?.amount === 200 && s.key_guardrails.usage_caps[0]?.amount === 1000;
    });
    const saved = (await get(`/apps/${appId}/mcp/settings`, testEnv().adminKey)).body.key_guardrails;
    expect(saved.spend_cap).to.include({ currency: 'USD', period: 'month', used: 0, left: 200 });
    expect(saved.usage_caps[0]).to.include({ period: 'day', used: 0 });
    await keys.getByText('Spend: 0 of 200 USD per month (200 left)').waitFor();
    expect(await unsaved.isChecked(), "the other card's unsaved switch").to.equal(!was);
    const settings = (await get(`/apps/${appId}/mcp/settings`, testEnv().adminKey)).body;
    expect(settings.tool_overrides, 'nothing sent for it').to.not.have.property('delete_account');

    const connections = page.getByRole('table', { name: 'Connections' });
    await connections.getByRole('button', { name: 'Edit caps' }).first().click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Spend cap amount').fill('25');
    await dialog.getByLabel('Spend cap currency').fill('eur');
    await dialog.getByRole('button', { name: 'Save guard-rails' }).click();
    await dialog.waitFor({ state: 'detached' });
    await connections.getByText('Spend: 0 of 25 EUR per month (25 left)').waitFor();
    const [conn] = (await get(`/apps/${appId}/mcp/connections`, testEnv().adminKey)).body.filter(
      (c: { kind: string }) => c.kind === 'oauth',
    );
    expect(conn.guardrails.spend_cap).to.include({ amount: 25, currency: 'EUR', period: 'month' });
    await shoot(page, 'mcp-guardrails');
  });

  it('app keys cannot use /api/auth/*', async () => {
    const app = (await get(`/apps/${appId}`, testEnv().adminKey)).body;
    const res = await get('/api/auth/get-session', app.api_key);
    expect(res.status).to.equal(401);
  });

  describe('the demo workspace', () => {
    let demoAppId: string;
    let saved: { allowPrivate: boolean; resolve: Resolver } | undefined;
    after(() => {
      if (!saved) return;
      testEnv().deps.config.WEBHOOKS_ALLOW_PRIVATE_URLS = saved.allowPrivate;
      testEnv().deps.resolve = saved.resolve;
    });
    before(async function () {
      this.timeout(120_000);
      // As on a machine with no internet: no host name resolves, and private URLs are refused as in production.
      const deps = testEnv().deps;
      saved = { allowPrivate: deps.config.WEBHOOKS_ALLOW_PRIVATE_URLS, resolve: deps.resolve };
      deps.config.WEBHOOKS_ALLOW_PRIVATE_URLS = false;
      deps.resolve = async (host) => {
        throw new Error(`getaddrinfo ENOTFOUND ${host}`);
      };
      // Checkouts approved at the PayPal stand-in; webhooks to the service's own demo receiver.
      const [[client_id, client_secret]] = Object.entries(PAYPAL_TEST_CREDENTIALS);
      demoAppId = (
        await seedDemo(testEnv().baseUrl, testEnv().adminKey, testEnv().deps.logger, {
          paypal: { credentials: { client_id, client_secret }, approve: (u) => testEnv().paypal.approve(u) },
        })
      ).appId;
      // As `npm start` does once the demo is seeded: read-only from then on.
      for (const change of await markWorkspaceReadOnly(deps.orm.em.fork(), 'demo'))
        await deps.credentials.confirm(change);
    });

    it('is filled with a catalog, a few hundred accounts and 60 days of usage; its secret key cannot write', async () => {
      const app = (await get(`/apps/${demoAppId}`, testEnv().adminKey)).body;
      expect((await get(`/apps/${demoAppId}/namespaces/count`, app.api_key)).body.count).to.be.greaterThan(300);
      expect((await get(`/apps/${demoAppId}/plans`, app.api_key)).body.map((p: { id: string }) => p.id)).to.deep.equal([
        'free',
        'pro',
        'team',
      ]);
      const series = (await get(`/apps/${demoAppId}/analytics/timeseries?interval=60d`, app.api_key)).body;
      expect(series.points.filter((p: { amount: number }) => p.amount > 0).length).to.be.greaterThan(50);
      const write = await post(`/apps/${demoAppId}/plans`, app.api_key, { id: 'x', name: 'X' });
      expect(write.status).to.equal(403);
      expect(write.body.error).to.match(/demo/);
      // Offers with views and completed checkouts, the funnel's numbers.
      const stats = (await get(`/apps/${demoAppId}/offers/spring_sale/stats`, app.api_key)).body;
      // Ten bought from the offer (eight paid), three opened a 402's upgrade link to it (two paid).
      expect(stats).to.include({ views: 48, checkouts: 13, completed: 10 });
      // The 402 upgrade funnel: six customers past the free plan's export limit, three opened the link, two paid.
      const upgrades = (await get(`/apps/${demoAppId}/analytics/upgrades?interval=30d`, app.api_key)).body;
      expect(upgrades).to.include({ limit_reached: 6, link_shown: 6, opened: 3, paid: 2 });
      expect(upgrades.revenue, 'two yearly Pro at the sale price').to.deep.equal({ USD: 180 });
      const offers = (await get(`/apps/${demoAppId}/offers`, app.api_key)).body;
      expect(offers.map((o: { id: string; status: string }) => [o.id, o.status])).to.deep.equal([
        ['spring_sale', 'active'],
        ['go_annual', 'draft'],
      ]);
      // A cancel flow with sessions saved, cancelled and abandoned.
      const sessions = (await get(`/apps/${demoAppId}/cancel-sessions?limit=50`, app.api_key)).body.data;
      const byStatus = sessions.reduce(
        (m: Record<string, number>, s: { status: string }) => ({ ...m, [s.status]: (m[s.status] ?? 0) + 1 }),
        {},
      );
      expect(byStatus).to.deep.equal({ saved: 2, cancelled: 2, abandoned: 6 });
      // Webhook deliveries to the service's own demo receiver, which verified their signatures: every event to the
      // billing worker; checkouts to the flaky warehouse (refused once, then delivered on the retry), and one failed
      // test send there to retry.
      const [worker, warehouse] = (await get(`/apps/${demoAppId}/webhooks`, app.api_key)).body;
      expect(worker.url).to.match(/^http:\/\/127\.0\.0\.1:\d+\/console\/api\/demo-receiver\/app_\w+\/ok\/[\w-]+$/);
      const deliveries = async (endpointId: string) =>
        (await get(`/apps/${demoAppId}/webhooks/${endpointId}/deliveries?limit=100`, app.api_key)).body.data as {
          status: string;
          attempts: number;
          test: boolean;
          response_status: number;
          response_body: string;
        }[];
      await eventually(async () => {
        const d = await deliveries(worker.id);
        return d.length > 20 && d.every((x) => x.status === 'succeeded');
      }, 30_000);
      expect(JSON.parse((await deliveries(worker.id))[0].response_body)).to.include({ signature: 'verified' });
      await eventually(async () => {
        const d = await deliveries(warehouse.id);
        const live = d.filter((x) => !x.test);
        return live.length === 10 && live.every((x) => x.status === 'succeeded' && x.attempts === 2);
      }, 30_000);
      const [testSend] = (await deliveries(warehouse.id)).filter((x) => x.test);
      expect(testSend).to.include({ status: 'failed', response_status: 503 });
      // Still read-only for everything else, and the receiver answers only what the service signed for it.
      expect(
        (await post(`/apps/${demoAppId}/webhooks`, app.api_key, { url: worker.url, events: ['*'] })).status,
      ).to.equal(403);
      const forged = await call('POST', new URL(worker.url).pathname, {
        body: { type: 'account.created' },
        headers: {
          'webhook-id': 'msg_x',
          'webhook-timestamp': `${Math.floor(Date.now() / 1000)}`,
          'webhook-signature': 'v1,AAAA',
        },
      });
      expect(forged.status).to.equal(401);
      const wrongToken = worker.url.replace(/\/[\w-]+$/, '/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
      expect((await call('POST', new URL(wrongToken).pathname, { body: {} })).status).to.equal(404);
      // Seeding again finds it and changes nothing.
      expect((await seedDemo(testEnv().baseUrl, testEnv().adminKey, testEnv().deps.logger)).created).to.equal(false);
      expect((await get(`/apps/${demoAppId}/webhooks`, app.api_key)).body[0].url).to.equal(worker.url);
      // A start on another port points the demo's endpoints at the receiver there (and back).
      const moved = testEnv().baseUrl.replace(/:\d+$/, ':1');
      await seedDemo(testEnv().baseUrl, testEnv().adminKey, testEnv().deps.logger, { receiverOrigin: moved });
      const urls = (await get(`/apps/${demoAppId}/webhooks`, app.api_key)).body.map((e: { url: string }) => e.url);
      expect(urls).to.deep.equal([worker.url, warehouse.url].map((u) => u.replace(testEnv().baseUrl, moved)));
      await seedDemo(testEnv().baseUrl, testEnv().adminKey, testEnv().deps.logger);
      expect((await get(`/apps/${demoAppId}/webhooks`, app.api_key)).body[1].url).to.equal(warehouse.url);
    });

    it('every person sees it read-only, with populated charts', async () => {
      await page.goto(url(`/apps/${demoAppId}/analytics`));
      await page.getByRole('heading', { name: 'Analytics' }).waitFor();
      await page.locator('.recharts-area-area').first().waitFor();
      expect(await page.locator('.recharts-bar-rectangle').count()).to.be.greaterThan(3);
      await page.getByText('60d', { exact: true }).click();
      await page.locator('.recharts-area-area').first().waitFor();
      await shoot(page, 'analytics');

      await page.goto(url(`/apps/${demoAppId}/catalog`));
      await page.getByLabel('Pro × AI credits limit').waitFor();
      await shoot(page, 'demo-catalog');
      // The server refuses every change on the demo: the page offers none, and says why.
      await page.getByText('The demo workspace is read-only: its catalog can be read, not changed.').waitFor();
      expect(await page.getByRole('button', { name: /^(Add plan|Edit|Delete)/ }).count()).to.equal(0);
      expect(await page.getByLabel('Pro × AI credits limit').isDisabled()).to.equal(true);

      await page.goto(url(`/apps/${demoAppId}/accounts`));
      await page.getByText(/\d+ accounts/).waitFor();
      await page.getByRole('button', { name: '2' }).first().click();
      await page.getByLabel('Search accounts').fill('acct_1001');
      await page
        .getByRole('link', { name: /./ })
        .filter({ hasText: /acct_1001|\w+ \w+/ })
        .first()
        .waitFor();
      await shoot(page, 'accounts');
    });

    it('shows the offer funnel and the cancel-flow stats', async () => {
      await page.goto(url(`/apps/${demoAppId}/offers/spring_sale`));
      await page
        .getByLabel('Conversion')
        .getByText(/Conversion 20\.8%/)
        .waitFor();
      await page.getByRole('table', { name: 'By ref' }).waitFor();
      await page.getByLabel('Live preview').getByText('Spring sale').waitFor();
      // And the app's 402 upgrade funnel: six refusals at the free plan's export limit, two of them paid.
      await page
        .getByLabel('Upgrade conversion')
        .filter({ hasText: /Limit to paid 33\.3% · revenue 180(\.00)? USD/ })
        .waitFor();
      await shoot(page, 'demo-offer');
      await shoot(page, 'offers');
      expect(await page.getByRole('button', { name: /^Delete offer/ }).count()).to.equal(0);
      // The editor says up front that nothing is saved here, and offers no Save, Publish or Archive.
      await page.getByRole('status').filter({ hasText: 'The demo workspace is read-only' }).first().waitFor();
      expect(await page.getByRole('button', { name: /^(Save|Publish|Save and publish|Archive)$/ }).count()).to.equal(0);

      await page.getByRole('link', { name: 'Cancel flows' }).click();
      await page
        .getByLabel('Save rate')
        .getByText(/save rate/)
        .waitFor();
      await page.getByRole('table', { name: 'Sessions' }).getByText('saved').first().waitFor();
      await page.locator('.recharts-bar-rectangle').first().waitFor();
      await shoot(page, 'cancel-flows');
      // Read-only: no way to create or delete a flow, or to delete an offer (the secret key would refuse).
      expect(await page.getByRole('button', { name: /New flow|Delete this flow/ }).count()).to.equal(0);
      await page.getByRole('status').filter({ hasText: 'changes here are not saved' }).waitFor();
      expect(await page.getByRole('button', { name: 'Save flow' }).count()).to.equal(0);

      await page.getByRole('link', { name: 'MCP server' }).click();
      await page.getByText('No connections yet').waitFor();
    });

    it('lists subscriptions from GET /apps/:appId/subscriptions, with a pause and when it resumes, by status', async () => {
      const app = (await get(`/apps/${demoAppId}`, testEnv().adminKey)).body;
      // A pause of 12 months, resumed by the account's actor at its date on the app's clock.
      const [active] = (await get(`/apps/${demoAppId}/subscriptions?status=active`, app.api_key)).body.data;
      const pause = await post('/pauses/apply', testEnv().adminKey, {
        app_id: demoAppId,
        account_id: active.account_id,
        months: 12,
        reason: 'Travelling',
      });
      expect(pause.status, pause.text).to.equal(200);
      const listed = page.waitForResponse((r) => /\/console\/api\/apps\/[^/]+\/subscriptions\?/.test(r.url()));
      await page.getByRole('link', { name: 'Checkouts and subscriptions' }).click();
      const first = await (await listed).json();
      expect(first.data.length).to.be.greaterThan(0);
      const table = page.getByRole('table', { name: 'Subscriptions' });
      await table.getByRole('link', { name: first.data[0].account_id }).waitFor();
      const shown = await table.locator('tbody tr td:first-child').allTextContents();
      expect(shown).to.deep.equal(first.data.map((x: { account_id: string }) => x.account_id));
      // The pause, with the day it resumes and the plan it comes back to.
      const resumes = page.getByLabel(`Resumes ${active.account_id}`);
      await resumes.getByText(pause.body.pause.resume_at.slice(0, 10)).waitFor();
      expect(await resumes.textContent()).to.match(/resumes in 12 months on \w+/);
      await page.getByRole('table', { name: 'Checkouts' }).getByText('completed').first().waitFor();
      await shoot(page, 'billing');

      // Filters are the route's: the two subscriptions cancelled in the cancel flow.
      const cancelled = page.waitForResponse(
        (r) => r.url().includes('/subscriptions?') && r.url().includes('status=cancelled'),
      );
      await page
        .locator('[aria-label="Subscription status"]')
        .getByRole('radio', { name: 'Cancelled', exact: true })
        .dispatchEvent('click');
      expect((await (await cancelled).json()).data).to.have.length(2);
      await table.getByText('cancelled').nth(1).waitFor();
      expect(await table.locator('tbody tr').count()).to.equal(2);
      await page
        .locator('[aria-label="Subscription status"]')
        .getByRole('radio', { name: 'Current', exact: true })
        .dispatchEvent('click');
      await table.getByText('paused').first().waitFor();
    });

    it('pages through subscriptions, and says what to do when there are none', async () => {
      await page.goto(url(`/apps/${appId}/billing`));
      await page.getByText(/No subscriptions yet\. They start when a checkout completes/).waitFor();
      // 23 subscriptions of the owner's app, written straight into the table: two pages of 20 and 3.
      const em = testEnv().deps.orm.em.fork();
      const app = (await get(`/apps/${appId}`, testEnv().adminKey)).body;
      for (let i = 0; i < 23; i++) {
        const id = `sub_${String(i).padStart(2, '0')}`;
        await post(`/apps/${appId}/namespaces`, app.api_key, { id, plan: 'pro' });
        await sql(
          em,
          `insert into subscriptions (app_id, account_id, provider_subscription_id, plan_id, interval, currency, price,
             status, created_at) values ($1, $2, $3, 'pro', 'month', 'USD', 9, 'active', now() - $4 * interval '1 hour')`,
          [appId, id, `I-${id}`, i],
        );
      }
      await page.reload();
      const table = page.getByRole('table', { name: 'Subscriptions' });
      await table.getByRole('link', { name: 'sub_00' }).waitFor();
      expect(await table.locator('tbody tr').count()).to.equal(20);
      await page.getByRole('button', { name: 'Older' }).click();
      await table.getByRole('link', { name: 'sub_22' }).waitFor();
      expect(await table.locator('tbody tr td:first-child').allTextContents()).to.deep.equal([
        'sub_20',
        'sub_21',
        'sub_22',
      ]);
      expect(await page.getByRole('button', { name: 'Older' }).isDisabled()).to.equal(true);
      await page.getByRole('button', { name: 'Newer' }).click();
      await table.getByRole('link', { name: 'sub_00' }).waitFor();
      // Filtered to nothing: the page says so and what would fill it.
      await page.getByRole('radio', { name: 'Paused', exact: true }).dispatchEvent('click');
      await page.getByText(/No paused subscriptions\. A subscription is paused by a cancel flow/).waitFor();
    });

    it('shows the event log with each payload, the event types with samples, and retries the failed demo delivery', async () => {
      await page.goto(url(`/apps/${demoAppId}/webhooks`));
      // Deliveries to the built-in receiver: the warehouse's failed test send, retried from the log.
      await page.getByText('Analytics warehouse').click();
      const failed = page.getByRole('button', { name: 'Delivery checkout.completed failed' });
      await failed.click();
      await page.getByText('Busy: this demo receiver refuses').first().waitFor();
      await page.getByRole('button', { name: 'Retry' }).click();
      await failed.waitFor({ state: 'detached' });
      expect(await page.getByRole('button', { name: 'Delivery checkout.completed succeeded' }).count()).to.equal(11);
      await shoot(page, 'demo-webhooks');

      // The event log: newest first, the envelope as sent, older pages through the cursor.
      const app = (await get(`/apps/${demoAppId}`, testEnv().adminKey)).body;
      await page.getByRole('tab', { name: 'Event log' }).click();
      const log = page.getByRole('button', { name: /^Event / });
      await log.first().waitFor();
      expect(await log.count(), 'a full page: the demo has more').to.equal(25);
      const labels = () => log.evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')!));
      const firstPage = await labels();
      const [, newestType, newestId] = firstPage[0].split(' ');
      await log.first().click();
      const payload = page.getByLabel(`Payload of ${newestId}`);
      await payload.waitFor();
      const sent = (await get(`/apps/${demoAppId}/events?limit=100`, app.api_key)).body.data.find(
        (e: { id: string }) => e.id === newestId,
      );
      expect(sent.type).to.equal(newestType);
      expect(JSON.parse((await payload.textContent())!)).to.deep.equal(sent);
      await shoot(page, 'webhooks-events');
      await page.getByRole('button', { name: 'Older' }).click();
      await page.getByText('Page 2').waitFor();
      await log.first().waitFor();
      const secondPage = await labels();
      expect(secondPage.length).to.be.greaterThan(0);
      expect(
        secondPage.filter((l) => firstPage.includes(l)),
        'no event on two pages',
      ).to.deep.equal([]);
      // By type: only that type, from the first page again.
      const completed = (await get(`/apps/${demoAppId}/events?type=checkout.completed`, app.api_key)).body.data;
      await choose(page, page.getByRole('combobox', { name: 'Event type' }), { name: 'checkout.completed' });
      await eventually(async () => {
        const shown = await labels();
        return shown.length === completed.length && shown.every((l) => l.startsWith('Event checkout.completed '));
      });

      // The catalog with a sample of each type.
      await page.getByRole('tab', { name: 'Event types' }).click();
      await page.getByRole('button', { name: 'Event type usage.limit_reached' }).click();
      const sample = page.getByLabel('Sample usage.limit_reached');
      await sample.waitFor();
      expect(JSON.parse((await sample.textContent())!).data.object).to.include.keys('entitlement_id', 'percent');
      expect(await page.getByRole('button', { name: /^Event type / }).count()).to.equal(
        (await get('/event-types')).body.length,
      );
      await shoot(page, 'webhooks-types');
    });
  });
});
