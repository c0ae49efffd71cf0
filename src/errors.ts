/** The one error type routes and services throw; the error middleware turns it into `{ error, ...extra }`. */
export class AppError extends Error {
  readonly status: number;
  readonly extra?: Record<string, unknown>;
  readonly headers?: Record<string, string>;

  constructor(status: number, message: string, extra?: Record<string, unknown>, headers?: Record<string, string>) {
    super(message);
    this.name = 'AppError';
    this.status = status;
    this.extra = extra;
    this.headers = headers;
  }
}

export const badRequest = (message: string, extra?: Record<string, unknown>) => new AppError(400, message, extra);
export const unauthorized = () => new AppError(401, 'Unauthorized');

/**
 * A 401 for a credential that matched nothing (a guess, a rotated key, a typo), as opposed to a valid credential
 * on a route it may not use (also 401, as the spec says, but never counted as a failure).
 */
export class UnrecognizedCredential extends AppError {
  constructor() {
    super(401, 'Unauthorized');
  }
}
export const paymentRequired = (body: { error: string }) => {
  const { error, ...extra } = body;
  return new AppError(402, error, extra as Record<string, unknown>);
};
export const forbidden = (message = 'Forbidden') => new AppError(403, message);
export const notFound = (what: string) => new AppError(404, `${what} not found`);
/**
 * A record a body names that does not exist (`plans.0.plan: plan gold does not exist`): a 404 naming the field, as a
 * missing record in the path is. A 400 is kept for what is wrong with the request on its own (docs/api.md).
 */
export const missingReference = (message: string) => new AppError(404, message);
export const methodNotAllowed = () => new AppError(405, 'Method not allowed');
/**
 * Every `reason` a 409 carries, with what it means: the SDK's `ConflictReason` union is generated from these keys
 * (scripts/sdk/generate.ts), `conflict()` takes no other, and test/unit/conflict-reasons.test.ts fails when the code
 * gives a 409 a reason this list lacks (or the list keeps one no code gives).
 */
export const CONFLICT_REASONS = {
  advancing: "another advance of the app's test clock is still running: try again once it is done",
  already_subscribed:
    'the buyer has a live subscription: change its plan (POST .../subscription/change, or `if_subscribed: "change"`)',
  approved: 'a checkout to expire is approved at the provider: it completes once the provider activates it',
  archived: 'the offer is archived',
  bump_not_offered: 'an order bump asked for is not (or no longer) part of the offer',
  bump_owned: 'the account already owns the add-on of an order bump asked for',
  bumps_with_change: 'a checkout that becomes a plan change (`if_subscribed: "change"`) cannot include order bumps',
  already_discounted: 'the subscription already has a save-offer discount',
  cancel_scheduled: 'the subscription is cancelled at the end of its period: undo it with POST .../subscription/resume',
  cancelled: 'a checkout to expire was cancelled, or the subscription is cancelled',
  change_pending: "a plan change waits for the buyer's approval: it ends when approved or refused, or withdraw it",
  change_scheduled:
    'a plan change is scheduled for the renewal: withdraw it (POST .../subscription/change/withdraw) or replace it ' +
    '(`replace: true`)',
  completed: 'a checkout to expire is completed',
  created: 'a checkout to expire is still waiting for its buyer at the provider',
  entity_not_taken:
    'an entity was named for a feature or pool kept per account (not per entity): call without `entity`',
  entity_required: 'the feature or pool is kept per entity (a member, a workspace): name the `entity`',
  expired: 'the offer has ended',
  expired_request:
    'a billing intent reached the account actor after the API had answered its caller 503 (nothing was changed): ' +
    'refused, and only the timeline sees it',
  interval_not_offered: 'the offer (or plan) has no price for the interval asked',
  live_app: 'a live app (live payments, or the demo) has no test clock',
  no_change: 'there is no plan change waiting or scheduled to withdraw',
  no_link: 'the payment provider gave no approval link',
  no_price: 'the plan has no price for the interval on its pricing card',
  not_available: 'the offer cannot be bought by this account now',
  not_past_due: 'the subscription has no failed payment to retry',
  not_paused: 'the subscription is neither paused nor cancelled at the end of its period',
  not_published: 'the offer is a draft, or has no provider plan for this price yet',
  not_started: 'the offer has not started yet',
  offer_changed: 'the offer was edited or deleted while the checkout was being created: load it again',
  past_due:
    "the renewal payment failed: retry it (POST .../subscription/retry-payment) or wait for the provider's retry",
  pack_archived: 'the credit pack is archived: it is no longer sold',
  not_a_pool: 'the entitlement a credit pack names is not (or no longer) a credits pool',
  paused: 'the subscription is paused: resume it first (POST .../subscription/resume)',
  payment_declined:
    'the provider declined the retried payment: the subscription stays past due (one more failure), retry later',
  plan_deleted: 'the plan was deleted while the checkout or change was being made',
  plan_not_offered: 'the offer does not offer the plan asked',
  same_plan: 'the account is already on that plan and interval',
  targeted: 'the offer is for another account',
} as const satisfies Record<string, string>;
export type ConflictReason = keyof typeof CONFLICT_REASONS;

/** A 409; `reason` (one of CONFLICT_REASONS) when the caller can act on why. */
export const conflict = (message: string, extra?: { reason?: ConflictReason; [key: string]: unknown }) =>
  new AppError(409, message, extra);
export const providerError = (provider: string, message: string) => new AppError(502, `${provider}: ${message}`);

/** Postgres unique_violation, so services can turn an id clash into a 409 without a prior read. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; cause?: { code?: string } } | null;
  return e?.code === '23505' || e?.cause?.code === '23505';
}
