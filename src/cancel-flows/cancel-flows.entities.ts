import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { OfferKind, Step } from './cancel-flows.schemas.js';

export type FlowStatus = 'active' | 'draft';

export const CancelFlow = defineEntity({
  name: 'CancelFlow',
  tableName: 'cancel_flows',
  properties: {
    appId: p.string().primary(),
    id: p.string().primary(),
    seq: p.bigint('number').autoincrement().generated('by default as identity'),
    name: p.string(),
    status: p.string().$type<FlowStatus>(),
    steps: p.json<Step[]>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type ICancelFlow = InferEntity<typeof CancelFlow>;

export type SessionStatus = 'open' | 'pending' | 'saved' | 'cancelled' | 'abandoned';
export interface FlowSnapshot {
  id: string;
  name: string;
  steps: Step[];
}
export interface GivenAnswer {
  answer: string | null;
  text: string | null;
}
/** The terms of an offer, whoever chose them. */
export type OfferTerms =
  | { kind: 'discount'; percent: number; cycles: number }
  | { kind: 'downgrade'; plan: string }
  | { kind: 'pause'; months: number }
  | { kind: 'incentive'; incentive: string; months: number };

/** Why the model's choice was not used: a code shown in the session, and a detail kept for operators. */
export type FallbackReason = 'not_applicable' | 'invalid_answer' | 'outside_guardrails' | 'timeout' | 'error';

/** An offer in a session (stored), presented without `step` and `terms`. */
export interface SessionOffer {
  step: string;
  kind: OfferKind;
  source: 'static' | 'dynamic';
  terms: OfferTerms;
  details: Record<string, unknown>;
  headline: string;
  body: string;
  cta: string;
  status: 'shown' | 'accepted' | 'declined';
  /**
   * Set when the model was asked but its choice was not used: a code (shown) and its detail (kept, not shown to
   * customers).
   */
  fallback_reason?: FallbackReason;
  fallback_detail?: string;
}

/** One offer shown in a session, for stats: what, from where, and what the customer did. */
export interface OfferLogEntry {
  step: string;
  kind: string;
  source: 'static' | 'dynamic';
  /** `refused` / `expired`: accepted here, then turned down or never approved at the provider. */
  status: 'shown' | 'accepted' | 'declined' | 'withdrawn' | 'refused' | 'expired';
  fallback_reason?: string;
  fallback_detail?: string;
}

export const CancelSession = defineEntity({
  name: 'CancelSession',
  tableName: 'cancel_sessions',
  properties: {
    id: p.string().primary(),
    appId: p.string(),
    flowId: p.string(),
    accountId: p.string(),
    status: p.string().$type<SessionStatus>(),
    flow: p.json<FlowSnapshot>(),
    stepId: p.string(),
    /** Steps shown before the current one, oldest first (for `back`). */
    path: p.json<string[]>(),
    answers: p.json<Record<string, GivenAnswer>>(),
    offer: p.json<SessionOffer>().nullable(),
    offers: p.json<OfferLogEntry[]>(),
    approveUrl: p.text().nullable(),
    result: p.json<Record<string, unknown>>().nullable(),
    /** Monthly revenue the save kept (see docs/decisions/0137-stats.md), in `currency`. */
    revenueKept: p.double().nullable(),
    currency: p.string().nullable(),
    /** Set while an accept or cancel is being applied, so a second one waits its turn (409). */
    claimedUntil: p.datetime().nullable(),
    /** The request id of the actor's intent holding the claim (its retried step takes it over); null otherwise. */
    claimedBy: p.string().nullable(),
    endedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type ICancelSession = InferEntity<typeof CancelSession>;
