// Cancel sessions: one customer's walk through a flow (start, answer, go back, decline, close). What the session
// ends in (the save offer accepted, or the cancellation) is applied in outcomes.service.ts.
import { LockMode } from '@mikro-orm/core';
import type { z } from 'zod';
import { findAccount } from '../accounts/accounts.service.js';
import type { Ctx } from '../context.js';
import { badRequest, conflict, forbidden, notFound } from '../errors.js';
import { newestFirstPage } from '../http/pagination.js';
import type { Caller } from '../http/route.js';
import { newId } from '../ids.js';
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
  loadOfferContext,
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
export async function visibleSession(ctx: Ctx, caller: Caller, id: string) {
  const s = await ctx.em.findOne(CancelSession, { id, appId: ctx.app.id });
  if (!s || (caller.kind === 'token' && s.accountId !== caller.accountId)) throw notFound(`Cancel session ${id}`);
  return s;
}

function mustBeOpen(s: ICancelSession) {
  if (s.status !== 'open') throw conflict(`Cancel session ${s.id} is ${s.status}, not open`);
}

export function mustBeAt(s: ICancelSession, type: Step['type'], what: string) {
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
