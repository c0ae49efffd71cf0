// Offers: the list with live status, a new draft, the editor (OfferEditor.tsx: plans, prices, extras, order
// bumps, a live preview of the public view, publish and archive), the funnel (views, checkouts opened, completed;
// checkouts prepared and the 402 upgrade links among them; revenue by plan, ref and bump) and the app's 402 upgrade
// funnel (limit reached, link shown, opened, paid).
import { BarChart } from '@mantine/charts';
import {
  Badge,
  Button,
  Card,
  Code,
  Group,
  NumberInput,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
  VisuallyHidden,
} from '@mantine/core';
import type { AnalyticsUpgradesResponse, OffersStatsResponse } from '@offerkit/sdk';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { appApi, type AppApi } from '../api';
import { useCan, useDemo } from '../session';
import { ConfirmDialog, ErrorText, Loading, useAction, useLoad } from '../ui';
import { OfferEditor, STATUS_COLORS } from './OfferEditor';
import { plural } from '../plural';

const money = (r: Record<string, number>) =>
  Object.entries(r)
    .map(([cur, n]) => `${n.toLocaleString('en', { maximumFractionDigits: 2 })} ${cur}`)
    .join(', ') || '0';

export function OffersPage() {
  const { appId, offerId } = useParams();
  const api = appApi(appId!);
  const { data, error, reload } = useLoad(() => api.offers.list(), [appId]);
  const can = useCan(appId);
  const navigate = useNavigate();
  const [deleting, setDeleting] = useState<string | null>(null);
  const doomed = data?.find((o) => o.id === deleting);
  const fallingBack = data?.filter((o) => o.fallback === deleting && o.id !== deleting) ?? [];
  // Entitlements whose 402 upgrade comes from the offer: deleting it clears their `overage.offer_id`.
  const entitlements = useLoad(() => api.entitlements.list(), [appId]);
  const upgrading = entitlements.data?.filter((e) => e.overage.offer_id === deleting) ?? [];
  return (
    <Stack>
      <Title order={2}>Offers</Title>
      <Loading error={error}>
        {data && (
          <>
            {data.length === 0 ? (
              <Card withBorder>
                <Text>No offers yet. Create one below: it starts as a draft you can preview before publishing.</Text>
              </Card>
            ) : (
              // On a phone the counts move under the name, so the row's Delete stays on screen without scrolling.
              <Table.ScrollContainer minWidth={0}>
                <Table striped highlightOnHover>
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Offer</Table.Th>
                      <Table.Th>Status</Table.Th>
                      <Table.Th ta="right" visibleFrom="sm">
                        Views
                      </Table.Th>
                      <Table.Th ta="right" visibleFrom="sm">
                        Redemptions
                      </Table.Th>
                      {can('offers.delete') && (
                        <Table.Th>
                          <VisuallyHidden>Actions</VisuallyHidden>
                        </Table.Th>
                      )}
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {data.map((o) => (
                      <Table.Tr key={o.id} bg={o.id === offerId ? 'indigo.0' : undefined}>
                        <Table.Td>
                          <Link to={`/apps/${appId}/offers/${encodeURIComponent(o.id)}`}>{o.name}</Link>
                          <Text size="xs" c="dimmed">
                            {o.id}
                          </Text>
                          <Text size="xs" c="dimmed" hiddenFrom="sm">
                            {plural(o.views, 'view')} · {plural(o.redemptions, 'redemption')}
                          </Text>
                        </Table.Td>
                        <Table.Td>
                          <Badge color={STATUS_COLORS[o.live_status]}>{o.live_status}</Badge>
                        </Table.Td>
                        <Table.Td ta="right" visibleFrom="sm">
                          {o.views}
                        </Table.Td>
                        <Table.Td ta="right" visibleFrom="sm">
                          {o.redemptions}
                        </Table.Td>
                        {can('offers.delete') && (
                          <Table.Td ta="right">
                            <Button
                              size="compact-xs"
                              variant="subtle"
                              color="red"
                              aria-label={`Delete offer ${o.name}`}
                              data-route="offers.delete"
                              onClick={() => {
                                setDeleting(o.id);
                                void entitlements.reload();
                              }}
                            >
                              Delete
                            </Button>
                          </Table.Td>
                        )}
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </Table.ScrollContainer>
            )}
            {offerId ? (
              <OfferDetail key={offerId} api={api} offerId={offerId} onChange={reload} />
            ) : (
              can('offers.create') && <NewOffer api={api} onCreated={reload} />
            )}
            {doomed && (
              <ConfirmDialog
                opened
                route="offers.delete"
                title={`Delete the offer ${doomed.name}?`}
                confirmLabel="Delete the offer"
                onClose={() => setDeleting(null)}
                onConfirm={async () => {
                  await api.offers.delete(doomed.id);
                  void entitlements.reload();
                  if (doomed.id === offerId) navigate(`/apps/${appId}/offers`);
                  await reload();
                }}
              >
                <Text size="sm">
                  The offer <Code>{doomed.id}</Code> is removed and its link stops working. Buyers who already bought
                  through it keep their price and extras; their checkouts hold the terms.
                  {doomed.live_status === 'active'
                    ? ' To stop new purchases but keep the record, archive it instead.'
                    : ''}
                </Text>
                <Text size="sm">
                  {fallingBack.length
                    ? `Offers that fall back to it lose their fallback: ${fallingBack.map((o) => o.name).join(', ')}.`
                    : 'No other offer falls back to it.'}
                </Text>
                {upgrading.length > 0 && (
                  <Text size="sm">
                    {`Entitlements whose upgrade it offers at their limit fall back to regular prices: ${upgrading
                      .map((e) => e.name)
                      .join(', ')}.`}
                  </Text>
                )}
              </ConfirmDialog>
            )}
          </>
        )}
      </Loading>
    </Stack>
  );
}

function NewOffer({ api, onCreated }: { api: AppApi; onCreated: () => Promise<void> }) {
  const { appId } = useParams();
  const navigate = useNavigate();
  const plans = useLoad(() => api.plans.list(), [api]);
  // The price starts as the picked plan's regular monthly price (its pricing card's), empty when it has none, and
  // follows the plan picked until the person types a price of their own.
  const [form, setForm] = useState({ id: '', name: '', plan: '', price: '' as number | '', typed: false });
  const regularPrice = (planId: string): number | '' =>
    plans.data?.find((p) => p.id === planId)?.pricingCard?.monthlyPrice ?? '';
  const action = useAction(['id', 'name', 'plans.0.plan', 'plans.0.prices']);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    await action.run(async () => {
      const o = await api.offers.create({
        id: form.id,
        name: form.name,
        plans: [{ plan: form.plan, prices: [{ interval: 'month', amount: Number(form.price || 0), currency: 'USD' }] }],
      });
      await onCreated();
      navigate(`/apps/${appId}/offers/${encodeURIComponent(o.id)}`);
    });
  };
  return (
    <Card withBorder maw={560}>
      <form onSubmit={submit}>
        <Stack gap="xs">
          <Title order={3} size="h5">
            New offer
          </Title>
          <Group grow wrap="wrap">
            <TextInput
              label="Offer id"
              description="The slug in links"
              required
              error={action.field('id')}
              value={form.id}
              onChange={(e) => setForm({ ...form, id: e.currentTarget.value })}
            />
            <TextInput
              label="Offer name"
              required
              error={action.field('name')}
              value={form.name}
              onChange={(e) => setForm({ ...form, name: e.currentTarget.value })}
            />
          </Group>
          <Group grow wrap="wrap">
            <Select
              label="Plan"
              required
              error={action.field('plans.0.plan')}
              data={(plans.data ?? []).map((p) => ({ value: p.id, label: p.name }))}
              value={form.plan || null}
              onChange={(v) =>
                setForm({ ...form, plan: v ?? '', price: form.typed ? form.price : regularPrice(v ?? '') })
              }
            />
            <NumberInput
              label="Monthly price (USD)"
              min={0}
              error={action.field('plans.0.prices')}
              value={form.price}
              description="Starts at the plan's regular monthly price"
              onChange={(v) => setForm({ ...form, price: v === '' ? '' : Number(v), typed: v !== '' })}
            />
          </Group>
          <ErrorText error={action.error} />
          <Button type="submit" w="fit-content" loading={action.busy} data-route="offers.create">
            Create draft
          </Button>
        </Stack>
      </form>
    </Card>
  );
}

function OfferDetail({ api, offerId, onChange }: { api: AppApi; offerId: string; onChange: () => Promise<void> }) {
  const { appId } = useParams();
  const demo = useDemo(appId);
  const can = useCan(appId);
  const { data, error, reload } = useLoad(
    () =>
      Promise.all([
        api.offers.get(offerId),
        api.offers.stats(offerId),
        Promise.all([api.plans.list(), api.entitlements.list(), api.addons.list(), api.offers.list()]),
        api.analytics.upgrades({ interval: '30d' }),
      ]),
    [api, offerId],
  );
  const refresh = async () => {
    await reload();
    await onChange();
  };
  return (
    <Loading error={error}>
      {data && (
        <Stack>
          {/* A save gives a new updated_at, so the editor starts again from the offer as the API stored it. */}
          <OfferEditor
            key={data[0].updated_at}
            api={api}
            offer={data[0]}
            catalog={{ plans: data[2][0], entitlements: data[2][1], addons: data[2][2], offers: data[2][3] }}
            onSaved={refresh}
            readOnly={demo ? 'demo' : can('offers.update') ? false : 'role'}
            can={can}
          />
          <Funnel stats={data[1]} />
          <UpgradeFunnel funnel={data[3]} />
        </Stack>
      )}
    </Loading>
  );
}

function Funnel({ stats }: { stats: OffersStatsResponse }) {
  const steps = [
    { step: 'Views', count: stats.views },
    { step: 'Checkouts', count: stats.checkouts },
    { step: 'Completed', count: stats.completed },
  ];
  return (
    <Card withBorder>
      <Stack gap="sm">
        <Group justify="space-between" wrap="wrap">
          <Title order={3} size="h5">
            Funnel
          </Title>
          <Text size="sm" aria-label="Conversion">
            Conversion {(stats.conversion * 100).toFixed(1)}% · revenue {money(stats.revenue)}
          </Text>
        </Group>
        <BarChart h={180} data={steps} dataKey="step" series={[{ name: 'count', color: 'indigo.6' }]} />
        <Figures
          label="Checkouts"
          items={[
            ['Prepared', stats.prepared, 'every checkout made, opened or not'],
            ['Opened', stats.checkouts, 'a buyer opened the approval link, or paid'],
            ['Completed', stats.completed, 'paid'],
          ]}
        />
        <Figures
          label="Upgrade links"
          items={[
            ['Prepared', stats.upgrade_links.prepared, 'made by a 402 for this offer'],
            ['Opened', stats.upgrade_links.opened, 'the buyer opened it'],
            ['Completed', stats.upgrade_links.completed, 'paid'],
          ]}
        />
        <SimpleGrid cols={{ base: 1, sm: 3 }}>
          <Breakdown
            title="By plan"
            rows={stats.by_plan.map((r) => [r.plan, r.checkouts, r.completed, money(r.revenue)])}
          />
          <Breakdown
            title="By ref"
            rows={stats.by_ref.map((r) => [r.ref, r.checkouts, r.completed, money(r.revenue)])}
          />
          <Breakdown title="By bump" rows={stats.by_bump.map((r) => [r.bump, '', r.completed, money(r.revenue)])} />
        </SimpleGrid>
      </Stack>
    </Card>
  );
}

/** A row of labelled figures (each readable by its label: "<group> <name>"). */
function Figures({ label, items }: { label: string; items: [string, number, string][] }) {
  return (
    <Stack gap={4}>
      <Text fw={600} size="sm">
        {label}
      </Text>
      <SimpleGrid cols={{ base: 3 }} spacing="xs">
        {items.map(([name, value, hint]) => (
          <Card key={name} withBorder padding="xs" radius="sm" aria-label={`${label} ${name.toLowerCase()}`}>
            <Text size="xs" c="dimmed">
              {name}
            </Text>
            <Text fw={700} size="lg">
              {value}
            </Text>
            <Text size="xs" c="dimmed" visibleFrom="sm">
              {hint}
            </Text>
          </Card>
        ))}
      </SimpleGrid>
    </Stack>
  );
}

/** The app's 402 upgrade funnel (`GET /apps/:appId/analytics/upgrades`): limit reached → link shown → opened → paid. */
function UpgradeFunnel({ funnel }: { funnel: AnalyticsUpgradesResponse }) {
  const steps = [
    { step: 'Limit reached', count: funnel.limit_reached },
    { step: 'Link shown', count: funnel.link_shown },
    { step: 'Opened', count: funnel.opened },
    { step: 'Paid', count: funnel.paid },
  ];
  const rate = funnel.limit_reached ? `${((funnel.paid / funnel.limit_reached) * 100).toFixed(1)}%` : '—';
  return (
    <Card withBorder>
      <Stack gap="sm">
        <Group justify="space-between" wrap="wrap">
          <Title order={3} size="h5">
            Upgrade funnel (402), last 30 days
          </Title>
          <Text size="sm" aria-label="Upgrade conversion">
            Limit to paid {rate} · revenue {money(funnel.revenue)}
          </Text>
        </Group>
        <Text size="sm" c="dimmed">
          Every usage call refused at a blocking limit that offered an upgrade, across the app: whether the answer
          carried a link, whether the person opened it, and whether they paid.
        </Text>
        <BarChart h={180} data={steps} dataKey="step" series={[{ name: 'count', color: 'teal.6' }]} />
        <SimpleGrid cols={{ base: 2, sm: 4 }} spacing="xs">
          {steps.map((s) => (
            <Card
              key={s.step}
              withBorder
              padding="xs"
              radius="sm"
              aria-label={`Upgrade funnel ${s.step.toLowerCase()}`}
            >
              <Text size="xs" c="dimmed">
                {s.step}
              </Text>
              <Text fw={700} size="lg">
                {s.count}
              </Text>
            </Card>
          ))}
        </SimpleGrid>
        {funnel.by_entitlement.length ? (
          <Table fz="xs" aria-label="Upgrade funnel by entitlement">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Entitlement</Table.Th>
                <Table.Th ta="right">Limit reached</Table.Th>
                <Table.Th ta="right">Link shown</Table.Th>
                <Table.Th ta="right">Opened</Table.Th>
                <Table.Th ta="right">Paid</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {funnel.by_entitlement.map((r) => (
                <Table.Tr key={r.entitlement}>
                  <Table.Td>{r.entitlement}</Table.Td>
                  <Table.Td ta="right">{r.limit_reached}</Table.Td>
                  <Table.Td ta="right">{r.link_shown}</Table.Td>
                  <Table.Td ta="right">{r.opened}</Table.Td>
                  <Table.Td ta="right">{r.paid}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        ) : (
          <Text size="sm" c="dimmed">
            No limit reached in the last 30 days.
          </Text>
        )}
      </Stack>
    </Card>
  );
}

function Breakdown({ title, rows }: { title: string; rows: (string | number)[][] }) {
  return (
    <Stack gap={4}>
      <Text fw={600} size="sm">
        {title}
      </Text>
      {rows.length === 0 ? (
        <Text size="sm" c="dimmed">
          Nothing yet
        </Text>
      ) : (
        <Table fz="xs" aria-label={title}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th />
              <Table.Th ta="right">Checkouts</Table.Th>
              <Table.Th ta="right">Paid</Table.Th>
              <Table.Th ta="right">Revenue</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((r) => (
              <Table.Tr key={String(r[0])}>
                {r.map((c, i) => (
                  <Table.Td key={i} ta={i ? 'right' : undefined}>
                    {c}
                  </Table.Td>
                ))}
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Stack>
  );
}
