// Mocha root hooks: the real servers start once before the first test and stop after the last.
import { startTestEnv, stopTestEnv } from './servers.js';

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(15 * 60_000); // the first run on a machine may build the Temporal CLI
    await startTestEnv();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopTestEnv();
  },
};
