import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { inTransaction } from '../src/db/transaction.js';
import { OutboxEntry } from '../src/temporal/outbox.entities.js';
import { enqueueTemporal } from '../src/temporal/outbox.js';
import type { PingResult } from '../workflows/shared.js';
import { testEnv } from './helpers/servers.js';

async function waitFor<T>(fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 100));
  }
}

const pingCommand = (workflowId: string, message: string) => ({
  kind: 'start' as const,
  workflowType: 'pingWorkflow',
  workflowId,
  args: [{ message }],
  searchAttributes: { AppId: 'app_diag' },
  summary: `Ping: ${message}`,
});

describe('Temporal wiring', () => {
  it('runs a workflow on the real server through the worker and its activity (database read)', async () => {
    const { deps } = testEnv();
    const id = `diagnostics/ping/${randomUUID()}`;
    const handle = await deps.temporal.client.workflow.start('pingWorkflow', {
      taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
      workflowId: id,
      args: [{ message: 'hello' }],
    });
    const result = (await handle.result()) as PingResult;
    expect(result.message).to.equal('hello');
    expect(result.workerPid).to.equal(process.pid);
    expect(Math.abs(Date.parse(result.databaseTime) - Date.now())).to.be.below(60_000);
  });

  it('outbox: a command committed with a change starts its workflow right after commit', async () => {
    const { deps } = testEnv();
    const id = `diagnostics/ping/${randomUUID()}`;
    await inTransaction(deps, deps.orm.em.fork(), async (tx) => {
      tx.temporal(pingCommand(id, 'after-commit'));
    });
    await deps.outbox.idle(); // started in the background right after the commit
    const handle = deps.temporal.client.workflow.getHandle(id);
    expect(((await handle.result()) as PingResult).message).to.equal('after-commit');
    const desc = await handle.describe();
    expect(desc.typedSearchAttributes.getAll().find((p) => p.key.name === 'AppId')?.value).to.equal('app_diag');
    expect(await desc.staticSummary()).to.equal('Ping: after-commit');
    expect(await deps.orm.em.fork().count(OutboxEntry, { workflowId: id })).to.equal(0);
  });

  it('outbox: nothing starts when the transaction rolls back', async () => {
    const { deps } = testEnv();
    const id = `diagnostics/ping/${randomUUID()}`;
    let threw = false;
    try {
      await inTransaction(deps, deps.orm.em.fork(), async (tx) => {
        tx.temporal(pingCommand(id, 'rolled-back'));
        await tx.em.flush();
        throw new Error('abort');
      });
    } catch {
      threw = true;
    }
    expect(threw).to.equal(true);
    expect(await deps.orm.em.fork().count(OutboxEntry, { workflowId: id })).to.equal(0);
    await new Promise((r) => setTimeout(r, 500));
    const listed = deps.temporal.client.workflow.list({ query: `WorkflowId = '${id}'` });
    for await (const _ of listed) expect.fail('workflow should not exist');
  });

  it('outbox relay: a committed command whose start never happened (crash) is started later', async () => {
    const { deps } = testEnv();
    const id = `diagnostics/ping/${randomUUID()}`;
    // Commit the row but "crash" before dispatch: no call to deps.outbox.dispatch.
    const em = deps.orm.em.fork();
    enqueueTemporal(em, pingCommand(id, 'recovered'));
    await em.flush();
    const result = await waitFor(async () => {
      try {
        return (await deps.temporal.client.workflow.getHandle(id).result()) as PingResult;
      } catch {
        return undefined;
      }
    });
    expect(result.message).to.equal('recovered');
    await waitFor(async () =>
      (await deps.orm.em.fork().count(OutboxEntry, { workflowId: id })) === 0 ? true : undefined,
    );
  });

  it('a repeated start (double dispatch, or after completion) is harmless: one run only', async () => {
    const { deps } = testEnv();
    const id = `diagnostics/ping/${randomUUID()}`;
    await inTransaction(deps, deps.orm.em.fork(), async (tx) => tx.temporal(pingCommand(id, 'once')));
    await deps.outbox.idle(); // the start runs after the commit, in the background
    await deps.temporal.client.workflow.getHandle(id).result();
    // The same command again, as a relay would after a crash between start and delete.
    await inTransaction(deps, deps.orm.em.fork(), async (tx) => tx.temporal(pingCommand(id, 'once')));
    await deps.outbox.idle();
    expect(await deps.orm.em.fork().count(OutboxEntry, { workflowId: id })).to.equal(0);
    let runs = 0;
    for await (const _ of deps.temporal.client.workflow.list({ query: `WorkflowId = '${id}'` })) runs++;
    expect(runs).to.equal(1);
  });

  it('a signal or cancel for a workflow that no longer exists is dropped, not retried forever', async () => {
    const { deps } = testEnv();
    const id = `diagnostics/missing/${randomUUID()}`;
    await inTransaction(deps, deps.orm.em.fork(), async (tx) => {
      tx.temporal({ kind: 'signal', workflowId: id, signal: 'resume', args: [] });
      tx.temporal({ kind: 'cancel', workflowId: id });
    });
    await deps.outbox.idle();
    expect(await deps.orm.em.fork().count(OutboxEntry, { workflowId: id })).to.equal(0);
  });

  it('a worker restart picks up where Temporal left off', async () => {
    const env = testEnv();
    await env.restartWorker();
    const id = `diagnostics/ping/${randomUUID()}`;
    const handle = await env.deps.temporal.client.workflow.start('pingWorkflow', {
      taskQueue: env.config.TEMPORAL_TASK_QUEUE,
      workflowId: id,
      args: [{ message: 'after restart' }],
    });
    expect(((await handle.result()) as PingResult).message).to.equal('after restart');
  });
});
