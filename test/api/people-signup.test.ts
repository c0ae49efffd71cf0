// People join the console through the owner setup or an invitation (server-side sign-ups); Better Auth's own
// sign-up route is not open to anyone on the network.
import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import { closePeople, people } from '../../src/people/better-auth.js';
import { call } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

describe('POST /api/auth/sign-up/email', () => {
  after(() => closePeople(testEnv().deps));

  it('is closed: nobody signs up alone, so no stranger can take the first-owner setup away', async () => {
    const p = await people(testEnv().deps);
    const countPeople = async () => (await p.pool.query('select count(*)::int as n from people_users')).rows[0].n;
    const before = await countPeople();
    const email = 'stranger@example.com';
    const res = await call('POST', '/api/auth/sign-up/email', {
      body: { name: 'Stranger', email, password: 'a long enough password' },
      headers: { Origin: testEnv().baseUrl },
    });
    const made = await sql<{ id: string }>(
      testEnv().deps.orm.em.fork(),
      'select id from people_users where email = $1',
      [email],
    );
    // Leave nothing behind even when the route let the stranger in.
    for (const { id } of made) {
      const em = testEnv().deps.orm.em.fork();
      await sql(em, 'delete from people_sessions where "userId" = $1', [id]);
      await sql(em, 'delete from people_credentials where "userId" = $1', [id]);
      await sql(em, 'delete from people_users where id = $1', [id]);
    }
    expect(made, res.text).to.deep.equal([]);
    expect(res.status, res.text).to.equal(404);
    expect(await countPeople()).to.equal(before);
  });
});
