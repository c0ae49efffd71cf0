// The Python SDK's local evaluator through an outage (issue 44 items 2 and 5), as test/processes/stream.test.ts does
// it for the TypeScript SDK: an API process of its own on the suite's servers is stopped while a Python client
// checks and tracks from memory; that client process exits and a new one on the same buffer file tracks once more;
// the API starts again and every add is counted exactly once. The Python side is packages/sdk-python/tests/
// offline_local.py, driven step by step over its stdin and stdout; its other cases run in the SDK's pytest suite
// (tests/test_local.py, from test/sdk/python.test.ts).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { stopped, type Started } from '../helpers/processes.js';
import { ensurePythonSdkVenv, PY_SDK } from '../helpers/python.js';
import { tempDir } from '../helpers/servers.js';
import { standaloneApiWithCatalog } from '../helpers/standalone.js';

/** A Python process of the scenario: its output so far, a wait for a line, an answer on its stdin, its end. */
function pythonStep(python: string, args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(python, [path.join(PY_SDK, 'tests', 'offline_local.py'), ...args], {
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const lines = () => out.split('\n').map((l) => l.trim());
  return {
    async waitFor(line: string, ms = 60_000) {
      const end = Date.now() + ms;
      while (!lines().includes(line)) {
        if (child.exitCode !== null) throw new Error(`exited before "${line}":\n${out}\n${err}`);
        if (Date.now() > end) throw new Error(`no "${line}" after ${ms} ms:\n${out}\n${err}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    answer: (line: string) => child.stdin.write(`${line}\n`),
    /** The JSON it printed last, once it has exited with 0. */
    async result(): Promise<Record<string, unknown>> {
      const code = await exit;
      expect(code, `${out}\n${err}`).to.equal(0);
      return JSON.parse(lines().filter(Boolean).at(-1)!) as Record<string, unknown>;
    },
    kill: () => child.exitCode === null && child.kill('SIGKILL'),
  };
}

describe('Python SDK: local evaluation with the API stopped and the client restarted', function () {
  this.timeout(240_000);
  const started: Started[] = [];
  const steps: { kill: () => unknown }[] = [];
  afterEach(async () => {
    for (const s of steps.splice(0)) s.kill();
    for (const p of started.splice(0)) await stopped(p.child);
  });

  it('answers from memory, buffers in its file across a restart, and each add is counted once after', async () => {
    const python = await ensurePythonSdkVenv();
    const { api, base, app, client, restart } = await standaloneApiWithCatalog('python offline', started);
    const file = path.join(tempDir('offerkit-pybuffer-'), 'usage.jsonl');
    const env = {
      ...process.env,
      PYTHONPATH: path.join(PY_SDK, 'src'),
      PYTHONDONTWRITEBYTECODE: '1',
      OFFERKIT_BASE_URL: base,
      OFFERKIT_APP_ID: app.id,
      OFFERKIT_SECRET_KEY: app.api_key,
      OFFERKIT_STRICT_RESPONSES: '1',
    };

    // The first client process: ada read while the API is up, then the API stops.
    const before = pythonStep(python, ['before', file], env);
    steps.push(before);
    await before.waitFor('loaded');
    expect(await stopped(api.child)).to.equal(0);
    before.answer('stopped');
    const seen = await before.result();
    // The account it knew: from memory, its own adds counted in (5 × 2 of 100). One it never saw: the
    // per-entitlement policy (calls open, everything else closed).
    expect(seen).to.deep.equal({
      ada_calls: true,
      ada_sso: false,
      zed_calls: true,
      zed_sso: false,
      usage: 10,
      pending: 5,
      stale: true,
    });
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n');
    expect(lines).to.have.length(5);
    expect(new Set(lines.map((l) => (JSON.parse(l) as { key: string }).key)).size).to.equal(5);

    // The client restarts (a new process on the same file) while the API is still down, then the API is back.
    const after = pythonStep(python, ['after', file], env);
    steps.push(after);
    await after.waitFor('buffered');
    await restart();
    after.answer('started');
    expect(await after.result()).to.deep.equal({ restored: 5, count: 11 });
    expect((await client.usage.get('ada', 'calls')).count).to.equal(11);
    expect(fs.readFileSync(file, 'utf8')).to.equal('');
  });
});
