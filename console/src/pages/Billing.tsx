// Checkouts, and the subscriptions they started with pauses and when each resumes. The API has no app-wide
// subscription list: the subscriptions shown are those of the accounts behind the newest completed checkouts.
import { Badge, Card, Group, SegmentedControl, Stack, Table, Text, Title } from '@mantine/core';
import type { CheckoutsListQuery, SubscriptionsGetResponse } from '@offerkit/sdk';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { appApi } from '../api';
import { Loading, useLoad } from '../ui';

const CHECKOUT_COLORS: Record<string, string> = {
  created: 'yellow',
  completed: 'teal',
  cancelled: 'gray',
  expired: 'gray',
};
const SUB_COLORS: Record<string, string> = { active: 'teal', paused: 'blue', cancelled: 'gray' };
const day = (iso: string | null) => (iso ? new Date(iso).toLocaleDateString('en-CA') : '—');

type Status = NonNullable<CheckoutsListQuery['status']> | 'all';

export function BillingPage() {
  const { appId } = useParams();
  const api = appApi(appId!);
  const [status, setStatus] = useState<Status>('all');
  const checkouts = useLoad(
    () => api.checkouts.list({ limit: 50, ...(status === 'all' ? {} : { status }) }),
    [appId, status],
  );
  const subs = useLoad(async () => {
    const done = await api.checkouts.list({ status: 'completed', limit: 50 });
    const accounts = [...new Set(done.data.map((c) => c.account).filter((a): a is string => !!a))].slice(0, 20);
    const found = await Promise.all(
      accounts.map((a) =>
        api.subscriptions.get(a).then(
          (s) => ({ account: a, sub: s as SubscriptionsGetResponse }),
          () => null,
        ),
      ),
    );
    return found.filter((x) => x !== null);
  }, [appId]);
  const link = (a: string | null) =>
    a ? <Link to={`/apps/${appId}/accounts/${encodeURIComponent(a)}`}>{a}</Link> : '—';
  return (
    <Stack>
      <Title order={2}>Checkouts and subscriptions</Title>
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
              onChange={(v) => setStatus(v as Status)}
            />
          </Group>
          <Loading error={checkouts.error}>
            {checkouts.data &&
              (checkouts.data.data.length === 0 ? (
                <Text c="dimmed">
                  No checkouts yet. Publish an offer and send buyers to its checkout, or wait for a 402 upgrade.
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
                          <Table.Td>{day(c.created_at)}</Table.Td>
                          <Table.Td>{link(c.account)}</Table.Td>
                          <Table.Td>{c.offer ?? 'regular'}</Table.Td>
                          <Table.Td>
                            {c.plan} / {c.interval}
                            {c.bumps.length > 0 && ` + ${c.bumps.map((b) => b.name).join(', ')}`}
                          </Table.Td>
                          <Table.Td ta="right">
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
          </Loading>
        </Stack>
      </Card>
      <Card withBorder>
        <Stack gap="xs">
          <Title order={3} size="h5">
            Subscriptions and pauses
          </Title>
          <Loading error={subs.error}>
            {subs.data &&
              (subs.data.length === 0 ? (
                <Text c="dimmed">No subscriptions yet: they start when a checkout completes.</Text>
              ) : (
                <Table.ScrollContainer minWidth={600}>
                  <Table striped aria-label="Subscriptions">
                    <Table.Thead>
                      <Table.Tr>
                        <Table.Th>Account</Table.Th>
                        <Table.Th>Plan</Table.Th>
                        <Table.Th ta="right">Price</Table.Th>
                        <Table.Th>Status</Table.Th>
                        <Table.Th>Renews</Table.Th>
                        <Table.Th>Resumes</Table.Th>
                      </Table.Tr>
                    </Table.Thead>
                    <Table.Tbody>
                      {subs.data.map(({ account, sub }) => (
                        <Table.Tr key={sub.id}>
                          <Table.Td>{link(account)}</Table.Td>
                          <Table.Td>
                            {sub.plan} / {sub.interval}
                          </Table.Td>
                          <Table.Td ta="right">
                            {sub.price} {sub.currency}
                            {sub.discount && ` (−${sub.discount.percent}%, ${sub.discount.cycles_left} left)`}
                          </Table.Td>
                          <Table.Td>
                            <Badge color={SUB_COLORS[sub.status]}>{sub.status}</Badge>
                          </Table.Td>
                          <Table.Td>{sub.status === 'active' ? day(sub.renews_at) : '—'}</Table.Td>
                          <Table.Td>{sub.pause ? day(sub.pause.resume_at) : '—'}</Table.Td>
                        </Table.Tr>
                      ))}
                    </Table.Tbody>
                  </Table>
                </Table.ScrollContainer>
              ))}
          </Loading>
        </Stack>
      </Card>
    </Stack>
  );
}
