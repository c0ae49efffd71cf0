import { expect } from 'chai';
import { access } from '../../src/access/access.service.js';
import { coalesced, setCoalesceInFlight } from '../../src/db/coalesce.js';
import { sql } from '../../src/db/sql.js';
import { change } from '../../src/usage/usage.service.js';
import { seededApp, type TestApp } from '../helpers/factories.js';
import { get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

// Hot statements coalesced under load (src/db/coalesce.ts): concurrent runs go to PostgreSQL as one batch; each
// keeps its own answer, a refused statement sends its batch back one by one, a lost connection runs nothing again.
describe('coalesced statements', () => {
  const em = () => testEnv().deps.orm.em.fork();
  before(async () => {
    await sql(em(), 'create table if not exists coalesce_probe (id int primary key, note text)');
  });
  beforeEach(async () => {
    await sql(em(), 'truncate coalesce_probe');
  });
  after(async () => {
    await sql(em(), 'drop table if exists coalesce_probe');
  });

  it('concurrent runs go out as batches, each statement with its own parameters, rows and snapshot', async () => {
    const echo = coalesced<{ n: number; note: string }>(
      'coalesce_echo',
      'select $1::int as n, $2::text as note, pg_backend_pid() as pid',
    );
    // Quotes, a backslash and a NUL-free oddity: parameters travel as literals and must come back as sent.
    const notes = Array.from({ length: 60 }, (_, i) => `it's #${i} \\ "q" ${'é'.repeat(i % 3)}`);
    const rows = await Promise.all(notes.map((note, i) => echo(em(), [i, note])));
    expect(rows.map((r) => r[0].n)).to.deep.equal(notes.map((_, i) => i));
    expect(rows.map((r) => r[0].note)).to.deep.equal(notes);
    expect(echo.stats.batches, 'the runs went out together').to.be.greaterThan(0);
    expect(echo.stats.batched).to.be.greaterThan(echo.stats.batches);

    // Writes: each statement sees the ones before it in its batch (its own snapshot), as if sent one by one. One
    // run at the database at a time, so the batches do not overlap either.
    const insert = coalesced<{ id: number; before: string }>(
      'coalesce_insert',
      `insert into coalesce_probe (id, note) select $1, (select count(*) from coalesce_probe)::text returning id, note
        as before`,
    );
    setCoalesceInFlight(1);
    try {
      const ins = await Promise.all(Array.from({ length: 40 }, (_, i) => insert(em(), [i])));
      expect(insert.stats.batches).to.be.greaterThan(0);
      expect(
        ins.map((r) => Number(r[0].before)),
        'each insert counted the ones before it, in the order sent',
      ).to.deep.equal(Array.from({ length: 40 }, (_, i) => i));
    } finally {
      setCoalesceInFlight(testEnv().deps.config.DB_COALESCE_IN_FLIGHT);
    }
  });

  it('a read with a set form answers a batch in one statement: each run gets its own rows, none or several', async () => {
    // Run n has n % 3 rows: the set form must hand each run exactly its own.
    const rowsOf = coalesced<{ n: number; note: string }>(
      'coalesce_set_rows',
      'select $1::int as n, $2::text as note from generate_series(1, $1::int % 3)',
      {
        set: {
          text: `select q.run, q.n, q.note from unnest($1::int[], $2::text[]) with ordinality as q(n, note, run)
            cross join generate_series(1, q.n % 3)`,
          params: (lists) => [lists.map((p) => p[0]), lists.map((p) => p[1])],
        },
      },
    );
    const rows = await Promise.all(Array.from({ length: 50 }, (_, i) => rowsOf(em(), [i, `note ${i}`])));
    expect(rowsOf.stats.batches, 'the runs went out together').to.be.greaterThan(0);
    expect(rowsOf.stats.fallbacks).to.equal(0);
    rows.forEach((r, i) =>
      expect(r, `run ${i}`).to.deep.equal(Array<unknown>(i % 3).fill({ n: i, note: `note ${i}` })),
    );

    // When the set statement fails, each run goes again alone and gets its own answer: here one division by zero.
    const inverse = coalesced<{ x: number }>('coalesce_set_fails', 'select 100 / ($1::int - 7) as x', {
      set: {
        text: 'select q.run, 100 / (q.n - 7) as x from unnest($1::int[]) with ordinality as q(n, run)',
        params: (lists) => [lists.map((p) => p[0])],
      },
    });
    const outcomes = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => inverse(em(), [i])));
    expect(inverse.stats.fallbacks, 'a batch failed as a set and ran again one by one').to.be.greaterThan(0);
    outcomes.forEach((o, i) => {
      if (i === 7) expect(o.status === 'rejected' && (o.reason as { code: string }).code).to.equal('22012');
      else expect(o.status === 'fulfilled' && o.value, `run ${i}`).to.deep.equal([{ x: Math.trunc(100 / (i - 7)) }]);
    });
  });

  it('a statement PostgreSQL refuses sends its batch back one by one: every run gets its own answer, once', async () => {
    const insert = coalesced<{ id: number }>(
      'coalesce_insert_div',
      'insert into coalesce_probe (id, note) values ($1, (1 / $2::int)::text) returning id',
    );
    const outcomes = await Promise.allSettled(
      Array.from({ length: 30 }, (_, i) => insert(em(), [i, i % 10 === 7 ? 0 : 1])),
    );
    expect(insert.stats.fallbacks, 'a batch was refused and ran again one by one').to.be.greaterThan(0);
    outcomes.forEach((o, i) => {
      if (i % 10 === 7) {
        expect(o.status).to.equal('rejected');
        expect((o as PromiseRejectedResult).reason.code, 'its own error: division by zero').to.equal('22012');
      } else expect(o.status === 'fulfilled' && o.value[0].id).to.equal(i);
    });
    const ids = (await sql<{ id: number }>(em(), 'select id from coalesce_probe order by id')).map((r) => r.id);
    expect(ids, 'each accepted run applied exactly once').to.deep.equal(
      Array.from({ length: 30 }, (_, i) => i).filter((i) => i % 10 !== 7),
    );
  });

  it('a batch whose connection is lost runs nothing again: every run gets the error, nothing applied', async () => {
    const insert = coalesced<{ id: number }>(
      'coalesce_insert_kill',
      `with ins as (insert into coalesce_probe (id) values ($1) returning id)
       select id, case when $2::bool then pg_terminate_backend(pg_backend_pid()) end as killed from ins`,
    );
    // The first run goes alone (the queue drains at the end of the loop's turn, with nothing in flight); hold it
    // with a slow one so the rest meet in one batch behind it.
    const slow = coalesced('coalesce_sleep', 'select pg_sleep($1::float8)');
    const first = insert(em(), [100, false]);
    await first;
    setCoalesceInFlight(1);
    try {
      const held = slow(em(), [0.3]);
      await new Promise((r) => setImmediate(r));
      const batch = Array.from({ length: 5 }, (_, i) => insert(em(), [i, i === 3]));
      const outcomes = await Promise.allSettled(batch);
      await held;
      expect(outcomes.map((o) => o.status)).to.deep.equal(Array(5).fill('rejected'));
      expect(insert.stats.fallbacks, 'not run again').to.equal(0);
    } finally {
      setCoalesceInFlight(testEnv().deps.config.DB_COALESCE_IN_FLIGHT);
    }
    const ids = (await sql<{ id: number }>(em(), 'select id from coalesce_probe order by id')).map((r) => r.id);
    expect(ids, 'the batch rolled back and was not retried').to.deep.equal([100]);
    // The pool replaced the dead connection: statements still run.
    expect((await insert(em(), [7, false]))[0].id).to.equal(7);
  });

  it('an unforeseen error while a batch is made answers its requests instead of leaving them waiting', async () => {
    const sleep = coalesced('coalesce_order_throws', 'select pg_sleep($1::float8)', {
      order: (p) => {
        if (p[0] === 0.02) throw new Error('cannot order this');
        return String(p[0]);
      },
    });
    setCoalesceInFlight(1);
    try {
      const first = sleep(em(), [0.2]); // alone: holds the only slot
      await new Promise((r) => setTimeout(r, 50));
      const rest = await Promise.allSettled([0.01, 0.02, 0.03].map((x) => sleep(em(), [x])));
      await first;
      expect(rest.map((o) => o.status === 'rejected' && (o.reason as Error).message)).to.deep.equal(
        Array(3).fill('cannot order this'),
      );
      expect((await sleep(em(), [0.01])).length, 'the statement still runs afterwards').to.equal(1);
    } finally {
      setCoalesceInFlight(testEnv().deps.config.DB_COALESCE_IN_FLIGHT);
    }
  });

  describe('usage add and effective access', () => {
    let app: TestApp;
    beforeEach(async () => {
      const ids = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8'];
      ({ app } = await seededApp({ accounts: ids.map((id) => ({ id, plan: 'pro' })) }));
    });

    it('adds on a few counters sent in every order: batches lock in one order, nothing deadlocks or is lost', async function () {
      this.timeout(60_000);
      const before = { ...change.stats };
      const targets = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8'].map((a) => `${a}/usage/api_calls`);
      // 8 counters, 100 adds each, shuffled, in two waves: batches carry several counters in arrival order.
      const calls = targets.flatMap((t) => Array(100).fill(t) as string[]).sort(() => Math.random() - 0.5);
      const send = (t: string) => post(`/apps/${app.id}/namespaces/${t}/amount`, app.api_key, { amount: 1 });
      const res = [
        ...(await Promise.all(calls.slice(0, 400).map(send))),
        ...(await Promise.all(calls.slice(400).map(send))),
      ];
      expect(res.filter((r) => r.status !== 200).map((r) => r.body)).to.deep.equal([]);
      expect(change.stats.batches - before.batches, 'the adds went out in batches').to.be.greaterThan(0);
      expect(change.stats.fallbacks - before.fallbacks, 'no batch was refused (a deadlock would be)').to.equal(0);
      for (const t of targets) {
        expect((await get(`/apps/${app.id}/namespaces/${t}`, app.api_key)).body.count, t).to.equal(100);
        // Each statement saw the adds before it: the answers are 1..100, each once.
        const counts = res
          .filter((_, i) => calls[i] === t)
          .map((r) => r.body.count as number)
          .sort((a, b) => a - b);
        expect(counts, t).to.deep.equal(Array.from({ length: 100 }, (_, i) => i + 1));
      }
    });

    it('effective access read in batches answers each account as a read of its own would', async () => {
      await post(`/apps/${app.id}/namespaces/c2/usage/api_calls/amount`, app.api_key, { amount: 5 });
      const alone: Record<string, unknown> = {};
      for (const a of ['c1', 'c2', 'c3', 'c4'])
        alone[a] = (await get(`/apps/${app.id}/namespaces/${a}/plan`, app.api_key)).body;
      const before = access.stats.batches;
      const order = Array.from({ length: 40 }, (_, i) => `c${(i % 4) + 1}`);
      const res = await Promise.all(order.map((a) => get(`/apps/${app.id}/namespaces/${a}/plan`, app.api_key)));
      expect(access.stats.batches - before).to.be.greaterThan(0);
      res.forEach((r, i) => expect(r.body, order[i]).to.deep.equal(alone[order[i]]));
      expect((await get(`/apps/${app.id}/namespaces/nobody/plan`, app.api_key)).status).to.equal(404);
    });

    it('DB_COALESCE_IN_FLIGHT=0 sends every run alone', async () => {
      setCoalesceInFlight(0);
      try {
        const before = change.stats.batches;
        const res = await Promise.all(
          Array.from({ length: 30 }, () => post(`/apps/${app.id}/namespaces/c1/usage/api_calls/add`, app.api_key)),
        );
        expect(res.map((r) => r.body.count as number).sort((a, b) => a - b)).to.deep.equal(
          Array.from({ length: 30 }, (_, i) => i + 1),
        );
        expect(change.stats.batches).to.equal(before);
      } finally {
        setCoalesceInFlight(testEnv().deps.config.DB_COALESCE_IN_FLIGHT);
      }
    });
  });
});
