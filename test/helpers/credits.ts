// Credits test set-up shared by the credits test files: a pool and two features drawing from it, and the ledger's
// invariants checked against the real PostgreSQL.
import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import type { TestApp } from './factories.js';
import { post } from './http.js';
import { testEnv } from './servers.js';

/** The pool `credits` and two features drawing from it: `basic` (1 credit a message), `premium` (10), on `pro`. */
export async function creditsCatalog(app: TestApp, base: string) {
  const ok = async (path: string, body: unknown) => {
    const res = await post(`${base}${path}`, app.api_key, body);
    expect(res.status, `${path} ${res.text}`).to.equal(201);
  };
  await ok('/entitlements', { id: 'credits', type: 'credits', name: 'AI credits' });
  await ok('/entitlements', {
    id: 'basic',
    type: 'usage',
    name: 'Basic messages',
    credits: { pool: 'credits', cost: 1 },
  });
  await ok('/entitlements', {
    id: 'premium',
    type: 'usage',
    name: 'Premium messages',
    credits: { pool: 'credits', cost: 10 },
  });
  await ok('/plans/pro/entitlements', { id: 'basic', max: null });
  await ok('/plans/pro/entitlements', { id: 'premium', max: null });
  await ok('/plans/pro/entitlements', { id: 'credits', max: 2000 });
}

/**
 * The invariants of every balance of the app: it is its ledger's sum, and its grants' remainders less what is not yet
 * allocated; `held` is what its open reservations hold. Answers the balances, by account.
 */
export async function creditsAddUp(appId: string) {
  const rows = await sql<{
    account_id: string;
    balance: string;
    held: string;
    ledger: string;
    grants: string;
    unallocated: string;
    holds: string;
  }>(
    testEnv().deps.orm.em.fork(),
    `select b.account_id, b.balance, b.held, b.unallocated,
            (select coalesce(sum(amount), 0) from credit_ledger l where l.app_id = b.app_id and l.account_id =
              b.account_id and l.pool_id = b.pool_id and l.entity_id = b.entity_id) as ledger,
            (select coalesce(sum(remaining), 0) from credit_grants g where g.app_id = b.app_id and g.account_id =
              b.account_id and g.pool_id = b.pool_id and g.entity_id = b.entity_id) as grants,
            (select coalesce(sum(r.amount * r.credit_cost), 0) from usage_reservations r where r.app_id = b.app_id
              and r.account_id = b.account_id and r.credit_pool_id = b.pool_id and r.entity_id = b.entity_id
              and r.status = 'held') as holds
       from credit_balances b where b.app_id = $1 order by b.account_id`,
    [appId],
  );
  for (const r of rows) {
    expect(Number(r.ledger), 'the balance is the ledger sum').to.equal(Number(r.balance));
    expect(Number(r.grants) - Number(r.unallocated), 'grants less unallocated').to.equal(Number(r.balance));
    expect(Number(r.held), 'held is what open reservations hold').to.equal(Number(r.holds));
    expect(Number(r.balance)).to.be.at.least(0);
  }
  return Object.fromEntries(rows.map((r) => [r.account_id, { balance: Number(r.balance), held: Number(r.held) }]));
}
