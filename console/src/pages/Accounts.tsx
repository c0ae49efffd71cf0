import {
  Anchor,
  Badge,
  Card,
  Group,
  Pagination,
  Progress,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Timeline,
  Title,
} from '@mantine/core';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { appApi, type Incentive, type Plan } from '../api';
import { Loading, useLoad } from '../ui';
import { accountWorkflowsQuery, useTemporalUi, WorkflowLink, workflowsQueryUrl } from '../temporal';
import { plural } from '../plural';
import { BillingTimeline, SubscriptionCard } from './AccountBilling';
import { AccountCredits } from './AccountCredits';

export function AccountsPage() {
  const { appId } = useParams();
  const api = appApi(appId!);
  const [q, setQ] = useState('');
  const [page, setPage] = useState(1);
  const { data, error } = useLoad(() => api.accounts.list({ q, page, per_page: 20 }), [appId, q, page]);
  return (
    <Stack>
      <Title order={2}>Accounts</Title>
      <TextInput
        label="Search accounts"
        placeholder="Account id or name"
        value={q}
        onChange={(e) => {
          setQ(e.currentTarget.value);
          setPage(1);
        }}
        maw={420}
      />
      <Loading error={error}>
        {data &&
          (data.total === 0 ? (
            <Card withBorder>
              <Text>
                {q
                  ? `No account matches "${q}".`
                  : 'No accounts yet. Create them from your backend with POST /apps/:appId/namespaces, or import them.'}
              </Text>
            </Card>
          ) : (
            <>
              <Text size="sm" c="dimmed">
                {plural(data.total, 'account')}
              </Text>
              <Table.ScrollContainer minWidth={480}>
                <Table striped highlightOnHover>
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Account</Table.Th>
                      <Table.Th>Plan</Table.Th>
                      <Table.Th>Incentive</Table.Th>
                      <Table.Th>Created</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {data.data.map((a) => (
                      <Table.Tr key={a.id}>
                        <Table.Td>
                          <Anchor component={Link} to={`/apps/${appId}/accounts/${encodeURIComponent(a.id)}`}>
                            {a.name || a.id}
                          </Anchor>
                          {a.name && (
                            <Text size="xs" c="dimmed">
                              {a.id}
                            </Text>
                          )}
                        </Table.Td>
                        <Table.Td>{a.plan}</Table.Td>
                        <Table.Td>{a.incentive ?? '—'}</Table.Td>
                        <Table.Td>{new Date(a.created_at).toLocaleDateString()}</Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </Table.ScrollContainer>
              {data.total > data.per_page && (
                <Pagination
                  total={Math.ceil(data.total / data.per_page)}
                  value={page}
                  onChange={setPage}
                  aria-label="Pages"
                />
              )}
            </>
          ))}
      </Loading>
    </Stack>
  );
}

interface EventRow {
  id: string;
  type: string;
  created_at: string;
  data: { object?: { id?: string; account_id?: string }; account?: { id?: string } };
}

/** Which layer set an entitlement's limit: the incentive overrides the offer's extras, which override the plan. */
function layerOf(
  id: string,
  max: number | null,
  plan: Plan | undefined,
  incentive: Incentive | undefined,
  incentiveActive: boolean,
) {
  const o = incentive?.entitlements?.find((x) => x.id === id);
  if (o && incentiveActive) return `incentive ${incentive!.name}`;
  const p = plan?.entitlements.find((x) => x.id === id);
  if (p && p.max === max) return `plan ${plan!.name}`;
  if (p) return 'offer extras';
  return plan ? `plan ${plan.name}` : 'plan';
}

export function AccountPage() {
  const { appId, accountId } = useParams();
  const api = appApi(appId!);
  const id = accountId!;
  const { data, error, reload } = useLoad(async () => {
    const [account, access, events, reservations] = await Promise.all([
      api.accounts.get(id),
      api.access.getPrivate(id),
      api.events.list({ limit: 100 }).then((r) => r.data as EventRow[]),
      api.reservations.list(id),
    ]);
    const [plan, incentive] = await Promise.all([
      api.plans.get(access.plan.id).catch(() => undefined),
      account.incentive ? api.incentives.get(account.incentive).catch(() => undefined) : undefined,
    ]);
    const mine = events.filter(
      (e) =>
        e.data?.object?.id === accountId ||
        e.data?.object?.account_id === accountId ||
        e.data?.account?.id === accountId,
    );
    return { account, access, plan, incentive, reservations, events: mine };
  }, [appId, accountId]);
  const temporal = useTemporalUi();
  // Bumped after each billing intent: the timeline reads its first page again (the account is reloaded with it).
  const [billingVersion, setBillingVersion] = useState(0);
  const billingChanged = () => {
    void reload();
    setBillingVersion((v) => v + 1);
  };
  return (
    <Stack>
      <Anchor component={Link} to={`/apps/${appId}/accounts`} size="sm">
        ← Accounts
      </Anchor>
      <Loading error={error}>
        {data && (
          <>
            <Group justify="space-between">
              <Title order={2}>{data.account.name || data.account.id}</Title>
              <Badge size="lg">{data.access.plan.name}</Badge>
            </Group>
            <SubscriptionCard
              appId={appId!}
              accountId={id}
              sub={data.account.subscription}
              onChanged={billingChanged}
            />
            <SimpleGrid cols={{ base: 1, md: 2 }}>
              <Card withBorder>
                <Title order={3} size="h4" mb="xs">
                  Usage against limits
                </Title>
                <Stack gap="sm">
                  {data.access.entitlements.map((e) => (
                    <div key={e.id}>
                      <Group justify="space-between" gap="xs">
                        <Text size="sm" fw={600}>
                          {e.name}
                        </Text>
                        <Text size="sm" aria-label={`${e.name} usage`}>
                          {e.type === 'boolean'
                            ? e.can
                              ? 'included'
                              : 'not included'
                            : `${e.usage} / ${e.max ?? '∞'}`}
                        </Text>
                      </Group>
                      {e.type === 'usage' && (
                        <Progress
                          aria-label={`${e.name} usage bar`}
                          value={e.max ? Math.min(100, (e.usage / e.max) * 100) : 0}
                          color={!e.can ? 'red' : e.max && e.usage / e.max >= 0.8 ? 'orange' : 'indigo'}
                        />
                      )}
                      <Text size="xs" c="dimmed">
                        limit set by {layerOf(e.id, e.max, data.plan, data.incentive, !!data.account.incentive)}
                        {e.credits &&
                          ` · draws ${e.credits.cost} ${
                            data.access.credits.find((p) => p.id === e.credits!.pool)?.name ?? e.credits.pool
                          } a unit`}
                      </Text>
                    </div>
                  ))}
                  {data.access.entitlements.length === 0 && <Text size="sm">The plan includes no entitlements.</Text>}
                </Stack>
              </Card>
              <Card withBorder>
                <Title order={3} size="h4" mb="xs">
                  Access layers
                </Title>
                <Stack gap={6}>
                  <Text size="sm">1. Plan: {data.access.plan.name}</Text>
                  <Text size="sm">2. Offer extras: {data.access.offer ?? 'none (not bought through an offer)'}</Text>
                  <Text size="sm">
                    3. Incentive: {data.incentive?.name ?? 'none'}
                    {data.account.incentive_expires_at &&
                      ` until ${new Date(data.account.incentive_expires_at).toLocaleString()}`}
                  </Text>
                  <Text size="sm">Add-ons: {data.access.addons.join(', ') || 'none'}</Text>
                  {temporal && (
                    <Group gap="xs">
                      {/* The account's actor ends the incentive at its date (the subscription card links it too). */}
                      <WorkflowLink size="sm" id={data.account.incentive_workflow_id}>
                        Incentive expiry workflow
                      </WorkflowLink>
                      <Anchor
                        size="sm"
                        href={workflowsQueryUrl(temporal, accountWorkflowsQuery(appId!, accountId!))}
                        target="_blank"
                        rel="noreferrer"
                      >
                        Search this account&apos;s workflows in Temporal
                      </Anchor>
                    </Group>
                  )}
                </Stack>
              </Card>
            </SimpleGrid>
            <AccountCredits appId={appId!} accountId={id} version={billingVersion} />
            <BillingTimeline appId={appId!} accountId={id} version={billingVersion} />
            <Card withBorder>
              <Title order={3} size="h4" mb="xs">
                Reservations
              </Title>
              {data.reservations.length === 0 ? (
                <Text size="sm" c="dimmed">
                  No usage reserved for this account.
                </Text>
              ) : (
                <Stack gap={6} aria-label="Reservations">
                  {data.reservations.map((r) => (
                    <Group key={r.id} gap="xs" wrap="wrap">
                      <Badge variant="light" color={r.status === 'held' ? 'blue' : 'gray'}>
                        {r.status}
                      </Badge>
                      <Text size="sm">
                        {r.amount.toLocaleString()} {r.entitlement}
                        {r.status === 'held'
                          ? ` until ${new Date(r.expires_at).toLocaleString()}`
                          : r.committed !== null
                            ? `, ${r.committed.toLocaleString()} committed`
                            : ''}
                      </Text>
                      <WorkflowLink id={r.workflow_id}>Expiry workflow</WorkflowLink>
                    </Group>
                  ))}
                </Stack>
              )}
            </Card>
            <Card withBorder>
              <Title order={3} size="h4" mb="xs">
                Events
              </Title>
              {data.events.length === 0 ? (
                <Text size="sm" c="dimmed">
                  No events for this account in the last 100 of the app.
                </Text>
              ) : (
                <Timeline bulletSize={12} lineWidth={2}>
                  {data.events.map((e) => (
                    <Timeline.Item key={e.id} title={e.type}>
                      <Text size="xs" c="dimmed">
                        {new Date(e.created_at).toLocaleString()}
                      </Text>
                    </Timeline.Item>
                  ))}
                </Timeline>
              )}
            </Card>
          </>
        )}
      </Loading>
    </Stack>
  );
}
