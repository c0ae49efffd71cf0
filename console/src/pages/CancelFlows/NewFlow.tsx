// The dialog that creates a cancel flow: its name, its id, and whether it starts minimal or from the template.
import { Button, Group, Modal, Radio, Stack, Text, TextInput } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import type { AppApi } from '../../api';
import { ErrorText, useAction } from '../../ui';
import { EMPTY_NEW_FLOW, newFlowBody, newFlowChecks, type NewFlowForm } from './newFlow';

export function NewFlow({
  opened,
  api,
  taken,
  onClose,
  onCreated,
}: {
  opened: boolean;
  api: AppApi;
  taken: string[];
  onClose: () => void;
  onCreated: (id: string) => Promise<void>;
}) {
  const [form, setForm] = useState<NewFlowForm>(EMPTY_NEW_FLOW);
  const action = useAction();
  const { id: finalId, suggested, clash, nameProblem } = newFlowChecks(form, taken);
  const close = () => {
    action.setError(null);
    onClose();
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const ok = await action.run(async () => {
      const f = await api.cancelFlows.create(newFlowBody(form, finalId));
      await onCreated(f.id);
    });
    if (ok) setForm(EMPTY_NEW_FLOW);
  };
  return (
    <Modal opened={opened} onClose={close} title="New cancel flow">
      <form onSubmit={submit}>
        <Stack gap="sm">
          <TextInput
            label="Flow name"
            required
            data-autofocus
            value={form.name}
            onChange={(e) => setForm({ ...form, name: e.currentTarget.value })}
            error={nameProblem}
          />
          <TextInput
            label="Flow id"
            description="Your app names it when it starts a session"
            placeholder={suggested}
            value={form.id}
            onChange={(e) => setForm({ ...form, id: e.currentTarget.value })}
            error={clash ? `${finalId} is taken` : undefined}
          />
          <Radio.Group
            label="Start from"
            value={form.start}
            onChange={(v) => setForm({ ...form, start: v as NewFlowForm['start'] })}
          >
            <Stack gap={6} mt={6}>
              <Radio value="minimal" label="A reason question and the confirm step" />
              <Radio value="template" label="The template: a reason, a save offer chosen by the answer, confirm" />
            </Stack>
          </Radio.Group>
          <Text size="xs" c="dimmed">
            New flows are drafts: customers see them once you switch them to active.
          </Text>
          <ErrorText error={action.error} />
          <Group justify="flex-end" gap="xs">
            <Button variant="default" onClick={close} disabled={action.busy}>
              Cancel
            </Button>
            <Button
              type="submit"
              loading={action.busy}
              disabled={!form.name.trim() || !finalId || clash}
              data-route="cancelFlows.create"
            >
              Create flow
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
