import { expect } from 'chai';
import { sql } from '../src/db/sql.js';
import { createAccount, createTestApp, seedCatalog, type TestApp } from './helpers/factories.js';
import { get, patch, post } from './helpers/http.js';
import { testEnv } from './helpers/servers.js';

describe('batch usage ingest (POST /apps/:appId/usage/events)', function () {
  this.timeout(60_000);
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    app = await createTestApp();
    base = `/apps/${app.id}`;
    await seedCatalog(app);
    await createAccount(app, { id: 'a1', plan: 'pro' }); // api_calls 1,000 (allow), seats 5 (block)
    await createAccount(app, { id: 'a2', plan: 'free' }); // seats 1
  });
  const ingest = (events: unknown[], token = app.api_key) => post(`${base}/usage/events`, token, { events });
  const count = async (acct: string, ent: string) =>
    (await get(`${base}/namespaces/${acct}/usage/${ent}`, app.api_key)).body.count as number;

  it('applies events in order with the single-event rules and answers one result per event', async () => {
    const events = [
      { id: 'e1', account: 'a1', entitlement: 'api_calls', amount: 10 },
      { id: 'e2', account: 'a1', entitlement: 'seats', amount: 4 },
      { id: 'e3', account: 'a1', entitlement: 'seats', amount: 2 },
      { id: 'e4', account: 'a1', entitlement: 'seats', amount: 1 },
      { id: 'e5', account: 'ghost', entitlement: 'seats', amount: 1 },
      { id: 'e6', account: 'a1', entitlement: 'sso', amount: 1 },
      { id: 'e7', account: 'a1', entitlement: 'nope', amount: 1 },
      { id: 'e8', account: 'a1', entitlement: 'api_calls', amount: -50, timestamp: '2026-01-02T03:04:05Z' },
      { id: 'e9', account: 'a2', entitlement: 'seats', amount: 1 },
    ];
    const res = await ingest(events);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.results).to.deep.equal([
      { id: 'e1', status: 'applied', count: 10, error: null, duplicate: false },
      { id: 'e2', status: 'applied', count: 4, error: null, duplicate: false },
      { id: 'e3', status: 'blocked', count: 4, error: 'Limit reached: 4 of 5 used', duplicate: false },
      { id: 'e4', status: 'applied', count: 5, error: null, duplicate: false },
      { id: 'e5', status: 'error', count: null, error: 'Account ghost not found', duplicate: false },
      {
        id: 'e6',
        status: 'error',
        count: null,
        error: 'Entitlement sso is a boolean entitlement; it has no usage counter',
        duplicate: false,
      },
      { id: 'e7', status: 'error', count: null, error: 'Entitlement nope not found', duplicate: false },
      { id: 'e8', status: 'applied', count: 0, error: null, duplicate: false },
      { id: 'e9', status: 'applied', count: 1, error: null, duplicate: false },
    ]);
    expect(await count('a1', 'seats')).to.equal(5);
    expect(await count('a1', 'api_calls')).to.equal(0);
    const hist = await sql<{ amount: string; created_at: Date }>(
      testEnv().deps.orm.em.fork(),
      `select amount, created_at from usage_events where app_id = $1 and account_id = 'a1' and
        entitlement_id = 'api_calls' order by id`,
      [app.id],
    );
    expect(hist.map((h) => Number(h.amount))).to.deep.equal([10, -10]);
    expect(new Date(hist[1].created_at).toISOString()).to.equal('2026-01-02T03:04:05.000Z');
  });

  it('re-sending a batch changes nothing and answers the first results; concurrent re-sends too', async () => {
    await patch(`${base}/plans/pro/entitlements/seats`, app.api_key, { max: 50 });
    const events = Array.from({ length: 200 }, (_, i) => ({
      id: `b-${i}`,
      account: i % 2 ? 'a1' : 'a2',
      entitlement: i % 2 ? 'seats' : 'api_calls',
      amount: 1,
    }));
    const first = await ingest(events);
    expect(first.body.results.filter((r: { status: string }) => r.status === 'applied')).to.have.length(150);
    const again = await Promise.all([ingest(events), ingest(events), ingest(events.slice(50))]);
    for (const r of again.slice(0, 2)) {
      expect(r.body.results.every((x: { duplicate: boolean }) => x.duplicate)).to.equal(true);
      expect(r.body.results.map(({ duplicate: _d, ...x }: { duplicate: boolean }) => x)).to.deep.equal(
        first.body.results.map(({ duplicate: _d, ...x }: { duplicate: boolean }) => x),
      );
    }
    expect(await count('a1', 'seats')).to.equal(50);
    expect(await count('a2', 'api_calls')).to.equal(100);
    // Even after the limit is raised, a re-sent blocked event stays blocked.
    await patch(`${base}/plans/pro/entitlements/seats`, app.api_key, { max: 500 });
    const late = await ingest(events);
    expect(late.body.results.filter((r: { status: string }) => r.status === 'blocked')).to.have.length(50);
    expect(await count('a1', 'seats')).to.equal(50);
  });

  it('concurrent batches against one blocking limit never pass it', async () => {
    await patch(`${base}/plans/pro/entitlements/seats`, app.api_key, { max: 30 });
    const batches = Array.from({ length: 6 }, (_, b) =>
      Array.from({ length: 20 }, (_, i) => ({ id: `c-${b}-${i}`, account: 'a1', entitlement: 'seats', amount: 1 })),
    );
    const res = await Promise.all(batches.map((events) => ingest(events)));
    const applied = res.flatMap((r) => r.body.results).filter((r: { status: string }) => r.status === 'applied');
    expect(applied).to.have.length(30);
    expect(await count('a1', 'seats')).to.equal(30);
  });

  it('concurrent batches over the same counters in different orders all succeed (no deadlock) and lose nothing', async () => {
    for (let i = 0; i < 10; i++) await createAccount(app, { id: `m${i}`, plan: 'scale' });
    const batches = Array.from({ length: 4 }, (_, b) =>
      Array.from({ length: 100 }, (_, i) => ({
        id: `d-${b}-${i}`,
        account: `m${b % 2 ? i % 10 : 9 - (i % 10)}`,
        entitlement: 'api_calls',
        amount: 1,
      })),
    );
    const res = await Promise.all(batches.map((events) => ingest(events)));
    expect(res.map((r) => r.status)).to.deep.equal([200, 200, 200, 200]);
    for (const r of res) expect(r.body.results.map((x: { id: string }) => x.id)).to.have.length(100);
    expect(res[1].body.results[0].id, 'results in the order sent').to.equal('d-1-0');
    let total = 0;
    for (let i = 0; i < 10; i++) total += await count(`m${i}`, 'api_calls');
    expect(total).to.equal(400);
  });

  it('400 on a bad batch (empty, too many, bad event), 401 for the publishable key', async () => {
    expect((await ingest([])).status).to.equal(400);
    const many = Array.from({ length: 1001 }, (_, i) => ({
      id: `m${i}`,
      account: 'a1',
      entitlement: 'seats',
      amount: 1,
    }));
    expect((await ingest(many)).status).to.equal(400);
    const bad = await ingest([{ id: 'x', account: 'a1', entitlement: 'seats', amount: 1.5 }]);
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.match(/^events\.0\.amount: /);
    expect(
      (await ingest([{ id: 'x', account: 'a1', entitlement: 'seats', amount: 1, timestamp: 'soon' }])).status,
    ).to.equal(400);
    expect(
      (await ingest([{ id: 'y', account: 'a1', entitlement: 'seats', amount: 1 }], app.public_key)).status,
    ).to.equal(401);
    expect(await count('a1', 'seats')).to.equal(0);
  });
});
