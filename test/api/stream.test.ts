import { expect } from 'chai';
import pg from 'pg';
import { sql } from '../../src/db/sql.js';
import { AccessStream } from '../../src/stream/stream.hub.js';
import { createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { call, del, patch, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { collect, type Collector } from '../helpers/stream.js';
import { eventually } from '../helpers/wait.js';

/** Event ids in order: `<tx>-<id>`, compared as numbers. */
const later = (a: string, b: string) => {
  const [at, ai] = a.split('-').map(BigInt);
  const [bt, bi] = b.split('-').map(BigInt);
  return at > bt || (at === bt && ai > bi);
};

describe('the change stream (GET /apps/:appId/stream)', function () {
  this.timeout(40_000);
  let app: TestApp;
  let base: string;
  const open: Collector[] = [];
  const reader = (credential: string, lastEventId?: string | null) => {
    const c = collect(testEnv().baseUrl, app.id, credential, lastEventId);
    open.push(c);
    return c;
  };
  beforeEach(async () => {
    ({ app, base } = await seededApp({
      accounts: [
        { id: 'a1', plan: 'free' },
        { id: 'a2', plan: 'pro' },
      ],
    }));
  });
  afterEach(() => {
    for (const c of open.splice(0)) c.close();
  });

  it('the publishable key and no credential are refused; another app key is refused', async () => {
    expect((await call('GET', `${base}/stream`, { token: app.public_key })).status).to.equal(401);
    expect((await call('GET', `${base}/stream`)).status).to.equal(401);
    const other = await seededApp();
    expect((await call('GET', `${base}/stream`, { token: other.app.api_key })).status).to.equal(401);
  });

  it('carries catalog, account and usage changes, each with an id; usage is coalesced to the last value', async () => {
    const s = reader(app.api_key);
    const ready = await s.waitFor((e) => e.type === 'ready');
    expect(ready.id).to.match(/^\d+-\d+$/);
    expect((await patch(`${base}/plans/free/entitlements/api_calls`, app.api_key, { max: 150 })).status).to.equal(200);
    const catalog = await s.waitFor((e) => e.type === 'catalog');
    expect(catalog.data).to.deep.equal({ table: 'plan_entitlements' });
    expect((await patch(`${base}/namespaces/a1`, app.api_key, { plan: 'pro' })).status).to.equal(200);
    await s.waitFor((e) => e.type === 'account' && e.data.accountId === 'a1');
    expect((await post(`${base}/namespaces/a2/addons`, app.api_key, { id: 'storage' })).status).to.equal(201);
    await s.waitFor((e) => e.type === 'account' && e.data.accountId === 'a2');
    for (let i = 0; i < 40; i++) await post(`${base}/namespaces/a1/usage/api_calls/add`, app.api_key);
    const last = await s.waitFor(
      (e) => e.type === 'usage' && e.data.entitlementId === 'api_calls' && e.data.usage === 40,
    );
    expect(last.data).to.deep.equal({ accountId: 'a1', entitlementId: 'api_calls', usage: 40, held: 0 });
    const usage = s.changes().filter((e) => e.type === 'usage');
    // 40 adds, one at a time, are far fewer events (at most one per counter per 250 ms).
    expect(usage.length).to.be.below(40);
    const ids = s.changes().map((e) => e.id);
    expect(new Set(ids).size).to.equal(ids.length);
    expect((await del(`${base}/namespaces/a2`, app.api_key)).status).to.be.below(300);
    await s.waitFor((e) => e.type === 'account' && e.data.accountId === 'a2' && later(e.id, last.id));
  });

  it('a usage change that finds its counter already marked still gets an event with its value', async () => {
    // The race a loaded machine once lost: a change finds the mark an earlier change left, and a flush deletes that
    // mark and reads the counter between the change's update and its commit. The flush waits for the change (or
    // the change makes a new mark), so the last value always gets an event.
    expect((await post(`${base}/namespaces/a1/usage/api_calls/add`, app.api_key)).status).to.equal(200);
    const counter = `app_id = $1 and account_id = 'a1' and entitlement_id = 'api_calls' and entity_id = ''`;
    const change = new pg.Client({ connectionString: testEnv().config.databaseUrl });
    const flusher = new pg.Client({ connectionString: testEnv().config.databaseUrl });
    await Promise.all([change.connect(), flusher.connect()]);
    try {
      // The mark an earlier change left, not flushed yet.
      await flusher.query(
        `insert into access_dirty (app_id, account_id, entitlement_id) values ($1, 'a1', 'api_calls')
         on conflict do nothing`,
        [app.id],
      );
      await change.query('begin');
      const updated = await change.query<{ count: string }>(
        `update usage_counters set count = count + 1 where ${counter} returning count::text`,
        [app.id],
      );
      const value = Number(updated.rows[0].count);
      const flushing = flusher.query(`select clock, flushed from access_usage_flush(0)`);
      await new Promise((r) => setTimeout(r, 300));
      await change.query('commit');
      await flushing;
      const last = async () =>
        (
          await flusher.query<{ usage: number }>(
            `select (data->>'usage')::int as usage from access_changes
             where app_id = $1 and account_id = 'a1' and kind = 'usage' order by tx desc, id desc limit 1`,
            [app.id],
          )
        ).rows[0]?.usage;
      // A mark made after the delete goes at the next flush; none is left behind either way.
      await eventually(async () => {
        await flusher.query(`select clock, flushed from access_usage_flush(0)`);
        return (await last()) === value;
      }, 5000);
      expect(value).to.be.greaterThan(1);
      const left = await flusher.query(`select 1 from access_dirty where app_id = $1`, [app.id]);
      expect(left.rowCount).to.equal(0);
    } finally {
      await change.query('rollback').catch(() => undefined);
      await Promise.all([change.end(), flusher.end()]);
    }
  });

  it("an account token reads its own account's events and the catalog's, not another account's", async () => {
    const token = (await post(`${base}/namespaces/a1/token`, app.api_key, {})).body.token as string;
    const s = reader(token);
    await s.waitFor((e) => e.type === 'ready');
    await patch(`${base}/namespaces/a2`, app.api_key, { plan: 'scale' });
    await post(`${base}/namespaces/a2/usage/api_calls/add`, app.api_key);
    await patch(`${base}/namespaces/a1`, app.api_key, { plan: 'scale' });
    await post(`${base}/namespaces/a1/usage/api_calls/add`, app.api_key);
    await post(`${base}/entitlements`, app.api_key, { id: 'export', type: 'boolean', name: 'Export' });
    await s.waitFor((e) => e.type === 'catalog');
    await s.waitFor((e) => e.type === 'usage' && e.data.accountId === 'a1');
    await s.waitFor((e) => e.type === 'account' && e.data.accountId === 'a1');
    const others = s.changes().filter((e) => 'accountId' in e.data && e.data.accountId !== 'a1');
    expect(others).to.deep.equal([]);
  });

  it('Last-Event-ID resumes after the last event seen; a position past the retention or not ours gets resync', async () => {
    const first = reader(app.api_key);
    await first.waitFor((e) => e.type === 'ready');
    await patch(`${base}/namespaces/a1`, app.api_key, { plan: 'pro' });
    const seen = await first.waitFor((e) => e.type === 'account');
    first.close();
    await patch(`${base}/namespaces/a2`, app.api_key, { plan: 'scale' });
    await post(`${base}/addons`, app.api_key, { id: 'backup', name: 'Backup' });
    const resumed = reader(app.api_key, seen.id);
    await resumed.waitFor((e) => e.type === 'catalog');
    const missed = resumed.changes().filter((e) => e.type !== 'ready');
    expect(missed.map((e) => [e.type, 'accountId' in e.data ? e.data.accountId : null])).to.deep.equal([
      ['account', 'a2'],
      ['catalog', null],
    ]);
    expect(later(missed[0].id, seen.id)).to.equal(true);

    const bogus = reader(app.api_key, 'not-an-id');
    expect((await bogus.waitFor((e) => e.type === 'resync')).data).to.have.property('reason');

    // Past the retention: this app's rows are made old and pruned; the horizon moves past them.
    const em = testEnv().deps.orm.em.fork();
    await sql(em, `update access_changes set created_at = now() - interval '30 days' where app_id = $1`, [app.id]);
    await testEnv().deps.stream.prune();
    const late = reader(app.api_key, seen.id);
    const resync = await late.waitFor((e) => e.type === 'resync');
    expect(later(resync.id, seen.id)).to.equal(true);
    await patch(`${base}/namespaces/a1`, app.api_key, { plan: 'free' });
    await late.waitFor((e) => e.type === 'account' && later(e.id, resync.id));
  });

  it('a reader that does not read is dropped, not buffered for', async () => {
    const { config, deps } = testEnv();
    const hub = new AccessStream({
      databaseUrl: config.databaseUrl,
      query: (text, params) => sql(deps.orm.em, text, params),
      logger: deps.logger,
      retentionHours: 24,
      maxBufferBytes: 4096,
      heartbeatMs: 60_000,
      usageFlushMs: 50,
      pollMs: 100,
    });
    try {
      const out = await hub.open(app.id, null, undefined);
      // Nobody reads `out`: changes pile up until the bound.
      await createAccount(app, { id: 'slow' });
      // 100 events of 500 bytes and more in one statement (what a bulk import's triggers write).
      await sql(
        deps.orm.em,
        `insert into access_changes (app_id, kind, data)
         select $1, 'catalog', jsonb_build_object('table', repeat('x', 500)) from generate_series(1, 100)`,
        [app.id],
      );
      await eventually(async () => out.destroyed, 15_000);
      expect(hub.stats.dropped).to.equal(1);
      expect(hub.readerCount).to.equal(0);
    } finally {
      await hub.close();
    }
  });
});
