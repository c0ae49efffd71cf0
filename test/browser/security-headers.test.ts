// Security headers on every answer (src/http/headers.ts): nosniff and a referrer policy on JSON, errors, 404s, text
// and files; on HTML pages a Content-Security-Policy that no page breaks (checked in Chromium) and X-Frame-Options.
import { createWorkspace } from '../../src/people/workspaces.js';
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { type Page } from 'playwright-core';
import { sql } from '../../src/db/sql.js';
import { closePeople, people } from '../../src/people/better-auth.js';
import { openBrowser, type FileBrowser } from '../helpers/browser.js';
import { ensureConsoleBuilt, watch } from '../helpers/console.js';
import { createTestApp, type TestApp } from '../helpers/factories.js';
import { call, get, post, type Res } from '../helpers/http.js';
import { mcpUrl } from '../helpers/mcp.js';
import { pkce } from '../helpers/oauth.js';
import { testEnv } from '../helpers/servers.js';

const PERSON = { name: 'Hedda Headers', email: 'headers@example.com', password: 'headers are fine' };

function expectBasics(res: Res, what: string) {
  expect(res.headers.get('x-content-type-options'), what).to.equal('nosniff');
  expect(res.headers.get('referrer-policy'), what).to.equal('strict-origin-when-cross-origin');
}

/** The directives of a Content-Security-Policy, by name. */
function csp(res: Res): Record<string, string[]> {
  const text = res.headers.get('content-security-policy') ?? '';
  return Object.fromEntries(
    text
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map(([name, ...values]) => [name, values]),
  );
}

function expectHtmlPolicy(res: Res, what: string) {
  expectBasics(res, what);
  expect(res.headers.get('content-type'), what).to.match(/^text\/html/);
  expect(res.headers.get('x-frame-options'), what).to.equal('DENY');
  const policy = csp(res);
  expect(policy['frame-ancestors'], what).to.deep.equal(["'none'"]);
  // No inline script, no eval: script-src (or default-src when absent) lists only this origin and hashes.
  const scripts = policy['script-src'] ?? policy['default-src'];
  expect(scripts, what).to.be.an('array');
  for (const source of scripts) expect(source, what).to.match(/^('self'|'none'|'sha256-[A-Za-z0-9+/]+=*')$/);
  expect(policy['default-src'], what).to.satisfy(
    (d: string[]) => d.length === 1 && ["'self'", "'none'"].includes(d[0]),
  );
  expect(policy['object-src'] ?? policy['default-src'], what).to.not.include('*');
}

/** A pending OAuth authorization request for the app's MCP server, as a client starts one. */
async function oauthRequest(app: TestApp): Promise<string> {
  const redirect = 'http://127.0.0.1:8123/cb';
  const client = (await post('/oauth/register', null, { redirect_uris: [redirect], client_name: 'Headers client' }))
    .body;
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: redirect,
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
    resource: mcpUrl(app.id).toString(),
  });
  const res = await get(`/oauth/authorize?${q}`);
  expect(res.status, res.text).to.equal(302);
  return new URL(res.headers.get('location')!).searchParams.get('request')!;
}

