import { expect } from 'chai';
import { newId, normalizeId, randomToken } from '../../src/ids.js';

describe('normalizeId (caller-chosen ids)', () => {
  const cases: [string, string][] = [
    ['pro', 'pro'],
    ['Pro Plan', 'pro_plan'],
    ['  pro  ', '__pro__'],
    ['API-Calls', 'apicalls'],
    ['api_calls', 'api_calls'],
    ['PREMIUM', 'premium'],
    ['$100 off!', '100_off'],
    ['Ünïcödé plan', 'ncd_plan'],
    ['a.b/c:d', 'abcd'],
    ['tab\there', 'tabhere'],
    ['2024 Promo', '2024_promo'],
  ];
  for (const [input, expected] of cases) {
    it(`${JSON.stringify(input)} -> ${JSON.stringify(expected)}`, () => {
      expect(normalizeId(input)).to.equal(expected);
    });
  }
  it('is idempotent', () => {
    for (const [input] of cases) expect(normalizeId(normalizeId(input))).to.equal(normalizeId(input));
  });
  it('can produce an empty id from symbols only (routes reject it)', () => {
    expect(normalizeId('---')).to.equal('');
  });
});

describe('newId', () => {
  it('prefixes ids and keys', () => {
    expect(newId('app')).to.match(/^app_[0-9A-Za-z]{20}$/);
    expect(newId('secretKey')).to.match(/^key_[0-9A-Za-z]{32}$/);
    expect(newId('publicKey')).to.match(/^pub_[0-9A-Za-z]{32}$/);
  });
  it('does not repeat', () => {
    const seen = new Set(Array.from({ length: 5000 }, () => randomToken(12)));
    expect(seen.size).to.equal(5000);
  });
});
