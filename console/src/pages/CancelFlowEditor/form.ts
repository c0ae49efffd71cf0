// The cancel-flow editor's form: the state the fields edit, made from a stored flow, and turned back into the body
// the API takes (only the fields each step's type has; blank numbers left out). Plain functions, no React, so they
// are unit-tested (test/unit/cancel-flow-form.test.ts). Relative imports name their `.js` file: the unit tests
// type-check this module under the root tsconfig (NodeNext), and the console's bundler resolution accepts it too.
import type {
  CancelFlowsCapabilitiesResponse,
  CancelFlowsGetResponse,
  CancelFlowsUpdateBody,
  IncentivesListResponse,
  PlansListResponse,
} from '@offerkit/sdk';
import type { Num } from '../../forms.js';

export type Flow = CancelFlowsGetResponse;
export type StepBody = NonNullable<CancelFlowsUpdateBody['steps']>[number];
export type OfferBody = NonNullable<StepBody['offers']>[number];
export type DynamicBody = NonNullable<StepBody['dynamic']>;
export type StepType = StepBody['type'];
export type Kind = OfferBody['kind'];

export interface FlowCatalog {
  plans: PlansListResponse;
  incentives: IncentivesListResponse;
  capabilities: CancelFlowsCapabilitiesResponse;
}

export const KINDS: { value: Kind; label: string }[] = [
  { value: 'discount', label: 'Discount' },
  { value: 'pause', label: 'Pause' },
  { value: 'downgrade', label: 'Downgrade' },
  { value: 'incentive', label: 'Incentive' },
];
export const STEP_TYPES: { value: StepType; label: string }[] = [
  { value: 'question', label: 'Question (choices, branches)' },
  { value: 'text', label: 'Text' },
  { value: 'offer', label: 'Save offer' },
  { value: 'confirm', label: 'Confirm (ends the flow)' },
];

export interface AnswerForm {
  id: string;
  label: string;
  /** '' follows the step's own next. */
  next: string;
}
export interface OfferForm {
  kind: Kind;
  percent: Num;
  cycles: Num;
  /** Pause months (1 to 12) or incentive months (1 to 36). */
  months: Num;
  plan: string | null;
  incentive: string | null;
  headline: string;
  body: string;
  cta: string;
  /** Answers that make this offer apply; none: any answers (a fallback). */
  when: string[];
  whenStep: string | null;
}
export interface DynamicForm {
  enabled: boolean;
  kinds: Kind[];
  max_percent: Num;
  max_cycles: Num;
  max_pause_months: Num;
  downgrade_plans: string[];
  incentives: string[];
  max_incentive_months: Num;
  instructions: string;
}
export interface StepForm {
  /** A stable React key (ids may be typed while editing). */
  key: string;
  id: string;
  type: StepType;
  title: string;
  body: string;
  decline_label: string;
  /** '' is the following step in the list. */
  next: string;
  answers: AnswerForm[];
  allow_text: boolean;
  offers: OfferForm[];
  /** Null when the step has never had model-chosen offers. */
  dynamic: DynamicForm | null;
  /** Whether the stored step has guardrails: they are sent even when off, else only once turned on. */
  hadDynamic: boolean;
}
export interface FlowForm {
  name: string;
  active: boolean;
  steps: StepForm[];
}

let keys = 0;
const newKey = () => `k${++keys}`;

export const DEFAULT_DYNAMIC: DynamicForm = {
  enabled: true,
  kinds: ['discount', 'pause'],
  max_percent: 30,
  max_cycles: 3,
  max_pause_months: 3,
  downgrade_plans: [],
  incentives: [],
  max_incentive_months: 3,
  instructions: '',
};

export function offerForm(o: OfferBody): OfferForm {
  return {
    kind: o.kind,
    percent: o.kind === 'discount' ? o.percent : 20,
    cycles: o.kind === 'discount' ? o.cycles : 3,
    months: o.kind === 'pause' || o.kind === 'incentive' ? o.months : 1,
    plan: o.kind === 'downgrade' ? o.plan : null,
    incentive: o.kind === 'incentive' ? o.incentive : null,
    headline: o.headline ?? '',
    body: o.body ?? '',
    cta: o.cta ?? '',
    when: o.when?.answers ?? [],
    whenStep: o.when?.step ?? null,
  };
}

export function stepForm(s: StepBody): StepForm {
  const d = s.dynamic;
  return {
    key: newKey(),
    id: s.id,
    type: s.type,
    title: s.title,
    body: s.body ?? '',
    decline_label: s.decline_label ?? '',
    next: s.next ?? '',
    answers: (s.answers ?? []).map((a) => ({ id: a.id, label: a.label, next: a.next ?? '' })),
    allow_text: s.allow_text ?? false,
    offers: (s.offers ?? []).map(offerForm),
    dynamic: d
      ? {
          enabled: d.enabled ?? false,
          kinds: d.kinds ?? DEFAULT_DYNAMIC.kinds,
          max_percent: d.max_percent ?? 30,
          max_cycles: d.max_cycles ?? 3,
          max_pause_months: d.max_pause_months ?? 3,
          downgrade_plans: d.downgrade_plans ?? [],
          incentives: d.incentives ?? [],
          max_incentive_months: d.max_incentive_months ?? 3,
          instructions: d.instructions ?? '',
        }
      : null,
    hadDynamic: !!d,
  };
}

export const formOf = (f: Flow): FlowForm => ({
  name: f.name,
  active: f.status === 'active',
  steps: (f.steps as StepBody[]).map(stepForm),
});

