import { Badge, Group, Paper, Stack, Text } from '@mantine/core';
import { accountLink, SUB_COLORS } from './shared';
import { day, pendingText, resumesText, type Sub } from './text';
import { WorkflowLink } from '../../temporal';

/** The same list as cards, for a phone: the pause and renewal stay visible without scrolling sideways. */
export function SubscriptionCards({ appId, subs }: { appId: string; subs: Sub[] }) {
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
              {pendingText(sub)} <WorkflowLink id={sub.pending_change?.workflow_id}>Approval workflow</WorkflowLink>
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
          <WorkflowLink id={sub.pause?.workflow_id}>Pause workflow</WorkflowLink>
        </Paper>
      ))}
    </Stack>
  );
}
