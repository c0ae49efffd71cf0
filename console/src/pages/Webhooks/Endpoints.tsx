// The endpoints tab: each endpoint with its settings, signing secret and delivery log (retry, Temporal links),
// and the form that adds one.
import {
  Accordion,
  Anchor,
  Badge,
  Button,
  Card,
  Code,
  Group,
  Modal,
  Stack,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useState, type FormEvent } from 'react';
import type { WebhooksListDeliveriesResponse } from '@offerkit/sdk';
import { consoleApi, type AppApi } from '../../api';
import { useCan } from '../../session';
import { useTemporalUi, workflowUrl } from '../../temporal';
import { ConfirmDialog, CopyField, CursorPager, ErrorText, Loading, useAction, useLoad } from '../../ui';
import { plural } from '../../plural';
import { COLORS, type Endpoint, type EventType } from './shared';

export function Endpoints({ api, appId }: { api: AppApi; appId: string }) {
  const { data, error, reload } = useLoad(() => api.webhooks.list(), [api]);
  const can = useCan(appId);
  return (
    <Loading error={error}>
      {data && (
        <Stack>
          {data.length === 0 && (
            <Card withBorder>
              <Text>
                {can('webhooks.create')
                  ? 'No endpoints yet. Add the URL of your receiver below: every event is signed (Standard Webhooks), ' +
                    'and the Event types tab shows what each one carries.'
                  : 'No endpoints yet. A member, admin or owner of the workspace adds them.'}
              </Text>
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
                    {e.description && (
                      <Text size="xs" c="dimmed">
                        {e.description}
                      </Text>
                    )}
                    <Text size="xs" c="dimmed">
                      7 days: {e.stats.succeeded} ok · {e.stats.failed} failed · {e.stats.pending} pending
                    </Text>
                  </Group>
                </Accordion.Control>
                <Accordion.Panel>
                  <EndpointSettings api={api} appId={appId} endpoint={e} onChange={reload} />
                  <Deliveries api={api} appId={appId} endpoint={e} onChange={reload} />
                </Accordion.Panel>
              </Accordion.Item>
            ))}
          </Accordion>
          {can('webhooks.create') && <NewEndpoint api={api} reload={reload} />}
        </Stack>
      )}
    </Loading>
  );
}

const DELIVERY_PAGE = 50;

function Deliveries({
  api,
  appId,
  endpoint,
  onChange,
}: {
  api: AppApi;
  appId: string;
  endpoint: Endpoint;
  onChange: () => Promise<void>;
}) {
  const can = useCan(appId);
  // The cursors of the pages walked so far: the last one is the page shown (undefined: the first page).
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const page = useLoad(
    (): PromiseLike<WebhooksListDeliveriesResponse> =>
      api.webhooks.listDeliveries(endpoint.id, { limit: DELIVERY_PAGE, ...(cursor ? { cursor } : {}) }),
    [endpoint.id, cursor],
  );
  const { error, reload } = page;
  const data = page.data?.data;
  const action = useAction();
  const temporal = useTemporalUi();
  /** After an action: the page shown again, or the first page, where a new delivery (a test send) shows. */
  const after = async (toFirst = false) => {
    if (toFirst && cursors.length > 1) setCursors([undefined]);
    else await reload();
    await onChange();
  };
  return (
    <Stack gap="xs">
      <Text size="xs" c="dimmed">
        Events: {endpoint.events.join(', ')}
        {endpoint.disabled_reason && ` · disabled: ${endpoint.disabled_reason}`}
      </Text>
      {can('webhooks.sendTest') && (
        <Group gap="xs">
          <Button
            size="xs"
            variant="default"
            loading={action.busy}
            data-route="webhooks.sendTest"
            onClick={() => action.run(async () => (await api.webhooks.sendTest(endpoint.id, {}), after(true)))}
          >
            Send test event
          </Button>
        </Group>
      )}
      <ErrorText error={action.error} />
      <Loading error={error}>
        {data &&
          (data.length === 0 ? (
            <Text size="sm" c="dimmed">
              {cursors.length === 1 ? 'No deliveries yet.' : 'No older deliveries.'}
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
                      {temporal && d.workflow_id && (
                        <Anchor size="sm" href={workflowUrl(temporal, d.workflow_id)} target="_blank" rel="noreferrer">
                          Delivery workflow in the Temporal UI
                        </Anchor>
                      )}
                      {d.status === 'failed' && can('webhooks.retryDelivery') && (
                        <Button
                          size="xs"
                          w="fit-content"
                          data-route="webhooks.retryDelivery"
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
                      <Code block style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all' }}>
                        {d.response_body || '(none)'}
                      </Code>
                    </Stack>
                  </Accordion.Panel>
                </Accordion.Item>
              ))}
            </Accordion>
          ))}
        {page.data && <CursorPager cursors={cursors} setCursors={setCursors} next={page.data.next_cursor} />}
      </Loading>
    </Stack>
  );
}

