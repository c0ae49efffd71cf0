// The cancel-flow editor's checks: the API schema's checks, field by field, so a person sees every problem at once
// beside its field before saving. What only the whole flow can tell (reachability, a confirm step at the end of
// every way) is the API's to say. Plain functions, no React (test/unit/cancel-flow-validate.test.ts); relative
// imports name their `.js` file, as form.ts explains.
import { intBetween, textProblem } from '../../forms.js';
import type { FlowForm } from './form.js';

/**
 * The schema's checks, field by field, keyed `<step key>.<field>` (and `flow.<field>`), worded like the API's
 * messages. The API checks again on save; these let the person see every problem at once, beside its field.
 */
export function problemsOf(form: FlowForm): Map<string, string> {
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
