// A usage limit per entity (issue 42 item 5): a usage entitlement declared `per: "entity"` keeps one counter per
// entity registered under the account, the plan's limit applying to each; the entity in usage calls, reservations,
// effective access and batch ingest (where per-entity pools take it too); concurrency and tenancy against the real
// PostgreSQL.
import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import { creditsAddUp, creditsCatalog } from '../helpers/credits.js';
import { createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { get, patch, post } from '../helpers/http.js';
import { startReceiver } from '../helpers/receiver.js';
import { testEnv } from '../helpers/servers.js';

describe('entity limits: a usage limit per entity, and entities in batch ingest', function () {
  this.timeout(60_000);
  let app: TestApp;
  let base: string;

  const ok = async (path: string, body: unknown, status = 201) => {
    const res = await post(`${base}${path}`, app.api_key, body);
    expect(res.status, `${path} ${res.text}`).to.equal(status);
    return res.body;
  };
  const register = async (account: string, id: string) => ok(`/namespaces/${account}/entities`, { id });
  const add = (account: string, feature: string, amount: number, entity?: string) =>
    post(`${base}/namespaces/${account}/usage/${feature}/amount`, app.api_key, {
      amount,
      ...(entity === undefined ? {} : { entity }),
    });
  const count = async (account: string, feature: string, entity: string) => {
    const res = await get(`${base}/namespaces/${account}/usage/${feature}?entity=${entity}`, app.api_key);
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.include({ entitlement: feature, entity });
    return res.body.count as number;
  };
  const ingest = async (events: Record<string, unknown>[]) => {
    const res = await post(`/apps/${app.id}/usage/events`, app.api_key, { events });
    expect(res.status, res.text).to.equal(200);
    return res.body.results as { id: string; status: string; count: number | null; error: string | null }[];
  };
  const balance = async (account: string, entity: string) => {
    const res = await get(`${base}/namespaces/${account}/credits?entity=${entity}`, app.api_key);
    expect(res.status, res.text).to.equal(200);
    return res.body.data.find((p: { pool: string }) => p.pool === 'team_credits').balance as number;
  };

  /**
   * The docs' team plan: 10 seats counting entities, `team_credits` kept per entity (500 a month each), `chat`
   * drawing 1 from it, and `ai_requests` limited per entity: 10 each, blocking. `a1` and `a2` on it.
   */
  beforeEach(async () => {
    ({ app, base } = await seededApp());
    await creditsCatalog(app, base);
    expect((await patch(`${base}/entitlements/seats`, app.api_key, { counts: 'entities' })).status).to.equal(200);
    await ok('/entitlements', {
      id: 'team_credits',
      type: 'credits',
      name: 'Team credits',
      credits: { per: 'entity' },
    });
    await ok('/entitlements', { id: 'chat', type: 'usage', name: 'Chat', credits: { pool: 'team_credits', cost: 1 } });
    const limited = await ok('/entitlements', {
      id: 'ai_requests',
      type: 'usage',
      name: 'AI requests',
      overage: { mode: 'block' },
      per: 'entity',
    });
    expect(limited).to.include({ per: 'entity', counts: null });
    await ok('/plans', { id: 'team', name: 'Team', pricingCard: { title: 'Team', monthlyPrice: 50 } });
    await ok('/plans/team/entitlements', { id: 'seats', max: 10 });
    await ok('/plans/team/entitlements', { id: 'team_credits', max: 500 });
    await ok('/plans/team/entitlements', { id: 'chat', max: null });
    await ok('/plans/team/entitlements', { id: 'ai_requests', max: 10 });
    await ok('/plans/team/entitlements', { id: 'api_calls', max: 1000 });
    await createAccount(app, { id: 'a1', plan: 'team' });
    await createAccount(app, { id: 'a2', plan: 'team' });
  });

  it('declares `per` on usage entitlements only, and never switches it under existing counters', async () => {
    expect((await get(`${base}/entitlements/api_calls`, app.api_key)).body.per).to.equal('account');
    expect((await get(`${base}/entitlements/team_credits`, app.api_key)).body.per).to.equal(null);
    const onPool = await post(`${base}/entitlements`, app.api_key, {
      id: 'p2',
      type: 'credits',
      name: 'P2',
      per: 'entity',
    });
    expect(onPool.status, onPool.text).to.equal(400);
    expect(onPool.body.error).to.match(/^per: .*credits\.per/);
    const onSeats = await patch(`${base}/entitlements/seats`, app.api_key, { per: 'entity' });
    expect(onSeats.status, onSeats.text).to.equal(400);
    expect(onSeats.body.error).to.match(/counts entities|account's own counter/);
    // No counters yet: switching is fine, both ways.
    expect((await patch(`${base}/entitlements/basic`, app.api_key, { per: 'entity' })).body.per).to.equal('entity');
    expect((await patch(`${base}/entitlements/basic`, app.api_key, { per: 'account' })).body.per).to.equal('account');
    // With a counter: 409, nothing changed.
    await register('a1', 'u1');
    expect((await add('a1', 'ai_requests', 1, 'u1')).status).to.equal(200);
    const switched = await patch(`${base}/entitlements/ai_requests`, app.api_key, { per: 'account' });
    expect(switched.status, switched.text).to.equal(409);
    expect(switched.body.error).to.match(/^per: .*counter/);
    expect((await get(`${base}/entitlements/ai_requests`, app.api_key)).body.per).to.equal('entity');
  });

  it("applies the plan's limit to each entity: one at its limit is refused while another still can", async () => {
    await register('a1', 'u1');
    await register('a1', 'u2');
    expect((await add('a1', 'ai_requests', 8, 'u1')).body).to.deep.equal({ entitlement: 'ai_requests', count: 8 });
    const add1 = await post(`${base}/namespaces/a1/usage/ai_requests/add?entity=u1`, app.api_key, {});
    expect(add1.status, add1.text).to.equal(200);
    expect(add1.body.count).to.equal(9);
    const over = await add('a1', 'ai_requests', 2, 'u1');
    expect(over.status, over.text).to.equal(402);
    expect(over.body.error).to.equal('limit_reached');
    expect(over.body.entitlement).to.include({ id: 'ai_requests', usage: 9, max: 10 });
    expect(await count('a1', 'ai_requests', 'u1')).to.equal(9);
    // u2's counter is its own: the full limit.
    expect((await add('a1', 'ai_requests', 10, 'u2')).status).to.equal(200);
    expect((await add('a1', 'ai_requests', 1, 'u2')).status).to.equal(402);
    // Reservations hold on the entity's counter: u1 has 1 left.
    const held = await post(`${base}/namespaces/a1/usage/ai_requests/reservations`, app.api_key, {
      amount: 1,
      entity: 'u1',
    });
    expect(held.status, held.text).to.equal(201);
    expect((await add('a1', 'ai_requests', 1, 'u1')).status).to.equal(402);
    const committed = await post(`${base}/namespaces/a1/reservations/${held.body.id}/commit`, app.api_key, {
      amount: 1,
    });
    expect(committed.status, committed.text).to.equal(200);
    expect(await count('a1', 'ai_requests', 'u1')).to.equal(10);
    // A removal gives one back to that entity only.
    expect((await post(`${base}/namespaces/a1/usage/ai_requests/remove?entity=u2`, app.api_key, {})).status).to.equal(
      200,
    );
    expect(await count('a1', 'ai_requests', 'u2')).to.equal(9);
    expect(await count('a1', 'ai_requests', 'u1')).to.equal(10);

    // Effective access for an entity: its counter decides; without one, `can` is false (whose counter is unknown).
    const access = async (q: string) => {
      const res = await get(`${base}/namespaces/a1/plan${q}`, app.api_key);
      expect(res.status, res.text).to.equal(200);
      return res.body;
    };
    const entry = (body: { entitlements: { id: string }[] }) => body.entitlements.find((e) => e.id === 'ai_requests');
    expect(entry(await access('?entity=u1'))).to.include({ usage: 10, left: 0, can: false, per_entity: true });
    expect(entry(await access('?entity=u2'))).to.include({ usage: 9, left: 1, can: true, per_entity: true });
    const u2 = await access('?entity=u2');
    expect(u2.entity).to.equal('u2');
    expect(u2.entitlements.find((e: { id: string }) => e.id === 'chat')).to.include({ can: true });
    expect(u2.credits.find((p: { id: string }) => p.id === 'team_credits')).to.include({ balance: 500 });
    const none = await access('');
    expect(entry(none)).to.include({ usage: 0, can: false, per_entity: true });
    expect(none.entity).to.equal(undefined);
    expect(none.entitlements.find((e: { id: string }) => e.id === 'api_calls')).to.not.have.property('per_entity');
    expect((await get(`${base}/namespaces/a1/plan?entity=ghost`, app.api_key)).status).to.equal(404);

    // The history says whose counter moved.
    const [hist] = await sql<{ n: string }>(
      testEnv().deps.orm.em.fork(),
      `select count(*) as n from usage_events where app_id = $1 and entitlement_id = 'ai_requests' and entity_id = ''`,
      [app.id],
    );
    expect(Number(hist.n)).to.equal(0);
  });

  it('answers 409 entity_required / entity_not_taken for a missing or misplaced entity, 404 for one not registered', async () => {
    await register('a1', 'u1');
    const bad = async (
      p: Promise<{ status: number; body: { error: string; reason?: string } }>,
      status: number,
      re: RegExp,
    ) => {
      const res = await p;
      expect(res.status, JSON.stringify(res.body)).to.equal(status);
      expect(res.body.error).to.match(re);
      if (/name the entity/.test(res.body.error)) expect(res.body.reason).to.equal('entity_required');
      if (/takes no entity/.test(res.body.error)) expect(res.body.reason).to.equal('entity_not_taken');
    };
    await bad(add('a1', 'ai_requests', 1), 409, /^entity: ai_requests keeps its usage per entity; name the entity/);
    await bad(add('a1', 'ai_requests', 1, 'ghost'), 404, /Entity ghost under account a1/);
    await bad(add('a1', 'api_calls', 1, 'u1'), 409, /api_calls keeps its usage per account .*takes no entity/);
    // Another account's entity is not this one's.
    await register('a2', 'v1');
    await bad(add('a1', 'ai_requests', 1, 'v1'), 404, /Entity v1 under account a1/);
    await bad(get(`${base}/namespaces/a1/usage/ai_requests`, app.api_key), 409, /name the entity/);
    await bad(get(`${base}/namespaces/a1/usage/api_calls?entity=u1`, app.api_key), 409, /takes no entity/);
    await bad(get(`${base}/namespaces/a1/usage/ai_requests?entity=v1`, app.api_key), 404, /Entity v1/);
    await bad(
      post(`${base}/namespaces/a1/usage/ai_requests/reservations`, app.api_key, { amount: 1 }),
      409,
      /name the entity/,
    );
    const [rows] = await sql<{ n: string }>(
      testEnv().deps.orm.em.fork(),
      `select count(*) as n from usage_counters where app_id = $1 and entitlement_id = 'ai_requests'`,
      [app.id],
    );
    expect(Number(rows.n), 'nothing was counted').to.equal(0);
  });

  it('threshold webhooks name the entity whose counter crossed (single calls and batch ingest)', async () => {
    await register('a1', 'u1');
    await register('a1', 'u2');
    const r = await startReceiver();
    try {
      const ep = await post(`${base}/webhooks`, app.api_key, { url: r.url, events: ['usage.limit_reached'] });
      expect(ep.status, ep.text).to.equal(201);
      expect((await add('a1', 'ai_requests', 10, 'u1')).status).to.equal(200);
      const batch = await ingest([{ id: 't1', account: 'a1', entitlement: 'ai_requests', amount: 10, entity: 'u2' }]);
      expect(batch[0]).to.include({ status: 'applied', count: 10 });
      const events = (await get(`${base}/events?type=usage.limit_reached`, app.api_key)).body.data as {
        data: { object: { entity: string | null; usage: number; max: number } };
      }[];
      expect(events.map((e) => e.data.object.entity).sort()).to.deep.equal(['u1', 'u2']);
      for (const e of events) expect(e.data.object).to.include({ usage: 10, max: 10, entitlement_id: 'ai_requests' });
    } finally {
      await r.close();
    }
  });

  it('never passes one entity’s limit under many concurrent writers (single calls and batches)', async () => {
    await register('a1', 'u1');
    await register('a1', 'u2');
    const calls = await Promise.all(Array.from({ length: 30 }, () => add('a1', 'ai_requests', 1, 'u1')));
    expect(calls.filter((r) => r.status === 200)).to.have.length(10);
    expect(calls.filter((r) => r.status === 402)).to.have.length(20);
    expect(await count('a1', 'ai_requests', 'u1')).to.equal(10);
    // Six batches at once, each with 3 events on u2 (interleaved with another entity's events): 10 of 18 pass.
    const batches = await Promise.all(
      Array.from({ length: 6 }, (_, b) =>
        ingest(
          Array.from({ length: 3 }, (_, i) => [
            { id: `b${b}-${i}`, account: 'a1', entitlement: 'ai_requests', amount: 1, entity: 'u2' },
            { id: `b${b}-${i}-api`, account: 'a1', entitlement: 'api_calls', amount: 1 },
          ]).flat(),
        ),
      ),
    );
    const mine = batches.flat().filter((r) => !r.id.endsWith('-api'));
    expect(mine.filter((r) => r.status === 'applied')).to.have.length(10);
    expect(mine.filter((r) => r.status === 'blocked')).to.have.length(8);
    expect(await count('a1', 'ai_requests', 'u2')).to.equal(10);
    expect(await count('a1', 'ai_requests', 'u1')).to.equal(10);
    expect((await get(`${base}/namespaces/a1/usage/api_calls`, app.api_key)).body.count).to.equal(18);
  });

  it('ingests events with entities: per-entity counters and balances move, bad entities are errors of their own', async () => {
    await register('a1', 'u1');
    await register('a1', 'u2');
    await register('a2', 'v1');
    const results = await ingest([
      { id: 'e1', account: 'a1', entitlement: 'ai_requests', amount: 9, entity: 'u1' },
      { id: 'e2', account: 'a1', entitlement: 'ai_requests', amount: 2, entity: 'u1' },
      { id: 'e3', account: 'a1', entitlement: 'ai_requests', amount: 2, entity: 'u2' },
      { id: 'e4', account: 'a1', entitlement: 'chat', amount: 30, entity: 'u1' },
      { id: 'e5', account: 'a1', entitlement: 'chat', amount: 480, entity: 'u1' },
      { id: 'e6', account: 'a1', entitlement: 'chat', amount: 5, entity: 'u2' },
      { id: 'e7', account: 'a1', entitlement: 'ai_requests', amount: 1 },
      { id: 'e8', account: 'a1', entitlement: 'chat', amount: 1 },
      { id: 'e9', account: 'a1', entitlement: 'api_calls', amount: 1, entity: 'u1' },
      { id: 'e10', account: 'a1', entitlement: 'ai_requests', amount: 1, entity: 'ghost' },
      { id: 'e11', account: 'a1', entitlement: 'ai_requests', amount: 1, entity: 'v1' },
      { id: 'e12', account: 'a1', entitlement: 'ai_requests', amount: -4, entity: 'u1' },
      { id: 'e13', account: 'a1', entitlement: 'chat', amount: -10, entity: 'u1' },
      { id: 'e14', account: 'a1', entitlement: 'seats', amount: 1 },
    ]);
    const by = Object.fromEntries(results.map((r) => [r.id, r]));
    expect(by.e1).to.include({ status: 'applied', count: 9 });
    expect(by.e2).to.include({ status: 'blocked', count: 9 });
    expect(by.e2.error).to.match(/Limit reached: 9 of 10 used by entity u1/);
    expect(by.e3).to.include({ status: 'applied', count: 2 });
    expect(by.e4).to.include({ status: 'applied', count: 30 });
    expect(by.e5).to.include({ status: 'blocked' });
    expect(by.e5.error).to.match(/Credits exhausted: 480 team_credits needed, 470 left to entity u1/);
    expect(by.e6).to.include({ status: 'applied', count: 35 });
    expect(by.e7).to.include({ status: 'error' });
    expect(by.e7.error).to.match(/^entity: ai_requests keeps its usage per entity; name the entity/);
    expect(by.e8.error).to.match(/^entity: chat draws from pool team_credits, kept per entity; name the entity/);
    expect(by.e9.error).to.match(/^entity: api_calls is kept per account; it takes no entity/);
    expect(by.e10.error).to.equal('Entity ghost under account a1 not found');
    expect(by.e11.error).to.equal('Entity v1 under account a1 not found');
    expect(by.e12).to.include({ status: 'applied', count: 5 });
    expect(by.e13).to.include({ status: 'applied', count: 25 });
    expect(by.e14.error).to.match(/counts the entities/);
    expect(await count('a1', 'ai_requests', 'u1')).to.equal(5);
    expect(await count('a1', 'ai_requests', 'u2')).to.equal(2);
    // chat's counter is the account's (the feature is kept per account); the balances are each entity's.
    expect((await get(`${base}/namespaces/a1/usage/chat`, app.api_key)).body.count).to.equal(25);
    expect(await balance('a1', 'u1')).to.equal(480);
    expect(await balance('a1', 'u2')).to.equal(495);
    await creditsAddUp(app.id);
    const ledger = await get(`${base}/namespaces/a1/credits/ledger?entity=u1`, app.api_key);
    expect(ledger.status, ledger.text).to.equal(200);
    const kinds = (ledger.body.data as { kind: string; amount: number; entity: string }[]).map((l) => [
      l.kind,
      l.amount,
      l.entity,
    ]);
    expect(kinds).to.deep.include.members([
      ['debit', -30, 'u1'],
      ['refund', 10, 'u1'],
    ]);
    // Nothing stray: no account-own counter of the per-entity feature, no account-own balance of the per-entity pool.
    const [stray] = await sql<{ c: string; b: string }>(
      testEnv().deps.orm.em.fork(),
      `select (select count(*) from usage_counters where app_id = $1 and entitlement_id = 'ai_requests'
                 and entity_id = '') as c,
              (select count(*) from credit_balances where app_id = $1 and pool_id = 'team_credits'
                 and entity_id = '') as b`,
      [app.id],
    );
    expect([Number(stray.c), Number(stray.b)]).to.deep.equal([0, 0]);
    // A re-sent event is a duplicate and changes nothing.
    const again = await ingest([{ id: 'e1', account: 'a1', entitlement: 'ai_requests', amount: 9, entity: 'u1' }]);
    expect(again[0]).to.include({ status: 'applied', count: 9, duplicate: true });
    expect(await count('a1', 'ai_requests', 'u1')).to.equal(5);
  });

  it('keeps tenants apart: another app cannot reach these entities, a token reads only its own account', async () => {
    await register('a1', 'u1');
    expect((await add('a1', 'ai_requests', 3, 'u1')).status).to.equal(200);
    const other = await seededApp({ accounts: [{ id: 'a1', plan: 'pro' }] });
    // The other app's key on this app's routes: 401. Through its own app, its a1 has no u1.
    expect((await get(`${base}/namespaces/a1/usage/ai_requests?entity=u1`, other.app.api_key)).status).to.equal(401);
    expect((await get(`${base}/namespaces/a1/plan?entity=u1`, other.app.api_key)).status).to.equal(401);
    expect((await get(`${other.base}/namespaces/a1/plan?entity=u1`, other.app.api_key)).status).to.equal(404);
    const theirs = await post(`/apps/${other.app.id}/usage/events`, other.app.api_key, {
      events: [{ id: 'x1', account: 'a1', entitlement: 'api_calls', amount: 1, entity: 'u1' }],
    });
    expect(theirs.status, theirs.text).to.equal(200);
    expect(theirs.body.results[0].status).to.equal('error');
    // An account token reads its own entity's access, not another account's.
    const token = (await post(`${base}/namespaces/a1/token`, app.api_key, {})).body.token as string;
    const mine = await get(`${base}/namespaces/a1/plan?entity=u1`, token);
    expect(mine.status, mine.text).to.equal(200);
    expect(mine.body.entitlements.find((e: { id: string }) => e.id === 'ai_requests')).to.include({ usage: 3 });
    expect((await get(`${base}/namespaces/a2/plan?entity=u1`, token)).status).to.equal(401);
    expect(await count('a1', 'ai_requests', 'u1')).to.equal(3);
  });
});