/** `plan.created, account.created` or `*` as the API's list. */
const eventList = (text: string) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean) as EventType[];

function NewEndpoint({ api, reload }: { api: AppApi; reload: () => Promise<void> }) {
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState('*');
  const [description, setDescription] = useState('');
  const action = useAction(['url', 'events', 'description']);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const body = { url, events: eventList(events), ...(description.trim() ? { description } : {}) };
    if (await action.run(() => api.webhooks.create(body))) {
      // The form starts over for the next endpoint (an error keeps what was typed).
      setUrl('');
      setEvents('*');
      setDescription('');
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
            error={action.field('url')}
            onChange={(e) => setUrl(e.currentTarget.value)}
          />
          <TextInput
            label="Event types"
            description="Comma-separated, or * for all"
            value={events}
            error={action.field('events')}
            onChange={(e) => setEvents(e.currentTarget.value)}
          />
          <TextInput
            label="Description"
            placeholder="CRM sync"
            value={description}
            error={action.field('description')}
            onChange={(e) => setDescription(e.currentTarget.value)}
          />
          <ErrorText error={action.error} />
          <Button type="submit" w="fit-content" loading={action.busy} data-route="webhooks.create">
            Add endpoint
          </Button>
        </Stack>
      </form>
    </Card>
  );
}

/**
 * An endpoint's own actions, each shown only to the roles the route table lets through: edit (URL, events,
 * description), disable or enable, delete, and its signing secret: revealed on request through the console's logged
 * reveal (members and above; the endpoint reads answer it `[redacted]` to people), rotated with
 * `POST .../secret/regenerate` (the old one stops at once; the new one is revealed the same way).
 */
