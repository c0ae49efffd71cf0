import { expect } from 'chai';
import { SecretClient, type LocalEvaluator } from '@offerkit/sdk';
import { createTestApp, type TestApp } from '../helpers/factories.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

/** A small seeded generator (mulberry32): the same seed makes the same catalogs, accounts and changes. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)],
    chance: (p: number) => next() < p,
  };
}

const SEED = Number(process.env.LOCAL_SEED ?? 44);
const ENTS = ['u1', 'u2', 'u3', 'b1', 'b2'];
const usageEnt = (e: string) => e.startsWith('u');

describe('local evaluation (client.local())', function () {
  this.timeout(40_000);
  let app: TestApp;
  let client: SecretClient;
  let local: LocalEvaluator | null = null;
  beforeEach(async () => {
    app = await createTestApp();
    client = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: testEnv().baseUrl });
  });
  afterEach(async () => {
    await local?.close();
    local = null;
  });

  /** Every account's access and every check, from memory and from the API, until they agree (or 10 s). */
  async function agree(accounts: string[]) {
    let last = '';
    await eventually(async () => {
      for (const id of accounts) {
        const api = await client.access.getPrivate(id);
        const mine = local!.access(id);
        if (JSON.stringify(mine) !== JSON.stringify(api)) {
          last = `${id}: ${JSON.stringify(mine)} != ${JSON.stringify(api)}`;
          return false;
        }
        for (const e of ENTS) {
          const can = api.entitlements.find((x) => x.id === e)?.can ?? false;
          if (local!.can(id, e) !== can) return false;
        }
      }
      return true;
    }, 10_000).catch(() => {
      throw new Error(`local and API differ (seed ${SEED}): ${last}`);
    });
  }

  it('answers as the API does over random catalogs, accounts and changes (seeded)', async () => {
    const r = rng(SEED);
    for (const e of ENTS)
      await client.entitlements.create({ id: e, type: usageEnt(e) ? 'usage' : 'boolean', name: e.toUpperCase() });
    for (const a of ['x1', 'x2']) await client.addons.create({ id: a, name: a });
    const plans = ['p1', 'p2', 'p3'];
    for (const p of plans) {
      await client.plans.create({ id: p, name: p, ...(p === 'p1' ? { isFree: true } : {}) });
      for (const e of ENTS)
        if (r.chance(0.6)) await client.plans.attachEntitlement(p, { id: e, max: r.chance(0.2) ? null : r.int(8) });
      if (r.chance(0.5)) await client.plans.attachAddon(p, { id: r.pick(['x1', 'x2']) });
    }
    for (const i of ['i1', 'i2']) {
      await client.incentives.create({ id: i, name: i });
      for (const e of ENTS) if (r.chance(0.4)) await client.incentives.attachEntitlement(i, { id: e, max: r.int(12) });
    }
    const accounts = Array.from({ length: 10 }, (_, n) => `acc${n}`);
    for (const id of accounts) {
      await client.accounts.create({
        id,
        plan: r.pick(plans),
        ...(r.chance(0.3) ? { incentive: r.pick(['i1', 'i2']) } : {}),
      });
      for (const e of ENTS.filter(usageEnt))
        if (r.chance(0.5)) await client.usage.addAmount(id, e, { amount: r.int(9) }).catch(() => null);
    }
    local = client.local();
    await local.ready();
    for (const id of accounts) await local.load(id);
    await agree(accounts);
    // Changes through every kind of record, then the same comparison.
    for (let step = 0; step < 25; step++) {
      const id = r.pick(accounts);
      const op = r.int(7);
      const e = r.pick(ENTS);
      const ignore = () => null;
      if (op === 0) await client.accounts.update(id, { plan: r.pick(plans) });
      else if (op === 1)
        await client.usage.addAmount(id, r.pick(['u1', 'u2', 'u3']), { amount: r.int(5) }).catch(ignore);
      else if (op === 2) await client.plans.setEntitlementLimit(r.pick(plans), e, { max: r.int(10) }).catch(ignore);
      else if (op === 3)
        await (r.chance(0.5)
          ? client.accounts.update(id, { incentive: r.pick(['i1', 'i2']) })
          : client.accounts.removeIncentive(id).catch(ignore));
      else if (op === 4) await client.accounts.grantAddon(id, { id: r.pick(['x1', 'x2']) }).catch(ignore);
      else if (op === 5) await client.plans.attachEntitlement(r.pick(plans), { id: e, max: r.int(6) }).catch(ignore);
      else await client.usage.addAmount(id, r.pick(['u1', 'u2', 'u3']), { amount: -r.int(3) }).catch(ignore);
    }
    await agree(accounts);
  });

  it('counts its own tracked usage at once, and each add once on the API', async () => {
    await client.entitlements.create({ id: 'calls', type: 'usage', name: 'Calls' });
    await client.plans.create({ id: 'free', name: 'Free', isFree: true });
    await client.plans.attachEntitlement('free', { id: 'calls', max: 3 });
    await client.accounts.create({ id: 'ada' });
    local = client.local();
    await local.ready();
    await local.load('ada');
    expect(local.can('ada', 'calls')).to.equal(true);
    for (let i = 0; i < 3; i++) await local.track('ada', 'calls');
    // Counted here before the API answers.
    expect(local.can('ada', 'calls')).to.equal(false);
    await local.flush();
    expect((await client.usage.get('ada', 'calls')).count).to.equal(3);
    expect(local.access('ada')!.entitlements[0]).to.include({ usage: 3, left: 0, can: false });
  });

  it('an account never seen is answered by the per-entitlement policy, then from memory', async () => {
    await client.entitlements.create({ id: 'calls', type: 'usage', name: 'Calls' });
    await client.entitlements.create({ id: 'sso', type: 'boolean', name: 'SSO' });
    await client.plans.create({ id: 'free', name: 'Free', isFree: true });
    await client.accounts.create({ id: 'bob' });
    local = client.local({ unknown: { calls: true, default: false } });
    await local.ready();
    expect(local.can('bob', 'calls')).to.equal(true);
    expect(local.can('bob', 'sso')).to.equal(false);
    // Loaded in the background by that first question: now the plan (without `calls`) answers.
    await eventually(async () => local!.access('bob') !== null);
    expect(local.can('bob', 'calls')).to.equal(false);
    expect(local.can('nobody', 'calls')).to.equal(true);
    await eventually(async () => local!.can('nobody', 'calls') === false);
  });
  it('a feature that draws from a credits pool: can only while the pool covers one unit, as the API says', async () => {
    await client.entitlements.create({ id: 'credits', type: 'credits', name: 'AI credits' });
    await client.entitlements.create({
      id: 'premium',
      type: 'usage',
      name: 'Premium',
      credits: { pool: 'credits', cost: 10 },
    });
    await client.plans.create({ id: 'free', name: 'Free', isFree: true });
    await client.plans.attachEntitlement('free', { id: 'premium', max: null });
    await client.accounts.create({ id: 'cy' });
    local = client.local();
    await local.ready();
    await local.load('cy');
    // No limit on the feature, but no credits: the API refuses, and so does memory.
    expect((await client.access.getPrivate('cy')).entitlements.find((e) => e.id === 'premium')?.can).to.equal(false);
    expect(local.can('cy', 'premium')).to.equal(false);
    // Nine credits do not cover a unit that costs ten; ten do. The grants reach memory as the stream's `credits`
    // events (nobody asks the API here).
    await client.credits.grant('cy', { pool: 'credits', amount: 9 });
    await eventually(async () => local!.access('cy')!.credits[0]?.balance === 9);
    expect(local.can('cy', 'premium')).to.equal(false);
    await client.credits.grant('cy', { pool: 'credits', amount: 1 });
    await eventually(async () => local!.can('cy', 'premium'));
    expect(local.stats.events).to.be.greaterThan(0);
    // A draw (its feature's usage event) spends the pool: memory follows.
    await local.track('cy', 'premium');
    await local.flush();
    await eventually(async () => local!.access('cy')!.credits[0]?.balance === 0);
    expect(local.can('cy', 'premium')).to.equal(false);
    await agree(['cy']);
  });
});
