// The account's billing timeline (GET /apps/:appId/namespaces/:accountId/timeline), newest first: each line with its
// kind, what happened, who asked, what was charged, the event sent and the workflow run that did it; "Load more"
// follows the page's cursor. `version` changes after an intent: the first page is read again.
import { Badge, Button, Card, Code, Group, Stack, Text, Timeline, Title } from '@mantine/core';
import { useEffect, useRef, useState } from 'react';
import { appApi } from '../../api';
import { ErrorText } from '../../ui';
import { WorkflowLink } from '../../temporal';
import { Dated, nowrap } from '../Billing/shared';
import { dayTime } from '../Billing/text';
import { appTimeText, KIND_COLORS, requesterText, type TimelineLine } from './words';

const PAGE = 20;

export function BillingTimeline({ appId, accountId, version }: { appId: string; accountId: string; version: number }) {
  const [lines, setLines] = useState<TimelineLine[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const latest = useRef(0);
  const load = async (cursor: string | null) => {
    const mine = ++latest.current;
    setBusy(true);
    try {
      const page = await appApi(appId).accounts.timeline(accountId, { limit: PAGE, ...(cursor ? { cursor } : {}) });
      if (mine !== latest.current) return;
      setLines((shown) => (cursor ? [...(shown ?? []), ...page.data] : page.data));
      setNext(page.next_cursor);
      setError(null);
    } catch (e) {
      if (mine === latest.current) setError((e as Error).message);
    } finally {
      if (mine === latest.current) setBusy(false);
    }
  };
  useEffect(() => {
    void load(null);
    // `load` reads only its arguments and the ids below.
  }, [appId, accountId, version]);
  return (
    <Card withBorder>
      <Title order={3} size="h4" mb="xs">
        Billing timeline
      </Title>
      <ErrorText error={error} title="Could not load" />
      {lines && lines.length === 0 && (
        <Text size="sm" c="dimmed">
          Nothing yet: intents, the provider&apos;s notifications, the account actor&apos;s dates and the events they
          sent are listed here.
        </Text>
      )}
      {lines && lines.length > 0 && (
        <Timeline bulletSize={12} lineWidth={2} role="list" aria-label="Billing timeline">
          {lines.map((l) => (
            <Timeline.Item key={l.id} role="listitem" aria-label={`Timeline line ${l.id}`} title={<Line line={l} />} />
          ))}
        </Timeline>
      )}
      {next && (
        <Group mt="sm">
          <Button size="xs" variant="default" loading={busy} onClick={() => void load(next)}>
            Load more
          </Button>
        </Group>
      )}
    </Card>
  );
}

function Line({ line: l }: { line: TimelineLine }) {
  const by = requesterText(l.by);
  const appTime = appTimeText(l);
  return (
    <Stack gap={2}>
      <Group gap="xs" wrap="wrap" align="center">
        <Badge size="sm" variant="light" color={KIND_COLORS[l.kind]}>
          {l.kind}
        </Badge>
        <Text size="sm" fw={500} style={{ overflowWrap: 'anywhere' }}>
          <Dated text={l.summary} />
        </Text>
      </Group>
      <Text size="xs" c="dimmed" style={{ overflowWrap: 'anywhere' }}>
        <span style={nowrap}>{dayTime(l.at)}</span>
        {appTime && (
          <>
            {' · app time '}
            <span style={nowrap}>{appTime}</span>
          </>
        )}
        {by && ` · by ${by}`}
        {l.amount && ` · ${l.amount.value} ${l.amount.currency} charged`}
      </Text>
      {(l.event || l.workflow) && (
        <Group gap="xs" wrap="wrap">
          {l.event && (
            <Text size="xs" c="dimmed">
              {l.event.type} <Code style={{ overflowWrap: 'anywhere' }}>{l.event.id}</Code>
            </Text>
          )}
          <WorkflowLink id={l.workflow?.id} runId={l.workflow?.run_id}>
            Workflow run
          </WorkflowLink>
        </Group>
      )}
    </Stack>
  );
}
