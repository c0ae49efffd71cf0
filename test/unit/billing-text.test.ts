// How the billing page words what the API answers (console/src/pages/Billing/text.ts), pure.
import { expect } from 'chai';
import { day, fromNow, pendingText, resumesText, type Sub } from '../../console/src/pages/Billing/text.js';

const NOW = Date.parse('2030-03-01T12:00:00.000Z');
const sub = (extra: Record<string, unknown>) => ({ pending_change: null, pause: null, ...extra }) as unknown as Sub;

describe('billing page words', () => {
  it('writes a day as YYYY-MM-DD, and a dash for none', () => {
    // Noon UTC is that day in nearly every zone, the day before or after in the farthest (the browser's zone).
    expect(day('2030-03-01T12:00:00.000Z')).to.match(/^2030-(02-28|03-01|03-02)$/);
    expect(day(null)).to.equal('—');
  });

  it('says how long until a time in its largest unit, and "now" once it has passed', () => {
    expect(fromNow('2030-06-01T12:00:00.000Z', NOW)).to.equal('in 3 months');
    expect(fromNow('2030-03-06T12:00:00.000Z', NOW)).to.equal('in 5 days');
    expect(fromNow('2030-03-01T14:00:00.000Z', NOW)).to.equal('in 2 hours');
    expect(fromNow('2030-03-01T12:00:30.000Z', NOW)).to.equal('in 30 seconds');
    expect(fromNow('2030-03-01T11:00:00.000Z', NOW)).to.equal('now');
  });

  it('describes a plan change awaiting approval, with its discount', () => {
    const change = { plan: 'basic', interval: 'month', price: 9, currency: 'USD', discount: null };
    expect(pendingText(sub({}))).to.equal(null);
    expect(pendingText(sub({ pending_change: change }))).to.equal('→ basic / month at 9 USD, awaiting approval');
    expect(pendingText(sub({ pending_change: { ...change, discount: { percent: 25, cycles: 3 } } }))).to.equal(
      '→ basic / month at 9 USD (−25% for 3 renewals), awaiting approval',
    );
  });

  it('says when a pause ends and which plan comes back', () => {
    expect(resumesText(sub({}), NOW)).to.equal(null);
    const pause = { resume_at: '2030-03-11T12:00:00.000Z', restore_plan: null };
    expect(resumesText(sub({ pause }), NOW)).to.equal('resumes in 10 days');
    expect(resumesText(sub({ pause: { ...pause, restore_plan: 'pro' } }), NOW)).to.equal('resumes in 10 days on pro');
  });
});
