// One step of the flow as a card: its title and text, then by type the question's answers or the offer step's
// offers, and where the step goes next (only later steps: branches go forward).
import { Badge, Card, CloseButton, Code, Group, Select, Stack, Text, TextInput, Textarea } from '@mantine/core';
import { targetOptions, type FlowCatalog, type StepForm } from './form';
import { OfferStep } from './OfferStep';
import { QuestionAnswers } from './QuestionAnswers';

export function StepCard({
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
