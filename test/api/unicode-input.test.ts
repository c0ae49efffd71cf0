// Text that is not valid Unicode: a lone surrogate, which JSON can spell as an escape (`"\ud800"`) and JavaScript
// keeps as it is. PostgreSQL refuses it in jsonb (every event carries the record, so most writes were a 500) and the
// driver turns it into U+FFFD in text. Every JSON body is checked once, where it is parsed (src/http/router.ts,
// `illFormedPath` in src/http/validate.ts): a 400 naming the field, before credentials' routes run, nothing written.
import { expect } from 'chai';
import { seededApp, type TestApp } from '../helpers/factories.js';
import { call, get, patch, post } from '../helpers/http.js';
import { mcpPost } from '../helpers/mcp.js';
import { testEnv } from '../helpers/servers.js';

const LONE = '\ud800';
const message = (field: string) => `${field}: must be valid Unicode text (lone surrogate)`;

describe('Invalid Unicode text (lone surrogates) in request bodies', () => {
  let app: TestApp;
  let base: string;
  before(async () => {
    ({ app, base } = await seededApp({ name: 'Unicode', accounts: [{ id: 'ada', plan: 'free' }] }));
  });

  /** The JSON text the helpers send: JSON.stringify writes a lone surrogate as its escape. */
  it('JSON.stringify sends a lone surrogate as an escape (what these tests send)', () => {
    expect(JSON.stringify({ name: `a${LONE}` })).to.equal('{"name":"a\\ud800"}');
  });

  it('POST /plans: 400 naming the field, and no plan is created', async () => {
    const res = await post(`${base}/plans`, app.api_key, { id: 'bad', name: `Pro ${LONE}` });
    expect(res.status, res.text).to.equal(400);
    expect(res.body).to.deep.equal({ error: message('name') });
    expect((await get(`${base}/plans/bad`, app.api_key)).status).to.equal(404);
  });

  it('POST /namespaces: an account id with a lone surrogate (ids are kept as sent) is a 400, not a 500', async () => {
    const before = (await get(`${base}/namespaces/count`, app.api_key)).body;
    for (const id of [`acme${LONE}`, '\udfff', `x\udc00\ud800`]) {
      const res = await post(`${base}/namespaces`, app.api_key, { id, plan: 'free' });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error).to.equal(message('id'));
    }
    const named = await post(`${base}/namespaces`, app.api_key, { id: 'bob', name: `Bob ${LONE}`, plan: 'free' });
    expect(named.body.error).to.equal(message('name'));
    expect((await get(`${base}/namespaces/count`, app.api_key)).body).to.deep.equal(before);
    expect((await get(`${base}/namespaces/bob`, app.api_key)).status).to.equal(404);
  });

  it('PATCH /apps/:appId: 400 for the name, and the name is unchanged', async () => {
    const res = await patch(base, app.api_key, { name: `Renamed ${LONE}` });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.error).to.equal(message('name'));
    expect((await get(base, app.api_key)).body.name).to.equal('Unicode');
  });

  it('webhook endpoint description: 400 on create and on PATCH, nothing stored', async () => {
    const created = await post(`${base}/webhooks`, app.api_key, {
      url: 'http://127.0.0.1:9/hook',
      events: ['*'],
      description: `Orders ${LONE}`,
    });
    expect(created.status, created.text).to.equal(400);
    expect(created.body.error).to.equal(message('description'));
    expect((await get(`${base}/webhooks`, app.api_key)).body).to.deep.equal([]);
    const ok = await post(`${base}/webhooks`, app.api_key, { url: 'http://127.0.0.1:9/hook', events: ['*'] });
    expect(ok.status, ok.text).to.equal(201);
    const patched = await patch(`${base}/webhooks/${ok.body.id}`, app.api_key, { description: `\udc00 orders` });
    expect(patched.status, patched.text).to.equal(400);
    expect(patched.body.error).to.equal(message('description'));
    expect((await get(`${base}/webhooks/${ok.body.id}`, app.api_key)).body.description).to.equal(null);
  });

  it('nested fields are named by their path (plan meta, pricing card, a meta merge, an offer bump); an incentive', async () => {
    const meta = await post(`${base}/plans`, app.api_key, {
      id: 'meta1',
      name: 'Meta',
      meta: { info: { labels: ['fine', `bad ${LONE}`] } },
    });
    expect(meta.status, meta.text).to.equal(400);
    expect(meta.body.error).to.equal(message('meta.info.labels.1'));
    const card = await post(`${base}/plans`, app.api_key, { id: 'card1', name: 'Card', pricingCard: { title: LONE } });
    expect(card.body.error).to.equal(message('pricingCard.title'));
    const merged = await patch(`${base}/plans/pro/meta`, app.api_key, { note: LONE });
    expect(merged.status, merged.text).to.equal(400);
    expect(merged.body.error).to.equal(message('note'));
    const offer = await post(`${base}/offers`, app.api_key, {
      id: 'spring',
      name: 'Spring',
      plans: [{ plan: 'pro', prices: [{ interval: 'month', currency: 'USD', amount: 19 }] }],
      bumps: [{ id: 'priority', name: `Priority ${LONE}`, addon: 'priority', price: 9 }],
    });
    expect(offer.status, offer.text).to.equal(400);
    expect(offer.body.error).to.equal(message('bumps.0.name'));
    const incentive = await post(`${base}/incentives`, app.api_key, {
      id: 'promo',
      name: 'Promo',
      description: `half ${LONE} off`,
      entitlements: [{ id: 'api_calls', max: 500 }],
    });
    expect(incentive.body.error).to.equal(message('description'));
    for (const path of ['/plans/meta1', '/plans/card1', '/offers/spring', '/incentives/promo'])
      expect((await get(`${base}${path}`, app.api_key)).status, path).to.equal(404);
    expect((await get(`${base}/plans/pro`, app.api_key)).body.meta).to.not.have.property('note');
  });

  it('a key that is (or holds) a lone surrogate is a 400 naming it with the surrogate escaped', async () => {
    const top = await post(`${base}/plans`, app.api_key, { id: 'k1', name: 'K', meta: { [LONE]: 1 } });
    expect(top.status, top.text).to.equal(400);
    expect(top.body.error).to.equal(message('meta.\\ud800'));
    const inner = await patch(`${base}/plans/pro/meta`, app.api_key, { colors: { [`dark${'\udc01'}`]: 'x' } });
    expect(inner.status, inner.text).to.equal(400);
    expect(inner.body.error).to.equal(message('colors.dark\\udc01'));
    // A key of the body itself: named as the field it would be, not as an unknown field.
    const body = await post(`${base}/plans`, app.api_key, { id: 'k2', name: 'K', [LONE]: true });
    expect(body.body.error).to.equal(message('\\ud800'));
    expect((await get(`${base}/plans/k1`, app.api_key)).status).to.equal(404);
    expect((await get(`${base}/plans/k2`, app.api_key)).status).to.equal(404);
  });

  it('surrogate pairs (an escaped emoji, as Python sends it) are valid text and are kept', async () => {
    const raw = '{"id":"emoji","name":"Rocket \\ud83d\\ude80","meta":{"\\ud83c\\udf89":"\\u00e9"}}';
    const res = await call('POST', `${base}/plans`, { token: app.api_key, raw });
    expect(res.status, res.text).to.equal(201);
    expect(res.body).to.deep.include({ name: 'Rocket 🚀', meta: { '🎉': 'é' } });
    // An escaped backslash followed by "ud800" is six ordinary characters.
    const text = await call('POST', `${base}/plans`, { token: app.api_key, raw: '{"id":"esc","name":"\\\\ud800"}' });
    expect(text.status, text.text).to.equal(201);
    expect(text.body.name).to.equal('\\ud800');
  });

  it('a body parsed before credentials are checked is refused on open routes too (OAuth registration)', async () => {
    const res = await post('/oauth/register', null, {
      redirect_uris: ['http://127.0.0.1:8123/callback'],
      client_name: `Claude ${LONE}`,
    });
    expect(res.status, res.text).to.equal(400);
    expect(res.body).to.deep.equal({ error: 'invalid_request', error_description: message('client_name') });
  });

  it('MCP: a tools/call of create_plan with a lone surrogate is an HTTP 400 naming the argument; nothing is created', async () => {
    const res = await mcpPost(
      app.id,
      {
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'create_plan', arguments: { id: 'via_mcp', name: `Via MCP ${LONE}` } },
      },
      app.api_key,
    );
    expect(res.status, res.text).to.equal(400);
    // A JSON-RPC Invalid Request under the request's id, as the MCP endpoint answers every refusal but its 401.
    expect(res.body).to.deep.equal({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32600, message: message('params.arguments.name') },
    });
    expect((await get(`${base}/plans/via_mcp`, app.api_key)).status).to.equal(404);
    // Refused before the MCP server saw it: no tool call was made or logged.
    const calls = (await get(`${base}/mcp/calls`, testEnv().adminKey)).body.data;
    expect(calls.filter((c: { tool: string }) => c.tool === 'create_plan')).to.deep.equal([]);
  });

  it("the console's own JSON routes run the same check", async () => {
    // The password is too short as well: the surrogate is named first, and nothing is set up either way.
    const setup = await call('POST', '/console/api/setup', {
      token: testEnv().adminKey,
      body: { name: `Olivia ${LONE}`, email: 'o@example.com', password: 'short' },
    });
    expect(setup.status, setup.text).to.equal(400);
    expect(setup.body).to.deep.equal({ error: message('name') });
  });

  it('a malformed escape in a console page path answers the page (it was a 500)', async () => {
    const page = await get('/console/%ED%A0%80');
    expect(page.status, page.text).to.be.oneOf([200, 503]); // the console's page, or "not built"
  });

  it('query strings cannot carry one: fetch sends a lone surrogate as U+FFFD, a real character (a 200)', async () => {
    for (const q of [encodeURIComponent('\ufffd'), `x${LONE}`]) {
      const res = await get(`${base}/namespaces?q=${q}`, app.api_key);
      expect(res.status, `${q}: ${res.text}`).to.equal(200);
      expect(res.body.data).to.deep.equal([]);
    }
  });
});

