// Moving through a flow's steps: successors, branches, validation of a whole step list, progress.
import type { EntityManager } from '@mikro-orm/postgresql';
import { Incentive, Plan } from '../catalog/catalog.entities.js';
import { AppError } from '../errors.js';
import type { Step } from './cancel-flows.schemas.js';

/** A flow for a new cancel flow created without steps: ask why, offer something, confirm. */
export function templateSteps(): Step[] {
  return [
    {
      id: 'reason',
      type: 'question',
      title: 'Why are you cancelling?',
      decline_label: null,
      answers: [
        { id: 'too_expensive', label: 'It is too expensive' },
        { id: 'not_using', label: 'I am not using it enough' },
        { id: 'missing_features', label: 'It is missing features I need' },
        { id: 'other', label: 'Something else' },
      ],
      allow_text: true,
    },
    {
      id: 'offer',
      type: 'offer',
      title: 'Before you go',
      decline_label: 'No thanks, continue cancelling',
      offers: [
        { kind: 'discount', percent: 25, cycles: 3, when: { answers: ['too_expensive'] } },
        { kind: 'pause', months: 2, when: { answers: ['not_using'] } },
        { kind: 'pause', months: 1 },
      ],
    },
    {
      id: 'confirm',
      type: 'confirm',
      title: 'Confirm your cancellation',
      body: 'Your subscription ends now and your account moves to the free plan.',
      decline_label: null,
    },
  ];
}

export const stepById = (steps: Step[], id: string) => steps.find((s) => s.id === id);

/** The step after `step`: the answer's branch, else the step's `next`, else the following step. */
export function successor(steps: Step[], step: Step, answerId?: string | null): string | null {
  if (step.type === 'confirm') return null;
  const branch = answerId ? step.answers?.find((a) => a.id === answerId)?.next : undefined;
  if (branch) return branch;
  if (step.next) return step.next;
  const i = steps.indexOf(step);
  return steps[i + 1]?.id ?? null;
}

/** Every step a step can lead to. */
function targets(steps: Step[], step: Step): string[] {
  const out = new Set<string>();
  const plain = successor(steps, step);
  if (plain) out.add(plain);
  for (const a of step.answers ?? []) if (a.next) out.add(a.next);
  return [...out];
}

/**
 * Steps still to be shown on the longest way from `id` to a confirm step, `id` included (flows only
 * branch forward, so this terminates).
 */
export function remaining(steps: Step[], id: string, memo = new Map<string, number>()): number {
  const known = memo.get(id);
  if (known !== undefined) return known;
  const step = stepById(steps, id);
  if (!step) return 0;
  const n = 1 + Math.max(0, ...targets(steps, step).map((t) => remaining(steps, t, memo)));
  memo.set(id, n);
  return n;
}

/**
 * Checks a whole step list: unique ids, fields that fit each type, branch targets that exist and lie
 * ahead, every step (and so every confirm step) reachable from the first, every way ending at a
 * confirm step, and plans and incentives that exist. The first problem is a 400 naming the step (a 404 for a plan or
 * incentive that does not exist).
 */
