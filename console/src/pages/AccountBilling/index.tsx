// The account page's billing: the subscription's state in words (a pause with its resume date, a cancellation at the
// period end, a failed payment with its retry and grace dates, a change waiting for approval or scheduled for the
// renewal), the intents the person's role and the state allow, each in a dialog, and the account's timeline. Every
// intent goes to the account's actor through the API; the page reloads the subscription and the timeline after each.
import { Badge, Button, Card, Group, Stack, Text, Title } from '@mantine/core';
import type { Subscription } from '@offerkit/sdk';
import { useState } from 'react';
import { useDemo, useSession } from '../../session';
import { WorkflowLink } from '../../temporal';
import { Dated } from '../Billing/shared';
import { changeTexts, datesText, shownStatus, STATUS_COLORS } from '../Billing/text';
import {
  CancelDialog,
  ChangePlanDialog,
  PauseDialog,
  ResumeDialog,
  RetryDialog,
  WithdrawDialog,
  type DialogProps,
} from './dialogs';
import { offeredIntents, type Step } from './words';

export { BillingTimeline } from './Timeline';

/**
 * Whether the person may ask for billing intents on this app: every one is a write of the route table, so members and
 * above (src/http/route.ts `role`), and never on the read-only demo. The one role check of the page.
 */
function useMayAskIntents(appId: string): boolean {
  const { me } = useSession();
  const demo = useDemo(appId);
  const roles = me.workspaces.filter((w) => w.apps.some((a) => a.id === appId)).map((w) => w.role);
  return !demo && roles.some((r) => r !== 'viewer');
}

type Open =
  { kind: 'change'; replace: boolean } | { kind: 'withdraw' | 'pause' | 'resume' | 'cancel' | 'retry' } | null;

/** The dialog a refusal's step opens. */
const stepDialog = (step: Step): Open => {
  switch (step) {
    case 'withdraw':
      return { kind: 'withdraw' };
    case 'replace':
      return { kind: 'change', replace: true };
    case 'resume':
    case 'undo_cancel':
      return { kind: 'resume' };
    case 'retry':
      return { kind: 'retry' };
    case 'cancel':
      return { kind: 'cancel' };
  }
};

export function SubscriptionCard({
  appId,
  accountId,
  sub,
  onChanged,
}: {
  appId: string;
  accountId: string;
  sub: Subscription | null;
  onChanged: () => void;
}) {
  const mayAsk = useMayAskIntents(appId);
  const [open, setOpen] = useState<Open>(null);
  const offered = offeredIntents(sub);
  const can = (i: Parameters<typeof offered.intents.has>[0]) => mayAsk && offered.intents.has(i);
  // The actions the subscription offers now, in this order; each names the route it asks (the role walk reads it).
  const actions: { intent: Parameters<typeof can>[0]; route: string; label: string; open: Open; color?: string }[] = [
    {
      intent: 'change',
      route: 'subscriptions.change',
      label: 'Change plan',
      open: { kind: 'change', replace: offered.replaces },
    },
    {
      intent: 'withdraw',
      route: 'subscriptions.withdrawChange',
      label: 'Withdraw the change',
      open: { kind: 'withdraw' },
      color: 'orange',
    },
    { intent: 'pause', route: 'subscriptions.pause', label: 'Pause', open: { kind: 'pause' } },
    {
      intent: 'resume',
      route: 'subscriptions.resume',
      label: offered.undoesCancel ? 'Undo cancellation' : 'Resume',
      open: { kind: 'resume' },
    },
    { intent: 'retry', route: 'subscriptions.retryPayment', label: 'Retry payment', open: { kind: 'retry' } },
    {
      intent: 'cancel_now',
      route: 'subscriptions.cancel',
      label: 'Cancel subscription',
      open: { kind: 'cancel' },
      color: 'red',
    },
  ];
  if (!sub)
    return (
      <Card withBorder>
        <Title order={3} size="h4" mb="xs">
          Subscription
        </Title>
        <Text size="sm" c="dimmed">
          No subscription: one starts when a checkout of this account completes.
        </Text>
      </Card>
    );
  const status = shownStatus(sub);
  const props: Omit<DialogProps, 'opened'> = {
    appId,
    accountId,
    sub,
    offered,
    onClose: () => setOpen(null),
    onChanged,
    onStep: (s) => setOpen(stepDialog(s)),
  };
  return (
    <Card withBorder component="section" aria-label="Subscription">
      <Stack gap={6}>
        <Group justify="space-between" gap="xs">
          <Title order={3} size="h4">
            Subscription
          </Title>
          <Badge color={STATUS_COLORS[status]} aria-label="Subscription status">
            {status}
          </Badge>
        </Group>
        <Text size="sm">
          {sub.plan} / {sub.interval} · {sub.price} {sub.currency}
          {sub.discount && ` (−${sub.discount.percent}%, ${sub.discount.cycles_left} renewals left)`}
        </Text>
        <Text size="sm" aria-label="Subscription dates">
          <Dated text={datesText(sub)} />
        </Text>
        {sub.pause?.reason && (
          <Text size="xs" c="dimmed">
            Reason: {sub.pause.reason}
          </Text>
        )}
        {sub.dunning && (
          <Text size="xs" c="dimmed">
            {sub.dunning.failures} failed payment{sub.dunning.failures === 1 ? '' : 's'}
            {sub.dunning.outstanding !== null && `, ${sub.dunning.outstanding} ${sub.currency} outstanding`}
            {sub.dunning.on_free_plan && '; the account is on the free plan until a payment goes through'}
          </Text>
        )}
        {changeTexts(sub).map((t) => (
          <Text key={t} size="sm" aria-label="Plan change">
            <Dated text={t} />
          </Text>
        ))}
        <WorkflowLink id={sub.workflow_id} size="sm">
          Account actor workflow
        </WorkflowLink>
        {mayAsk && offered.intents.size > 0 && (
          <Group gap="xs" mt="xs" role="group" aria-label="Subscription actions">
            {actions.map(
              (a) =>
                can(a.intent) && (
                  <Button
                    key={a.intent}
                    size="xs"
                    variant="light"
                    color={a.color}
                    data-route={a.route}
                    onClick={() => setOpen(a.open)}
                  >
                    {a.label}
                  </Button>
                ),
            )}
          </Group>
        )}
      </Stack>
      {mayAsk && (
        <>
          {/* Mounted while open only: each opening starts from the subscription as it is now. */}
          {open?.kind === 'change' && <ChangePlanDialog {...props} opened replace={open.replace} />}
          {open?.kind === 'withdraw' && <WithdrawDialog {...props} opened />}
          {open?.kind === 'pause' && <PauseDialog {...props} opened />}
          {open?.kind === 'resume' && <ResumeDialog {...props} opened />}
          {open?.kind === 'cancel' && <CancelDialog {...props} opened />}
          {open?.kind === 'retry' && <RetryDialog {...props} opened />}
        </>
      )}
    </Card>
  );
}
