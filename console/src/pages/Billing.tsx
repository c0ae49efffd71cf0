// Checkouts, and the app's subscriptions (GET /apps/:appId/subscriptions) with pauses and when each resumes.
import {
  Anchor,
  Badge,
  Box,
  Card,
  Group,
  Paper,
  SegmentedControl,
  Select,
  Stack,
  Table,
  Text,
  Title,
} from '@mantine/core';
import type {
  CheckoutsListQuery,
  CheckoutsListResponse,
  SubscriptionsListQuery,
  SubscriptionsListResponse,
} from '@offerkit/sdk';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { appApi } from '../api';
import { CursorPager, Loading, useLoad } from '../ui';

const CHECKOUT_COLORS: Record<string, string> = {
  created: 'yellow',
  completed: 'teal',
  cancelled: 'gray',
  expired: 'gray',
};
const SUB_COLORS: Record<string, string> = { active: 'teal', paused: 'blue', cancelled: 'gray' };
const day = (iso: string | null) => (iso ? new Date(iso).toLocaleDateString('en-CA') : '—');

/** "in 3 months", "in 5 days", "in 2 hours" (or "now" once it has passed). */
function fromNow(iso: string): string {
  const ms = Date.parse(iso) - Date.now();
  if (ms <= 0) return 'now';
  const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
  const units: [Intl.RelativeTimeFormatUnit, number][] = [
    ['month', 30 * 86_400_000],
    ['day', 86_400_000],
    ['hour', 3_600_000],
    ['minute', 60_000],
  ];
  for (const [unit, size] of units) if (ms >= size) return rtf.format(Math.round(ms / size), unit);
  return rtf.format(Math.max(1, Math.round(ms / 1000)), 'second');
}

type CheckoutStatus = NonNullable<CheckoutsListQuery['status']> | 'all';
/** `current`: no status sent, so the API lists the subscriptions that have not ended (active and paused). */
type SubStatus = NonNullable<SubscriptionsListQuery['status']> | 'current';
const SUB_FILTERS: { value: SubStatus; label: string }[] = [
  { value: 'current', label: 'Current' },
  { value: 'active', label: 'Active' },
  { value: 'paused', label: 'Paused' },
  { value: 'cancelled', label: 'Cancelled' },
  { value: 'all', label: 'All' },
];
const PAGE_SIZE = 20;

export function BillingPage() {
  return (
    <Stack>
      <Title order={2}>Checkouts and subscriptions</Title>
      <Subscriptions />
      <Checkouts />
    </Stack>
  );
}

const accountLink = (appId: string, a: string | null) =>
  a ? (
    <Anchor component={Link} to={`/apps/${appId}/accounts/${encodeURIComponent(a)}`} size="sm">
      {a}
    </Anchor>
  ) : (
    '—'
  );
const nowrap = { whiteSpace: 'nowrap' } as const;

type Sub = SubscriptionsListResponse['data'][number];

/** A plan change waiting for the buyer's approval at the provider (a downgrade, or a cancel-flow discount). */
function pendingText(sub: Sub): string | null {
  const c = sub.pending_change;
  if (!c) return null;
  const terms = `${c.price} ${c.currency}${c.discount ? ` (−${c.discount.percent}% for ${c.discount.cycles} renewals)` : ''}`;
  return `→ ${c.plan} / ${c.interval} at ${terms}, awaiting approval`;
}

/** When a paused subscription resumes, and on which plan. */
function resumesText(sub: Sub): string | null {
  if (!sub.pause?.resume_at) return null;
  return `resumes ${fromNow(sub.pause.resume_at)}${sub.pause.restore_plan ? ` on ${sub.pause.restore_plan}` : ''}`;
}

