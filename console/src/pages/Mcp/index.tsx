// The app's MCP server: on or off, the default access level, per-tool switches (they apply to every OAuth
// connection), the connections people approved, and the tool call log; one card each.
import { Code, Stack, Text, Title } from '@mantine/core';
import { useParams } from 'react-router';
import { adminApi, consoleApi } from '../../api';
import { useCan } from '../../session';
import { Loading, useLoad } from '../../ui';
import { capsOf } from '../Guardrails';
import { type Call, type Connection, type Settings, type Tool } from './shared';
import { SettingsCard } from './SettingsCard';
import { KeyGuardrailsCard } from './KeyGuardrails';
import { Connections } from './Connections';
import { Calls } from './Calls';

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
              // A new card (its edits reset to what the server holds) when these settings change, not when a use
              // count or the key caps do: a reload after another card's save keeps this card's unsaved edits.
              key={JSON.stringify([data[0].enabled, data[0].access_level, data[0].tool_overrides, data[0].toolsets])}
              settings={data[0]}
              tools={data[1]}
              onSaved={reload}
            />
            <KeyGuardrailsCard
              canEdit={can('mcp.updateSettings')}
              key={`keys${JSON.stringify(capsOf(data[0].key_guardrails))}`}
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

const idsOf = (list: { id: string }[] | { data: { id: string }[] }) =>
  (Array.isArray(list) ? list : list.data).map((e) => e.id);
