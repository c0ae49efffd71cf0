// Order bumps: one-off add-ons offered beside the plan at checkout, their names, prices and currency.
import { Anchor, Button, CloseButton, Group, NumberInput, Select, Stack, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { num, type Num } from '../../forms';
import { newBump, type BumpForm, type OfferCatalog, type OfferForm } from './form';
import type { SetForm } from './state';

export function BumpsSection({
  form,
  catalog,
  currency,
  setForm,
}: {
  form: OfferForm;
  catalog: OfferCatalog;
  currency: string;
  setForm: SetForm;
}) {
  const { appId } = useParams();
  const [addon, setAddon] = useState<string | null>(null);
  const [price, setPrice] = useState<Num>('');
  const available = catalog.addons.filter((a) => !form.bumps.some((b) => b.addon === a.id));
  const setBump = (i: number, patch: Partial<BumpForm>) =>
    setForm((f) => ({ ...f, bumps: f.bumps.map((b, j) => (j === i ? { ...b, ...patch } : b)) }));
  const add = () => {
    const a = catalog.addons.find((x) => x.id === addon);
    if (!a) return;
    const bump = newBump(form.bumps, a, price, currency);
    setForm((f) => ({ ...f, bumps: [...f.bumps, bump] }));
    setAddon(null);
    setPrice('');
  };
  return (
    <Stack gap="xs" aria-label="Order bumps" role="group">
      <Title order={4} size="h5">
        Order bumps
      </Title>
      <Text size="xs" c="dimmed">
        One-off add-ons offered beside the plan at checkout, paid once with the first payment.
      </Text>
      {form.bumps.map((b, i) => (
        <Group key={b.id} gap="xs" align="flex-start" wrap="wrap" style={{ rowGap: 4 }}>
          <TextInput
            label="Shown as"
            aria-label={`Bump ${b.id} name`}
            size="xs"
            value={b.name}
            onChange={(e) => setBump(i, { name: e.currentTarget.value })}
            style={{ flex: '1 1 180px' }}
            description={`add-on ${b.addon}`}
            inputWrapperOrder={['label', 'input', 'description']}
          />
          <Group gap="xs" align="flex-start" wrap="nowrap">
            <NumberInput
              label="Price"
              aria-label={`Bump ${b.id} price`}
              size="xs"
              w={90}
              min={0}
              decimalScale={2}
              value={b.price}
              onChange={(v) => setBump(i, { price: num(v) })}
            />
            <TextInput
              label="Currency"
              aria-label={`Bump ${b.id} currency`}
              size="xs"
              w={72}
              maxLength={3}
              value={b.currency}
              onChange={(e) => setBump(i, { currency: e.currentTarget.value.toUpperCase() })}
            />
            <CloseButton
              aria-label={`Remove bump ${b.name}`}
              onClick={() => setForm((f) => ({ ...f, bumps: f.bumps.filter((_, j) => j !== i) }))}
              mt={21}
            />
          </Group>
        </Group>
      ))}
      <Group gap="xs" align="flex-end" wrap="wrap">
        <Select
          label="Add an order bump"
          placeholder={
            catalog.addons.length
              ? available.length
                ? 'Choose an add-on'
                : 'Every add-on is a bump'
              : 'No add-ons yet'
          }
          data={available.map((a) => ({ value: a.id, label: a.name }))}
          value={addon}
          onChange={setAddon}
          disabled={!available.length}
          style={{ flex: '1 1 160px' }}
        />
        <NumberInput
          label="Bump price"
          w={100}
          min={0}
          decimalScale={2}
          value={price}
          onChange={(v) => setPrice(num(v))}
        />
        <Button variant="light" onClick={add} disabled={!addon || price === ''}>
          Add bump
        </Button>
      </Group>
      {!catalog.addons.length && (
        <Text size="xs" c="dimmed">
          Order bumps sell add-ons: create one{' '}
          <Anchor component={Link} to={`/apps/${appId}/catalog#addons`} size="xs">
            in the catalog
          </Anchor>{' '}
          first.
        </Text>
      )}
    </Stack>
  );
}
