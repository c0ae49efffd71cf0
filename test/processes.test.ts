import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { createLogger } from '../src/logger.js';
import { ensureTemporalCli } from '../src/temporal/devserver.js';
import { freePort, tempDir, testEnv } from './helpers/servers.js';
import { pingDef } from '../workflows/shared.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function run(script: string, env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, output: () => out };
}

async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 60_000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const stopped = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });

describe('separate API and worker processes (npm run start:api / start:worker)', function () {
  this.timeout(120_000);

  it('an API process and a worker process share external servers', async () => {
    const { config } = testEnv();
    const port = await freePort();
    const queue = `offerkit-split-${process.pid}`;
    const env = {
      DATABASE_URL: config.databaseUrl,
      TEMPORAL_ADDRESS: config.temporalAddress,
      TEMPORAL_TASK_QUEUE: queue,
      ADMIN_API_KEY: 'adm_split',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: tempDir('offerkit-split-'),
    };
    const api = run('src/api.ts', env);
    const worker = run('src/worker.ts', env);
    try {
      await until(() => api.output().includes('API listening'), 'API');
      await until(() => worker.output().includes('worker running'), 'worker');
      const health = await fetch(`http://127.0.0.1:${port}/health`);
      expect(await health.json()).to.deep.include({ ok: true, database: 'ok', temporal: 'ok' });
      const created = await fetch(`http://127.0.0.1:${port}/apps`, {
        method: 'POST',
        headers: { Authorization: 'Bearer adm_split', 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'split' }),
      });
      expect(created.status).to.equal(201);
      // The worker process (not this one) serves its task queue.
      const result = await testEnv().deps.temporal.client.workflow.execute(pingDef.name, {
        taskQueue: queue,
        workflowId: `diagnostics/ping/split-${process.pid}`,
        args: [{ message: 'split' }],
      });
      expect((result as { workerPid: number }).workerPid).to.equal(worker.child.pid);
    } finally {
      expect(await stopped(api.child)).to.equal(0);
      expect(await stopped(worker.child)).to.equal(0);
    }
  });
});

describe('finding the Temporal CLI', () => {
  const logger = createLogger('silent');
  it('says clearly what to do when it is missing and Go is not installed', () => {
    const savedPath = process.env.PATH;
    process.env.PATH = tempDir('offerkit-empty-path-');
    try {
      expect(() => ensureTemporalCli(undefined, logger, { toolsBin: tempDir('offerkit-no-tools-') })).to.throw(
        /Temporal CLI was not found.*TEMPORAL_CLI.*go install github\.com\/temporalio\/cli\/cmd\/temporal@v1\.5\.1.*TEMPORAL_ADDRESS/s,
      );
    } finally {
      process.env.PATH = savedPath;
    }
  });
  it('rejects a TEMPORAL_CLI that does not exist', () => {
    expect(() => ensureTemporalCli('/nowhere/temporal', logger)).to.throw(/TEMPORAL_CLI points at \/nowhere\/temporal/);
  });
});
