// Activities that could not reach PostgreSQL wait for it in the worker and go on as soon as it answers again,
// instead of failing into Temporal's retry backoff (up to ACTIVITY_RETRY_MAX_MS, a minute by default): after a long
// outage the backoff had grown to its cap, and the work resumed up to a minute after the database was back
// (issue 39: the last webhook delivery came 52 s after a 210 s freeze ended).
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { DatabaseOutage } from '../db/outage.js';
import { isDatabaseUnavailable, isServerBound } from '../db/unavailable.js';

/** The longest one attempt waits in the worker for the database before it hands the attempt back to Temporal. */
export const ACTIVITY_DATABASE_WAIT_MS = 30_000;
/** What an attempt keeps of its start-to-close time for the work itself once the database is back. */
const WORK_MARGIN_MS = 15_000;
/** Temporal's next attempt after one that waited its time out: at once, the attempt itself was the backoff. */
const AFTER_WAIT_RETRY_MS = 1_000;
/** Runs of the activity within one attempt, each after a recovery (a database that keeps flapping is Temporal's). */
const MAX_RUNS = 4;

/**
 * An activity interceptor (every activity, local or not): when the activity fails because PostgreSQL is unreachable,
 * the process's outage watch (`DatabaseOutage`, probing every half second) is told, and the attempt waits for the
 * database to answer again, then runs the activity again: the work resumes within a probe of the recovery. An attempt
 * waits at most `ACTIVITY_DATABASE_WAIT_MS`, and never into the last `WORK_MARGIN_MS` of its start-to-close time; when
 * the database is still gone it fails as retryable with a one-second next retry (the wait was the backoff), so
 * Temporal's own backoff never grows during an outage and the attempts stay a few per minute per activity. Every
 * activity already tolerates being run again (each is retried by Temporal on any failure), so running it again
 * inside the attempt adds nothing new. Other errors, and a worker shutting down (the attempt is cancelled), are
 * passed on unchanged.
 */
export function waitForDatabase(
  outage: DatabaseOutage,
  maxWaitMs = ACTIVITY_DATABASE_WAIT_MS,
): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const started = Date.now();
        for (let run = 1; ; run++) {
          try {
            return await next(input);
          } catch (err) {
            if (!isDatabaseUnavailable(err) || isServerBound(err)) throw err;
            outage.failed(err, { activity: ctx.info.activityType, workflowId: ctx.info.workflowExecution?.workflowId });
            const left = ctx.info.startToCloseTimeoutMs - (Date.now() - started) - WORK_MARGIN_MS;
            // No time left to wait in (a short activity), or a database that keeps coming and going: Temporal's own
            // backoff, as before.
            if (left < 1000 || run >= MAX_RUNS) throw err;
            if (await outage.waitForRecovery(Math.min(maxWaitMs, left), ctx.cancellationSignal)) continue;
            if (ctx.cancellationSignal.aborted) throw err;
            throw ApplicationFailure.create({
              type: 'DatabaseUnavailable',
              message: `PostgreSQL is unreachable: ${String((err as Error)?.message ?? err)}`,
              cause: err as Error,
              nextRetryDelay: AFTER_WAIT_RETRY_MS,
            });
          }
        }
      },
    },
  });
}
