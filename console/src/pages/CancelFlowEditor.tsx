// The cancel-flow editor: the flow's name and status, and its steps (question with choices and branches, text,
// save offer, confirm): add, remove, retitle, branch, and the offer steps' terms (discount, downgrade, pause,
// incentive, their copy and when they apply) or model-chosen offers within guardrails. Fields are checked as the
// API's schema checks them before saving; what only the whole flow can tell (reachability, a confirm step at the
// end of every way) is the API's to say, shown as it words it.
import {
  ActionIcon,
  Alert,
  Badge,
  Button,
  Card,
  Chip,
  CloseButton,
  Code,
  Group,
  MultiSelect,
  NumberInput,
  SegmentedControl,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Text,
  TextInput,
  Textarea,
} from '@mantine/core';
import type {
  CancelFlowsCapabilitiesResponse,
  CancelFlowsGetResponse,
  CancelFlowsUpdateBody,
  IncentivesListResponse,
  PlansListResponse,
} from '@offerkit/sdk';
import { useState } from 'react';
import type { AppApi } from '../api';
import { intBetween, normalizeId, num, textProblem, uniqueId, type Num } from '../forms';
import { ErrorText, useAction } from '../ui';

type Flow = CancelFlowsGetResponse;
export type StepBody = NonNullable<CancelFlowsUpdateBody['steps']>[number];
type OfferBody = NonNullable<StepBody['offers']>[number];
type DynamicBody = NonNullable<StepBody['dynamic']>;
type StepType = StepBody['type'];
type Kind = OfferBody['kind'];

export interface FlowCatalog {
  plans: PlansListResponse;
  incentives: IncentivesListResponse;
  capabilities: CancelFlowsCapabilitiesResponse;
}

const KINDS: { value: Kind; label: string }[] = [
  { value: 'discount', label: 'Discount' },
  { value: 'pause', label: 'Pause' },
  { value: 'downgrade', label: 'Downgrade' },
  { value: 'incentive', label: 'Incentive' },
];
const STEP_TYPES: { value: StepType; label: string }[] = [
  { value: 'question', label: 'Question (choices, branches)' },
  { value: 'text', label: 'Text' },
  { value: 'offer', label: 'Save offer' },
  { value: 'confirm', label: 'Confirm (ends the flow)' },
];

