// The connections people approved: who, at which level, their calls, guardrails, and revoking them.
import { Badge, Box, Button, Card, Group, Paper, Stack, Table, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { useParams } from 'react-router';
import { adminApi } from '../../api';
import { ConfirmDialog, ErrorText, useAction } from '../../ui';
import { GuardrailsSummary } from '../Guardrails';
import { type Connection } from './shared';
import { EditGuardrails } from './KeyGuardrails';

const personOf = (c: Connection) => (c.user ? (c.user.email ?? c.user.name ?? c.user.id) : c.kind.replace('_', ' '));

/** A connection's level as the phone's cards word it. */
const levelOf = (c: Connection) =>
  c.effective_level
    ? `${c.effective_level}${c.access_level && c.effective_level !== c.access_level ? ` (approved ${c.access_level})` : ''}`
    : 'all tools';

export function Connections({
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
