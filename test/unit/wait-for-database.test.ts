// The worker's wait for PostgreSQL (src/temporal/wait-for-database.ts) and the outage watch it shares with the API
// (src/db/outage.ts), as pure code: an activity whose database is unreachable waits for the watch's probe and runs
// again in the same attempt; a statement the server cancelled at its bound is no outage; an attempt with no time to
// wait, or whose wait ran out, goes back to Temporal (the latter with a one-second next retry). The same on real
// servers: test/processes/recovery.test.ts.
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor } from '@temporalio/worker';
import { expect } from 'chai';
import { DatabaseOutage } from '../../src/db/outage.js';
import { isServerBound } from '../../src/db/unavailable.js';
import { createLogger } from '../../src/logger.js';
import { waitForDatabase } from '../../src/temporal/wait-for-database.js';

const unreachable = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
const cancelled = () => Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });

/** A probe that fails until `back()` is called. */
function database() {
  let up = false;
  return {
    probe: () => (up ? Promise.resolve() : Promise.reject(unreachable())),
    back: () => {
      up = true;
    },
  };
}

/** The interceptor around `next`, for an activity with `startToCloseMs` (as Temporal's context gives it). */
function intercept(outage: DatabaseOutage, startToCloseMs: number, maxWaitMs?: number) {
  const controller = new AbortController();
  const ctx = {
    info: { activityType: 'attempt', workflowExecution: { workflowId: 'w' }, startToCloseTimeoutMs: startToCloseMs },
    cancellationSignal: controller.signal,
  };
  const factory = waitForDatabase(outage, maxWaitMs);
  const { inbound } = factory(ctx as unknown as Parameters<typeof factory>[0]) as {
    inbound: Required<ActivityInboundCallsInterceptor>;
  };
  return (next: () => Promise<unknown>) =>
    inbound.execute({ args: [] } as unknown as ActivityExecuteInput, () => next());
}

describe('activities wait for PostgreSQL in the worker (src/temporal/wait-for-database.ts)', () => {
  const logger = createLogger('silent');

  it('an unreachable database: the attempt waits for the probe and runs again at once when it answers', async () => {
    const db = database();
    const outage = new DatabaseOutage(logger, db.probe, 20);
    const back: number[] = [];
    outage.onRecovered((downForMs) => {
      back.push(downForMs);
    });
    let runs = 0;
    const result = intercept(
      outage,
      60_000,
    )(async () => {
      runs++;
      if (runs === 1) {
        setTimeout(() => {
          expect(outage.down).to.equal(true);
          expect(outage.waiting, 'the attempt waits on the watch').to.equal(1);
          db.back();
        }, 100);
        throw unreachable();
      }
      return 'sent';
    });
    expect(await result).to.equal('sent');
    expect(runs, 'run again in the same attempt').to.equal(2);
    expect(outage.down).to.equal(false);
    expect(back, 'the recovery listeners ran once').to.have.length(1);
    outage.stop();
  });

  it('a statement cancelled at its bound is no outage: passed on at once, nothing waits', async () => {
    const outage = new DatabaseOutage(logger, database().probe, 20);
    let runs = 0;
    const err = await intercept(
      outage,
      60_000,
    )(async () => {
      runs++;
      throw cancelled();
    }).catch((e: unknown) => e);
    expect((err as { code?: string }).code).to.equal('57014');
    expect(runs).to.equal(1);
    expect(outage.down).to.equal(false);
    expect(isServerBound(new Error('x', { cause: cancelled() })), 'found in a cause too').to.equal(true);
    expect(isServerBound(unreachable())).to.equal(false);
    outage.stop();
  });

  it('no time left to wait in (a short activity): the error goes to Temporal as it was', async () => {
    const outage = new DatabaseOutage(logger, database().probe, 20);
    const err = await intercept(outage, 10_000)(() => Promise.reject(unreachable())).catch((e: unknown) => e);
    expect((err as { code?: string }).code).to.equal('ECONNREFUSED');
    expect(outage.down, 'the watch was told all the same').to.equal(true);
    outage.stop();
  });

  it('still down when the wait runs out: a retryable failure whose next retry is a second away', async () => {
    const outage = new DatabaseOutage(logger, database().probe, 20);
    const err = await intercept(outage, 60_000, 150)(() => Promise.reject(unreachable())).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).type).to.equal('DatabaseUnavailable');
    expect((err as ApplicationFailure).nextRetryDelay).to.equal(1000);
    expect((err as ApplicationFailure).nonRetryable).to.equal(false);
    outage.stop();
  });
});
