// The Python SDK (packages/sdk-python) against the suite's real servers: its pytest suite, the Python examples of
// its README and of docs/sdk.md run as written, mypy --strict over the package, its tests and those examples, ruff,
// `pip install ./packages/sdk-python`, and its operation table beside the TypeScript SDK's and the route table.
// Python comes from a virtual environment under .tools/ (test/helpers/python.ts), made once per pin set.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { OPERATIONS } from '@offerkit/sdk';
import { EVENT_TYPES } from '../../src/events/event-types.js';
import { createTestApp } from '../helpers/factories.js';
import {
  ensurePythonSdkVenv,
  pipFor,
  PY_SDK,
  pythonExamples,
  pythonProgram,
  run,
  venvDir,
  type PyResult,
} from '../helpers/python.js';
import { EXAMPLE_MARK, outputMatches, splitOutput } from '../helpers/readme.js';
import { PAYPAL_TEST_CREDENTIALS, testEnv } from '../helpers/servers.js';

const ROOT = path.resolve(PY_SDK, '../..');
const README_FILES = ['packages/sdk-python/README.md', 'docs/sdk.md'];

/** The end of a tool's output, for an assertion's message. */
const tail = (r: PyResult, lines = 80) => `${r.stdout}\n${r.stderr}`.trim().split('\n').slice(-lines).join('\n');

