// The flow's last 30 days: outcomes, reasons and offer results as charts and a table.
import { BarChart, DonutChart } from '@mantine/charts';
import { Card, Group, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import type { AppApi } from '../../api';
import { plural } from '../../plural';

export function Stats({ stats }: { stats: Awaited<ReturnType<AppApi['cancelFlows']['stats']>> }) {
  const outcomes = [
    { name: 'Saved', value: stats.saved, color: 'teal.6' },
    { name: 'Cancelled', value: stats.cancelled, color: 'red.6' },
    { name: 'Abandoned', value: stats.abandoned, color: 'gray.5' },
    { name: 'Open', value: stats.open, color: 'yellow.5' },
  ].filter((o) => o.value > 0);
  return (
    <Card withBorder>
      <Stack gap="sm">
        <Group justify="space-between" wrap="wrap">
          <Title order={3} size="h5">
            Last {plural(stats.days, 'day')}
          </Title>
          <Text size="sm" aria-label="Save rate">
            {plural(stats.sessions, 'session')} · save rate {(stats.save_rate * 100).toFixed(0)}%
            {stats.revenue_kept.map((r) => ` · ${r.monthly} ${r.currency}/month kept`).join('')}
          </Text>
        </Group>
        {stats.sessions === 0 ? (
          <Text c="dimmed">
            No sessions yet. Start one from your app with an account token when a customer cancels.
          </Text>
        ) : (
          <SimpleGrid cols={{ base: 1, sm: 3 }}>
            <Stack gap={4} align="center">
              <Text size="sm" fw={600}>
                Outcomes
              </Text>
              <DonutChart data={outcomes} size={140} thickness={22} withLabelsLine={false} withLabels />
            </Stack>
            <Stack gap={4}>
              <Text size="sm" fw={600}>
                Reasons
              </Text>
              <BarChart
                h={160}
                data={stats.reasons.map((r) => ({ reason: r.label, count: r.count }))}
                dataKey="reason"
                series={[{ name: 'count', color: 'indigo.6' }]}
                orientation="vertical"
                yAxisProps={{ width: 110 }}
              />
            </Stack>
            <Stack gap={4}>
              <Text size="sm" fw={600}>
                Offers
              </Text>
              <Table fz="xs" aria-label="Offer results">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Offer</Table.Th>
                    <Table.Th ta="right">Shown</Table.Th>
                    <Table.Th ta="right">Taken</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {stats.offers.map((o) => (
                    <Table.Tr key={`${o.kind}/${o.source}`}>
                      <Table.Td>{o.kind}</Table.Td>
                      <Table.Td ta="right">{o.shown}</Table.Td>
                      <Table.Td ta="right">
                        {o.accepted} ({(o.acceptance_rate * 100).toFixed(0)}%)
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Stack>
          </SimpleGrid>
        )}
      </Stack>
    </Card>
  );
}
