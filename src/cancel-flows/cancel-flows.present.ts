// Presenters: entities to the spec's JSON, pure, beside the schemas they produce.
import type { z } from 'zod';
import { iso } from '../time.js';
import { type ICancelFlow, type ICancelSession } from './cancel-flows.entities.js';
import { remaining, stepById } from './engine.js';
import { presentOffer } from './save-offers.js';
import type * as S from './cancel-flows.schemas.js';

export function presentFlow(f: ICancelFlow): z.input<typeof S.flowSchema>;
export function presentFlow(
  f: ICancelFlow,
  recent: { sessions: number; saves: number },
): z.input<typeof S.flowListItemSchema>;
export function presentFlow(
  f: ICancelFlow,
  recent?: { sessions: number; saves: number },
): z.input<typeof S.flowSchema> & { sessions_30d?: number; saves_30d?: number } {
  return {
    id: f.id,
    name: f.name,
    status: f.status,
    steps: f.steps,
    ...(recent ? { sessions_30d: recent.sessions, saves_30d: recent.saves } : {}),
    created_at: iso(f.createdAt)!,
    updated_at: iso(f.updatedAt)!,
  };
}

/** The session's `account`: its id, plan name and live subscription's terms (read by sessions.service.ts). */
export interface SessionAccount {
  id: string;
  plan_name: string;
  subscription: { price: number; currency: string; interval: 'month' | 'year'; renews_at: string | null } | null;
}

export function sessionView(s: ICancelSession, account: SessionAccount): z.input<typeof S.sessionSchema> {
  const steps = s.flow.steps;
  const step = stepById(steps, s.stepId)!;
  const ended = s.status !== 'open';
  const total = s.path.length + remaining(steps, s.stepId);
  return {
    id: s.id,
    status: s.status,
    flow: { id: s.flow.id, name: s.flow.name },
    step: {
      id: step.id,
      type: step.type,
      title: step.title,
      decline_label: step.decline_label ?? null,
      body: step.body ?? null,
      answers: step.type === 'question' ? (step.answers ?? []).map((a) => ({ id: a.id, label: a.label })) : [],
      allow_text: step.type === 'question' ? !!step.allow_text : false,
    },
    progress: { index: ended ? total : s.path.length + 1, total },
    can_go_back: !ended && s.path.length > 0,
    offer: presentOffer(s.offer ?? null),
    approve_url: s.approveUrl ?? null,
    result: s.result ?? null,
    account,
    answers: s.answers,
    created_at: iso(s.createdAt)!,
    updated_at: iso(s.updatedAt)!,
    ended_at: iso(s.endedAt),
  };
}
