// The account actor in tests: its handle, state and search attributes, and the app's test clock.
import { expect } from 'chai';
import type { WorkflowExecutionDescription } from '@temporalio/client';
import { accountDef, accountWorkflowId, type AccountActorState } from '../../workflows/shared.js';
import type { TestApp } from './factories.js';
import { get, post } from './http.js';
import { testEnv } from './servers.js';
import { eventually } from './wait.js';

export const actorHandle = (app: TestApp, accountId: string) =>
  testEnv().deps.temporal.client.workflow.getHandle(accountWorkflowId(app.id, accountId));

/** The actor's state (its query), once it runs. */
export const actorState = (app: TestApp, accountId: string): Promise<AccountActorState> =>
  eventually(() =>
    actorHandle(app, accountId)
      .query(accountDef.queries.state)
      .catch(() => undefined),
  );

export const searchAttributes = (d: WorkflowExecutionDescription) =>
  Object.fromEntries(d.typedSearchAttributes.getAll().map((p) => [p.key.name, p.value])) as Record<string, unknown>;

/** The app's clock now. */
export async function clockNow(app: TestApp): Promise<Date> {
  const res = await get(`/apps/${app.id}/test-clock`, app.api_key);
  expect(res.status, res.text).to.equal(200);
  return new Date(res.body.now);
}

/** Moves the app's clock to `to` (or by `ms` from its now) and waits for the 200 (every date due ran). */
export async function advanceClock(app: TestApp, to: Date | { ms: number }) {
  const target = to instanceof Date ? to : new Date((await clockNow(app)).getTime() + to.ms);
  const res = await post(`/apps/${app.id}/test-clock/advance`, app.api_key, { to: target.toISOString() });
  expect(res.status, res.text).to.equal(200);
  return res.body as { now: string; offset_ms: number; live: boolean; pending: boolean };
}

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
