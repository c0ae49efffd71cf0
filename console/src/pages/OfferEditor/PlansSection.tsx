// The plans an offer sells, in the order buyers see them, and adding one from the catalog at its regular prices.
import { Button, Group, Select, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { regularPrices, type OfferCatalog, type OfferForm, type PlanForm } from './form';
import { PlanCard } from './PlanCard';
import type { SetForm } from './state';

export function PlansSection({
  form,
  catalog,
  currency,
  setPlan,
  movePlan,
  setForm,
  fieldError,
}: {
  form: OfferForm;
  catalog: OfferCatalog;
  currency: string;
  setPlan: (i: number, patch: Partial<PlanForm>) => void;
  movePlan: (i: number, by: -1 | 1) => void;
  setForm: SetForm;
  /** The save's problem for a field path (`plans.0.prices.1.amount`), shown under its input. */
  fieldError?: (path: string) => string | undefined;
}) {
  const [adding, setAdding] = useState<string | null>(null);
  const available = catalog.plans.filter((p) => !form.plans.some((x) => x.plan === p.id));
  const add = () => {
    const plan = catalog.plans.find((p) => p.id === adding);
    if (!plan) return;
    setForm((f) => ({
      ...f,
      plans: [
        ...f.plans,
        { plan: plan.id, prices: regularPrices(plan, currency), extras: { entitlements: [], addons: [], cycles: '' } },
      ],
    }));
    setAdding(null);
  };
  return (
    <Stack gap="xs" aria-label="Plans in this offer" role="group">
      <Title order={4} size="h5">
        Plans
      </Title>
      <Text size="xs" c="dimmed">
        Buyers see them in this order. A price with cycles bills the offer price that many times, then the plan&apos;s
        regular price.
      </Text>
      {form.plans.map((p, i) => (
        <PlanCard
          key={p.plan}
          row={p}
          plan={catalog.plans.find((x) => x.id === p.plan)}
          catalog={catalog}
          first={i === 0}
          last={i === form.plans.length - 1}
          only={form.plans.length === 1}
          fieldError={fieldError && ((path) => fieldError(`plans.${i}.${path}`))}
          onChange={(patch) => setPlan(i, patch)}
          onMove={(by) => movePlan(i, by)}
          onRemove={() => setForm((f) => ({ ...f, plans: f.plans.filter((_, j) => j !== i) }))}
        />
      ))}
      <Group gap="xs" align="flex-end" wrap="wrap">
        <Select
          label="Add a plan from the catalog"
          placeholder={available.length ? 'Choose a plan' : 'Every plan is in the offer'}
          data={available.map((p) => ({ value: p.id, label: p.name }))}
          value={adding}
          onChange={setAdding}
          disabled={!available.length}
          style={{ flex: '1 1 180px' }}
        />
        <Button variant="light" onClick={add} disabled={!adding}>
          Add plan
        </Button>
      </Group>
    </Stack>
  );
}