interface AnswerForm {
  id: string;
  label: string;
  /** '' follows the step's own next. */
  next: string;
}
interface OfferForm {
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
interface DynamicForm {
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
interface StepForm {
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
interface FlowForm {
  name: string;
  active: boolean;
  steps: StepForm[];
}

let keys = 0;
const newKey = () => `k${++keys}`;

const DEFAULT_DYNAMIC: DynamicForm = {
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

function offerForm(o: OfferBody): OfferForm {
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

function stepForm(s: StepBody): StepForm {
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

const formOf = (f: Flow): FlowForm => ({
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

function offerBody(o: OfferForm): OfferBody {
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

function dynamicBody(d: DynamicForm): DynamicBody {
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

function newStep(type: StepType, id: string, title: string): StepForm {
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

/**
 * The schema's checks, field by field, keyed `<step key>.<field>` (and `flow.<field>`), worded like the API's
 * messages. The API checks again on save; these let the person see every problem at once, beside its field.
 */
function problemsOf(form: FlowForm): Map<string, string> {
  const p = new Map<string, string>();
  const put = (k: string, m: string | null) => m && !p.has(k) && p.set(k, m);
  put('flow.name', textProblem(form.name, 200, true));
  if (!form.steps.length) put('flow.steps', 'A flow needs at least one step');
  if (form.steps.length > 50) put('flow.steps', 'A flow has at most 50 steps');
  if (form.steps.length && !form.steps.some((s) => s.type === 'confirm'))
    put('flow.steps', 'A flow needs a confirm step');
  const answerIds = new Set(form.steps.flatMap((s) => (s.type === 'question' ? s.answers.map((a) => a.id) : [])));
  const seen = new Set<string>();
  for (const s of form.steps) {
    const k = s.key;
    if (!s.id) put(`${k}.id`, 'must contain a letter, a digit or an underscore');
    else if (seen.has(s.id)) put(`${k}.id`, `duplicate step id ${s.id}`);
    seen.add(s.id);
    put(`${k}.title`, textProblem(s.title, 200, true));
    put(`${k}.body`, textProblem(s.body, 4000, false));
    put(`${k}.decline_label`, textProblem(s.decline_label, 100, false));
    if (s.type === 'question') {
      if (s.answers.length > 20) put(`${k}.answers`, 'A question has at most 20 answers');
      if (!s.answers.length && !s.allow_text) put(`${k}.answers`, 'A question needs answers or free text');
      s.answers.forEach((a, i) => put(`${k}.answers.${i}.label`, textProblem(a.label, 200, true)));
    }
    if (s.type === 'offer') {
      if (s.offers.length > 20) put(`${k}.offers`, 'An offer step has at most 20 offers');
      if (!s.offers.length && !s.dynamic?.enabled)
        put(`${k}.offers`, 'An offer step needs a static offer or model-chosen offers');
      s.offers.forEach((o, i) => {
        const f = `${k}.offers.${i}`;
        if (o.kind === 'discount') {
          put(`${f}.percent`, intBetween(o.percent, 1, 100));
          put(`${f}.cycles`, intBetween(o.cycles, 1, 36));
        }
        if (o.kind === 'pause') put(`${f}.months`, intBetween(o.months, 1, 12));
        if (o.kind === 'incentive') {
          put(`${f}.months`, intBetween(o.months, 1, 36));
          if (!o.incentive) put(`${f}.incentive`, 'is required');
        }
        if (o.kind === 'downgrade' && !o.plan) put(`${f}.plan`, 'is required');
        put(`${f}.headline`, textProblem(o.headline, 200, false));
        put(`${f}.body`, textProblem(o.body, 2000, false));
        put(`${f}.cta`, textProblem(o.cta, 100, false));
        const gone = o.when.filter((a) => !answerIds.has(a));
        if (gone.length) put(`${f}.when`, `names answer ${gone[0]}, which no question has`);
        if (o.when.length > 50) put(`${f}.when`, 'at most 50 answers');
      });
      const d = s.dynamic;
      if (d?.enabled) {
        if (!d.kinds.length) put(`${k}.dynamic.kinds`, 'Choose at least one kind');
        put(`${k}.dynamic.max_percent`, intBetween(d.max_percent, 1, 100));
        put(`${k}.dynamic.max_cycles`, intBetween(d.max_cycles, 1, 36));
        put(`${k}.dynamic.max_pause_months`, intBetween(d.max_pause_months, 1, 12));
        put(`${k}.dynamic.max_incentive_months`, intBetween(d.max_incentive_months, 1, 36));
        if (d.kinds.includes('downgrade') && !d.downgrade_plans.length)
          put(`${k}.dynamic.downgrade_plans`, 'dynamic downgrades need downgrade_plans');
        if (d.kinds.includes('incentive') && !d.incentives.length)
          put(`${k}.dynamic.incentives`, 'dynamic incentives need incentives');
        put(`${k}.dynamic.instructions`, textProblem(d.instructions, 2000, false));
      }
    }
  }
  return p;
}

export const offerSummary = (o: OfferForm) =>
  o.kind === 'discount'
    ? `${o.percent}% off for ${o.cycles} cycle${o.cycles === 1 ? '' : 's'}`
    : o.kind === 'pause'
      ? `pause ${o.months} month${o.months === 1 ? '' : 's'}`
      : o.kind === 'downgrade'
        ? `downgrade to ${o.plan ?? '…'}`
        : `incentive ${o.incentive ?? '…'} for ${o.months} month${o.months === 1 ? '' : 's'}`;

export function CancelFlowEditor({
  api,
  flow,
  catalog,
  onSaved,
  readOnly = false,
}: {
  api: AppApi;
  flow: Flow;
  catalog: FlowCatalog;
  onSaved: () => Promise<void>;
  /** The demo workspace: the steps can be explored and changed on screen, and nothing offers to save them. */
  readOnly?: boolean;
}) {
  const [form, setForm] = useState<FlowForm>(() => formOf(flow));
  const action = useAction();
  const problems = problemsOf(form);
  const body = {
    name: form.name,
    status: form.active ? ('active' as const) : ('draft' as const),
    steps: form.steps.map(stepBody),
  };
  const saved = formOf(flow);
  const dirty =
    JSON.stringify(body) !==
    JSON.stringify({ name: saved.name, status: flow.status, steps: saved.steps.map(stepBody) });
  const err = (k: string) => problems.get(k);
  const setStep = (key: string, patch: Partial<StepForm>) =>
    setForm((f) => ({ ...f, steps: f.steps.map((s) => (s.key === key ? { ...s, ...patch } : s)) }));
  /** Removing a step also removes the branches to it (those answers follow the step's default again). */
  const removeStep = (key: string) =>
    setForm((f) => {
      const gone = f.steps.find((s) => s.key === key)!.id;
      return {
        ...f,
        steps: f.steps
          .filter((s) => s.key !== key)
          .map((s) => ({
            ...s,
            next: s.next === gone ? '' : s.next,
            answers: s.answers.map((a) => (a.next === gone ? { ...a, next: '' } : a)),
            offers: s.offers.map((o) => (o.whenStep === gone ? { ...o, whenStep: null } : o)),
          })),
      };
    });
  const answerChoices = answerOptions(form.steps);
  return (
    <Card withBorder>
      <Stack gap="sm">
        <Group justify="space-between" wrap="wrap" align="flex-end">
          <TextInput
            label="Flow name"
            value={form.name}
            onChange={(e) => setForm({ ...form, name: e.currentTarget.value })}
            error={err('flow.name')}
            style={{ flex: '1 1 220px' }}
          />
          <Group gap="xs" wrap="nowrap">
            {dirty && (
              <Badge color="yellow" variant="light">
                unsaved
              </Badge>
            )}
            <Switch
              label="Active (customers see it)"
              checked={form.active}
              onChange={(e) => setForm({ ...form, active: e.currentTarget.checked })}
            />
          </Group>
        </Group>
        <Text size="xs" c="dimmed">
          Flow id <Code>{flow.id}</Code>. Steps run top to bottom; an answer may branch to a later step. Every way ends
          at a confirm step.
        </Text>
        <Stack gap="xs" aria-label="Steps">
          {form.steps.map((s, i) => (
            <StepCard
              key={s.key}
              step={s}
              index={i}
              steps={form.steps}
              catalog={catalog}
              answerChoices={answerChoices}
              err={err}
              onChange={(patch) => setStep(s.key, patch)}
              onRemove={() => removeStep(s.key)}
            />
          ))}
        </Stack>
        <AddStep steps={form.steps} onAdd={(steps) => setForm({ ...form, steps })} />
        {problems.size > 0 && (
          <Alert color="orange" title="Before saving" role="status">
            {err('flow.steps') ??
              `${problems.size} field${problems.size === 1 ? ' needs' : 's need'} attention (marked in red).`}
          </Alert>
        )}
        <ErrorText error={action.error} />
        <Group gap="xs">
          {readOnly ? (
            <Text size="sm" c="dimmed" role="status">
              The demo workspace is read-only: changes here are not saved.
            </Text>
          ) : (
            <Button
              loading={action.busy}
              disabled={!dirty || problems.size > 0}
              onClick={() =>
                action.run(async () => {
                  await api.cancelFlows.update(flow.id, body);
                  await onSaved();
                })
              }
            >
              Save flow
            </Button>
          )}
          {dirty && (
            <Button variant="default" disabled={action.busy} onClick={() => setForm(formOf(flow))}>
              Discard changes
            </Button>
          )}
        </Group>
      </Stack>
    </Card>
  );
}

/** Every answer of every question, once per id (conditions name answer ids, whichever question asked them). */
function answerOptions(steps: StepForm[]) {
  const labels = new Map<string, string[]>();
  for (const s of steps)
    if (s.type === 'question')
      for (const a of s.answers) labels.set(a.id, [...(labels.get(a.id) ?? []), a.label || a.id]);
  return [...labels].map(([value, l]) => ({ value, label: l.join(' / ') }));
}

/** The choices for where a step (or one of its answers) goes: only later steps, since branches go forward. */
function targetOptions(steps: StepForm[], index: number, defaultLabel: string) {
  return [
    { value: '', label: defaultLabel },
    ...steps.slice(index + 1).map((s) => ({ value: s.id, label: `${s.id} (${s.type})` })),
  ];
}

function StepCard({
  step: s,
  index,
  steps,
  catalog,
  answerChoices,
  err,
  onChange,
  onRemove,
}: {
  step: StepForm;
  index: number;
  steps: StepForm[];
  catalog: FlowCatalog;
  answerChoices: { value: string; label: string }[];
  err: (k: string) => string | undefined;
  onChange: (patch: Partial<StepForm>) => void;
  onRemove: () => void;
}) {
  const following = steps[index + 1]?.id ?? null;
  const stepNext = s.next || following;
  const k = s.key;
  return (
    <Card
      withBorder
      padding="sm"
      bg={s.type === 'offer' ? 'indigo.0' : undefined}
      aria-label={`Step ${s.id}`}
      role="group"
    >
      <Stack gap={8}>
        <Group gap="xs" wrap="nowrap" justify="space-between">
          <Group gap={6} wrap="nowrap" style={{ minWidth: 0 }}>
            <Badge variant="light">{index + 1}</Badge>
            <Badge color="gray">{s.type}</Badge>
            <Code style={{ overflow: 'hidden', textOverflow: 'ellipsis', whiteSpace: 'nowrap' }}>{s.id}</Code>
          </Group>
          <CloseButton aria-label={`Remove step ${s.id}`} title="Remove this step" onClick={onRemove} />
        </Group>
        {err(`${k}.id`) && (
          <Text size="xs" c="red">
            {err(`${k}.id`)}
          </Text>
        )}
        <TextInput
          label="Title"
          aria-label={`Step ${s.id} title`}
          size="xs"
          value={s.title}
          onChange={(e) => onChange({ title: e.currentTarget.value })}
          error={err(`${k}.title`)}
        />
        {(s.type === 'text' || s.type === 'confirm' || s.body) && (
          <Textarea
            label="Text shown with the step"
            aria-label={`Step ${s.id} body`}
            size="xs"
            autosize
            minRows={1}
            value={s.body}
            onChange={(e) => onChange({ body: e.currentTarget.value })}
            error={err(`${k}.body`)}
          />
        )}
        {s.type === 'question' && (
          <QuestionAnswers step={s} index={index} steps={steps} err={err} onChange={onChange} />
        )}
        {s.type === 'offer' && (
          <OfferStep step={s} catalog={catalog} answerChoices={answerChoices} err={err} onChange={onChange} />
        )}
        {s.type !== 'confirm' && (
          <Group gap="xs" wrap="nowrap" align="center">
            <Text size="xs" c="dimmed" style={{ flexShrink: 0 }}>
              {s.type === 'question' ? 'Other answers go to' : 'Then'} →
            </Text>
            <Select
              aria-label={`After step ${s.id}`}
              size="xs"
              data={targetOptions(steps, index, `the next step (${following ?? 'none'})`)}
              value={s.next}
              allowDeselect={false}
              onChange={(v) => onChange({ next: v ?? '' })}
              style={{ flex: '0 1 230px', minWidth: 0 }}
            />
          </Group>
        )}
        {s.type !== 'confirm' && !stepNext && (
          <Text size="xs" c="orange.8">
            Nothing follows this step: the API will ask for a confirm step after it.
          </Text>
        )}
      </Stack>
    </Card>
  );
}

function QuestionAnswers({
  step: s,
  index,
  steps,
  err,
  onChange,
}: {
  step: StepForm;
  index: number;
  steps: StepForm[];
  err: (k: string) => string | undefined;
  onChange: (patch: Partial<StepForm>) => void;
}) {
  const [label, setLabel] = useState('');
  const defaultTarget = s.next || steps[index + 1]?.id || 'none';
  const setAnswer = (i: number, patch: Partial<AnswerForm>) =>
    onChange({ answers: s.answers.map((a, j) => (j === i ? { ...a, ...patch } : a)) });
  const add = () => {
    if (!label.trim()) return;
    const id = uniqueId(
      label,
      s.answers.map((a) => a.id),
    );
    onChange({ answers: [...s.answers, { id, label: label.trim(), next: '' }] });
    setLabel('');
  };
  return (
    <Stack gap={10} aria-label={`Answers to ${s.id}`} role="group">
      <Text size="sm" fw={600}>
        Answers
      </Text>
      {s.answers.map((a, i) => (
        <Group key={a.id} gap="xs" wrap="wrap" align="flex-start" style={{ rowGap: 4 }}>
          <TextInput
            aria-label={`Answer ${a.id} label`}
            size="xs"
            value={a.label}
            onChange={(e) => setAnswer(i, { label: e.currentTarget.value })}
            error={err(`${s.key}.answers.${i}.label`)}
            style={{ flex: '1 1 170px', minWidth: 0 }}
          />
          {/* The arrow and its select wrap together, so on a phone the arrow never sits apart from its list. */}
          <Group gap={6} wrap="nowrap" style={{ flex: '1 1 200px', minWidth: 0 }}>
            <Text size="xs" c="dimmed" style={{ flexShrink: 0 }}>
              →
            </Text>
            <Select
              aria-label={`After “${a.label}”`}
              size="xs"
              data={targetOptions(steps, index, `next step (${defaultTarget})`)}
              value={a.next}
              allowDeselect={false}
              onChange={(v) => setAnswer(i, { next: v ?? '' })}
              style={{ flex: 1, minWidth: 0 }}
            />
            <CloseButton
              aria-label={`Remove answer ${a.id}`}
              size="sm"
              onClick={() => onChange({ answers: s.answers.filter((_, j) => j !== i) })}
            />
          </Group>
        </Group>
      ))}
      {err(`${s.key}.answers`) && (
        <Text size="xs" c="red" role="alert">
          {err(`${s.key}.answers`)}
        </Text>
      )}
      <Group gap="xs" wrap="nowrap">
        <TextInput
          aria-label={`New answer to ${s.id}`}
          placeholder="A new answer…"
          size="xs"
          value={label}
          onChange={(e) => setLabel(e.currentTarget.value)}
          onKeyDown={(e) => e.key === 'Enter' && (e.preventDefault(), add())}
          style={{ flex: 1, minWidth: 0 }}
        />
        <Button size="xs" variant="light" onClick={add} disabled={!label.trim()}>
          Add answer
        </Button>
      </Group>
      <Switch
        size="xs"
        label="Also accept free text"
        checked={s.allow_text}
        onChange={(e) => onChange({ allow_text: e.currentTarget.checked })}
      />
    </Stack>
  );
}

function OfferStep({
  step: s,
  catalog,
  answerChoices,
  err,
  onChange,
}: {
  step: StepForm;
  catalog: FlowCatalog;
  answerChoices: { value: string; label: string }[];
  err: (k: string) => string | undefined;
  onChange: (patch: Partial<StepForm>) => void;
}) {
  const model = !!s.dynamic?.enabled;
  const setOffer = (i: number, patch: Partial<OfferForm>) =>
    onChange({ offers: s.offers.map((o, j) => (j === i ? { ...o, ...patch } : o)) });
  const moveOffer = (i: number, by: -1 | 1) => {
    const offers = [...s.offers];
    [offers[i], offers[i + by]] = [offers[i + by], offers[i]];
    onChange({ offers });
  };
  return (
    <Stack gap={8}>
      <TextInput
        label="Decline button"
        aria-label={`Step ${s.id} decline label`}
        placeholder="No thanks"
        size="xs"
        value={s.decline_label}
        onChange={(e) => onChange({ decline_label: e.currentTarget.value })}
        error={err(`${s.key}.decline_label`)}
      />
      <Stack gap={4}>
        <Text size="sm" fw={600}>
          Who chooses the offer
        </Text>
        <SegmentedControl
          aria-label={`Step ${s.id} offer choice`}
          size="xs"
          fullWidth
          data={[
            { value: 'static', label: 'Static rules' },
            { value: 'model', label: 'Model, within guardrails' },
          ]}
          value={model ? 'model' : 'static'}
          onChange={(v) =>
            onChange({
              dynamic:
                v === 'model'
                  ? { ...(s.dynamic ?? DEFAULT_DYNAMIC), enabled: true }
                  : s.dynamic && { ...s.dynamic, enabled: false },
            })
          }
        />
      </Stack>
      {model && s.dynamic && (
        <Guardrails step={s} dynamic={s.dynamic} catalog={catalog} err={err} onChange={onChange} />
      )}
      <Text size="sm" fw={600}>
        {model ? 'Static offers (used when the model is not asked, or its choice cannot be used)' : 'Offers'}
      </Text>
      <Text size="xs" c="dimmed">
        The first offer whose answers match and that applies to the account is shown; none applies: the step is skipped.
      </Text>
      {s.offers.map((o, i) => (
        <OfferCard
          key={i}
          stepId={s.id}
          index={i}
          count={s.offers.length}
          offer={o}
          catalog={catalog}
          answerChoices={answerChoices}
          err={(f) => err(`${s.key}.offers.${i}.${f}`)}
          onChange={(patch) => setOffer(i, patch)}
          onMove={(by) => moveOffer(i, by)}
          onRemove={() => onChange({ offers: s.offers.filter((_, j) => j !== i) })}
        />
      ))}
      {err(`${s.key}.offers`) && (
        <Text size="xs" c="red" role="alert">
          {err(`${s.key}.offers`)}
        </Text>
      )}
      <Button
        size="xs"
        variant="light"
        w="fit-content"
        aria-label={`Add an offer to ${s.id}`}
        disabled={s.offers.length >= 20}
        onClick={() => onChange({ offers: [...s.offers, offerForm({ kind: 'discount', percent: 20, cycles: 3 })] })}
      >
        Add an offer
      </Button>
    </Stack>
  );
}

function OfferCard({
  stepId,
  index,
  count,
  offer: o,
  catalog,
  answerChoices,
  err,
  onChange,
  onMove,
  onRemove,
}: {
  stepId: string;
  index: number;
  count: number;
  offer: OfferForm;
  catalog: FlowCatalog;
  answerChoices: { value: string; label: string }[];
  err: (field: string) => string | undefined;
  onChange: (patch: Partial<OfferForm>) => void;
  onMove: (by: -1 | 1) => void;
  onRemove: () => void;
}) {
  const name = `${stepId} offer ${index + 1}`;
  // The copy is optional (the service writes it from the terms): its fields show once there is some, or on request.
  const [writing, setWriting] = useState(!!(o.headline || o.body || o.cta));
  // Answers a condition names that no question has any more stay visible, so the person sees what to fix.
  const choices = [
    ...answerChoices,
    ...o.when.filter((a) => !answerChoices.some((c) => c.value === a)).map((a) => ({ value: a, label: `${a} (gone)` })),
  ];
  const intInput = (field: 'percent' | 'cycles' | 'months', label: string, min: number, max: number) => (
    <NumberInput
      label={label}
      aria-label={`${name} ${label.toLowerCase()}`}
      size="xs"
      min={min}
      max={max}
      allowDecimal={false}
      clampBehavior="none"
      value={o[field]}
      onChange={(v) => onChange({ [field]: num(v) })}
      error={err(field)}
    />
  );
  return (
    <Card withBorder padding="xs" aria-label={`Offer ${index + 1} of ${stepId}`} role="group">
      <Stack gap={6}>
        <Group justify="space-between" wrap="nowrap" gap="xs">
          <Text size="sm" style={{ minWidth: 0 }}>
            <b>{index + 1}.</b> {o.when.length ? `If ${o.when.join(' or ')}: ` : 'Otherwise: '}
            <b>{offerSummary(o)}</b>
          </Text>
          <Group gap={4} wrap="nowrap">
            <ActionIcon
              variant="default"
              size="sm"
              aria-label={`Move ${name} up`}
              disabled={index === 0}
              onClick={() => onMove(-1)}
            >
              ↑
            </ActionIcon>
            <ActionIcon
              variant="default"
              size="sm"
              aria-label={`Move ${name} down`}
              disabled={index === count - 1}
              onClick={() => onMove(1)}
            >
              ↓
            </ActionIcon>
            <CloseButton size="sm" aria-label={`Remove ${name}`} onClick={onRemove} />
          </Group>
        </Group>
        {/* Container queries: the card is narrow beside a phone's edge and wide on a desktop. */}
        <SimpleGrid type="container" cols={{ base: 2, '460px': 4 }} spacing="xs" verticalSpacing={6}>
          <Select
            label="Kind"
            aria-label={`${name} kind`}
            size="xs"
            data={KINDS}
            value={o.kind}
            allowDeselect={false}
            onChange={(v) => v && onChange({ kind: v as Kind })}
          />
          {o.kind === 'discount' && (
            <>
              {intInput('percent', 'Percent off', 1, 100)}
              {intInput('cycles', 'Renewals', 1, 36)}
            </>
          )}
          {o.kind === 'pause' && intInput('months', 'Months', 1, 12)}
          {o.kind === 'downgrade' && (
            <Select
              label="To plan"
              aria-label={`${name} plan`}
              size="xs"
              placeholder="Choose a plan"
              data={catalog.plans.map((p) => ({ value: p.id, label: p.name }))}
              value={o.plan}
              onChange={(v) => onChange({ plan: v })}
              error={err('plan')}
            />
          )}
          {o.kind === 'incentive' && (
            <>
              <Select
                label="Incentive"
                aria-label={`${name} incentive`}
                size="xs"
                placeholder={catalog.incentives.length ? 'Choose an incentive' : 'No incentives in the catalog'}
                data={catalog.incentives.map((x) => ({ value: x.id, label: x.name }))}
                value={o.incentive}
                onChange={(v) => onChange({ incentive: v })}
                error={err('incentive')}
              />
              {intInput('months', 'Months', 1, 36)}
            </>
          )}
        </SimpleGrid>
        <MultiSelect
          label="Shown when the answer is"
          aria-label={`${name} answers`}
          placeholder={o.when.length ? undefined : 'any answer'}
          size="xs"
          data={choices}
          value={o.when}
          onChange={(when) => onChange({ when })}
          error={err('when')}
          clearable
        />
        {writing ? (
          <>
            <SimpleGrid cols={{ base: 1, sm: 2 }} spacing="xs" verticalSpacing={6}>
              <TextInput
                label="Headline"
                aria-label={`${name} headline`}
                placeholder="written from the terms"
                size="xs"
                value={o.headline}
                onChange={(e) => onChange({ headline: e.currentTarget.value })}
                error={err('headline')}
              />
              <TextInput
                label="Button"
                aria-label={`${name} button`}
                placeholder="written from the terms"
                size="xs"
                value={o.cta}
                onChange={(e) => onChange({ cta: e.currentTarget.value })}
                error={err('cta')}
              />
            </SimpleGrid>
            <Textarea
              label="Body"
              aria-label={`${name} body`}
              placeholder="written from the terms"
              size="xs"
              autosize
              minRows={1}
              value={o.body}
              onChange={(e) => onChange({ body: e.currentTarget.value })}
              error={err('body')}
            />
          </>
        ) : (
          <Group gap="xs" wrap="nowrap">
            <Text size="xs" c="dimmed">
              Headline, body and button are written from the terms.
            </Text>
            <Button
              size="compact-xs"
              variant="subtle"
              onClick={() => setWriting(true)}
              aria-label={`Write the copy of ${name}`}
              style={{ flexShrink: 0 }}
            >
              Write them
            </Button>
          </Group>
        )}
      </Stack>
    </Card>
  );
}

function Guardrails({
  step: s,
  dynamic: d,
  catalog,
  err,
  onChange,
}: {
  step: StepForm;
  dynamic: DynamicForm;
  catalog: FlowCatalog;
  err: (k: string) => string | undefined;
  onChange: (patch: Partial<StepForm>) => void;
}) {
  const set = (patch: Partial<DynamicForm>) => onChange({ dynamic: { ...d, ...patch } });
  const e = (f: string) => err(`${s.key}.dynamic.${f}`);
  const limit = (field: keyof DynamicForm, label: string, min: number, max: number) => (
    <NumberInput
      label={label}
      aria-label={`${s.id} ${label.toLowerCase()}`}
      size="xs"
      min={min}
      max={max}
      allowDecimal={false}
      clampBehavior="none"
      value={d[field] as Num}
      onChange={(v) => set({ [field]: num(v) })}
      error={e(field)}
    />
  );
  return (
    <Card withBorder padding="xs" aria-label={`Guardrails of ${s.id}`} role="group">
      <Stack gap={6}>
        {!catalog.capabilities.dynamic_offers && (
          <Alert color="yellow" p="xs">
            <Text size="xs">
              No model is configured on the service, so customers get the static offers below. Set a model
              provider&apos;s API key on the service to let a model choose.
            </Text>
          </Alert>
        )}
        {catalog.capabilities.model && (
          <Text size="xs" c="dimmed">
            Model: {catalog.capabilities.model}
          </Text>
        )}
        <Text size="xs" fw={600}>
          Kinds the model may offer
        </Text>
        <Chip.Group multiple value={d.kinds} onChange={(v) => set({ kinds: v as Kind[] })}>
          <Group gap={6}>
            {KINDS.map((kind) => (
              <Chip key={kind.value} value={kind.value} size="xs">
                {kind.label}
              </Chip>
            ))}
          </Group>
        </Chip.Group>
        {e('kinds') && (
          <Text size="xs" c="red">
            {e('kinds')}
          </Text>
        )}
        <SimpleGrid cols={{ base: 2, sm: 4 }} spacing="xs">
          {limit('max_percent', 'Max percent', 1, 100)}
          {limit('max_cycles', 'Max renewals', 1, 36)}
          {limit('max_pause_months', 'Max pause months', 1, 12)}
          {limit('max_incentive_months', 'Max incentive months', 1, 36)}
        </SimpleGrid>
        {d.kinds.includes('downgrade') && (
          <MultiSelect
            label="Plans it may downgrade to"
            size="xs"
            data={catalog.plans.map((p) => ({ value: p.id, label: p.name }))}
            value={d.downgrade_plans}
            onChange={(v) => set({ downgrade_plans: v })}
            error={e('downgrade_plans')}
          />
        )}
        {d.kinds.includes('incentive') && (
          <MultiSelect
            label="Incentives it may give"
            size="xs"
            data={catalog.incentives.map((x) => ({ value: x.id, label: x.name }))}
            value={d.incentives}
            onChange={(v) => set({ incentives: v })}
            error={e('incentives')}
          />
        )}
        <Textarea
          label="Instructions for the model"
          placeholder="Tone, what to favour…"
          size="xs"
          autosize
          minRows={1}
          value={d.instructions}
          onChange={(ev) => set({ instructions: ev.currentTarget.value })}
          error={e('instructions')}
        />
      </Stack>
    </Card>
  );
}

function AddStep({ steps, onAdd }: { steps: StepForm[]; onAdd: (steps: StepForm[]) => void }) {
  // By default a new step goes before the first confirm step, where most new steps belong.
  const firstConfirm = steps.findIndex((s) => s.type === 'confirm');
  const defaultAfter = (firstConfirm === -1 ? steps.at(-1) : steps[firstConfirm - 1])?.id ?? '';
  const [type, setType] = useState<StepType>('offer');
  const [title, setTitle] = useState('');
  const [id, setId] = useState('');
  const [after, setAfter] = useState<string | null>(null);
  // A chosen step removed meanwhile: back to the default place.
  const position = after === '' || (after !== null && steps.some((s) => s.id === after)) ? after : defaultAfter;
  const taken = steps.map((s) => s.id);
  const finalId = id ? normalizeId(id) : uniqueId(title || type, taken);
  const clash = taken.includes(finalId);
  const add = () => {
    const at = position === '' ? 0 : steps.findIndex((s) => s.id === position) + 1;
    const step = newStep(type, finalId, title.trim());
    onAdd([...steps.slice(0, at), step, ...steps.slice(at)]);
    setTitle('');
    setId('');
    setAfter(null);
  };
  return (
    <Card withBorder padding="sm" bg="gray.0" aria-label="Add a step" role="group">
      <Stack gap={6}>
        <Text size="sm" fw={600}>
          Add a step
        </Text>
        <Group gap="xs" align="flex-start" wrap="wrap">
          <Select
            label="Kind of step"
            size="xs"
            data={STEP_TYPES}
            value={type}
            allowDeselect={false}
            onChange={(v) => v && setType(v as StepType)}
            style={{ flex: '1 1 170px' }}
          />
          <Select
            label="After"
            size="xs"
            data={[{ value: '', label: '(at the start)' }, ...steps.map((s) => ({ value: s.id, label: s.id }))]}
            value={position}
            allowDeselect={false}
            onChange={(v) => setAfter(v ?? '')}
            style={{ flex: '1 1 140px' }}
          />
        </Group>
        <Group gap="xs" align="flex-start" wrap="wrap">
          <TextInput
            label="New step title"
            size="xs"
            value={title}
            onChange={(e) => setTitle(e.currentTarget.value)}
            style={{ flex: '2 1 200px' }}
          />
          <TextInput
            label="Step id"
            size="xs"
            placeholder={uniqueId(title || type, taken)}
            value={id}
            onChange={(e) => setId(e.currentTarget.value)}
            error={clash ? `${finalId} is taken` : undefined}
            style={{ flex: '1 1 120px' }}
          />
        </Group>
        <Button size="xs" w="fit-content" onClick={add} disabled={!title.trim() || !finalId || clash}>
          Add step
        </Button>
      </Stack>
    </Card>
  );
}
