// Cancel sessions: one customer's walk through a flow, with every outcome applied for real through
// the billing services (provider first, then one transaction for the local change, the session and
// its events).
import { LockMode } from '@mikro-orm/core';
import type { z } from 'zod';
import { accountDetail, changeAccount, findAccount } from '../accounts/accounts.service.js';
import { addMonths } from '../apps/clock.js';
import { freshAppNow } from '../apps/clock.service.js';
import { findIncentive, findPlan } from '../catalog/catalog.service.js';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { inTransaction, type Tx } from '../db/transaction.js';
import { badRequest, conflict, forbidden, notFound } from '../errors.js';
import { newestFirstPage } from '../http/pagination.js';
import type { Caller } from '../http/route.js';
import { newId } from '../ids.js';
import { requireProvider } from '../payments/payments.service.js';
import { Subscription } from '../subscriptions/subscriptions.entities.js';
import { findSubscription } from '../subscriptions/subscriptions.service.js';
import { cancelAtProvider, cancelLocally, pauseLocally, suspendForPause } from '../subscriptions/lifecycle.service.js';
import { holdChangeTarget, notePendingChange, requestPlanChange } from '../subscriptions/plan-changes.service.js';
import { askActor } from '../subscriptions/actor-client.js';
import {
  CancelFlow,
  CancelSession,
  type FlowSnapshot,
  type GivenAnswer,
  type ICancelSession,
} from './cancel-flows.entities.js';
import type * as S from './cancel-flows.schemas.js';
import { chooseDynamic, dynamicConfigured, type FallbackReason } from './dynamic.js';
import { stepById, successor } from './engine.js';
import {
  chooseStatic,
  describeOffer,
  discountedPrice,
  loadOfferContext,
  regularPriceOf,
  round2,
  termsOf,
  type OfferContext,
  type SessionOffer,
} from './save-offers.js';
import type { Step } from './cancel-flows.schemas.js';
import { sessionView } from './cancel-flows.present.js';
import { markLastOffer, presentSession } from './pending-saves.service.js';

// ---- presenting --------------------------------------------------------------------------------------

export type SessionView = ReturnType<typeof sessionView>;

// ---- offers and moving on ------------------------------------------------------------------------------

/**
 * The offer this account gets at an offer step: the model's choice when dynamic offers are
 * configured and enabled on the step (and it stays within the guardrails), else the static offer for
 * the answers; null when none applies.
 */
export async function offerFor(
  ctx: Ctx,
  flow: FlowSnapshot,
  step: Step,
  answers: Record<string, GivenAnswer>,
  accountId: string,
  loaded?: OfferContext,
): Promise<SessionOffer | null> {
  const c = loaded ?? (await loadOfferContext(ctx.em, ctx.app.id, accountId));
  let fallback: { reason: FallbackReason; detail: string } | undefined;
  if (step.dynamic?.enabled && dynamicConfigured(ctx.deps.config)) {
    const r = await chooseDynamic(ctx.deps, ctx.em, ctx.app.id, flow, step, answers, c);
    if (r.ok) return describeOffer(step.id, r.terms, c, r.copy, 'dynamic');
    fallback = r;
    ctx.deps.logger.info(
      { appId: ctx.app.id, accountId, flow: flow.id, step: step.id, reason: r.reason, detail: r.detail },
      'dynamic offer not used; static offer instead',
    );
  }
  const chosen = chooseStatic(step, answers, c);
  if (!chosen) return null;
  const offer = describeOffer(step.id, termsOf(chosen), c, chosen, 'static');
  if (fallback) Object.assign(offer, { fallback_reason: fallback.reason, fallback_detail: fallback.detail });
  return offer;
}

