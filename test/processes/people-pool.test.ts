// The people (Better Auth) database pool when PostgreSQL ends its idle connections on purpose: a Ctrl-C of
// `npm start` reaches the embedded server too, which ends every session with 57P01 before the service closes the
// pool. That is expected: an info line, no warning with a stack (as the credential cache's listener does,
// test/processes/credential-cache.test.ts).
import { expect } from 'chai';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { sql } from '../../src/db/sql.js';
import type { Deps } from '../../src/deps.js';
import { closePeople, people } from '../../src/people/better-auth.js';
import { testEnv } from '../helpers/servers.js';

const em = () => testEnv().deps.orm.em.fork();

async function until(cond: () => boolean, what: string, ms = 10_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the people database pool', function () {
  this.timeout(60_000);

  it('an idle connection PostgreSQL ends on purpose (a shutdown, pg_terminate_backend) is an info line, not a warning', async () => {
    const records: { level: number; msg: string; err?: unknown }[] = [];
    const capture = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) records.push(JSON.parse(line));
        done();
      },
    });
    // A people module of its own (its own pool), logging to `capture`.
    const deps = { ...testEnv().deps, logger: pino({ level: 'info' }, capture) } as Deps;
    const p = await people(deps);
    try {
      const { rows } = await p.pool.query<{ pid: number }>('select pg_backend_pid() as pid');
      expect(p.pool.idleCount).to.be.at.least(1);
      await sql(em(), 'select pg_terminate_backend($1)', [rows[0].pid]);
      await until(() => records.length > 0, 'a log line');
      expect(records.map((r) => [r.level, r.msg])).to.deep.equal([
        [30, 'people: PostgreSQL ended an idle connection; the next request opens a new one'],
      ]);
      expect(records[0].err).to.equal(undefined);
      // The pool goes on with a new connection.
      expect((await p.pool.query('select 1 as one')).rows[0].one).to.equal(1);
    } finally {
      await closePeople(deps);
    }
  });
});
