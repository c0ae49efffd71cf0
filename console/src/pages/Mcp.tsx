// The app's MCP server: on or off, the default access level, per-tool switches (they apply to every OAuth
// connection), the connections people approved, and the tool call log.
import {
  Badge,
  Box,
  Button,
  Card,
  Code,
  Group,
  Modal,
  MultiSelect,
  Paper,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Table,
  Text,
  Title,
} from '@mantine/core';
import { useState } from 'react';
import { useParams } from 'react-router';
import { adminApi, consoleApi } from '../api';
import { useCan } from '../session';
import { ConfirmDialog, ErrorText, Loading, useAction, useLoad } from '../ui';
import { EditableArea } from './Catalog/shared';
import { capsOf, GuardrailsEditor, GuardrailsSummary, type Guardrails, type GuardrailsView } from './Guardrails';

type Level = 'read' | 'write' | 'full';
interface Settings {
  enabled: boolean;
  access_level: Level;
  tool_overrides: Record<string, boolean>;
  key_guardrails: GuardrailsView;
  toolsets: string[];
}
interface Tool {
  name: string;
  level: 'R' | 'W' | 'F';
  method: string;
  path: string;
  summary?: string;
}
interface Connection {
  id: string;
  kind: 'oauth' | 'secret_key' | 'admin_key';
  name: string;
  user: { id: string; name: string | null; email: string | null } | null;
  access_level: Level | null;
  effective_level: Level | null;
  last_used_at: string | null;
  calls_last_7_days: number;
  cut_off: { at: string; reason: string } | null;
  guardrails: GuardrailsView | null;
}
interface Call {
  id: string;
  connection_id: string | null;
  tool: string;
  arguments: Record<string, unknown>;
  status: number;
  is_error: boolean;
  result: string;
  duration_ms: number;
  created_at: string;
}

const RANK = { read: 0, write: 1, full: 2 } as const;
const NEEDS = { R: 'read', W: 'write', F: 'full' } as const;
const GROUP_LABEL = { R: 'Read', W: 'Write', F: 'Full' } as const;

export function McpPage() {
  const { appId } = useParams();
  const admin = adminApi(appId!);
  const can = useCan(appId);
  const { data, error, reload } = useLoad(
    () =>
      Promise.all([
        admin.get<Settings>('/mcp/settings'),
        consoleApi.get<Tool[]>('/mcp-tools'),
        admin.get<Connection[]>('/mcp/connections'),
        admin.get<{ data: Call[] }>('/mcp/calls', { limit: 30 }),
        admin.get<{ id: string }[] | { data: { id: string }[] }>('/entitlements'),
      ]),
    [appId],
  );
  return (
    <Stack>
      <Title order={2}>MCP server</Title>
      <Text size="sm" c="dimmed">
        AI assistants connect at{' '}
        <Code style={{ wordBreak: 'break-all' }}>{`${window.location.origin}/apps/${appId}/mcp`}</Code>; people approve
        them on the consent page.
      </Text>
      {!can('mcp.updateSettings') && (
        <Text size="sm" c="dimmed">
          Owners and admins change the MCP settings and connections; you can read them.
        </Text>
      )}
      <Loading error={error}>
        {data && (
          <>
            <SettingsCard
              canEdit={can('mcp.updateSettings')}
              key={JSON.stringify(data[0])}
              settings={data[0]}
              tools={data[1]}
              onSaved={reload}
            />
            <KeyGuardrailsCard
              canEdit={can('mcp.updateSettings')}
              key={`keys${JSON.stringify(data[0].key_guardrails)}`}
              view={data[0].key_guardrails}
              entitlements={idsOf(data[4])}
              onSaved={reload}
            />
            <Connections
              list={data[2]}
              entitlements={idsOf(data[4])}
              onChange={reload}
              canEdit={can('mcp.updateConnection')}
              canRemove={can('mcp.deleteConnection')}
            />
            <Calls calls={data[3].data} connections={data[2]} />
          </>
        )}
      </Loading>
    </Stack>
  );
}