/** Enters `id`, skipping offer steps with no offer for the account; returns where the session stops. */
async function enter(
  ctx: Ctx,
  flow: FlowSnapshot,
  id: string,
  answers: Record<string, GivenAnswer>,
  accountId: string,
): Promise<{ stepId: string; offer: SessionOffer | null }> {
  let step = stepById(flow.steps, id)!;
  let c: OfferContext | undefined; // loaded once, at the first offer step met
  while (step.type === 'offer') {
    c ??= await loadOfferContext(ctx.em, ctx.app.id, accountId);
    const offer = await offerFor(ctx, flow, step, answers, accountId, c);
    if (offer) return { stepId: step.id, offer };
    step = stepById(flow.steps, successor(flow.steps, step)!)!;
  }
  return { stepId: step.id, offer: null };
}

const logOffer = (s: ICancelSession, offer: SessionOffer | null) =>
  offer
    ? [
        ...s.offers,
        {
          step: offer.step,
          kind: offer.kind,
          source: offer.source,
          status: 'shown' as const,
          ...(offer.fallback_reason
            ? { fallback_reason: offer.fallback_reason, fallback_detail: offer.fallback_detail }
            : {}),
        },
      ]
    : s.offers;

/** Leaves the current step (kept for `back`) for the step entered, with its offer if any. */
function moveOn(row: ICancelSession, at: { stepId: string; offer: SessionOffer | null }) {
  row.path = [...row.path, row.stepId];
  row.stepId = at.stepId;
  row.offer = at.offer;
  row.offers = logOffer(row, at.offer);
}

// ---- loading and guarding ------------------------------------------------------------------------------

/** A session the caller may see: a token sees its own account's sessions only (others are 404). */
async function visibleSession(ctx: Ctx, caller: Caller, id: string) {
  const s = await ctx.em.findOne(CancelSession, { id, appId: ctx.app.id });
  if (!s || (caller.kind === 'token' && s.accountId !== caller.accountId)) throw notFound(`Cancel session ${id}`);
  return s;
}

function mustBeOpen(s: ICancelSession) {
  if (s.status !== 'open') throw conflict(`Cancel session ${s.id} is ${s.status}, not open`);
}

function mustBeAt(s: ICancelSession, type: Step['type'], what: string) {
  mustBeOpen(s);
  const step = stepById(s.flow.steps, s.stepId)!;
  if (step.type !== type) throw conflict(`Cancel session ${s.id} is at ${step.type} step ${step.id}; ${what}`);
  return step;
}

/**
 * Commits a move computed from `seen` (the model may have been asked meanwhile, so no lock is held
 * while computing): the row is locked and must still be where it was, else 409.
 */
