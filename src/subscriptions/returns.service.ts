// The buyer back from the provider's approval page of a plan change: a fact for the account's actor (which checks
// the provider and applies, schedules or drops the change), then where to send the buyer.
import { inTransaction } from '../db/transaction.js';
import type { Deps } from '../deps.js';
import { recordTimeline } from '../timeline/timeline.service.js';
import { actorFact } from './actor-facts.js';
import { Subscription, type LastChange } from './subscriptions.entities.js';

/** How long the return waits for the actor to settle the change, so the page the buyer lands on shows it. */
const SETTLE_WAIT_MS = 8_000;

export type ReturnOutcome = LastChange['outcome'] | 'scheduled' | 'pending' | 'unknown';

async function where(deps: Deps, appId: string, accountId: string, changeId: string): Promise<ReturnOutcome> {
  const s = await deps.orm.em.fork().findOne(Subscription, { appId, accountId });
  if (!s) return 'unknown';
  if (s.pendingChange?.id === changeId) return 'pending';
  if (s.scheduledChange?.id === changeId) return 'scheduled';
  return s.lastChange?.id === changeId ? s.lastChange.outcome : 'unknown';
}

export async function returnFromProvider(
  deps: Deps,
  appId: string,
  changeId: string,
  accountId: string,
  outcome: 'approved' | 'refused',
): Promise<{ outcome: ReturnOutcome; location: string | null }> {
  const em = deps.orm.em.fork();
  const s = await em.findOne(Subscription, { appId, accountId });
  const pending = s?.pendingChange?.id === changeId ? s.pendingChange : null;
  const location = pending ? ((outcome === 'approved' ? pending.returnUrl : pending.cancelUrl) ?? null) : null;
  if (!pending) return { outcome: await where(deps, appId, accountId, changeId), location };
  await inTransaction(deps, em, async (t) => {
    await recordTimeline(t.em, {
      appId,
      accountId,
      kind: 'fact',
      type: 'buyer_returned',
      summary: `The buyer came back from the provider's approval page (${outcome === 'approved' ? 'approved' : 'refused'})`,
      by: { kind: 'system', id: null, name: 'buyer' },
      data: { change_id: changeId, outcome },
    });
    t.temporal(actorFact(appId, accountId, { kind: 'buyer_returned', changeId, outcome }));
  });
  const until = Date.now() + SETTLE_WAIT_MS;
  let now = await where(deps, appId, accountId, changeId);
  while (now === 'pending' && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 150));
    now = await where(deps, appId, accountId, changeId);
  }
  return { outcome: now, location };
}
