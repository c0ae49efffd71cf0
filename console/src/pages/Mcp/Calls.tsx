// The tool call log: the latest MCP tool calls of the app's connections.
import { Badge, Card, Code, Stack, Table, Text, Title } from '@mantine/core';
import { type Call, type Connection } from './shared';

export function Calls({ calls, connections }: { calls: Call[]; connections: Connection[] }) {
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
