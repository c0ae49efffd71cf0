// The contract step, as mocha's last file (.mocharc lists it after every *.test.ts): schemathesis (pinned,
// scripts/contract.ts) against the suite's own servers, once per credential, on an app seeded for it. While it
// runs, the suite's response check (src/http/contract.ts) parses every answer with its route's schema too, so a
// drift fails here even where schemathesis' own checks would not see it. Exclusions, each with its reason, are in
// test/contract/schemathesis.toml.
import { expect } from 'chai';
import {
  CONTRACT_CONFIG,
  contractPasses,
  ensureSchemathesis,
  passNames,
  receiver,
  reportDirectory,
  runPass,
  type Pass,
} from '../../scripts/contract.js';
import { testEnv } from '../helpers/servers.js';

describe('contract: schemathesis against /openapi.json (every check)', function () {
  // A pass takes minutes on two loaded cores; the first run on a machine also installs schemathesis.
  this.timeout(30 * 60_000);
  let st = '';
  let passes: Pass[] = [];
  let hook: Awaited<ReturnType<typeof receiver>> | undefined;
  let reportDir = '';

  before(async () => {
    st = ensureSchemathesis();
    hook = await receiver();
    reportDir = reportDirectory();
    passes = await contractPasses(testEnv(), hook.url);
  });
  after(async () => hook?.close());

  // CONTRACT_ONLY=secret,publishable narrows the passes, as it does for `npm run contract` (`admin`: all its parts).
  const names = passNames();
  for (const name of names) {
    it(`${name} pass: no failure beyond the written exclusions`, async () => {
      const pass = passes.find((p) => p.name === name);
      expect(pass, `no contract pass named ${name}`).to.not.equal(undefined);
      const code = await runPass(st, testEnv().baseUrl, pass!, reportDir);
      expect(
        code,
        `schemathesis failed (report in .test-data/contract/${name}; exclusions in ${CONTRACT_CONFIG})`,
      ).to.equal(0);
    });
  }
});
