import type { Deps } from '../deps.js';
import { inTransaction } from '../db/transaction.js';
import { boundedCall, REQUEST_TEMPORAL_TIMEOUT_MS } from '../temporal/client.js';
import { settlePendingSave } from '../cancel-flows/pending-saves.service.js';
import {
  planChangeDef,
  planChangeWorkflowId,
  type PlanChangeInput,
  type PlanChangeOutcome,
} from '../../workflows/shared.js';
import { Subscription } from './subscriptions.entities.js';
import { findSubscription, syncSubscription } from './subscriptions.service.js';

type Check = PlanChangeOutcome | 'pending';

/** How a change the subscription no longer waits on ended (its `last_change`), or `replaced` by another. */
async function settled(deps: Deps, input: Pick<PlanChangeInput, 'appId' | 'accountId' | 'changeId'>) {
  const s = await deps.orm.em.fork().findOne(Subscription, { appId: input.appId, accountId: input.accountId });
  if (s?.pendingChange?.id === input.changeId) return s.pendingChange.scheduledAt ? 'scheduled' : ('pending' as const);
  return s?.lastChange?.id === input.changeId ? s.lastChange.outcome : ('replaced' as const);
}

/**
 * The change's workflow checks: re-reads the subscription at the provider (an approved change is applied there,
 * and a save it carries counts from then on), then says where the change stands.
 */
export async function checkPlanChange(deps: Deps, input: PlanChangeInput): Promise<Check> {
  const now = await settled(deps, input);
  if (now !== 'pending') return now;
  await syncSubscription(deps, input.appId, input.accountId);
  return settled(deps, input);
}

/**
 * Drops a change the buyer refused or did not approve in time, unless the provider reports it approved (then it
 * is applied instead): the subscription stops waiting on it (`last_change`), and a save it carried goes back to
 * `open` at its offer step, where the customer can accept again, decline, or go on to cancel.
 */
export async function dropPlanChange(
  deps: Deps,
  input: Pick<PlanChangeInput, 'appId' | 'accountId' | 'changeId'>,
  why: 'refused' | 'expired',
): Promise<Check> {
  if ((await settled(deps, input)) !== 'pending') return settled(deps, input);
  // The provider's word first: a change approved meanwhile is applied, never dropped.
  await syncSubscription(deps, input.appId, input.accountId);
  return inTransaction(deps, deps.orm.em.fork(), async (t) => {
    const s = await findSubscription(t.em, input.appId, input.accountId, true);
    if (s.pendingChange?.id !== input.changeId)
      return s.lastChange?.id === input.changeId ? s.lastChange.outcome : 'replaced';
    if (s.pendingChange.scheduledAt) return 'scheduled'; // approved: it waits for the renewal, not for the buyer
    const sessionId = s.pendingChange.sessionId;
    s.pendingChange = null;
    s.lastChange = { id: input.changeId, outcome: why, at: new Date().toISOString() };
    await t.em.flush();
    if (sessionId) await settlePendingSave(t, sessionId, why);
    return why;
  });
}

export const expirePlanChange = (deps: Deps, input: PlanChangeInput) => dropPlanChange(deps, input, 'expired');

/**
 * The buyer is back from the provider's approval page: approved (checked with the provider now) or refused ("Cancel
 * and return": dropped now, unless the provider reports it approved). The change's workflow is nudged either way.
 * Answers where to send the buyer: the app's own return or cancel page, when the change still names them.
 */
export async function returnFromProvider(
  deps: Deps,
  appId: string,
  changeId: string,
  accountId: string,
  outcome: 'approved' | 'refused',
): Promise<{ outcome: Check; location: string | null }> {
  const s = await deps.orm.em.fork().findOne(Subscription, { appId, accountId });
  if (!s) return { outcome: 'replaced', location: null };
  const pending = s.pendingChange?.id === changeId ? s.pendingChange : null;
  const location = pending ? ((outcome === 'approved' ? pending.returnUrl : pending.cancelUrl) ?? null) : null;
  const input = { appId, accountId, changeId };
  const now =
    outcome === 'refused'
      ? await dropPlanChange(deps, input, 'refused')
      : await syncSubscription(deps, appId, accountId).then(() => settled(deps, input));
  await boundedCall(deps.temporal.connection, REQUEST_TEMPORAL_TIMEOUT_MS, () =>
    deps.temporal.client.workflow
      .getHandle(planChangeWorkflowId(appId, accountId, changeId))
      .signal(planChangeDef.signals.providerNotified),
  ).catch(() => undefined);
  return { outcome: now, location };
}
