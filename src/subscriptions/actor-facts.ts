// Facts for the account actor: written to the outbox in the transaction that records them, so they reach the actor
// (starting it when none runs) even when Temporal was away at the time.
import { outboxSignalWithStart, type TemporalCommand } from '../temporal/outbox.js';
import { accountDef, accountWorkflowId, type AccountFact } from '../../workflows/shared.js';

/** The one line the Temporal UI's list shows for an account's actor. */
export const actorSummary = (accountId: string) => `Account ${accountId}: billing over time`;

/** How the actor is started, wherever it is (a fact through the outbox, an intent's update-with-start). */
export const actorStart = (appId: string, accountId: string) => ({
  searchAttributes: { AppId: appId, AccountId: accountId },
  summary: actorSummary(accountId),
  details:
    `The one owner of account **${accountId}**'s billing over time (app ${appId}): it takes the intents (change, ` +
    'pause, resume, cancel, save offers), hears the provider, and wakes up at the dates (renewals, pause ends, ' +
    "scheduled changes, incentive ends, dunning) on the app's clock.",
});

export function actorFact(appId: string, accountId: string, fact: AccountFact): TemporalCommand {
  return outboxSignalWithStart(
    accountDef,
    accountWorkflowId(appId, accountId),
    { appId, accountId },
    accountDef.signals.fact,
    [fact],
    actorStart(appId, accountId),
  );
}
