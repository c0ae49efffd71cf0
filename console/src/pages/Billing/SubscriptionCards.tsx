import { Badge, Group, Paper, Stack, Text } from '@mantine/core';
import { accountLink, Dated } from './shared';
import { changeTexts, datesText, shownStatus, STATUS_COLORS, type Sub } from './text';
import { WorkflowLink } from '../../temporal';

/** The same list as cards, for a phone: the dates and changes stay visible without scrolling sideways. */
export function SubscriptionCards({ appId, subs }: { appId: string; subs: Sub[] }) {
  return (
    <Stack gap="xs" hiddenFrom="sm">
      {subs.map((sub) => (
        <Paper key={sub.account_id} withBorder p="xs">
          <Group justify="space-between" wrap="nowrap">
            {accountLink(appId, sub.account_id)}
            <Badge color={STATUS_COLORS[shownStatus(sub)]}>{shownStatus(sub)}</Badge>
          </Group>
          <Text size="sm">
            {sub.plan} / {sub.interval} · {sub.price} {sub.currency}
            {sub.discount && ` (−${sub.discount.percent}%, ${sub.discount.cycles_left} left)`}
          </Text>
          {changeTexts(sub).map((t) => (
            <Text key={t} size="xs" c="dimmed" aria-label={`Plan change of ${sub.account_id}`}>
              <Dated text={t} />
            </Text>
          ))}
          <Text size="xs" c="dimmed">
            <Dated text={datesText(sub)} />
          </Text>
          <WorkflowLink id={sub.workflow_id}>Account actor workflow</WorkflowLink>
        </Paper>
      ))}
    </Stack>
  );
}
