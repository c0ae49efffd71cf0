import { expect } from 'chai';
import { judgeSoak, slope, type SoakSample } from '../../scripts/soak-judge.js';

/** Samples every half minute for `minutes`, memory (MB) given by `mb(minute)`, stored in kB as the soak stores it. */
const run = (minutes: number, mb: (min: number) => number): SoakSample[] =>
  Array.from({ length: minutes * 2 + 1 }, (_, i) => ({ min: i / 2, pg: mb(i / 2) * 1024 }));
const judge = (samples: SoakSample[], minMinutes = 30) =>
  judgeSoak(samples, ['pg'], { flatMb: 5, minMinutes }).processes[0];

describe('the soak judgement (scripts/soak-judge.ts)', () => {
  it('the slope is the least-squares line, and 0 without two points', () => {
    expect(
      slope([
        [0, 1],
        [1, 3],
        [2, 5],
      ]),
    ).to.equal(2);
    expect(slope([[0, 7]])).to.equal(0);
  });

  it('memory given back is never growth: a falling slope is "falls", not "still growing"', () => {
    const j = judge(run(40, (m) => 600 - 3 * m)); // -30 MB per 10 minutes
    expect(j.secondHalf).to.be.closeTo(-30, 0.01);
    expect(j.verdict).to.equal('falls');
    expect(
      judgeSoak(
        run(40, (m) => 600 - 3 * m),
        ['pg'],
        { flatMb: 5, minMinutes: 30 },
      ).flat,
    ).to.equal(true);
  });

  it('a run shorter than the minimum gives no verdict, however steep its slope', () => {
    const samples = run(10, (m) => 200 + 7.9 * m); // +79 MB per 10 minutes, as the 10-minute run of issue 39
    const whole = judgeSoak(samples, ['pg'], { flatMb: 5, minMinutes: 30 });
    expect(whole.longEnough).to.equal(false);
    expect(whole.flat).to.equal(false);
    expect(whole.processes[0].verdict).to.equal('too short to judge');
  });

  it('a cache that fills and stops (growth, then flat) levels off once the run is long enough', () => {
    // 128 MB of shared buffers filled over the first 12 minutes, then flat (with a little noise).
    const j = judge(run(40, (m) => 70 + Math.min(m, 12) * (128 / 12) + (m % 1 ? 0.3 : -0.3)));
    expect(j.verdict).to.equal('levels off');
  });

  it('growth in the second half that stopped in the last quarter is "levelling off at the end"', () => {
    const j = judge(run(40, (m) => 100 + Math.min(m, 28) * 2)); // +20 MB per 10 min until minute 28, then flat
    expect(j.secondHalf).to.be.greaterThan(5);
    expect(j.lastQuarter).to.be.closeTo(0, 0.01);
    expect(j.verdict).to.equal('levelling off at the end');
  });

  it('steady growth to the end is "still growing" and fails the run', () => {
    const samples = run(40, (m) => 100 + 1.5 * m); // +15 MB per 10 minutes throughout
    const whole = judgeSoak(samples, ['pg'], { flatMb: 5, minMinutes: 30 });
    expect(whole.processes[0].verdict).to.equal('still growing');
    expect(whole.flat).to.equal(false);
  });
});
