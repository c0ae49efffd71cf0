// Mocha root hooks: the real servers start once before the first test and stop after the last.
import { takeViolations } from '../../src/http/contract.js';
import { closeSharedChromium } from './browser.js';
import { startTestEnv, stopTestEnv } from './servers.js';
import { buildService } from '../../scripts/build-service.js';

// Temporal's core (Rust) panics in a timer task when a worker shut down while a local activity was backing
// off between retries (the outage tests do that on purpose; the task dies alone, nothing else is affected).
// A full backtrace per panic buries the suite's own output; the one-line message stays.
process.env.RUST_BACKTRACE = '0';

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(15 * 60_000); // the first run on a machine may build the Temporal CLI
    // The bundle the service processes of the tests run (as `npm start` does); `npm test` built it already.
    await buildService();
    await startTestEnv();
  },
  // Answers outside their route's documents that no helper call reported (other clients, MCP SDK calls).
  afterEach() {
    const drift = takeViolations();
    if (drift.length) throw new Error(drift.map((v) => `[${v.requestId}] ${v.message}`).join('\n'));
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    // The Chromium the browser files shared (test/helpers/browser.ts), if any ran in this process.
    await closeSharedChromium();
    await stopTestEnv();
  },
};
