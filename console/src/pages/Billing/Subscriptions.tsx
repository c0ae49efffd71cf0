// The app's subscriptions, filtered by status and plan, as a table on a desktop and as cards on a phone.
import { Badge, Box, Card, Group, Select, SegmentedControl, Stack, Table, Text, Title } from '@mantine/core';
import type { SubscriptionsListQuery, SubscriptionsListResponse } from '@offerkit/sdk';
import { useState } from 'react';
import { useParams } from 'react-router';
import { appApi } from '../../api';
import { CursorPager, Loading, useLoad } from '../../ui';
import { accountLink, Dated, nowrap, PAGE_SIZE } from './shared';
import { SubscriptionCards } from './SubscriptionCards';
import { changeTexts, day, resumesText, shownStatus, STATUS_COLORS, type Sub } from './text';
import { WorkflowLink } from '../../temporal';

/** `current`: no status sent, so the API lists the subscriptions that have not ended (active, paused, past due). */
type SubStatus = NonNullable<SubscriptionsListQuery['status']> | 'current';
const SUB_FILTERS: { value: SubStatus; label: string }[] = [
  { value: 'current', label: 'Current' },
  { value: 'active', label: 'Active' },
  { value: 'paused', label: 'Paused' },
  { value: 'past_due', label: 'Past due' },
  { value: 'cancelled', label: 'Cancelled' },
  { value: 'all', label: 'All' },
];

/** `version`: bumped when the app's test clock moved (renewals, pause ends): the list is read again. */
export function Subscriptions({ version = 0 }: { version?: number }) {
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
    [appId, status, plan, cursor, version],
  );
  const filter = (apply: () => void) => {
    apply();
    setCursors([undefined]);
  };
  const label = SUB_FILTERS.find((f) => f.value === status)!.label.toLowerCase();
  /** What the renewal column says: the renewal, or the date that replaces it (a cancellation, a failed payment). */
  const renewal = (sub: Sub) =>
    sub.status === 'past_due'
      ? `past due since ${day(sub.dunning?.since ?? sub.last_payment_failed_at)}`
      : sub.status !== 'active'
        ? '—'
        : sub.cancel_at
          ? `cancels ${day(sub.cancel_at)}`
          : day(sub.renews_at);
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
              visibleFrom="sm"
              data={SUB_FILTERS}
              value={status}
              onChange={(v) => filter(() => setStatus(v as SubStatus))}
            />
            {/* Six statuses do not fit a phone's width side by side: a list there. */}
            <Select
              aria-label="Subscription status"
              size="xs"
              w={150}
              hiddenFrom="sm"
              allowDeselect={false}
              data={SUB_FILTERS}
              value={status}
              onChange={(v) => v && filter(() => setStatus(v as SubStatus))}
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
                              {changeTexts(sub).map((t) => (
                                <Text key={t} size="xs" c="dimmed" aria-label={`Plan change of ${sub.account_id}`}>
                                  <Dated text={t} />
                                </Text>
                              ))}
                              {sub.pending_change && (
                                <WorkflowLink id={sub.pending_change.workflow_id}>Approval workflow</WorkflowLink>
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
                              <Badge color={STATUS_COLORS[shownStatus(sub)]}>{shownStatus(sub)}</Badge>
                            </Table.Td>
                            <Table.Td style={nowrap}>{renewal(sub)}</Table.Td>
                            <Table.Td aria-label={sub.pause ? `Resumes ${sub.account_id}` : undefined}>
                              {sub.pause?.resume_at ? (
                                <>
                                  {day(sub.pause.resume_at)}
                                  <Text size="xs" c="dimmed">
                                    {resumesText(sub)}
                                  </Text>
                                  <WorkflowLink id={sub.pause.workflow_id}>Pause workflow</WorkflowLink>
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
