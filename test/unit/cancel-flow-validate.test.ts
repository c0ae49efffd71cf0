// The cancel-flow editor's field checks (console/src/pages/CancelFlowEditor/validate.ts): the API schema's checks,
// keyed by field and worded like the API, so the editor shows every problem beside its field before saving.
import { expect } from 'chai';
import {
  newStep,
  offerForm,
  type DynamicForm,
  type FlowForm,
  type StepForm,
} from '../../console/src/pages/CancelFlowEditor/form.js';
import { problemsOf } from '../../console/src/pages/CancelFlowEditor/validate.js';

function question(): StepForm {
  const q = newStep('question', 'reason', 'Why?');
  return { ...q, answers: [{ id: 'price', label: 'Too expensive', next: '' }] };
}
const offer = (): StepForm => newStep('offer', 'save', 'Stay');
const confirm = (): StepForm => newStep('confirm', 'confirm', 'Confirm');
const flow = (...steps: StepForm[]): FlowForm => ({ name: 'Default', active: true, steps });
const problems = (f: FlowForm) => Object.fromEntries(problemsOf(f));

const GUARDRAILS: DynamicForm = {
  enabled: true,
  kinds: ['discount'],
  max_percent: 30,
  max_cycles: 3,
  max_pause_months: 3,
  downgrade_plans: [],
  incentives: [],
  max_incentive_months: 3,
  instructions: '',
};

describe('cancel-flow editor checks: the flow', () => {
  it('finds nothing wrong with a question, an offer and a confirm step', () => {
    expect(problems(flow(question(), offer(), confirm()))).to.deep.equal({});
  });

  it('needs a name of at most 200 characters', () => {
    expect(problems({ ...flow(confirm()), name: '  ' })).to.deep.equal({ 'flow.name': 'must not be empty' });
    expect(problems({ ...flow(confirm()), name: 'x'.repeat(201) })).to.deep.equal({
      'flow.name': 'must be at most 200 characters',
    });
  });

  it('needs steps, at most 50, and a confirm step among them', () => {
    expect(problems(flow())).to.deep.equal({ 'flow.steps': 'A flow needs at least one step' });
    expect(problems(flow(question()))).to.deep.equal({ 'flow.steps': 'A flow needs a confirm step' });
    const many = Array.from({ length: 51 }, (_, i) => newStep('confirm', `c${i}`, 'Confirm'));
    expect(problems(flow(...many))).to.deep.equal({ 'flow.steps': 'A flow has at most 50 steps' });
  });
});

describe('cancel-flow editor checks: steps', () => {
  it('names a missing or repeated step id on the step that has it', () => {
    const a = confirm();
    const b = confirm();
    const blank = { ...confirm(), id: '' };
    expect(problems(flow(a, b, blank))).to.deep.equal({
      [`${b.key}.id`]: 'duplicate step id confirm',
      [`${blank.key}.id`]: 'must contain a letter, a digit or an underscore',
    });
  });

  it('checks titles, texts and decline labels against their lengths', () => {
    const s = { ...confirm(), title: '', body: 'x'.repeat(4001), decline_label: 'y'.repeat(101) };
    expect(problems(flow(s))).to.deep.equal({
      [`${s.key}.title`]: 'must not be empty',
      [`${s.key}.body`]: 'must be at most 4000 characters',
      [`${s.key}.decline_label`]: 'must be at most 100 characters',
    });
  });

  it('needs a question to have answers or free text, each answer labelled', () => {
    const q = { ...question(), answers: [] };
    expect(problems(flow(q, confirm()))).to.deep.equal({
      [`${q.key}.answers`]: 'A question needs answers or free text',
    });
    expect(problems(flow({ ...q, allow_text: true }, confirm()))).to.deep.equal({});
    const unlabelled = { ...question(), answers: [{ id: 'a', label: ' ', next: '' }] };
    expect(problems(flow(unlabelled, confirm()))).to.deep.equal({
      [`${unlabelled.key}.answers.0.label`]: 'must not be empty',
    });
  });
});

describe('cancel-flow editor checks: offers', () => {
  it('needs a static offer unless a model chooses', () => {
    const o = { ...offer(), offers: [] };
    expect(problems(flow(o, confirm()))).to.deep.equal({
      [`${o.key}.offers`]: 'An offer step needs a static offer or model-chosen offers',
    });
    expect(problems(flow({ ...o, dynamic: GUARDRAILS }, confirm()))).to.deep.equal({});
  });

  it('bounds each kind’s terms and requires its plan or incentive', () => {
    const base = offerForm({ kind: 'discount', percent: 20, cycles: 3 });
    const o = {
      ...offer(),
      offers: [
        { ...base, percent: 0, cycles: '' as const },
        { ...base, kind: 'pause' as const, months: 1.5 },
        { ...base, kind: 'downgrade' as const },
        { ...base, kind: 'incentive' as const, months: 37 },
      ],
    };
    expect(problems(flow(o, confirm()))).to.deep.equal({
      [`${o.key}.offers.0.percent`]: 'must be between 1 and 100',
      [`${o.key}.offers.0.cycles`]: 'is required',
      [`${o.key}.offers.1.months`]: 'must be a whole number',
      [`${o.key}.offers.2.plan`]: 'is required',
      [`${o.key}.offers.3.months`]: 'must be between 1 and 36',
      [`${o.key}.offers.3.incentive`]: 'is required',
    });
  });

  it('names a condition’s answer that no question has any more', () => {
    const o = offer();
    o.offers = [{ ...o.offers[0], when: ['price', 'gone'] }];
    expect(problems(flow(question(), o, confirm()))).to.deep.equal({
      [`${o.key}.offers.0.when`]: 'names answer gone, which no question has',
    });
  });

  it('checks guardrails only while the model chooses', () => {
    const wrong: DynamicForm = { ...GUARDRAILS, kinds: [], max_percent: 101, max_pause_months: '' };
    const on = { ...offer(), dynamic: wrong };
    expect(problems(flow(on, confirm()))).to.deep.equal({
      [`${on.key}.dynamic.kinds`]: 'Choose at least one kind',
      [`${on.key}.dynamic.max_percent`]: 'must be between 1 and 100',
      [`${on.key}.dynamic.max_pause_months`]: 'is required',
    });
    expect(problems(flow({ ...on, dynamic: { ...wrong, enabled: false } }, confirm()))).to.deep.equal({});
    const lists = { ...offer(), dynamic: { ...GUARDRAILS, kinds: ['downgrade', 'incentive'] as DynamicForm['kinds'] } };
    expect(problems(flow(lists, confirm()))).to.deep.equal({
      [`${lists.key}.dynamic.downgrade_plans`]: 'dynamic downgrades need downgrade_plans',
      [`${lists.key}.dynamic.incentives`]: 'dynamic incentives need incentives',
    });
  });
});
