// The console's counts with their nouns (console/src/plural.ts), pure.
import { expect } from 'chai';
import { plural } from '../../console/src/plural.js';

describe('console plural', () => {
  it('writes one thing in the singular, and none or many in the plural', () => {
    expect(plural(1, 'account')).to.equal('1 account');
    expect(plural(0, 'account')).to.equal('0 accounts');
    expect(plural(2, 'redemption')).to.equal('2 redemptions');
  });

  it('takes an irregular plural, and groups thousands', () => {
    expect(plural(1, 'pending delivery', 'pending deliveries')).to.equal('1 pending delivery');
    expect(plural(3, 'pending delivery', 'pending deliveries')).to.equal('3 pending deliveries');
    expect(plural(12345, 'session')).to.equal('12,345 sessions');
  });
});
