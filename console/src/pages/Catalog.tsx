import {
  Badge,
  Button,
  Card,
  Checkbox,
  Group,
  NumberInput,
  Select,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useParams } from 'react-router';
import { appApi, type Addon, type AppApi, type Entitlement, type Incentive, type Plan } from '../api';
import { ErrorText, Loading, useAction, useLoad } from '../ui';

interface Catalog {
  plans: Plan[];
  entitlements: Entitlement[];
  addons: Addon[];
  incentives: Incentive[];
}

export function CatalogPage() {
  const { appId } = useParams();
  const api = appApi(appId!);
  const { data, error, reload } = useLoad(async (): Promise<Catalog> => {
    const [plans, entitlements, addons, incentives] = await Promise.all([
      api.plans.list(),
      api.entitlements.list(),
      api.addons.list(),
      api.incentives.list(),
    ]);
    return { plans, entitlements, addons, incentives };
  }, [appId]);
  return (
    <Stack>
      <Title order={2}>Catalog</Title>
      <Loading error={error}>
        {data && (
          <>
            <Grid api={api} catalog={data} reload={reload} />
            <Group align="flex-start" grow preventGrowOverflow={false} wrap="wrap">
              <NewPlan api={api} reload={reload} />
              <NewEntitlement api={api} reload={reload} />
            </Group>
            <Addons catalog={data} />
            <Incentives catalog={data} />
          </>
        )}
      </Loading>
    </Stack>
  );
}

