// The analytics page's credits (issue 42): credits consumed over the page's interval, per pool and per feature, and
// per bucket stacked by feature (GET /apps/:appId/analytics/credits, read from the credits ledger), and top-up revenue
// (GET /apps/:appId/analytics/credits/topups: pack orders PayPal captured, less refunds). Shown on apps with a credits
// pool only.
import { BarChart } from '@mantine/charts';
import { Card, Group, SimpleGrid, Stack, Table, Text } from '@mantine/core';
import type { AnalyticsCreditsQuery } from '@offerkit/sdk';
import { appApi } from '../api';
import { Loading, useLoad } from '../ui';

const COLORS = ['indigo.6', 'teal.6', 'orange.6', 'grape.6', 'cyan.6', 'pink.6', 'lime.7', 'yellow.7'];
const n = (v: number) => v.toLocaleString('en-US');

export function CreditsConsumed({
  appId,
  interval,
  hasPools,
}: {
  appId: string;
  interval: AnalyticsCreditsQuery['interval'];
  hasPools: boolean;
}) {
  const api = appApi(appId);
  const { data, error } = useLoad(
    () => (hasPools ? api.analytics.credits({ interval }) : Promise.resolve(null)),
    [appId, interval, hasPools],
  );
  if (!hasPools) return null;
  return (
    <Card withBorder component="section" aria-label="Credits consumed">
      <Text fw={600} mb="xs">
        Credits consumed per {data?.bucket ?? 'day'}
      </Text>
      <Loading error={error}>
        {data &&
          (data.debited === 0 && data.refunded === 0 ? (
            <Text size="sm" c="dimmed">
              No feature drew credits in this interval.
            </Text>
          ) : (
            <Stack>
              <SimpleGrid cols={{ base: 2, md: 4 }} aria-label="Credits consumed per pool">
                {data.pools.map((p) => (
                  <Card withBorder key={p.pool} padding="sm">
                    <Text size="xs" c="dimmed">
                      {p.name ?? p.pool}
                    </Text>
                    <Text fw={700} size="xl" aria-label={`${p.name ?? p.pool} consumed`}>
                      {n(p.consumed)}
                    </Text>
                    {p.refunded > 0 && (
                      <Text size="xs" c="dimmed">
                        {n(p.debited)} drawn, {n(p.refunded)} refunded
                      </Text>
                    )}
                  </Card>
                ))}
              </SimpleGrid>
              <BarChart
                h={240}
                type="stacked"
                data={data.points.map((p) => ({
                  date: p.start.slice(5, 10),
                  ...Object.fromEntries(data.features.map((f) => [f.feature, 0])),
                  ...Object.fromEntries(p.features.map((f) => [f.feature, f.consumed])),
                }))}
                dataKey="date"
                series={data.features
                  .filter((f, i, all) => all.findIndex((x) => x.feature === f.feature) === i)
                  .map((f, i) => ({ name: f.feature, label: f.name ?? f.feature, color: COLORS[i % COLORS.length] }))}
                withLegend
              />
              <Table.ScrollContainer minWidth={260}>
                <Table striped aria-label="Credits consumed per feature" fz="sm">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Feature</Table.Th>
                      <Table.Th>Pool</Table.Th>
                      <Table.Th ta="right">Consumed</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {data.features.map((f) => (
                      <Table.Tr key={`${f.pool}:${f.feature}`}>
                        <Table.Td>{f.name ?? f.feature}</Table.Td>
                        <Table.Td>{data.pools.find((p) => p.pool === f.pool)?.name ?? f.pool}</Table.Td>
                        <Table.Td ta="right">
                          <Group gap={4} justify="flex-end" wrap="nowrap">
                            {n(f.consumed)}
                            {f.refunded > 0 && (
                              <Text size="xs" c="dimmed">
                                ({n(f.refunded)} refunded)
                              </Text>
                            )}
                          </Group>
                        </Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </Table.ScrollContainer>
            </Stack>
          ))}
      </Loading>
    </Card>
  );
}

/** Money as the catalog shows a pack's price: two decimals and the currency code (e.g. `7.50 USD`). */
const money = (v: number, currency: string) => `${v.toFixed(2)} ${currency}`;

/**
 * Top-up revenue over the page's interval (GET /apps/:appId/analytics/credits/topups): the credit pack orders PayPal
 * confirmed captured, less what was refunded of them, per currency (never added across currencies) and per pack.
 */
export function CreditTopups({
  appId,
  interval,
  hasPools,
}: {
  appId: string;
  interval: AnalyticsCreditsQuery['interval'];
  hasPools: boolean;
}) {
  const api = appApi(appId);
  const { data, error } = useLoad(
    () => (hasPools ? api.analytics.creditTopups({ interval }) : Promise.resolve(null)),
    [appId, interval, hasPools],
  );
  if (!hasPools) return null;
  return (
    <Card withBorder component="section" aria-label="Top-up revenue">
      <Text fw={600} mb="xs">
        Top-up revenue
      </Text>
      <Loading error={error}>
        {data &&
          (data.data.length === 0 ? (
            <Text size="sm" c="dimmed">
              No credit pack was paid for in this interval.
            </Text>
          ) : (
            <Stack>
              <SimpleGrid cols={{ base: 2, md: 4 }} aria-label="Top-up revenue per currency">
                {data.totals.map((t) => (
                  <Card withBorder key={t.currency} padding="sm">
                    <Text size="xs" c="dimmed">
                      Net {t.currency}
                    </Text>
                    <Text fw={700} size="xl" aria-label={`Net ${t.currency}`}>
                      {money(t.net, t.currency)}
                    </Text>
                    <Text size="xs" c="dimmed">
                      {n(t.orders)} {t.orders === 1 ? 'order' : 'orders'}
                      {t.refunded > 0 && `, ${money(t.refunded, t.currency)} refunded`}
                    </Text>
                  </Card>
                ))}
              </SimpleGrid>
              <Table.ScrollContainer minWidth={280}>
                <Table striped aria-label="Top-up revenue per pack" fz="sm" horizontalSpacing="xs">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Pack</Table.Th>
                      <Table.Th ta="right" visibleFrom="sm">
                        Orders
                      </Table.Th>
                      <Table.Th ta="right">Captured</Table.Th>
                      <Table.Th ta="right">Refunded</Table.Th>
                      <Table.Th ta="right">Net</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {data.data.map((r) => (
                      <Table.Tr key={`${r.pack}:${r.currency}`}>
                        <Table.Td>
                          {r.pack}{' '}
                          <Text span size="xs" c="dimmed">
                            {r.currency}
                          </Text>
                        </Table.Td>
                        {/* On a phone the counts are in the cards above: the money columns keep the width. */}
                        <Table.Td ta="right" visibleFrom="sm">
                          {n(r.orders)}
                        </Table.Td>
                        <Table.Td ta="right">{r.captured.toFixed(2)}</Table.Td>
                        <Table.Td ta="right">{r.refunded.toFixed(2)}</Table.Td>
                        <Table.Td ta="right" fw={600}>
                          {r.net.toFixed(2)}
                        </Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </Table.ScrollContainer>
              <Text size="xs" c="dimmed">
                Orders counted when PayPal confirmed the capture; refunds of them are taken off whenever they came.
              </Text>
            </Stack>
          ))}
      </Loading>
    </Card>
  );
}
