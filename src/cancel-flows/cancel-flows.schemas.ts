import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { cursorQuery } from '../http/pagination.js';
import { accountId, callerId, httpUrl } from '../http/schemas.js';

export const OFFER_KINDS = ['discount', 'downgrade', 'pause', 'incentive'] as const;
export type OfferKind = (typeof OFFER_KINDS)[number];
export const offerKind = z.enum(OFFER_KINDS);

const text = (max: number) => z.string().trim().min(1, 'must not be empty').max(max);

/** Texts a static offer may set; the service writes defaults for the ones left out. */
const offerCopy = {
  headline: text(200).optional(),
  body: text(2000).optional(),
  cta: text(100).optional(),
};

/** When a static offer applies: an answer given in the session (optionally at one question step). */
const when = z.object({ step: callerId.optional(), answers: z.array(callerId).min(1).max(50) });

export const discountTerms = { percent: z.number().int().min(1).max(100), cycles: z.number().int().min(1).max(36) };
export const downgradeTerms = { plan: callerId };
export const pauseTerms = {
  months: z.number().int().min(1, 'must be between 1 and 12').max(12, 'must be between 1 and 12'),
};
export const incentiveTerms = { incentive: callerId, months: z.number().int().min(1).max(36) };

export const staticOffer = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('discount'), ...discountTerms, ...offerCopy, when: when.optional() }),
  z.object({ kind: z.literal('downgrade'), ...downgradeTerms, ...offerCopy, when: when.optional() }),
  z.object({ kind: z.literal('pause'), ...pauseTerms, ...offerCopy, when: when.optional() }),
  z.object({ kind: z.literal('incentive'), ...incentiveTerms, ...offerCopy, when: when.optional() }),
]);
export type StaticOffer = z.output<typeof staticOffer>;

/** Guardrails of model-chosen offers on an offer step. */
export const dynamicSettings = z.object({
  enabled: z.boolean().default(false),
  kinds: z.array(offerKind).min(1).default(['discount', 'pause']),
  max_percent: z.number().int().min(1).max(100).default(30),
  max_cycles: z.number().int().min(1).max(36).default(3),
  max_pause_months: z.number().int().min(1).max(12).default(3),
  downgrade_plans: z.array(callerId).max(50).default([]),
  incentives: z.array(callerId).max(50).default([]),
  max_incentive_months: z.number().int().min(1).max(36).default(3),
  /** Extra guidance for the model (tone, what to favour). */
  instructions: z.string().max(2000).optional(),
});
export type DynamicSettings = z.output<typeof dynamicSettings>;

const answer = z.object({ id: callerId, label: text(200), next: callerId.nullable().optional() });

export const step = z.object({
  id: callerId,
  type: z.enum(['question', 'text', 'offer', 'confirm']),
  title: text(200),
  body: z.string().max(4000).nullable().optional(),
  decline_label: z.string().max(100).nullable().optional(),
  /** The step after this one; default: the next step in the list. Not on confirm steps. */
  next: callerId.nullable().optional(),
  /** Question steps: the choices; an answer's `next` branches. */
  answers: z.array(answer).max(20).optional(),
  /** Question steps: whether free text is accepted with (or instead of) an answer. */
  allow_text: z.boolean().optional(),
  /** Offer steps: static offers, the first that matches the answers and applies to the account wins. */
  offers: z.array(staticOffer).max(20).optional(),
  dynamic: dynamicSettings.optional(),
});
export type Step = z.output<typeof step>;

const status = z.enum(['active', 'draft']);
const steps = z
  .array(step)
  .min(1, 'must have at least one step')
  .max(50)
  // The rule the document can state of the flow's structure; the others (branches lie ahead, every step reachable,
  // ids unique) are checked by validateSteps.
  .meta({ contains: { properties: { type: { const: 'confirm' } }, required: ['type'] } });

export const flowParams = appIdParams.extend({ flowId: callerId });
export const createFlowBody = z.object({
  id: callerId.optional(),
  name: text(200).optional(),
  status: status.optional(),
  steps: steps.optional(),
});
export const updateFlowBody = z.object({
  name: text(200).optional(),
  status: status.optional(),
  steps: steps.optional(),
});
export const statsQuery = z.object({ days: z.coerce.number().int().min(1).max(365).default(30) });
export const previewBody = z.object({
  /** Answers by question step id. */
  answers: z.record(z.string(), callerId).default({}),
  /** An account: the offer is checked against it (and may be chosen by the model). */
  account: accountId.optional(),
  /** The offer step to preview; default: the first offer step. */
  step: callerId.optional(),
});

