import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { z } from 'zod';
import { App } from '../../src/apps/apps.entities.js';
import { flushOrConflict } from '../../src/db/conflict.js';
import { limitParam, pageOf, pageOffset, pageQuery } from '../../src/http/pagination.js';
import { route } from '../../src/http/route.js';
import { iso } from '../../src/time.js';
import { createTestApp, type TestApp } from '../helpers/factories.js';
import { call } from '../helpers/http.js';
import { mountRoutes } from '../helpers/mount.js';

const ITEMS = Array.from({ length: 45 }, (_, i) => i + 1);

const table = [
  route({
    method: 'POST',
    path: '/apps/:appId/things',
    sdk: 'test.route1',
    auth: ['S'],
    tags: ['test'],
    summary: 'validated body',
    body: z.object({
      name: z.string().min(1),
      count: z.number().int().min(0),
      nested: z.object({ flag: z.boolean() }).optional(),
    }),
    status: 201,
    response: z.object({ received: z.looseObject({}) }),
    handler: ({ body }) => ({ received: body }),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/clash',
    sdk: 'test.route2',
    auth: ['S'],
    tags: ['test'],
    summary: 'inserts an app with a fixed id',
    body: z.object({ id: z.string() }),
    response: z.object({ created: z.string() }),
    handler: async ({ em, body }) => {
      em.create(App, {
        id: body.id,
        name: 'clash',
        apiKey: `key_${body.id}_${Math.random()}`,
        publicKey: `pub_${body.id}_${Math.random()}`,
      });
      await flushOrConflict(em, `App ${body.id} already exists`);
      return { created: body.id };
    },
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/boom',
    sdk: 'test.route3',
    auth: ['S'],
    tags: ['test'],
    summary: 'throws',
    handler: () => {
      throw new Error('secret internals');
    },
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/paged',
    sdk: 'test.route4',
    auth: ['S'],
    tags: ['test'],
    summary: 'paged list',
    query: pageQuery,
    response: z.object({ data: z.array(z.number()), total: z.number(), page: z.number(), per_page: z.number() }),
    handler: ({ query }) =>
      pageOf(ITEMS.slice(pageOffset(query), pageOffset(query) + query.per_page), ITEMS.length, query),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/log',
    sdk: 'test.route5',
    auth: ['S'],
    tags: ['test'],
    summary: 'log list',
    query: z.object({ limit: limitParam(50, 100) }),
    response: z.object({ limit: z.number() }),
    handler: ({ query }) => ({ limit: query.limit }),
  }),
];