describe('Security headers', function () {
  this.timeout(60_000);
  let app: TestApp;
  before(async () => {
    app = await createTestApp('Headers');
  });

  it('nosniff and the referrer policy on JSON answers: a 200, a 201, a 400, a 401, a 404, a 405 and a preflight', async () => {
    const answers: [string, Res, number][] = [
      ['GET /health', await get('/health'), 200],
      ['GET /apps/:appId', await get(`/apps/${app.id}`, app.api_key), 200],
      ['POST /plans', await post(`/apps/${app.id}/plans`, app.api_key, { id: 'pro', name: 'Pro' }), 201],
      ['invalid JSON', await call('POST', `/apps/${app.id}/plans`, { token: app.api_key, raw: '{' }), 400],
      ['no credential', await get(`/apps/${app.id}`), 401],
      ['unknown route', await get('/no/such/route'), 404],
      ['missing record', await get(`/apps/${app.id}/plans/nope`, app.api_key), 404],
      ['other method', await call('PUT', '/health'), 405],
    ];
    for (const [what, res, status] of answers) {
      expect(res.status, `${what}: ${res.text}`).to.equal(status);
      expectBasics(res, what);
      // JSON is not a page: no frame or page policy needed.
      expect(res.headers.get('x-frame-options'), what).to.equal(null);
    }
    const preflight = await call('OPTIONS', `/apps/${app.id}/plans`, {
      headers: { Origin: 'https://shop.example', 'Access-Control-Request-Method': 'POST' },
    });
    expect(preflight.status).to.equal(204);
    expectBasics(preflight, 'preflight');
  });

  it('on text and files: the / banner, a Swagger UI script, a console script', async () => {
    const banner = await get('/');
    expect(banner.headers.get('content-type')).to.match(/^text\/plain/);
    expectBasics(banner, 'banner');
    const script = await get('/docs/assets/swagger-ui-bundle.js');
    expect(script.status).to.equal(200);
    expectBasics(script, 'docs script');
    ensureConsoleBuilt();
    const index = await get('/console/');
    const asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(index.text)![1];
    const consoleScript = await get(asset);
    expect(consoleScript.status).to.equal(200);
    expectBasics(consoleScript, 'console script');
  });

  it("on Better Auth's own answers (the console's sign-in), which bypass Koa's response", async () => {
    const res = await get('/api/auth/get-session');
    expect(res.status, res.text).to.equal(200);
    expectBasics(res, '/api/auth/get-session');
  });

  it('console pages: the default HTML policy (no inline script), X-Frame-Options DENY', async () => {
    ensureConsoleBuilt();
    for (const path of ['/console/', '/console/oauth/consent?request=x', '/console/apps/app_x/catalog']) {
      const res = await get(path);
      expect(res.status, path).to.equal(200);
      expectHtmlPolicy(res, path);
      expect(csp(res)['default-src']).to.deep.equal(["'self'"]);
      expect(csp(res)['script-src']).to.deep.equal(["'self'"]);
      expect(csp(res)['style-src']).to.deep.equal(["'self'", "'unsafe-inline'"]);
      // The built page itself has no inline script to allow.
      expect(res.text).to.not.match(/<script(?![^>]*\bsrc=)[^>]*>/);
    }
  });

  it("the service's consent pages: a policy that loads nothing, forms to this service and the client only", async () => {
    const requestId = await oauthRequest(app);
    const signIn = await get(`/oauth/consent?request=${requestId}`);
    expect(signIn.status, signIn.text).to.equal(200);
    expect(signIn.text).to.include('Sign in to approve an MCP client');
    expectHtmlPolicy(signIn, 'consent sign-in');
    expect(csp(signIn)['default-src']).to.deep.equal(["'none'"]);
    expect(csp(signIn)['form-action']).to.deep.equal(["'self'"]);
    const gone = await get('/oauth/consent?request=nope');
    expect(gone.status).to.equal(404);
    expectHtmlPolicy(gone, 'consent error page');
    // Signed in, the consent form may also send the browser on to the client's redirect URI.
    const session = await call('POST', '/oauth/consent/sign-in', {
      raw: new URLSearchParams({ request: requestId, admin_key: testEnv().adminKey }).toString(),
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: testEnv().baseUrl },
    });
    expect(session.status, session.text).to.equal(303);
    expectBasics(session, 'sign-in redirect');
    const cookie = session.headers.get('set-cookie')!.split(';')[0];
    const form = await call('GET', `/oauth/consent?request=${requestId}`, { headers: { Cookie: cookie } });
    expect(form.text).to.include('Approve');
    expectHtmlPolicy(form, 'consent form');
    expect(csp(form)['form-action']).to.deep.equal(["'self'", 'http://127.0.0.1:8123']);
  });

  it('/docs: its one inline script allowed by the hash of exactly the script it serves', async () => {
    const res = await get('/docs');
    expect(res.status).to.equal(200);
    expectHtmlPolicy(res, '/docs');
    const inline = [...res.text.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]);
    expect(inline).to.have.length(1);
    const hash = `'sha256-${createHash('sha256').update(inline[0]).digest('base64')}'`;
    expect(csp(res)['script-src']).to.deep.equal(["'self'", hash]);
    expect(inline[0]).to.include('validatorUrl: null');
    // "Try it out" may call the server the document names (PUBLIC_API_URL when set).
    const server = (await get('/openapi.json')).body.servers[0].url;
    expect(csp(res)['connect-src']).to.include(server);
  });

  it('the Better Auth session cookie is HttpOnly (and SameSite, never readable by a script)', async () => {
    const p = await people(testEnv().deps);
    const { user } = await p.auth.api.signUpEmail({ body: PERSON });
    try {
      const res = await call('POST', '/api/auth/sign-in/email', {
        body: { email: PERSON.email, password: PERSON.password },
        headers: { Origin: testEnv().baseUrl },
      });
      expect(res.status, res.text).to.equal(200);
      expectBasics(res, 'sign-in');
      const cookies = res.headers.getSetCookie();
      const session = cookies.find((c) => /^offerkit\.session_token=/.test(c));
      expect(session, cookies.join('\n')).to.be.a('string');
      const attributes = session!.split(';').map((a) => a.trim().toLowerCase());
      expect(attributes).to.include('httponly');
      expect(attributes).to.include('samesite=lax');
      expect(attributes).to.include('path=/');
      // Every cookie it sets is HttpOnly.
      for (const c of cookies) expect(c.toLowerCase(), c).to.include('httponly');
    } finally {
      await sql(testEnv().deps.orm.em.fork(), 'delete from people_sessions where "userId" = $1', [user.id]);
      await sql(testEnv().deps.orm.em.fork(), 'delete from people_credentials where "userId" = $1', [user.id]);
      await sql(testEnv().deps.orm.em.fork(), 'delete from people_users where id = $1', [user.id]);
    }
  });
});

const WORKSPACE = 'headers_browser';

