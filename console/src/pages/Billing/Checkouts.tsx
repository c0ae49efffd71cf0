// The app's checkouts, newest first, filtered by status.
import { Badge, Box, Button, Card, Group, Paper, SegmentedControl, Stack, Table, Text, Title } from '@mantine/core';
import type { CheckoutsListQuery, CheckoutsListResponse } from '@offerkit/sdk';
import { useState } from 'react';
import { useParams } from 'react-router';
import { appApi } from '../../api';
import { useCan } from '../../session';
import { ConfirmDialog, CursorPager, Loading, useLoad } from '../../ui';
import { accountLink, CHECKOUT_COLORS, nowrap } from './shared';
import { day } from './text';
import { WorkflowLink } from '../../temporal';

type CheckoutStatus = NonNullable<CheckoutsListQuery['status']> | 'all';

/** The status filter: labels capitalised like the subscriptions' filter, values as the API spells them. */
const CHECKOUT_FILTERS: { value: CheckoutStatus; label: string }[] = [
  { value: 'all', label: 'All' },
  { value: 'created', label: 'Created' },
  { value: 'completed', label: 'Completed' },
  { value: 'cancelled', label: 'Cancelled' },
  { value: 'expired', label: 'Expired' },
];
type Checkout = CheckoutsListResponse['data'][number];

/** Why a checkout ended without applying, and any refund: "cancelled" alone says too little. */
function Ended({ checkout: c }: { checkout: Checkout }) {
  if (c.status !== 'cancelled' || (!c.cancel_reason && !c.refund)) return null;
  return (
    <Text size="xs" c="dimmed">
      {c.cancel_reason}
      {c.refund?.status === 'refunded' && ` Refunded ${c.refund.amount} ${c.refund.currency ?? ''}.`}
    </Text>
  );
}

/**
 * Ends a checkout its buyer has not paid (what the 24-hour expiry does), e.g. to delete the plan it sells. One its
 * buyer already approved at the provider is not expired: the API says so and it completes.
 */
function ExpireCheckout({ checkout: c, onDone }: { checkout: Checkout; onDone: () => Promise<void> }) {
  const { appId } = useParams();
  const [open, setOpen] = useState(false);
  // Expiring changes the checkout: members and above (the route table's roles); viewers and the demo see none.
  const can = useCan(appId);
  if (!can('checkouts.expire')) return null;
  return (
    <>
      <Button size="compact-xs" variant="light" color="red" data-route="checkouts.expire" onClick={() => setOpen(true)}>
        Expire
      </Button>
      <ConfirmDialog
        opened={open}
        route="checkouts.expire"
        title={`Expire checkout ${c.id}?`}
        confirmLabel="Expire checkout"
        onClose={() => setOpen(false)}
        onConfirm={async () => {
          await appApi(appId!).checkouts.expire(c.id);
          await onDone();
        }}
      >
        <Text size="sm">
          The buyer{c.account ? ` (account ${c.account})` : ''} can no longer pay for {c.plan} / {c.interval} at{' '}
          {c.price} {c.currency} through it, and what it sells can then be deleted.
        </Text>
        <Text size="sm">
          If they already approved it at the payment provider, it is not expired: it completes, and the purchase
          applies.
        </Text>
      </ConfirmDialog>
    </>
  );
}

/** `version`: bumped when the app's test clock moved (checkouts may have expired): the list is read again. */
export function Checkouts({ version = 0 }: { version?: number }) {
  const { appId } = useParams();
  const api = appApi(appId!);
  const [status, setStatus] = useState<CheckoutStatus>('all');
  // The cursors of the pages walked so far: the last one is the page shown (undefined: the first page).
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const checkouts = useLoad(
    (): PromiseLike<CheckoutsListResponse> =>
      api.checkouts.list({ limit: 50, ...(status === 'all' ? {} : { status }), ...(cursor ? { cursor } : {}) }),
    [appId, status, cursor, version],
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
            data={CHECKOUT_FILTERS}
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
              <>
                {/* On a phone, cards: the status and the workflow link stay visible without scrolling sideways. */}
                <Stack gap="xs" hiddenFrom="sm">
                  {checkouts.data.data.map((c) => (
                    <Paper key={c.id} withBorder p="xs">
                      <Group justify="space-between" wrap="nowrap">
                        {accountLink(appId!, c.account)}
                        <Badge color={CHECKOUT_COLORS[c.status]}>{c.status}</Badge>
                      </Group>
                      <Text size="sm">
                        {c.plan} / {c.interval} · {c.price} {c.currency} · {c.offer ?? 'regular'}
                      </Text>
                      <Ended checkout={c} />
                      <Group justify="space-between">
                        <Text size="xs" c="dimmed">
                          {day(c.created_at)}
                          {c.ref ? ` · ref ${c.ref}` : ''}
                        </Text>
                        <Group gap="xs">
                          <WorkflowLink id={c.workflow_id}>Workflow</WorkflowLink>
                          {c.status === 'created' && <ExpireCheckout checkout={c} onDone={checkouts.reload} />}
                        </Group>
                      </Group>
                    </Paper>
                  ))}
                </Stack>
                <Box visibleFrom="sm">
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
                              <Ended checkout={c} />
                              <div>
                                <WorkflowLink id={c.workflow_id}>Workflow</WorkflowLink>
                              </div>
                              {c.status === 'created' && <ExpireCheckout checkout={c} onDone={checkouts.reload} />}
                            </Table.Td>
                          </Table.Tr>
                        ))}
                      </Table.Tbody>
                    </Table>
                  </Table.ScrollContainer>
                </Box>
              </>
            ))}
          {checkouts.data && (
            <CursorPager cursors={cursors} setCursors={setCursors} next={checkouts.data.next_cursor} />
          )}
        </Loading>
      </Stack>
    </Card>
  );
}
