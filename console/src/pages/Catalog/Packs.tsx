// Credit top-up packs in the catalog (issue 42, item 6): each pack's pool, credits, price and whether it is still
// sold, a form for a new one, and Archive and Delete. Each action is shown only to the roles its route lets through
// (`useCan` reads the route table), so a viewer sees the list alone. Packs have no edit: the API has none (a pack's
// orders keep what they sold, so a new price is a new pack).
import {
  Badge,
  Button,
  Card,
  Group,
  NumberInput,
  Select,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useState, type FormEvent } from 'react';
import type { CreditPacksListResponse } from '@offerkit/sdk';
import { ConfirmDialog, ErrorText, useAction } from '../../ui';
import { poolsOf } from './credits';
import { Hint, nameOf, type SectionProps } from './shared';

export type Pack = CreditPacksListResponse[number];

interface PackForm {
  id: string;
  pool: string | null;
  amount: string | number;
  price: string;
  currency: string;
}
const EMPTY: PackForm = { id: '', pool: null, amount: '', price: '', currency: 'USD' };
const PACK_FIELDS = ['id', 'pool', 'amount', 'price', 'currency'] as const;

/** A pack's price as a buyer reads it, e.g. `10.00 USD`. */
export const priceText = (p: Pick<Pack, 'price' | 'currency'>) => `${p.price.toFixed(2)} ${p.currency}`;

function NewPack({
  api,
  reload,
  pools,
}: Pick<SectionProps, 'api' | 'reload'> & { pools: { id: string; name: string }[] }) {
  const [form, setForm] = useState<PackForm>({ ...EMPTY, pool: pools[0]?.id ?? null });
  const action = useAction(PACK_FIELDS);
  const set = (patch: Partial<PackForm>) => setForm({ ...form, ...patch });
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    // The price goes as typed (a decimal string such as "10.00"): the API checks whole cents, nothing rounds here.
    // A field left empty is sent empty (0 credits) so the API words what is wrong.
    const body = {
      id: form.id,
      pool: form.pool ?? '',
      amount: Number(form.amount),
      price: form.price.trim(),
      currency: form.currency.trim() || undefined,
    };
    if (await action.run(() => api.creditPacks.create(body))) {
      setForm({ ...EMPTY, pool: form.pool });
      await reload();
    }
  };
  return (
    <Card withBorder miw={260}>
      <form onSubmit={submit} aria-label="New credit pack">
        <Stack gap="xs">
          <Title order={3} size="h5">
            New credit pack
          </Title>
          <TextInput
            label="Pack id"
            description="e.g. credits_10k (letters, digits, _)"
            required
            value={form.id}
            error={action.field('id')}
            onChange={(e) => set({ id: e.currentTarget.value })}
          />
          <Select
            label="Pool"
            data={pools.map((p) => ({ value: p.id, label: p.name }))}
            value={form.pool}
            error={action.field('pool')}
            onChange={(v) => set({ pool: v })}
            allowDeselect={false}
            required
          />
          <NumberInput
            label="Credits in the pack"
            description="Whole credits the pack grants"
            min={1}
            clampBehavior="none"
            allowDecimal={false}
            thousandSeparator=","
            required
            value={form.amount}
            error={action.field('amount')}
            onChange={(v) => set({ amount: v })}
          />
          <Group gap="xs" align="flex-start" grow>
            <TextInput
              label="Price"
              description="e.g. 10.00"
              inputMode="decimal"
              required
              value={form.price}
              error={action.field('price')}
              onChange={(e) => set({ price: e.currentTarget.value })}
            />
            <TextInput
              label="Currency"
              description="Three letters"
              maxLength={3}
              value={form.currency}
              error={action.field('currency')}
              onChange={(e) => set({ currency: e.currentTarget.value.toUpperCase() })}
            />
          </Group>
          <ErrorText error={action.error} />
          <Button type="submit" w="fit-content" loading={action.busy} data-route="creditPacks.create">
            Add pack
          </Button>
        </Stack>
      </form>
    </Card>
  );
}

type Pending = { pack: Pack; kind: 'archive' | 'delete' };

