import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { Config } from '../../src/config.js';
import { sql } from '../../src/db/sql.js';
import { purgeExpired } from '../../src/housekeeping/retention.js';
import { routes } from '../../src/routes.js';
import { REUSE_REASON } from '../../src/oauth/oauth.service.js';
import { createAccount, createTestApp, seedCatalog, type TestApp } from '../helpers/factories.js';
import { serviceEnv, startApi, stopped, waitForListening, type Started } from '../helpers/processes.js';
import { call, get, patch, post } from '../helpers/http.js';
import { mcpPost, mcpUrl, TOOLS_LIST } from '../helpers/mcp.js';
import { mountRoutes } from '../helpers/mount.js';
import { approveWith, pkce, postForm, REDIRECT } from '../helpers/oauth.js';
import { forwardingProxy, rawRequest } from '../helpers/proxy.js';
import { freePort, PAYPAL_TEST_CREDENTIALS, testEnv } from '../helpers/servers.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const em = () => testEnv().deps.orm.em.fork();
const clearLimits = () => sql(em(), 'delete from rate_limits');

/** The real middleware stack on its own port, with some settings changed. */
const mountWith = (over: Partial<Config>) =>
  mountRoutes(routes, { config: { ...testEnv().deps.config, ...over } as Config });

// ---- OAuth helpers -------------------------------------------------------------------------------------

async function signIn(app: TestApp, extra: Record<string, string> = {}, clientId?: string) {
  const client = clientId
    ? { client_id: clientId }
    : (await post('/oauth/register', null, { redirect_uris: [REDIRECT], client_name: 'Sec client' })).body;
  const { verifier, challenge } = pkce();
  const url = new URL(
    `${testEnv().baseUrl}/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...extra,
    })}`,
  );
  const code = await approveWith('read', undefined, extra.resource ? undefined : app.id)(url);
  return { clientId: client.client_id as string, code, verifier };
}

const exchange = (s: { clientId: string; code: string; verifier: string }, extra: Record<string, string> = {}) =>
  postForm('/oauth/token', {
    grant_type: 'authorization_code',
    code: s.code,
    code_verifier: s.verifier,
    client_id: s.clientId,
    ...extra,
  });

const refresh = (clientId: string, token: string, extra: Record<string, string> = {}) =>
  postForm('/oauth/token', { grant_type: 'refresh_token', refresh_token: token, client_id: clientId, ...extra });

