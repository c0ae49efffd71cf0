// Cursor pages of an endpoint's webhook deliveries (GET /apps/:appId/webhooks/:webhookId/deliveries) and of the
// app's checkouts (GET /apps/:appId/checkouts): rows written straight into their tables, where a test needs many of
// them or two created in the same microsecond. The real deliveries and checkouts are in webhooks.test.ts and
// checkouts.test.ts.
import { expect } from 'chai';
import { SecretClient } from '@offerkit/sdk';
import { sql } from '../../src/db/sql.js';
import { createAccount, createTestApp, seededApp, type TestApp } from '../helpers/factories.js';
import { get, post, type Res } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

interface ListPage {
  data: { id: string; status: string }[];
  next_cursor: string | null;
}

const run = (text: string, params: unknown[]) => sql(testEnv().deps.orm.em.fork(), text, params);

describe('cursor pages of webhook deliveries and checkouts', function () {
  this.timeout(120_000);
  let app: TestApp;
  let base: string;
  const ids = (p: ListPage) => p.data.map((d) => d.id);
  const list = async (path: string, query = '') => {
    const res = await get<ListPage>(`${base}${path}${query}`, app.api_key);
    expect(res.status, res.text).to.equal(200);
    return res.body;
  };
  /** The ids of every page, following next_cursor. */
  const walk = async (path: string, query: string) => {
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const sep = query ? '&' : '?';
      const page = await list(path, `${query}${cursor ? `${sep}cursor=${encodeURIComponent(cursor)}` : ''}`);
      pages.push(ids(page));
      cursor = page.next_cursor;
    } while (cursor && pages.length < 20);
    return pages;
  };
  const bad = async (path: string, query: string) => {
    const res = await get(`${base}${path}${query}`, app.api_key);
    expect(res.status, query).to.equal(400);
    return res.body.error as string;
  };
  const forged = Buffer.from(JSON.stringify(["2026-01-01'; drop table checkouts;--", 'x'])).toString('base64url');

  beforeEach(async () => {
    app = await createTestApp();
    base = `/apps/${app.id}`;
  });

  describe('GET /apps/:appId/webhooks/:webhookId/deliveries', () => {
    let endpointId: string;
    let path: string;
    const insert = async (rows: { id: string; at: string; status?: string; endpoint?: string }[]) => {
      for (const r of rows)
        await run(
          `insert into webhook_deliveries (id, app_id, endpoint_id, event_id, event_type, status, payload, created_at)
           values ($1, $2, $3, $4, 'account.created', $5, $6::jsonb, $7::timestamptz)`,
          [
            r.id,
            app.id,
            r.endpoint ?? endpointId,
            `evt_${r.id}`,
            r.status ?? 'succeeded',
            JSON.stringify({ id: `evt_${r.id}`, type: 'account.created', created_at: r.at, app_id: app.id, data: {} }),
            r.at,
          ],
        );
    };

    beforeEach(async () => {
      // Disabled, so nothing is ever sent to it.
      const res = await post(`${base}/webhooks`, app.api_key, {
        url: 'https://hooks.example.com/x',
        events: ['*'],
        enabled: false,
      });
      expect(res.status, res.text).to.equal(201);
      endpointId = res.body.id;
      path = `/webhooks/${endpointId}/deliveries`;
    });

    it('pages with next_cursor: every delivery once, ties broken by id, the status filter kept, newcomers not repeated', async () => {
      expect(await list(path)).to.deep.equal({ data: [], next_cursor: null });
      const other = (await post(`${base}/webhooks`, app.api_key, { url: 'https://hooks.example.com/y', events: ['*'] }))
        .body.id as string;
      await insert([
        { id: 'd1', at: '2026-01-01T10:00:00.000001Z' },
        { id: 'd2', at: '2026-01-01T10:00:00.000002Z', status: 'failed' },
        { id: 'd3', at: '2026-01-01T10:00:00.000002Z' },
        { id: 'd4', at: '2026-01-02T10:00:00Z', status: 'failed' },
        { id: 'd5', at: '2026-01-03T10:00:00Z' },
        { id: 'x1', at: '2026-01-02T12:00:00Z', endpoint: other },
      ]);
      expect(await walk(path, '?limit=2')).to.deep.equal([['d5', 'd4'], ['d3', 'd2'], ['d1']]);
      // Microseconds matter: a cursor rounded to milliseconds would skip d3 or d2, or repeat them.
      expect(await walk(path, '?limit=1')).to.deep.equal([['d5'], ['d4'], ['d3'], ['d2'], ['d1']]);
      expect(await walk(path, '?limit=1&status=failed')).to.deep.equal([['d4'], ['d2']]);
      expect(await walk(path, '?limit=2&status=succeeded')).to.deep.equal([['d5', 'd3'], ['d1']]);
      // A page that ends exactly at the last delivery says so; limit alone still answers the newest.
      const whole = await list(path, '?limit=5');
      expect(ids(whole)).to.deep.equal(['d5', 'd4', 'd3', 'd2', 'd1']);
      expect(whole.next_cursor).to.equal(null);
      expect(whole.data[0]).to.deep.include({ id: 'd5', endpoint_id: endpointId, status: 'succeeded', test: false });
      expect(whole.data[0]).to.have.property('created_at', '2026-01-03T10:00:00.000Z');
      expect(ids(await list(path))).to.deep.equal(['d5', 'd4', 'd3', 'd2', 'd1']);

      // A delivery added between two pages is neither repeated nor shifts the next page.
      const first = await list(path, '?limit=2');
      await insert([{ id: 'd6', at: new Date().toISOString() }]);
      expect(ids(await list(path, `?limit=2&cursor=${encodeURIComponent(first.next_cursor!)}`))).to.deep.equal([
        'd3',
        'd2',
      ]);

      // The SDK follows next_cursor when iterated.
      const sdk = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: testEnv().baseUrl });
      const all: string[] = [];
      for await (const d of sdk.webhooks.listDeliveries(endpointId, { limit: 2 })) all.push(d.id);
      expect(all).to.deep.equal(['d6', 'd5', 'd4', 'd3', 'd2', 'd1']);
    });

    it('bad input is a 400 naming the field: a cursor it did not answer, an unknown status, a limit out of range', async () => {
      expect(await bad(path, '?cursor=abc')).to.equal('cursor: is not a next_cursor this list answered');
      expect(await bad(path, `?cursor=${forged}`)).to.equal('cursor: is not a next_cursor this list answered');
      expect(await bad(path, '?status=done')).to.match(/^status: /);
      expect(await bad(path, '?limit=0')).to.match(/^limit: /);
      expect((await get(`${base}/webhooks/whe_nope/deliveries`, app.api_key)).status).to.equal(404);
    });
  });

  describe('GET /apps/:appId/checkouts', () => {
    const path = '/checkouts';
    const insert = async (
      rows: { id: string; at: string; status?: string; offer?: string | null }[],
      appId = app.id,
    ) => {
      for (const r of rows)
        await run(
          `insert into checkouts (id, app_id, offer_id, plan_id, interval, currency, price, list_price, extras,
             return_url, cancel_url, status, created_at)
           values ($1, $2, $3, 'pro', 'month', 'USD', 19, 29,
             '{"entitlements": [], "addons": [], "cycles": null}'::jsonb, 'https://shop.example.com/ok',
             'https://shop.example.com/no', $4, $5::timestamptz)`,
          [r.id, appId, r.offer === undefined ? 'spring' : r.offer, r.status ?? 'created', r.at],
        );
    };

    it('pages with next_cursor: every checkout once, ties broken by id, the offer and status filters kept', async () => {
      expect(await list(path)).to.deep.equal({ data: [], next_cursor: null });
      const other = await createTestApp();
      await insert([{ id: 'co_theirs', at: '2026-01-02T12:00:00Z' }], other.id);
      await insert([
        { id: 'co_1', at: '2026-01-01T10:00:00.000001Z' },
        { id: 'co_2', at: '2026-01-01T10:00:00.000002Z', status: 'completed' },
        { id: 'co_3', at: '2026-01-01T10:00:00.000002Z', offer: null },
        { id: 'co_4', at: '2026-01-02T10:00:00Z', status: 'completed', offer: 'autumn' },
        { id: 'co_5', at: '2026-01-03T10:00:00Z', status: 'expired' },
      ]);
      expect(await walk(path, '?limit=2')).to.deep.equal([['co_5', 'co_4'], ['co_3', 'co_2'], ['co_1']]);
      expect(await walk(path, '?limit=1')).to.deep.equal([['co_5'], ['co_4'], ['co_3'], ['co_2'], ['co_1']]);
      expect(await walk(path, '?limit=1&status=completed')).to.deep.equal([['co_4'], ['co_2']]);
      expect(await walk(path, '?limit=2&offer=spring')).to.deep.equal([['co_5', 'co_2'], ['co_1']]);
      expect(await walk(path, '?limit=1&offer=spring&status=completed')).to.deep.equal([['co_2']]);
      const whole = await list(path, '?limit=5');
      expect(ids(whole)).to.deep.equal(['co_5', 'co_4', 'co_3', 'co_2', 'co_1']);
      expect(whole.next_cursor).to.equal(null);
      expect(whole.data[0]).to.deep.include({ id: 'co_5', status: 'expired', offer: 'spring', plan: 'pro', price: 19 });
      expect(whole.data[0]).to.have.property('created_at', '2026-01-03T10:00:00.000Z');

      // A checkout made between two pages is neither repeated nor shifts the next page.
      const first = await list(path, '?limit=2');
      await insert([{ id: 'co_6', at: new Date().toISOString() }]);
      expect(ids(await list(path, `?limit=2&cursor=${encodeURIComponent(first.next_cursor!)}`))).to.deep.equal([
        'co_3',
        'co_2',
      ]);

      const sdk = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: testEnv().baseUrl });
      const all: string[] = [];
      for await (const c of sdk.checkouts.list({ limit: 2 })) all.push(c.id);
      expect(all).to.deep.equal(['co_6', 'co_5', 'co_4', 'co_3', 'co_2', 'co_1']);
    });

    it('bad input is a 400 naming the field: a cursor it did not answer, an unknown status, a limit out of range', async () => {
      expect(await bad(path, '?cursor=abc')).to.equal('cursor: is not a next_cursor this list answered');
      expect(await bad(path, `?cursor=${forged}`)).to.equal('cursor: is not a next_cursor this list answered');
      expect(await bad(path, '?status=paid')).to.match(/^status: /);
      expect(await bad(path, '?limit=0')).to.match(/^limit: /);
    });
  });
});

