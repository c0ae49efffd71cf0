// Issue 39, item 4: the published contract is exact. Each rule the server enforces is stated in /openapi.json (so a
// client or a generator following the document sends only accepted input), and each answer agrees with the
// document: an empty cursor is the first page, OPTIONS and 405 list the methods the document gives a path, the MCP
// endpoint documents only what it serves, the consent forms refuse unknown fields and answer problems as pages, a
// record a body names that does not exist is a 404 and a conflict with the records' state a 409.
import { expect } from 'chai';
import { createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { call, get, patch, post } from '../helpers/http.js';
import { SchemaCases, type Breach, type Schema } from '../helpers/schema-cases.js';
import { testEnv } from '../helpers/servers.js';

interface Doc {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}
interface Operation {
  parameters?: { name: string; in: string; required?: boolean; schema: Record<string, any>; $ref?: string }[];
  'x-credentials': string[];
  requestBody?: { content: Record<string, { schema: Record<string, any> }> };
  responses: Record<string, { content?: Record<string, unknown> }>;
}

describe('the contract: the document states what the server enforces', () => {
  let app: TestApp;
  let base: string;
  let doc: Doc;
  const body = (path: string, method: string) =>
    doc.paths[path][method].requestBody!.content['application/json'].schema as Record<string, any>;

  before(async () => {
    ({ app, base } = await seededApp({ name: 'Contract', accounts: [{ id: 'ada', plan: 'free' }] }));
    doc = (await get('/openapi.json')).body as Doc;
  });

  it('an empty cursor is the first page, on every cursor list', async () => {
    const hook = await post(`${base}/webhooks`, app.api_key, { url: 'http://127.0.0.1:9/hook', events: ['*'] });
    expect(hook.status, hook.text).to.equal(201);
    for (const list of [
      '/events',
      '/checkouts',
      '/subscriptions',
      '/cancel-sessions',
      `/webhooks/${hook.body.id}/deliveries`,
    ]) {
      const empty = await get(`${base}${list}?cursor=`, app.api_key);
      expect(empty.status, `${list}: ${empty.text}`).to.equal(200);
      const first = await get(`${base}${list}`, app.api_key);
      expect(empty.body, list).to.deep.equal(first.body);
    }
    const calls = await get(`${base}/mcp/calls?cursor=`, testEnv().adminKey);
    expect(calls.status, calls.text).to.equal(200);
    // A made-up one is still refused.
    expect((await get(`${base}/events?cursor=nope`, app.api_key)).status).to.equal(400);
    const described = doc.paths['/apps/{appId}/events'].get.parameters!.find((p) => p.name === 'cursor')!;
    expect(String(described.schema.description)).to.include('Omitted or empty: the first page');
  });

  it('OPTIONS and 405 list exactly the methods the document gives a path (a concrete segment beats a parameter)', async () => {
    for (const [path, documented] of [
      ['/namespaces/count', '/apps/{appId}/namespaces/count'],
      ['/namespaces/with-incentive', '/apps/{appId}/namespaces/with-incentive'],
      ['/plans/pricing', '/apps/{appId}/plans/pricing'],
      ['/cancel-flows/capabilities', '/apps/{appId}/cancel-flows/capabilities'],
      ['/offers/draft-preview', '/apps/{appId}/offers/draft-preview'],
      ['/namespaces/ada', '/apps/{appId}/namespaces/{accountId}'],
    ]) {
      const methods = Object.keys(doc.paths[documented]).map((m) => m.toUpperCase());
      const options = await call('OPTIONS', `${base}${path}`, { token: app.api_key });
      expect(options.status, path).to.equal(204);
      const allow = options.headers.get('allow')!.split(', ');
      expect(
        allow.filter((m) => m !== 'HEAD'),
        path,
      ).to.have.members(methods);
      const missing = ['GET', 'POST', 'PATCH', 'DELETE', 'PUT'].find((m) => !methods.includes(m))!;
      const refused = await call(missing, `${base}${path}`, {
        token: app.api_key,
        ...(missing === 'GET' ? {} : { body: {} }),
      });
      expect(refused.status, `${missing} ${path}`).to.equal(405);
      expect(refused.headers.get('allow')).to.equal(options.headers.get('allow'));
    }
    // DELETE /namespaces/count deleted the account named `count`; it is a 405 now, and such an account is reached
    // with a letter percent-encoded.
    await createAccount(app, { id: 'count', plan: 'free' });
    expect((await call('DELETE', `${base}/namespaces/count`, { token: app.api_key })).status).to.equal(405);
    expect((await get(`${base}/namespaces/%63ount`, app.api_key)).body.id).to.equal('count');
    expect((await call('DELETE', `${base}/namespaces/%63ount`, { token: app.api_key })).status).to.equal(200);
  });

  it('the MCP endpoint documents only POST; GET and DELETE are the spec 405 with Allow: POST', async () => {
    expect(Object.keys(doc.paths['/apps/{appId}/mcp'])).to.deep.equal(['post']);
    for (const method of ['GET', 'DELETE']) {
      const res = await call(method, `${base}/mcp`, { token: app.api_key });
      expect(res.status).to.equal(405);
      expect(res.headers.get('allow')).to.equal('POST');
      expect(res.body.error).to.match(/^Method not allowed: the MCP endpoint is stateless/);
    }
  });

  it('rules the server enforces are in the schemas: oneOf, uniqueItems, contains, dependentSchemas, maxItems', () => {
    expect(body('/apps/{appId}/offers', 'post').oneOf).to.deep.equal([
      { required: ['id'] },
      { required: ['account_id'] },
    ]);
    const checkout = body('/apps/{appId}/offers/{offerId}/checkout', 'post');
    expect(checkout.properties.bumps).to.include({ uniqueItems: true });
    expect(body('/orgs', 'post').properties.app_ids).to.include({ uniqueItems: true });
    const events = body('/apps/{appId}/webhooks', 'post').properties.events;
    expect(events).to.include({ uniqueItems: true });
    expect(events.maxItems).to.be.a('number');
    expect(body('/apps/{appId}/cancel-flows', 'post').properties.steps.contains).to.deep.equal({
      properties: { type: { const: 'confirm' } },
      required: ['type'],
    });
    expect(body('/apps/{appId}/namespaces', 'post').dependentSchemas).to.have.property('incentive_expires_at');
    // Fields an OAuth endpoint ignores (RFC 6749, 7591) still meet the rules every input meets.
    expect(body('/oauth/token', 'post').additionalProperties).to.deep.equal({ $ref: '#/components/schemas/JsonValue' });
    // The consent forms are strict and declare their pages.
    const signOut = doc.paths['/oauth/consent/sign-out'].post;
    expect(signOut.requestBody!.content['application/x-www-form-urlencoded'].schema.additionalProperties).to.equal(
      false,
    );
    expect(signOut.responses['400'].content).to.have.property('text/html');
  });

  it('a record a body names that does not exist is a 404; a conflict with the records is a 409', async () => {
    const org = await post('/orgs', testEnv().adminKey, { id: `o_${app.id}`, app_ids: ['app_nope'] });
    expect(org.status).to.equal(404);
    expect(org.body.error).to.equal('app_ids: app app_nope does not exist');
    const twice = await post('/orgs', testEnv().adminKey, { id: `o_${app.id}`, app_ids: [app.id, app.id] });
    expect(twice.status).to.equal(400);
    // An end for the incentive of an account that has none: the account's state (409); removed in the body: 400.
    const noIncentive = await patch(`${base}/namespaces/ada`, app.api_key, {
      incentive_expires_at: '2030-01-01T00:00:00Z',
    });
    expect(noIncentive.status, noIncentive.text).to.equal(409);
    expect(noIncentive.body.error).to.match(/^incentive_expires_at: the account has no incentive/);
    const removed = await patch(`${base}/namespaces/ada`, app.api_key, {
      incentive: null,
      incentive_expires_at: '2030-01-01T00:00:00Z',
    });
    expect(removed.status).to.equal(400);
    expect(removed.body.error).to.equal('incentive_expires_at: needs an incentive');
  });
});

describe('webhook endpoint events: bounded, each type once', () => {
  let app: TestApp;
  let base: string;
  before(async () => {
    ({ app, base } = await seededApp({ name: 'Hooks' }));
  });
  const create = (events: unknown) => post(`${base}/webhooks`, app.api_key, { url: 'http://127.0.0.1:9/h', events });

  it('a repeated type is a 400 naming it; 10,000 entries are a 400 naming the limit; nothing is stored', async () => {
    const dup = await create(['account.created', 'usage.limit_reached', 'account.created']);
    expect(dup.status).to.equal(400);
    expect(dup.body.error).to.equal('events.2: repeats "account.created" (list each type once)');
    const many = await create(Array.from({ length: 10_000 }, () => 'account.created'));
    expect(many.status).to.equal(400);
    expect(many.body.error).to.match(/^events: must list at most \d+ event types \(each once\)$/);
    expect((await get(`${base}/webhooks`, app.api_key)).body).to.deep.equal([]);
    const ok = await create(['account.created', 'usage.limit_reached']);
    expect(ok.status, ok.text).to.equal(201);
    const patched = await patch(`${base}/webhooks/${ok.body.id}`, app.api_key, { events: ['*', '*'] });
    expect(patched.status).to.equal(400);
    expect((await get(`${base}/webhooks/${ok.body.id}`, app.api_key)).body.events).to.deep.equal([
      'account.created',
      'usage.limit_reached',
    ]);
  });
});

describe('the consent forms: unknown fields refused, problems answered as pages', () => {
  const form = (path: string, raw: string) =>
    call('POST', path, {
      raw,
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: testEnv().baseUrl },
    });

  it('a `__proto__` or unknown field, a repeated field, a NUL: a 400 page, and no cookie is cleared', async () => {
    for (const raw of ['request=x&__proto__=1', 'request=x&bogus=1', 'request=x&request=y', 'request=x%00']) {
      const res = await form('/oauth/consent/sign-out', raw);
      expect(res.status, raw).to.equal(400);
      expect(res.headers.get('content-type'), raw).to.match(/^text\/html/);
      expect(res.headers.get('set-cookie'), raw).to.equal(null);
    }
    const json = await call('POST', '/oauth/consent', { raw: '{nope' });
    expect(json.status).to.equal(400);
    expect(json.headers.get('content-type')).to.match(/^text\/html/);
    const page = await get('/oauth/consent?request=x%00');
    expect(page.status).to.equal(400);
    expect(page.headers.get('content-type')).to.match(/^text\/html/);
    // The form the page itself posts still works.
    const ok = await form('/oauth/consent/sign-out', 'request=x');
    expect(ok.status).to.equal(303);
  });
});

