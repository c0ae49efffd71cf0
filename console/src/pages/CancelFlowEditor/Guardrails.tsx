// The guardrails of model-chosen offers: the kinds a model may offer, their limits, the plans and incentives it may
// use, and instructions for it.
import { Alert, Card, Chip, Group, MultiSelect, NumberInput, SimpleGrid, Stack, Text, Textarea } from '@mantine/core';
import { num, type Num } from '../../forms';
import { KINDS, type DynamicForm, type FlowCatalog, type Kind, type StepForm } from './form';

export function Guardrails({
  step: s,
  dynamic: d,
  catalog,
  err,
  onChange,
}: {
  step: StepForm;
  dynamic: DynamicForm;
  catalog: FlowCatalog;
  err: (k: string) => string | undefined;
  onChange: (patch: Partial<StepForm>) => void;
}) {
  const set = (patch: Partial<DynamicForm>) => onChange({ dynamic: { ...d, ...patch } });
  const e = (f: string) => err(`${s.key}.dynamic.${f}`);
  const limit = (field: keyof DynamicForm, label: string, min: number, max: number) => (
    <NumberInput
      label={label}
      aria-label={`${s.id} ${label.toLowerCase()}`}
      size="xs"
      min={min}
      max={max}
      allowDecimal={false}
      clampBehavior="none"
      value={d[field] as Num}
      onChange={(v) => set({ [field]: num(v) })}
      error={e(field)}
    />
  );
  return (
    <Card withBorder padding="xs" aria-label={`Guardrails of ${s.id}`} role="group">
      <Stack gap={6}>
        {!catalog.capabilities.dynamic_offers && (
          <Alert color="yellow" p="xs">
            <Text size="xs">
              No model is configured on the service, so customers get the static offers below. Set a model
              provider&apos;s API key on the service to let a model choose.
            </Text>
          </Alert>
        )}
        {catalog.capabilities.model && (
          <Text size="xs" c="dimmed">
            Model: {catalog.capabilities.model}
          </Text>
        )}
        <Text size="xs" fw={600}>
          Kinds the model may offer
        </Text>
        <Chip.Group multiple value={d.kinds} onChange={(v) => set({ kinds: v as Kind[] })}>
          <Group gap={6}>
            {KINDS.map((kind) => (
              <Chip key={kind.value} value={kind.value} size="xs">
                {kind.label}
              </Chip>
            ))}
          </Group>
        </Chip.Group>
        {e('kinds') && (
          <Text size="xs" c="red">
            {e('kinds')}
          </Text>
        )}
        <SimpleGrid cols={{ base: 2, sm: 4 }} spacing="xs">
          {limit('max_percent', 'Max percent', 1, 100)}
          {limit('max_cycles', 'Max renewals', 1, 36)}
          {limit('max_pause_months', 'Max pause months', 1, 12)}
          {limit('max_incentive_months', 'Max incentive months', 1, 36)}
        </SimpleGrid>
        {d.kinds.includes('downgrade') && (
          <MultiSelect
            label="Plans it may downgrade to"
            size="xs"
            data={catalog.plans.map((p) => ({ value: p.id, label: p.name }))}
            value={d.downgrade_plans}
            onChange={(v) => set({ downgrade_plans: v })}
            error={e('downgrade_plans')}
          />
        )}
        {d.kinds.includes('incentive') && (
          <MultiSelect
            label="Incentives it may give"
            size="xs"
            data={catalog.incentives.map((x) => ({ value: x.id, label: x.name }))}
            value={d.incentives}
            onChange={(v) => set({ incentives: v })}
            error={e('incentives')}
          />
        )}
        <Textarea
          label="Instructions for the model"
          placeholder="Tone, what to favour…"
          size="xs"
          autosize
          minRows={1}
          value={d.instructions}
          onChange={(ev) => set({ instructions: ev.currentTarget.value })}
          error={e('instructions')}
        />
      </Stack>
    </Card>
  );
}