describe('cursor pages of the MCP call log', function () {
  this.timeout(60_000);
  it('GET /apps/:appId/mcp/calls pages with next_cursor, keeps the connection filter, rejects a bad cursor', async () => {
    const app = await createTestApp();
    const admin = testEnv().adminKey;
    const insert = (id: string, ago: string, connection: string | null = null) =>
      run(
        `insert into mcp_calls (id, app_id, connection_id, tool, arguments, status, is_error, result, truncated,
           duration_ms, created_at) values ($1, $2, $3, 'list_plans', '{}'::jsonb, 200, false, '[]', false, 3,
           now() - $4::interval)`,
        [id, app.id, connection, ago],
      );
    await insert('mcl_1', '3 hours');
    await insert('mcl_2', '2 hours', 'conn_a');
    await insert('mcl_3', '1 hour');
    await insert('mcl_old', '31 days');
    const walk = async (query: string) => {
      const pages: string[][] = [];
      let cursor: string | null = null;
      do {
        const res: Res<ListPage> = await get<ListPage>(
          `/apps/${app.id}/mcp/calls${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          admin,
        );
        expect(res.status, res.text).to.equal(200);
        pages.push(res.body.data.map((c) => c.id));
        cursor = res.body.next_cursor;
      } while (cursor && pages.length < 20);
      return pages;
    };
    expect(await walk('?limit=1')).to.deep.equal([['mcl_3'], ['mcl_2'], ['mcl_1']]);
    expect(await walk('?limit=2')).to.deep.equal([['mcl_3', 'mcl_2'], ['mcl_1']]);
    expect(await walk('?limit=3')).to.deep.equal([['mcl_3', 'mcl_2', 'mcl_1']]);
    expect(await walk('?limit=1&connection_id=conn_a')).to.deep.equal([['mcl_2']]);
    const res = await get(`/apps/${app.id}/mcp/calls?cursor=abc`, admin);
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('cursor: is not a next_cursor this list answered');
  });
});

describe('cursor pages of cancel sessions', function () {
  this.timeout(120_000);
  it('GET /apps/:appId/cancel-sessions pages with next_cursor, keeps its filters, rejects a bad cursor', async () => {
    const { app, base } = await seededApp();
    expect((await post(`${base}/cancel-flows`, app.api_key, { status: 'active' })).status).to.equal(201);
    const started: string[] = [];
    for (let i = 0; i < 5; i++) {
      await createAccount(app, { id: `leaver_${i}`, plan: 'free' });
      const s = await post(`${base}/cancel-sessions`, app.api_key, { account: `leaver_${i}` });
      expect(s.status, s.text).to.equal(201);
      started.push(s.body.id);
    }
    const page = async (query: string) => {
      const res = await get<ListPage>(`${base}/cancel-sessions?${query}`, app.api_key);
      expect(res.status, res.text).to.equal(200);
      return res.body;
    };
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const p: ListPage = await page(`flow=default&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      pages.push(p.data.map((d) => d.id));
      cursor = p.next_cursor;
    } while (cursor && pages.length < 10);
    expect(pages.map((p) => p.length)).to.deep.equal([2, 2, 1]);
    expect(pages.flat(), 'newest first, each once').to.deep.equal([...started].reverse());
    expect((await page('account=leaver_3')).data.map((d) => d.id)).to.deep.equal([started[3]]);
    expect((await page('flow=another')).data).to.deep.equal([]);
    const bad = await get(`${base}/cancel-sessions?cursor=nope`, app.api_key);
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.match(/^cursor: /);
  });
});
