import { Accordion, Badge, Button, Card, Code, Group, Stack, Text, TextInput, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useParams } from 'react-router';
import type { WebhooksCreateBody } from '@offerkit/sdk';
import { appApi, type AppApi } from '../api';

type EventType = WebhooksCreateBody['events'][number];
import { ErrorText, Loading, useAction, useLoad } from '../ui';

interface Endpoint {
  id: string;
  url: string;
  description: string | null;
  events: string[];
  enabled: boolean;
  disabled_reason: string | null;
  stats: { total: number; succeeded: number; failed: number; pending: number };
}

const COLORS = { pending: 'yellow', succeeded: 'teal', failed: 'red' } as const;

export function WebhooksPage() {
  const { appId } = useParams();
  const api = appApi(appId!);
  const { data, error, reload } = useLoad(() => api.webhooks.list(), [appId]);
  return (
    <Stack>
      <Title order={2}>Webhooks</Title>
      <Loading error={error}>
        {data && (
          <>
            {data.length === 0 && (
              <Card withBorder>
                <Text>No endpoints yet. Add the URL of your receiver below; every event is signed.</Text>
              </Card>
            )}
            <Accordion variant="separated">
              {data.map((e) => (
                <Accordion.Item key={e.id} value={e.id}>
                  <Accordion.Control>
                    <Group gap="xs" wrap="wrap">
                      <Text size="sm" fw={600} style={{ wordBreak: 'break-all' }}>
                        {e.url}
                      </Text>
                      <Badge color={e.enabled ? 'teal' : 'gray'}>{e.enabled ? 'enabled' : 'disabled'}</Badge>
                      <Text size="xs" c="dimmed">
                        7 days: {e.stats.succeeded} ok · {e.stats.failed} failed · {e.stats.pending} pending
                      </Text>
                    </Group>
                  </Accordion.Control>
                  <Accordion.Panel>
                    <Deliveries api={api} endpoint={e} onChange={reload} />
                  </Accordion.Panel>
                </Accordion.Item>
              ))}
            </Accordion>
            <NewEndpoint api={api} reload={reload} />
          </>
        )}
      </Loading>
    </Stack>
  );
}

function Deliveries({ api, endpoint, onChange }: { api: AppApi; endpoint: Endpoint; onChange: () => Promise<void> }) {
  const { data, error, reload } = useLoad(
    () => api.webhooks.listDeliveries(endpoint.id, { limit: 50 }).then((r) => r.data),
    [endpoint.id],
  );
  const action = useAction();
  const after = async () => {
    await reload();
    await onChange();
  };
  return (
    <Stack gap="xs">
      <Text size="xs" c="dimmed">
        Events: {endpoint.events.join(', ')}
        {endpoint.disabled_reason && ` · disabled: ${endpoint.disabled_reason}`}
      </Text>
      <Group gap="xs">
        <Button
          size="xs"
          variant="default"
          loading={action.busy}
          onClick={() => action.run(async () => (await api.webhooks.sendTest(endpoint.id, {}), after()))}
        >
          Send test event
        </Button>
      </Group>
      <ErrorText error={action.error} />
      <Loading error={error}>
        {data &&
          (data.length === 0 ? (
            <Text size="sm" c="dimmed">
              No deliveries yet.
            </Text>
          ) : (
            <Accordion variant="contained">
              {data.map((d) => (
                <Accordion.Item key={d.id} value={d.id}>
                  <Accordion.Control aria-label={`Delivery ${d.event_type} ${d.status}`}>
                    <Group gap="xs">
                      <Badge color={COLORS[d.status]}>{d.status}</Badge>
                      <Text size="sm">{d.event_type}</Text>
                      {d.test && <Badge variant="outline">test</Badge>}
                      <Text size="xs" c="dimmed">
                        {new Date(d.created_at).toLocaleString()} · {d.attempts} attempt{d.attempts === 1 ? '' : 's'}
                        {d.response_status ? ` · HTTP ${d.response_status}` : ''}
                      </Text>
                    </Group>
                  </Accordion.Control>
                  <Accordion.Panel>
                    <Stack gap="xs">
                      {d.error && (
                        <Text size="sm" c="red">
                          {d.error}
                        </Text>
                      )}
                      {d.status === 'failed' && (
                        <Button
                          size="xs"
                          w="fit-content"
                          onClick={() =>
                            action.run(async () => (await api.webhooks.retryDelivery(endpoint.id, d.id), after()))
                          }
                        >
                          Retry
                        </Button>
                      )}
                      <Text size="xs" fw={600}>
                        Payload
                      </Text>
                      <Code block style={{ maxHeight: 240, overflow: 'auto' }}>
                        {JSON.stringify(d.payload, null, 2)}
                      </Code>
                      <Text size="xs" fw={600}>
                        Response
                      </Text>
                      <Code block>{d.response_body || '(none)'}</Code>
                    </Stack>
                  </Accordion.Panel>
                </Accordion.Item>
              ))}
            </Accordion>
          ))}
      </Loading>
    </Stack>
  );
}

function NewEndpoint({ api, reload }: { api: AppApi; reload: () => Promise<void> }) {
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState('*');
  const action = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const list = events
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (await action.run(() => api.webhooks.create({ url, events: list as EventType[] }))) {
      setUrl('');
      await reload();
    }
  };
  return (
    <Card withBorder maw={640}>
      <form onSubmit={submit}>
        <Stack gap="xs">
          <Title order={3} size="h5">
            New endpoint
          </Title>
          <TextInput
            label="Endpoint URL"
            required
            placeholder="https://example.com/webhooks"
            value={url}
            onChange={(e) => setUrl(e.currentTarget.value)}
          />
          <TextInput
            label="Event types"
            description="Comma-separated, or * for all"
            value={events}
            onChange={(e) => setEvents(e.currentTarget.value)}
          />
          <ErrorText error={action.error} />
          <Button type="submit" w="fit-content" loading={action.busy}>
            Add endpoint
          </Button>
        </Stack>
      </form>
    </Card>
  );
}
