import { AreaChart, BarChart } from '@mantine/charts';
import { Card, Group, SegmentedControl, Select, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { useParams } from 'react-router';
import type { AnalyticsSummaryQuery } from '@offerkit/sdk';
import { appApi } from '../api';
import { Loading, useLoad } from '../ui';

const INTERVALS = ['7d', '30d', '60d', '6m', 'year', 'alltime'];

type Interval = AnalyticsSummaryQuery['interval'];

export function AnalyticsPage() {
  const { appId } = useParams();
  const api = appApi(appId!);
  const [interval, setInterval] = useState<Interval>('30d');
  const [entitlement, setEntitlement] = useState<string | null>(null);
  const ents = useLoad(() => api.entitlements.list(), [appId]);
  const { data, error } = useLoad(async () => {
    const q = { interval, entitlement: entitlement ?? undefined };
    const [summary, series, top] = await Promise.all([
      api.analytics.summary({ interval }),
      api.analytics.timeseries(q),
      api.analytics.topAccounts({ ...q, limit: 10 }),
    ]);
    return { summary, series, top };
  }, [appId, interval, entitlement]);
  const usage = (ents.data ?? []).filter((e) => e.type === 'usage');
  return (
    <Stack>
      <Title order={2}>Analytics</Title>
      <Group>
        <SegmentedControl
          aria-label="Interval"
          data={INTERVALS}
          value={interval}
          onChange={(v) => setInterval(v as Interval)}
        />
        <Select
          aria-label="Entitlement"
          placeholder="All entitlements"
          clearable
          data={usage.map((e) => ({ value: e.id, label: e.name }))}
          value={entitlement}
          onChange={setEntitlement}
          w={220}
        />
      </Group>
      <Loading error={error}>
        {data && (
          <>
            <SimpleGrid cols={{ base: 2, md: 4 }}>
              {data.summary.entitlements.map((e) => (
                <Card withBorder key={e.id}>
                  <Text size="xs" c="dimmed">
                    {e.name ?? e.id}
                  </Text>
                  <Text fw={700} size="xl">
                    {e.amount.toLocaleString()}
                  </Text>
                  <Text size="xs" c="dimmed">
                    {e.calls.toLocaleString()} calls
                  </Text>
                </Card>
              ))}
            </SimpleGrid>
            <Card withBorder>
              <Text fw={600} mb="xs">
                Usage per {data.series.bucket}
              </Text>
              {data.series.points.every((p) => p.amount === 0) ? (
                <Text size="sm" c="dimmed">
                  No usage in this interval. Usage appears as soon as your backend records it.
                </Text>
              ) : (
                <AreaChart
                  h={260}
                  data={data.series.points.map((p) => ({
                    date: p.start.slice(5, 10),
                    Amount: p.amount,
                    Calls: p.calls,
                  }))}
                  dataKey="date"
                  series={[
                    { name: 'Amount', color: 'indigo.6' },
                    { name: 'Calls', color: 'teal.6' },
                  ]}
                  curveType="monotone"
                  withDots={false}
                />
              )}
            </Card>
            <Card withBorder>
              <Text fw={600} mb="xs">
                Top accounts
              </Text>
              {data.top.data.length === 0 ? (
                <Text size="sm" c="dimmed">
                  No account used anything in this interval.
                </Text>
              ) : (
                <BarChart
                  h={Math.max(200, data.top.data.length * 28)}
                  data={data.top.data.map((d) => ({ account: d.account_id, Amount: d.amount }))}
                  dataKey="account"
                  orientation="vertical"
                  yAxisProps={{ width: 110 }}
                  series={[{ name: 'Amount', color: 'indigo.6' }]}
                />
              )}
            </Card>
          </>
        )}
      </Loading>
    </Stack>
  );
}