function SettingsCard({
  settings,
  tools,
  onSaved,
  canEdit,
}: {
  settings: Settings;
  tools: Tool[];
  onSaved: () => Promise<void>;
  canEdit: boolean;
}) {
  const { appId } = useParams();
  const [s, setS] = useState(settings);
  const action = useAction();
  const byDefault = (t: Tool) => RANK[s.access_level] >= RANK[NEEDS[t.level]];
  const on = (t: Tool) => s.tool_overrides[t.name] ?? byDefault(t);
  const toggle = (t: Tool, value: boolean) => {
    const next = { ...s.tool_overrides };
    if (value === byDefault(t)) delete next[t.name];
    else next[t.name] = value;
    setS({ ...s, tool_overrides: next });
  };
  return (
    <Card withBorder>
      <EditableArea canEdit={canEdit}>
        <Stack gap="sm">
          <Group justify="space-between" wrap="wrap">
            <Switch
              label="MCP server on"
              checked={s.enabled}
              onChange={(e) => setS({ ...s, enabled: e.currentTarget.checked })}
            />
            <Select
              label="Default access level"
              allowDeselect={false}
              w={200}
              data={[
                { value: 'read', label: 'Read only' },
                { value: 'write', label: 'Read and write' },
                { value: 'full', label: 'Full access' },
              ]}
              value={s.access_level}
              onChange={(v) => v && setS({ ...s, access_level: v as Level })}
            />
          </Group>
          <MultiSelect
            label="Toolsets listed"
            placeholder={s.toolsets.length ? undefined : 'Core tools only'}
            data={TOOLSET_OPTIONS}
            value={s.toolsets}
            onChange={(v) => setS({ ...s, toolsets: v })}
            clearable
          />
          <Text size="xs" c="dimmed">
            An agent&apos;s tool list names the core tools (accounts, usage, plans, checkout links), find_tools and
            call_tool, and the toolsets chosen here: the fewer, the less of an agent&apos;s context it takes. Tools not
            listed stay callable; a connection or a request (<Code>?toolsets=</Code>) may choose others.
          </Text>
          <Text size="xs" c="dimmed">
            The level switches tools on by default; a switch below overrides it for every OAuth connection. A connection
            also needs its own level to cover the tool.
          </Text>
          <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }} spacing={4}>
            {tools.map((t) => (
              <Switch
                key={t.name}
                size="xs"
                // A row a finger can hit (the label toggles it too): 19 px of text alone is too thin on a phone.
                styles={{ body: { alignItems: 'center' }, label: { paddingBlock: 3 } }}
                label={
                  <Text size="xs" span>
                    <Code>{t.name}</Code>{' '}
                    <Badge
                      size="xs"
                      variant="light"
                      color={t.level === 'F' ? 'red' : t.level === 'W' ? 'orange' : 'teal'}
                    >
                      {GROUP_LABEL[t.level]}
                    </Badge>
                    {s.tool_overrides[t.name] !== undefined && (
                      <Text span size="xs" c="indigo">
                        {' '}
                        (override)
                      </Text>
                    )}
                  </Text>
                }
                aria-label={`Tool ${t.name}`}
                checked={on(t)}
                onChange={(e) => toggle(t, e.currentTarget.checked)}
              />
            ))}
          </SimpleGrid>
          <ErrorText error={action.error} />
          {canEdit && (
            <Button
              w="fit-content"
              loading={action.busy}
              data-route="mcp.updateSettings"
              onClick={() =>
                action.run(async () => {
                  const { enabled, access_level, tool_overrides, toolsets } = s;
                  await adminApi(appId!).patch('/mcp/settings', { enabled, access_level, tool_overrides, toolsets });
                  await onSaved();
                })
              }
            >
              Save MCP settings
            </Button>
          )}
        </Stack>
      </EditableArea>
    </Card>
  );
}

/** The toolsets tools/list names beside the core and discovery tools (src/mcp/toolsets.ts). */
const TOOLSET_OPTIONS = [
  { value: 'accounts', label: 'Accounts, usage and credits' },
  { value: 'catalog', label: 'Catalog' },
  { value: 'billing', label: 'Billing' },
  { value: 'webhooks', label: 'Webhooks and events' },
  { value: 'analytics', label: 'Analytics' },
  { value: 'app', label: 'App' },
  { value: 'all', label: 'Every tool' },
];

const idsOf = (list: { id: string }[] | { data: { id: string }[] }) =>
  (Array.isArray(list) ? list : list.data).map((e) => e.id);

/** The caps of the app's key-based MCP use (secret and admin key sessions share them). */
function KeyGuardrailsCard({
  view,
  entitlements,
  onSaved,
  canEdit,
}: {
  view: GuardrailsView;
  entitlements: string[];
  onSaved: () => Promise<void>;
  canEdit: boolean;
}) {
  const { appId } = useParams();
  const [caps, setCaps] = useState<Guardrails>(capsOf(view));
  const action = useAction();
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Title order={3} size="h5">
          Key guard-rails
        </Title>
        <Text size="xs" c="dimmed">
          Caps for MCP clients that use the secret or admin key (each OAuth connection has its own, below). A call that
          would pass a cap is refused with which cap, what is left and where to raise it.
        </Text>
        <GuardrailsSummary view={view} />
        {canEdit && (
          <>
            <GuardrailsEditor value={caps} onChange={setCaps} entitlements={entitlements} />
            <ErrorText error={action.error} />
            <Button
              w="fit-content"
              loading={action.busy}
              data-route="mcp.updateSettings"
              onClick={() =>
                action.run(async () => {
                  await adminApi(appId!).patch('/mcp/settings', { key_guardrails: caps });
                  await onSaved();
                })
              }
            >
              Save key guard-rails
            </Button>
          </>
        )}
      </Stack>
    </Card>
  );
}