/** A blank number is left out (the editor blocks saving while one is), so the body never carries a guess. */
const n = (v: Num) => (v === '' ? undefined : v);
const copyOf = (o: OfferForm) => ({
  ...(o.headline.trim() ? { headline: o.headline } : {}),
  ...(o.body.trim() ? { body: o.body } : {}),
  ...(o.cta.trim() ? { cta: o.cta } : {}),
});

export function offerBody(o: OfferForm): OfferBody {
  const when = o.when.length ? { when: { ...(o.whenStep ? { step: o.whenStep } : {}), answers: o.when } } : {};
  const extra = { ...copyOf(o), ...when };
  switch (o.kind) {
    case 'discount':
      return { kind: 'discount', percent: n(o.percent)!, cycles: n(o.cycles)!, ...extra };
    case 'pause':
      return { kind: 'pause', months: n(o.months)!, ...extra };
    case 'downgrade':
      return { kind: 'downgrade', plan: o.plan ?? '', ...extra };
    case 'incentive':
      return { kind: 'incentive', incentive: o.incentive ?? '', months: n(o.months)!, ...extra };
  }
}

export function dynamicBody(d: DynamicForm): DynamicBody {
  return {
    enabled: d.enabled,
    kinds: d.kinds,
    max_percent: n(d.max_percent),
    max_cycles: n(d.max_cycles),
    max_pause_months: n(d.max_pause_months),
    downgrade_plans: d.downgrade_plans,
    incentives: d.incentives,
    max_incentive_months: n(d.max_incentive_months),
    ...(d.instructions.trim() ? { instructions: d.instructions } : {}),
  };
}

/** A step as the API takes it: only the fields its type has. */
export function stepBody(s: StepForm): StepBody {
  return {
    id: s.id,
    type: s.type,
    title: s.title,
    body: s.body.trim() ? s.body : null,
    decline_label: s.decline_label.trim() ? s.decline_label : null,
    ...(s.type !== 'confirm' && s.next ? { next: s.next } : {}),
    ...(s.type === 'question'
      ? {
          answers: s.answers.map((a) => ({ id: a.id, label: a.label, ...(a.next ? { next: a.next } : {}) })),
          allow_text: s.allow_text,
        }
      : {}),
    ...(s.type === 'offer'
      ? {
          offers: s.offers.map(offerBody),
          ...(s.dynamic && (s.dynamic.enabled || s.hadDynamic) ? { dynamic: dynamicBody(s.dynamic) } : {}),
        }
      : {}),
  };
}

/** The flow as the API's update takes it. */
export function flowBody(form: FlowForm) {
  return {
    name: form.name,
    status: form.active ? ('active' as const) : ('draft' as const),
    steps: form.steps.map(stepBody),
  };
}

/** Whether the form would change the stored flow: its body differs from the one the stored flow maps to. */
export function isDirty(form: FlowForm, flow: Flow): boolean {
  const saved = formOf(flow);
  return (
    JSON.stringify(flowBody(form)) !==
    JSON.stringify({ name: saved.name, status: flow.status, steps: saved.steps.map(stepBody) })
  );
}

/** Removing a step also removes the branches to it (those answers follow the step's default again). */
export function withoutStep(form: FlowForm, key: string): FlowForm {
  const gone = form.steps.find((s) => s.key === key)!.id;
  return {
    ...form,
    steps: form.steps
      .filter((s) => s.key !== key)
      .map((s) => ({
        ...s,
        next: s.next === gone ? '' : s.next,
        answers: s.answers.map((a) => (a.next === gone ? { ...a, next: '' } : a)),
        offers: s.offers.map((o) => (o.whenStep === gone ? { ...o, whenStep: null } : o)),
      })),
  };
}

export function newStep(type: StepType, id: string, title: string): StepForm {
  const base: StepForm = {
    key: newKey(),
    id,
    type,
    title,
    body: '',
    decline_label: '',
    next: '',
    answers: [],
    allow_text: false,
    offers: [],
    dynamic: null,
    hadDynamic: false,
  };
  if (type === 'offer')
    return {
      ...base,
      decline_label: 'No thanks, continue cancelling',
      offers: [offerForm({ kind: 'pause', months: 1 })],
    };
  return base;
}

export const offerSummary = (o: OfferForm) =>
  o.kind === 'discount'
    ? `${o.percent}% off for ${o.cycles} cycle${o.cycles === 1 ? '' : 's'}`
    : o.kind === 'pause'
      ? `pause ${o.months} month${o.months === 1 ? '' : 's'}`
      : o.kind === 'downgrade'
        ? `downgrade to ${o.plan ?? '…'}`
        : `incentive ${o.incentive ?? '…'} for ${o.months} month${o.months === 1 ? '' : 's'}`;

/** Every answer of every question, once per id (conditions name answer ids, whichever question asked them). */
export function answerOptions(steps: StepForm[]) {
  const labels = new Map<string, string[]>();
  for (const s of steps)
    if (s.type === 'question')
      for (const a of s.answers) labels.set(a.id, [...(labels.get(a.id) ?? []), a.label || a.id]);
  return [...labels].map(([value, l]) => ({ value, label: l.join(' / ') }));
}

/** The choices for where a step (or one of its answers) goes: only later steps, since branches go forward. */
export function targetOptions(steps: StepForm[], index: number, defaultLabel: string) {
  return [
    { value: '', label: defaultLabel },
    ...steps.slice(index + 1).map((s) => ({ value: s.id, label: `${s.id} (${s.type})` })),
  ];
}
