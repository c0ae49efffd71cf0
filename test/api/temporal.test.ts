import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { inTransaction } from '../../src/db/transaction.js';
import { OutboxEntry } from '../../src/temporal/outbox.entities.js';
import type { TemporalHandle } from '../../src/temporal/client.js';
import { createLogger } from '../../src/logger.js';
import { enqueueTemporal, outboxCancel, outboxSignal, outboxStart } from '../../src/temporal/outbox.js';
import { OutboxRelay } from '../../src/temporal/relay.js';
import { pauseDef, pingDef, type WorkflowOf } from '../../workflows/shared.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

async function waitFor<T>(fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 100));
  }
}

const pingCommand = (workflowId: string, message: string) =>
  outboxStart(
    pingDef,
    workflowId,
    { message },
    { searchAttributes: { AppId: 'app_diag' }, summary: `Ping: ${message}` },
  );

describe('Temporal wiring', () => {
  it('runs a workflow on the real server through the worker and its activity (database read)', async () => {
    const { deps } = testEnv();
    const id = `diagnostics/ping/${randomUUID()}`;
    const handle = await deps.temporal.client.workflow.start<WorkflowOf<typeof pingDef>>(pingDef.name, {
      taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
      workflowId: id,
      args: [{ message: 'hello' }],
    });
    const result = await handle.result();
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
    const handle = deps.temporal.client.workflow.getHandle<WorkflowOf<typeof pingDef>>(id);
    expect((await handle.result()).message).to.equal('after-commit');
    expect((await handle.describe()).type).to.equal('pingWorkflow');
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
        return await deps.temporal.client.workflow.getHandle<WorkflowOf<typeof pingDef>>(id).result();
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
      tx.temporal(outboxSignal(pauseDef, id, pauseDef.signals.ended));
      tx.temporal(outboxCancel(id));
    });
    await deps.outbox.idle();
    expect(await deps.orm.em.fork().count(OutboxEntry, { workflowId: id })).to.equal(0);
  });

  it('a worker restart picks up where Temporal left off', async () => {
    const env = testEnv();
    await env.restartWorker();
    const id = `diagnostics/ping/${randomUUID()}`;
    const handle = await env.deps.temporal.client.workflow.start<WorkflowOf<typeof pingDef>>(pingDef.name, {
      taskQueue: env.config.TEMPORAL_TASK_QUEUE,
      workflowId: id,
      args: [{ message: 'after restart' }],
    });
    expect((await handle.result()).message).to.equal('after restart');
  });

  it('outbox: a dispatcher renews its claim while it works, so no other starts a command it holds (issue 29)', async () => {
    // Two dispatchers on a stand-in for Temporal that takes 150 ms per start: the first claims 16 commands and, one
    // at a time, needs 2.4 s for them, longer than its 1 s lease; the second tries to claim the same rows all along.
    const { deps } = testEnv();
    const running = new Map<string, string>();
    const starts: { id: string; by: string }[] = [];
    let overlaps = 0;
    const standIn = (by: string) =>
      ({
        taskQueue: 'stand-in',
        namespace: 'default',
        close: async () => undefined,
        connection: {
          withAbortSignal: (_s: AbortSignal, fn: () => Promise<unknown>) => fn(),
          withDeadline: (_d: number, fn: () => Promise<unknown>) => fn(),
          workflowService: { getSystemInfo: async () => ({}) },
        },
        client: {
          workflow: {
            start: async (_type: string, opts: { workflowId: string }) => {
              if (running.has(opts.workflowId)) overlaps++;
              running.set(opts.workflowId, by);
              starts.push({ id: opts.workflowId, by });
              await new Promise((r) => setTimeout(r, 150));
              running.delete(opts.workflowId);
            },
          },
        },
      }) as unknown as TemporalHandle;
    const opts = { leaseMs: 1000, callTimeoutMs: 400, concurrency: 1 };
    const first = new OutboxRelay(deps.orm, standIn('first'), createLogger('silent'), 200, opts);
    const second = new OutboxRelay(deps.orm, standIn('second'), createLogger('silent'), 200, opts);
    const em = deps.orm.em.fork();
    const prefix = `diagnostics/lease/${randomUUID()}`;
    // Due only in 20 s: the shared relay leaves them alone; a dispatch by id takes them at once (30 s of slack).
    const rows = Array.from({ length: 16 }, (_, i) => {
      const row = enqueueTemporal(em, pingCommand(`${prefix}/${i}`, 'lease'));
      row.nextAttemptAt = new Date(Date.now() + 20_000);
      return row;
    });
    await em.flush();
    const ids = rows.map((r) => Number(r.id));
    try {
      const started = Date.now();
      const work = first.dispatch(ids);
      // The second starts trying once the first holds them (else it may simply claim them first).
      await eventually(async () => starts.length > 0);
      let tries = 0;
      let done = false;
      void work.finally(() => (done = true));
      while (!done) {
        await second.dispatch(ids);
        tries++;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(await work).to.equal(16);
      const ms = Date.now() - started;
      expect(ms, 'longer than one lease: it had to renew').to.be.above(2000);
      expect(tries).to.be.above(10);
      expect(overlaps, 'never two starts of one command at once').to.equal(0);
      expect(
        starts.filter((s) => s.by === 'second'),
        'the second took nothing the first held',
      ).to.deep.equal([]);
      expect(starts.map((s) => s.id).sort()).to.deep.equal(rows.map((r) => r.workflowId).sort());
      expect(await deps.orm.em.fork().count(OutboxEntry, { workflowId: rows.map((r) => r.workflowId) })).to.equal(0);
    } finally {
      await deps.orm.em.fork().nativeDelete(OutboxEntry, { workflowId: rows.map((r) => r.workflowId) });
    }
  });

  it('the relay refuses a row naming a workflow type or signal this build does not define: kept, never sent', async () => {
    const { deps } = testEnv();
    const ids = [`diagnostics/unknown/${randomUUID()}`, `diagnostics/unknown/${randomUUID()}`];
    // Rows as another build (or a hand-written insert) might leave them: the writers cannot make these.
    const em = deps.orm.em.fork();
    const rows = [
      { kind: 'start', workflowType: 'noSuchWorkflow', workflowId: ids[0], args: [{}] },
      { kind: 'signal', workflowType: 'pauseWorkflow', workflowId: ids[1], signal: 'noSuchSignal', args: [] },
    ].map((payload) =>
      em.create(OutboxEntry, {
        kind: payload.kind,
        workflowId: payload.workflowId,
        workflowType: payload.workflowType,
        payload,
      }),
    );
    await em.flush();
    try {
      // The running relay may lease the rows before this call does: either way each is tried and kept.
      await deps.outbox.dispatch(rows.map((r) => Number(r.id)));
      const kept = await eventually(async () => {
        const found = await deps.orm.em.fork().find(OutboxEntry, { workflowId: ids }, { orderBy: { id: 'asc' } });
        return found.length === 2 && found.every((r) => r.attempts >= 1 && r.lastError) && found;
      });
      expect(kept[0].lastError).to.match(/unknown workflow type "noSuchWorkflow".*not sent to Temporal/);
      expect(kept[1].lastError).to.match(/unknown signal "noSuchSignal" for workflow type pauseWorkflow/);
      for await (const _ of deps.temporal.client.workflow.list({ query: `WorkflowId = '${ids[0]}'` }))
        expect.fail('no workflow may start for an unknown type');
    } finally {
      await deps.orm.em.fork().nativeDelete(OutboxEntry, { workflowId: ids });
    }
  });
});
