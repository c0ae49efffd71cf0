// The MCP server's settings card: on or off, the default access level, toolsets and per-tool switches.
import { Badge, Button, Card, Code, Group, MultiSelect, Select, SimpleGrid, Stack, Switch, Text } from '@mantine/core';
import { useState } from 'react';
import { useParams } from 'react-router';
import { adminApi } from '../../api';
import { ErrorText, useAction } from '../../ui';
import { EditableArea } from '../Catalog/shared';
import { GROUP_LABEL, NEEDS, RANK, type Level, type Settings, type Tool } from './shared';

export function SettingsCard({
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
      {/* Locked while a save and the reload after it run: the card is then drawn anew from what was saved, and an
          edit made meanwhile would vanish with it. */}
      <EditableArea canEdit={canEdit && !action.busy}>
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
