import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { flushOrConflict } from '../db/conflict.js';
import { sql } from '../db/sql.js';
import { conflict, missingReference, notFound } from '../errors.js';
import { deleted } from '../http/schemas.js';
import { CancelFlow, type GivenAnswer } from './cancel-flows.entities.js';
import type * as S from './cancel-flows.schemas.js';
import { dynamicConfigured } from './dynamic.js';
import { stepById, templateSteps, validateSteps } from './engine.js';
import { chooseStatic, describeOffer, presentOffer, round2, termsOf } from './save-offers.js';
import { offerFor } from './sessions.service.js';
import { presentFlow } from './cancel-flows.present.js';

export async function findFlow(ctx: Ctx, id: string) {
  const f = await ctx.em.findOne(CancelFlow, { appId: ctx.app.id, id });
  if (!f) throw notFound(`Cancel flow ${id}`);
  return f;
}

export async function listFlows(ctx: Ctx) {
  const [flows, counts] = await Promise.all([
    ctx.em.find(CancelFlow, { appId: ctx.app.id }, { orderBy: { seq: 'asc' } }),
    sql<{ flow_id: string; sessions: string; saves: string }>(
      ctx.em,
      `select flow_id, count(*) as sessions, count(*) filter (where status = 'saved') as saves
         from cancel_sessions where app_id = $1 and created_at > now() - interval '30 days' group by flow_id`,
      [ctx.app.id],
    ),
  ]);
  const by = new Map(counts.map((c) => [c.flow_id, { sessions: Number(c.sessions), saves: Number(c.saves) }]));
  return flows.map((f) => presentFlow(f, by.get(f.id) ?? { sessions: 0, saves: 0 }));
}

export async function getFlow(ctx: Ctx, id: string) {
  return presentFlow(await findFlow(ctx, id));
}

export async function createFlow(ctx: Ctx, input: z.output<typeof S.createFlowBody>) {
  const id = input.id ?? 'default';
  const steps = input.steps ?? templateSteps();
  await validateSteps(ctx.em, ctx.app.id, steps);
  const f = ctx.em.create(CancelFlow, {
    appId: ctx.app.id,
    id,
    name: input.name ?? (id === 'default' ? 'Default cancel flow' : id),
    status: input.status ?? 'draft',
    steps,
  });
  await flushOrConflict(ctx.em, `Cancel flow ${id} already exists`);
  return presentFlow(f);
}

export async function updateFlow(ctx: Ctx, id: string, input: z.output<typeof S.updateFlowBody>) {
  const f = await findFlow(ctx, id);
  if (input.steps) {
    await validateSteps(ctx.em, ctx.app.id, input.steps);
    f.steps = input.steps;
  }
  if (input.name !== undefined) f.name = input.name;
  if (input.status !== undefined) f.status = input.status;
  await ctx.em.flush();
  return presentFlow(f);
}

/** Sessions keep their own copy of the flow, so deleting it leaves them (and the stats) intact. */
export async function deleteFlow(ctx: Ctx, id: string) {
  const f = await findFlow(ctx, id);
  ctx.em.remove(f);
  await ctx.em.flush();
  return deleted(id);
}

export function capabilities(ctx: Ctx) {
  return {
    dynamic_offers: dynamicConfigured(ctx.deps.config),
    model: dynamicConfigured(ctx.deps.config) ? ctx.deps.config.OPENAI_MODEL : null,
    offer_kinds: ['discount', 'downgrade', 'pause', 'incentive'],
    // Pauses always run as Temporal workflows here; /pauses/* exists for an external scheduler too.
    external_pause_workflow: false,
    pause_runner: 'temporal',
  };
}

const rate = (n: number, d: number) => (d === 0 ? 0 : Math.round((n / d) * 10_000) / 10_000);

