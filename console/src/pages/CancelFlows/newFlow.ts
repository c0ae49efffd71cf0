// A new cancel flow, before it exists: the id it gets (typed, else made from the name), whether that id is taken,
// the name's problem, and the body the API's create takes. Plain functions, no React
// (test/unit/cancel-flow-new.test.ts); relative imports name their `.js` file, as CancelFlowEditor/form.ts explains.
import type { CancelFlowsCreateBody } from '@offerkit/sdk';
import { normalizeId, textProblem, uniqueId } from '../../forms.js';
import type { StepBody } from '../CancelFlowEditor/form.js';

/** What the new-flow dialog holds: the name, the id as typed (blank: made from the name), and where to start. */
export interface NewFlowForm {
  name: string;
  id: string;
  start: 'minimal' | 'template';
}

export const EMPTY_NEW_FLOW: NewFlowForm = { name: '', id: '', start: 'minimal' };

/** The smallest flow the API accepts that still asks something: a reason question, then the confirm step. */
export function minimalSteps(): StepBody[] {
  return [
    {
      id: 'reason',
      type: 'question',
      title: 'Why are you cancelling?',
      answers: [
        { id: 'too_expensive', label: 'It is too expensive' },
        { id: 'other', label: 'Something else' },
      ],
      allow_text: true,
    },
    {
      id: 'confirm',
      type: 'confirm',
      title: 'Confirm your cancellation',
      body: 'Your subscription ends now and your account moves to the free plan.',
    },
  ];
}

/** The id the flow will get, the placeholder shown for it, whether another flow has it, and the name's problem. */
export function newFlowChecks(form: NewFlowForm, taken: string[]) {
  const suggested = uniqueId(form.name || 'flow', taken);
  const id = form.id ? normalizeId(form.id) : suggested;
  return {
    id,
    suggested,
    clash: taken.includes(id),
    nameProblem: form.name ? textProblem(form.name, 200, true) : null,
  };
}

/** The create body: the template's steps unless the minimal start was chosen. */
export function newFlowBody(form: NewFlowForm, id: string): CancelFlowsCreateBody {
  return { id, name: form.name.trim(), ...(form.start === 'minimal' ? { steps: minimalSteps() } : {}) };
}
