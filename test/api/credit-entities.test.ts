// Entities under an account (issue 42 item 5): registration taking seats of the entitlement that counts entities, a
// per-entity credits pool (grants, draws, balances, the ledger), the 409/404 rules, tenancy, and concurrency against
// the real PostgreSQL.
import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import { creditsAddUp, creditsCatalog } from '../helpers/credits.js';
import { createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { call, del, get, patch, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const DAY = 86_400_000;

describe('credit entities: seats that count entities and per-entity balances', function () {
  this.timeout(60_000);
  let app: TestApp;
  let base: string;

  const ok = async (path: string, body: unknown, status = 201) => {
    const res = await post(`${base}${path}`, app.api_key, body);
    expect(res.status, `${path} ${res.text}`).to.equal(status);
    return res.body;
  };
  const register = (account: string, id: string, name?: string) =>
    post(`${base}/namespaces/${account}/entities`, app.api_key, name === undefined ? { id } : { id, name });
  const entityCredits = async (account: string, entity: string) => {
    const res = await get(`${base}/namespaces/${account}/credits?entity=${encodeURIComponent(entity)}`, app.api_key);
    expect(res.status, res.text).to.equal(200);
    return res.body.data.find((p: { pool: string }) => p.pool === 'team_credits');
  };

  /**
   * The team plan of the docs' example: 10 seats (blocking) counting entities, a pool kept per entity granting 500 a
   * month to each, `chat` drawing 1 credit a message; `a1` and `a2` on it. The `credits` pool of the shared set-up
   * is kept per account (on pro).
   */
  beforeEach(async () => {
    ({ app, base } = await seededApp());
    await creditsCatalog(app, base);
    const seats = await patch(`${base}/entitlements/seats`, app.api_key, { counts: 'entities' });
    expect(seats.status, seats.text).to.equal(200);
    expect(seats.body.counts).to.equal('entities');
    const pool = await ok('/entitlements', {
      id: 'team_credits',
      type: 'credits',
      name: 'Team credits',
      credits: { per: 'entity' },
    });
    expect(pool.credits).to.deep.equal({ rollover: 'none', per: 'entity' });
    await ok('/entitlements', { id: 'chat', type: 'usage', name: 'Chat', credits: { pool: 'team_credits', cost: 1 } });
    await ok('/plans', { id: 'team', name: 'Team', pricingCard: { title: 'Team', monthlyPrice: 50 } });
    await ok('/plans/team/entitlements', { id: 'seats', max: 10 });
    await ok('/plans/team/entitlements', { id: 'team_credits', max: 500 });
    await ok('/plans/team/entitlements', { id: 'chat', max: null });
    await createAccount(app, { id: 'a1', plan: 'team' });
    await createAccount(app, { id: 'a2', plan: 'team' });
  });

  it('registers entities into seats: the 11th of 10 is a 402, a delete frees its seat, usage calls cannot move it', async () => {
    for (let i = 1; i <= 10; i++) {
      const res = await register('a1', `u${i}`, `User ${i}`);
      expect(res.status, res.text).to.equal(201);
      expect(res.body).to.include({ id: `u${i}`, name: `User ${i}` });
    }
    const seats = async () => (await get(`${base}/namespaces/a1/usage/seats`, app.api_key)).body.count;
    expect(await seats()).to.equal(10);
    const eleventh = await register('a1', 'u11');
    expect(eleventh.status, eleventh.text).to.equal(402);
    expect(eleventh.body.error).to.equal('limit_reached');
    expect(eleventh.body.entitlement).to.include({ id: 'seats', usage: 10, max: 10 });
    expect(await seats()).to.equal(10);
    const list = (await get(`${base}/namespaces/a1/entities`, app.api_key)).body.data as { id: string }[];
    expect(list.map((e) => e.id)).to.have.members(['u1', 'u2', 'u3', 'u4', 'u5', 'u6', 'u7', 'u8', 'u9', 'u10']);
    expect(list.map((e) => e.id)).to.not.include('u11');
    // A second registration of the same id: 409, the seat untouched.
    expect((await register('a1', 'u1')).status).to.equal(409);
    // Delete gives the seat back; then the 11th fits. Another account's seats are its own.
    const gone = await del(`${base}/namespaces/a1/entities/u3`, app.api_key);
    expect(gone.status, gone.text).to.equal(200);
    expect(gone.body.id).to.equal('u3');
    expect(await seats()).to.equal(9);
    expect((await del(`${base}/namespaces/a1/entities/u3`, app.api_key)).status).to.equal(404);
    expect((await register('a1', 'u11')).status).to.equal(201);
    expect(await seats()).to.equal(10);
    expect((await register('a2', 'u1')).status).to.equal(201);
    // The seats counter moves only by entities: usage calls on it are a 400 and move nothing.
    const add = await post(`${base}/namespaces/a1/usage/seats/add`, app.api_key);
    expect(add.status, add.text).to.equal(400);
    expect(add.body.error).to.match(/counts the entities/);
    const sub = await post(`${base}/namespaces/a1/usage/seats/amount`, app.api_key, { amount: -5 });
    expect(sub.status, sub.text).to.equal(400);
    expect(await seats()).to.equal(10);
    // Unknown account: 404 on every door.
    expect((await register('nobody', 'u1')).status).to.equal(404);
    expect((await get(`${base}/namespaces/nobody/entities`, app.api_key)).status).to.equal(404);
    expect((await del(`${base}/namespaces/nobody/entities/u1`, app.api_key)).status).to.equal(404);
    // Only one entitlement of the app counts entities.
    const second = await patch(`${base}/entitlements/api_calls`, app.api_key, { counts: 'entities' });
    expect(second.status, second.text).to.equal(409);
    expect(second.body.error).to.match(/seats already counts/);
  });

  it('honours an Idempotency-Key on registration: a retry registers once and answers the same', async () => {
    const send = () =>
      call('POST', `${base}/namespaces/a1/entities`, {
        token: app.api_key,
        body: { id: 'u1', name: 'Ada' },
        headers: { 'Idempotency-Key': 'reg-u1' },
      });
    const first = await send();
    expect(first.status, first.text).to.equal(201);
    const again = await send();
    expect(again.status, again.text).to.equal(201);
    expect(again.body).to.deep.equal(first.body);
    expect((await get(`${base}/namespaces/a1/usage/seats`, app.api_key)).body.count).to.equal(1);
  });

  it('keeps one balance per entity: grants, draws, the 402, reads and the ledger name the entity', async () => {
    expect((await register('a1', 'u1', 'Ada')).status).to.equal(201);
    expect((await register('a1', 'u2', 'Bob')).status).to.equal(201);
    // Registration gave each the plan's 500 for the period under way.
    expect((await entityCredits('a1', 'u1')).balance).to.equal(500);
    const u1 = await entityCredits('a1', 'u1');
    expect(u1).to.include({ per: 'entity', entity: 'u1', granted_per_period: 500 });
    expect(u1.grants).to.have.length(1);
    expect(u1.grants[0]).to.include({ source: 'plan', amount: 500, entity: 'u1' });

    // A draw takes from the named entity only.
    const drew = await post(`${base}/namespaces/a1/usage/chat/amount`, app.api_key, { amount: 30, entity: 'u1' });
    expect(drew.status, drew.text).to.equal(200);
    const one = await call('POST', `${base}/namespaces/a1/usage/chat/add?entity=u1`, { token: app.api_key });
    expect(one.status, one.text).to.equal(200);
    expect((await entityCredits('a1', 'u1')).balance).to.equal(469);
    expect((await entityCredits('a1', 'u2')).balance).to.equal(500);

    // A draw past the entity's balance: 402 naming the pool, the entity and its balance; nothing moves.
    const count = (await get(`${base}/namespaces/a1/usage/chat`, app.api_key)).body.count;
    const short = await post(`${base}/namespaces/a1/usage/chat/amount`, app.api_key, { amount: 470, entity: 'u1' });
    expect(short.status, short.text).to.equal(402);
    expect(short.body).to.include({ error: 'credits_exhausted', entity: 'u1', need: 470 });
    expect(short.body.pool).to.deep.equal({ id: 'team_credits', name: 'Team credits', balance: 469 });
    expect((await get(`${base}/namespaces/a1/usage/chat`, app.api_key)).body.count).to.equal(count);
    expect((await entityCredits('a1', 'u1')).balance).to.equal(469);
    // u2 can still draw the same amount from its own balance.
    const u2draw = await post(`${base}/namespaces/a1/usage/chat/amount`, app.api_key, { amount: 470, entity: 'u2' });
    expect(u2draw.status, u2draw.text).to.equal(200);
    expect((await entityCredits('a1', 'u2')).balance).to.equal(30);

    // A grant to one entity, once per Idempotency-Key.
    const grant = () =>
      call('POST', `${base}/namespaces/a1/credits/grants`, {
        token: app.api_key,
        body: { pool: 'team_credits', amount: 100, entity: 'u2', reason: 'support' },
        headers: { 'Idempotency-Key': 'g-u2' },
      });
    const g = await grant();
    expect(g.status, g.text).to.equal(201);
    expect(g.body).to.include({ pool: 'team_credits', entity: 'u2', amount: 100, balance: 130 });
    expect((await grant()).body.id).to.equal(g.body.id);
    expect((await entityCredits('a1', 'u2')).balance).to.equal(130);
    // A refund (negative amount) goes back to the entity named.
    const back = await post(`${base}/namespaces/a1/usage/chat/amount`, app.api_key, { amount: -20, entity: 'u2' });
    expect(back.status, back.text).to.equal(200);
    expect((await entityCredits('a1', 'u2')).balance).to.equal(150);

    // Without `entity`: the pool lists each entity; its balance is their sum. Per-account pools are unchanged.
    const all = (await get(`${base}/namespaces/a1/credits`, app.api_key)).body.data;
    const team = all.find((p: { pool: string }) => p.pool === 'team_credits');
    expect(team).to.include({ per: 'entity', balance: 619, held: 0 });
    expect(team.entities).to.deep.equal([
      { entity: 'u1', name: 'Ada', registered: true, balance: 469, held: 0 },
      { entity: 'u2', name: 'Bob', registered: true, balance: 150, held: 0 },
    ]);
    // Effective access lists the pool as per entity.
    const access = (await get(`${base}/namespaces/a1/plan`, app.api_key)).body;
    expect(access.credits.find((p: { id: string }) => p.id === 'team_credits')).to.include({ per_entity: true });

    // The ledger narrows to one entity, each row naming it.
    const ledger = (await get(`${base}/namespaces/a1/credits/ledger?entity=u2`, app.api_key)).body.data as {
      entity: string;
      kind: string;
      amount: number;
    }[];
    expect(ledger.every((r) => r.entity === 'u2')).to.equal(true);
    expect(ledger.map((r) => [r.kind, r.amount])).to.deep.equal([
      ['refund', 20],
      ['grant', 100],
      ['debit', -470],
      ['grant', 500],
    ]);
    const sums = await creditsAddUp(app.id);
    expect(sums.a1.balance).to.be.a('number');
  });

  it('credits.granted, credits.low and credits.depleted name the entity', async () => {
    const hook = await post(`${base}/webhooks`, app.api_key, {
      url: 'http://127.0.0.1:9/hook',
      events: ['credits.granted', 'credits.low', 'credits.depleted'],
    });
    expect(hook.status, hook.text).to.equal(201);
    expect((await register('a1', 'u1')).status).to.equal(201);
    const low = await post(`${base}/namespaces/a1/usage/chat/amount`, app.api_key, { amount: 460, entity: 'u1' });
    expect(low.status, low.text).to.equal(200);
    const empty = await post(`${base}/namespaces/a1/usage/chat/amount`, app.api_key, { amount: 40, entity: 'u1' });
    expect(empty.status, empty.text).to.equal(200);
    const rows = await sql<{ type: string; data: { object: Record<string, unknown> } }>(
      testEnv().deps.orm.em.fork(),
      `select type, data from events where app_id = $1 and type like 'credits.%' order by created_at, id`,
      [app.id],
    );
    expect(rows.map((r) => r.type)).to.deep.equal(['credits.granted', 'credits.low', 'credits.depleted']);
    for (const r of rows) expect(r.data.object).to.include({ account_id: 'a1', entity: 'u1', pool: 'team_credits' });
    expect(rows[2].data.object).to.include({ balance: 0, previous_balance: 40 });
  });

  it('reservations hold and commit the named entity’s balance', async () => {
    expect((await register('a1', 'u1')).status).to.equal(201);
    expect((await register('a1', 'u2')).status).to.equal(201);
    const r = await post(`${base}/namespaces/a1/usage/chat/reservations`, app.api_key, { amount: 300, entity: 'u1' });
    expect(r.status, r.text).to.equal(201);
    await creditsAddUp(app.id); // held is what the open reservations of each entity hold
    expect(await entityCredits('a1', 'u1')).to.include({ balance: 500, held: 300 });
    expect(await entityCredits('a1', 'u2')).to.include({ balance: 500, held: 0 });
    // u1 has 200 drawable left; u2 its own 500.
    const over = await post(`${base}/namespaces/a1/usage/chat/amount`, app.api_key, { amount: 201, entity: 'u1' });
    expect(over.status, over.text).to.equal(402);
    expect(over.body.pool.balance).to.equal(200);
    const u2 = await post(`${base}/namespaces/a1/usage/chat/reservations`, app.api_key, { amount: 500, entity: 'u2' });
    expect(u2.status, u2.text).to.equal(201);
    const short = await post(`${base}/namespaces/a1/usage/chat/reservations`, app.api_key, {
      amount: 201,
      entity: 'u1',
    });
    expect(short.status, short.text).to.equal(402);
    expect(short.body).to.include({ error: 'credits_exhausted', entity: 'u1' });
    const done = await post(`${base}/namespaces/a1/reservations/${r.body.id}/commit`, app.api_key, { amount: 250 });
    expect(done.status, done.text).to.equal(200);
    expect((await entityCredits('a1', 'u1')).balance).to.equal(250);
    expect((await entityCredits('a1', 'u1')).held).to.equal(0);
    const freed = await post(`${base}/namespaces/a1/reservations/${u2.body.id}/release`, app.api_key);
    expect(freed.status, freed.text).to.equal(200);
    expect((await entityCredits('a1', 'u2')).balance).to.equal(500);
    const ledger = (await get(`${base}/namespaces/a1/credits/ledger?entity=u1`, app.api_key)).body.data;
    expect(ledger[0]).to.include({ kind: 'debit', amount: -250, entity: 'u1', feature: 'chat' });
    await creditsAddUp(app.id);
  });

  it('answers 409 entity_required / entity_not_taken for a missing or misplaced entity, 404 for one not registered', async () => {
    expect((await register('a1', 'u1')).status).to.equal(201);
    await createAccount(app, { id: 'p1', plan: 'pro' });
    const bad = async (
      res: Promise<{ status: number; body: { error: string; reason?: string } }>,
      status: number,
      error: RegExp,
    ) => {
      const r = await res;
      expect(r.status, JSON.stringify(r.body)).to.equal(status);
      expect(r.body.error).to.match(error);
      // The conflict says which rule: a schema-valid call the entitlement's shape refuses (not a malformed one).
      if (/name the entity/.test(r.body.error)) expect(r.body.reason).to.equal('entity_required');
      if (/takes no entity/.test(r.body.error)) expect(r.body.reason).to.equal('entity_not_taken');
    };
    // Draws.
    await bad(post(`${base}/namespaces/a1/usage/chat/amount`, app.api_key, { amount: 1 }), 409, /name the entity/);
    await bad(post(`${base}/namespaces/a1/usage/chat/add`, app.api_key), 409, /name the entity/);
    await bad(
      post(`${base}/namespaces/a1/usage/chat/amount`, app.api_key, { amount: 1, entity: 'ghost' }),
      404,
      /Entity ghost under account a1 not found/,
    );
    // u1 is a1's: under a2 it is not registered.
    await bad(
      post(`${base}/namespaces/a2/usage/chat/amount`, app.api_key, { amount: 1, entity: 'u1' }),
      404,
      /Entity u1 under account a2/,
    );
    await bad(
      post(`${base}/namespaces/p1/usage/premium/amount`, app.api_key, { amount: 1, entity: 'u1' }),
      409,
      /kept per account; it takes no entity/,
    );
    await bad(
      post(`${base}/namespaces/a1/usage/api_calls/amount`, app.api_key, { amount: 1, entity: 'u1' }),
      409,
      /draws from no per-entity pool/,
    );
    // Grants.
    const grant = (body: Record<string, unknown>) => post(`${base}/namespaces/a1/credits/grants`, app.api_key, body);
    await bad(grant({ pool: 'team_credits', amount: 5 }), 409, /kept per entity; name the entity/);
    await bad(grant({ pool: 'team_credits', amount: 5, entity: 'ghost' }), 404, /Entity ghost under account a1/);
    await bad(grant({ pool: 'credits', amount: 5, entity: 'u1' }), 409, /kept per account; it takes no entity/);
    // Reservations and batch ingest events follow the same rules: refused by name, nothing moves.
    await bad(
      post(`${base}/namespaces/a1/usage/chat/reservations`, app.api_key, { amount: 1 }),
      409,
      /kept per entity; name the entity/,
    );
    await bad(
      post(`${base}/namespaces/a1/usage/chat/reservations`, app.api_key, { amount: 1, entity: 'ghost' }),
      404,
      /Entity ghost under account a1/,
    );
    await bad(
      post(`${base}/namespaces/p1/usage/premium/reservations`, app.api_key, { amount: 1, entity: 'u1' }),
      409,
      /kept per account; it takes no entity/,
    );
    await bad(post(`${base}/namespaces/a1/usage/seats/reservations`, app.api_key, { amount: 1 }), 400, /counts/);
    const ingest = await post(`/apps/${app.id}/usage/events`, app.api_key, {
      events: [
        { id: 'e1', account: 'a1', entitlement: 'chat', amount: 1 },
        { id: 'e2', account: 'a1', entitlement: 'api_calls', amount: 2 },
        { id: 'e3', account: 'a1', entitlement: 'seats', amount: 1 },
      ],
    });
    expect(ingest.status, ingest.text).to.equal(200);
    expect(ingest.body.results.map((r: { status: string }) => r.status)).to.deep.equal(['error', 'applied', 'error']);
    expect(ingest.body.results[0].error).to.match(/kept per entity; name the entity/);
    expect(ingest.body.results[1]).to.include({ id: 'e2', count: 2 });
    expect(ingest.body.results[2].error).to.match(/counts the entities/);
    expect((await get(`${base}/namespaces/a1/usage/seats`, app.api_key)).body.count).to.equal(1);
    // Reads.
    expect((await get(`${base}/namespaces/a1/credits?entity=ghost`, app.api_key)).status).to.equal(404);
    expect((await get(`${base}/namespaces/a1/credits/ledger?entity=ghost`, app.api_key)).status).to.equal(404);
    // Nothing moved: u1 holds its plan grant only, no stray balance of the account's own in the per-entity pool.
    const [rows] = await sql<{ n: string }>(
      testEnv().deps.orm.em.fork(),
      `select count(*) as n from credit_balances where app_id = $1 and pool_id = 'team_credits' and entity_id = ''`,
      [app.id],
    );
    expect(Number(rows.n)).to.equal(0);
    expect((await entityCredits('a1', 'u1')).balance).to.equal(500);
    // A pool switched per entity under existing balances, or packs on a per-entity pool: refused.
    await post(`${base}/namespaces/p1/credits/grants`, app.api_key, { pool: 'credits', amount: 5 });
    const switched = await patch(`${base}/entitlements/credits`, app.api_key, { credits: { per: 'entity' } });
    expect(switched.status, switched.text).to.equal(409);
    const pack = await post(`${base}/credit-packs`, app.api_key, {
      id: 'p',
      pool: 'team_credits',
      amount: 10,
      price: 1,
    });
    expect(pack.status, pack.text).to.equal(409);
    expect(pack.body.error).to.match(/per-account pools only/);
  });

  it('keeps tenants apart: another app’s key or account, another account’s token', async () => {
    expect((await register('a1', 'u1')).status).to.equal(201);
    const other = await seededApp({ accounts: [{ id: 'a1', plan: 'pro' }] });
    // The other app's key on this app: not its app. Through its own app, a1 there has no u1.
    expect((await get(`${base}/namespaces/a1/entities`, other.app.api_key)).status).to.equal(401);
    expect((await post(`${base}/namespaces/a1/entities`, other.app.api_key, { id: 'x' })).status).to.equal(401);
    const theirs = await get(`${other.base}/namespaces/a1/entities`, other.app.api_key);
    expect(theirs.status, theirs.text).to.equal(200);
    expect(theirs.body.data).to.deep.equal([]);
    expect((await del(`${other.base}/namespaces/a1/entities/u1`, other.app.api_key)).status).to.equal(404);
    expect((await get(`${other.base}/namespaces/a2/entities`, other.app.api_key)).status).to.equal(404);
    // An account token reads its own account's entities and balances, not another's; it registers none.
    const token = (await post(`${base}/namespaces/a1/token`, app.api_key, {})).body.token as string;
    const mine = await get(`${base}/namespaces/a1/entities`, token);
    expect(mine.status, mine.text).to.equal(200);
    expect(mine.body.data.map((e: { id: string }) => e.id)).to.deep.equal(['u1']);
    expect((await get(`${base}/namespaces/a1/credits?entity=u1`, token)).status).to.equal(200);
    // Another account's routes, and the write routes (secret key only), are routes the token may not use: the
    // house's 401 for a valid credential on such a route (src/http/credentials.ts), never counted as a guess.
    expect((await get(`${base}/namespaces/a2/entities`, token)).status).to.equal(401);
    expect((await get(`${base}/namespaces/a2/credits?entity=u1`, token)).status).to.equal(401);
    expect((await post(`${base}/namespaces/a1/entities`, token, { id: 'u2' })).status).to.equal(401);
    expect((await del(`${base}/namespaces/a1/entities/u1`, token)).status).to.equal(401);
    expect((await get(`${base}/namespaces/a1/entities`, app.api_key)).body.data).to.have.length(1);
  });

  it('never takes an entity below zero under many parallel draws, nor passes the seats under parallel registrations', async () => {
    // 15 registrations at once for 10 seats: exactly 10 pass.
    const regs = await Promise.all(Array.from({ length: 15 }, (_, i) => register('a1', `p${i}`)));
    expect(regs.filter((r) => r.status === 201)).to.have.length(10);
    expect(regs.filter((r) => r.status === 402)).to.have.length(5);
    expect((await get(`${base}/namespaces/a1/usage/seats`, app.api_key)).body.count).to.equal(10);
    const [first] = regs.filter((r) => r.status === 201).map((r) => r.body.id as string);
    const others = regs.filter((r) => r.status === 201).map((r) => r.body.id as string);
    // 40 draws of 20 at once on one entity holding 500: exactly 25 pass, the balance ends at 0.
    const draws = await Promise.all(
      Array.from({ length: 40 }, () =>
        post(`${base}/namespaces/a1/usage/chat/amount`, app.api_key, { amount: 20, entity: first }),
      ),
    );
    expect(draws.filter((r) => r.status === 200)).to.have.length(25);
    expect(draws.filter((r) => r.status === 402)).to.have.length(15);
    expect((await entityCredits('a1', first)).balance).to.equal(0);
    // The other entities were not touched; every balance is its ledger's sum, none below zero.
    for (const id of others.filter((x) => x !== first)) expect((await entityCredits('a1', id)).balance).to.equal(500);
    await creditsAddUp(app.id);
    const [drift] = await sql<{ n: string }>(
      testEnv().deps.orm.em.fork(),
      `select count(*) as n from credit_balances b where b.app_id = $1 and b.balance <> (select coalesce(sum(amount), 0)
         from credit_ledger l where l.app_id = b.app_id and l.account_id = b.account_id and l.pool_id = b.pool_id
           and l.entity_id = b.entity_id)`,
      [app.id],
    );
    expect(Number(drift.n)).to.equal(0);
  });

  it('grants each registered entity its plan credits every month on the account’s dates (the test clock)', async () => {
    expect((await register('a1', 'u1')).status).to.equal(201);
    const first = (await entityCredits('a1', 'u1')).grants[0] as { expires_at: string };
    const clock = async () => Date.parse((await get(`${base}/test-clock`, app.api_key)).body.now);
    expect(Date.parse(first.expires_at) - (await clock())).to.be.within(27 * DAY, 32 * DAY);
    // A second entity mid-period gets the same period (same end).
    expect((await register('a1', 'u2')).status).to.equal(201);
    expect((await entityCredits('a1', 'u2')).grants[0].expires_at).to.equal(first.expires_at);
    await post(`${base}/namespaces/a1/usage/chat/amount`, app.api_key, { amount: 100, entity: 'u1' });
    // Past the period end: the old grants expire, the actor grants the next period to each entity.
    const moved = await post(`${base}/test-clock/advance`, app.api_key, {
      to: new Date(Date.parse(first.expires_at) + DAY).toISOString(),
    });
    expect(moved.status, moved.text).to.equal(200);
    for (const id of ['u1', 'u2'])
      await eventually(async () => {
        const c = await entityCredits('a1', id);
        return c.balance === 500 && c.grants.length === 1 && c.grants[0].expires_at !== first.expires_at;
      });
    // Deleted and registered again within the period: no second grant for it.
    const period = (await entityCredits('a1', 'u2')).grants[0].expires_at;
    expect((await del(`${base}/namespaces/a1/entities/u2`, app.api_key)).status).to.equal(200);
    expect((await register('a1', 'u2')).status).to.equal(201);
    const again = await entityCredits('a1', 'u2');
    expect(again.balance).to.equal(500);
    expect(again.grants.map((g: { expires_at: string }) => g.expires_at)).to.deep.equal([period]);
    await creditsAddUp(app.id);
  });
});
