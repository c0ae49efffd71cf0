import { expect } from 'chai';
import { z } from 'zod';
import { takeViolations } from '../../src/http/contract.js';
import { Reply, route } from '../../src/http/route.js';
import { mcpRoutes } from '../../src/mcp/mcp.routes.js';
import { createTestApp, type TestApp } from '../helpers/factories.js';
import { call } from '../helpers/http.js';
import { mountRoutes } from '../helpers/mount.js';

const thing = z.object({ id: z.string(), count: z.number() });

// A presenter that drifts has to get past the compiler first; `as never` stands for that drift here.
const table = [
  ...mcpRoutes,
  route({
    method: 'GET',
    path: '/apps/:appId/things/good',
    sdk: 'test.route1',
    auth: ['S'],
    tags: ['test'],
    summary: 'answers its schema',
    mcp: { tool: 'get_good_thing', level: 'R', use: 'Returns it.' },
    response: thing,
    handler: () => ({ id: 'a', count: 1 }),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/things/wrong-type',
    sdk: 'test.route2',
    auth: ['S'],
    tags: ['test'],
    summary: 'a field of the wrong type',
    mcp: { tool: 'get_wrong_thing', level: 'R', use: 'Returns it.' },
    response: thing,
    handler: () => ({ id: 'a', count: '1' }) as never,
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/things/extra',
    sdk: 'test.route3',
    auth: ['S'],
    tags: ['test'],
    summary: 'a field the schema does not name',
    response: z.object({ data: z.array(thing) }),
    handler: () => ({ data: [{ id: 'a', count: 1, secret: 'x' }] }) as never,
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/things/undocumented-status',
    sdk: 'test.route4',
    auth: ['S'],
    tags: ['test'],
    summary: 'a status it does not document',
    response: thing,
    handler: () => new Reply(202, { id: 'a', count: 1 }),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/things/page',
    sdk: 'test.route5',
    auth: ['S'],
    tags: ['test'],
    summary: 'a documented page and redirect',
    query: z.object({ go: z.string().optional() }),
    replies: { 200: { description: 'a page', contentType: 'text/html' }, 303: { description: 'elsewhere' } },
    handler: ({ query }) =>
      query.go ? new Reply(303, null, { Location: '/' }) : new Reply(200, '<p>hi</p>', {}, 'text/html'),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/things/bad-error',
    sdk: 'test.route6',
    auth: ['S'],
    tags: ['test'],
    summary: 'a 4xx without the error shape',
    replies: { 200: { description: 'never' } },
    handler: () => new Reply(409, { reason: 'no error field' } as never),
  }),
];

// The compiler holds handlers to their route's response schema: each handler below is a type error, and
// npm test runs tsc, where an unused @ts-expect-error fails too. Never mounted.
export const typeErrors = [
  route({
    method: 'GET',
    path: '/wrong-field',
    sdk: 'test.wrongField',
    auth: ['N'],
    tags: ['test'],
    summary: 'a field of the wrong type',
    response: thing,
    // @ts-expect-error count is a number in the schema
    handler: () => ({ id: 'a', count: '1' }),
  }),
  route({
    method: 'GET',
    path: '/wrong-reply',
    sdk: 'test.wrongReply',
    auth: ['N'],
    tags: ['test'],
    summary: "a Reply's JSON body is typed as well",
    response: thing,
    // @ts-expect-error the body lacks count
    handler: () => new Reply(201, { id: 'a' }),
  }),
  route({
    method: 'GET',
    path: '/no-schema',
    sdk: 'test.noSchema',
    auth: ['N'],
    tags: ['test'],
    summary: 'JSON needs a response schema',
    // @ts-expect-error a route without a response schema answers no JSON
    handler: () => ({ id: 'a' }),
  }),
];

describe('responses are held to their route (every test)', () => {
  let base: string;
  let close: () => Promise<void>;
  let app: TestApp;

  before(async () => {
    ({ base, close } = await mountRoutes(table));
    app = await createTestApp();
  });
  after(() => close());
  afterEach(() => expect(takeViolations(), 'no mismatch left for the root hook').to.deep.equal([]));

  const send = (path: string, opts: Parameters<typeof call>[2] = {}) =>
    call('GET', `/apps/${app.id}${path}`, { token: app.api_key, base, ...opts });
  const failure = async (path: string) => {
    try {
      await send(path);
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error(`GET ${path} passed the contract check`);
  };

  it('a body that matches its schema passes; error answers match the error schema', async () => {
    expect((await send('/things/good')).body).to.deep.equal({ id: 'a', count: 1 });
    expect((await send('/things/good', { token: 'key_wrong' })).status).to.equal(401);
    expect((await call('GET', '/no/such/route', { base })).status).to.equal(404);
  });

  it('a field of the wrong type fails the test that made the request, naming route and field', async () => {
    expect(await failure('/things/wrong-type')).to.equal(
      'GET /apps/:appId/things/wrong-type answered outside its documented contract: 200 count: Invalid input: ' +
        'expected number, received string',
    );
  });

  it('a field the schema does not name fails too', async () => {
    expect(await failure('/things/extra')).to.match(
      /things\/extra .*: 200 data\.0\.secret: is not in the response schema/,
    );
  });

  it('a status the route does not document fails', async () => {
    expect(await failure('/things/undocumented-status')).to.match(/status 202 is not documented/);
  });

  it('pages and redirects pass when the route documents them', async () => {
    const page = await send('/things/page');
    expect(page.status).to.equal(200);
    expect(page.text).to.equal('<p>hi</p>');
    expect((await send('/things/page?go=1')).status).to.equal(303);
  });

  it('a 4xx body without `error` fails', async () => {
    expect(await failure('/things/bad-error')).to.match(/contract: 409 error: is required$/);
  });

  it('a request from any client is recorded under its request id (the root hook fails the test otherwise)', async () => {
    const res = await fetch(`${base}/apps/${app.id}/things/wrong-type`, {
      headers: { Authorization: `Bearer ${app.api_key}`, 'X-Request-Id': 'contract-raw-1' },
    });
    expect(res.status).to.equal(200);
    const taken = takeViolations('contract-raw-1');
    expect(taken.map((v) => v.message)).to.have.length(1);
    expect(taken[0].message).to.match(/^GET \/apps\/:appId\/things\/wrong-type /);
  });

  describe('MCP tools', () => {
    const rpc = (name: string) =>
      call('POST', `/apps/${app.id}/mcp`, {
        token: app.api_key,
        base,
        headers: { Accept: 'application/json, text/event-stream' },
        body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {} } },
      });

    it('the MCP server derives its tools from the route table it is served from', async () => {
      const res = await call('POST', `/apps/${app.id}/mcp`, {
        token: app.api_key,
        base,
        // Every toolset: these routes' tools are in none of the core's (src/mcp/toolsets.ts).
        headers: { Accept: 'application/json, text/event-stream', 'X-MCP-Toolsets': 'all' },
        body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      });
      expect(res.body.result.tools.map((t: { name: string }) => t.name)).to.deep.equal([
        'find_tools',
        'call_tool',
        'get_good_thing',
        'get_wrong_thing',
      ]);
      expect(JSON.parse((await rpc('get_good_thing')).body.result.content[0].text)).to.deep.equal({
        id: 'a',
        count: 1,
      });
    });

    it("a tool's result is held to its route's schema as well", async () => {
      let message = '';
      await rpc('get_wrong_thing').catch((err: Error) => (message = err.message));
      expect(message).to.match(/^MCP tool get_wrong_thing \(GET \/apps\/:appId\/things\/wrong-type\) .*count:/);
    });
  });
});
