import { expect } from 'chai';
import { judge, type LogLine, type Truth } from '../../scripts/chaos-offline-judge.js';

/** Account `a` on a plan with 2 calls and the `sso` feature; its counters as the API says. */
const truth = (calls: number, tokens: number): Record<string, Truth> => ({
  a: {
    limits: {
      calls: { type: 'usage', max: 2 },
      tokens: { type: 'usage', max: null },
      sso: { type: 'boolean', can: true },
    },
    usage: { calls, tokens },
  },
});
const check = (e: string, ok: boolean, known = true): LogLine => ({ k: 'c', a: 'a', e, ok, known });
const track = (n: number, e: string, amt: number, done = true): LogLine[] => [
  { k: 't', n, a: 'a', e, amt },
  ...(done ? [{ k: 'd' as const, n }] : []),
];
const end: LogLine = { k: 'end', pid: 1, pending: 0 };

describe('the offline chaos verdict (scripts/chaos-offline-judge.ts)', () => {
  it('right answers at the usage tracked before each check, every unit counted: pass', () => {
    const log: LogLine[] = [
      { k: 'start', pid: 1 },
      check('sso', true),
      check('calls', true),
      ...track(1, 'calls', 1),
      { k: 'm', what: 'api-down' },
      check('calls', true),
      ...track(2, 'calls', 1),
      check('calls', false), // at the limit of 2
      check('calls', true, false), // the unknown policy: not judged
      ...track(3, 'tokens', 5),
      end,
    ];
    const v = judge(log, truth(2, 5), []);
    expect(v.wrong).to.deep.equal([]);
    expect(v.mismatched).to.deep.equal([]);
    expect(v.offline).to.deep.equal({ checks: 3, knownChecks: 2, tracks: 2 });
    expect(v.ok).to.equal(true);
  });

  it('an answer past the limit is wrong; a unit counted twice or lost is a mismatch', () => {
    const log = [
      { k: 'start', pid: 1 } as LogLine,
      ...track(1, 'calls', 1),
      ...track(2, 'calls', 1),
      check('calls', true),
      end,
    ];
    const v = judge(log, truth(3, 0), []);
    expect(v.wrong.map((w) => [w.entitlement, w.answered, w.expected])).to.deep.equal([['calls', true, false]]);
    expect(v.mismatched).to.deep.equal([{ account: 'a', entitlement: 'calls', tracked: 2, counted: 3 }]);
    expect(v.ok).to.equal(false);
  });

  it('a track cut by SIGKILL counts when its add reached the buffer file, not otherwise; a client that did not end fails', () => {
    const log: LogLine[] = [
      { k: 'start', pid: 1 },
      check('sso', true),
      ...track(1, 'tokens', 3),
      ...track(2, 'tokens', 4, false), // killed here
      { k: 'start', pid: 2 },
      end,
    ];
    const inFile = judge(log, truth(0, 7), [
      { track: null, lastBuffered: { accountId: 'a', entitlementId: 'tokens', amount: 4 } },
    ]);
    expect([inFile.cutCounted, inFile.ok]).to.deep.equal([true, true]);
    const notInFile = judge(log, truth(0, 3), [
      { track: null, lastBuffered: { accountId: 'a', entitlementId: 'tokens', amount: 3 } },
    ]);
    expect([notInFile.cutCounted, notInFile.ok]).to.deep.equal([false, true]);
    expect(judge(log.slice(0, -1), truth(0, 3), []).ok, 'no end: not flushed').to.equal(false);
  });
});