export function Packs(props: SectionProps & { packs: Pack[]; can: (action: string) => boolean }) {
  const { api, catalog, reload, packs, can } = props;
  const pools = poolsOf(catalog);
  const [pending, setPending] = useState<Pending | null>(null);
  const canCreate = can('creditPacks.create');
  const canArchive = can('creditPacks.archive');
  const canDelete = can('creditPacks.delete');
  return (
    <Stack gap="xs">
      <Title order={3} size="h4" id="packs">
        Credit packs
      </Title>
      <Text size="sm" c="dimmed">
        Credits of a pool bought once (a PayPal order), on top of what plans grant; offered when an account runs out. An
        archived pack is no longer sold; orders already made still complete.
      </Text>
      {packs.length === 0 && <Hint>No credit packs yet.</Hint>}
      {canCreate && pools.length === 0 && (
        <Hint>A pack tops up a credits pool: add an entitlement of type Credits first.</Hint>
      )}
      <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }} style={{ alignItems: 'start' }}>
        {packs.map((p) => (
          <Card component="section" withBorder key={p.id} aria-label={`Credit pack ${p.id}`}>
            <Stack gap={4}>
              <Group gap={6} justify="space-between" wrap="nowrap">
                <Text fw={600}>
                  <code>{p.id}</code>
                </Text>
                <Badge size="sm" color={p.archived ? 'gray' : 'green'} variant="light">
                  {p.archived ? 'archived' : 'active'}
                </Badge>
              </Group>
              <Text size="sm">
                {p.amount.toLocaleString('en-US')} {nameOf(pools, p.pool)} for {priceText(p)}
              </Text>
              <Text size="xs" c="dimmed">
                pool <code>{p.pool}</code>
                {p.archived_at && ` · archived ${new Date(p.archived_at).toLocaleDateString('en-US')}`}
              </Text>
              {(canArchive || canDelete) && (
                <Group gap={4} justify="flex-end">
                  {!p.archived && canArchive && (
                    <Button
                      size="compact-sm"
                      variant="light"
                      color="gray"
                      aria-label={`Archive credit pack ${p.id}`}
                      data-route="creditPacks.archive"
                      onClick={() => setPending({ pack: p, kind: 'archive' })}
                    >
                      Archive
                    </Button>
                  )}
                  {canDelete && (
                    <Button
                      size="compact-sm"
                      variant="subtle"
                      color="red"
                      aria-label={`Delete credit pack ${p.id}`}
                      data-route="creditPacks.delete"
                      onClick={() => setPending({ pack: p, kind: 'delete' })}
                    >
                      Delete
                    </Button>
                  )}
                </Group>
              )}
            </Stack>
          </Card>
        ))}
        {canCreate && pools.length > 0 && <NewPack api={api} reload={reload} pools={pools} />}
      </SimpleGrid>
      {pending?.kind === 'archive' && (
        <ConfirmDialog
          opened
          title={`Archive credit pack ${pending.pack.id}?`}
          confirmLabel={`Archive credit pack ${pending.pack.id}`}
          route="creditPacks.archive"
          onClose={() => setPending(null)}
          onConfirm={async () => (await api.creditPacks.archive(pending.pack.id), await reload())}
        >
          <Text size="sm">
            Pack <code>{pending.pack.id}</code> is no longer sold: no new checkouts, and it is not offered when an
            account runs out of credits. Orders already made still complete when paid. An archived pack cannot be put
            back on sale: define a new one.
          </Text>
        </ConfirmDialog>
      )}
      {pending?.kind === 'delete' && (
        <ConfirmDialog
          opened
          title={`Delete credit pack ${pending.pack.id}?`}
          confirmLabel={`Delete credit pack ${pending.pack.id}`}
          route="creditPacks.delete"
          onClose={() => setPending(null)}
          onConfirm={async () => (await api.creditPacks.delete(pending.pack.id), await reload())}
        >
          <Text size="sm">
            Pack <code>{pending.pack.id}</code> is removed from the catalog for good. Its orders keep what they sold:
            one paid later is still granted, and a refund still takes its credits back.
          </Text>
        </ConfirmDialog>
      )}
    </Stack>
  );
}