describe('Python SDK: packages/sdk-python against the real servers', function () {
  this.timeout(600_000);
  let python: string;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let checks: Promise<[PyResult, PyResult, PyResult]>;

  before(async () => {
    python = await ensurePythonSdkVenv();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'offerkit-python-'));
    const [[clientId, clientSecret]] = Object.entries(PAYPAL_TEST_CREDENTIALS);
    // The event catalog's samples, as deliveries would carry them: each must fit its event's model.
    const samples = EVENT_TYPES.map((e, i) => ({
      id: `evt_sample${i}`,
      type: e.type,
      created_at: '2026-01-15T10:30:00.000Z',
      app_id: 'app_sample',
      data: e.sample(),
    }));
    fs.writeFileSync(path.join(dir, 'event-samples.json'), JSON.stringify(samples));
    env = {
      ...process.env,
      PYTHONPATH: path.join(PY_SDK, 'src'),
      PYTHONDONTWRITEBYTECODE: '1',
      OFFERKIT_BASE_URL: testEnv().baseUrl,
      OFFERKIT_ADMIN_KEY: testEnv().adminKey,
      OFFERKIT_PAYPAL_URL: testEnv().paypal.baseUrl,
      OFFERKIT_STRICT_RESPONSES: '1',
      OFFERKIT_EVENT_SAMPLES: path.join(dir, 'event-samples.json'),
      PAYPAL_CLIENT_ID: clientId,
      PAYPAL_CLIENT_SECRET: clientSecret,
    };
    // The README programs, written now so that mypy checks them too (they run in their own test below).
    for (const file of README_FILES) {
      const examples = pythonExamples(path.join(ROOT, file));
      fs.writeFileSync(
        path.join(dir, `readme_${file.replace(/\W+/g, '_')}.py`),
        pythonProgram(examples, (i) => `${EXAMPLE_MARK} ${i}`),
      );
    }
    // Static checks use the CPU while the tests below wait on the servers: started now, awaited last.
    const cache = path.join(venvDir(), 'mypy-cache');
    const readmes = fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.py'))
      .map((f) => path.join(dir, f));
    checks = Promise.all([
      run(python, ['-m', 'mypy', '--cache-dir', cache, 'src', 'tests', ...readmes], { cwd: PY_SDK, env }),
      run(python, ['-m', 'ruff', 'check', '--no-cache', '.'], { cwd: PY_SDK, env }),
      run(python, ['-m', 'ruff', 'format', '--check', '--no-cache', '.'], { cwd: PY_SDK, env }),
    ]);
  });

  after(() => dir && fs.rmSync(dir, { recursive: true, force: true }));

  // The TypeScript SDK's table is the route table's (test/sdk/generate.test.ts); this file may not import the
  // generator (its top-level await makes mocha load a second copy of the servers' module).
  it('offers the same operations as the TypeScript SDK, with the same routes and credentials', async () => {
    const script =
      'import json, offerkit\n' +
      'print(json.dumps([[o.name, o.python_name, o.method, o.path, list(o.params), list(o.auth)] ' +
      'for o in offerkit.OPERATIONS]))\n';
    const res = await run(python, ['-c', script], { env });
    expect(res.code, tail(res)).to.equal(0);
    const py = JSON.parse(res.stdout) as [string, string, string, string, string[], string[]][];
    expect(
      py.map((o) => o[0]),
      'the TypeScript SDK',
    ).to.deep.equal(OPERATIONS.map((o) => o.name));
    for (const [i, [name, pyName, method, p, params, auth]] of py.entries()) {
      const ts = OPERATIONS[i];
      expect([method, p, params, auth], name).to.deep.equal([ts.method, ts.path, [...ts.params], [...ts.auth]]);
      // The Python name is the TypeScript one in snake_case.
      expect(pyName, name).to.equal(name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));
    }
  });

  it('pytest: the package against the real service (sync and async clients, errors, retries, webhooks)', async () => {
    const junit = path.join(dir, 'pytest.xml');
    const res = await run(
      python,
      ['-m', 'pytest', '-q', '--tb=short', '-p', 'no:cacheprovider', `--junitxml=${junit}`],
      {
        cwd: PY_SDK,
        env,
      },
    );
    expect(res.code, tail(res)).to.equal(0);
    const suite = fs.readFileSync(junit, 'utf8').match(/<testsuite [^>]*>/)?.[0] ?? '';
    const count = (name: string) => Number(suite.match(new RegExp(`\\b${name}="(\\d+)"`))?.[1] ?? NaN);
    expect(count('skipped'), `nothing skipped: ${suite}`).to.equal(0);
    expect(count('tests'), `tests ran: ${suite}`).to.be.greaterThan(20);
  });

  for (const file of README_FILES) {
    it(`${file}: every Python example runs as written and prints what it promises`, async () => {
      const examples = pythonExamples(path.join(ROOT, file));
      expect(examples.length, file).to.be.greaterThan(file.endsWith('README.md') ? 5 : 0);
      const app = await createTestApp(`Python README ${file}`);
      const res = await run(python, [path.join(dir, `readme_${file.replace(/\W+/g, '_')}.py`)], {
        cwd: dir,
        env: {
          ...env,
          // What the README tells the reader to set.
          OFFERKIT_APP_ID: app.id,
          OFFERKIT_SECRET_KEY: app.api_key,
          OFFERKIT_PUBLISHABLE_KEY: app.public_key,
          OFFERKIT_STRICT_RESPONSES: '1',
        },
      });
      expect(res.code, `${file} exited non-zero:\n${tail(res)}`).to.equal(0);
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

  it('pip install ./packages/sdk-python builds it (hatchling) and the installed copy works', async () => {
    const target = path.join(dir, 'installed');
    // --no-build-isolation: the pinned hatchling of the environment builds it, with no download per run.
    const [pip, pipArgs] = pipFor(python);
    const install = await run(
      pip,
      [...pipArgs, 'install', '-q', '--no-deps', '--no-build-isolation', '--target', target, PY_SDK],
      { env, cwd: dir },
    );
    expect(install.code, tail(install)).to.equal(0);
    expect(fs.existsSync(path.join(target, 'offerkit', 'py.typed')), 'typed (PEP 561)').to.equal(true);
    expect(fs.existsSync(path.join(target, 'tests')), 'tests stay out of the wheel').to.equal(false);
    const script =
      'import offerkit, sys\n' +
      'assert offerkit.__file__.startswith(sys.argv[1]), offerkit.__file__\n' +
      'c = offerkit.SecretClient(secret_key=sys.argv[2], app_id=sys.argv[3], base_url=sys.argv[4])\n' +
      'print(offerkit.__version__, c.apps.get().id == sys.argv[3])\n';
    const app = await createTestApp('Python installed');
    const res = await run(python, ['-c', script, target, app.api_key, app.id, testEnv().baseUrl], {
      env: { ...env, PYTHONPATH: target },
      cwd: dir,
    });
    expect(res.code, tail(res)).to.equal(0);
    expect(res.stdout.trim()).to.equal('0.1.0 True');
  });

  it('mypy --strict (the package, its tests, the README examples) and ruff find nothing', async () => {
    const [mypy, lint, format] = await checks;
    expect(mypy.code, `mypy:\n${tail(mypy)}`).to.equal(0);
    expect(mypy.stdout).to.match(/^Success: no issues found/m);
    expect(lint.code, `ruff check:\n${tail(lint)}`).to.equal(0);
    expect(format.code, `ruff format --check:\n${tail(format)}`).to.equal(0);
  });
});
