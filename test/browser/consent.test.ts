import http from 'node:http';
import type net from 'node:net';
import { expect } from 'chai';
import { createTestApp, type TestApp } from '../helpers/factories.js';
import { get, post } from '../helpers/http.js';
import { openBrowser, type FileBrowser } from '../helpers/browser.js';
import { shoot } from '../helpers/console.js';
import { ALL_TOOLSETS, mcpPost, mcpUrl, TOOLS_LIST } from '../helpers/mcp.js';
import { pkce, postForm } from '../helpers/oauth.js';
import { testEnv } from '../helpers/servers.js';

/** The MCP client's redirect URI: a loopback server that records where the browser came back to. */
async function callbackServer() {
  const hits: URL[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://127.0.0.1');
    if (url.pathname === '/callback') hits.push(url); // not the browser's favicon request
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>Back in the client</title><h1>Signed in</h1>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/callback`,
    hits,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('the consent page in a real browser (headless Chromium)', function () {
  this.timeout(120_000);
  let browser: FileBrowser;
  let app: TestApp;
  let cb: Awaited<ReturnType<typeof callbackServer>>;

  before(async function () {
    this.timeout(15 * 60_000); // a fresh CI machine installs Chromium first
    browser = await openBrowser();
    // The service's own consent page (admin key): {dashboard_url} is the API's origin. By default it is the
    // console's page (test/browser/console.test.ts).
    (testEnv().deps.config as { APP_URL?: string }).APP_URL = testEnv().baseUrl;
  });
  after(async () => {
    delete (testEnv().deps.config as { APP_URL?: string }).APP_URL;
    await browser?.close();
  });
  beforeEach(async () => {
    app = await createTestApp('Browser shop');
    cb = await callbackServer();
  });
  afterEach(async () => {
    await cb.close();
  });

  async function authorizeUrl(extra: Record<string, string> = {}) {
    const client = (await post('/oauth/register', null, { redirect_uris: [cb.url], client_name: 'Claude <Desktop>' }))
      .body;
    const { verifier, challenge } = pkce();
    const q = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: cb.url,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'xyz',
      ...extra,
    });
    return { url: `${testEnv().baseUrl}/oauth/authorize?${q}`, client, verifier };
  }

  it('sign in with the admin key, see the client, pick a level and an app, approve; the client gets a working code', async () => {
    const { url, client, verifier } = await authorizeUrl({ scope: 'mcp:write' });
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.match(/Sign in/);
    await page.getByLabel('Admin key').fill('wrong-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect(await page.getByRole('alert').textContent()).to.match(/not right/);
    await page.getByLabel('Admin key').fill(testEnv().adminKey);
    await page.getByRole('button', { name: 'Sign in' }).click();

    // The consent page: the client's name (as text, escaped), the requested level preselected, apps to pick from.
    expect(await page.locator('#client-name').textContent()).to.equal('Claude <Desktop>');
    expect(await page.getByRole('radio', { name: 'Read and write' }).isChecked()).to.equal(true);
    expect(await page.getByRole('radio', { name: 'Read only' }).isChecked()).to.equal(false);
    const options = await page.getByLabel('App').locator('option').allTextContents();
    expect(options).to.include(`Browser shop (${app.id})`);
    const [cookie] = await context.cookies();
    expect(cookie).to.include({ httpOnly: true, sameSite: 'Strict', path: '/oauth' });

    // A forged POST without the page's CSRF token is refused, even with the session cookie.
    const requestId = new URL(page.url()).searchParams.get('request')!;
    const forged = await context.request.post(`${testEnv().baseUrl}/oauth/consent`, {
      form: { request: requestId, decision: 'approve', access_level: 'full', app_id: app.id },
      maxRedirects: 0,
    });
    expect(forged.status()).to.equal(403);

    // Limits for the assistant (optional): a wrong one shows the form again with the reason, nothing approved.
    await page.getByLabel('App').selectOption(app.id);
    await page.getByText('Limits for this assistant (optional)').click();
    await page.locator('input[name=spend_amount]').fill('lots');
    await page.getByRole('button', { name: 'Approve' }).click();
    expect(await page.getByRole('alert').textContent()).to.equal(
      'Limits: the spend cap amount must be a number, e.g. 50',
    );
    await page.getByLabel('App').selectOption(app.id);
    await page.getByText('Limits for this assistant (optional)').click();
    await page.locator('input[name=spend_amount]').fill('20');
    await page.locator('input[name=usage_entitlement]').fill('api_calls');
    await page.locator('input[name=usage_amount]').fill('50');
    await shoot(page, 'consent-page-limits');
    await page.getByRole('radio', { name: 'Read only' }).check();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL(/\/callback\?/);
    expect(await page.getByRole('heading').textContent()).to.equal('Signed in');
    const back = cb.hits.at(-1)!;
    expect(back.searchParams.get('state')).to.equal('xyz');
    const code = back.searchParams.get('code')!;

    const tokens = await postForm('/oauth/token', {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: client.client_id,
      redirect_uri: cb.url,
    });
    expect(tokens.status).to.equal(200);
    expect(tokens.body.scope).to.equal('mcp:read');
    // Every toolset: the 33 read tools a Read only connection may call, and the two discovery tools.
    const list = await mcpPost(app.id, TOOLS_LIST, tokens.body.access_token, ALL_TOOLSETS);
    expect(list.status).to.equal(200);
    expect(list.body.result.tools).to.have.length(33 + 2);
    const [conn] = (await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey)).body;
    expect(conn).to.include({ kind: 'oauth', access_level: 'read', name: 'Claude <Desktop>' });
    expect(conn.user.id).to.equal('admin');
    expect(conn.guardrails.spend_cap).to.include({ amount: 20, currency: 'USD', period: 'month' });
    expect(conn.guardrails.usage_caps).to.have.length(1);
    expect(conn.guardrails.usage_caps[0]).to.include({ entitlement_id: 'api_calls', amount: 50, period: 'day' });
    await context.close();
  });

  it(
    'with a server URL the app is fixed; Deny sends the browser back with access_denied; ' +
      'a used request shows an expiry page',
    async () => {
      const { url } = await authorizeUrl({ resource: mcpUrl(app.id).toString() });
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(url);
      await page.getByLabel('Admin key').fill(testEnv().adminKey);
      await page.getByRole('button', { name: 'Sign in' }).click();
      expect(await page.locator('main').textContent()).to.include('MCP server: Browser shop');
      expect(await page.getByLabel('App').count()).to.equal(0);
      // Nothing requested: the lowest level is preselected.
      expect(await page.getByRole('radio', { name: 'Read only' }).isChecked()).to.equal(true);
      const consentUrl = page.url();
      await page.getByRole('button', { name: 'Deny' }).click();
      await page.waitForURL(/\/callback\?/);
      const back = cb.hits.at(-1)!;
      expect(back.searchParams.get('error')).to.equal('access_denied');
      expect(back.searchParams.get('code')).to.equal(null);
      const again = await page.goto(consentUrl);
      expect(again!.status()).to.equal(404);
      expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Sign-in request not found');
      await context.close();
    },
  );
});
