// The cancel-flow editor: the flow's name and status, and its steps (question with choices and branches, text,
// save offer, confirm): add, remove, retitle, branch, and the offer steps' terms (discount, downgrade, pause,
// incentive, their copy and when they apply) or model-chosen offers within guardrails. Fields are checked as the
// API's schema checks them before saving; what only the whole flow can tell (reachability, a confirm step at the
// end of every way) is the API's to say, shown as it words it.
//
// In parts: form.ts maps a stored flow to the form and back to the API's body, validate.ts holds the field checks
// (both plain modules with unit tests), and each card of the editor is a component in a file of its own.
import { Alert, Badge, Button, Card, Code, Group, Stack, Switch, Text, TextInput } from '@mantine/core';
import { useState } from 'react';
import type { AppApi } from '../../api';
import { ErrorText, useAction } from '../../ui';
import { AddStep } from './AddStep';
import {
  answerOptions,
  flowBody,
  formOf,
  isDirty,
  withoutStep,
  type Flow,
  type FlowCatalog,
  type FlowForm,
  type StepForm,
} from './form';
import { StepCard } from './StepCard';
import { problemsOf } from './validate';

export type { FlowCatalog, StepBody } from './form';

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
  /**
   * The demo workspace, or a role that may not change flows (a viewer): the steps can be explored and changed on
   * screen, and nothing offers to save them.
   */
  readOnly?: false | 'demo' | 'role';
}) {
  const [form, setForm] = useState<FlowForm>(() => formOf(flow));
  const action = useAction();
  const problems = problemsOf(form);
  const body = flowBody(form);
  const dirty = isDirty(form, flow);
  const err = (k: string) => problems.get(k);
  const setStep = (key: string, patch: Partial<StepForm>) =>
    setForm((f) => ({ ...f, steps: f.steps.map((s) => (s.key === key ? { ...s, ...patch } : s)) }));
  const removeStep = (key: string) => setForm((f) => withoutStep(f, key));
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
              {readOnly === 'demo'
                ? 'The demo workspace is read-only: changes here are not saved.'
                : 'Viewers try changes here; members, admins and owners save them.'}
            </Text>
          ) : (
            <Button
              loading={action.busy}
              disabled={!dirty || problems.size > 0}
              data-route="cancelFlows.update"
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
