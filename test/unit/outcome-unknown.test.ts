// The doubt a lost answer leaves (src/db/pool-guard.ts) is carried by the error to the HTTP answer, and taken off
// where the statement was bookkeeping the caller did not ask for (a rate-limit counter). Real dropped connections are
// in test/processes/freeze.test.ts.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { outcomeUnknown, WRITING_FUNCTIONS } from '../../src/db/pool-guard.js';
import {
  OUTCOME_UNKNOWN,
  isDatabaseUnavailable,
  isOutcomeUnknown,
  markOutcomeUnknown,
  withoutDoubt,
} from '../../src/db/unavailable.js';
import { INGEST_SQL } from '../../src/usage/ingest.service.js';

const dropped = (doubt: boolean) =>
  Object.assign(new Error(`PostgreSQL did not answer within 2500 ms${doubt ? `; ${OUTCOME_UNKNOWN}` : ''}`), {
    code: 'ETIMEDOUT',
  });
const at = (status: 'I' | 'T' | 'E') => ({ getTransactionStatus: () => status });

describe('outcome unknown', () => {
  it('is read from the error or its causes, and only there; marking is once', () => {
    expect(isOutcomeUnknown(dropped(true))).to.equal(true);
    expect(isOutcomeUnknown(new Error('commit failed', { cause: dropped(true) }))).to.equal(true);
    expect(isOutcomeUnknown(dropped(false))).to.equal(false);
    expect(isOutcomeUnknown(new Error('canceling statement due to statement timeout'))).to.equal(false);
    expect(isOutcomeUnknown(null)).to.equal(false);
    const err = dropped(false);
    markOutcomeUnknown(err);
    markOutcomeUnknown(err);
    expect(err.message.split(OUTCOME_UNKNOWN)).to.have.length(2);
  });

  it('withoutDoubt keeps the outage (a 503) and drops the doubt; other errors pass unchanged', () => {
    const plain = withoutDoubt(dropped(true));
    expect(isDatabaseUnavailable(plain)).to.equal(true);
    expect(isOutcomeUnknown(plain)).to.equal(false);
    const other = dropped(false);
    expect(withoutDoubt(other)).to.equal(other);
  });

  it('which statements may have applied: a COMMIT, and a write outside a transaction block (batch ingest too)', () => {
    expect(outcomeUnknown(at('T'), 'commit')).to.equal(true);
    expect(outcomeUnknown(at('E'), 'commit'), "a failed transaction's COMMIT rolls back").to.equal(false);
    expect(outcomeUnknown(at('T'), 'insert into accounts (id) values ($1)')).to.equal(false);
    expect(outcomeUnknown(at('T'), 'release savepoint trx1')).to.equal(false);
    for (const write of [
      'insert into t values (1)',
      'with x as (update t set a = 1 returning *) select 1',
      'execute a_many(1)',
    ])
      expect(outcomeUnknown(at('I'), write), write).to.equal(true);
    for (const none of [
      'select 1',
      '  SELECT * from plans',
      'begin',
      'set statement_timeout = 5',
      'prepare a_many as select 1',
    ])
      expect(outcomeUnknown(at('I'), none), none).to.equal(false);
    expect(outcomeUnknown(at('I'), INGEST_SQL), 'a select calling usage_ingest_batch writes').to.equal(true);
  });

  it('every function of the migrations that writes (and is not a trigger) is a known writer', () => {
    const dir = path.resolve('src/db/migrations');
    const writers = new Set<string>();
    for (const file of fs.readdirSync(dir).filter((f) => f.startsWith('Migration'))) {
      const text = fs.readFileSync(path.join(dir, file), 'utf8');
      // create function name(...) returns ... as $tag$ body $tag$
      const re = /create\s+(?:or\s+replace\s+)?function\s+"?(\w+)"?\s*\(([\s\S]*?)(\$\w*\$)([\s\S]*?)\3/gi;
      for (const m of text.matchAll(re)) {
        const [, name, signature, , body] = m;
        if (/returns\s+trigger/i.test(signature)) continue;
        if (/\b(insert\s+into|update\s+\w+\s+set|delete\s+from)\b/i.test(body)) writers.add(name);
      }
    }
    expect(writers.size, 'the migrations were read').to.be.greaterThan(0);
    expect([...writers].filter((w) => !WRITING_FUNCTIONS.includes(w))).to.deep.equal([]);
  });
});