/** An OAuth connection's caps, in a dialog. */
function EditGuardrails({
  connection,
  entitlements,
  onClose,
}: {
  connection: Connection;
  entitlements: string[];
  onClose: (saved: boolean) => Promise<void>;
}) {
  const { appId } = useParams();
  const [caps, setCaps] = useState<Guardrails>(capsOf(connection.guardrails));
  const action = useAction();
  return (
    <Modal opened onClose={() => void onClose(false)} title={`Guard-rails of ${connection.name}`} size="lg">
      <Stack gap="sm">
        <GuardrailsSummary view={connection.guardrails} />
        <GuardrailsEditor value={caps} onChange={setCaps} entitlements={entitlements} />
        <ErrorText error={action.error} />
        <Group justify="flex-end">
          <Button variant="default" onClick={() => void onClose(false)}>
            Cancel
          </Button>
          <Button
            loading={action.busy}
            data-route="mcp.updateConnection"
            onClick={() =>
              action.run(async () => {
                await adminApi(appId!).patch(`/mcp/connections/${encodeURIComponent(connection.id)}`, {
                  guardrails: caps,
                });
                await onClose(true);
              })
            }
          >
            Save guard-rails
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** Who approved a connection, or its kind for key sessions. */
const personOf = (c: Connection) => (c.user ? (c.user.email ?? c.user.name ?? c.user.id) : c.kind.replace('_', ' '));

/** A connection's level as the phone's cards word it. */
const levelOf = (c: Connection) =>
  c.effective_level
    ? `${c.effective_level}${c.access_level && c.effective_level !== c.access_level ? ` (approved ${c.access_level})` : ''}`
    : 'all tools';

function Connections({
  list,
  entitlements,
  onChange,
  canEdit,
  canRemove,
}: {
  list: Connection[];
  entitlements: string[];
  onChange: () => Promise<void>;
  canEdit: boolean;
  canRemove: boolean;
}) {
  const { appId } = useParams();
  const action = useAction();
  const [editing, setEditing] = useState<Connection | null>(null);
  const [removing, setRemoving] = useState<Connection | null>(null);
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Title order={3} size="h5">
          Connections
        </Title>
        <ErrorText error={action.error} />
        {list.length === 0 ? (
          <Text c="dimmed">No connections yet. Add the server URL above to an MCP client and sign in from it.</Text>
        ) : (
          <>
            {/* On a phone, cards: each connection's caps and its Remove stay on screen without scrolling sideways. */}
            <Stack gap="xs" hiddenFrom="sm" role="list" aria-label="Connections">
              {list.map((c) => (
                <Paper key={c.id} withBorder p="xs" role="listitem">
                  <Stack gap={6}>
                    <Group justify="space-between" wrap="nowrap" align="flex-start">
                      <div style={{ minWidth: 0, flex: 1 }}>
                        <Text size="sm" fw={600} style={{ wordBreak: 'break-word' }}>
                          {c.name}
                          {c.cut_off && (
                            <Badge ml="xs" color="red" size="xs">
                              cut off
                            </Badge>
                          )}
                        </Text>
                        <Text size="xs" c="dimmed" style={{ wordBreak: 'break-all' }}>
                          {personOf(c)} · {levelOf(c)} · {c.calls_last_7_days} call
                          {c.calls_last_7_days === 1 ? '' : 's'} in 7 days
                        </Text>
                      </div>
                      {canRemove && (
                        <Button
                          size="xs"
                          color="red"
                          variant="subtle"
                          style={{ flexShrink: 0 }}
                          data-route="mcp.deleteConnection"
                          onClick={() => setRemoving(c)}
                        >
                          Remove
                        </Button>
                      )}
                    </Group>
                    {c.kind === 'oauth' ? (
                      <Group justify="space-between" align="flex-end" gap="xs">
                        <GuardrailsSummary view={c.guardrails} />
                        {canEdit && (
                          <Button
                            size="xs"
                            variant="light"
                            data-route="mcp.updateConnection"
                            onClick={() => setEditing(c)}
                          >
                            Edit caps
                          </Button>
                        )}
                      </Group>
                    ) : (
                      <Text size="xs" c="dimmed">
                        Caps: the key guard-rails above
                      </Text>
                    )}
                  </Stack>
                </Paper>
              ))}
            </Stack>
            <Box visibleFrom="sm">
              <Table.ScrollContainer minWidth={720}>
                <Table aria-label="Connections">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Client</Table.Th>
                      <Table.Th>Person</Table.Th>
                      <Table.Th>Level</Table.Th>
                      <Table.Th>Guard-rails</Table.Th>
                      <Table.Th ta="right">Calls (7 days)</Table.Th>
                      <Table.Th />
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {list.map((c) => (
                      <Table.Tr key={c.id}>
                        <Table.Td>
                          {c.name}
                          {c.cut_off && (
                            <Badge ml="xs" color="red" size="xs">
                              cut off
                            </Badge>
                          )}
                        </Table.Td>
                        <Table.Td>{personOf(c)}</Table.Td>
                        <Table.Td>
                          {c.effective_level ?? 'all tools'}
                          {c.access_level && c.effective_level !== c.access_level && (
                            <Text span size="xs" c="dimmed" title="Approved higher; the app's MCP access level caps it">
                              {' '}
                              (approved {c.access_level})
                            </Text>
                          )}
                        </Table.Td>
                        <Table.Td>
                          {c.kind === 'oauth' ? (
                            <Stack gap={4} align="flex-start">
                              <GuardrailsSummary view={c.guardrails} />
                              {canEdit && (
                                <Button
                                  size="compact-xs"
                                  variant="light"
                                  data-route="mcp.updateConnection"
                                  onClick={() => setEditing(c)}
                                >
                                  Edit caps
                                </Button>
                              )}
                            </Stack>
                          ) : (
                            <Text size="xs" c="dimmed">
                              Key guard-rails
                            </Text>
                          )}
                        </Table.Td>
                        <Table.Td ta="right">{c.calls_last_7_days}</Table.Td>
                        <Table.Td>
                          {canRemove && (
                            <Button
                              size="compact-xs"
                              color="red"
                              variant="subtle"
                              data-route="mcp.deleteConnection"
                              onClick={() => setRemoving(c)}
                            >
                              Remove
                            </Button>
                          )}
                        </Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </Table.ScrollContainer>
            </Box>
          </>
        )}
        <ConfirmDialog
          opened={!!removing}
          route="mcp.deleteConnection"
          title={`Remove the connection ${removing?.name ?? ''}?`}
          confirmLabel="Remove connection"
          onClose={() => setRemoving(null)}
          onConfirm={async () => {
            await adminApi(appId!).del(`/mcp/connections/${encodeURIComponent(removing!.id)}`);
            await onChange();
          }}
        >
          <Text size="sm">
            {removing?.kind === 'oauth'
              ? `${removing.name}${removing.user?.email ? ` (approved by ${removing.user.email})` : ''} loses access ` +
                'on its next call and its refresh token stops working: it has to sign in and be approved again.'
              : 'Only this entry goes: a client using the key is listed again when it next connects. To shut key ' +
                'sessions out, regenerate the key or turn the MCP server off.'}
          </Text>
        </ConfirmDialog>
        {editing && (
          <EditGuardrails
            connection={editing}
            entitlements={entitlements}
            onClose={async (saved) => {
              setEditing(null);
              if (saved) await onChange();
            }}
          />
        )}
      </Stack>
    </Card>
  );
}

function Calls({ calls, connections }: { calls: Call[]; connections: Connection[] }) {
  const name = (id: string | null) => connections.find((c) => c.id === id)?.name ?? '—';
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Title order={3} size="h5">
          Tool calls
        </Title>
        {calls.length === 0 ? (
          <Text c="dimmed">No tool calls in the last 30 days.</Text>
        ) : (
          <Table.ScrollContainer minWidth={560}>
            <Table striped fz="xs" aria-label="Tool calls">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>When</Table.Th>
                  <Table.Th>Tool</Table.Th>
                  <Table.Th>Connection</Table.Th>
                  <Table.Th>Status</Table.Th>
                  <Table.Th ta="right">ms</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {calls.map((c) => (
                  <Table.Tr key={c.id}>
                    <Table.Td>{new Date(c.created_at).toLocaleString('en-CA')}</Table.Td>
                    <Table.Td>
                      <Code>{c.tool}</Code>
                    </Table.Td>
                    <Table.Td>{name(c.connection_id)}</Table.Td>
                    <Table.Td>
                      <Badge size="xs" color={c.is_error ? 'red' : 'teal'}>
                        {c.status}
                      </Badge>
                    </Table.Td>
                    <Table.Td ta="right">{c.duration_ms}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </Stack>
    </Card>
  );
}