/** The same list as cards, for a phone: the pause and renewal stay visible without scrolling sideways. */
function SubscriptionCards({ appId, subs }: { appId: string; subs: Sub[] }) {
  return (
    <Stack gap="xs" hiddenFrom="sm">
      {subs.map((sub) => (
        <Paper key={sub.account_id} withBorder p="xs">
          <Group justify="space-between" wrap="nowrap">
            {accountLink(appId, sub.account_id)}
            <Badge color={SUB_COLORS[sub.status]}>{sub.status}</Badge>
          </Group>
          <Text size="sm">
            {sub.plan} / {sub.interval} · {sub.price} {sub.currency}
            {sub.discount && ` (−${sub.discount.percent}%, ${sub.discount.cycles_left} left)`}
          </Text>
          {pendingText(sub) && (
            <Text size="xs" c="dimmed">
              {pendingText(sub)}
            </Text>
          )}
          <Text size="xs" c="dimmed">
            {sub.pause?.resume_at
              ? `Paused until ${day(sub.pause.resume_at)}: ${resumesText(sub)}`
              : sub.status === 'active'
                ? `Renews ${day(sub.renews_at)}`
                : sub.cancelled_at
                  ? `Cancelled ${day(sub.cancelled_at)}`
                  : `Since ${day(sub.created_at)}`}
          </Text>
        </Paper>
      ))}
    </Stack>
  );
}

function Subscriptions() {
  const { appId } = useParams();
  const api = appApi(appId!);
  const [status, setStatus] = useState<SubStatus>('current');
  const [plan, setPlan] = useState<string | null>(null);
  // The cursors of the pages walked so far: the last one is the page shown (undefined: the first page).
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const plans = useLoad(() => api.plans.list(), [appId]);
  const subs = useLoad(
    (): PromiseLike<SubscriptionsListResponse> =>
      api.subscriptions.list({
        limit: PAGE_SIZE,
        ...(status === 'current' ? {} : { status }),
        ...(plan ? { plan } : {}),
        ...(cursor ? { cursor } : {}),
      }),
    [appId, status, plan, cursor],
  );
  const filter = (apply: () => void) => {
    apply();
    setCursors([undefined]);
  };
  const label = SUB_FILTERS.find((f) => f.value === status)!.label.toLowerCase();
  const empty =
    status === 'current' && !plan && cursors.length === 1
      ? 'No subscriptions yet. They start when a checkout completes: publish an offer on the Offers page and send ' +
        'buyers to its checkout, or let a 402 upgrade link sell one.'
      : `No ${status === 'current' || status === 'all' ? '' : `${label} `}subscriptions${plan ? ` to plan ${plan}` : ''}.` +
        (status === 'paused'
          ? ' A subscription is paused by a cancel flow’s pause offer or POST …/subscription/pause.'
          : ' Try another filter.');
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Group justify="space-between" wrap="wrap" gap="xs">
          <Title order={3} size="h5">
            Subscriptions and pauses
          </Title>
          <Group gap="xs" wrap="wrap">
            <Select
              aria-label="Plan"
              size="xs"
              w={150}
              placeholder="Every plan"
              clearable
              data={(plans.data ?? []).map((p) => ({ value: p.id, label: p.name }))}
              value={plan}
              onChange={(v) => filter(() => setPlan(v))}
            />
            <SegmentedControl
              aria-label="Subscription status"
              size="xs"
              data={SUB_FILTERS}
              value={status}
              onChange={(v) => filter(() => setStatus(v as SubStatus))}
            />
          </Group>
        </Group>
        <Loading error={subs.error}>
          {subs.data &&
            (subs.data.data.length === 0 ? (
              <Text c="dimmed">{empty}</Text>
            ) : (
              <>
                <SubscriptionCards appId={appId!} subs={subs.data.data} />
                <Box visibleFrom="sm">
                  <Table.ScrollContainer minWidth={720}>
                    <Table striped aria-label="Subscriptions">
                      <Table.Thead>
                        <Table.Tr>
                          <Table.Th>Account</Table.Th>
                          <Table.Th>Plan</Table.Th>
                          <Table.Th ta="right">Price</Table.Th>
                          <Table.Th>Status</Table.Th>
                          <Table.Th>Renews</Table.Th>
                          <Table.Th>Paused until</Table.Th>
                          <Table.Th>Since</Table.Th>
                        </Table.Tr>
                      </Table.Thead>
                      <Table.Tbody>
                        {subs.data.data.map((sub) => (
                          <Table.Tr key={sub.account_id}>
                            <Table.Td>{accountLink(appId!, sub.account_id)}</Table.Td>
                            <Table.Td>
                              {sub.plan} / {sub.interval}
                              {pendingText(sub) && (
                                <Text size="xs" c="dimmed">
                                  {pendingText(sub)}
                                </Text>
                              )}
                            </Table.Td>
                            <Table.Td ta="right" style={nowrap}>
                              {sub.price} {sub.currency}
                              {sub.discount && (
                                <Text size="xs" c="dimmed">
                                  −{sub.discount.percent}%, {sub.discount.cycles_left} left
                                </Text>
                              )}
                            </Table.Td>
                            <Table.Td miw={110}>
                              <Badge color={SUB_COLORS[sub.status]}>{sub.status}</Badge>
                            </Table.Td>
                            <Table.Td style={nowrap}>{sub.status === 'active' ? day(sub.renews_at) : '—'}</Table.Td>
                            <Table.Td aria-label={sub.pause ? `Resumes ${sub.account_id}` : undefined}>
                              {sub.pause?.resume_at ? (
                                <>
                                  {day(sub.pause.resume_at)}
                                  <Text size="xs" c="dimmed">
                                    {resumesText(sub)}
                                  </Text>
                                </>
                              ) : (
                                '—'
                              )}
                            </Table.Td>
                            <Table.Td style={nowrap}>{day(sub.created_at)}</Table.Td>
                          </Table.Tr>
                        ))}
                      </Table.Tbody>
                    </Table>
                  </Table.ScrollContainer>
                </Box>
              </>
            ))}
          {subs.data && <CursorPager cursors={cursors} setCursors={setCursors} next={subs.data.next_cursor} />}
        </Loading>
      </Stack>
    </Card>
  );
}

