// Start-up's connection to Temporal tries again for a while (src/runtime.ts `connectAtStart`): on a loaded machine a
// dev server that had just opened its port once took longer than one 10 s attempt, and `npm start` gave up.
import { expect } from 'chai';
import type { Logger } from '../../src/logger.js';
import { connectAtStart } from '../../src/runtime.js';

function recorder() {
  const warned: unknown[] = [];
  return { warned, logger: { warn: (obj: unknown) => void warned.push(obj) } as unknown as Logger };
}

describe('connectAtStart: Temporal at start-up', function () {
  this.timeout(20_000);

  it('tries again after a failed attempt, logging each, and returns the connection', async () => {
    const { warned, logger } = recorder();
    let calls = 0;
    const got = await connectAtStart(async () => {
      if (++calls < 3) throw new Error('Failed to connect before the deadline');
      return 'connected';
    }, logger);
    expect(got).to.equal('connected');
    expect(calls).to.equal(3);
    expect(warned).to.have.length(2);
    expect(warned[1]).to.include({ attempt: 2 });
  });

  it('gives up with the last error once the window has passed', async () => {
    const { logger } = recorder();
    let calls = 0;
    const err = await connectAtStart(
      async () => {
        calls++;
        throw new Error(`attempt ${calls} failed`);
      },
      logger,
      1500,
    ).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(err?.message).to.equal(`attempt ${calls} failed`);
    expect(calls).to.be.within(2, 3);
  });
});
