// One static offer of an offer step: its kind and terms, the answers it is shown for, and its optional copy.
import {
  ActionIcon,
  Button,
  Card,
  CloseButton,
  Group,
  MultiSelect,
  NumberInput,
  Select,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Textarea,
} from '@mantine/core';
import { useState } from 'react';
import { num } from '../../forms';
import { KINDS, offerSummary, type FlowCatalog, type Kind, type OfferForm } from './form';

export function OfferCard({
  stepId,
  index,
  count,
  offer: o,
  catalog,
  answerChoices,
  err,
  onChange,
  onMove,
  onRemove,
}: {
  stepId: string;
  index: number;
  count: number;
  offer: OfferForm;
  catalog: FlowCatalog;
  answerChoices: { value: string; label: string }[];
  err: (field: string) => string | undefined;
  onChange: (patch: Partial<OfferForm>) => void;
  onMove: (by: -1 | 1) => void;
  onRemove: () => void;
}) {
  const name = `${stepId} offer ${index + 1}`;
  // The copy is optional (the service writes it from the terms): its fields show once there is some, or on request.
  const [writing, setWriting] = useState(!!(o.headline || o.body || o.cta));
  // Answers a condition names that no question has any more stay visible, so the person sees what to fix.
  const choices = [
    ...answerChoices,
    ...o.when.filter((a) => !answerChoices.some((c) => c.value === a)).map((a) => ({ value: a, label: `${a} (gone)` })),
  ];
  const intInput = (field: 'percent' | 'cycles' | 'months', label: string, min: number, max: number) => (
    <NumberInput
      label={label}
      aria-label={`${name} ${label.toLowerCase()}`}
      size="xs"
      min={min}
      max={max}
      allowDecimal={false}
      clampBehavior="none"
      value={o[field]}
      onChange={(v) => onChange({ [field]: num(v) })}
      error={err(field)}
    />
  );
  return (
    <Card withBorder padding="xs" aria-label={`Offer ${index + 1} of ${stepId}`} role="group">
      <Stack gap={6}>
        <Group justify="space-between" wrap="nowrap" gap="xs">
          <Text size="sm" style={{ minWidth: 0 }}>
            <b>{index + 1}.</b> {o.when.length ? `If ${o.when.join(' or ')}: ` : 'Otherwise: '}
            <b>{offerSummary(o)}</b>
          </Text>
          <Group gap={4} wrap="nowrap">
            <ActionIcon
              variant="default"
              size="sm"
              aria-label={`Move ${name} up`}
              disabled={index === 0}
              onClick={() => onMove(-1)}
            >
              ↑
            </ActionIcon>
            <ActionIcon
              variant="default"
              size="sm"
              aria-label={`Move ${name} down`}
              disabled={index === count - 1}
              onClick={() => onMove(1)}
            >
              ↓
            </ActionIcon>
            <CloseButton size="sm" aria-label={`Remove ${name}`} onClick={onRemove} />
          </Group>
        </Group>
        {/* Container queries: the card is narrow beside a phone's edge and wide on a desktop. */}
        <SimpleGrid type="container" cols={{ base: 2, '460px': 4 }} spacing="xs" verticalSpacing={6}>
          <Select
            label="Kind"
            aria-label={`${name} kind`}
            size="xs"
            data={KINDS}
            value={o.kind}
            allowDeselect={false}
            onChange={(v) => v && onChange({ kind: v as Kind })}
          />
          {o.kind === 'discount' && (
            <>
              {intInput('percent', 'Percent off', 1, 100)}
              {intInput('cycles', 'Renewals', 1, 36)}
            </>
          )}
          {o.kind === 'pause' && intInput('months', 'Months', 1, 12)}
          {o.kind === 'downgrade' && (
            <Select
              label="To plan"
              aria-label={`${name} plan`}
              size="xs"
              placeholder="Choose a plan"
              data={catalog.plans.map((p) => ({ value: p.id, label: p.name }))}
              value={o.plan}
              onChange={(v) => onChange({ plan: v })}
              error={err('plan')}
            />
          )}
          {o.kind === 'incentive' && (
            <>
              <Select
                label="Incentive"
                aria-label={`${name} incentive`}
                size="xs"
                placeholder={catalog.incentives.length ? 'Choose an incentive' : 'No incentives in the catalog'}
                data={catalog.incentives.map((x) => ({ value: x.id, label: x.name }))}
                value={o.incentive}
                onChange={(v) => onChange({ incentive: v })}
                error={err('incentive')}
              />
              {intInput('months', 'Months', 1, 36)}
            </>
          )}
        </SimpleGrid>
        <MultiSelect
          label="Shown when the answer is"
          aria-label={`${name} answers`}
          placeholder={o.when.length ? undefined : 'any answer'}
          size="xs"
          data={choices}
          value={o.when}
          onChange={(when) => onChange({ when })}
          error={err('when')}
          clearable
        />
        {writing ? (
          <>
            <SimpleGrid cols={{ base: 1, sm: 2 }} spacing="xs" verticalSpacing={6}>
              <TextInput
                label="Headline"
                aria-label={`${name} headline`}
                placeholder="written from the terms"
                size="xs"
                value={o.headline}
                onChange={(e) => onChange({ headline: e.currentTarget.value })}
                error={err('headline')}
              />
              <TextInput
                label="Button"
                aria-label={`${name} button`}
                placeholder="written from the terms"
                size="xs"
                value={o.cta}
                onChange={(e) => onChange({ cta: e.currentTarget.value })}
                error={err('cta')}
              />
            </SimpleGrid>
            <Textarea
              label="Body"
              aria-label={`${name} body`}
              placeholder="written from the terms"
              size="xs"
              autosize
              minRows={1}
              value={o.body}
              onChange={(e) => onChange({ body: e.currentTarget.value })}
              error={err('body')}
            />
          </>
        ) : (
          <Group gap="xs" wrap="nowrap">
            <Text size="xs" c="dimmed">
              Headline, body and button are written from the terms.
            </Text>
            <Button
              size="compact-xs"
              variant="subtle"
              onClick={() => setWriting(true)}
              aria-label={`Write the copy of ${name}`}
              style={{ flexShrink: 0 }}
            >
              Write them
            </Button>
          </Group>
        )}
      </Stack>
    </Card>
  );
}
