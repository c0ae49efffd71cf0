// The OAuth consent page ({dashboard_url}/oauth/consent): an MCP client asks for access; the signed-in person
// picks a level and, when the client named no server, one of their apps, and approves as themselves.
import { Alert, Button, Card, Center, Group, Radio, Select, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { useSearchParams } from 'react-router';
import { consoleApi } from '../api';
import { ErrorText, Loading, useAction, useLoad } from '../ui';
import { GuardrailsEditor, NO_CAPS, type Guardrails } from './Guardrails';

type Level = 'read' | 'write' | 'full';

interface ConsentRequest {
  request: {
    id: string;
    client: { id: string; name: string | null; client_uri: string | null };
    redirect_uri: string;
    requested_level: Level | null;
    max_level: Level | null;
    resource: string | null;
    app: { id: string; name: string } | null;
    expires_at: string;
  };
  apps: { id: string; name: string; max_level: Level }[];
  user: { id: string; name: string; email: string };
}

const LEVELS: { value: Level; label: string; description: string }[] = [
  { value: 'read', label: 'Read only', description: 'Look things up: catalog, accounts, usage, analytics, events' },
  {
    value: 'write',
    label: 'Read and write',
    description: 'Also create and update, record usage, send test events, retry deliveries; no deletes',
  },
  { value: 'full', label: 'Full access', description: 'Everything, including deletes and detaching' },
];

export function ConsentPage() {
  const [params] = useSearchParams();
  const requestId = params.get('request') ?? '';
  const { data, error } = useLoad(
    () => consoleApi.get<ConsentRequest>(`/oauth/requests/${encodeURIComponent(requestId)}`),
    [requestId],
  );
  return (
    <Center mih="100vh" p="md" bg="gray.0">
      <Card withBorder shadow="sm" p="xl" w="100%" maw={520}>
        <Loading error={error && `${error}. Start the sign-in again from your MCP client.`}>
          {data && <Decide data={data} />}
        </Loading>
      </Card>
    </Center>
  );
}

function Decide({ data }: { data: ConsentRequest }) {
  const { request, apps, user } = data;
  const [level, setLevel] = useState<Level>(request.requested_level ?? 'read');
  const [appId, setAppId] = useState<string | null>(request.app?.id ?? apps[0]?.id ?? null);
  // The levels offered never pass what this person may approve on the app (role) or what its MCP server gives
  // OAuth connections (its cap); a level above is lowered to the most allowed.
  const max = apps.find((a) => a.id === appId)?.max_level ?? request.max_level ?? 'full';
  const offered = LEVELS.slice(0, LEVELS.findIndex((l) => l.value === max) + 1);
  const chosen = offered.some((l) => l.value === level) ? level : max;
  const [caps, setCaps] = useState<Guardrails>(NO_CAPS);
  const [showCaps, setShowCaps] = useState(false);
  const action = useAction();
  const name = request.client.name ?? 'An MCP client';
  const decide = (decision: 'approve' | 'deny') =>
    action.run(async () => {
      const id = encodeURIComponent(request.id);
      const capped = chosen !== 'read' && (caps.spend_cap !== null || caps.usage_caps.length > 0);
      const body =
        decision === 'approve'
          ? { access_level: chosen, ...(request.app ? {} : { app_id: appId }), ...(capped ? { guardrails: caps } : {}) }
          : {};
      const { redirect_url } =
        decision === 'approve'
          ? await consoleApi.post<{ redirect_url: string }>(`/oauth/requests/${id}/approve`, body)
          : await consoleApi.post<{ redirect_url: string }>(`/oauth/requests/${id}/deny`, body);
      window.location.assign(redirect_url);
    });
  const back = new URL(request.redirect_uri);
  return (
    <Stack>
      <Title order={1} size="h3">
        Allow <span data-testid="client-name">{name}</span> to use offerkit?
      </Title>
      <Text size="sm">
        It will act as <b>{user.name}</b> ({user.email}) through the MCP server of{' '}
        {request.app ? <b>{request.app.name}</b> : 'the app you pick'}, and sends you back to{' '}
        <Text span ff="monospace" size="sm">
          {back.host}
        </Text>
        .
      </Text>
      {!request.app &&
        (apps.length ? (
          <Select
            label="App"
            data={apps.map((a) => ({ value: a.id, label: a.name }))}
            value={appId}
            onChange={setAppId}
            allowDeselect={false}
          />
        ) : (
          <Alert color="yellow" title="No app to connect">
            None of your workspaces has an app yet. Create one in the console first.
          </Alert>
        ))}
      <Radio.Group label="Access level" value={chosen} onChange={(v) => setLevel(v as Level)}>
        <Stack gap="xs" mt="xs">
          {offered.map((l) => (
            <Radio key={l.value} value={l.value} label={l.label} description={l.description} />
          ))}
        </Stack>
      </Radio.Group>
      {chosen !== 'read' && (
        <Stack gap={4}>
          <Button variant="subtle" size="compact-sm" w="fit-content" onClick={() => setShowCaps((v) => !v)}>
            {showCaps ? 'Hide limits' : 'Set limits for this assistant (optional)'}
          </Button>
          {showCaps && <GuardrailsEditor value={caps} onChange={setCaps} />}
        </Stack>
      )}
      <ErrorText error={action.error} />
      <Group justify="flex-end">
        <Button variant="default" onClick={() => decide('deny')} disabled={action.busy}>
          Deny
        </Button>
        <Button onClick={() => decide('approve')} loading={action.busy} disabled={!request.app && !appId}>
          Approve
        </Button>
      </Group>
    </Stack>
  );
}