export async function flowStats(ctx: Ctx, id: string, days: number) {
  const f = await findFlow(ctx, id);
  const args = [ctx.app.id, id, days];
  const window = `app_id = $1 and flow_id = $2 and created_at > now() - make_interval(days => $3::int)`;
  const [totals, revenue, reasons, offers, fallbacks] = await Promise.all([
    sql<{ status: string; n: string }>(
      ctx.em,
      `select status, count(*) as n from cancel_sessions where ${window} group by status`,
      args,
    ),
    sql<{ currency: string; monthly: number; saves: string }>(
      ctx.em,
      `select currency, sum(revenue_kept)::float8 as monthly, count(*) as saves from cancel_sessions
        where ${window} and status = 'saved' and currency is not null group by currency order by currency`,
      args,
    ),
    sql<{ step: string; answer: string; n: string }>(
      ctx.em,
      `select a.key as step, a.value->>'answer' as answer, count(*) as n
         from cancel_sessions s, jsonb_each(s.answers) a
        where ${window.replace(/(app_id|flow_id|created_at)/g, 's.$1')} and a.value->>'answer' is not null
        group by 1, 2 order by 3 desc, 1, 2`,
      args,
    ),
    sql<{ kind: S.OfferKind; source: 'static' | 'dynamic'; status: string; n: string }>(
      ctx.em,
      `select o->>'kind' as kind, o->>'source' as source, o->>'status' as status, count(*) as n
         from cancel_sessions s, jsonb_array_elements(s.offers) o
        where ${window.replace(/(app_id|flow_id|created_at)/g, 's.$1')} group by 1, 2, 3`,
      args,
    ),
    sql<{ reason: string; n: string }>(
      ctx.em,
      `select o->>'fallback_reason' as reason, count(*) as n
         from cancel_sessions s, jsonb_array_elements(s.offers) o
        where ${window.replace(/(app_id|flow_id|created_at)/g, 's.$1')} and o ? 'fallback_reason' group by 1 order by
          1`,
      args,
    ),
  ]);
  const count = (st: string) => Number(totals.find((t) => t.status === st)?.n ?? 0);
  const saved = count('saved');
  const cancelled = count('cancelled');
  const abandoned = count('abandoned');
  const label = (step: string, answer: string) =>
    stepById(f.steps, step)?.answers?.find((a) => a.id === answer)?.label ?? answer;
  const offerRows = new Map<
    string,
    { kind: S.OfferKind; source: 'static' | 'dynamic'; shown: number; accepted: number; declined: number }
  >();
  for (const o of offers) {
    const key = `${o.kind}:${o.source}`;
    const row = offerRows.get(key) ?? { kind: o.kind, source: o.source, shown: 0, accepted: 0, declined: 0 };
    row.shown += Number(o.n);
    if (o.status === 'accepted') row.accepted += Number(o.n);
    if (o.status === 'declined') row.declined += Number(o.n);
    offerRows.set(key, row);
  }
  return {
    flow: { id: f.id, name: f.name },
    days,
    sessions: totals.reduce((n, t) => n + Number(t.n), 0),
    open: count('open'),
    saved,
    cancelled,
    abandoned,
    /** Saved among sessions that ended (saved, cancelled or abandoned). */
    save_rate: rate(saved, saved + cancelled + abandoned),
    revenue_kept: revenue.map((r) => ({ currency: r.currency, monthly: round2(r.monthly), saves: Number(r.saves) })),
    reasons: reasons.map((r) => ({
      step: r.step,
      answer: r.answer,
      label: label(r.step, r.answer),
      count: Number(r.n),
    })),
    offers: [...offerRows.values()].map((r) => ({ ...r, acceptance_rate: rate(r.accepted, r.shown) })),
    /** Times the model was asked but the static offer was shown, by reason. */
    dynamic_fallbacks: Object.fromEntries(fallbacks.map((f) => [f.reason, Number(f.n)])),
  };
}

/** The offer a customer would get for these answers, without a session (and without side effects). */
export async function previewOffer(ctx: Ctx, id: string, input: z.output<typeof S.previewBody>) {
  const f = await findFlow(ctx, id);
  const step = input.step ? stepById(f.steps, input.step) : f.steps.find((s) => s.type === 'offer');
  // The flow's steps decide these, not the request alone: a step or answer it does not have is a 404, one of the
  // wrong kind a 409 (docs/api.md, "The contract").
  if (!step) throw input.step ? notFound(`Step ${input.step}`) : conflict('step: the flow has no offer step');
  if (step.type !== 'offer') throw conflict(`step: ${step.id} is not an offer step`);
  const answers: Record<string, GivenAnswer> = {};
  for (const [stepId, answer] of Object.entries(input.answers)) {
    const q = stepById(f.steps, stepId);
    if (!q) throw missingReference(`answers.${stepId}: the flow has no step ${stepId}`);
    if (q.type !== 'question') throw conflict(`answers.${stepId}: is not a question step of the flow`);
    if (!q.answers?.some((x) => x.id === answer))
      throw missingReference(`answers.${stepId}: ${answer} is not one of its answers`);
    answers[stepId] = { answer, text: null };
  }
  if (input.account) {
    const offer = await offerFor(ctx, { id: f.id, name: f.name, steps: f.steps }, step, answers, input.account);
    return { step: step.id, offer: presentOffer(offer) };
  }
  const chosen = chooseStatic(step, answers, null);
  return {
    step: step.id,
    offer: presentOffer(chosen ? describeOffer(step.id, termsOf(chosen), null, chosen, 'static') : null),
  };
}