describe('security hardening', function () {
  this.timeout(60_000);
  let app: TestApp;
  beforeEach(async () => {
    app = await createTestApp();
  });

  describe('refresh-token reuse revokes the token family (RFC 9700 4.14.2)', () => {
    it('a rotated refresh token presented again kills every token of that sign-in; the connection says why', async () => {
      const s = await signIn(app);
      const first = await exchange(s);
      expect(first.status, JSON.stringify(first.body)).to.equal(200);
      const second = await refresh(s.clientId, first.body.refresh_token);
      expect(second.status).to.equal(200);
      expect((await mcpPost(app.id, TOOLS_LIST, second.body.access_token)).status).to.equal(200);

      // The old refresh token again (a thief, or a replay): refused, and the new pair dies with it.
      const reused = await refresh(s.clientId, first.body.refresh_token);
      expect(reused.status).to.equal(400);
      expect(reused.body.error).to.equal('invalid_grant');
      expect((await mcpPost(app.id, TOOLS_LIST, second.body.access_token)).status).to.equal(401);
      expect((await refresh(s.clientId, second.body.refresh_token)).body.error).to.equal('invalid_grant');
      const [conn] = (await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey)).body;
      expect(conn.cut_off.reason).to.equal(REUSE_REASON);
      expect(Date.parse(conn.cut_off.at)).to.be.a('number').and.not.NaN;
      const left = await sql(em(), 'select 1 from oauth_tokens where connection_id = $1', [conn.id]);
      expect(left).to.have.length(0);

      // Signing in again restores the connection and clears the reason.
      const again = await exchange(await signIn(app));
      expect((await mcpPost(app.id, TOOLS_LIST, again.body.access_token)).status).to.equal(200);
    });

    it('only the family of the reused token goes: another sign-in of the same client and person keeps working', async () => {
      const s1 = await signIn(app);
      const s2 = await signIn(app, {}, s1.clientId);
      const t1 = (await exchange(s1)).body;
      const t2 = (await exchange(s2)).body;
      const rotated = await refresh(s1.clientId, t1.refresh_token);
      expect((await refresh(s1.clientId, t1.refresh_token)).body.error).to.equal('invalid_grant');
      expect((await mcpPost(app.id, TOOLS_LIST, rotated.body.access_token)).status).to.equal(401);
      expect((await mcpPost(app.id, TOOLS_LIST, t2.access_token)).status).to.equal(200);
      expect((await refresh(s1.clientId, t2.refresh_token)).status).to.equal(200);
    });

    it('two racing refreshes with one token: at most one wins, and the race revokes the family', async () => {
      const s = await signIn(app);
      const t = (await exchange(s)).body;
      const results = await Promise.all([refresh(s.clientId, t.refresh_token), refresh(s.clientId, t.refresh_token)]);
      expect(results.filter((r) => r.status === 200).length).to.be.at.most(1);
      for (const r of results.filter((x) => x.status === 200))
        expect((await mcpPost(app.id, TOOLS_LIST, r.body.access_token)).status).to.equal(401);
    });
  });

  describe('resource indicators (RFC 8707) and audiences', () => {
    it('a resource naming a server the grant is not for is invalid_target, at the code and at refresh', async () => {
      const other = await createTestApp();
      const s = await signIn(app, { resource: mcpUrl(app.id).toString() });
      const wrong = await exchange(s, { resource: mcpUrl(other.id).toString() });
      expect(wrong.status).to.equal(400);
      expect(wrong.body.error).to.equal('invalid_target');

      // Without resource at the authorization, the grant is for the app the person picked.
      const picked = await signIn(app);
      expect((await exchange(picked, { resource: mcpUrl(other.id).toString() })).body.error).to.equal('invalid_target');
      const s2 = await signIn(app);
      const ok = await exchange(s2, { resource: `${mcpUrl(app.id).toString()}/` });
      expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
      const bad = await refresh(s2.clientId, ok.body.refresh_token, { resource: mcpUrl(other.id).toString() });
      expect(bad.body.error).to.equal('invalid_target');
      const good = await refresh(s2.clientId, ok.body.refresh_token, { resource: mcpUrl(app.id).toString() });
      expect(good.status).to.equal(200);
      const [row] = await sql<{ audience: string }>(
        em(),
        `select t.audience from oauth_tokens t join mcp_connections c on c.id = t.connection_id
          where c.client_id = $1 and t.kind = 'access'`,
        [s2.clientId],
      );
      expect(row.audience).to.equal(mcpUrl(app.id).toString());
    });

    it('an access token is refused on any other server URL than its audience', async () => {
      const t = (await exchange(await signIn(app))).body;
      expect((await mcpPost(app.id, TOOLS_LIST, t.access_token)).status).to.equal(200);
      // The same service reached on another origin (another port): another resource.
      const elsewhere = await mountWith({});
      try {
        const res = await call('POST', `/apps/${app.id}/mcp`, {
          base: elsewhere.base,
          token: t.access_token,
          body: TOOLS_LIST,
          headers: { Accept: 'application/json, text/event-stream' },
        });
        expect(res.status).to.equal(401);
        expect(res.headers.get('www-authenticate')).to.include('error="invalid_token"');
      } finally {
        await elsewhere.close();
      }
    });
  });

  describe('the consent page, secrets, account ids', () => {
    it('an unknown or expired request gets a page saying so, not the sign-in form', async () => {
      const res = await call('GET', '/oauth/consent?request=oar_unknown');
      expect(res.status).to.equal(404);
      expect(res.text).to.include('Sign-in request not found').and.not.include('admin_key');
      const s = await signIn(app);
      await sql(
        em(),
        `insert into oauth_requests (id, client_id, redirect_uri, code_challenge, expires_at)
        values ('oar_expired', $1, $2, 'x', now() - interval '1 minute')`,
        [s.clientId, REDIRECT],
      );
      const expired = await call('GET', '/oauth/consent?request=oar_expired');
      expect(expired.status).to.equal(404);
      expect(expired.text).to.include('has expired');
    });

    it("a webhook endpoint's PATCH answer has no signing secret (create and single read do)", async () => {
      const created = await post(`/apps/${app.id}/webhooks`, app.api_key, {
        url: 'https://hooks.example.com/x',
        events: ['*'],
      });
      expect(created.body.secret).to.match(/^whsec_/);
      const patched = await patch(`/apps/${app.id}/webhooks/${created.body.id}`, app.api_key, { description: 'd' });
      expect(patched.status).to.equal(200);
      expect(patched.body).to.not.have.property('secret');
      expect(patched.body.description).to.equal('d');
      expect((await get(`/apps/${app.id}/webhooks/${created.body.id}`, app.api_key)).body.secret).to.equal(
        created.body.secret,
      );
    });

    it('account ids with control or bidi-override characters, or only whitespace, are a 400 naming the field', async () => {
      await seedCatalog(app);
      for (const id of ['a\nb', 'tab\there', '\u001b[31m', 'evil\u202Egnp.exe', 'x\u2066y', '   ', '\u3000'])
        for (const [res, field] of [
          [await post(`/apps/${app.id}/namespaces`, app.api_key, { id, plan: 'free' }), 'id'],
          [await get(`/apps/${app.id}/namespaces/${encodeURIComponent(id)}`, app.api_key), 'accountId'],
        ] as const) {
          expect(res.status, JSON.stringify(id)).to.equal(400);
          expect(res.body.error).to.match(new RegExp(`^${field}: must not (contain control|be only whitespace)`));
        }
      // Everything else is kept exactly as sent.
      for (const id of [' padded ', 'Ünïcode ✓', 'a\u200Db'])
        expect((await post(`/apps/${app.id}/namespaces`, app.api_key, { id, plan: 'free' })).body.id).to.equal(id);
    });
  });

  describe('forwarded headers only behind a declared proxy (TRUST_PROXY)', () => {
    const evil = { 'X-Forwarded-Host': 'evil.example', 'X-Forwarded-Proto': 'https' };

    it('without TRUST_PROXY, X-Forwarded-Host rewrites neither the OAuth metadata nor the 401 pointer', async () => {
      const meta = await call('GET', '/.well-known/oauth-authorization-server', { headers: evil });
      expect(meta.body.issuer).to.equal(testEnv().baseUrl);
      const denied = await call('POST', `/apps/${app.id}/mcp`, {
        body: TOOLS_LIST,
        headers: { ...evil, Accept: 'application/json, text/event-stream' },
      });
      expect(denied.status).to.equal(401);
      expect(denied.headers.get('www-authenticate')).to.include(testEnv().baseUrl).and.not.include('evil.example');
    });

    it('with TRUST_PROXY=1 the proxy-supplied host, scheme and client address count', async () => {
      await clearLimits();
      const behind = await mountWith({ TRUST_PROXY: 1, AUTH_FAILURE_LIMIT: 2 });
      const direct = await mountWith({ TRUST_PROXY: 0, AUTH_FAILURE_LIMIT: 2 });
      try {
        const meta = await call('GET', '/.well-known/oauth-authorization-server', { base: behind.base, headers: evil });
        expect(meta.body.issuer).to.equal('https://evil.example');
        // Behind the proxy, failures count per forwarded client address.
        const from = (ip: string, token = 'wrong') =>
          call('GET', '/orgs', { base: behind.base, token, headers: { 'X-Forwarded-For': `10.0.0.9, ${ip}` } });
        expect((await from('203.0.113.1', 'wrong-a')).status).to.equal(401);
        expect((await from('203.0.113.1', 'wrong-b')).status).to.equal(401);
        expect((await from('203.0.113.1', 'wrong-c')).status).to.equal(429);
        expect((await from('203.0.113.2', 'wrong-d')).status).to.equal(401);
        // The right key is never refused for the guesses, from either address.
        expect((await from('203.0.113.1', testEnv().adminKey)).status).to.equal(200);
        // Without it, a made-up X-Forwarded-For does not escape the socket address's count.
        const spoof = (ip: string, token: string) =>
          call('GET', '/orgs', { base: direct.base, token, headers: { 'X-Forwarded-For': ip } });
        await spoof('198.51.100.1', 'wrong-e');
        await spoof('198.51.100.2', 'wrong-f');
        expect((await spoof('198.51.100.3', 'wrong-g')).status).to.equal(429);
        expect((await spoof('198.51.100.3', testEnv().adminKey)).status).to.equal(200);
      } finally {
        await behind.close();
        await direct.close();
        await clearLimits();
      }
    });
  });

  describe('the MCP transport rules: DNS rebinding, CORS, Accept', () => {
    let local: { base: string; close(): Promise<void> };
    before(async () => {
      local = await mountWith({ HOST: '127.0.0.1', MCP_ALLOWED_ORIGINS: ['https://console.example'] });
    });
    after(() => local.close());
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    };
    const send = (headers: Record<string, string>, method = 'POST', body: unknown = init) =>
      rawRequest(`${local.base}/apps/${app.id}/mcp`, {
        method,
        headers: {
          Authorization: `Bearer ${app.api_key}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          ...headers,
        },
        body: method === 'POST' ? JSON.stringify(body) : undefined,
      });

    it('bound to a loopback address: a foreign Host or Origin is 403 before credentials; local ones work', async () => {
      const port = new URL(local.base).port;
      const rebinding = await send({ Host: `evil.example.com:${port}`, Origin: `http://evil.example.com:${port}` });
      expect(rebinding.status).to.equal(403);
      // As a JSON-RPC error, as every refusal of the MCP endpoint but its 401 (src/security/mcp-guard.ts).
      expect(rebinding.body.error).to.deep.include({ code: -32000 });
      expect(rebinding.body.error.message).to.match(/^Host not allowed/);
      expect((await send({ Host: 'evil.example.com' }, 'POST')).status).to.equal(403);
      const noKey = await rawRequest(`${local.base}/apps/${app.id}/mcp`, {
        method: 'POST',
        headers: { Host: 'evil.example.com', 'Content-Type': 'application/json' },
        body: JSON.stringify(init),
      });
      expect(noKey.status, 'refused before the credential is looked at').to.equal(403);
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) {
        const ok = await send({ Host: host, Origin: `http://${host}` });
        expect(ok.status, host).to.equal(200);
      }
      const foreignOrigin = await send({ Origin: 'https://evil.example' });
      expect(foreignOrigin.status).to.equal(403);
      expect(foreignOrigin.body.error.message).to.match(/^Origin not allowed/);
    });

    it('on any binding a foreign Origin is refused; CORS on the MCP path reflects only allowed origins', async () => {
      const shared = await mcpPost(app.id, TOOLS_LIST, app.api_key, { Origin: 'https://evil.example' });
      expect(shared.status).to.equal(403);
      expect(shared.headers.get('access-control-allow-origin')).to.equal(null);
      const preflight = (origin: string) =>
        rawRequest(`${local.base}/apps/${app.id}/mcp`, {
          method: 'OPTIONS',
          headers: { Origin: origin, 'Access-Control-Request-Method': 'POST' },
        });
      const refused = await preflight('https://evil.example');
      expect(refused.status).to.equal(403);
      expect(refused.headers['access-control-allow-origin']).to.equal(undefined);
      const allowed = await preflight('https://console.example');
      expect(allowed.status).to.equal(204);
      expect(allowed.headers['access-control-allow-origin']).to.equal('https://console.example');
      // Other routes still answer CORS for any origin (spec).
      const health = await call('GET', '/health', { headers: { Origin: 'https://evil.example' } });
      expect(health.headers.get('access-control-allow-origin')).to.equal('https://evil.example');
    });

    it('a POST that cannot accept JSON is 406; no Accept, or one that allows JSON, is answered', async () => {
      for (const accept of ['text/event-stream', 'text/html'])
        expect((await mcpPost(app.id, TOOLS_LIST, app.api_key, { Accept: accept })).status, accept).to.equal(406);
      for (const accept of ['application/json', '*/*', 'application/json, text/event-stream'])
        expect((await mcpPost(app.id, TOOLS_LIST, app.api_key, { Accept: accept })).status, accept).to.equal(200);
      const none = await rawRequest(`${testEnv().baseUrl}/apps/${app.id}/mcp`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${app.api_key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(TOOLS_LIST),
      });
      expect(none.status).to.equal(200);
    });

    it("passes the MCP conformance suite's dns-rebinding-protection scenario", async function () {
      this.timeout(120_000);
      // The suite's server mode sends no credential: a small proxy adds the secret key, keeping Host and Origin.
      const proxy = await forwardingProxy(local.base, { authorization: `Bearer ${app.api_key}` });
      try {
        const cli = path.join(root, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
        const out = await runToEnd(process.execPath, [
          cli,
          'server',
          '--url',
          `${proxy.url}/apps/${app.id}/mcp`,
          '--scenario',
          'dns-rebinding-protection',
        ]);
        expect(out.code, out.text).to.equal(0);
        expect(out.text).to.match(/localhost-host-rebinding-rejected/);
        expect(proxy.count, 'the suite reached the server').to.be.at.least(2);
      } finally {
        await proxy.close();
      }
    });

    // Which scenarios apply and why the others do not:
    // docs/decisions/0299-conformance-suite-in-the-test-command.md. One CLI run per scenario.
    const APPLY = ['server-initialize', 'ping', 'tools-list', 'resources-list', 'prompts-list'];
    it(`passes the conformance suite's server scenarios that apply: ${APPLY.join(', ')}`, async function () {
      this.timeout(180_000);
      const proxy = await forwardingProxy(local.base, { authorization: `Bearer ${app.api_key}` });
      try {
        const cli = path.join(root, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
        for (const scenario of APPLY) {
          const out = await runToEnd(process.execPath, [
            cli,
            'server',
            '--url',
            `${proxy.url}/apps/${app.id}/mcp`,
            '--scenario',
            scenario,
          ]);
          expect(out.code, `${scenario}: ${out.text}`).to.equal(0);
          expect(out.text, scenario).to.not.match(/FAILURE/);
        }
      } finally {
        await proxy.close();
      }
    });
  });

  describe('purging registered clients that never signed in', () => {
    it(`the retention job removes clients older than OAUTH_UNUSED_CLIENT_HOURS without a sign-in`, async () => {
      const unused = (await post('/oauth/register', null, { redirect_uris: [REDIRECT] })).body.client_id;
      const fresh = (await post('/oauth/register', null, { redirect_uris: [REDIRECT] })).body.client_id;
      const used = await signIn(app);
      await sql(em(), `update oauth_clients set created_at = now() - interval '25 hours' where id = any($1)`, [
        [unused, used.clientId],
      ]);
      await purgeExpired(testEnv().deps);
      const left = (
        await sql<{ id: string }>(em(), 'select id from oauth_clients where id = any($1)', [
          [unused, fresh, used.clientId],
        ])
      ).map((r) => r.id);
      expect(left).to.have.members([fresh, used.clientId]);
    });
  });
});

