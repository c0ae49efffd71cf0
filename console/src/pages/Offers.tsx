// Offers: the list with live status, a new draft, the editor (OfferEditor.tsx: plans, prices, extras, order
// bumps, a live preview of the public view, publish and archive) and the funnel (views, checkouts, completed;
// revenue by plan, ref and bump).
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
import type { OffersStatsResponse } from '@offerkit/sdk';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { appApi, type AppApi } from '../api';
import { useDemo } from '../session';
import { ConfirmDialog, ErrorText, Loading, useAction, useLoad } from '../ui';
import { OfferEditor, STATUS_COLORS } from './OfferEditor';

const money = (r: Record<string, number>) =>
  Object.entries(r)
    .map(([cur, n]) => `${n.toLocaleString('en', { maximumFractionDigits: 2 })} ${cur}`)
    .join(', ') || '0';

export function OffersPage() {
  const { appId, offerId } = useParams();
  const api = appApi(appId!);
  const { data, error, reload } = useLoad(() => api.offers.list(), [appId]);
  const demo = useDemo(appId);
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
              <Table.ScrollContainer minWidth={520}>
                <Table striped highlightOnHover>
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Offer</Table.Th>
                      <Table.Th>Status</Table.Th>
                      <Table.Th ta="right">Views</Table.Th>
                      <Table.Th ta="right">Redemptions</Table.Th>
                      {!demo && (
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
                        </Table.Td>
                        <Table.Td>
                          <Badge color={STATUS_COLORS[o.live_status]}>{o.live_status}</Badge>
                        </Table.Td>
                        <Table.Td ta="right">{o.views}</Table.Td>
                        <Table.Td ta="right">{o.redemptions}</Table.Td>
                        {!demo && (
                          <Table.Td ta="right">
                            <Button
                              size="compact-xs"
                              variant="subtle"
                              color="red"
                              aria-label={`Delete offer ${o.name}`}
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
              !demo && <NewOffer api={api} onCreated={reload} />
            )}
            {doomed && (
              <ConfirmDialog
                opened
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
  const [form, setForm] = useState({ id: '', name: '', plan: '', price: 10 as number | '' });
  const action = useAction();
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
              value={form.id}
              onChange={(e) => setForm({ ...form, id: e.currentTarget.value })}
            />
            <TextInput
              label="Offer name"
              required
              value={form.name}
              onChange={(e) => setForm({ ...form, name: e.currentTarget.value })}
            />
          </Group>
          <Group grow wrap="wrap">
            <Select
              label="Plan"
              required
              data={(plans.data ?? []).map((p) => ({ value: p.id, label: p.name }))}
              value={form.plan || null}
              onChange={(v) => setForm({ ...form, plan: v ?? '' })}
            />
            <NumberInput
              label="Monthly price (USD)"
              min={0}
              value={form.price}
              onChange={(v) => setForm({ ...form, price: v === '' ? '' : Number(v) })}
            />
          </Group>
          <ErrorText error={action.error} />
          <Button type="submit" w="fit-content" loading={action.busy}>
            Create draft
          </Button>
        </Stack>
      </form>
    </Card>
  );
}

function OfferDetail({ api, offerId, onChange }: { api: AppApi; offerId: string; onChange: () => Promise<void> }) {
  const demo = useDemo(useParams().appId);
  const { data, error, reload } = useLoad(
    () =>
      Promise.all([
        api.offers.get(offerId),
        api.offers.stats(offerId),
        Promise.all([api.plans.list(), api.entitlements.list(), api.addons.list(), api.offers.list()]),
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
            readOnly={demo}
          />
          <Funnel stats={data[1]} />
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
