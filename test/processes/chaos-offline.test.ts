// `npm run chaos -- offline` (issue 44, item 4) at a small size in the suite: the API process SIGKILLed for 10 s while
// a client process answers checks from memory and buffers usage in a file, the client itself SIGKILLed and restarted
// on that file mid-outage; then every answer for a known account must match the API and every unit be counted once.
// It uses the suite's PostgreSQL and Temporal; the API and the clients are real processes (scripts/chaos-offline.ts).
import { expect } from 'chai';
import { runOfflineChaos } from '../../scripts/chaos-offline.js';
import { testEnv } from '../helpers/servers.js';

describe('chaos offline: the API down, a client checking and tracking with the local evaluator', function () {
  this.timeout(240_000);

  it('no wrong answer for a known account, every buffered unit counted exactly once, across a client restart', async () => {
    const lines: string[] = [];
    const { config } = testEnv();
    const code = await runOfflineChaos({
      outageS: 10,
      beforeS: 4,
      afterS: 4,
      seed: 44,
      stack: { databaseUrl: config.databaseUrl, temporalAddress: config.temporalAddress },
      say: (line) => lines.push(line),
    });
    const text = lines.join('\n');
    expect(code, text).to.equal(0);
    expect(text).to.match(/wrong answers for known accounts: 0\n/);
    expect(text).to.match(/counted differently: 0; dropped: 0/);
    // The outage was exercised: known accounts answered from memory, usage buffered, a client restarted on its file.
    const [, offline, known, tracks] = /while the API was down: (\d+) \((\d+) known\), (\d+) tracks/.exec(text) ?? [];
    expect(Number(offline), text).to.be.greaterThan(0);
    expect(Number(known), text).to.be.greaterThan(0);
    expect(Number(tracks), text).to.be.greaterThan(0);
    expect(text).to.match(/client 1 SIGKILLed with [1-9]\d* adds in its buffer file/);
    expect(text).to.match(/verdict: PASS/);
  });
});
