// The sessions of one cancel flow, with their answers, offer and outcome.
import { Badge, Card, Stack, Table, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import type { AppApi } from '../../api';
import { CursorPager, ErrorText, useLoad } from '../../ui';

const SESSION_COLORS: Record<string, string> = { open: 'yellow', saved: 'teal', cancelled: 'red', abandoned: 'gray' };

/** The flow's sessions, newest first, 20 a page (Newer / Older over the list's cursor pages). */
export function Sessions({ api, flowId }: { api: AppApi; flowId: string }) {
  const { appId } = useParams();
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const page = useLoad(() => api.cancelSessions.list({ flow: flowId, limit: 20, cursor }), [api, flowId, cursor]);
  const sessions = page.data?.data ?? [];
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Title order={3} size="h5">
          Sessions
        </Title>
        <ErrorText error={page.error} />
        {page.data && sessions.length === 0 ? (
          <Text c="dimmed">No sessions yet.</Text>
        ) : (
          <Table.ScrollContainer minWidth={520}>
            <Table striped aria-label="Sessions">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Started</Table.Th>
                  <Table.Th>Account</Table.Th>
                  <Table.Th>Answers</Table.Th>
                  <Table.Th>Offer</Table.Th>
                  <Table.Th>Outcome</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {sessions.map((s) => (
                  <Table.Tr key={s.id}>
                    <Table.Td>{new Date(s.created_at).toLocaleDateString('en-CA')}</Table.Td>
                    <Table.Td>
                      <Link to={`/apps/${appId}/accounts/${encodeURIComponent(s.account.id)}`}>{s.account.id}</Link>
                    </Table.Td>
                    <Table.Td>
                      {Object.values(s.answers)
                        .map((a) => a.answer ?? a.text)
                        .filter(Boolean)
                        .join(', ') || '—'}
                    </Table.Td>
                    <Table.Td>{s.offer ? `${s.offer.kind} (${s.offer.status})` : '—'}</Table.Td>
                    <Table.Td>
                      <Badge color={SESSION_COLORS[s.status]}>{s.status}</Badge>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
        {page.data && <CursorPager cursors={cursors} setCursors={setCursors} next={page.data.next_cursor} />}
      </Stack>
    </Card>
  );
}
