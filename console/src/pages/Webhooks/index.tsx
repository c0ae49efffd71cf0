// Webhook endpoints with their delivery logs, the app's event log (GET /apps/:appId/events, 30 days, cursor pages)
// and the event catalog with a sample payload of each type (GET /event-types): one tab each.
import { Stack, Tabs, Title } from '@mantine/core';
import { useParams, useSearchParams } from 'react-router';
import { appApi } from '../../api';
import { TABS, type Tab } from './shared';
import { Endpoints } from './Endpoints';
import { EventLog } from './EventLog';
import { EventTypes } from './EventTypes';

export function WebhooksPage() {
  const { appId } = useParams();
  const api = appApi(appId!);
  const [params, setParams] = useSearchParams();
  const tab: Tab = TABS.find((t) => t === params.get('tab')) ?? 'endpoints';
  return (
    <Stack>
      <Title order={2}>Webhooks</Title>
      <Tabs
        value={tab}
        onChange={(v) => setParams(v && v !== 'endpoints' ? { tab: v } : {}, { replace: true })}
        keepMounted={false}
      >
        <Tabs.List mb="md">
          <Tabs.Tab value="endpoints">Endpoints</Tabs.Tab>
          <Tabs.Tab value="events">Event log</Tabs.Tab>
          <Tabs.Tab value="types">Event types</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="endpoints">
          <Endpoints api={api} appId={appId!} />
        </Tabs.Panel>
        <Tabs.Panel value="events">
          <EventLog api={api} appId={appId!} />
        </Tabs.Panel>
        <Tabs.Panel value="types">
          <EventTypes />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}