/** A request's words for its 400: `{ error }`, OAuth's `error_description`, JSON-RPC's `error.message`, or a page. */
const problemOf = (res: { body: any; text: string }): string =>
  typeof res.body === 'object' && res.body
    ? typeof res.body.error === 'string'
      ? String(res.body.error_description ?? res.body.error)
      : String(res.body.error?.message ?? res.text)
    : res.text;

describe('every rule the document states: a request that breaks it is the documented 400 naming the field', () => {
  // Built from /openapi.json alone (test/helpers/schema-cases.ts): for every operation a credential of the
  // document's reaches (the console's session-only routes are walked by the console tests), each rule on a path
  // parameter, a query field and a JSON body field is broken once, on an otherwise valid request.
  let app: TestApp;
  let doc: Doc;
  let cases: SchemaCases;
  const seen = new Map<string, number>();

  before(async () => {
    app = (await seededApp({ name: 'Rules' })).app;
    doc = (await get('/openapi.json')).body as Doc;
    cases = new SchemaCases(doc.components.schemas, [app.id]);
  });

  /** The request for one breach: the path with its parameters, the query and the body. */
  function requestFor(path: string, op: Operation, broken: { in: string; name?: string; breach?: Breach }) {
    let url = path;
    const query = new URLSearchParams();
    for (const p of op.parameters ?? []) {
      if (p.$ref || (p.in !== 'path' && p.in !== 'query')) continue;
      const value = broken.in === p.in && broken.name === p.name ? broken.breach!.value : cases.sample(p.schema);
      if (broken.in === p.in && broken.name === p.name && broken.breach!.rule === 'required') continue;
      if (p.in === 'path') url = url.replace(`{${p.name}}`, encodeURIComponent(String(value)));
      else if (p.required || (broken.in === p.in && broken.name === p.name)) query.set(p.name, String(value));
    }
    const schema = op.requestBody?.content['application/json']?.schema;
    const body = broken.in === 'body' ? broken.breach!.value : schema ? cases.sample(schema) : undefined;
    return { url: query.size ? `${url}?${query}` : url, body };
  }

  function* breachesOf(path: string, method: string, op: Operation) {
    for (const p of op.parameters ?? []) {
      if (p.$ref || (p.in !== 'path' && p.in !== 'query')) continue;
      for (const breach of cases.breaches(p.schema, cases.sample(p.schema), [p.name])) {
        // A path segment cannot be missing or empty (the router matches another path, or none), and it is text.
        if (p.in === 'path' && (breach.rule === 'required' || breach.rule === 'type' || breach.value === '')) continue;
        // Query fields are text: a wrong type is only wrong where the text cannot be read as the type.
        if (p.in === 'query' && breach.rule === 'type' && typeof breach.value === 'number') continue;
        yield { where: p.in, name: p.name, breach };
      }
      if (p.in === 'query' && p.required)
        yield { where: 'query', name: p.name, breach: { value: undefined, path: [p.name], rule: 'required' } };
    }
    const schema = op.requestBody?.content['application/json']?.schema;
    // A DELETE's body is not read (no route takes one); the MCP endpoint's body is JSON-RPC (its own tests).
    if (schema && method !== 'delete' && !path.endsWith('/mcp'))
      for (const breach of cases.breaches(schema, cases.sample(schema)))
        yield { where: 'body', name: undefined, breach };
  }

  it('is a 400 naming the field, never a 2xx or 5xx, for every rule of every operation', async function () {
    this.timeout(120_000);
    const failures: string[] = [];
    const jobs: (() => Promise<void>)[] = [];
    const appIdSeen = new Set<string>();
    for (const [path, methods] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(methods)) {
        const creds = op['x-credentials'];
        if (!creds || (creds.length === 1 && creds[0] === 'C')) continue;
        if (!op.responses['400']) continue;
        const token = creds.includes('N')
          ? null
          : creds.includes('A') || !creds.includes('S')
            ? testEnv().adminKey
            : app.api_key;
        for (const { where, name, breach } of breachesOf(path, method, op)) {
          // With a credential, an app id of another form is answered by the credential's lookup, before the route
          // (one request per credential and rule shows it); open routes validate it themselves, each is walked.
          if (where === 'path' && name === 'appId' && token) {
            const once = `${token} ${breach.rule}`;
            if (appIdSeen.has(once)) continue;
            appIdSeen.add(once);
          }
          const label = `${method.toUpperCase()} ${path} ${where} ${breach.path.join('.') || '(whole)'} ${breach.rule}`;
          jobs.push(async () => {
            const { url, body } = requestFor(path, op, { in: where, name, breach });
            const res = await call(method.toUpperCase(), url, { token, ...(body === undefined ? {} : { body }) });
            seen.set(breach.rule, (seen.get(breach.rule) ?? 0) + 1);
            const field = breach.path.join('.');
            const words = problemOf(res);
            // An app id of another form names no app (its description says so): a credential's answer for an app it
            // does not reach (401; 404 for the admin key), checked before anything else; on an open route a 400.
            const expected =
              where === 'path' && name === 'appId' && token ? (token === testEnv().adminKey ? 404 : 401) : 400;
            if (res.status !== expected) failures.push(`${label}: ${res.status} ${words.slice(0, 160)}`);
            else if (expected === 400 && field && !words.includes(field))
              failures.push(`${label}: 400 not naming ${field}: ${words.slice(0, 160)}`);
          });
        }
      }
    // A few at a time: the walk is some hundreds of requests.
    const queue = [...jobs];
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        for (let job = queue.shift(); job; job = queue.shift()) await job();
      }),
    );
    // Each line names the operation, the field, the rule and the answer (the first 40, so the message stays readable).
    const shown = failures.slice(0, 40).join('\n');
    expect(
      failures.length,
      `${failures.length} of ${jobs.length} rules not enforced as documented:\n${shown}`,
    ).to.equal(0);
    // The walk reached every kind of rule the document states.
    for (const rule of [
      'type',
      'required',
      'minLength',
      'maxLength',
      'pattern',
      'format',
      'enum',
      'minimum',
      'maximum',
      'maxItems',
      'uniqueItems',
      'oneOf',
    ])
      expect(seen.get(rule) ?? 0, rule).to.be.greaterThan(0);
  });
});
