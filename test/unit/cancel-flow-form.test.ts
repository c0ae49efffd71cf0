// The cancel-flow editor's form mapping (console/src/pages/CancelFlowEditor/form.ts): a stored flow to the form and
// back to the body the API takes, pure and without a browser.
import { expect } from 'chai';
import {
  answerOptions,
  flowBody,
  formOf,
  isDirty,
  newStep,
  offerBody,
  offerForm,
  offerSummary,
  stepBody,
  targetOptions,
  withoutStep,
  type DynamicForm,
  type Flow,
  type StepBody,
} from '../../console/src/pages/CancelFlowEditor/form.js';

/** Steps as the API stores and answers them (the shape the editor must give back unchanged). */
const STEPS: StepBody[] = [
  {
    id: 'reason',
    type: 'question',
    title: 'Why are you cancelling?',
    body: null,
    decline_label: null,
    next: 'save',
    answers: [
      { id: 'too_expensive', label: 'It is too expensive', next: 'save' },
      { id: 'other', label: 'Something else' },
    ],
    allow_text: true,
  },
  {
    id: 'save',
    type: 'offer',
    title: 'Before you go',
    body: null,
    decline_label: 'No thanks',
    offers: [
      {
        kind: 'discount',
        percent: 30,
        cycles: 2,
        headline: '30% off',
        when: { step: 'reason', answers: ['too_expensive'] },
      },
      { kind: 'pause', months: 2 },
    ],
    dynamic: {
      enabled: false,
      kinds: ['discount'],
      max_percent: 40,
      max_cycles: 3,
      max_pause_months: 3,
      downgrade_plans: [],
      incentives: [],
      max_incentive_months: 3,
    },
  },
  { id: 'confirm', type: 'confirm', title: 'Confirm', body: 'Your plan ends now.', decline_label: null },
];

const flow = (steps: StepBody[] = STEPS, status: 'active' | 'draft' = 'active') =>
  ({ id: 'cxl_1', name: 'Default', status, steps }) as unknown as Flow;

/** The body as JSON carries it (a blank number is an undefined key, which JSON leaves out). */
const json = <T>(v: T): T => JSON.parse(JSON.stringify(v));

describe('cancel-flow editor form: a stored flow to the form', () => {
  it('maps name, status and steps, with blanks as empty strings and each step given a key of its own', () => {
    const form = formOf(flow());
    expect(form.name).to.equal('Default');
    expect(form.active).to.be.true;
    expect(formOf(flow(STEPS, 'draft')).active).to.be.false;
    const [reason, save, confirm] = form.steps;
    expect(reason).to.include({ id: 'reason', type: 'question', body: '', decline_label: '', next: 'save' });
    expect(reason.answers).to.deep.equal([
      { id: 'too_expensive', label: 'It is too expensive', next: 'save' },
      { id: 'other', label: 'Something else', next: '' },
    ]);
    expect(save.offers[0]).to.include({ kind: 'discount', percent: 30, cycles: 2, headline: '30% off', body: '' });
    expect(save.offers[0].when).to.deep.equal(['too_expensive']);
    expect(save.offers[0].whenStep).to.equal('reason');
    expect(save.hadDynamic).to.be.true;
    expect(save.dynamic).to.include({ enabled: false, max_percent: 40, instructions: '' });
    expect(confirm.dynamic).to.equal(null);
    expect(confirm.hadDynamic).to.be.false;
    expect(new Set(form.steps.map((s) => s.key)).size).to.equal(3);
  });

  it('gives an offer the other kinds’ defaults, so switching kind starts from sensible terms', () => {
    expect(offerForm({ kind: 'pause', months: 4 })).to.include({ percent: 20, cycles: 3, months: 4, plan: null });
    expect(offerForm({ kind: 'downgrade', plan: 'basic' })).to.include({ months: 1, plan: 'basic', incentive: null });
  });
});

