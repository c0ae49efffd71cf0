// Issue 11: no input reaches a 500, and the document states what the service enforces. Each case here was a
// 500 (or a silent success) before; each is a clear 4xx `{ error }` now, with nothing written.
import http from 'node:http';
import { expect } from 'chai';
import { createAccount, createTestApp, seededApp, type TestApp } from '../helpers/factories.js';
import { call, get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const nestedObject = (depth: number): unknown => (depth === 0 ? 1 : { a: nestedObject(depth - 1) });

describe('Deeply nested JSON bodies', () => {
  let app: TestApp;
  before(async () => {
    app = await createTestApp();
  });

  it('is a 400 naming the depth on authenticated routes, and nothing is written', async () => {
    const raw = `{"id":"deep","name":"Deep","meta":{"x":${nested(100_000)}}}`;
    const res = await call('POST', `/apps/${app.id}/plans`, { token: app.api_key, raw });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.error).to.equal('body: JSON nested deeper than 64 levels');
    expect((await get(`/apps/${app.id}/plans/deep`, app.api_key)).status).to.equal(404);
  });

  it('is a 400 before anything else on open routes (client registration, provider notifications)', async () => {
    const register = await call('POST', '/oauth/register', { raw: `{"redirect_uris":${nested(100_000)}}` });
    expect(register.status, register.text).to.equal(400);
    expect(register.body).to.deep.equal({
      error: 'invalid_request',
      error_description: 'body: JSON nested deeper than 64 levels',
    });
    const notify = await call('POST', `/payments/webhooks/${app.id}`, { raw: nested(100_000) });
    expect(notify.status, notify.text).to.equal(400);
    expect(notify.body.error).to.equal('body: JSON nested deeper than 64 levels');
  });

  it('counts brackets inside strings as text, and allows 64 levels', async () => {
    const raw = JSON.stringify({ name: '['.repeat(150) + '\\"[' });
    const named = await call('PATCH', `/apps/${app.id}`, { token: app.api_key, raw });
    expect(named.status, named.text).to.equal(200);
    const thread = (depth: number) =>
      call('PUT', `/apps/${app.id}/agent/threads/t1`, {
        token: testEnv().adminKey,
        raw: `{"user_id":"u","messages":${nested(depth - 1)}}`,
      });
    // 64 levels pass the body check, and the stored-messages limit (16 levels) answers; 65 do not.
    expect((await thread(64)).body.error).to.equal('messages: must not nest arrays and objects deeper than 16 levels');
    expect((await thread(65)).body.error).to.equal('body: JSON nested deeper than 64 levels');
  });
});

describe('NUL characters in path parameters', () => {
  let app: TestApp;
  before(async () => {
    app = await createTestApp();
  });

  for (const [name, path, token] of [
    ['app id, open route', '/.well-known/oauth-protected-resource/apps/%00/mcp', null],
    ['app id, checkout return page', '/apps/%00/checkouts/return', null],
    ['app id, secret key', '/apps/%00/plans', 'key'],
    ['plan id', '/apps/:app/plans/%00', 'key'],
    ['account id', '/apps/:app/namespaces/a%00b/plan', 'key'],
    ['offer id, public view', '/apps/:app/offers/%00/public', 'pub'],
  ] as const) {
    it(`is a 400 naming the parameter (${name})`, async () => {
      const t = token === 'key' ? app.api_key : token === 'pub' ? app.public_key : null;
      const res = await call('GET', path.replace(':app', app.id), { token: t });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error).to.match(/^(appId|planId|accountId|offerId): must not contain a NUL character$/);
    });
  }

  it('is a 400 on writes too, and nothing is written', async () => {
    const res = await call('PUT', `/apps/${app.id}/agent/threads/t%00`, {
      token: testEnv().adminKey,
      body: { user_id: 'u', messages: [] },
    });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.error).to.equal('threadId: must not contain a NUL character');
    expect((await get(`/apps/${app.id}/agent/threads`, testEnv().adminKey)).body.data).to.deep.equal([]);
  });
});

describe('Queries built from lists that can be empty', () => {
  it('GET /offers/:offerId/public of an app without any pricing card answers the regular view', async () => {
    const app = await createTestApp();
    await post(`/apps/${app.id}/plans`, app.api_key, { id: 'internal', name: 'Internal' });
    const res = await get(`/apps/${app.id}/offers/anything/public`, app.public_key);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.source).to.equal('regular');
    expect(res.body.plans).to.deep.equal([]);
  });

  it('an org without apps lists none', async () => {
    const id = `org_empty_${Date.now()}`;
    expect((await post('/orgs', testEnv().adminKey, { id, app_ids: [] })).status).to.equal(201);
    const res = await get(`/orgs/${id}/apps`, testEnv().adminKey);
    expect(res.status, res.text).to.equal(200);
  });
});