function runToEnd(cmd: string, args: string[]): Promise<{ code: number | null; text: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString()));
    child.stderr.on('data', (d: Buffer) => (text += d.toString()));
    child.on('exit', (code) => resolve({ code, text }));
  });
}

// ---- two real API processes: limits shared through the database ----------------------------------------

describe('limits across two API processes', function () {
  this.timeout(180_000);
  const ADMIN = 'adm_security_processes';
  let a: string;
  let b: string;
  let paypal: Awaited<ReturnType<typeof forwardingProxy>>;
  const procs: Started[] = [];

  before(async function () {
    this.timeout(120_000);
    paypal = await forwardingProxy(testEnv().paypal.baseUrl);
    const ports = [await freePort(), await freePort()];
    const env = (port: number) =>
      serviceEnv(port, {
        ADMIN_API_KEY: ADMIN,
        PAYPAL_BASE_URL: paypal.url,
        WEBHOOKS_ALLOW_PRIVATE_URLS: 'true',
        AUTH_FAILURE_LIMIT: '5',
        OAUTH_REGISTER_LIMIT: '5',
        RATE_LIMIT_PER_SECOND: '20',
        UPGRADE_SETTLE_INTERVAL_SECONDS: '600',
        UPGRADE_LINKS_PER_HOUR: '3',
      });
    procs.push(startApi(env(ports[0])), startApi(env(ports[1])));
    [a, b] = ports.map((p) => `http://127.0.0.1:${p}`);
    for (const p of procs) await waitForListening(p);
  });
  after(async () => {
    await Promise.all(procs.map((p) => stopped(p.child)));
    await paypal?.close();
    await clearLimits();
  });
  beforeEach(clearLimits);

  const on = (i: number) => (i % 2 === 0 ? a : b);

  it('wrong admin keys on the consent sign-in: after 5 (across both processes) 429, the right key never', async () => {
    const signInForm = (base: string, key: string) =>
      fetch(`${base}/oauth/consent/sign-in`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ request: 'oar_x', admin_key: key }),
        redirect: 'manual',
      });
    for (let i = 0; i < 5; i++) expect((await signInForm(on(i), `guess-${i}`)).status).to.equal(401);
    for (const base of [a, b]) {
      const res = await signInForm(base, `guess-more-${base}`);
      expect(res.status).to.equal(429);
      expect(Number(res.headers.get('retry-after'))).to.be.within(1, 900);
      expect(await res.text()).to.include('Too many attempts');
      // The right key is checked first, as on the API: someone else's guesses never refuse it.
      expect((await signInForm(base, ADMIN)).status).to.equal(303);
    }
  });

  it('wrong credentials on the API: after 5 (across both processes) guesses get 429, valid credentials never', async () => {
    const made = await call('POST', '/apps', { base: a, token: ADMIN, body: { name: 'guessed' } });
    for (let i = 0; i < 5; i++)
      expect((await call('GET', '/orgs', { base: on(i), token: `key_guess${i}` })).status).to.equal(401);
    for (const base of [a, b]) {
      const blocked = await call('GET', '/orgs', { base, token: 'key_guess_more' });
      expect(blocked.status).to.equal(429);
      expect(blocked.body.error).to.match(/^Too many failed credentials/);
      expect(Number(blocked.headers.get('retry-after'))).to.be.within(1, 900);
      // The right credentials from the same address are not refused for the guesses.
      expect((await call('GET', '/orgs', { base, token: ADMIN })).status).to.equal(200);
      expect((await call('GET', `/apps/${made.body.id}`, { base, token: made.body.api_key })).status).to.equal(200);
    }
    expect((await call('GET', '/health', { base: a })).status).to.equal(200);
  });

  it('a valid key on a route it may not use is a 401 that counts as no failure', async () => {
    const made = await call('POST', '/apps', { base: a, token: ADMIN, body: { name: 'owner' } });
    // The app's own secret key on its admin-only MCP settings, many times: 401 each time, never 429.
    for (let i = 0; i < 8; i++)
      expect(
        (await call('GET', `/apps/${made.body.id}/mcp/settings`, { base: on(i), token: made.body.api_key })).status,
      ).to.equal(401);
    const left = await sql(em(), `select 1 from rate_limits where key like 'authfail%'`);
    expect(left).to.deep.equal([]);
    expect((await call('GET', `/apps/${made.body.id}/mcp/settings`, { base: a, token: ADMIN })).status).to.equal(200);
  });

  it('one credential guessed from many places is refused on its own after 5 failures', async () => {
    // The same rotated key, sent again and again (a service left behind): its own counter runs out too.
    for (let i = 0; i < 5; i++)
      expect((await call('GET', '/orgs', { base: on(i), token: 'key_rotated_long_ago' })).status).to.equal(401);
    const counters = await sql<{ key: string }>(em(), `select key from rate_limits where key like 'authfail-key%'`);
    expect(counters).to.have.length(1);
    expect((await call('GET', '/orgs', { base: a, token: 'key_rotated_long_ago' })).status).to.equal(429);
  });

  it('POST /oauth/register: 5 per address and hour across both processes, then 429 with Retry-After', async () => {
    const reg = (base: string) =>
      call('POST', '/oauth/register', { base, body: { redirect_uris: [REDIRECT], client_name: 'flood' } });
    for (let i = 0; i < 5; i++) expect((await reg(on(i))).status).to.equal(201);
    for (const base of [a, b]) {
      const res = await reg(base);
      expect(res.status).to.equal(429);
      expect(res.body.error).to.equal('too_many_requests');
      expect(Number(res.headers.get('retry-after'))).to.be.within(1, 3600);
    }
  });

  it('requests per second: the publishable key per key and address in each process, the secret key unlimited', async () => {
    const made = await call('POST', '/apps', { base: a, token: ADMIN, body: { name: 'rate' } });
    await seedCatalog(made.body);
    const plan = `/apps/${made.body.id}/plans/pricing`;
    let saw429 = false;
    for (let burst = 0; burst < 5 && !saw429; burst++) {
      await new Promise((r) => setTimeout(r, 1100));
      // 30 at once to one process: past its 20 a second.
      const res = await Promise.all(
        Array.from({ length: 30 }, () => call('GET', plan, { base: a, token: made.body.public_key })),
      );
      for (const r of res) expect(r.headers.get('ratelimit-limit')).to.equal('20');
      const limited = res.filter((r) => r.status === 429);
      expect(res.filter((r) => r.status === 200).length + limited.length).to.equal(30);
      if (limited.length) {
        saw429 = true;
        expect(limited[0].headers.get('retry-after')).to.equal('1');
        expect(limited[0].body.error).to.match(/at most 20 requests per second/);
      }
    }
    expect(saw429, 'no 429 past 20 requests a second').to.equal(true);
    // A backend's secret key: 60 at once, every one answered, no limit announced.
    const backend = await Promise.all(
      Array.from({ length: 60 }, () => call('GET', plan, { base: a, token: made.body.api_key })),
    );
    expect(backend.map((r) => r.status)).to.deep.equal(backend.map(() => 200));
    expect(backend[0].headers.get('ratelimit-limit')).to.equal(null);
  });

  it('hammering .../usage/:id/add with the publishable key calls the provider a bounded number of times', async () => {
    const made = await call('POST', '/apps', { base: a, token: ADMIN, body: { name: 'hammered' } });
    const app402: TestApp = made.body;
    const base = `/apps/${app402.id}`;
    // Catalog and account through the shared test server (same database).
    await seedCatalog(app402);
    await createAccount(app402, { id: 'f1', plan: 'free' });
    await post(`${base}/namespaces/f1/usage/seats/add`, app402.api_key);
    const [[client_id, client_secret]] = Object.entries(PAYPAL_TEST_CREDENTIALS);
    const connected = await call('PUT', `${base}/payments`, {
      base: a,
      token: app402.api_key,
      body: { client_id, client_secret, env: 'sandbox' },
    });
    expect(connected.status, connected.text).to.equal(200);
    paypal.count = 0;

    const add = (i: number) =>
      call('POST', `${base}/namespaces/f1/usage/seats/add`, { base: on(i), token: app402.public_key });
    let answered402 = 0;
    const links = new Set<string>();
    for (let round = 0; answered402 < 100 && round < 50; round++) {
      const res = await Promise.all(Array.from({ length: 10 }, (_, i) => add(i)));
      for (const r of res) {
        expect([402, 429]).to.include(r.status);
        if (r.status === 402) {
          answered402++;
          if (r.body.offer.checkout_url) links.add(r.body.offer.checkout_url);
        }
      }
      const wait = Math.max(0, ...res.map((r) => Number(r.headers.get('retry-after') ?? 0)));
      if (wait) await new Promise((r) => setTimeout(r, wait * 1000));
    }
    expect(answered402).to.be.at.least(100);
    const checkouts = (await get(`${base}/checkouts`, app402.api_key)).body.data;
    expect(checkouts.length, 'approval links made for 402s: at most UPGRADE_LINKS_PER_HOUR').to.be.within(1, 3);
    expect(links.size).to.be.within(1, 3);
    // Per link: an access token and the subscription (plus, once per app, the product and its plan);
    // per settle interval: one read of the newest open checkout.
    const calls = paypal.count;
    expect(calls, `provider calls for ${answered402} 402s`).to.be.at.most(3 * 4 + 2);
    process.stdout.write(
      `      (${answered402} answers 402, ${checkouts.length} checkout(s), ${calls} provider calls)\n`,
    );

    // While the provider does not answer at all, 402s still come back at once: they do not wait on it.
    paypal.stalled = true;
    const before = paypal.count;
    try {
      const res = await Promise.all(Array.from({ length: 6 }, (_, i) => add(i)));
      expect(res.map((r) => r.status).every((s) => s === 402 || s === 429)).to.equal(true);
      expect(paypal.count - before, 'no provider request during these 402s').to.equal(0);
    } finally {
      paypal.stalled = false;
    }
  });
});
