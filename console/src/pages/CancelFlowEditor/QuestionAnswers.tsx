// A question step's answers: their labels, the step each one branches to, new answers, and free text.
import { Button, CloseButton, Group, Select, Stack, Switch, Text, TextInput } from '@mantine/core';
import { useState } from 'react';
import { uniqueId } from '../../forms';
import { targetOptions, type AnswerForm, type StepForm } from './form';

export function QuestionAnswers({
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
