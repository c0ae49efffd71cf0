// The limits grid: plans × entitlements (a limit per usage entitlement, a tick per feature, the credits a month a
// plan grants on a credits pool) and plans × add-ons.
import { Badge, Button, Card, Checkbox, CloseButton, Group, NumberInput, Table, Text } from '@mantine/core';
import { useState } from 'react';
import type { AppApi, Entitlement, Plan } from '../../api';
import { ErrorText, useAction } from '../../ui';
import { EditableArea, type SectionProps } from './shared';

export function Grid({ api, catalog, reload, canEdit }: SectionProps) {
  const { plans, entitlements, addons } = catalog;
  const action = useAction();
  if (!plans.length || (!entitlements.length && !addons.length))
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
      <EditableArea canEdit={canEdit}>
        <Table.ScrollContainer minWidth={Math.max(420, 160 + plans.length * 175)}>
          <Table striped withColumnBorders aria-label="Limits per plan">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Entitlement / add-on</Table.Th>
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
                      {e.type === 'credits' ? 'credits pool · granted a month' : e.type}
                    </Text>
                  </Table.Th>
                  {plans.map((p) => (
                    <Table.Td key={p.id}>
                      <Cell api={api} plan={p} ent={e} action={action} reload={reload} />
                    </Table.Td>
                  ))}
                </Table.Tr>
              ))}
              {addons.map((a) => (
                <Table.Tr key={`addon:${a.id}`}>
                  <Table.Th scope="row">
                    {a.name}
                    <Text size="xs" c="dimmed">
                      add-on
                    </Text>
                  </Table.Th>
                  {plans.map((p) => (
                    <Table.Td key={p.id}>
                      <Checkbox
                        aria-label={`${p.name} × ${a.name} included`}
                        checked={p.addons.includes(a.id)}
                        onChange={(e) => {
                          const on = e.currentTarget.checked;
                          void action.run(async () => {
                            if (on) await api.plans.attachAddon(p.id, { id: a.id });
                            else await api.plans.detachAddon(p.id, a.id);
                            await reload();
                          });
                        }}
                      />
                    </Table.Td>
                  ))}
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      </EditableArea>
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
  // On a pool the limit is the plan's monthly grant (docs/billing.md "Credits"); empty: unlimited, nothing debited.
  const pool = ent.type === 'credits';
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
    <Group gap={4} wrap="nowrap">
      <NumberInput
        aria-label={pool ? `${label} credits a month` : `${label} limit`}
        size="xs"
        min={0}
        allowDecimal={false}
        placeholder="Unlimited"
        thousandSeparator={pool ? ',' : undefined}
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
      <CloseButton
        size="sm"
        aria-label={`Exclude ${label}`}
        title={`Take ${ent.name} off ${plan.name}`}
        onClick={() => action.run(async () => (await api.plans.detachEntitlement(plan.id, ent.id), await reload()))}
      />
    </Group>
  );
}
