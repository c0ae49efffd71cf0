import { expect } from 'chai';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { OAuthMetadataSchema, OAuthProtectedResourceMetadataSchema } from '@modelcontextprotocol/sdk/shared/auth.js';
import { sql } from '../../src/db/sql.js';
import { sha256 } from '../../src/oauth/tokens.js';
import { createTestApp, seededApp, type TestApp } from '../helpers/factories.js';
import { call, del, get, patch, post } from '../helpers/http.js';
import { ALL_TOOLSETS, mcpPost, mcpUrl, resultText, TOOLS_LIST } from '../helpers/mcp.js';

/** The route tools of a list (without find_tools and call_tool, listed for every caller). */
const routeTools = <T extends { name: string }>(tools: T[]) =>
  tools.filter((t) => t.name !== 'find_tools' && t.name !== 'call_tool');
import { approveWith, openAuthorization, pkce, postForm, REDIRECT, TestOAuthProvider } from '../helpers/oauth.js';
import { startReceiver } from '../helpers/receiver.js';
import { testEnv } from '../helpers/servers.js';

async function register(body: Record<string, unknown> = {}) {
  return post('/oauth/register', null, { redirect_uris: [REDIRECT], client_name: 'Raw client', ...body });
}

function authorizeUrl(q: Record<string, string>) {
  return `/oauth/authorize?${new URLSearchParams(q)}`;
}

/** Registration, authorization and approval without the SDK: returns the code and the verifier. */
async function rawCode(app: TestApp, level: 'read' | 'write' | 'full' = 'write', extra: Record<string, string> = {}) {
  const client = (await register()).body;
  const { verifier, challenge } = pkce();
  const url = new URL(
    testEnv().baseUrl +
      authorizeUrl({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: 'st',
        resource: mcpUrl(app.id).toString(),
        ...extra,
      }),
  );
  const code = await approveWith(level)(url);
  return { client, code, verifier };
}

