import { sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import type { Deps } from '../deps.js';
import { outboxSignal } from '../temporal/outbox.js';
import { actorFact } from '../subscriptions/actor-facts.js';
import { CHECKOUT_TTL_MS, checkoutDef, checkoutWorkflowId } from '../../workflows/shared.js';

/** The most workflows one recovery asks to check again, newest first (each check is one call to the provider). */
export const RECHECK_LIMIT = 1000;

/**
 * After a database outage this process noticed: every checkout still waiting for the buyer (within its 24 hours) and
 * every plan change still awaiting the buyer's approval is asked to check with the provider now (their workflows'
 * `providerNotified` signal, through the outbox). A provider notification answered 503 during the outage is not sent
 * again for a while (PayPal's retries back off over three days), and without this a purchase approved during a 2 s
 * outage waited for its checkout's next scheduled check, up to 15 minutes. A workflow that already has such a signal
 * waiting in the outbox (another process noticed the same outage) gets no second one; a finished workflow ignores it.
 */
export async function recheckAwaitingProvider(deps: Deps, downForMs: number) {
  const em = deps.orm.em.fork();
  const checkouts = await sql<{ id: string }>(
    em,
    `select c.id from checkouts c
      where c.status = 'created' and c.created_at > now() - make_interval(secs => $1)
        and not exists (select 1 from outbox o where o.workflow_id = 'checkout/' || c.id and o.kind = 'signal')
      order by c.created_at desc limit $2`,
    [CHECKOUT_TTL_MS / 1000, RECHECK_LIMIT],
  );
  const changes = await sql<{ app_id: string; account_id: string }>(
    em,
    `select s.app_id, s.account_id from subscriptions s
      where s.pending_change->>'id' is not null and s.pending_change->>'scheduledAt' is null
        and not exists (select 1 from outbox o
                         where o.workflow_id = 'account/' || s.app_id || '/' || s.account_id
                           and o.kind in ('signal', 'signalWithStart'))
      order by s.updated_at desc limit $1`,
    [RECHECK_LIMIT],
  );
  if (checkouts.length + changes.length > 0)
    await inTransaction(deps, em, async (t) => {
      for (const c of checkouts)
        t.temporal(outboxSignal(checkoutDef, checkoutWorkflowId(c.id), checkoutDef.signals.providerNotified));
      for (const c of changes)
        t.temporal(
          actorFact(c.app_id, c.account_id, {
            kind: 'provider_notified',
            eventType: 'DATABASE.RECOVERED',
            notificationId: null,
          }),
        );
    });
  deps.logger.info(
    { downForMs, checkouts: checkouts.length, planChanges: changes.length },
    'database back: checkouts and plan changes awaiting the provider check it again',
  );
  return { checkouts: checkouts.length, planChanges: changes.length };
}