describe('Stored free-form JSON limits', () => {
  let app: TestApp;
  before(async () => {
    ({ app } = await seededApp());
  });

  it('plan meta: 1,000 levels (accepted before, then re-sent in webhooks) is a 400, and nothing is written', async () => {
    const res = await post(`/apps/${app.id}/plans`, app.api_key, { id: 'm1', name: 'M', meta: nestedObject(40) });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.error).to.equal('meta: must not nest arrays and objects deeper than 10 levels');
    expect((await get(`/apps/${app.id}/plans/m1`, app.api_key)).status).to.equal(404);
    const raw = `{"id":"m2","name":"M","meta":{"a":${nested(1000)}}}`;
    expect((await call('POST', `/apps/${app.id}/plans`, { token: app.api_key, raw })).status).to.equal(400);
  });

  it('plan meta: 10 levels are kept; over 32 KB, directly or after a merge, is a 400', async () => {
    const ok = await post(`/apps/${app.id}/plans`, app.api_key, { id: 'm3', name: 'M', meta: nestedObject(9) });
    expect(ok.status, ok.text).to.equal(201);
    const big = await call('PATCH', `/apps/${app.id}/plans/m3`, {
      token: app.api_key,
      body: { meta: { text: 'x'.repeat(40_000) } },
    });
    expect(big.status).to.equal(400);
    expect(big.body.error).to.equal('meta: must be at most 32768 bytes as JSON');
    const half = { a: 'x'.repeat(20_000) };
    expect((await call('PATCH', `/apps/${app.id}/plans/m3/meta`, { token: app.api_key, body: half })).status).to.equal(
      200,
    );
    const merged = await call('PATCH', `/apps/${app.id}/plans/m3/meta`, {
      token: app.api_key,
      body: { b: 'y'.repeat(20_000) },
    });
    expect(merged.status).to.equal(400);
    expect(merged.body.error).to.equal('meta: must be at most 32768 bytes as JSON (after merging)');
    const plan = (await get(`/apps/${app.id}/plans/m3`, app.api_key)).body;
    expect(plan.meta).to.have.property('a');
    expect(plan.meta).to.not.have.property('b');
  });

  it('pricing card extra keys and agent thread messages are bounded too', async () => {
    const card = await post(`/apps/${app.id}/plans`, app.api_key, {
      id: 'c1',
      name: 'C',
      pricingCard: { monthlyPrice: 1, features: nestedObject(12) },
    });
    expect(card.status).to.equal(400);
    expect(card.body.error).to.equal('pricingCard: must not nest arrays and objects deeper than 10 levels');
    const thread = await call('PUT', `/apps/${app.id}/agent/threads/deep`, {
      token: testEnv().adminKey,
      body: { user_id: 'u', messages: [nestedObject(20)] },
    });
    expect(thread.status).to.equal(400);
    expect(thread.body.error).to.equal('messages: must not nest arrays and objects deeper than 16 levels');
  });
});

describe('Unknown body fields', () => {
  let app: TestApp;
  before(async () => {
    app = await createTestApp();
  });

  it('a typo is a 400 naming the field (as Stripe answers), and nothing is written', async () => {
    const res = await post(`/apps/${app.id}/plans`, app.api_key, { id: 'free', name: 'Free', is_free: true });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.error).to.equal('body: unknown field is_free');
    expect((await get(`/apps/${app.id}/plans/free`, app.api_key)).status).to.equal(404);
  });

  it('nested objects are strict too, and several unknown fields are all named', async () => {
    const res = await post(`/apps/${app.id}/entitlements`, app.api_key, {
      id: 'calls',
      type: 'usage',
      name: 'Calls',
      overage: { mode: 'block', offer: 'x' },
    });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('overage: unknown field offer');
    const two = await call('PATCH', `/apps/${app.id}`, { token: app.api_key, body: { nam: 'x', checkout: 'y' } });
    expect(two.body.error).to.equal('body: unknown fields nam, checkout');
  });

  it('maps and pricing cards keep their free-form keys; OAuth registration ignores unknown metadata (RFC 7591)', async () => {
    const plan = await post(`/apps/${app.id}/plans`, app.api_key, {
      id: 'pro',
      name: 'Pro',
      meta: { anything: 1 },
      pricingCard: { monthlyPrice: 9, features: ['a'] },
    });
    expect(plan.status, plan.text).to.equal(201);
    expect(plan.body.pricingCard.features).to.deep.equal(['a']);
    const reg = await post('/oauth/register', null, {
      redirect_uris: ['https://client.example/cb'],
      software_statement_extra: 'ignored',
    });
    expect(reg.status, reg.text).to.equal(201);
  });
});