describe('OAuth 2.1 for MCP clients', function () {
  this.timeout(60_000);
  let app: TestApp;
  const clients: Client[] = [];
  beforeEach(async () => {
    ({ app } = await seededApp());
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });

  // These clients choose every toolset, so tools/list names every tool a connection may call (its level and the
  // app's switches decide: what these tests count); the default list is test/api/mcp-toolsets.test.ts's.
  async function connectWith(provider: TestOAuthProvider) {
    const client = new Client({ name: 'oauth-client', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(mcpUrl(app.id), {
        authProvider: provider,
        requestInit: { headers: ALL_TOOLSETS },
      }),
    );
    clients.push(client);
    return client;
  }

  /** The whole sign-in as an MCP client does it: 401, discovery, registration, PKCE, consent, code, tokens. */
  async function signIn(provider: TestOAuthProvider) {
    const transport = new StreamableHTTPClientTransport(mcpUrl(app.id), { authProvider: provider });
    const first = new Client({ name: 'oauth-client', version: '1' });
    let error: unknown;
    await first.connect(transport).catch((err) => (error = err));
    expect(error).to.be.instanceOf(UnauthorizedError);
    expect(provider.info?.client_id).to.match(/^mcpc_/);
    expect(provider.authorizationUrl!.searchParams.get('code_challenge_method')).to.equal('S256');
    expect(provider.authorizationUrl!.searchParams.get('resource')).to.equal(mcpUrl(app.id).toString());
    await transport.finishAuth(provider.code!);
    expect(provider.saved?.access_token).to.match(/^mcp_at_/);
    expect(provider.saved?.refresh_token).to.match(/^mcp_rt_/);
    return connectWith(provider);
  }

  describe('discovery', () => {
    it('protected resource metadata (RFC 9728) at both paths, authorization server metadata (RFC 8414) at all of its paths', async () => {
      const base = testEnv().baseUrl;
      const prm = await get(`/.well-known/oauth-protected-resource/apps/${app.id}/mcp`);
      expect(prm.status).to.equal(200);
      expect(OAuthProtectedResourceMetadataSchema.parse(prm.body)).to.include({
        resource: `${base}/apps/${app.id}/mcp`,
      });
      expect(prm.body.authorization_servers).to.deep.equal([base]);
      expect(prm.body.scopes_supported).to.deep.equal(['mcp:read', 'mcp:write', 'mcp:full']);
      expect((await get('/.well-known/oauth-protected-resource')).body.resource).to.equal(base);
      expect((await get('/.well-known/oauth-protected-resource/apps/app_nope/mcp')).status).to.equal(404);
      for (const path of [
        '/.well-known/oauth-authorization-server',
        '/.well-known/oauth-authorization-server/apps/x/mcp',
        '/.well-known/openid-configuration',
      ]) {
        const res = await get(path);
        expect(res.status, path).to.equal(200);
        const meta = OAuthMetadataSchema.parse(res.body);
        expect(meta.issuer).to.equal(base);
        expect(meta.code_challenge_methods_supported).to.deep.equal(['S256']);
        expect(meta.registration_endpoint).to.equal(`${base}/oauth/register`);
        expect(meta.revocation_endpoint).to.equal(`${base}/oauth/revoke`);
      }
    });
  });

  describe('POST /oauth/register', () => {
    it('accepts https, loopback http on any port and app schemes; refuses other http, dangerous schemes and fragments', async () => {
      const ok = await register({
        redirect_uris: [
          'https://client.example/cb',
          'http://localhost:1234/cb',
          'http://[::1]/cb',
          'com.example.app:/oauth',
        ],
      });
      expect(ok.status, ok.text).to.equal(201);
      expect(ok.body).to.include({ token_endpoint_auth_method: 'none', client_name: 'Raw client' });
      expect(ok.body).to.not.have.property('client_secret');
      for (const uri of [
        'http://client.example/cb',
        'javascript:alert(1)',
        'https://client.example/cb#x',
        'not a uri',
      ]) {
        const res = await register({ redirect_uris: [uri] });
        expect(res.status, uri).to.equal(400);
        expect(res.body.error, uri).to.equal('invalid_redirect_uri');
        expect(res.body.error_description).to.be.a('string');
      }
      const none = await register({ redirect_uris: [] });
      expect(none.status).to.equal(400);
      expect(none.body.error).to.equal('invalid_client_metadata');
      const confidential = await register({ token_endpoint_auth_method: 'client_secret_post' });
      expect(confidential.body.client_secret).to.match(/^mcpcs_/);
    });
  });

  describe('GET /oauth/authorize', () => {
    it(
      'an unknown client or redirect URI is an HTML page; after a valid redirect URI, errors go back to it with ' +
        'error and error_description (RFC 6749 4.1.2.1)',
      async () => {
        const client = (await register()).body;
        const { challenge } = pkce();
        const good = {
          response_type: 'code',
          client_id: client.client_id,
          redirect_uri: REDIRECT,
          code_challenge: challenge,
          code_challenge_method: 'S256',
          state: 'st-1',
        };
        const pages: [Record<string, string>, RegExp][] = [
          [{ ...good, client_id: 'mcpc_nope' }, /not registered/],
          [{ ...good, redirect_uri: 'http://127.0.0.1:1/other' }, /redirect_uri/],
        ];
        for (const [q, message] of pages) {
          const res = await call('GET', authorizeUrl(q));
          expect(res.status, JSON.stringify(q)).to.equal(400);
          expect(res.headers.get('content-type')).to.match(/text\/html/);
          expect(res.text).to.match(message);
        }
        const back: [Record<string, string>, string, RegExp][] = [
          [{ ...good, code_challenge: '' }, 'invalid_request', /code_challenge/],
          [{ ...good, code_challenge_method: 'plain' }, 'invalid_request', /S256/],
          [{ ...good, response_type: 'token' }, 'unsupported_response_type', /response_type/],
          [{ ...good, scope: 'admin' }, 'invalid_scope', /Unknown scope/],
          [{ ...good, resource: `https://elsewhere.example/apps/${app.id}/mcp` }, 'invalid_target', /not on this/],
          [{ ...good, resource: `${testEnv().baseUrl}/apps/app_nope/mcp` }, 'invalid_target', /does not exist/],
        ];
        for (const [q, error, description] of back) {
          const res = await call('GET', authorizeUrl(q));
          expect(res.status, JSON.stringify(q)).to.equal(302);
          const to = new URL(res.headers.get('location')!);
          expect(`${to.origin}${to.pathname}`).to.equal(REDIRECT);
          expect(to.searchParams.get('error'), JSON.stringify(q)).to.equal(error);
          expect(to.searchParams.get('error_description')).to.match(description);
          expect(to.searchParams.get('state')).to.equal('st-1');
          expect(to.searchParams.get('iss')).to.equal(testEnv().baseUrl);
          expect(to.searchParams.get('code')).to.equal(null);
        }
        const ok = await call('GET', authorizeUrl({ ...good, resource: mcpUrl(app.id).toString() }));
        expect(ok.status).to.equal(302);
        // By default the consent page is the console's ({dashboard_url} is the console on this origin).
        expect(ok.headers.get('location')).to.match(
          new RegExp(`^${testEnv().baseUrl}/console/oauth/consent\\?request=oar_`),
        );
      },
    );

    it('redirects to APP_URL/oauth/consent when APP_URL is set', async () => {
      const config = testEnv().deps.config as { APP_URL?: string };
      config.APP_URL = 'https://dashboard.example';
      try {
        const client = (await register()).body;
        const res = await call(
          'GET',
          authorizeUrl({
            response_type: 'code',
            client_id: client.client_id,
            redirect_uri: REDIRECT,
            code_challenge: pkce().challenge,
            code_challenge_method: 'S256',
          }),
        );
        expect(res.headers.get('location')).to.match(/^https:\/\/dashboard\.example\/oauth\/consent\?request=oar_/);
      } finally {
        delete config.APP_URL;
      }
    });
  });

  describe('bad input', () => {
    it('sign-out from another site is refused (it would sign the operator out)', async () => {
      const res = await call('POST', '/oauth/consent/sign-out', {
        raw: 'request=x',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: 'https://evil.example' },
      });
      expect(res.status).to.equal(403);
      expect(res.headers.get('set-cookie')).to.equal(null);
    });

    it('is a clear 4xx, never a 500, in the format of each route', async () => {
      const token = await call('POST', '/oauth/token', { body: { grant_type: 7 } });
      expect(token.status).to.equal(400);
      expect(token.body).to.deep.equal({
        error: 'invalid_request',
        error_description: 'grant_type: Invalid input: expected string, received number',
      });
      expect((await call('POST', '/oauth/token', { raw: '{nope' })).status).to.equal(400);
      expect(
        (await call('POST', '/oauth/register', { raw: 'x', headers: { 'Content-Type': 'text/plain' } })).status,
      ).to.equal(415);
      const revoke = await postForm('/oauth/revoke', {});
      expect(revoke.status).to.equal(400);
      expect(revoke.body.error).to.equal('invalid_request');
      const repeated = await call('GET', '/oauth/authorize?client_id=a&client_id=b');
      expect(repeated.status).to.equal(400);
      expect(repeated.text).to.include('client_id is sent more than once');
      const approve = await post('/oauth/requests/oar_nope/approve', testEnv().adminKey, {
        user: {},
        access_level: 'read',
      });
      expect(approve.status).to.equal(400);
      expect(approve.body.error).to.equal('user.id: is required');
      expect((await post('/oauth/requests/oar_nope/deny', testEnv().adminKey, {})).status).to.equal(404);
      const consent = await postForm('/oauth/consent', {});
      expect(consent.status).to.equal(401);
      const noRequest = await call('GET', '/oauth/consent');
      expect(noRequest.status).to.equal(404);
      expect(noRequest.text).to.include('Sign-in request not found');
      // Malformed escapes and NUL characters: 4xx in each route's own format.
      const basic = (pair: string) => ({ Authorization: `Basic ${Buffer.from(pair).toString('base64')}` });
      const badBasic = await call('POST', '/oauth/token', {
        raw: 'grant_type=refresh_token&refresh_token=x',
        headers: { ...basic('%zz:x'), 'Content-Type': 'application/x-www-form-urlencoded' },
      });
      expect(badBasic.status).to.equal(401);
      expect(badBasic.body.error).to.equal('invalid_client');
      const badRevoke = await call('POST', '/oauth/revoke', {
        raw: 'token=x',
        headers: { ...basic('a:%zz'), 'Content-Type': 'application/x-www-form-urlencoded' },
      });
      expect(badRevoke.status).to.equal(401);
      const nulName = await call('POST', '/oauth/register', {
        body: { redirect_uris: [REDIRECT], client_name: 'a\u0000b' },
      });
      expect(nulName.status).to.equal(400);
      expect(nulName.body).to.deep.equal({
        error: 'invalid_client_metadata',
        error_description: 'client_name: must not contain a NUL character',
      });
      const client = (await register()).body;
      const authorizeWith = (extra: Record<string, string>) =>
        call(
          'GET',
          authorizeUrl({
            response_type: 'code',
            client_id: client.client_id,
            redirect_uri: REDIRECT,
            code_challenge: pkce().challenge,
            code_challenge_method: 'S256',
            ...extra,
          }),
        );
      const page = await authorizeWith({ state: 'a\u0000b' });
      expect(page.status).to.equal(400);
      expect(page.headers.get('content-type')).to.match(/^text\/html/);
      // A resource that does not decode comes back to the (valid) redirect URI as invalid_target.
      const undecodable = await authorizeWith({ resource: `${testEnv().baseUrl}/apps/%zz/mcp` });
      expect(undecodable.status).to.equal(302);
      expect(new URL(undecodable.headers.get('location')!).searchParams.get('error')).to.equal('invalid_target');
      const mcp = await mcpPost(app.id, [], app.api_key);
      expect(mcp.status).to.equal(400);
      const badArgs = await mcpPost(
        app.id,
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_plan', arguments: 'x' } },
        app.api_key,
      );
      expect(badArgs.status).to.be.below(500);
      expect(badArgs.body.error ?? badArgs.body.result?.isError).to.not.equal(undefined);
    });
  });

  describe('PUBLIC_API_URL', () => {
    it('is the origin of the metadata and the MCP resource URL; a server URL on another origin fails sign-in', async () => {
      const config = testEnv().deps.config as { PUBLIC_API_URL?: string };
      config.PUBLIC_API_URL = 'https://api.example.com';
      try {
        const prm = await get(`/.well-known/oauth-protected-resource/apps/${app.id}/mcp`);
        expect(prm.body.resource).to.equal(`https://api.example.com/apps/${app.id}/mcp`);
        expect(prm.body.authorization_servers).to.deep.equal(['https://api.example.com']);
        expect((await get('/.well-known/oauth-authorization-server')).body.token_endpoint).to.equal(
          'https://api.example.com/oauth/token',
        );
        const noToken = await mcpPost(app.id, TOOLS_LIST, null);
        expect(noToken.headers.get('www-authenticate')).to.equal(
          `Bearer resource_metadata="https://api.example.com/.well-known/oauth-protected-resource/apps/${app.id}/mcp", ` +
            'scope="mcp:write"',
        );
        const client = (await register()).body;
        const q = {
          response_type: 'code',
          client_id: client.client_id,
          redirect_uri: REDIRECT,
          code_challenge: pkce().challenge,
          code_challenge_method: 'S256',
        };
        const local = await call('GET', authorizeUrl({ ...q, resource: mcpUrl(app.id).toString() }));
        expect(local.status).to.equal(302);
        const refused = new URL(local.headers.get('location')!);
        expect(refused.searchParams.get('error')).to.equal('invalid_target');
        expect(refused.searchParams.get('error_description')).to.include('is not on this service');
        const good = await call('GET', authorizeUrl({ ...q, resource: `https://api.example.com/apps/${app.id}/mcp` }));
        expect(good.status).to.equal(302);
        expect(good.headers.get('location')).to.match(
          /^https:\/\/api\.example\.com\/console\/oauth\/consent\?request=/,
        );
      } finally {
        delete config.PUBLIC_API_URL;
      }
    });
  });

  describe('retention', () => {
    it('the hourly purge removes tool calls older than 30 days', async () => {
      const em = testEnv().deps.orm.em.fork();
      await sql(
        em,
        `insert into mcp_calls (id, app_id, tool, arguments, status, is_error, result, duration_ms, created_at) values
        ('mcl_old_${app.id}', $1, 'list_plans', '{}', 200, false, '[]', 1, now() - interval '31 days'),
        ('mcl_new_${app.id}', $1, 'list_plans', '{}', 200, false, '[]', 1, now() - interval '29 days')`,
        [app.id],
      );
      const { purgeExpired } = await import('../../src/housekeeping/retention.js');
      const result = await purgeExpired(testEnv().deps);
      expect(result.mcpCalls).to.be.at.least(1);
      const left = await sql<{ id: string }>(em, 'select id from mcp_calls where app_id = $1', [app.id]);
      expect(left.map((r) => r.id)).to.deep.equal([`mcl_new_${app.id}`]);
    });

    it('key sessions idle for 30 days are removed; OAuth connections stay', async () => {
      const em = testEnv().deps.orm.em.fork();
      await sql(
        em,
        `insert into mcp_connections (id, app_id, kind, name, last_used_at, created_at) values
        ('mcc_idle_${app.id}', $1, 'secret_key', 'old script', now() - interval '31 days', now() - interval '40 days'),
        ('mcc_busy_${app.id}', $1, 'secret_key', 'daily script', now() - interval '1 day', now() - interval '40 days')`,
        [app.id],
      );
      const { purgeExpired } = await import('../../src/housekeeping/retention.js');
      await purgeExpired(testEnv().deps);
      const left = await sql<{ id: string }>(
        em,
        `select id from mcp_connections where app_id = $1 and kind = 'secret_key' order by id`,
        [app.id],
      );
      expect(left.map((r) => r.id)).to.deep.equal([`mcc_busy_${app.id}`]);
    });
  });

  describe('the SDK client signing in', () => {
    it(
      'registers, signs in with PKCE, approves, gets tokens, refreshes (old pair dies), and sees ' +
        'only the tools of its level',
      async () => {
        const provider = new TestOAuthProvider(approveWith('read'));
        const client = await signIn(provider);
        const tools = routeTools((await client.listTools()).tools);
        expect(tools.length).to.equal(33);
        expect(tools.every((t) => t.annotations?.readOnlyHint === true)).to.equal(true);
        expect(JSON.parse(resultText(await client.callTool({ name: 'list_plans', arguments: {} })))).to.have.length(4);
        const denied = await client.callTool({ name: 'create_plan', arguments: { id: 'x', name: 'X' } });
        expect(denied.isError).to.equal(true);
        expect(resultText(denied)).to.match(/^Error 403: Connection level too low/);
        const [logged] = (await get(`/apps/${app.id}/mcp/calls?limit=1`, testEnv().adminKey)).body.data;
        expect(logged).to.include({ tool: 'create_plan', status: 403, is_error: true });
        expect((await get(`/apps/${app.id}/plans/x`, app.api_key)).status).to.equal(404);

        // Tokens are stored only as hashes.
        const stored = await sql<{ hash: string }>(
          testEnv().deps.orm.em.fork(),
          'select hash from oauth_tokens where hash = $1',
          [sha256(provider.saved!.access_token)],
        );
        expect(stored).to.have.length(1);
        const plain = await sql(testEnv().deps.orm.em.fork(), 'select 1 from oauth_tokens where hash = $1', [
          provider.saved!.access_token,
        ]);
        expect(plain).to.have.length(0);

        // Refresh through the SDK's own helper: both tokens rotate and the old pair stops working.
        const old = provider.saved!;
        expect(await auth(provider, { serverUrl: mcpUrl(app.id) })).to.equal('AUTHORIZED');
        expect(provider.saved!.access_token).to.not.equal(old.access_token);
        expect(provider.saved!.refresh_token).to.not.equal(old.refresh_token);
        const stale = await mcpPost(app.id, TOOLS_LIST, old.access_token);
        expect(stale.status).to.equal(401);
        expect(stale.headers.get('www-authenticate')).to.match(/resource_metadata=.*, error="invalid_token"$/);
        // (Replaying the old refresh token revokes the whole token family: test/api/security.test.ts.)
        const fresh = await connectWith(provider);
        expect(routeTools((await fresh.listTools()).tools)).to.have.length(33);

        // The connection is listed with its person and level.
        const [conn] = (await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey)).body;
        expect(conn).to.include({
          kind: 'oauth',
          name: 'SDK test client',
          access_level: 'read',
          client_id: provider.info!.client_id,
        });
        expect(conn.user).to.deep.equal({ id: 'user_1', name: 'Ada', email: 'ada@example.com' });
        expect(conn.calls_last_7_days).to.equal(2);

        // Revoke (RFC 7009) ends the connection.
        const revoked = await postForm('/oauth/revoke', {
          token: provider.saved!.refresh_token!,
          client_id: provider.info!.client_id,
        });
        expect(revoked.status).to.equal(200);
        expect((await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey)).body).to.deep.equal([]);
        const after = await mcpPost(app.id, TOOLS_LIST, provider.saved!.access_token);
        expect(after.status).to.equal(401);
        expect(
          (await postForm('/oauth/revoke', { token: 'mcp_at_unknown', client_id: provider.info!.client_id })).status,
        ).to.equal(200);
      },
    );

    it('the same person approving the same client again updates the connection level (write, then full)', async () => {
      const provider = new TestOAuthProvider(approveWith('write'), 'mcp:write');
      const client = await signIn(provider);
      expect(routeTools((await client.listTools()).tools)).to.have.length(63);
      // The SDK asks for the scope the 401 names: the app's cap (Read and write for a new app), not every scope.
      expect(provider.authorizationUrl!.searchParams.get('scope')).to.equal('mcp:write');
      const before = (await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey)).body;
      // Sign in again with the same registered client, approved at full (and full switched on for the app).
      await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, { access_level: 'full' });
      provider.saved = undefined;
      (provider as { approve: unknown }).approve = approveWith('full');
      const again = await signIn(provider);
      expect(routeTools((await again.listTools()).tools)).to.have.length(75);
      const after = (await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey)).body;
      expect(after).to.have.length(1);
      expect(after[0].id).to.equal(before[0].id);
      expect(after[0].access_level).to.equal('full');
    });
  });

  describe('scopes that tell the truth', () => {
    it("consent and the issued scope never exceed the app's MCP cap; the connection list shows what the token can do", async () => {
      const client = (await register()).body;
      const { verifier, challenge } = pkce();
      const url = new URL(
        testEnv().baseUrl +
          authorizeUrl({
            response_type: 'code',
            client_id: client.client_id,
            redirect_uri: REDIRECT,
            code_challenge: challenge,
            code_challenge_method: 'S256',
            scope: 'mcp:full',
            resource: mcpUrl(app.id).toString(),
          }),
      );
      const requestId = await openAuthorization(url);
      // A new app gives OAuth connections Read and write: full is neither preselected nor offered.
      const shown = (await get(`/oauth/requests/${requestId}`, testEnv().adminKey)).body;
      expect(shown).to.include({ requested_level: 'write', max_level: 'write', scope: 'mcp:full' });
      const tooMuch = await post(`/oauth/requests/${requestId}/approve`, testEnv().adminKey, {
        user: { id: 'u1' },
        access_level: 'full',
      });
      expect(tooMuch.status).to.equal(400);
      expect(tooMuch.body.error).to.match(/at most write access/);
      const ok = await post(`/oauth/requests/${requestId}/approve`, testEnv().adminKey, {
        user: { id: 'u1' },
        access_level: 'write',
      });
      const code = new URL(ok.body.redirect_url).searchParams.get('code')!;
      const token = await postForm('/oauth/token', {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        client_id: client.client_id,
        redirect_uri: REDIRECT,
      });
      expect(token.body.scope).to.equal('mcp:write');
      // The app is lowered to read: the list, a refreshed token and the 401 all say read.
      await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, { access_level: 'read' });
      const [conn] = (await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey)).body;
      expect(conn).to.include({ access_level: 'write', effective_level: 'read' });
      const refreshed = await postForm('/oauth/token', {
        grant_type: 'refresh_token',
        refresh_token: token.body.refresh_token,
        client_id: client.client_id,
      });
      expect(refreshed.body.scope).to.equal('mcp:read');
      const anonymous = await mcpPost(app.id, TOOLS_LIST, null);
      expect(anonymous.headers.get('www-authenticate')).to.match(/, scope="mcp:read"$/);
      // A tool override switching on a delete raises the cap to full.
      await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, {
        access_level: 'write',
        tool_overrides: { delete_plan: true },
      });
      const [raised] = (await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey)).body;
      expect(raised).to.include({ access_level: 'write', effective_level: 'write' });
      expect((await mcpPost(app.id, TOOLS_LIST, null)).headers.get('www-authenticate')).to.match(/scope="mcp:full"$/);
    });

    it("the service's consent page offers no level above the app's MCP cap", async () => {
      const settings = await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, { access_level: 'read' });
      expect(settings.body.access_level).to.equal('read');
      const client = (await register()).body;
      const requestId = await openAuthorization(
        new URL(
          testEnv().baseUrl +
            authorizeUrl({
              response_type: 'code',
              client_id: client.client_id,
              redirect_uri: REDIRECT,
              code_challenge: pkce().challenge,
              code_challenge_method: 'S256',
              resource: mcpUrl(app.id).toString(),
            }),
        ),
      );
      const session = await call('POST', '/oauth/consent/sign-in', {
        raw: new URLSearchParams({ request: requestId, admin_key: testEnv().adminKey }).toString(),
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: testEnv().baseUrl },
      });
      const cookie = session.headers.get('set-cookie')!.split(';')[0];
      const html = (await call('GET', `/oauth/consent?request=${requestId}`, { headers: { Cookie: cookie } })).text;
      expect(html).to.include('Approve');
      expect(html).to.match(/value="read"/);
      expect(html).to.not.match(/value="write"|value="full"/);
    });
  });

  describe('Client ID Metadata Documents', () => {
    const serveDocument = async (doc: (url: string) => unknown, headers: Record<string, string> = {}) => {
      let url = '';
      const receiver = await startReceiver(() => ({
        status: 200,
        body: typeof doc(url) === 'string' ? (doc(url) as string) : JSON.stringify(doc(url)),
        headers: { 'content-type': 'application/json', ...headers },
      }));
      url = `http://127.0.0.1:${receiver.port}/oauth/client.json`;
      return { receiver, url };
    };
    const authorizeAs = (clientId: string, challenge = pkce().challenge) =>
      call(
        'GET',
        authorizeUrl({
          response_type: 'code',
          client_id: clientId,
          redirect_uri: REDIRECT,
          code_challenge: challenge,
          code_challenge_method: 'S256',
          state: 'cimd',
          resource: mcpUrl(app.id).toString(),
        }),
      );

    it('are advertised, fetched (under the webhook address policy), cached, and sign a client in without registration', async () => {
      const meta = await get('/.well-known/oauth-authorization-server');
      expect(meta.body.client_id_metadata_document_supported).to.equal(true);
      const { receiver, url } = await serveDocument((u) => ({
        client_id: u,
        client_name: 'Metadata client',
        redirect_uris: [REDIRECT],
        token_endpoint_auth_method: 'none',
      }));
      try {
        const { verifier, challenge } = pkce();
        const first = await authorizeAs(url, challenge);
        expect(first.status, first.text).to.equal(302);
        const requestId = new URL(first.headers.get('location')!).searchParams.get('request')!;
        const shown = (await get(`/oauth/requests/${requestId}`, testEnv().adminKey)).body;
        expect(shown.client).to.include({ id: url, name: 'Metadata client' });
        const approved = await post(`/oauth/requests/${requestId}/approve`, testEnv().adminKey, {
          user: { id: 'u1' },
          access_level: 'read',
        });
        const code = new URL(approved.body.redirect_url).searchParams.get('code')!;
        const token = await postForm('/oauth/token', {
          grant_type: 'authorization_code',
          code,
          code_verifier: verifier,
          client_id: url,
          redirect_uri: REDIRECT,
        });
        expect(token.status, JSON.stringify(token.body)).to.equal(200);
        expect(token.body.scope).to.equal('mcp:read');
        expect((await mcpPost(app.id, TOOLS_LIST, token.body.access_token)).status).to.equal(200);
        // Cached: a second sign-in within the document's lifetime does not fetch it again.
        expect((await authorizeAs(url)).status).to.equal(302);
        expect(receiver.received).to.have.length(1);
        expect(receiver.received[0].headers['user-agent']).to.match(/offerkit/);
      } finally {
        await receiver.close();
      }
    });

    it('refuses a document that names another client_id, asks for a secret, is too large, or is on a private address', async () => {
      const cases: [(u: string) => unknown, RegExp][] = [
        [() => ({ client_id: 'https://other.example/c.json', redirect_uris: [REDIRECT] }), /not its own URL/],
        [
          (u) => ({ client_id: u, redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_post' }),
          /public client/,
        ],
        [(u) => ({ client_id: u, redirect_uris: ['javascript:alert(1)'] }), /redirect URI/],
        [(u) => ({ client_id: u, redirect_uris: [REDIRECT], client_name: 'x'.repeat(6000) }), /larger than 5120 bytes/],
        [() => 'not json', /not JSON/],
      ];
      for (const [doc, message] of cases) {
        const { receiver, url } = await serveDocument(doc);
        try {
          const res = await authorizeAs(url);
          expect(res.status, res.text).to.equal(400);
          expect(res.headers.get('content-type')).to.match(/text\/html/);
          expect(res.text).to.match(message);
        } finally {
          await receiver.close();
        }
      }
      // Without the test servers' allowance for private addresses, a loopback document is refused before any
      // request is made (the webhook policy), and http is no metadata URL at all.
      const { receiver, url } = await serveDocument((u) => ({ client_id: u, redirect_uris: [REDIRECT] }));
      const config = testEnv().deps.config as { WEBHOOKS_ALLOW_PRIVATE_URLS: boolean };
      config.WEBHOOKS_ALLOW_PRIVATE_URLS = false;
      try {
        const https = await authorizeAs(url.replace('http:', 'https:'));
        expect(https.status).to.equal(400);
        expect(https.text).to.match(/public address/);
        expect((await authorizeAs(url)).text).to.match(/not registered/);
        expect(receiver.received).to.have.length(0);
      } finally {
        config.WEBHOOKS_ALLOW_PRIVATE_URLS = true;
        await receiver.close();
      }
    });
  });

  describe('access for OAuth connections', () => {
    it('a throttled connection gets a JSON-RPC error per request with the retry time (and 429, Retry-After)', async () => {
      const provider = new TestOAuthProvider(approveWith('read'));
      await signIn(provider);
      const token = provider.saved!.access_token;
      // 100 requests a second per connection by default; 5 here, so a few at once pass it on any machine.
      const config = testEnv().deps.config as { RATE_LIMIT_PER_SECOND: number };
      const before = config.RATE_LIMIT_PER_SECOND;
      config.RATE_LIMIT_PER_SECOND = 5;
      let answers: Awaited<ReturnType<typeof mcpPost>>[];
      let batch: Awaited<ReturnType<typeof mcpPost>>;
      try {
        answers = await Promise.all(
          Array.from({ length: 12 }, (_, i) => mcpPost(app.id, { ...TOOLS_LIST, id: i + 1 }, token)),
        );
        batch = await mcpPost(
          app.id,
          [
            { ...TOOLS_LIST, id: 'a' },
            { ...TOOLS_LIST, id: 'b' },
          ],
          token,
        );
      } finally {
        config.RATE_LIMIT_PER_SECOND = before;
      }
      const throttled = answers.filter((r) => r.status === 429);
      expect(throttled.length, 'some requests past the rate').to.be.greaterThan(0);
      for (const r of throttled) {
        expect(r.headers.get('retry-after')).to.match(/^\d+$/);
        expect(r.body.jsonrpc).to.equal('2.0');
        expect(r.body.id).to.be.a('number');
        expect(r.body.error.code).to.equal(-32000);
        expect(r.body.error.message).to.match(/^Rate limit exceeded: .*; retry after \d+ seconds?$/);
        expect(r.body.error.data.retry_after).to.equal(Number(r.headers.get('retry-after')));
      }
      expect(batch.status).to.equal(429);
      expect(batch.body.map((e: { id: string }) => e.id)).to.deep.equal(['a', 'b']);
    });

    it('a tool switched off is hidden and refused (logged 403); resources follow their tools; keys still call it', async () => {
      const provider = new TestOAuthProvider(approveWith('write'));
      const client = await signIn(provider);
      // A new app's level is Read and write: deletes are switched off.
      expect(routeTools((await client.listTools()).tools)).to.have.length(63);
      expect(resultText(await client.callTool({ name: 'delete_plan', arguments: { planId: 'internal' } }))).to.match(
        /^Error 403: Tool delete_plan is switched off/,
      );
      const off = await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, {
        tool_overrides: { list_plans: false },
      });
      expect(off.status).to.equal(200);
      const names = routeTools((await client.listTools()).tools).map((t) => t.name);
      expect(names).to.have.length(62);
      expect(names).to.not.include('list_plans');
      const refused = await client.callTool({ name: 'list_plans', arguments: {} });
      expect(refused.isError).to.equal(true);
      expect(resultText(refused)).to.equal("Error 403: Tool list_plans is switched off for this app's MCP connections");
      const [logged] = (await get(`/apps/${app.id}/mcp/calls?limit=1`, testEnv().adminKey)).body.data;
      expect(logged).to.include({ tool: 'list_plans', status: 403 });
      const uris = (await client.listResources()).resources.map((r) => r.uri);
      expect(uris).to.not.include('offer://catalog');
      expect(uris).to.include('offer://pricing');
      let refusedRead = false;
      await client.readResource({ uri: 'offer://catalog' }).catch(() => (refusedRead = true));
      expect(refusedRead).to.equal(true);
      // The app's access level sets the default switches: read turns every write tool off for OAuth connections.
      await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, {
        access_level: 'read',
        tool_overrides: { create_plan: true },
      });
      const now = routeTools((await client.listTools()).tools).map((t) => t.name);
      expect(now).to.have.length(34);
      expect(now).to.include('create_plan');
      // The secret key is not limited by switches.
      const keyRes = await mcpPost(app.id, TOOLS_LIST, app.api_key, ALL_TOOLSETS);
      expect(routeTools(keyRes.body.result.tools)).to.have.length(75);
    });

    it('a removed connection is cut off on its next call and its refresh token dies', async () => {
      const provider = new TestOAuthProvider(approveWith('write'));
      const client = await signIn(provider);
      const [conn] = (await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey)).body;
      expect((await del(`/apps/${app.id}/mcp/connections/${conn.id}`, testEnv().adminKey)).status).to.equal(200);
      let error: unknown;
      await client.listTools().catch((err) => (error = err));
      expect(error).to.be.instanceOf(Error);
      const res = await mcpPost(app.id, TOOLS_LIST, provider.saved!.access_token);
      expect(res.status).to.equal(401);
      const refresh = await postForm('/oauth/token', {
        grant_type: 'refresh_token',
        refresh_token: provider.saved!.refresh_token!,
        client_id: provider.info!.client_id,
      });
      expect(refresh.body.error).to.equal('invalid_grant');
    });

    it('turning the server off gives 403 and stops new sign-ins; on again restores the connection', async () => {
      const provider = new TestOAuthProvider(approveWith('read'));
      await signIn(provider);
      await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, { enabled: false });
      const res = await mcpPost(app.id, TOOLS_LIST, provider.saved!.access_token);
      expect(res.status).to.equal(403);
      const client = (await register()).body;
      const page = await call(
        'GET',
        authorizeUrl({
          response_type: 'code',
          client_id: client.client_id,
          redirect_uri: REDIRECT,
          code_challenge: pkce().challenge,
          code_challenge_method: 'S256',
          resource: mcpUrl(app.id).toString(),
        }),
      );
      expect(page.status).to.equal(302);
      const to = new URL(page.headers.get('location')!);
      expect(to.searchParams.get('error')).to.equal('access_denied');
      expect(to.searchParams.get('error_description')).to.match(/turned off/);
      await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, { enabled: true });
      const back = await mcpPost(app.id, TOOLS_LIST, provider.saved!.access_token);
      expect(back.status).to.equal(200);
    });

    it('an access token works only on its own app', async () => {
      const provider = new TestOAuthProvider(approveWith('read'));
      await signIn(provider);
      const other = await createTestApp();
      const res = await mcpPost(other.id, TOOLS_LIST, provider.saved!.access_token);
      expect(res.status).to.equal(401);
      expect((await get(`/apps/${app.id}/plans`, provider.saved!.access_token)).status).to.equal(401);
    });
  });

  describe('codes, requests and the token endpoint', () => {
    it('codes are single use and need the right PKCE verifier, client and redirect URI', async () => {
      const { client, code, verifier } = await rawCode(app);
      const wrong = await postForm('/oauth/token', {
        grant_type: 'authorization_code',
        code,
        code_verifier: pkce().verifier,
        client_id: client.client_id,
        redirect_uri: REDIRECT,
      });
      expect(wrong.status).to.equal(400);
      expect(wrong.body).to.deep.equal({
        error: 'invalid_grant',
        error_description: 'code_verifier does not match the code_challenge',
      });
      // A failed exchange used the code up, too.
      const again = await rawCode(app);
      const ok = await postForm('/oauth/token', {
        grant_type: 'authorization_code',
        code: again.code,
        code_verifier: again.verifier,
        client_id: again.client.client_id,
        redirect_uri: REDIRECT,
        resource: mcpUrl(app.id).toString(),
      });
      expect(ok.status).to.equal(200);
      expect(ok.body).to.include({ token_type: 'Bearer', expires_in: 3600, scope: 'mcp:write' });
      expect(ok.headers.get('cache-control')).to.equal('no-store');
      const replay = await postForm('/oauth/token', {
        grant_type: 'authorization_code',
        code: again.code,
        code_verifier: again.verifier,
        client_id: again.client.client_id,
      });
      expect(replay.body.error).to.equal('invalid_grant');
      expect(
        (
          await postForm('/oauth/token', {
            grant_type: 'authorization_code',
            code,
            code_verifier: verifier,
            client_id: client.client_id,
          })
        ).body.error,
      ).to.equal('invalid_grant');
      expect(
        (await postForm('/oauth/token', { grant_type: 'password', client_id: client.client_id })).body.error,
      ).to.equal('unsupported_grant_type');
      expect(
        (
          await postForm('/oauth/token', {
            grant_type: 'authorization_code',
            code: 'x',
            code_verifier: 'y',
            client_id: 'mcpc_nope',
          })
        ).status,
      ).to.equal(401);
      const missing = await postForm('/oauth/token', {});
      expect(missing.body).to.deep.equal({ error: 'invalid_request', error_description: 'grant_type: is required' });
    });

    it('an expired code is refused', async () => {
      const { client, code, verifier } = await rawCode(app);
      await sql(
        testEnv().deps.orm.em.fork(),
        `update oauth_codes set expires_at = now() - interval '1 second' where hash = $1`,
        [sha256(code)],
      );
      const res = await postForm('/oauth/token', {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        client_id: client.client_id,
      });
      expect(res.body.error).to.equal('invalid_grant');
    });

    it('a confidential client authenticates with HTTP Basic or client_secret_post', async () => {
      const reg = (await register({ token_endpoint_auth_method: 'client_secret_basic' })).body;
      const { verifier, challenge } = pkce();
      const url = new URL(
        testEnv().baseUrl +
          authorizeUrl({
            response_type: 'code',
            client_id: reg.client_id,
            redirect_uri: REDIRECT,
            code_challenge: challenge,
            code_challenge_method: 'S256',
            resource: mcpUrl(app.id).toString(),
          }),
      );
      const code = await approveWith('read')(url);
      const noSecret = await postForm('/oauth/token', {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        client_id: reg.client_id,
      });
      expect(noSecret.status).to.equal(401);
      expect(noSecret.body.error).to.equal('invalid_client');
      const code2 = await approveWith('read')(url);
      const basic = Buffer.from(`${reg.client_id}:${reg.client_secret}`).toString('base64');
      const ok = await postForm(
        '/oauth/token',
        { grant_type: 'authorization_code', code: code2, code_verifier: verifier },
        { Authorization: `Basic ${basic}` },
      );
      expect(ok.status).to.equal(200);
    });

    it(
      'admin routes: a pending request is readable, approved or denied once; app_id needed ' +
        'without a resource; app keys get 401',
      async () => {
        const client = (await register()).body;
        const start = (extra: Record<string, string> = {}) =>
          openAuthorization(
            new URL(
              testEnv().baseUrl +
                authorizeUrl({
                  response_type: 'code',
                  client_id: client.client_id,
                  redirect_uri: REDIRECT,
                  code_challenge: pkce().challenge,
                  code_challenge_method: 'S256',
                  state: 's1',
                  scope: 'mcp:full',
                  ...extra,
                }),
            ),
          );
        const id = await start();
        expect((await get(`/oauth/requests/${id}`, app.api_key)).status).to.equal(401);
        const shown = await get(`/oauth/requests/${id}`, testEnv().adminKey);
        expect(shown.body).to.include({ id, requested_level: 'full', scope: 'mcp:full', app: null, resource: null });
        expect(shown.body.client).to.include({ id: client.client_id, name: 'Raw client' });
        // Several scopes: the least one is preselected (the person may still choose more).
        const several = await start({ scope: 'mcp:full mcp:write' });
        expect((await get(`/oauth/requests/${several}`, testEnv().adminKey)).body.requested_level).to.equal('write');
        const noApp = await post(`/oauth/requests/${id}/approve`, testEnv().adminKey, {
          user: { id: 'u' },
          access_level: 'read',
        });
        expect(noApp.status).to.equal(400);
        expect(noApp.body.error).to.match(/^app_id/);
        expect(
          (
            await post(`/oauth/requests/${id}/approve`, testEnv().adminKey, {
              user: { id: 'u' },
              access_level: 'owner',
              app_id: app.id,
            })
          ).status,
        ).to.equal(400);
        const approved = await post(`/oauth/requests/${id}/approve`, testEnv().adminKey, {
          user: { id: 'u' },
          access_level: 'read',
          app_id: app.id,
        });
        expect(approved.status).to.equal(200);
        expect(new URL(approved.body.redirect_url).searchParams.get('state')).to.equal('s1');
        // RFC 9207: the issuer is named in the redirect, as the metadata announces.
        expect(new URL(approved.body.redirect_url).searchParams.get('iss')).to.equal(testEnv().baseUrl);
        expect(
          (await get('/.well-known/oauth-authorization-server')).body.authorization_response_iss_parameter_supported,
        ).to.equal(true);
        expect((await get(`/oauth/requests/${id}`, testEnv().adminKey)).status).to.equal(404);
        expect(
          (
            await post(`/oauth/requests/${id}/approve`, testEnv().adminKey, {
              user: { id: 'u' },
              access_level: 'read',
              app_id: app.id,
            })
          ).status,
        ).to.equal(404);

        const denied = await post(`/oauth/requests/${await start()}/deny`, testEnv().adminKey, {});
        expect(denied.status).to.equal(200);
        const url = new URL(denied.body.redirect_url);
        expect(url.searchParams.get('error')).to.equal('access_denied');
        expect(url.searchParams.get('code')).to.equal(null);
        expect(url.searchParams.get('iss')).to.equal(testEnv().baseUrl);

        const expired = await start();
        await sql(
          testEnv().deps.orm.em.fork(),
          `update oauth_requests set expires_at = now() - interval '1 second' where id = $1`,
          [expired],
        );
        expect((await get(`/oauth/requests/${expired}`, testEnv().adminKey)).status).to.equal(404);
      },
    );
  });
});
