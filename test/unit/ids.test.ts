import { expect } from 'chai';
import { newId, normalizeId, randomToken, timeOrderedToken } from '../../src/ids.js';
import { safeEqual } from '../../src/http/secrets.js';

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
  it('event ids sort in the order they were made, within a millisecond too, and never go back', () => {
    const ids = Array.from({ length: 3000 }, () => newId('event'));
    for (const id of ids) expect(id).to.match(/^evt_[0-9a-z]{11}[0-9A-Za-z]{9}$/);
    expect(new Set(ids).size).to.equal(3000);
    // Plain code-unit order and a locale's order agree on them (PostgreSQL may sort text under either).
    expect([...ids].sort()).to.deep.equal(ids);
    expect([...ids].sort((a, b) => a.localeCompare(b, 'en-US'))).to.deep.equal(ids);
    const t = Date.now();
    const [a, b, c] = [timeOrderedToken(t), timeOrderedToken(t), timeOrderedToken(t - 5_000)];
    expect([a, b, c].sort()).to.deep.equal([a, b, c]);
    expect(a.slice(0, 9)).to.equal(t.toString(36).padStart(9, '0'));
  });
  it('does not repeat', () => {
    const seen = new Set(Array.from({ length: 5000 }, () => randomToken(12)));
    expect(seen.size).to.equal(5000);
  });
  it('draws evenly from all 62 characters across many refills of the random pool', () => {
    // 20,000 ids of 20 characters use about 850 KB of random bytes: some 200 refills of the 4 KiB pool.
    const counts = new Map<string, number>();
    const ids = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const id = randomToken(20);
      ids.add(id);
      for (const c of id) counts.set(c, (counts.get(c) ?? 0) + 1);
    }
    expect(ids.size).to.equal(20_000);
    expect(counts.size).to.equal(62);
    // 400,000 characters: about 6,452 each; 6 standard deviations (~480) either way.
    for (const [c, n] of counts) expect(n, c).to.be.within(5_950, 6_950);
  });
});

describe('safeEqual', () => {
  it('is true only for the same string, whatever the lengths', () => {
    expect(safeEqual('key_abc', 'key_abc')).to.equal(true);
    expect(safeEqual('', '')).to.equal(true);
    expect(safeEqual('key_abc', 'key_abd')).to.equal(false);
    expect(safeEqual('key_ab', 'key_abc')).to.equal(false);
    expect(safeEqual('key_abc', 'key_ab')).to.equal(false);
    expect(safeEqual('', 'x')).to.equal(false);
    // Same length in characters, not in bytes.
    expect(safeEqual('é', 'e')).to.equal(false);
    expect(safeEqual('ééé', 'ééé')).to.equal(true);
  });
});
