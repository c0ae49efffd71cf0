// The workflow bundle is made once per version of the workflow code: a worker process reads the bundle the last one
// wrote (node_modules/.cache/offerkit-workflows, keyed by a hash of workflows/ and the lockfile) instead of running
// webpack again, and a cache it cannot use is skipped.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { bundleWorkflows } from '../../src/worker-runtime.js';

const DIR = path.resolve('node_modules/.cache/offerkit-workflows');

describe('the workflow bundle cache', function () {
  this.timeout(120_000);

  it('writes the bundle under its key and serves the same code from it; a removed cache is bundled again', async () => {
    const first = await bundleWorkflows();
    const cached = fs.readdirSync(DIR).filter((f) => /^[0-9a-f]{32}\.js$/.test(f));
    expect(cached.length).to.be.greaterThan(0);
    const file = cached.map((f) => path.join(DIR, f)).find((f) => fs.readFileSync(f, 'utf8') === first.code);
    expect(file, 'the bundle is in the cache').to.be.a('string');
    // The bundle a worker runs names every workflow the service starts.
    expect(first.code).to.include('accountWorkflow').and.include('webhookDeliveryWorkflow');
    // Read back from the cache, not made again: a mark put into the cached file comes back.
    fs.appendFileSync(file!, '\n// read from the cache\n');
    expect((await bundleWorkflows()).code).to.equal(`${first.code}\n// read from the cache\n`);
    // Gone (a fresh clone, a cleaned cache): bundled again and written back.
    fs.rmSync(file!);
    expect((await bundleWorkflows()).code).to.equal(first.code);
    expect(fs.existsSync(file!)).to.equal(true);
  });
});
