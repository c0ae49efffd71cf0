// The event log tab: the app's events of the last 30 days, newest first, in cursor pages, each with its payload.
import { Accordion, Card, Group, Select, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import type { EventsListResponse } from '@offerkit/sdk';
import { eventTypes, type AppApi } from '../../api';
import { CursorPager, Loading, useLoad } from '../../ui';
import { Json } from './shared';

type LoggedEvent = EventsListResponse['data'][number];

/** What an event is about: the object's id (an account, a plan, a session ...), or the usage event's account. */
function subjectOf(e: LoggedEvent): string | null {
  const object = (e.data as { object?: Record<string, unknown> }).object;
  const id = object?.id ?? object?.account_id;
  return typeof id === 'string' ? id : null;
}

const EVENT_PAGE = 25;

export function EventLog({ api, appId }: { api: AppApi; appId: string }) {
  const [type, setType] = useState<string | null>(null);
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const types = useLoad(() => eventTypes(), []);
  const events = useLoad(
    (): PromiseLike<EventsListResponse> =>
      api.events.list({ limit: EVENT_PAGE, ...(type ? { type } : {}), ...(cursor ? { cursor } : {}) }),
    [appId, type, cursor],
  );
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Group justify="space-between" wrap="wrap" gap="xs">
          <div>
            <Title order={3} size="h5">
              Event log
            </Title>
            <Text size="xs" c="dimmed">
              Every event of the last 30 days, newest first, whether or not an endpoint received it. The usage threshold
              events (usage.limit_warning, usage.limit_reached) are recorded only while an enabled endpoint subscribes
              to them.
            </Text>
          </div>
          <Select
            aria-label="Event type"
            size="xs"
            w={230}
            placeholder="Every type"
            clearable
            searchable
            data={(types.data ?? []).map((t) => t.type)}
            value={type}
            onChange={(v) => {
              setType(v);
              setCursors([undefined]);
            }}
          />
        </Group>
        <Loading error={events.error}>
          {events.data &&
            (events.data.data.length === 0 ? (
              <Text c="dimmed" size="sm">
                {type
                  ? `No ${type} events in the last 30 days. Clear the filter to see the others.`
                  : 'No events in the last 30 days. Events are recorded whenever something changes: create an ' +
                    'account from your backend (POST /apps/:appId/namespaces) or add a plan on the Catalog page, ' +
                    'and the first one shows up here.'}
              </Text>
            ) : (
              <Accordion variant="contained" aria-label="Events">
                {events.data.data.map((e) => (
                  <Accordion.Item key={e.id} value={e.id}>
                    <Accordion.Control aria-label={`Event ${e.type} ${e.id}`}>
                      <Group gap="xs" wrap="wrap">
                        <Text size="sm" fw={600}>
                          {e.type}
                        </Text>
                        {subjectOf(e) && (
                          <Text size="sm" ff="monospace" style={{ wordBreak: 'break-all' }}>
                            {subjectOf(e)}
                          </Text>
                        )}
                        <Text size="xs" c="dimmed">
                          {new Date(e.created_at).toLocaleString()}
                        </Text>
                      </Group>
                    </Accordion.Control>
                    <Accordion.Panel>
                      <Json value={e} label={`Payload of ${e.id}`} />
                    </Accordion.Panel>
                  </Accordion.Item>
                ))}
              </Accordion>
            ))}
          {events.data && <CursorPager cursors={cursors} setCursors={setCursors} next={events.data.next_cursor} />}
        </Loading>
      </Stack>
    </Card>
  );
}