describe('Bytes that are not UTF-8 (body, path, query, form)', () => {
  let app: TestApp;
  let base: string;
  before(async () => {
    ({ app, base } = await seededApp({ name: 'Bytes', accounts: [{ id: 'ada', plan: 'free' }] }));
  });

  /** A JSON body `{"id":"<prefix><bytes>","plan":"free"}` with the bytes as they are. */
  const account = (bytes: number[]) =>
    Buffer.concat([Buffer.from('{"id":"acme'), Buffer.from(bytes), Buffer.from('","plan":"free"}')]);

  it('a body: 400 naming the offset, before anything is stored (two byte strings no longer make one id)', async () => {
    const before = (await get(`${base}/namespaces/count`, app.api_key)).body;
    // 0xFF and 0xFE were both stored as U+FFFD, so the second was a 409 on the first's id.
    for (const bytes of [[0xff], [0xfe], [0xc3], [0xed, 0xa0, 0x80], [0xe0, 0x80, 0x80], [0xf4, 0x90, 0x80, 0x80]]) {
      const res = await call('POST', `${base}/namespaces`, { token: app.api_key, raw: account(bytes) });
      expect(res.status, `${bytes}: ${res.text}`).to.equal(400);
      expect(res.body.error).to.equal('body: must be UTF-8 text (the byte at offset 11 is not valid UTF-8)');
    }
    expect((await get(`${base}/namespaces/count`, app.api_key)).body).to.deep.equal(before);
    // U+FFFD itself, sent as its UTF-8 bytes, is text like any other and is kept.
    const real = await call('POST', `${base}/namespaces`, { token: app.api_key, raw: account([0xef, 0xbf, 0xbd]) });
    expect(real.status, real.text).to.equal(201);
    expect(real.body.id).to.equal('acme\ufffd');
    // So is a four-byte character.
    const emoji = await call('POST', `${base}/namespaces`, {
      token: app.api_key,
      raw: account([0xf0, 0x9f, 0x9a, 0x80]),
    });
    expect(emoji.body.id).to.equal('acme🚀');
  });

  it('a path parameter or a query field whose escapes are not UTF-8: 400 naming it', async () => {
    for (const escape of ['%FF', '%ED%A0%80', '%C3']) {
      const path = await get(`${base}/namespaces/acme${escape}`, app.api_key);
      expect(path.status, `${escape}: ${path.text}`).to.equal(400);
      expect(path.body.error).to.equal('accountId: must be percent-encoded UTF-8 text');
      const query = await get(`${base}/namespaces?q=acme${escape}`, app.api_key);
      expect(query.status, `${escape}: ${query.text}`).to.equal(400);
      expect(query.body.error).to.equal('q: must be percent-encoded UTF-8 text');
    }
    const name = await get(`${base}/namespaces?%FF=1`, app.api_key);
    expect(name.status).to.equal(400);
    expect(name.body.error).to.equal("%FF: the query field's name is not percent-encoded UTF-8");
    // `%25FF` is the three characters `%FF`, and names that account (none here).
    expect((await get(`${base}/namespaces/%25FF`, app.api_key)).status).to.equal(404);
    expect((await get(`${base}/namespaces?q=%C3%A9`, app.api_key)).status).to.equal(200);
  });

  it('a form (OAuth): an escape or bytes that are not UTF-8, a field twice, `__proto__`: invalid_request naming it', async () => {
    const form = (raw: string | Uint8Array) =>
      call('POST', '/oauth/revoke', { raw, headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    const cases: [string | Uint8Array, string][] = [
      ['token=abc%FF', 'token: must be percent-encoded UTF-8 text'],
      [
        Buffer.concat([Buffer.from('token=abc'), Buffer.from([0xff])]),
        'body: must be UTF-8 text (the byte at offset 9 is not valid UTF-8)',
      ],
      ['token=a&token=b', 'token: given more than once'],
      ['token=a&__proto__=x', '__proto__: unknown field'],
    ];
    for (const [raw, description] of cases) {
      const res = await form(raw);
      expect(res.status, res.text).to.equal(400);
      expect(res.body).to.deep.equal({ error: 'invalid_request', error_description: description });
    }
  });
});
