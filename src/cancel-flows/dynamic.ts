// Dynamic save offers: a language model picks the offer for this customer within the step's
// guardrails, through the official `openai` SDK (any OpenAI-compatible API via OPENAI_BASE_URL).
// Its answer is checked with zod against the guardrails; anything else falls back to the static offer.
import type OpenAI from 'openai';
import { z } from 'zod';
import { effectiveAccess } from '../access/access.service.js';
import type { Config } from '../config.js';
import type { Deps } from '../deps.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { FallbackReason, FlowSnapshot, GivenAnswer } from './cancel-flows.entities.js';
import type { DynamicSettings, OfferKind, Step } from './cancel-flows.schemas.js';
import { applies, kindApplies, type OfferContext, type OfferCopy, type OfferTerms } from './save-offers.js';

// Stored with the session's offer (cancel-flows.entities.ts); handed on for the sessions service.
export type { FallbackReason };
export type DynamicResult =
  | { ok: true; terms: OfferTerms; copy: Required<Pick<OfferCopy, 'headline' | 'body'>> & OfferCopy }
  | { ok: false; reason: FallbackReason; detail: string };

export function dynamicConfigured(config: Config): boolean {
  return !!config.OPENAI_API_KEY;
}

/** The `openai` SDK, loaded on the first dynamic offer (an API process without OPENAI_API_KEY never loads it). */
const sdk = () => import('openai');

let cached: { key: string; client: OpenAI } | undefined;
async function client(config: Config): Promise<OpenAI> {
  const key = `${config.OPENAI_API_KEY}|${config.OPENAI_BASE_URL ?? ''}|${config.DYNAMIC_OFFER_TIMEOUT_MS}`;
  if (cached?.key !== key) {
    const { default: OpenAIClient } = await sdk();
    cached = {
      key,
      // No retries: the customer is waiting, and the static offer is a fine answer.
      client: new OpenAIClient({
        apiKey: config.OPENAI_API_KEY,
        baseURL: config.OPENAI_BASE_URL,
        timeout: config.DYNAMIC_OFFER_TIMEOUT_MS,
        maxRetries: 0,
      }),
    };
  }
  return cached.client;
}

const copy = {
  headline: z.string().min(1).max(200),
  body: z.string().min(1).max(1000),
  cta: z.string().min(1).max(100).optional(),
};

/** What the model is asked to return (the response format): any kind, any numbers. */
const modelAnswer = z.object({
  kind: z.enum(['discount', 'downgrade', 'pause', 'incentive']),
  percent: z.number().nullable().optional(),
  cycles: z.number().nullable().optional(),
  months: z.number().nullable().optional(),
  plan: z.string().nullable().optional(),
  incentive: z.string().nullable().optional(),
  ...copy,
});

const outside = (max: number, what: string) => `must be at most ${max} (${what})`;

/** The guardrails as a schema: an answer outside them fails to parse, naming the rule it broke. */
function guardrailSchema(g: DynamicSettings, kinds: OfferKind[]) {
  const variants = {
    discount: z.object({
      kind: z.literal('discount'),
      percent: z.number().int().min(1).max(g.max_percent, outside(g.max_percent, 'max_percent')),
      cycles: z.number().int().min(1).max(g.max_cycles, outside(g.max_cycles, 'max_cycles')),
      ...copy,
    }),
    downgrade: z.object({
      kind: z.literal('downgrade'),
      plan: z.string().refine((p) => g.downgrade_plans.includes(p), 'is not one of downgrade_plans'),
      ...copy,
    }),
    pause: z.object({
      kind: z.literal('pause'),
      months: z.number().int().min(1).max(g.max_pause_months, outside(g.max_pause_months, 'max_pause_months')),
      ...copy,
    }),
    incentive: z.object({
      kind: z.literal('incentive'),
      incentive: z.string().refine((i) => g.incentives.includes(i), 'is not one of incentives'),
      months: z
        .number()
        .int()
        .min(1)
        .max(g.max_incentive_months, outside(g.max_incentive_months, 'max_incentive_months')),
      ...copy,
    }),
  };
  const allowed = kinds.map((k) => variants[k]);
  const kindCheck = z.object({
    kind: z.string().refine((k) => (kinds as string[]).includes(k), `must be one of ${kinds.join(', ')}`),
  });
  return {
    kindCheck,
    union: z.discriminatedUnion(
      'kind',
      allowed as unknown as [typeof variants.discount, ...(typeof variants.discount)[]],
    ),
  };
}