function EndpointSettings({
  api,
  appId,
  endpoint,
  onChange,
}: {
  api: AppApi;
  appId: string;
  endpoint: Endpoint;
  onChange: () => Promise<void>;
}) {
  const can = useCan(appId);
  const [rotated, setRotated] = useState(false);
  const reveal = async () =>
    (
      await consoleApi.post<{ secret: string }>(
        `/apps/${encodeURIComponent(appId)}/webhooks/${encodeURIComponent(endpoint.id)}/secret/reveal`,
      )
    ).secret;
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [rotating, setRotating] = useState(false);
  const [secret, setSecret] = useState<string | null>(null);
  const action = useAction();
  const name = endpoint.description ? `${endpoint.description} (${endpoint.url})` : endpoint.url;
  return (
    <Stack gap="xs" mb="sm">
      <Group gap="xs">
        {can('webhooks.update') && (
          <Button size="xs" variant="default" data-route="webhooks.update" onClick={() => setEditing(true)}>
            Edit
          </Button>
        )}
        {can('webhooks.update') && (
          <Button
            size="xs"
            variant="default"
            loading={action.busy}
            data-route="webhooks.update"
            onClick={() =>
              action.run(async () => {
                await api.webhooks.update(endpoint.id, { enabled: !endpoint.enabled });
                await onChange();
              })
            }
          >
            {endpoint.enabled ? 'Disable' : 'Enable'}
          </Button>
        )}
        {can('console.revealWebhookSecret') && (
          <Button
            size="xs"
            variant="default"
            data-route={secret ? undefined : 'console.revealWebhookSecret'}
            onClick={() =>
              secret ? setSecret(null) : action.run(async () => (setSecret(await reveal()), setRotated(false)))
            }
          >
            {secret ? 'Hide signing secret' : 'Reveal signing secret'}
          </Button>
        )}
        {can('webhooks.regenerateSecret') && (
          <Button
            size="xs"
            color="red"
            variant="light"
            data-route="webhooks.regenerateSecret"
            onClick={() => setRotating(true)}
          >
            Rotate secret
          </Button>
        )}
        {can('webhooks.delete') && (
          <Button size="xs" color="red" variant="light" data-route="webhooks.delete" onClick={() => setDeleting(true)}>
            Delete
          </Button>
        )}
      </Group>
      {!can('console.revealWebhookSecret') && (
        <Text size="xs" c="dimmed">
          The signing secret is shown to members, admins and owners only: with it anyone can sign events your receiver
          trusts.
        </Text>
      )}
      {rotated && !secret && (
        <Text size="xs" c="dimmed" role="status">
          The secret was rotated. Reveal the new one to update the receiver.
        </Text>
      )}
      {!endpoint.enabled && (
        <Text size="xs" c="dimmed">
          Disabled: new events are not sent to it{endpoint.disabled_reason ? ` (${endpoint.disabled_reason})` : ''}.
        </Text>
      )}
      {secret && <CopyField value={secret} label="Signing secret" />}
      <ErrorText error={action.error} />
      {editing && (
        <EditEndpoint
          api={api}
          endpoint={endpoint}
          onClose={async (saved) => {
            setEditing(false);
            if (saved) await onChange();
          }}
        />
      )}
      <ConfirmDialog
        opened={rotating}
        title={`Rotate the signing secret of ${name}?`}
        confirmLabel="Rotate now"
        onClose={() => setRotating(false)}
        route="webhooks.regenerateSecret"
        // The new secret is answered `[redacted]` to a person: shown only when revealed on purpose.
        onConfirm={async () => (await api.webhooks.regenerateSecret(endpoint.id), setSecret(null), setRotated(true))}
      >
        <Text size="sm">
          The old secret stops working at once: every later delivery to this endpoint, retries of earlier events
          included, is signed with the new one. Update the receiver at {endpoint.url} right after.
        </Text>
      </ConfirmDialog>
      <ConfirmDialog
        opened={deleting}
        route="webhooks.delete"
        title={`Delete the endpoint ${name}?`}
        confirmLabel="Delete endpoint"
        onClose={() => setDeleting(false)}
        onConfirm={async () => (await api.webhooks.delete(endpoint.id), onChange())}
      >
        <Text size="sm">
          {endpoint.url} gets no more events. Its{' '}
          {plural(endpoint.stats.pending, 'pending delivery', 'pending deliveries')}{' '}
          {endpoint.stats.pending === 1 ? 'stops' : 'stop'} without being sent, and its delivery log is deleted with it.
          This cannot be undone.
        </Text>
      </ConfirmDialog>
    </Stack>
  );
}

function EditEndpoint({
  api,
  endpoint,
  onClose,
}: {
  api: AppApi;
  endpoint: Endpoint;
  onClose: (saved: boolean) => Promise<void>;
}) {
  const [url, setUrl] = useState(endpoint.url);
  const [events, setEvents] = useState(endpoint.events.join(', '));
  const [description, setDescription] = useState(endpoint.description ?? '');
  const action = useAction(['url', 'events', 'description']);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const body = { url, events: eventList(events), description: description.trim() ? description : null };
    if (await action.run(() => api.webhooks.update(endpoint.id, body))) await onClose(true);
  };
  return (
    <Modal opened onClose={() => void onClose(false)} title="Edit endpoint">
      <form onSubmit={submit}>
        <Stack gap="xs">
          <TextInput
            label="Endpoint URL"
            required
            value={url}
            error={action.field('url')}
            onChange={(e) => setUrl(e.currentTarget.value)}
          />
          <TextInput
            label="Event types"
            description="Comma-separated, or * for all"
            value={events}
            error={action.field('events')}
            onChange={(e) => setEvents(e.currentTarget.value)}
          />
          <TextInput
            label="Description"
            value={description}
            error={action.field('description')}
            onChange={(e) => setDescription(e.currentTarget.value)}
          />
          <ErrorText error={action.error} />
          <Group justify="flex-end" gap="xs">
            <Button variant="default" onClick={() => void onClose(false)}>
              Cancel
            </Button>
            <Button type="submit" loading={action.busy} data-route="webhooks.update">
              Save endpoint
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
