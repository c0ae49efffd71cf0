import { expect } from 'chai';
import { testEnv } from '../helpers/servers.js';

describe('database schema', () => {
  it('the committed migrations create every column and table the entities map (no drift)', async () => {
    const sql = await testEnv().deps.orm.schema.getUpdateSchemaSQL({ wrap: false, safe: true, dropTables: false });
    // Only statements that would add or change something the entities need count as drift; the
    // migrations' extra constraints, defaults and indexes (which the entities do not describe) do not.
    const drift = sql
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => /^(create table|alter table \S+ add (column )?"|alter table .* alter column .* type )/i.test(l));
    expect(drift, sql).to.deep.equal([]);
  });
});
