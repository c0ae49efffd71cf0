// Offers: the list with live status, an editor with a live preview of the public view (draft-preview stores
// nothing), publish and archive, and the funnel (views, checkouts, completed; revenue by plan, ref and bump).
import { BarChart } from '@mantine/charts';
import {
  Badge,
  Button,
  Card,
  Group,
  NumberInput,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Textarea,
  Title,
} from '@mantine/core';
import type {
  OffersCreateBody,
  OffersGetResponse,
  OffersPreviewDraftResponse,
  OffersStatsResponse,
} from '@offerkit/sdk';
import { useEffect, useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { appApi, type AppApi } from '../api';
import { ErrorText, Loading, useAction, useLoad } from '../ui';

type Offer = OffersGetResponse;
type PlanRow = { plan: string; month: number | ''; year: number | '' };

const STATUS_COLORS: Record<string, string> = {
  draft: 'gray',
  scheduled: 'blue',
  active: 'teal',
  expired: 'orange',
  archived: 'dark',
};

const money = (r: Record<string, number>) =>
  Object.entries(r)
    .map(([cur, n]) => `${n.toLocaleString('en', { maximumFractionDigits: 2 })} ${cur}`)
    .join(', ') || '0';

export function OffersPage() {
  const { appId, offerId } = useParams();
  const api = appApi(appId!);
  const { data, error, reload } = useLoad(() => api.offers.list(), [appId]);
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
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </Table.ScrollContainer>
            )}
            {offerId ? (
              <OfferDetail key={offerId} api={api} offerId={offerId} onChange={reload} />
            ) : (
              <NewOffer api={api} onCreated={reload} />
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

function rowsOf(o: Offer): PlanRow[] {
  return o.plans.map((p) => ({
    plan: p.plan,
    month: p.prices.find((x) => x.interval === 'month')?.amount ?? '',
    year: p.prices.find((x) => x.interval === 'year')?.amount ?? '',
  }));
}

/** The editor's fields as the API takes them (prices in the offer's first currency). */
function draftOf(o: Offer, name: string, description: string, rows: PlanRow[]): OffersCreateBody {
  const currency = o.plans[0]?.prices[0]?.currency ?? 'USD';
  return {
    name,
    description: description || null,
    plans: rows.map((r) => {
      const before = o.plans.find((p) => p.plan === r.plan);
      const prices = (['month', 'year'] as const)
        .filter((i) => r[i] !== '')
        .map((interval) => ({ interval, amount: Number(r[interval]), currency }));
      return { plan: r.plan, prices, ...(before ? { extras: before.extras } : {}) };
    }),
    bumps: o.bumps.map((b) => ({ id: b.id, name: b.name, addon: b.addon, price: b.price, currency: b.currency })),
  };
}

function OfferDetail({ api, offerId, onChange }: { api: AppApi; offerId: string; onChange: () => Promise<void> }) {
  const { data, error, reload } = useLoad(
    () => Promise.all([api.offers.get(offerId), api.offers.stats(offerId)]),
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
          <Editor api={api} offer={data[0]} onSaved={refresh} />
          <Funnel stats={data[1]} />
        </Stack>
      )}
    </Loading>
  );
}