/** fetch refuses TRACE, so it goes through node:http. */
function trace(path: string, token?: string): Promise<{ status: number; allow?: string; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${testEnv().baseUrl}${path}`, {
      method: 'TRACE',
      headers: token ? { Authorization: `Bearer ${token}` } : {},
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, allow: res.headers.allow, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('Methods a path does not have', () => {
  it('answer 405 with Allow, TRACE included; unknown paths stay 404', async () => {
    const app = await createTestApp();
    const traced = await trace(`/apps/${app.id}/plans`, app.api_key);
    expect(traced.status).to.equal(405);
    expect(traced.allow).to.equal('HEAD, GET, POST');
    expect(traced.body.error).to.match(
      /^Method TRACE is not allowed on \/apps\/app_\w+\/plans \(allowed: HEAD, GET, POST\)$/,
    );
    const put = await call('PUT', '/health');
    expect(put.status).to.equal(405);
    expect(put.headers.get('allow')).to.equal('HEAD, GET');
    const options = await call('OPTIONS', '/health');
    expect(options.status).to.equal(204);
    expect(options.headers.get('allow')).to.equal('HEAD, GET');
    const unknown = await trace('/nowhere');
    expect(unknown.status).to.equal(404);
    expect(unknown.body.error).to.equal('No route for TRACE /nowhere');
  });
});

describe('Offer ids in paths', () => {
  it('are normalized like plan and flow ids (GET /offers/Spring-Sale finds springsale); generated ids are kept', async () => {
    const { app } = await seededApp();
    const made = await post(`/apps/${app.id}/offers`, app.api_key, {
      id: 'Spring-Sale',
      name: 'Spring sale',
      plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }],
    });
    expect(made.status, made.text).to.equal(201);
    expect(made.body.id).to.equal('springsale');
    for (const id of ['Spring-Sale', 'SPRINGSALE', 'springsale'])
      expect((await get(`/apps/${app.id}/offers/${id}`, app.api_key)).status, id).to.equal(200);
    await createAccount(app, { id: 'buyer', plan: 'free' });
    // A targeted offer gets a generated id.
    const generated = await post(`/apps/${app.id}/offers`, app.api_key, {
      account_id: 'buyer',
      name: 'No id',
      plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }],
    });
    expect(generated.body.id).to.match(/^ofr_[A-Za-z0-9]{20}$/);
    expect((await get(`/apps/${app.id}/offers/${generated.body.id}`, app.api_key)).status).to.equal(200);
  });
});

describe('GET /event-types subscription samples', () => {
  it('carry the subscription as real subscription events do', async () => {
    const types = (await get('/event-types')).body as { type: string; sample: any }[];
    // Except subscription.untracked: it is about a provider subscription no account tracks (its object is that
    // record, with the account's live subscription id beside it).
    const untracked = types.find((t) => t.type === 'subscription.untracked')!.sample.object;
    expect(untracked).to.include.keys('id', 'account_id', 'checkout_id', 'action', 'live_subscription_id');
    for (const t of types.filter((x) => x.type.startsWith('subscription.') && x.type !== 'subscription.untracked')) {
      expect(t.sample.object.subscription, t.type).to.be.an('object');
      expect(t.sample.object.subscription).to.include.keys('id', 'status', 'plan', 'price', 'renews_at', 'pause');
    }
    const paused = types.find((t) => t.type === 'subscription.paused')!.sample.object.subscription;
    expect(paused.status).to.equal('paused');
    expect(paused.pause).to.include.keys('resume_at', 'restore_plan');
  });
});

describe('The document states the rules', () => {
  it('strict bodies, NUL-free strings, caller id patterns, optional empty bodies and the generic statuses', async () => {
    const doc = (await get('/openapi.json')).body;
    const createPlan = doc.paths['/apps/{appId}/plans'].post;
    const body = createPlan.requestBody.content['application/json'].schema;
    expect(body.additionalProperties).to.equal(false);
    expect(body.properties.privateMetaKeys.items.pattern).to.equal('^[^\\u0000]*$');
    // `name` is trimmed and must not be empty: blanks are refused, and the pattern says so.
    expect(body.properties.name.pattern).to.equal('^[^\\u0000]*\\S[^\\u0000]*$');
    expect(body.properties.id.pattern).to.equal('^[^\\u0000]*[A-Za-z0-9_ ][^\\u0000]*$');
    expect(body.properties.meta.propertyNames.not).to.deep.equal({ const: '__proto__' });
    expect(createPlan.requestBody.required).to.equal(true);
    expect(Object.keys(createPlan.responses)).to.include.members(['400', '404', '413', '415', '431']);
    // `POST /cancel-flows` with `{}` (or no body) creates the template flow: its body is optional.
    expect(doc.paths['/apps/{appId}/cancel-flows'].post.requestBody.required).to.equal(false);
    const pathParam = doc.paths['/apps/{appId}/plans/{planId}'].get.parameters.find(
      (p: { name: string }) => p.name === 'planId',
    );
    expect(pathParam.schema.maxLength).to.equal(200);
  });
});
