// Who decides an intent's fate when its caller stops waiting: the API, which answered 503 "nothing was changed" after
// 5 s without Temporal taking it, or the account actor, which took it (the acceptance can come just before the
// deadline and its news after the 5 s, on a slow machine). Both write their claim on the account's timeline under a
// lock on the request's id, and the first one wins: an intent the API gave up on is refused by the actor, and an
// intent the actor took makes the API say that its outcome is unknown instead of "nothing was changed". A retried
// activity finds its own claim (and, once the intent applied, its outcome lines) by the same request id.
import type { EntityManager } from '@mikro-orm/postgresql';
import { sql } from '../db/sql.js';
import type { Requester } from '../../workflows/billing-rules.js';
import { recordTimeline } from '../timeline/timeline.service.js';

interface Claim {
  appId: string;
  accountId: string;
  requestId: string;
  /** The intent's kind (the line's type). */
  type: string;
  by: Requester;
  /** The actor's workflow id (its timeline line links it). */
  workflowId: string;
}

/** The timeline lines of the request, under a transaction-long lock on its id (both claims take it). */
async function lockedLines(em: EntityManager, c: Claim) {
  await sql(em, 'select pg_advisory_xact_lock(hashtextextended($1, 40))', [`intent:${c.requestId}`]);
  return sql<{ kind: string; reason: string | null }>(
    em,
    `select kind, data->>'reason' as reason from account_timeline
      where app_id = $1 and account_id = $2 and data->>'request_id' = $3`,
    [c.appId, c.accountId, c.requestId],
  );
}

/**
 * The API stopped waiting for Temporal to take the intent: 'abandoned' (the actor will refuse it, nothing changes)
 * unless the actor took it first ('taken': its outcome is unknown to the caller).
 */
export async function abandonIntent(em: EntityManager, c: Claim): Promise<'abandoned' | 'taken'> {
  return em.transactional(async (t) => {
    const lines = await lockedLines(t, c);
    if (lines.some((l) => l.kind === 'intent')) return 'taken';
    if (!lines.some((l) => l.reason === 'abandoned'))
      await recordTimeline(t, {
        appId: c.appId,
        accountId: c.accountId,
        kind: 'refusal',
        type: c.type,
        summary: 'Not taken within 5 s (Temporal was slow or unreachable): answered 503, nothing was changed',
        by: c.by,
        data: { reason: 'abandoned', request_id: c.requestId },
        workflowId: c.workflowId,
        runId: null,
      });
    return 'abandoned';
  });
}

/**
 * The actor's activity takes the intent (writing its intent line once): 'taken', or 'abandoned' when the API already
 * answered its caller that nothing was changed. `applied`: an outcome of it is already recorded (a retried activity
 * whose first attempt committed before it could report).
 */
export async function takeIntent(
  em: EntityManager,
  c: Claim & { summary: string },
): Promise<{ claim: 'taken' | 'abandoned'; applied: boolean }> {
  return em.transactional(async (t) => {
    const lines = await lockedLines(t, c);
    if (lines.some((l) => l.reason === 'abandoned')) return { claim: 'abandoned', applied: false };
    if (!lines.some((l) => l.kind === 'intent'))
      await recordTimeline(t, {
        appId: c.appId,
        accountId: c.accountId,
        kind: 'intent',
        type: c.type,
        summary: c.summary,
        by: c.by,
        data: { request_id: c.requestId },
      });
    return { claim: 'taken', applied: lines.some((l) => l.kind === 'outcome') };
  });
}