function Checkouts() {
  const { appId } = useParams();
  const api = appApi(appId!);
  const [status, setStatus] = useState<CheckoutStatus>('all');
  // The cursors of the pages walked so far: the last one is the page shown (undefined: the first page).
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const checkouts = useLoad(
    (): PromiseLike<CheckoutsListResponse> =>
      api.checkouts.list({ limit: 50, ...(status === 'all' ? {} : { status }), ...(cursor ? { cursor } : {}) }),
    [appId, status, cursor],
  );
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Group justify="space-between" wrap="wrap">
          <Title order={3} size="h5">
            Checkouts
          </Title>
          <SegmentedControl
            aria-label="Checkout status"
            size="xs"
            data={['all', 'created', 'completed', 'cancelled', 'expired']}
            value={status}
            onChange={(v) => {
              setStatus(v as CheckoutStatus);
              setCursors([undefined]);
            }}
          />
        </Group>
        <Loading error={checkouts.error}>
          {checkouts.data &&
            (checkouts.data.data.length === 0 ? (
              <Text c="dimmed">
                {status === 'all' && cursors.length === 1
                  ? 'No checkouts yet. Publish an offer and send buyers to its checkout, or wait for a 402 upgrade.'
                  : `No ${status} checkouts.`}
              </Text>
            ) : (
              <Table.ScrollContainer minWidth={640}>
                <Table striped aria-label="Checkouts">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Created</Table.Th>
                      <Table.Th>Account</Table.Th>
                      <Table.Th>Offer</Table.Th>
                      <Table.Th>Plan</Table.Th>
                      <Table.Th ta="right">Price</Table.Th>
                      <Table.Th>Ref</Table.Th>
                      <Table.Th>Status</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {checkouts.data.data.map((c) => (
                      <Table.Tr key={c.id}>
                        <Table.Td style={nowrap}>{day(c.created_at)}</Table.Td>
                        <Table.Td>{accountLink(appId!, c.account)}</Table.Td>
                        <Table.Td>{c.offer ?? 'regular'}</Table.Td>
                        <Table.Td>
                          {c.plan} / {c.interval}
                          {c.bumps.length > 0 && ` + ${c.bumps.map((b) => b.name).join(', ')}`}
                        </Table.Td>
                        <Table.Td ta="right" style={nowrap}>
                          {c.price} {c.currency}
                        </Table.Td>
                        <Table.Td>{c.ref ?? '—'}</Table.Td>
                        <Table.Td>
                          <Badge color={CHECKOUT_COLORS[c.status]}>{c.status}</Badge>
                        </Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </Table.ScrollContainer>
            ))}
          {checkouts.data && (
            <CursorPager cursors={cursors} setCursors={setCursors} next={checkouts.data.next_cursor} />
          )}
        </Loading>
      </Stack>
    </Card>
  );
}