export const sessionParams = appIdParams.extend({ sessionId: z.string().min(1).max(100) });
export const startBody = z.object({ flow: callerId.optional(), account: accountId.optional() });
export const answerBody = z.object({
  step: callerId,
  answer: callerId.optional(),
  text: z.string().max(2000).optional(),
});
export const acceptBody = z.object({ return_url: httpUrl.optional(), cancel_url: httpUrl.optional() });
export const listSessionsQuery = cursorQuery(20, 100).extend({
  flow: callerId.optional(),
  account: accountId.optional(),
  status: z.enum(['open', 'pending', 'saved', 'cancelled', 'abandoned']).optional(),
});

/** A cancel flow; its steps as stored (the shape of `step` after validation and defaults). */
export const flowSchema = z.object({
  id: z.string(),
  name: z.string(),
  status: z.enum(['active', 'draft']),
  steps: z.array(z.looseObject({ id: z.string(), type: z.enum(['question', 'text', 'offer', 'confirm']) })),
  created_at: z.string(),
  updated_at: z.string(),
});
/** A cancel flow in the list: with its sessions and saves of the last 30 days (always there, 0 when none). */
export const flowListItemSchema = flowSchema.extend({ sessions_30d: z.number(), saves_30d: z.number() });
/** An offer shown in a session (or a preview): what, from where, its copy and what the customer did. */
export const sessionOfferSchema = z.object({
  kind: offerKind,
  source: z.enum(['static', 'dynamic']),
  details: z.record(z.string(), z.unknown()),
  headline: z.string(),
  body: z.string(),
  cta: z.string(),
  status: z.enum(['shown', 'accepted', 'declined']),
  /** Set when the model was asked but its choice was not used. */
  fallback_reason: z.string().optional(),
});

export const sessionSchema = z.object({
  id: z.string(),
  status: z.enum(['open', 'pending', 'saved', 'cancelled', 'abandoned']),
  flow: z.object({ id: z.string(), name: z.string() }),
  step: z.object({
    id: z.string(),
    type: z.enum(['question', 'text', 'offer', 'confirm']),
    title: z.string(),
    decline_label: z.string().nullable(),
    body: z.string().nullable(),
    /** A question's answers to choose from (empty on other steps). */
    answers: z.array(z.object({ id: z.string(), label: z.string() })),
    allow_text: z.boolean(),
  }),
  progress: z.object({ index: z.number(), total: z.number() }),
  can_go_back: z.boolean(),
  offer: sessionOfferSchema.nullable(),
  approve_url: z.string().nullable(),
  result: z.record(z.string(), z.unknown()).nullable(),
  account: z.object({
    id: z.string(),
    plan_name: z.string(),
    subscription: z
      .object({
        price: z.number(),
        currency: z.string(),
        interval: z.enum(['month', 'year']),
        renews_at: z.string().nullable(),
      })
      .nullable(),
  }),
  /** The answers given so far, by question step. */
  answers: z.record(z.string(), z.object({ answer: z.string().nullable(), text: z.string().nullable() })),
  created_at: z.string(),
  updated_at: z.string(),
  ended_at: z.string().nullable(),
});

export const capabilitiesSchema = z.object({
  dynamic_offers: z.boolean(),
  /** The model dynamic offers use, when configured. */
  model: z.string().nullable(),
  offer_kinds: z.array(z.string()),
  external_pause_workflow: z.boolean(),
  pause_runner: z.string(),
});

export const previewOfferSchema = z.object({ step: z.string(), offer: sessionOfferSchema.nullable() });

export const flowStatsSchema = z.object({
  flow: z.object({ id: z.string(), name: z.string() }),
  days: z.number(),
  sessions: z.number(),
  open: z.number(),
  saved: z.number(),
  cancelled: z.number(),
  abandoned: z.number(),
  /** Saved among sessions that ended (saved, cancelled or abandoned). */
  save_rate: z.number(),
  revenue_kept: z.array(z.object({ currency: z.string(), monthly: z.number(), saves: z.number() })),
  reasons: z.array(z.object({ step: z.string(), answer: z.string(), label: z.string(), count: z.number() })),
  offers: z.array(
    z.object({
      kind: offerKind,
      source: z.enum(['static', 'dynamic']),
      shown: z.number(),
      accepted: z.number(),
      declined: z.number(),
      acceptance_rate: z.number(),
    }),
  ),
  /** Times the model was asked but the static offer was shown, by reason. */
  dynamic_fallbacks: z.record(z.string(), z.number()),
});
