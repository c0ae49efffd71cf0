import { expect } from 'chai';
import { addMonths } from '../../src/apps/clock.js';
import { addInterval } from '../../src/dev/paypal-billing.js';

/**
 * Monthly billing dates as PayPal documents them ("How subscription billing cycles work"): the same day each month,
 * each date a month after the one before; a day the next month lacks rolls over into the month after. The stand-in
 * bills by this rule, and the product's own month arithmetic (credit periods, pauses, offers) is the same, so a
 * renewal and the period it pays for end together. Fixed dates, so the result does not depend on the day CI runs.
 */
describe('month arithmetic follows PayPal’s billing dates', () => {
  const chain = (start: string, n: number, step: (d: Date) => Date) => {
    const out = [new Date(start)];
    for (let i = 1; i < n; i++) out.push(step(out[i - 1]!));
    return out.map((d) => d.toISOString().slice(0, 10));
  };

  for (const [name, step] of [
    ['the stand-in (MONTH interval)', (d: Date) => addInterval(d, 'MONTH')],
    ['the product (addMonths)', (d: Date) => addMonths(d, 1)],
  ] as const) {
    it(`${name}: signed up on the 31st`, () => {
      // PayPal's example: July 31, August 31, October 1, November 1.
      expect(chain('2025-07-31T10:00:00Z', 4, step)).to.deep.equal([
        '2025-07-31',
        '2025-08-31',
        '2025-10-01',
        '2025-11-01',
      ]);
    });

    it(`${name}: signed up on the 30th or 29th, across a February`, () => {
      // PayPal's example: December 30, January 30, March 1, April 1 (no payment in February).
      expect(chain('2025-12-30T10:00:00Z', 4, step)).to.deep.equal([
        '2025-12-30',
        '2026-01-30',
        '2026-03-01',
        '2026-04-01',
      ]);
      expect(chain('2026-12-29T00:35:27Z', 4, step)).to.deep.equal([
        '2026-12-29',
        '2027-01-29',
        '2027-03-01',
        '2027-04-01',
      ]);
      // In a leap year February 29 exists.
      expect(chain('2028-01-29T00:00:00Z', 3, step)).to.deep.equal(['2028-01-29', '2028-02-29', '2028-03-29']);
    });
  }

  it('n months are n steps (the end of n billing cycles)', () => {
    expect(addMonths(new Date('2025-07-31T10:00:00Z'), 3).toISOString().slice(0, 10)).to.equal('2025-11-01');
    expect(addMonths(new Date('2025-07-31T10:00:00Z'), 0).toISOString()).to.equal('2025-07-31T10:00:00.000Z');
    expect(addInterval(new Date('2025-12-30T10:00:00Z'), 'MONTH', 2).toISOString()).to.equal(
      '2026-03-01T10:00:00.000Z',
    );
  });

  it('weeks and years', () => {
    expect(addInterval(new Date('2025-12-23T00:00:00Z'), 'WEEK').toISOString().slice(0, 10)).to.equal('2025-12-30');
    expect(addInterval(new Date('2028-02-29T00:00:00Z'), 'YEAR').toISOString().slice(0, 10)).to.equal('2029-03-01');
  });
});