function Grid({ api, catalog, reload }: { api: AppApi; catalog: Catalog; reload: () => Promise<void> }) {
  const { plans, entitlements } = catalog;
  const action = useAction();
  if (!plans.length || !entitlements.length)
    return (
      <Card withBorder>
        <Text>
          {!plans.length ? 'No plans yet: add your first plan below (a free plan is a good start).' : ''}{' '}
          {!entitlements.length ? 'No entitlements yet: add a feature below, then set its limit per plan here.' : ''}
        </Text>
      </Card>
    );
  return (
    <Card withBorder p={0}>
      <Table.ScrollContainer minWidth={Math.max(420, 160 + plans.length * 150)}>
        <Table striped withColumnBorders aria-label="Limits per plan">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Entitlement</Table.Th>
              {plans.map((p) => (
                <Table.Th key={p.id}>
                  {p.name} {p.isFree && <Badge size="xs">free</Badge>}
                  <Text size="xs" c="dimmed">
                    {p.pricingCard?.monthlyPrice !== undefined
                      ? `${p.pricingCard.monthlyPrice} ${p.pricingCard.currency ?? ''}/mo`
                      : p.id}
                  </Text>
                </Table.Th>
              ))}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {entitlements.map((e) => (
              <Table.Tr key={e.id}>
                <Table.Th scope="row">
                  {e.name}
                  <Text size="xs" c="dimmed">
                    {e.type}
                  </Text>
                </Table.Th>
                {plans.map((p) => (
                  <Table.Td key={p.id}>
                    <Cell api={api} plan={p} ent={e} action={action} reload={reload} />
                  </Table.Td>
                ))}
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      <ErrorText error={action.error} />
    </Card>
  );
}

function Cell({
  api,
  plan,
  ent,
  action,
  reload,
}: {
  api: AppApi;
  plan: Plan;
  ent: Entitlement;
  action: ReturnType<typeof useAction>;
  reload: () => Promise<void>;
}) {
  const attached = plan.entitlements.find((x) => x.id === ent.id);
  const [value, setValue] = useState<string | number>(attached?.max ?? '');
  const [saved, setSaved] = useState(false);
  const label = `${plan.name} × ${ent.name}`;
  if (ent.type === 'boolean')
    return (
      <Checkbox
        aria-label={`${label} included`}
        checked={!!attached}
        onChange={(e) =>
          action.run(async () => {
            if (e.currentTarget.checked) await api.plans.attachEntitlement(plan.id, { id: ent.id });
            else await api.plans.detachEntitlement(plan.id, ent.id);
            await reload();
          })
        }
      />
    );
  if (!attached)
    return (
      <Button
        size="compact-xs"
        variant="light"
        aria-label={`Include ${label}`}
        onClick={() =>
          action.run(async () => (await api.plans.attachEntitlement(plan.id, { id: ent.id, max: null }), reload()))
        }
      >
        Include
      </Button>
    );
  const save = () =>
    action.run(async () => {
      const max = value === '' ? null : Number(value);
      if (max === attached.max) return;
      await api.plans.setEntitlementLimit(plan.id, ent.id, { max });
      setSaved(true);
      setTimeout(() => setSaved(false), 1500);
      await reload();
    });
  return (
    <NumberInput
      aria-label={`${label} limit`}
      size="xs"
      min={0}
      allowDecimal={false}
      placeholder="Unlimited"
      value={value}
      onChange={setValue}
      onBlur={save}
      onKeyDown={(e) => e.key === 'Enter' && save()}
      rightSection={
        saved ? (
          <Text size="xs" c="teal">
            ✓
          </Text>
        ) : undefined
      }
      w={120}
    />
  );
}

function NewPlan({ api, reload }: { api: AppApi; reload: () => Promise<void> }) {
  const [form, setForm] = useState({ id: '', name: '' });
  const action = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (await action.run(() => api.plans.create(form))) {
      setForm({ id: '', name: '' });
      await reload();
    }
  };
  return (
    <Card withBorder miw={260}>
      <form onSubmit={submit}>
        <Stack gap="xs">
          <Title order={3} size="h5">
            New plan
          </Title>
          <TextInput
            label="Plan id"
            description="Lowercase, used in code"
            required
            value={form.id}
            onChange={(e) => setForm({ ...form, id: e.currentTarget.value })}
          />
          <TextInput
            label="Plan name"
            required
            value={form.name}
            onChange={(e) => setForm({ ...form, name: e.currentTarget.value })}
          />
          <ErrorText error={action.error} />
          <Button type="submit" w="fit-content" loading={action.busy}>
            Add plan
          </Button>
        </Stack>
      </form>
    </Card>
  );
}

function NewEntitlement({ api, reload }: { api: AppApi; reload: () => Promise<void> }) {
  const [form, setForm] = useState({ id: '', name: '', type: 'usage' });
  const action = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (await action.run(() => api.entitlements.create({ ...form, type: form.type as 'usage' | 'boolean' }))) {
      setForm({ id: '', name: '', type: 'usage' });
      await reload();
    }
  };
  return (
    <Card withBorder miw={260}>
      <form onSubmit={submit}>
        <Stack gap="xs">
          <Title order={3} size="h5">
            New entitlement
          </Title>
          <TextInput
            label="Entitlement id"
            required
            value={form.id}
            onChange={(e) => setForm({ ...form, id: e.currentTarget.value })}
          />
          <TextInput
            label="Entitlement name"
            required
            value={form.name}
            onChange={(e) => setForm({ ...form, name: e.currentTarget.value })}
          />
          <Select
            label="Type"
            data={[
              { value: 'usage', label: 'Usage (metered)' },
              { value: 'boolean', label: 'Boolean (on/off)' },
            ]}
            value={form.type}
            onChange={(v) => setForm({ ...form, type: v ?? 'usage' })}
            allowDeselect={false}
          />
          <ErrorText error={action.error} />
          <Button type="submit" w="fit-content" loading={action.busy}>
            Add entitlement
          </Button>
        </Stack>
      </form>
    </Card>
  );
}

function Addons({ catalog }: { catalog: Catalog }) {
  return (
    <Card withBorder>
      <Title order={3} size="h4" mb="xs">
        Add-ons
      </Title>
      {catalog.addons.length === 0 ? (
        <Text size="sm" c="dimmed">
          No add-ons. Add-ons are extras a plan, an incentive or an order bump grants.
        </Text>
      ) : (
        <Stack gap={4}>
          {catalog.addons.map((a) => (
            <Text key={a.id} size="sm">
              <strong>{a.name}</strong> <code>{a.id}</code> · on plans:{' '}
              {catalog.plans
                .filter((p) => p.addons.includes(a.id))
                .map((p) => p.name)
                .join(', ') || 'none'}
            </Text>
          ))}
        </Stack>
      )}
    </Card>
  );
}

function Incentives({ catalog }: { catalog: Catalog }) {
  const name = (id: string) => catalog.entitlements.find((e) => e.id === id)?.name ?? id;
  return (
    <Card withBorder>
      <Title order={3} size="h4" mb="xs">
        Incentives
      </Title>
      {catalog.incentives.length === 0 ? (
        <Text size="sm" c="dimmed">
          No incentives. An incentive overrides limits on top of a plan (a promo code, a partner deal).
        </Text>
      ) : (
        <Stack gap={4}>
          {catalog.incentives.map((i) => (
            <Text key={i.id} size="sm">
              <strong>{i.name}</strong> <code>{i.id}</code>:{' '}
              {(i.entitlements ?? []).map((o) => `${name(o.id)} → ${o.max ?? 'unlimited'}`).join(', ') ||
                'no overrides'}
              {i.addons?.length ? ` · add-ons ${i.addons.join(', ')}` : ''}
            </Text>
          ))}
        </Stack>
      )}
    </Card>
  );
}
