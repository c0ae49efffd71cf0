// The entity manager each request gets forks only when the request uses the ORM (src/db/lazy-em.ts): statements
// alone run on the shared connection, and anything else gets one fork, as before.
import { EntityManager } from '@mikro-orm/postgresql';
import { expect } from 'chai';
import { lazyFork } from '../../src/db/lazy-em.js';
import { prepared, sql } from '../../src/db/sql.js';
import { createTestApp, seededApp } from '../helpers/factories.js';
import { call } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

describe('the per-request entity manager forks on first ORM use (lazyFork)', () => {
  it('statements alone do not fork; the ORM forks once; instanceof and transactions work as on a fork', async () => {
    const root = testEnv().deps.orm.em;
    let forks = 0;
    const em = lazyFork(root, () => forks++);
    expect(em).to.be.instanceOf(EntityManager);
    expect(em.isInTransaction()).to.equal(false);
    expect(em.getTransactionContext()).to.equal(undefined);
    const [one] = await sql<{ n: number }>(em, 'select 1 as n');
    const [two] = await prepared<{ n: number }>(em, 'lazy_em_test', 'select $1::int as n', [2]);
    expect([one.n, two.n]).to.deep.equal([1, 2]);
    expect(forks, 'statements only').to.equal(0);

    const app = await createTestApp();
    const found = await em.getConnection().execute<{ id: string }[]>('select id from apps where id = ?', [app.id]);
    expect(found.map((r) => r.id)).to.deep.equal([app.id]);
    expect(forks).to.equal(0);

    // A transaction through it: statements inside see it, and a rollback undoes them.
    await em
      .transactional(async (t) => {
        expect(t.isInTransaction()).to.equal(true);
        await sql(t, 'update apps set name = $2 where id = $1', [app.id, 'renamed in a rolled-back transaction']);
        const [row] = await sql<{ name: string }>(t, 'select name from apps where id = $1', [app.id]);
        expect(row.name).to.equal('renamed in a rolled-back transaction');
        throw new Error('roll back');
      })
      .catch((err: Error) => expect(err.message).to.equal('roll back'));
    expect(forks, 'a transaction is ORM use').to.equal(1);
    const [after] = await sql<{ name: string }>(root.fork(), 'select name from apps where id = $1', [app.id]);
    expect(after.name).to.not.equal('renamed in a rolled-back transaction');

    // Once forked, every call goes to that one fork: its identity map holds what it loaded.
    em.clear();
    expect(em.getUnitOfWork().getIdentityMap().keys()).to.have.length(0);
    expect(forks).to.equal(1);
  });

  it('the hot routes (usage add, effective access) answer without a fork; a catalog read forks once', async () => {
    const { app } = await seededApp({ accounts: [{ id: 'lazy', plan: 'pro' }] });
    const root = testEnv().deps.orm.em;
    const fork = root.fork.bind(root);
    // Counts the forks made on the way through these routes' services (by the frames on the stack: other tests'
    // requests, the worker and the outbox fork the same root meanwhile).
    const forks = { hot: 0, catalog: 0 };
    root.fork = ((options) => {
      const stack = new Error().stack ?? '';
      if (/usage\.service|access\.service/.test(stack)) forks.hot++;
      if (stack.includes('listPlans')) forks.catalog++;
      return fork(options);
    }) as typeof root.fork;
    try {
      const add = await call('POST', `/apps/${app.id}/namespaces/lazy/usage/api_calls/add`, { token: app.public_key });
      expect(add.status, add.text).to.equal(200);
      const plan = await call('GET', `/apps/${app.id}/namespaces/lazy/plan`, { token: app.public_key });
      expect(plan.status, plan.text).to.equal(200);
      expect(forks.hot, 'hot routes').to.equal(0);
      const plans = await call('GET', `/apps/${app.id}/plans`, { token: app.api_key });
      expect(plans.status, plans.text).to.equal(200);
      expect(forks.catalog, 'a catalog read').to.equal(1);
    } finally {
      root.fork = fork;
    }
  });
});