async function commitMove(ctx: Ctx, seen: ICancelSession, apply: (s: ICancelSession) => void) {
  const em = ctx.deps.orm.em.fork();
  const row = await em.transactional(async (tx) => {
    const s = await tx.findOne(CancelSession, { id: seen.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    const busy = s?.claimedUntil && new Date(s.claimedUntil).getTime() > Date.now();
    if (!s || s.status !== 'open' || s.stepId !== seen.stepId || s.path.length !== seen.path.length || busy) {
      throw conflict(`Cancel session ${seen.id} changed meanwhile; read it again`);
    }
    apply(s);
    return s;
  });
  return presentSession(em, row);
}

// ---- the calls -------------------------------------------------------------------------------------------

export async function startSession(ctx: Ctx, caller: Caller, input: z.output<typeof S.startBody>) {
  let accountId = input.account;
  if (caller.kind === 'token') {
    if (accountId !== undefined && accountId !== caller.accountId)
      throw forbidden('An account token can only start a cancel session for its own account');
    accountId = caller.accountId;
  }
  if (!accountId) throw badRequest('account: is required');
  const flow = await pickFlow(ctx, caller, input.flow);
  await findAccount(ctx.em, ctx.app.id, accountId);
  const snapshot: FlowSnapshot = { id: flow.id, name: flow.name, steps: flow.steps };
  const at = await enter(ctx, snapshot, flow.steps[0].id, {}, accountId);
  const s = ctx.em.create(CancelSession, {
    id: newId('cancelSession'),
    appId: ctx.app.id,
    flowId: flow.id,
    accountId,
    status: 'open',
    flow: snapshot,
    stepId: at.stepId,
    path: [],
    answers: {},
    offer: at.offer,
    offers: [],
    approveUrl: null,
    result: null,
  });
  s.offers = logOffer(s, at.offer);
  await ctx.em.flush();
  return presentSession(ctx.em, s);
}

/** The named flow; else `default`; else the first active flow. Tokens see active flows only. */
async function pickFlow(ctx: Ctx, caller: Caller, id: string | undefined) {
  const onlyActive = caller.kind === 'token';
  if (id) {
    const f = await ctx.em.findOne(CancelFlow, { appId: ctx.app.id, id });
    if (!f || (onlyActive && f.status !== 'active')) throw notFound(`Cancel flow ${id}`);
    return f;
  }
  const preferred = await ctx.em.findOne(CancelFlow, {
    appId: ctx.app.id,
    id: 'default',
    ...(onlyActive ? { status: 'active' as const } : {}),
  });
  const f =
    preferred ??
    (await ctx.em.findOne(CancelFlow, { appId: ctx.app.id, status: 'active' }, { orderBy: { seq: 'asc' } }));
  if (!f) throw notFound('Active cancel flow');
  return f;
}

export async function getSession(ctx: Ctx, caller: Caller, id: string) {
  return presentSession(ctx.em, await visibleSession(ctx, caller, id));
}

export async function listSessions(ctx: Ctx, q: z.output<typeof S.listSessionsQuery>) {
  // The page's keys by keyset on (created_at, id) at full precision, then the sessions themselves.
  const filters = { app_id: ctx.app.id, flow_id: q.flow, account_id: q.account, status: q.status };
  const page = await newestFirstPage<{ id: string }>(ctx.em, 'cancel_sessions', 'id', filters, q);
  const found = new Map(
    (await ctx.em.find(CancelSession, { appId: ctx.app.id, id: page.rows.map((r) => r.id) })).map((s) => [s.id, s]),
  );
  const rows = page.rows.flatMap((r) => found.get(r.id) ?? []);
  return {
    data: await Promise.all(rows.map((s) => presentSession(ctx.em, s))),
    next_cursor: page.next_cursor,
  };
}

export async function answerStep(ctx: Ctx, caller: Caller, id: string, input: z.output<typeof S.answerBody>) {
  const s = await visibleSession(ctx, caller, id);
  mustBeOpen(s);
  if (input.step !== s.stepId) throw conflict(`Cancel session ${s.id} is at step ${s.stepId}, not ${input.step}`);
  const step = stepById(s.flow.steps, s.stepId)!;
  if (step.type === 'offer')
    throw conflict(`Cancel session ${s.id} is at offer step ${step.id}; accept or decline the offer`);
  if (step.type === 'confirm') throw conflict(`Cancel session ${s.id} is at confirm step ${step.id}; cancel or close`);
  const choices = step.type === 'question' ? (step.answers ?? []) : [];
  if (input.answer !== undefined && !choices.some((a) => a.id === input.answer)) {
    throw badRequest(
      choices.length
        ? `answer: must be one of ${choices.map((a) => a.id).join(', ')}`
        : `answer: step ${step.id} has no answers`,
    );
  }
  if (input.text !== undefined && step.type === 'question' && !step.allow_text)
    throw badRequest(`text: step ${step.id} does not take text`);
  // A question takes one of its answers; with allow_text, free text may come with or instead of one.
  if (step.type === 'question' && input.answer === undefined && !(step.allow_text && input.text?.trim())) {
    throw badRequest(
      choices.length === 0
        ? 'text: is required'
        : step.allow_text
          ? 'answer: is required (or text)'
          : 'answer: is required',
    );
  }
  const answers =
    step.type === 'question'
      ? { ...s.answers, [step.id]: { answer: input.answer ?? null, text: input.text ?? null } }
      : s.answers;
  const at = await enter(ctx, s.flow, successor(s.flow.steps, step, input.answer)!, answers, s.accountId);
  return commitMove(ctx, s, (row) => {
    row.answers = answers;
    moveOn(row, at);
  });
}

export async function goBack(ctx: Ctx, caller: Caller, id: string) {
  const s = await visibleSession(ctx, caller, id);
  mustBeOpen(s);
  if (s.path.length === 0)
    throw conflict(`Cancel session ${s.id} is at its first step; there is no step to go back to`);
  const path = [...s.path];
  // Back to the previous step; an offer step that no longer has an offer is passed over.
  let target = path.pop()!;
  let answers = withoutAnswersFrom(s.answers, path, target);
  let offer: SessionOffer | null = null;
  let c: OfferContext | undefined;
  while (stepById(s.flow.steps, target)!.type === 'offer') {
    c ??= await loadOfferContext(ctx.em, ctx.app.id, s.accountId);
    offer = await offerFor(ctx, s.flow, stepById(s.flow.steps, target)!, answers, s.accountId, c);
    if (offer || path.length === 0) break;
    target = path.pop()!;
    answers = withoutAnswersFrom(s.answers, path, target);
  }
  return commitMove(ctx, s, (row) => {
    if (row.offer) row.offers = markLastOffer(row, 'withdrawn');
    row.path = path;
    row.stepId = target;
    row.answers = answers;
    row.offer = offer;
    row.offers = logOffer(row, offer);
  });
}

/** Answers still on the way to `target` (the answer at `target` itself is given again). */
function withoutAnswersFrom(answers: Record<string, GivenAnswer>, path: string[], target: string) {
  return Object.fromEntries(Object.entries(answers).filter(([step]) => step !== target && path.includes(step)));
}

export async function declineOffer(ctx: Ctx, caller: Caller, id: string) {
  const s = await visibleSession(ctx, caller, id);
  const step = mustBeAt(s, 'offer', 'only an offer can be declined');
  const at = await enter(ctx, s.flow, successor(s.flow.steps, step)!, s.answers, s.accountId);
  return commitMove(ctx, s, (row) => {
    row.offers = markLastOffer(row, 'declined');
    moveOn(row, at);
  });
}

export async function closeSession(ctx: Ctx, caller: Caller, id: string) {
  const s = await visibleSession(ctx, caller, id);
  mustBeOpen(s);
  return commitMove(ctx, s, (row) => {
    row.status = 'abandoned';
    row.endedAt = new Date();
  });
}

// ---- outcomes ------------------------------------------------------------------------------------------

/**
 * Marks the session as being applied, atomically, so two accepts (or an accept and a cancel) never
 * both reach the provider; a crash leaves a claim that lapses after two minutes.
 *
 * `owner` is the request id of the account actor's intent that applies the session. A claim already held by that
 * same request belongs to an attempt of it that died between the provider call and its commit (a worker killed
 * mid-step): the retried step takes it over at once, rather than meeting its own claim as another call's (a 409 the
 * actor does not retry, which would leave the provider changed and the record not). Any other call still gets the
 * 409. The token (the claim's new `claimed_until`) tells the attempts apart: only the newest one may commit.
 */
async function claim(
  ctx: Ctx,
  s: ICancelSession,
  owner: string | null,
): Promise<{ offer: SessionOffer | null; token: string }> {
  const rows = await sql<{ offer: SessionOffer | null; token: string }>(
    ctx.deps.orm.em.fork(),
    `update cancel_sessions
        set claimed_until = now() + interval '2 minutes', claimed_by = $3, updated_at = now()
      where id = $1 and status = 'open' and step_id = $2
        and (claimed_until is null or claimed_until < now() or ($3::varchar is not null and claimed_by = $3))
      returning offer, claimed_until::text as token`,
    [s.id, s.stepId, owner],
  );
  if (rows.length === 0) throw conflict(`Cancel session ${s.id} is being changed by another call; read it again`);
  return rows[0];
}

/** Frees the claim `token` (only that one: a retry of the same intent may have taken it over meanwhile). */
async function release(ctx: Ctx, s: ICancelSession, token: string) {
  await sql(
    ctx.deps.orm.em.fork(),
    `update cancel_sessions set claimed_until = null, claimed_by = null
      where id = $1 and claimed_until::text = $2`,
    [s.id, token],
  );
}

interface Outcome {
  result: Record<string, unknown>;
  approveUrl?: string | null;
  /** Monthly revenue still billed after the save, and its currency. */
  revenue?: { amount: number; currency: string } | null;
  /** The save needs the buyer's approval at the provider: the session waits in `pending`. */
  awaitsProvider?: boolean;
}

const monthly = (price: number, interval: string) => round2(interval === 'year' ? price / 12 : price);

/**
 * Ends the session with an outcome: the provider half runs first (outside any transaction), then
 * the local change, the session's new state and its event commit together.
 */
async function finish(
  ctx: Ctx,
  s: ICancelSession,
  providerHalf: (claimed: { offer: SessionOffer | null }) => Promise<(t: Tx) => Promise<Outcome>>,
  end: { status: 'saved' | 'cancelled'; event: 'cancel_flow.saved' | 'cancel_flow.cancelled' },
  owner: string | null,
) {
  // The claimed row's offer is the one applied (not an earlier read of it).
  const claimed = await claim(ctx, s, owner);
  try {
    const localHalf = await providerHalf(claimed);
    const em = ctx.deps.orm.em.fork();
    return await inTransaction(ctx.deps, em, async (t) => {
      const row = await t.em.findOneOrFail(
        CancelSession,
        { id: s.id },
        { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
      );
      const [still] = await sql<{ mine: boolean }>(
        t.em,
        'select claimed_until::text = $2 as mine from cancel_sessions where id = $1',
        [s.id, claimed.token],
      );
      if (!still?.mine || row.status !== 'open')
        throw conflict(`Cancel session ${s.id} changed while it was being applied; read it again`);
      const outcome = await localHalf(t);
      // A save the provider must approve first waits in `pending`: not saved, no event, nothing counted, until
      // the provider confirms it (settlePendingSave).
      const pending = end.status === 'saved' && outcome.awaitsProvider === true;
      if (end.status === 'saved' && !pending) {
        row.offers = markLastOffer(row, 'accepted');
        row.offer = row.offer ? { ...row.offer, status: 'accepted' as SessionOffer['status'] } : null;
      }
      row.status = pending ? 'pending' : end.status;
      row.result = outcome.result;
      row.approveUrl = outcome.approveUrl ?? null;
      row.revenueKept = outcome.revenue?.amount ?? null;
      row.currency = outcome.revenue?.currency ?? null;
      row.endedAt = pending ? null : new Date();
      row.claimedUntil = null;
      row.claimedBy = null;
      await t.em.flush();
      const view = await presentSession(t.em, row);
      if (pending) return view;
      const account = await accountDetail(t.em, await findAccount(t.em, row.appId, row.accountId));
      t.emit(row.appId, end.event, { object: view, account });
      return view;
    });
  } catch (err) {
    await release(ctx, s, claimed.token);
    throw err;
  }
}

/**
 * Accepting an offer is an intent of the account's actor (it meets the account's other intents there): the session
 * is checked here (visible to the caller, at its offer step), then the actor applies it (`acceptOffer`).
 */
export async function acceptThroughActor(
  ctx: Ctx,
  caller: Caller,
  requestId: string,
  id: string,
  urls: z.output<typeof S.acceptBody> & { origin?: string },
) {
  const s = await visibleSession(ctx, caller, id);
  mustBeAt(s, 'offer', 'only an offer can be accepted');
  const kind = (s.offer as SessionOffer | null)?.terms.kind;
  if (!kind)
    throw conflict(
      `Cancel session ${s.id} has no offer for this account at step ${s.stepId} any more; decline to go on`,
    );
  return askActor(
    ctx,
    s.accountId,
    {
      kind: 'accept_save',
      sessionId: s.id,
      offer: kind,
      ...(urls.return_url ? { returnUrl: urls.return_url } : {}),
      ...(urls.cancel_url ? { cancelUrl: urls.cancel_url } : {}),
      ...(urls.origin ? { origin: urls.origin } : {}),
    },
    { caller, requestId },
  ) as Promise<SessionView>;
}

/** The confirm step's cancellation, as an intent of the account's actor (`cancelAtConfirm` runs there). */
export async function cancelThroughActor(ctx: Ctx, caller: Caller, requestId: string, id: string) {
  const s = await visibleSession(ctx, caller, id);
  mustBeAt(s, 'confirm', 'a session is cancelled from its confirm step');
  return askActor(
    ctx,
    s.accountId,
    { kind: 'cancel', at: 'now', sessionId: s.id, reason: `Cancel flow ${s.flowId}, session ${s.id}` },
    { caller, requestId },
  ) as Promise<SessionView>;
}

/** Who applies a session: the account actor's intent (its request id owns the claim), or a call of its own. */
interface Applier {
  /** The intent's request id: a retried step of it takes over the claim its killed attempt left. */
  requestId?: string;
}

export async function acceptOffer(
  ctx: Ctx,
  caller: Caller,
  id: string,
  urls: z.output<typeof S.acceptBody> & { origin?: string },
  by: Applier = {},
) {
  const s = await visibleSession(ctx, caller, id);
  mustBeAt(s, 'offer', 'only an offer can be accepted');
  const accountId = s.accountId;
  const reason = `Cancel flow ${s.flowId}, session ${s.id}`;
  return finish(
    ctx,
    s,
    async ({ offer }) => {
      if (!offer)
        throw conflict(
          `Cancel session ${s.id} has no offer for this account at step ${s.stepId} any more; decline to go on`,
        );
      const t = offer.terms;
      switch (t.kind) {
        case 'discount':
        case 'downgrade': {
          const sub = await findSubscription(ctx.em, ctx.app.id, accountId);
          let target: Parameters<typeof requestPlanChange>[2];
          if (t.kind === 'discount') {
            if (sub.discount || sub.pendingChange?.discount)
              throw conflict(`The subscription of account ${accountId} already has a discount`);
            const regular = regularPriceOf(sub);
            const price = discountedPrice(regular, t.percent);
            const plan = await findPlan(ctx.em, ctx.app.id, sub.planId);
            target = {
              plan,
              interval: sub.interval,
              currency: sub.currency,
              price: regular,
              discount: { percent: t.percent, cycles: t.cycles, price },
            };
          } else {
            const price = offer.details.price as number | null;
            if (price === null) throw conflict(`The downgrade to ${t.plan} no longer applies to account ${accountId}`);
            target = {
              plan: await findPlan(ctx.em, ctx.app.id, t.plan),
              interval: sub.interval,
              currency: sub.currency,
              price,
            };
          }
          const { approveUrl, pending } = await requestPlanChange(
            ctx,
            sub,
            target,
            { ...urls, sessionId: s.id },
            // The spec's outcomes: a discount applies once the provider reports it, a downgrade at the renewal.
            t.kind === 'downgrade'
              ? { kind: 'downgrade', direction: 'downgrade', policy: 'at_renewal', effective: 'renewal' }
              : { kind: 'discount', effective: 'now' },
          );
          return async (tx) => {
            await holdChangeTarget(tx.em, ctx.app.id, pending.plan);
            const row = await findSubscription(tx.em, ctx.app.id, accountId, true);
            if (row.pendingChange)
              throw conflict(`The subscription of account ${accountId} already has a change waiting`);
            row.pendingChange = pending;
            await tx.em.flush();
            await notePendingChange(tx, ctx.app.id, accountId, pending);
            return {
              awaitsProvider: true,
              result: {
                outcome: t.kind,
                status: 'pending_approval',
                plan: pending.plan,
                price: pending.price,
                currency: pending.currency,
                interval: pending.interval,
                ...(t.kind === 'discount' ? { percent: t.percent, cycles: t.cycles } : {}),
              },
              approveUrl,
              revenue: { amount: monthly(pending.price, pending.interval), currency: pending.currency },
            };
          };
        }
        case 'pause': {
          await suspendForPause(ctx, accountId, t.months, reason);
          return async (tx) => {
            const sub = await pauseLocally(tx, ctx.deps, ctx.app.id, accountId, t.months, reason);
            return {
              result: {
                outcome: 'pause',
                months: t.months,
                resume_at: sub.pause?.resume_at ?? null,
                restore_plan: sub.pause?.restore_plan ?? null,
              },
              revenue: { amount: monthly(sub.price, sub.interval), currency: sub.currency },
            };
          };
        }
        case 'incentive': {
          await findIncentive(ctx.em, ctx.app.id, t.incentive);
          return async (tx) => {
            // Months on the app's clock (a test clock moved forward counts): the actor ends it then.
            const expires = addMonths(await freshAppNow(tx.em, ctx.app.id), t.months);
            const after = await changeAccount(
              { em: tx.em, deps: ctx.deps, app: ctx.app },
              accountId,
              async (_t, account) => {
                account.incentiveId = t.incentive;
                account.incentiveExpiresAt = expires;
              },
            );
            const sub = await tx.em.findOne(Subscription, { appId: ctx.app.id, accountId });
            const billed =
              sub && sub.status === 'active'
                ? { amount: monthly(Number(sub.price), sub.interval), currency: sub.currency }
                : null;
            return {
              result: {
                outcome: 'incentive',
                incentive: t.incentive,
                months: t.months,
                incentive_expires_at: after.incentive_expires_at,
              },
              revenue: billed,
            };
          };
        }
      }
    },
    { status: 'saved', event: 'cancel_flow.saved' },
    by.requestId ?? null,
  );
}

/**
 * The confirm step: a subscription billed here is cancelled at the provider and the account moves to
 * the free plan (if the app has one); an account billed elsewhere is only marked (`billing: external`
 * in the result and the `cancel_flow.cancelled` event), for the app's own billing to act on.
 */
export async function cancelAtConfirm(ctx: Ctx, caller: Caller, id: string, by: Applier = {}) {
  const s = await visibleSession(ctx, caller, id);
  mustBeAt(s, 'confirm', 'a session is cancelled from its confirm step');
  const accountId = s.accountId;
  return finish(
    ctx,
    s,
    async () => {
      const sub = await ctx.em.findOne(Subscription, { appId: ctx.app.id, accountId });
      const billedHere = !!sub && sub.status !== 'cancelled';
      if (billedHere) {
        const { provider } = await requireProvider(ctx);
        await cancelAtProvider(provider, sub.providerSubscriptionId, `Cancel flow ${s.flowId}, session ${s.id}`);
      }
      return async (tx) => {
        if (billedHere) await cancelLocally(tx, ctx.deps, ctx.app.id, accountId, { providerStatus: 'CANCELLED' });
        const account = await findAccount(tx.em, ctx.app.id, accountId);
        return {
          result: { outcome: 'cancelled', billing: billedHere ? 'provider' : 'external', plan: account.planId },
        };
      };
    },
    { status: 'cancelled', event: 'cancel_flow.cancelled' },
    by.requestId ?? null,
  );
}
