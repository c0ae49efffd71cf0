// Mocha root hooks: the real servers start once before the first test and stop after the last.
import { takeViolations } from '../../src/http/contract.js';
import { startTestEnv, stopTestEnv } from './servers.js';

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(15 * 60_000); // the first run on a machine may build the Temporal CLI
    await startTestEnv();
  },
  // Answers outside their route's documents that no helper call reported (other clients, MCP SDK calls).
  afterEach() {
    const drift = takeViolations();
    if (drift.length) throw new Error(drift.map((v) => `[${v.requestId}] ${v.message}`).join('\n'));
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopTestEnv();
  },
};
