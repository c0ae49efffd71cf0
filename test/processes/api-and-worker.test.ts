import { expect } from 'chai';
import pg from 'pg';
import { openOrm, type Orm } from '../../src/db/orm.js';
import { entities } from '../../src/entities.js';
import { createLogger } from '../../src/logger.js';
import { connectTemporal, type TemporalHandle } from '../../src/temporal/client.js';
import { ensureTemporalCli } from '../../src/temporal/devserver.js';
import { OUTBOX_LEASE_MS, OutboxRelay } from '../../src/temporal/relay.js';
import { serviceEnv, startApi, startWorker, stopped, waitForListening, waitForOutput } from '../helpers/processes.js';
import { tcpProxy } from '../helpers/proxy.js';
import { freePort, tempDir, testEnv } from '../helpers/servers.js';
import { accountWorkflowId, pingDef } from '../../workflows/shared.js';

async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 60_000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('separate API and worker processes (npm run start:api / start:worker)', function () {
  this.timeout(120_000);

  it('an API process and a worker process share external servers', async () => {
    const port = await freePort();
    const queue = `offerkit-split-${process.pid}`;
    const env = serviceEnv(port, { ADMIN_API_KEY: 'adm_split', TEMPORAL_TASK_QUEUE: queue });
    const api = startApi(env);
    const worker = startWorker(env);
    try {
      await waitForListening(api, 60_000);
      await waitForOutput(worker, 'worker running', 60_000);
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

describe('outbox claims of a process killed with SIGKILL (issue 29)', function () {
  this.timeout(120_000);

  it('are taken over by another process within seconds, once the dead claim runs out, not after a 60 s lock', async () => {
    const { config } = testEnv();
    // A database of its own on the shared server, so no other relay polls this outbox.
    const dbName = `offerkit_takeover_${process.pid}_${Date.now()}`;
    const admin = new pg.Client({ connectionString: config.databaseUrl });
    await admin.connect();
    await admin.query(`create database ${dbName}`);
    const url = new URL(config.databaseUrl);
    url.pathname = `/${dbName}`;
    const databaseUrl = url.toString();
    const db = async <T>(text: string, params: unknown[] = []) => {
      const c = new pg.Client({ connectionString: databaseUrl });
      await c.connect();
      try {
        return (await c.query(text, params)).rows as T[];
      } finally {
        await c.end();
      }
    };
    // The API process reaches Temporal through a proxy that can cut it off: its call then gets no answer.
    const proxy = await tcpProxy(config.temporalAddress);
    const port = await freePort();
    const queue = `offerkit-takeover-${process.pid}`;
    const api = startApi(
      serviceEnv(port, {
        ADMIN_API_KEY: 'adm_takeover',
        DATABASE_URL: databaseUrl,
        TEMPORAL_ADDRESS: proxy.address,
        TEMPORAL_TASK_QUEUE: queue,
      }),
    );
    let orm: Orm | undefined;
    let temporal: TemporalHandle | undefined;
    let relay: OutboxRelay | undefined;
    const workflowIds: string[] = [];
    try {
      await waitForListening(api, 60_000);
      const call = async (method: string, p: string, token: string, body?: unknown) => {
        const res = await fetch(`http://127.0.0.1:${port}${p}`, {
          method,
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
          body: body ? JSON.stringify(body) : undefined,
        });
        return { status: res.status, body: (await res.json()) as Record<string, string> };
      };
      const app = (await call('POST', '/apps', 'adm_takeover', { name: 'takeover' })).body;
      for (const [p, body] of [
        ['plans', { id: 'free', name: 'Free', isFree: true }],
        ['incentives', { id: 'promo', name: 'Promo' }],
      ] as const)
        expect((await call('POST', `/apps/${app.id}/${p}`, app.api_key, body)).status).to.equal(201);

      proxy.partitioned = true;
      const created = await call('POST', `/apps/${app.id}/namespaces`, app.api_key, {
        id: 'ada',
        incentive: 'promo',
        incentive_expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      });
      expect(created.status).to.equal(201);
      workflowIds.push(accountWorkflowId(app.id, 'ada')); // the account's actor (issue 40) waits for the incentive's end
      // Right after the commit the process claims the command and calls Temporal, which does not answer: it dies
      // then, well within its 5 s call timeout (after which it would give the command back itself).
      let claim: { claimed_by: string; claimed_at: Date } | undefined;
      await until(
        async () => {
          [claim] = await db<{ claimed_by: string; claimed_at: Date }>(
            `select claimed_by, next_attempt_at - make_interval(secs => $1) as claimed_at from outbox
            where claimed_by is not null`,
            [OUTBOX_LEASE_MS / 1000],
          );
          return claim !== undefined;
        },
        'the claim',
        5_000,
      );
      api.child.kill('SIGKILL');
      await new Promise((r) => api.child.once('exit', r));
      const [held] = await db<{ claimed_by: string; lease_end: Date }>(
        'select claimed_by, next_attempt_at as lease_end from outbox',
      );
      expect(held.claimed_by, 'still claimed by the dead process').to.equal(claim!.claimed_by);

      // Another process runs the relay, as a worker process does, against the same database and Temporal.
      orm = await openOrm(databaseUrl, entities, 2);
      temporal = await connectTemporal({ address: config.temporalAddress, namespace: 'default', taskQueue: queue });
      relay = new OutboxRelay(orm, temporal, createLogger('silent'), 200);
      relay.start();
      const handle = temporal.client.workflow.getHandle(workflowIds[0]);
      let startedAt = 0;
      await until(
        async () => {
          startedAt = (await handle.describe().catch(() => null))?.startTime.getTime() ?? 0;
          return startedAt > 0;
        },
        'the workflow started by the other process',
        60_000,
      );
      const claimedAt = claim!.claimed_at.getTime();
      const leaseEnd = held.lease_end.getTime();
      expect(startedAt, 'not while the dead process held its claim').to.be.at.least(leaseEnd);
      expect(startedAt, 'before a 60 s lock would have run out').to.be.below(claimedAt + 60_000);
      await until(async () => (await db('select 1 from outbox')).length === 0, 'the outbox drained', 10_000);
      process.stdout.write(
        `      (claimed, killed; started by the other process ${((startedAt - claimedAt) / 1000).toFixed(1)} s after ` +
          `the claim, ${((startedAt - leaseEnd) / 1000).toFixed(1)} s after its lease ran out)\n`,
      );
    } finally {
      await relay?.stop();
      for (const id of workflowIds)
        await temporal?.client.workflow
          .getHandle(id)
          .terminate('test over')
          .catch(() => undefined);
      await temporal?.close();
      await orm?.close();
      if (api.child.exitCode === null && api.child.signalCode === null) api.child.kill('SIGKILL');
      await proxy.close();
      await admin.query(`drop database if exists ${dbName} with (force)`).catch(() => undefined);
      await admin.end();
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
