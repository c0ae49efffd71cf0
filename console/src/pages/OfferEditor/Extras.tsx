import { Button, Group, MultiSelect, NumberInput, Select, Stack, Text, CloseButton } from '@mantine/core';
import { useState } from 'react';
import { num } from '../../forms';
import type { OfferCatalog, PlanForm } from './form';

/** Extras: limits that override the plan's for buyers of this offer, add-ons they get, how long both last. */
export function Extras({
  row,
  plan,
  catalog,
  onChange,
}: {
  row: PlanForm;
  plan: string;
  catalog: OfferCatalog;
  onChange: (extras: PlanForm['extras']) => void;
}) {
  const [adding, setAdding] = useState<string | null>(null);
  const ex = row.extras;
  const available = catalog.entitlements.filter((e) => !ex.entitlements.some((x) => x.id === e.id));
  const entitlement = (id: string) => catalog.entitlements.find((e) => e.id === id);
  return (
    <Stack gap={6} pt={4} style={{ borderTop: '1px solid var(--mantine-color-gray-2)' }}>
      <Text size="sm" fw={600}>
        Extras for buyers
      </Text>
      {ex.entitlements.map((e, k) => {
        const ent = entitlement(e.id);
        return (
          <Group key={e.id} gap="xs" wrap="nowrap">
            <Text size="sm" style={{ flex: 1, minWidth: 0 }} truncate>
              {ent?.name ?? e.id}
            </Text>
            {ent?.type === 'boolean' ? (
              <Text size="xs" c="dimmed">
                switched on
              </Text>
            ) : (
              <NumberInput
                aria-label={`${plan} extra ${ent?.name ?? e.id} limit`}
                placeholder="unlimited"
                size="xs"
                w={110}
                min={0}
                allowDecimal={false}
                value={e.max}
                onChange={(v) =>
                  onChange({
                    ...ex,
                    entitlements: ex.entitlements.map((x, j) => (j === k ? { ...x, max: num(v) } : x)),
                  })
                }
              />
            )}
            <CloseButton
              aria-label={`Remove extra ${ent?.name ?? e.id} from ${plan}`}
              onClick={() => onChange({ ...ex, entitlements: ex.entitlements.filter((_, j) => j !== k) })}
            />
          </Group>
        );
      })}
      <Group gap="xs" wrap="nowrap">
        <Select
          aria-label={`Extra limit for ${plan}`}
          placeholder={available.length ? 'Override a limit…' : 'Every entitlement has an extra'}
          size="xs"
          data={available.map((e) => ({ value: e.id, label: e.name }))}
          value={adding}
          onChange={setAdding}
          disabled={!available.length}
          style={{ flex: 1, minWidth: 0 }}
        />
        <Button
          size="xs"
          variant="light"
          disabled={!adding}
          onClick={() => {
            if (!adding) return;
            onChange({ ...ex, entitlements: [...ex.entitlements, { id: adding, max: '' }] });
            setAdding(null);
          }}
        >
          Add extra
        </Button>
      </Group>
      <MultiSelect
        label="Add-ons included"
        aria-label={`${plan} add-ons included`}
        placeholder={ex.addons.length ? undefined : catalog.addons.length ? 'None' : 'The app has no add-ons'}
        size="xs"
        data={catalog.addons.map((a) => ({ value: a.id, label: a.name }))}
        value={ex.addons}
        onChange={(addons) => onChange({ ...ex, addons })}
        disabled={!catalog.addons.length}
      />
      <NumberInput
        label="Extras last (billing cycles)"
        aria-label={`${plan} extras cycles`}
        placeholder="while subscribed"
        size="xs"
        w={180}
        min={1}
        max={120}
        allowDecimal={false}
        value={ex.cycles}
        onChange={(v) => onChange({ ...ex, cycles: num(v) })}
      />
    </Stack>
  );
}