function Editor({ api, offer, onSaved }: { api: AppApi; offer: Offer; onSaved: () => Promise<void> }) {
  const [name, setName] = useState(offer.name);
  const [description, setDescription] = useState(offer.description ?? '');
  const [rows, setRows] = useState<PlanRow[]>(rowsOf(offer));
  const [preview, setPreview] = useState<OffersPreviewDraftResponse | null>(null);
  const [previewError, setPreviewError] = useState<string | null>(null);
  const action = useAction();
  const draft = draftOf(offer, name, description, rows);
  // A preview validates like a create, so it names the offer as shareable (its id) or targeted (its account).
  const key = JSON.stringify({
    ...draft,
    ...(offer.kind === 'targeted' ? { account_id: offer.account_id } : { id: offer.id }),
  });
  // The live preview: what a buyer would see with the unsaved fields, a moment after the last keystroke.
  useEffect(() => {
    const t = setTimeout(() => {
      api.offers.previewDraft(JSON.parse(key) as OffersCreateBody).then(
        (p) => (setPreview(p), setPreviewError(null)),
        (e: Error) => setPreviewError(e.message),
      );
    }, 300);
    return () => clearTimeout(t);
  }, [api, key]);
  const setRow = (i: number, patch: Partial<PlanRow>) =>
    setRows(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  return (
    <SimpleGrid cols={{ base: 1, md: 2 }}>
      <Card withBorder>
        <Stack gap="xs">
          <Group justify="space-between">
            <Title order={3} size="h4">
              {offer.name}
            </Title>
            <Badge color={STATUS_COLORS[offer.live_status]} aria-label="Offer status">
              {offer.live_status}
            </Badge>
          </Group>
          <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} />
          <Textarea
            label="Description"
            autosize
            minRows={2}
            value={description}
            onChange={(e) => setDescription(e.currentTarget.value)}
          />
          <Table>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Plan</Table.Th>
                <Table.Th>Monthly</Table.Th>
                <Table.Th>Yearly</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((r, i) => (
                <Table.Tr key={r.plan}>
                  <Table.Td>{r.plan}</Table.Td>
                  <Table.Td>
                    <NumberInput
                      aria-label={`${r.plan} monthly price`}
                      size="xs"
                      min={0}
                      value={r.month}
                      onChange={(v) => setRow(i, { month: v === '' ? '' : Number(v) })}
                      w={90}
                    />
                  </Table.Td>
                  <Table.Td>
                    <NumberInput
                      aria-label={`${r.plan} yearly price`}
                      size="xs"
                      min={0}
                      value={r.year}
                      onChange={(v) => setRow(i, { year: v === '' ? '' : Number(v) })}
                      w={90}
                    />
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          {offer.bumps.length > 0 && (
            <Text size="sm" c="dimmed">
              Order bumps: {offer.bumps.map((b) => `${b.name} (+${b.price} ${b.currency})`).join(', ')}
            </Text>
          )}
          <ErrorText error={action.error} />
          <Group gap="xs">
            <Button
              onClick={() => action.run(async () => (await api.offers.update(offer.id, draft), await onSaved()))}
              loading={action.busy}
            >
              Save
            </Button>
            {offer.status === 'draft' && (
              <Button
                color="teal"
                onClick={() => action.run(async () => (await api.offers.publish(offer.id), await onSaved()))}
              >
                Publish
              </Button>
            )}
            {offer.status === 'active' && (
              <Button
                color="red"
                variant="light"
                onClick={() => action.run(async () => (await api.offers.archive(offer.id), await onSaved()))}
              >
                Archive
              </Button>
            )}
          </Group>
        </Stack>
      </Card>
      <Card withBorder bg="gray.0" aria-label="Live preview">
        <Stack gap="xs">
          <Text size="xs" tt="uppercase" c="dimmed" fw={700}>
            Live preview: what a buyer sees
          </Text>
          {previewError && <ErrorText error={previewError} />}
          {preview && (
            <>
              <Title order={4}>{preview.offer?.name ?? 'Regular prices'}</Title>
              {preview.offer?.description && <Text size="sm">{preview.offer.description}</Text>}
              <SimpleGrid cols={{ base: 1, xs: 2 }}>
                {preview.plans.map((p) => (
                  <Card key={p.plan.id} withBorder>
                    <Text fw={700}>{p.plan.name}</Text>
                    {p.prices.map((x) => (
                      <Text key={x.interval} size="sm">
                        <b>
                          {x.price} {x.currency}
                        </b>{' '}
                        / {x.interval}{' '}
                        {x.list_price > x.price && (
                          <Text span td="line-through" c="dimmed" size="sm">
                            {x.list_price}
                          </Text>
                        )}
                      </Text>
                    ))}
                    {p.entitlements.map((e) => (
                      <Text key={e.id} size="xs" c="dimmed">
                        {e.id}: {e.max ?? 'unlimited'}
                      </Text>
                    ))}
                  </Card>
                ))}
              </SimpleGrid>
              {preview.bumps.map((b) => (
                <Text key={b.id} size="sm">
                  ☐ Add {b.name} for {b.price} {b.currency}
                </Text>
              ))}
            </>
          )}
        </Stack>
      </Card>
    </SimpleGrid>
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
