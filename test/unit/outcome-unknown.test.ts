// The doubt a dropped COMMIT leaves (src/db/pool-guard.ts) is carried by the error to the HTTP answer, and taken off
// where the statement was bookkeeping the caller did not ask for (a rate-limit counter). Real dropped connections are
// in test/processes/freeze.test.ts.
import { expect } from 'chai';
import { OUTCOME_UNKNOWN } from '../../src/db/pool-guard.js';
import { isDatabaseUnavailable, isOutcomeUnknown, withoutDoubt } from '../../src/db/unavailable.js';

const dropped = (doubt: boolean) =>
  Object.assign(new Error(`PostgreSQL did not answer within 2500 ms${doubt ? `; ${OUTCOME_UNKNOWN}` : ''}`), {
    code: 'ETIMEDOUT',
  });

describe('outcome unknown', () => {
  it('is read from the error or its causes, and only there', () => {
    expect(isOutcomeUnknown(dropped(true))).to.equal(true);
    expect(isOutcomeUnknown(new Error('commit failed', { cause: dropped(true) }))).to.equal(true);
    expect(isOutcomeUnknown(dropped(false))).to.equal(false);
    expect(isOutcomeUnknown(new Error('canceling statement due to statement timeout'))).to.equal(false);
    expect(isOutcomeUnknown(null)).to.equal(false);
  });

  it('withoutDoubt keeps the outage (a 503) and drops the doubt; other errors pass unchanged', () => {
    const plain = withoutDoubt(dropped(true));
    expect(isDatabaseUnavailable(plain)).to.equal(true);
    expect(isOutcomeUnknown(plain)).to.equal(false);
    const other = dropped(false);
    expect(withoutDoubt(other)).to.equal(other);
  });
});
