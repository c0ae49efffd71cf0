// Adding a step: its kind, title and id (made from the title unless typed), and where in the list it goes.
import { Button, Card, Group, Select, Stack, Text, TextInput } from '@mantine/core';
import { useState } from 'react';
import { normalizeId, uniqueId } from '../../forms';
import { newStep, STEP_TYPES, type StepForm, type StepType } from './form';

export function AddStep({ steps, onAdd }: { steps: StepForm[]; onAdd: (steps: StepForm[]) => void }) {
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
