// Every TypeScript example of the SDK's README, of docs/sdk.md and of the main README runs as written (tsx, the
// built package as users import it) against the real test API with a freshly created app, the environment
// variables set as the READMEs say, and prints what the ```text block after it promises.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { createTestApp } from '../helpers/factories.js';
import { outputMatches, readmeExamples, readmeProgram, splitOutput } from '../helpers/readme.js';
import { PAYPAL_TEST_CREDENTIALS, testEnv } from '../helpers/servers.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const FILES = ['README.md', 'packages/sdk/README.md', 'docs/sdk.md'];

describe('SDK: the README examples run as written against a fresh app', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'offerkit-readme-'));
    // The examples import `@offerkit/sdk` as a user's project would: from node_modules (the built workspace package).
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('the READMEs have examples, and promise output for most', () => {
    const all = FILES.flatMap((f) => readmeExamples(path.join(root, f)));
    expect(readmeExamples(path.join(root, 'README.md')).length, 'main README').to.be.greaterThan(0);
    expect(readmeExamples(path.join(root, 'packages/sdk/README.md')).length, 'SDK README').to.be.greaterThan(5);
    expect(all.filter((e) => e.output !== null).length).to.be.greaterThan(all.length / 2);
  });

  for (const file of FILES) {
    it(`${file}: every example exits 0 and prints what it promises`, async function () {
      const examples = readmeExamples(path.join(root, file));
      if (!examples.length) return expect(file, 'docs/sdk.md may link instead of repeating').to.equal('docs/sdk.md');
      const app = await createTestApp(`README ${file}`);
      const [[clientId, clientSecret]] = Object.entries(PAYPAL_TEST_CREDENTIALS);
      const program = path.join(dir, `${file.replace(/[^\w]+/g, '-')}.mts`);
      fs.writeFileSync(program, readmeProgram(examples));
      const res = await run(process.execPath, ['--import', 'tsx', program], {
        cwd: dir,
        timeout: 90_000,
        env: {
          ...process.env,
          // What the READMEs tell the reader to set.
          OFFERKIT_BASE_URL: testEnv().baseUrl,
          OFFERKIT_APP_ID: app.id,
          OFFERKIT_SECRET_KEY: app.api_key,
          OFFERKIT_PUBLISHABLE_KEY: app.public_key,
          PAYPAL_CLIENT_ID: clientId,
          PAYPAL_CLIENT_SECRET: clientSecret,
        },
      }).catch((err: { code?: number; stdout: string; stderr: string }) => err);
      expect((res as { code?: number }).code ?? 0, `${file} exited non-zero:\n${res.stdout}\n${res.stderr}`).to.equal(
        0,
      );
      const outputs = splitOutput(res.stdout, examples.length);
      examples.forEach((e, i) => {
        if (e.output === null) return;
        expect(
          outputMatches(outputs[i], e.output),
          `${file}:${e.line} printed\n${outputs[i]}\nbut promises\n${e.output}`,
        ).to.equal(true);
      });
    });
  }
});
