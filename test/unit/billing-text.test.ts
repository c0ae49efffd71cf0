// How the billing page words what the API answers (console/src/pages/Billing/text.ts), pure.
import { expect } from 'chai';
import {
  changeTexts,
  datesText,
  day,
  dayTime,
  fromNow,
  resumesText,
  shownStatus,
  type Sub,
} from '../../console/src/pages/Billing/text.js';

const NOW = Date.parse('2030-03-01T12:00:00.000Z');
const sub = (extra: Record<string, unknown>) =>
  ({ pending_change: null, scheduled_change: null, pause: null, dunning: null, ...extra }) as unknown as Sub;

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

  it('writes a time of day after the day', () => {
    expect(dayTime('2030-03-01T12:34:00.000Z')).to.match(/^2030-0[23]-\d\d \d\d:\d4$/);
    expect(dayTime(null)).to.equal('—');
  });

  it('says a change awaiting approval until when, and an approved one scheduled for the renewal date', () => {
    const change = {
      plan: 'basic',
      interval: 'month',
      price: 9,
      currency: 'USD',
      discount: null,
      kind: 'change',
      status: 'awaiting_approval',
      expires_at: '2030-03-01T15:00:00.000Z',
    };
    const renews_at = '2030-03-28T12:00:00.000Z';
    expect(changeTexts(sub({ scheduled_change: null }))).to.deep.equal([]);
    const [waiting] = changeTexts(sub({ renews_at, pending_change: change, scheduled_change: null }));
    expect(waiting).to.match(/^→ basic \/ month at 9 USD, awaiting approval until 2030-03-0\d \d\d:00$/);
    const discounted = { ...change, discount: { percent: 25, cycles: 3 }, expires_at: null };
    expect(changeTexts(sub({ renews_at, pending_change: discounted, scheduled_change: null }))).to.deep.equal([
      '→ basic / month at 9 USD (−25% for 3 renewals), awaiting approval',
    ]);
    // The list: an approved downgrade at the renewal is scheduled, not "awaiting approval".
    const scheduled = { ...change, status: 'scheduled', expires_at: null };
    const approved = changeTexts(sub({ renews_at, pending_change: scheduled, scheduled_change: scheduled }));
    expect(approved, 'the scheduled change once, though both fields carry it').to.have.length(1);
    expect(approved[0]).to.match(/^→ basic \/ month at 9 USD, scheduled for 2030-03-2[789]$/);
    // A change waiting to replace the scheduled one is listed with it; undoing it says so.
    const both = changeTexts(
      sub({ renews_at, pending_change: { ...change, plan: 'scale', price: 99 }, scheduled_change: scheduled }),
    );
    expect(both[0]).to.match(/^→ scale .*awaiting approval until/);
    expect(both[1]).to.match(/^→ basic .*scheduled for/);
    const undoing = changeTexts(
      sub({ renews_at, pending_change: { ...change, plan: 'pro', kind: 'withdrawal' }, scheduled_change: scheduled }),
    );
    expect(undoing[0]).to.match(
      /^→ back to pro \/ month at 9 USD \(withdrawing the scheduled change\), awaiting approval/,
    );
  });

  it('says a cancellation at the period end and a failed payment, in the status and the dates', () => {
    const base = { status: 'active', cancel_at: null, renews_at: '2030-03-28T12:00:00.000Z', created_at: '2030-01-01' };
    expect(shownStatus(sub(base))).to.equal('active');
    expect(datesText(sub(base), NOW)).to.match(/^Renews 2030-03-2\d$/);
    const cancelling = sub({ ...base, cancel_at: base.renews_at });
    expect(shownStatus(cancelling)).to.equal('cancelling');
    expect(datesText(cancelling, NOW)).to.match(
      /^Cancelling at 2030-03-2\d: billing has stopped, the plan stays until then$/,
    );
    const dunning = {
      since: '2030-02-28T12:00:00.000Z',
      failures: 2,
      next_retry_at: '2030-03-05T12:00:00.000Z',
      grace_ends_at: '2030-03-14T12:00:00.000Z',
      after: 'free_plan',
    };
    const pastDue = sub({ ...base, status: 'past_due', dunning });
    expect(shownStatus(pastDue)).to.equal('past due');
    expect(datesText(pastDue, NOW)).to.match(
      /^Past due since 2030-02-2\d, next retry 2030-03-0\d, grace ends 2030-03-1\d \(then the account moves to the free plan\)$/,
    );
    const paused = sub({
      ...base,
      status: 'paused',
      pause: { resume_at: '2030-03-11T12:00:00.000Z', restore_plan: 'pro' },
    });
    expect(datesText(paused, NOW)).to.match(/^Paused until 2030-03-1\d: resumes in 10 days on pro$/);
  });

  it('says when a pause ends and which plan comes back', () => {
    expect(resumesText(sub({}), NOW)).to.equal(null);
    const pause = { resume_at: '2030-03-11T12:00:00.000Z', restore_plan: null };
    expect(resumesText(sub({ pause }), NOW)).to.equal('resumes in 10 days');
    expect(resumesText(sub({ pause: { ...pause, restore_plan: 'pro' } }), NOW)).to.equal('resumes in 10 days on pro');
  });
});