export async function validateSteps(em: EntityManager, appId: string, steps: Step[]): Promise<void> {
  // A plan or incentive that does not exist is a 404 (a record the body names), the rest a 400.
  const fail = (s: Step | null, message: string, status: 400 | 404 = 400) =>
    new AppError(status, s ? `steps.${s.id}: ${message}` : `steps: ${message}`);
  const index = new Map<string, number>();
  for (const s of steps) {
    if (index.has(s.id)) throw fail(s, 'duplicate step id');
    index.set(s.id, index.size);
  }
  if (!steps.some((s) => s.type === 'confirm')) throw fail(null, 'needs a confirm step');

  const answerIds = new Set<string>();
  const plans = new Set<string>();
  const incentives = new Set<string>();
  for (const s of steps) {
    if (s.type !== 'question' && (s.answers?.length || s.allow_text)) throw fail(s, 'only question steps have answers');
    if (s.type !== 'offer' && (s.offers?.length || s.dynamic)) throw fail(s, 'only offer steps have offers');
    if (s.type === 'confirm' && s.next) throw fail(s, 'a confirm step ends the flow and has no next step');
    if (s.type === 'question') {
      if (!s.answers?.length && !s.allow_text) throw fail(s, 'a question needs answers or allow_text');
      const seen = new Set<string>();
      for (const a of s.answers ?? []) {
        if (seen.has(a.id)) throw fail(s, `duplicate answer ${a.id}`);
        seen.add(a.id);
        answerIds.add(a.id);
      }
    }
    if (s.type === 'offer') {
      if (!s.offers?.length && !s.dynamic?.enabled)
        throw fail(s, 'an offer step needs a static offer or dynamic offers enabled');
      for (const o of s.offers ?? []) {
        if (o.kind === 'downgrade') plans.add(o.plan);
        if (o.kind === 'incentive') incentives.add(o.incentive);
      }
      for (const p of s.dynamic?.downgrade_plans ?? []) plans.add(p);
      for (const i of s.dynamic?.incentives ?? []) incentives.add(i);
      if (s.dynamic?.enabled && s.dynamic.kinds.includes('downgrade') && !s.dynamic.downgrade_plans.length)
        throw fail(s, 'dynamic downgrades need downgrade_plans');
      if (s.dynamic?.enabled && s.dynamic.kinds.includes('incentive') && !s.dynamic.incentives.length)
        throw fail(s, 'dynamic incentives need incentives');
    }
    const here = index.get(s.id)!;
    const branches = [
      ...(s.next ? [{ to: s.next, what: 'next' }] : []),
      ...(s.answers ?? []).filter((a) => a.next).map((a) => ({ to: a.next!, what: `answer ${a.id}` })),
    ];
    for (const b of branches) {
      const there = index.get(b.to);
      if (there === undefined) throw fail(s, `${b.what} goes to step ${b.to}, which does not exist`);
      if (there <= here) throw fail(s, `${b.what} goes back to step ${b.to}; branches may only go forward`);
    }
    if (s.type !== 'confirm' && successor(steps, s) === null) throw fail(s, 'is the last step but not a confirm step');
  }
  for (const s of steps) {
    for (const o of s.offers ?? []) {
      if (o.when?.step && stepById(steps, o.when.step)?.type !== 'question')
        throw fail(s, `offer condition names step ${o.when.step}, which is not a question`);
      for (const a of o.when?.answers ?? [])
        if (!answerIds.has(a)) throw fail(s, `offer condition names answer ${a}, which no question has`);
    }
  }

  const reachable = new Set<string>();
  const queue = [steps[0].id];
  while (queue.length) {
    const id = queue.pop()!;
    if (reachable.has(id)) continue;
    reachable.add(id);
    queue.push(...targets(steps, stepById(steps, id)!));
  }
  for (const s of steps) {
    if (!reachable.has(s.id))
      throw fail(
        s,
        s.type === 'confirm' ? 'confirm step is unreachable from the first step' : 'is unreachable from the first step',
      );
  }

  const [knownPlans, knownIncentives] = await Promise.all([
    plans.size ? em.find(Plan, { appId, id: { $in: [...plans] } }) : [],
    incentives.size ? em.find(Incentive, { appId, id: { $in: [...incentives] } }) : [],
  ]);
  const missing = (ids: Set<string>, found: { id: string }[]) => [...ids].find((id) => !found.some((f) => f.id === id));
  const plan = missing(plans, knownPlans);
  if (plan)
    throw fail(
      steps.find(
        (s) =>
          s.offers?.some((o) => o.kind === 'downgrade' && o.plan === plan) || s.dynamic?.downgrade_plans.includes(plan),
      )!,
      `plan ${plan} does not exist`,
      404,
    );
  const incentive = missing(incentives, knownIncentives);
  if (incentive)
    throw fail(
      steps.find(
        (s) =>
          s.offers?.some((o) => o.kind === 'incentive' && o.incentive === incentive) ||
          s.dynamic?.incentives.includes(incentive),
      )!,
      `incentive ${incentive} does not exist`,
      404,
    );
}
