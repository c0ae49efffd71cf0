// Who and what a billing change runs for: the person or key that asked, the actor's workflow run, the request. Set
// around an intent, fact or timer (the actor's activities, the API's notification route) so that every timeline line
// the change writes, its outcomes included (written by the event subscriber), names them without passing them down.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Requester } from '../../workflows/billing-rules.js';

export interface BillingScope {
  by: Requester | null;
  workflowId: string | null;
  runId: string | null;
  requestId: string | null;
}

const scopes = new AsyncLocalStorage<BillingScope>();

export const withBillingScope = <T>(scope: BillingScope, fn: () => Promise<T>): Promise<T> => scopes.run(scope, fn);

export const billingScope = (): BillingScope | null => scopes.getStore() ?? null;