async function customerFacts(
  em: EntityManager,
  appId: string,
  flow: FlowSnapshot,
  answers: Record<string, GivenAnswer>,
  c: OfferContext,
) {
  const access = await effectiveAccess(em, appId, c.account.id, { includePrivateMeta: false });
  const sub = c.subscription;
  return {
    answers: Object.entries(answers).map(([stepId, a]) => {
      const step = flow.steps.find((s) => s.id === stepId);
      return {
        question: step?.title ?? stepId,
        answer: step?.answers?.find((x) => x.id === a.answer)?.label ?? a.answer,
        text: a.text,
      };
    }),
    plan: { id: c.plan?.id ?? c.account.planId, name: c.plan?.name ?? c.account.planId },
    subscription: sub
      ? {
          status: sub.status,
          price: sub.price,
          currency: sub.currency,
          interval: sub.interval,
          renews_at: sub.renewsAt,
        }
      : null,
    tenure_days: Math.floor((Date.now() - new Date(c.account.createdAt).getTime()) / 86_400_000),
    usage: access.entitlements
      .filter((e) => e.type === 'usage')
      .map((e) => ({ entitlement: e.name, usage: e.usage, limit: e.max })),
  };
}

/**
 * Asks the model for this customer's offer. Never throws: a timeout, an error, an unparsable or
 * out-of-guardrail answer is `{ ok: false, reason, detail }`, and the caller shows the static offer.
 */
export async function chooseDynamic(
  deps: Deps,
  em: EntityManager,
  appId: string,
  flow: FlowSnapshot,
  step: Step,
  answers: Record<string, GivenAnswer>,
  c: OfferContext,
): Promise<DynamicResult> {
  const g = step.dynamic!;
  const kinds = g.kinds.filter((k) => kindApplies(k, c, g));
  if (kinds.length === 0)
    return { ok: false, reason: 'not_applicable', detail: 'no allowed offer kind applies to this account' };
  try {
    const facts = await customerFacts(em, appId, flow, answers, c);
    const guardrails = {
      kinds,
      max_discount_percent: g.max_percent,
      max_discount_cycles: g.max_cycles,
      max_pause_months: g.max_pause_months,
      downgrade_plans: g.downgrade_plans
        .filter((plan) => applies({ kind: 'downgrade', plan }, c))
        .map((id) => ({ id, name: c.plans.get(id)?.name })),
      incentives: g.incentives
        .filter((incentive) => applies({ kind: 'incentive', incentive, months: 1 }, c))
        .map((id) => ({ id, name: c.incentives.get(id)?.name })),
      max_incentive_months: g.max_incentive_months,
    };
    const completion = await (
      await client(deps.config)
    ).chat.completions.create({
      model: deps.config.OPENAI_MODEL,
      temperature: 0.2,
      messages: [
        {
          role: 'system',
          content:
            'You choose one retention offer for a customer who is about to cancel a subscription, and write its ' +
            'headline, body and call to action. ' +
            'Pick the offer most likely to keep this customer given their reasons, plan, tenure and usage. Stay ' +
            'strictly within the guardrails: ' +
            'only the listed kinds, plans and incentives, and never above the maximums. Reply with one JSON object ' +
            'only.' +
            (g.instructions ? `\nThe company adds: ${g.instructions}` : ''),
        },
        {
          role: 'user',
          content: JSON.stringify({
            step: { title: step.title, body: step.body ?? null },
            customer: facts,
            guardrails,
          }),
        },
      ],
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'retention_offer', schema: z.toJSONSchema(modelAnswer) as Record<string, unknown> },
      },
    });
    const content = completion.choices[0]?.message?.content;
    if (!content) return { ok: false, reason: 'invalid_answer', detail: 'the model returned no content' };
    let raw: unknown;
    try {
      raw = JSON.parse(content);
    } catch {
      return { ok: false, reason: 'invalid_answer', detail: 'the model did not return JSON' };
    }
    const { kindCheck, union } = guardrailSchema(g, kinds);
    const k = kindCheck.safeParse(raw);
    const parsed = k.success ? union.safeParse(raw) : k;
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return {
        ok: false,
        reason: 'outside_guardrails',
        detail: `${issue.path.join('.') || 'answer'} ${issue.message}`,
      };
    }
    const a = parsed.data as z.output<typeof modelAnswer>;
    const terms = toTerms(a);
    if (!applies(terms, c))
      return { ok: false, reason: 'outside_guardrails', detail: `the ${terms.kind} does not apply to this account` };
    return { ok: true, terms, copy: { headline: a.headline, body: a.body, cta: a.cta } };
  } catch (err) {
    if (err instanceof (await sdk()).APIConnectionTimeoutError)
      return { ok: false, reason: 'timeout', detail: `no answer within ${deps.config.DYNAMIC_OFFER_TIMEOUT_MS} ms` };
    deps.logger.warn({ err }, 'dynamic offer failed; using the static offer');
    return { ok: false, reason: 'error', detail: String((err as Error).message).slice(0, 500) };
  }
}

function toTerms(a: z.output<typeof modelAnswer>): OfferTerms {
  switch (a.kind) {
    case 'discount':
      return { kind: 'discount', percent: a.percent!, cycles: a.cycles! };
    case 'downgrade':
      return { kind: 'downgrade', plan: a.plan! };
    case 'pause':
      return { kind: 'pause', months: a.months! };
    case 'incentive':
      return { kind: 'incentive', incentive: a.incentive!, months: a.months! };
  }
}