describe('cancel-flow editor form: the form back to the API body', () => {
  it('gives back the stored steps unchanged, so an untouched flow is not dirty', () => {
    const form = formOf(flow());
    expect(json(flowBody(form))).to.deep.equal({ name: 'Default', status: 'active', steps: STEPS });
    expect(isDirty(form, flow())).to.be.false;
  });

  it('is dirty after a change, and clean again when the change is undone', () => {
    const form = formOf(flow());
    expect(isDirty({ ...form, name: 'Renamed' }, flow())).to.be.true;
    expect(isDirty({ ...form, active: false }, flow())).to.be.true;
    expect(flowBody({ ...form, active: false }).status).to.equal('draft');
    const retitled = { ...form, steps: form.steps.map((s, i) => (i === 2 ? { ...s, title: 'Sure?' } : s)) };
    expect(isDirty(retitled, flow())).to.be.true;
    expect(isDirty({ ...retitled, steps: form.steps }, flow())).to.be.false;
  });

  it('sends only the fields a step’s type has', () => {
    const [reason, save] = formOf(flow()).steps;
    const asText = stepBody({ ...reason, type: 'text' });
    expect(asText).to.not.have.any.keys('answers', 'allow_text', 'offers', 'dynamic');
    expect(asText.next).to.equal('save');
    const asConfirm = stepBody({ ...save, type: 'confirm' });
    expect(asConfirm).to.not.have.any.keys('next', 'offers', 'dynamic', 'answers');
    expect(asConfirm.decline_label).to.equal('No thanks');
  });

  it('leaves out blank copy, an empty condition and the default next; blank text is null', () => {
    const step = newStep('offer', 'save', 'Wait');
    const body = stepBody({ ...step, body: '   ', offers: [{ ...step.offers[0], headline: '  ', cta: 'Pause' }] });
    expect(body.body).to.equal(null);
    expect(body).to.not.have.property('next');
    expect(body.offers).to.deep.equal([{ kind: 'pause', months: 1, cta: 'Pause' }]);
  });

  it('writes each kind of offer with its own terms, a blank number left out for the API to name', () => {
    const base = offerForm({ kind: 'discount', percent: 20, cycles: 3 });
    expect(json(offerBody({ ...base, cycles: '' }))).to.deep.equal({ kind: 'discount', percent: 20 });
    expect(offerBody({ ...base, kind: 'downgrade' })).to.deep.equal({ kind: 'downgrade', plan: '' });
    expect(offerBody({ ...base, kind: 'incentive', incentive: 'ai_boost', months: 6 })).to.deep.equal({
      kind: 'incentive',
      incentive: 'ai_boost',
      months: 6,
    });
    expect(offerBody({ ...base, when: ['other'] })).to.deep.equal({
      kind: 'discount',
      percent: 20,
      cycles: 3,
      when: { answers: ['other'] },
    });
  });

  it('sends guardrails when they are on, or when the stored step had them; never-used ones stay out', () => {
    const fresh = newStep('offer', 'save', 'Wait');
    const dynamic: DynamicForm = {
      enabled: false,
      kinds: [],
      max_percent: 30,
      max_cycles: 3,
      max_pause_months: 3,
      downgrade_plans: [],
      incentives: [],
      max_incentive_months: 3,
      instructions: '',
    };
    expect(stepBody({ ...fresh, dynamic })).to.not.have.property('dynamic');
    expect(stepBody({ ...fresh, dynamic, hadDynamic: true }).dynamic).to.include({ enabled: false });
    const on = stepBody({
      ...fresh,
      dynamic: { ...dynamic, enabled: true, kinds: ['pause'], instructions: 'Be kind' },
    });
    expect(on.dynamic).to.include({ enabled: true, instructions: 'Be kind' });
  });
});

describe('cancel-flow editor form: editing helpers', () => {
  it('removing a step removes the branches and conditions that named it', () => {
    const form = formOf(flow());
    const save = form.steps[1];
    const after = withoutStep(form, save.key);
    expect(after.steps.map((s) => s.id)).to.deep.equal(['reason', 'confirm']);
    const reason = after.steps[0];
    expect(reason.next).to.equal('');
    expect(reason.answers.map((a) => a.next)).to.deep.equal(['', '']);
    const withoutReason = withoutStep(form, form.steps[0].key);
    expect(withoutReason.steps[0].offers[0].whenStep).to.equal(null);
    expect(withoutReason.steps[0].offers[0].when).to.deep.equal(['too_expensive']);
  });

  it('a new offer step starts with a decline label and a one-month pause; other steps start bare', () => {
    const offer = newStep('offer', 'wait', 'Wait');
    expect(offer.decline_label).to.equal('No thanks, continue cancelling');
    expect(offer.offers.map(offerBody)).to.deep.equal([{ kind: 'pause', months: 1 }]);
    const text = newStep('text', 'note', 'A note');
    expect(text).to.include({ id: 'note', title: 'A note', decline_label: '', next: '' });
    expect(text.offers).to.deep.equal([]);
    expect(text.key).to.not.equal(offer.key);
  });

  it('lists every answer once by id, joining the labels of questions that share it', () => {
    const form = formOf(flow());
    const second = newStep('question', 'again', 'Really?');
    second.answers = [{ id: 'other', label: 'Other', next: '' }];
    expect(answerOptions([...form.steps, second])).to.deep.equal([
      { value: 'too_expensive', label: 'It is too expensive' },
      { value: 'other', label: 'Something else / Other' },
    ]);
  });

  it('offers only later steps as targets, since branches go forward', () => {
    const steps = formOf(flow()).steps;
    expect(targetOptions(steps, 1, 'next')).to.deep.equal([
      { value: '', label: 'next' },
      { value: 'confirm', label: 'confirm (confirm)' },
    ]);
    expect(targetOptions(steps, 2, 'none')).to.have.length(1);
  });

  it('summarises an offer in words, singular and plural', () => {
    const o = offerForm({ kind: 'discount', percent: 25, cycles: 1 });
    expect(offerSummary(o)).to.equal('25% off for 1 cycle');
    expect(offerSummary({ ...o, cycles: 3 })).to.equal('25% off for 3 cycles');
    expect(offerSummary({ ...o, kind: 'pause', months: 2 })).to.equal('pause 2 months');
    expect(offerSummary({ ...o, kind: 'downgrade' })).to.equal('downgrade to …');
    expect(offerSummary({ ...o, kind: 'incentive', incentive: 'boost', months: 1 })).to.equal(
      'incentive boost for 1 month',
    );
  });
});
