// The new-cancel-flow dialog's checks and body (console/src/pages/CancelFlows/newFlow.ts), pure.
import { expect } from 'chai';
import {
  EMPTY_NEW_FLOW,
  minimalSteps,
  newFlowBody,
  newFlowChecks,
} from '../../console/src/pages/CancelFlows/newFlow.js';

describe('a new cancel flow: id, checks and body', () => {
  it('makes the id from the name unless one is typed, as the API normalizes it', () => {
    expect(newFlowChecks({ ...EMPTY_NEW_FLOW, name: 'Annual plans' }, ['default'])).to.deep.equal({
      id: 'annual_plans',
      suggested: 'annual_plans',
      clash: false,
      nameProblem: null,
    });
    expect(newFlowChecks({ ...EMPTY_NEW_FLOW, name: 'Annual plans', id: 'Yearly Flow' }, []).id).to.equal(
      'yearly_flow',
    );
    // Nothing typed yet: the placeholder is the first free `flow` id.
    expect(newFlowChecks(EMPTY_NEW_FLOW, ['flow']).suggested).to.equal('flow_2');
  });

  it('says when the typed id is taken, and when the name is too long', () => {
    const checks = newFlowChecks({ ...EMPTY_NEW_FLOW, name: 'x'.repeat(201), id: 'Default' }, ['default']);
    expect(checks.clash).to.be.true;
    expect(checks.nameProblem).to.equal('must be at most 200 characters');
    // A made-up id never clashes: it skips the taken ones.
    expect(newFlowChecks({ ...EMPTY_NEW_FLOW, name: 'Default' }, ['default'])).to.include({
      id: 'default_2',
      clash: false,
    });
  });

  it('sends the minimal steps, or none so the API uses its template; the name trimmed', () => {
    const minimal = newFlowBody({ name: ' Annual ', id: '', start: 'minimal' }, 'annual');
    expect(minimal).to.deep.equal({ id: 'annual', name: 'Annual', steps: minimalSteps() });
    expect(minimal.steps!.map((s) => s.type)).to.deep.equal(['question', 'confirm']);
    expect(newFlowBody({ name: 'Annual', id: '', start: 'template' }, 'annual')).to.deep.equal({
      id: 'annual',
      name: 'Annual',
    });
  });
});