describe('request conventions', () => {
  let base: string;
  let close: () => Promise<void>;
  let app: TestApp;
  const lines: Record<string, unknown>[] = [];

  before(async () => {
    const sink = new Writable({
      write(chunk, _enc, cb) {
        for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        cb();
      },
    });
    ({ base, close } = await mountRoutes(table, { logger: pino({ level: 'info' }, sink) }));
    app = await createTestApp();
  });
  after(() => close());

  const send = (method: string, path: string, opts: Parameters<typeof call>[2] = {}) =>
    call(method, `/apps/${app.id}${path}`, { token: app.api_key, base, ...opts });

  describe('bodies', () => {
    it('400 for invalid JSON', async () => {
      for (const raw of ['{"name":', 'not json', '{"a":1}}', "{'single':1}"]) {
        const res = await send('POST', '/things', { raw });
        expect(res.status, raw).to.equal(400);
        expect(res.body).to.deep.equal({ error: 'Invalid JSON body' });
      }
    });
    it('400 for JSON that is not an object', async () => {
      const res = await send('POST', '/things', { raw: '"just a string"' });
      expect(res.status).to.equal(400);
    });
    it('415 for a body that is not JSON', async () => {
      const res = await send('POST', '/things', {
        raw: 'name=x',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      });
      expect(res.status).to.equal(415);
      expect(res.body).to.deep.equal({ error: 'Content-Type must be application/json' });
    });
    it('413 past the body limit', async () => {
      const res = await send('POST', '/things', { raw: JSON.stringify({ name: 'x'.repeat(1_100_000), count: 1 }) });
      expect(res.status).to.equal(413);
      expect(res.body.error).to.match(/too large/);
    });
  });

  describe('validation', () => {
    it('400 naming the field: missing, wrong type, bound, nested', async () => {
      expect((await send('POST', '/things', { body: { count: 1 } })).body).to.deep.equal({
        error: 'name: is required',
      });
      expect((await send('POST', '/things', { body: { name: 'a', count: 'x' } })).body.error).to.match(
        /^count: .*number/,
      );
      expect((await send('POST', '/things', { body: { name: 'a', count: -1 } })).body.error).to.match(/^count: /);
      expect((await send('POST', '/things', { body: { name: 'a', count: 1.5 } })).body.error).to.match(/^count: /);
      expect(
        (await send('POST', '/things', { body: { name: 'a', count: 1, nested: { flag: 'yes' } } })).body.error,
      ).to.match(/^nested\.flag: /);
    });
    it('passes valid input through; an unknown field is a 400 naming it, nested ones too', async () => {
      const res = await send('POST', '/things', { body: { name: 'a', count: 2 } });
      expect(res.status).to.equal(201);
      expect(res.body).to.deep.equal({ received: { name: 'a', count: 2 } });
      const extra = await send('POST', '/things', { body: { name: 'a', count: 2, extra: true } });
      expect(extra.status).to.equal(400);
      expect(extra.body.error).to.equal('body: unknown field extra');
      const nested = await send('POST', '/things', { body: { name: 'a', count: 1, nested: { flag: true, x: 1 } } });
      expect(nested.body.error).to.equal('nested: unknown field x');
    });
  });

  describe('errors', () => {
    it('409 when an id already exists (unique constraint, no prior read)', async () => {
      const id = `app_clash_${Date.now()}`;
      expect((await send('POST', '/clash', { body: { id } })).status).to.equal(200);
      const again = await send('POST', '/clash', { body: { id } });
      expect(again.status).to.equal(409);
      expect(again.body).to.deep.equal({ error: `App ${id} already exists` });
    });
    it('500 hides internals and logs the error with the request id', async () => {
      const res = await send('GET', '/boom', { headers: { 'X-Request-Id': 'req-boom-1' } });
      expect(res.status).to.equal(500);
      expect(res.body).to.deep.equal({ error: 'Internal server error' });
      const logged = lines.find((l) => l.msg === 'unhandled error' && l.requestId === 'req-boom-1') as
        { err: { message: string } } | undefined;
      expect(logged, 'error log line').to.not.equal(undefined);
      expect(logged!.err.message).to.equal('secret internals');
    });
    it('logs one structured line per request with method, path, status and duration', async () => {
      await send('GET', '/paged', { headers: { 'X-Request-Id': 'req-log-1' } });
      const line = lines.find((l) => l.msg === 'request' && l.requestId === 'req-log-1');
      expect(line).to.include({ method: 'GET', path: `/apps/${app.id}/paged`, status: 200 });
      expect(line!.durationMs).to.be.a('number');
    });
  });

  describe('pagination', () => {
    it('defaults to page 1 of 20', async () => {
      const res = await send('GET', '/paged');
      expect(res.body).to.deep.include({ total: 45, page: 1, per_page: 20 });
      expect(res.body.data).to.deep.equal(ITEMS.slice(0, 20));
    });
    it('returns later and partial pages, and an empty page past the end', async () => {
      expect((await send('GET', '/paged?page=3&per_page=20')).body.data).to.deep.equal([41, 42, 43, 44, 45]);
      expect((await send('GET', '/paged?page=2&per_page=100')).body.data).to.deep.equal([]);
      expect((await send('GET', '/paged?per_page=100')).body.data).to.have.length(45);
    });
    it('400 outside the bounds', async () => {
      for (const q of ['per_page=101', 'per_page=0', 'page=0', 'page=-1', 'page=abc', 'per_page=2.5']) {
        const res = await send('GET', `/paged?${q}`);
        expect(res.status, q).to.equal(400);
        expect(res.body.error).to.match(new RegExp(`^${q.split('=')[0]}: `));
      }
    });
    it('log lists cap limit at the maximum and reject nonsense', async () => {
      expect((await send('GET', '/log')).body.limit).to.equal(50);
      expect((await send('GET', '/log?limit=7')).body.limit).to.equal(7);
      expect((await send('GET', '/log?limit=5000')).body.limit).to.equal(100);
      expect((await send('GET', '/log?limit=0')).status).to.equal(400);
    });
  });

  describe('timestamps', () => {
    it('ISO 8601 UTC with milliseconds', () => {
      expect(iso(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)))).to.equal('2026-01-02T03:04:05.006Z');
      expect(iso(new Date(Date.UTC(2026, 0, 2)))).to.equal('2026-01-02T00:00:00.000Z');
      expect(iso(null)).to.equal(null);
    });
  });
});
