// The API's side of the account actor: an intent is an update-with-start of `account/<app>/<account>`, validated
// by the actor at once against its state (a conflict is a 409 naming what is pending) and answered with the result.
// The caller hears within 5 s whether Temporal took it: if not, 503 and nothing changes (the intent carries a
// deadline, and the actor refuses one delivered after it).
import { WithStartWorkflowOperation, WorkflowUpdateFailedError, WorkflowUpdateStage } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Ctx } from '../context.js';
import { AppError } from '../errors.js';
import type { Caller } from '../http/route.js';
import { boundedCall } from '../temporal/client.js';
import { toSearchAttributePairs } from '../temporal/outbox.js';
import { randomUUID } from 'node:crypto';
import type { Intent, Refusal, Requester } from '../../workflows/billing-rules.js';
import {
  accountDef,
  accountWorkflowId,
  APP_ERROR_FAILURE,
  REFUSAL_FAILURE,
  type AppErrorDetails,
  type IntentAnswer,
  type WorkflowOf,
} from '../../workflows/shared.js';
import { actorStart } from './actor-facts.js';
import { abandonIntent } from './intent-claims.js';
import { refusalError } from './plan-changes.service.js';
import { recordTimeline } from '../timeline/timeline.service.js';

/** How long a request waits for Temporal to take an intent (a 503 with `Retry-After` after it). */
export const ACCEPT_TIMEOUT_MS = 5_000;
/** The intent's deadline: the actor refuses it after this, so one that arrives once its caller gave up does nothing. */
const DEADLINE_MS = 3_500;
/** How long a request waits for an accepted intent's answer (its provider calls are bounded; this bounds the rest). */
export const RESULT_TIMEOUT_MS = 90_000;

/** Who asked, as the timeline shows it. */
export function requesterOf(caller: Caller | undefined): Requester {
  switch (caller?.kind) {
    case 'person':
      return { kind: 'person', id: caller.userId, name: caller.email };
    case 'admin':
      return { kind: 'admin_key', id: null, name: null };
    case 'secret':
      return { kind: 'secret_key', id: null, name: null };
    case 'publishable':
      return { kind: 'publishable_key', id: null, name: null };
    case 'token':
      return { kind: 'account_token', id: caller.accountId, name: null };
    case 'oauth':
      return { kind: 'mcp', id: caller.connectionId, name: null };
    default:
      return { kind: 'system', id: null, name: null };
  }
}

type DistributiveOmit<T, K extends keyof never> = T extends unknown ? Omit<T, K> : never;
/** An intent as a route asks it: the actor adds who asked, the deadline and the request. */
export type IntentBody = DistributiveOmit<Intent, 'by' | 'deadline' | 'requestId'>;

const unavailable = () =>
  new AppError(
    503,
    'Billing changes are unavailable: Temporal did not take the request within 5 s; nothing was changed, retry shortly',
    {},
    { 'Retry-After': '5' },
  );

/** The actor's answer to a refused or failed intent, as the route's error. */
function answered(err: unknown, refused?: (r: Refusal) => void): AppError | null {
  if (!(err instanceof WorkflowUpdateFailedError)) return null;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure) {
    if (cause.type === REFUSAL_FAILURE) {
      const r = cause.details?.[0] as Refusal;
      refused?.(r);
      return refusalError(r);
    }
    if (cause.type === APP_ERROR_FAILURE) {
      const d = cause.details?.[0] as AppErrorDetails;
      return new AppError(d.status, d.message, d.extra, d.headers);
    }
  }
  // It failed in a way nobody answered (our database stayed down through the activity's tries): part of it may have
  // happened, so say so (the account's timeline shows what did).
  return new AppError(
    503,
    'Service unavailable: the billing change could not finish, and whether part of it was applied is unknown; ' +
      'look at the subscription and its timeline before repeating it',
    { outcome: 'unknown' },
    { 'Retry-After': '5' },
  );
}

/** The answer whose outcome the caller cannot know (accepted, or maybe accepted, and not waited for). */
const outcomeUnknown = (what: string) =>
  new AppError(
    503,
    `Service unavailable: the billing change ${what}; look at the subscription and its timeline for its outcome ` +
      'before repeating it',
    { outcome: 'unknown' },
    { 'Retry-After': '5' },
  );

/**
 * Temporal did not take the intent within 5 s. It may still have been accepted just before its deadline (the news
 * late on a slow machine): the API claims it as abandoned, and says "nothing was changed" only when the actor had not
 * taken it first (src/subscriptions/intent-claims.ts); then the actor refuses it whenever it arrives.
 */
async function gaveUp(ctx: Ctx, accountId: string, type: string, intent: Intent): Promise<AppError> {
  try {
    const claim = await abandonIntent(ctx.deps.orm.em.fork(), {
      appId: ctx.app.id,
      accountId,
      requestId: intent.requestId,
      type,
      by: intent.by,
      workflowId: accountWorkflowId(ctx.app.id, accountId),
    });
    return claim === 'abandoned' ? unavailable() : outcomeUnknown('was accepted and is still running');
  } catch {
    // The database did not answer either: whether the actor will take it is unknown.
    return outcomeUnknown('may have been accepted');
  }
}

/** Asks the account's actor for `body`; answers its result, or throws the route's error. */
export async function askActor(
  ctx: Ctx,
  accountId: string,
  body: IntentBody,
  who: { caller?: Caller; requestId?: string } = {},
): Promise<IntentAnswer> {
  const { deps, app } = ctx;
  const requestId = who.requestId ?? randomUUID();
  const intent = {
    ...body,
    by: requesterOf(who.caller),
    deadline: new Date(Date.now() + DEADLINE_MS).toISOString(),
    requestId,
  } as Intent;
  const start = actorStart(app.id, accountId);
  const operation = new WithStartWorkflowOperation<WorkflowOf<typeof accountDef>>(accountDef.name, {
    workflowId: accountWorkflowId(app.id, accountId),
    taskQueue: deps.temporal.taskQueue,
    args: [{ appId: app.id, accountId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    typedSearchAttributes: toSearchAttributePairs(start.searchAttributes),
    staticSummary: start.summary,
    staticDetails: start.details,
  });
  const connection = deps.temporal.connection;
  // A refusal by the actor's rules (before anything ran) is a line of the account's timeline too, written here.
  let noted: Promise<unknown> = Promise.resolve();
  const refused = (r: Refusal) =>
    (noted = recordTimeline(deps.orm.em.fork(), {
      appId: app.id,
      accountId,
      kind: 'refusal',
      type: body.kind,
      summary: `Refused (${r.status} ${r.reason}): ${r.message}`,
      by: intent.by,
      data: { reason: r.reason, request_id: requestId, ...(r.pending ? { pending: r.pending } : {}) },
      workflowId: accountWorkflowId(app.id, accountId),
      runId: null,
    }).catch(() => undefined));
  let handle;
  try {
    handle = await boundedCall(connection, ACCEPT_TIMEOUT_MS, () =>
      deps.temporal.client.workflow.startUpdateWithStart(accountDef.updates.intent, {
        args: [intent],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
        startWorkflowOperation: operation,
        updateId: `${body.kind}:${requestId}`,
      }),
    );
  } catch (err) {
    const e = answered(err, refused) ?? (await gaveUp(ctx, accountId, body.kind, intent));
    await noted;
    throw e;
  }
  try {
    return await boundedCall(connection, RESULT_TIMEOUT_MS, () => handle.result());
  } catch (err) {
    const e = answered(err, refused) ?? outcomeUnknown('was accepted and is still running');
    await noted;
    throw e;
  }
}