describe('Security headers in a real browser (headless Chromium): no page breaks under its policy', function () {
  this.timeout(120_000);
  let browser: FileBrowser;
  let app: TestApp;
  let userId: string;

  before(async function () {
    this.timeout(15 * 60_000);
    ensureConsoleBuilt();
    browser = await openBrowser();
    app = await createTestApp('Headers in a browser');
    const p = await people(testEnv().deps);
    userId = (await p.auth.api.signUpEmail({ body: PERSON })).user.id;
    // An owner exists, so the console offers sign-in (not the first owner's setup).
    await createWorkspace(p, { id: WORKSPACE, name: 'Headers', ownerId: userId });
  });
  after(async () => {
    await browser?.close();
    const em = testEnv().deps.orm.em.fork();
    await sql(em, 'delete from orgs where id = $1', [WORKSPACE]);
    if (userId) {
      await sql(em, 'delete from people_sessions where "userId" = $1', [userId]);
      await sql(em, 'delete from people_credentials where "userId" = $1', [userId]);
      await sql(em, 'delete from people_users where id = $1', [userId]);
    }
    await closePeople(testEnv().deps);
  });

  /** CSP violations the page reports, as events and as console messages (Chromium logs each one). */
  async function violations(page: Page) {
    const seen: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) seen.push(`console: ${m.text()}`);
    });
    await page.addInitScript({
      content:
        'window.__csp = []; document.addEventListener("securitypolicyviolation", (e) => ' +
        'window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));',
    });
    return async () => [...seen, ...((await page.evaluate('window.__csp')) as string[])];
  }

  it('the console sign-in page and its consent page, the service consent page and /docs: no CSP violation', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems = watch(page);
    const seen = await violations(page);
    const base = testEnv().baseUrl;

    // The console: the sign-in page renders (its module script and Mantine's styles ran), and a person signs in.
    const consolePage = await page.goto(`${base}/console/`);
    expect(consolePage!.headers()['content-security-policy']).to.include("frame-ancestors 'none'");
    await page.getByRole('heading', { name: 'Sign in to offerkit' }).waitFor();
    await page.getByLabel('Email').fill(PERSON.email);
    await page.getByLabel(/^Password/).fill(PERSON.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Signed in: the console's frame (its first page depends on the workspaces, the demo's included).
    await page.getByRole('button', { name: 'Sign out' }).waitFor();

    // The console's consent page, signed in: the request is shown.
    const requestId = await oauthRequest(app);
    await page.goto(`${base}/console/oauth/consent?request=${requestId}`);
    await page.getByTestId('client-name').waitFor();
    expect(await page.getByTestId('client-name').textContent()).to.equal('Headers client');

    // The service's own consent page (admin key): a page with a style element and forms only.
    const consent = await page.goto(`${base}/oauth/consent?request=${requestId}`);
    expect(consent!.headers()['content-security-policy']).to.include("default-src 'none'");
    await page.getByLabel('Admin key').waitFor();

    // /docs: Swagger UI renders the operations from /openapi.json under its policy.
    const docs = await page.goto(`${base}/docs`);
    expect(docs!.headers()['content-security-policy']).to.match(/script-src 'self' 'sha256-/);
    await page.locator('.swagger-ui .info .title').filter({ hasText: 'offerkit' }).waitFor({ timeout: 30_000 });
    // Swagger UI renders the tags near the viewport (the Service tag's five routes first), with or without a policy.
    await page.getByText('Interactive API reference').waitFor();
    expect(await page.locator('.opblock').count()).to.be.at.least(5);

    const reported = await seen();
    expect(reported, reported.join('\n')).to.deep.equal([]);
    expect(problems, problems.join('\n')).to.deep.equal([]);
    await context.close();
  });

  it('the policy is enforced: an inline script injected into a console page does not run and is reported', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const seen = await violations(page);
    await page.goto(`${testEnv().baseUrl}/console/`);
    await page.getByRole('heading', { name: 'Sign in to offerkit' }).waitFor();
    await page.evaluate(
      'const s = document.createElement("script"); s.textContent = "window.__injected = true"; document.body.append(s)',
    );
    await page.waitForTimeout(200);
    expect(await page.evaluate('window.__injected === undefined')).to.equal(true);
    expect((await seen()).join('\n')).to.match(/script-src/);
    await context.close();
  });

  it('framing is refused: the console and the consent page inside another page are blocked (frame-ancestors)', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const blocked: string[] = [];
    page.on('console', (m) => {
      if (/frame-ancestors/.test(m.text())) blocked.push(m.text());
    });
    const base = testEnv().baseUrl;
    await page.setContent(
      `<iframe src="${base}/console/"></iframe><iframe src="${base}/oauth/consent?request=nope"></iframe>`,
    );
    await page.waitForTimeout(1000);
    // Chromium names the framed origin: one refusal per frame.
    expect(blocked, blocked.join('\n')).to.have.length(2);
    for (const b of blocked) expect(b).to.include(`Framing '${base}/'`).and.include("frame-ancestors 'none'");
    // Nothing of the console ran inside the frame.
    const framed = page.frames().filter((f) => f.url().startsWith(base));
    for (const f of framed) expect(await f.locator('#root *').count()).to.equal(0);
    await context.close();
  });
});
