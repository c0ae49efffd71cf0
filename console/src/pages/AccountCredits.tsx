// The account page's credits (issue 42): each pool's balance and live grants (what is left of each, when it expires,
// where it came from), the ledger a page at a time (the API's opaque cursor), and "Grant credits" for the roles the
// route table lets grant (`credits.grant`), never on the read-only demo.
import {
  Anchor,
  Badge,
  Button,
  Card,
  Group,
  Modal,
  NumberInput,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import type { CreditsGetResponse, CreditsLedgerResponse } from '@offerkit/sdk';
import { useState, type FormEvent } from 'react';
import { appApi } from '../api';
import { isoFromLocal } from '../forms';
import { useCan } from '../session';
import { WorkflowLink } from '../temporal';
import { CursorPager, ErrorText, Loading, useAction, useLoad } from '../ui';

type Pool = CreditsGetResponse['data'][number];
type Entry = CreditsLedgerResponse['data'][number];

const LEDGER_PAGE = 20;
const n = (v: number) => v.toLocaleString('en-US');
const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : 'never');
const SOURCE_WORDS: Record<Pool['grants'][number]['source'], string> = {
  plan: 'plan grant',
  api: 'granted',
  pack: 'top-up pack',
  refund: 'refund',
  rollover: 'rollover',
};

/** The account's credits; `version` changes when the page around it reloads. */
export function AccountCredits({ appId, accountId, version }: { appId: string; accountId: string; version: number }) {
  const api = appApi(appId);
  const can = useCan(appId);
  const [granting, setGranting] = useState(false);
  const [own, setOwn] = useState(0);
  const { data, error, reload } = useLoad(async () => {
    const [credits, entitlements] = await Promise.all([api.credits.get(accountId), api.entitlements.list()]);
    const catalogPools = entitlements.filter((e) => e.type === 'credits');
    // Members (entities) are read only where a pool is kept per entity: the grant dialog names one of them.
    const perEntity = catalogPools.some((p) => p.credits && 'per' in p.credits && p.credits.per === 'entity');
    const entities = perEntity ? (await api.entities.list(accountId)).data : [];
    return { pools: credits.data, catalogPools, entities };
  }, [appId, accountId, version]);
  // Nothing to show on an app without pools: the section stays away (and is not drawn while that is not known yet).
  if (!data && !error) return null;
  if (data && data.catalogPools.length === 0 && data.pools.length === 0) return null;
  return (
    <Card withBorder component="section" aria-label="Credits">
      <Group justify="space-between" mb="xs">
        <Title order={3} size="h4">
          Credits
        </Title>
        {can('credits.grant') && data && (
          <Button size="xs" variant="light" data-route="credits.grant" onClick={() => setGranting(true)}>
            Grant credits
          </Button>
        )}
      </Group>
      <Loading error={error}>
        {data && (
          <Stack>
            {data.pools.length === 0 ? (
              <Text size="sm" c="dimmed">
                No credits yet: the account&apos;s plan grants none, and nothing was granted to it.
              </Text>
            ) : (
              <SimpleGrid cols={{ base: 1, md: 2 }}>
                {data.pools.map((p) => (
                  <PoolCard key={p.pool} pool={p} />
                ))}
              </SimpleGrid>
            )}
            <Ledger appId={appId} accountId={accountId} version={version + own} />
          </Stack>
        )}
      </Loading>
      {granting && data && (
        <GrantDialog
          appId={appId}
          accountId={accountId}
          pools={data.catalogPools.map((p) => ({
            value: p.id,
            label: p.name,
            perEntity: !!p.credits && 'per' in p.credits && p.credits.per === 'entity',
          }))}
          entities={data.entities.map((e) => ({ value: e.id, label: e.name ? `${e.name} (${e.id})` : e.id }))}
          onClose={() => setGranting(false)}
          onGranted={() => {
            setGranting(false);
            // Read again in place (the card stays), and the ledger's first page with the new row.
            void reload();
            setOwn((v) => v + 1);
          }}
        />
      )}
    </Card>
  );
}

function PoolCard({ pool }: { pool: Pool }) {
  const each = pool.per === 'entity' ? ' to each member' : '';
  const per = pool.unlimited
    ? 'unlimited on its plan: draws take nothing'
    : pool.granted_per_period !== null
      ? `its plan grants ${n(pool.granted_per_period)} a month${each}`
      : 'its plan grants none';
  return (
    <Card withBorder padding="sm" component="section" aria-label={`Pool ${pool.name}`}>
      <Group justify="space-between" align="flex-start" gap="xs">
        <div>
          <Text fw={600}>{pool.name}</Text>
          <Text size="xs" c="dimmed">
            <code>{pool.pool}</code> · {per}
          </Text>
        </div>
        <Text size="xl" fw={700} aria-label={`${pool.name} balance`}>
          {pool.unlimited ? '∞' : n(pool.balance)}
        </Text>
      </Group>
      {pool.entities && <Members pool={pool} />}
      {pool.grants.length === 0 ? (
        <Text size="sm" c="dimmed" mt="xs">
          No live grants.
        </Text>
      ) : (
        <Table.ScrollContainer minWidth={280} mt="xs">
          <Table striped aria-label={`${pool.name} grants`} fz="sm">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Left / granted</Table.Th>
                <Table.Th>Expires</Table.Th>
                <Table.Th>Source</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {pool.grants.map((g) => (
                <Table.Tr key={g.id}>
                  <Table.Td>
                    {n(g.remaining)} / {n(g.amount)}
                  </Table.Td>
                  <Table.Td>{when(g.expires_at)}</Table.Td>
                  <Table.Td>
                    {SOURCE_WORDS[g.source]}
                    {g.entity && (
                      <Text size="xs" c="dimmed">
                        to {g.entity}
                      </Text>
                    )}
                    {g.reason && (
                      <Text size="xs" c="dimmed">
                        {g.reason}
                      </Text>
                    )}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Card>
  );
}

/** A per-entity pool's members, each with its own balance (the pool's figure above is their sum). */
function Members({ pool }: { pool: Pool }) {
  const rows = pool.entities ?? [];
  if (!rows.length)
    return (
      <Text size="sm" c="dimmed" mt="xs">
        Kept per member: no members registered yet.
      </Text>
    );
  return (
    <Table.ScrollContainer minWidth={260} mt="xs">
      <Table striped aria-label={`${pool.name} by member`} fz="sm">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Member</Table.Th>
            <Table.Th ta="right">Balance</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rows.map((m) => (
            <Table.Tr key={m.entity}>
              <Table.Td>
                {m.name ?? m.entity}{' '}
                {m.name && (
                  <Text span size="xs" c="dimmed">
                    <code>{m.entity}</code>
                  </Text>
                )}{' '}
                {!m.registered && (
                  <Badge size="xs" variant="light" color="gray">
                    removed
                  </Badge>
                )}
              </Table.Td>
              <Table.Td ta="right" ff="monospace">
                {n(m.balance)}
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

/** Where a ledger row came from: the request that made it, or the workflow (a plan grant, an expiry). */
function Source({ e }: { e: Entry }) {
  if (e.workflow_id) return <WorkflowLink id={e.workflow_id}>workflow</WorkflowLink>;
  if (e.request_id)
    return (
      <Text size="xs" c="dimmed" style={{ wordBreak: 'break-all' }}>
        {e.request_id}
      </Text>
    );
  return null;
}

function Ledger({ appId, accountId, version }: { appId: string; accountId: string; version: number }) {
  const api = appApi(appId);
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  // A change (a grant, the page reloaded) starts again from the newest page.
  const [seen, setSeen] = useState(version);
  if (seen !== version) {
    setSeen(version);
    setCursors([undefined]);
  }
  const cursor = cursors[cursors.length - 1];
  const { data, error } = useLoad(
    () => api.credits.ledger(accountId, { limit: LEDGER_PAGE, ...(cursor ? { cursor } : {}) }),
    [appId, accountId, cursor, version],
  );
  return (
    <Stack gap="xs">
      <Title order={4} size="h5">
        Ledger
      </Title>
      <Loading error={error}>
        {data &&
          (data.data.length === 0 ? (
            <Text size="sm" c="dimmed">
              No credits moved yet.
            </Text>
          ) : (
            <>
              <Table.ScrollContainer minWidth={520}>
                <Table striped aria-label="Credits ledger" fz="sm">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>When</Table.Th>
                      <Table.Th ta="right">Credits</Table.Th>
                      <Table.Th>What</Table.Th>
                      <Table.Th>Pool</Table.Th>
                      <Table.Th>Source</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {data.data.map((e) => (
                      <Table.Tr key={e.id}>
                        <Table.Td>{new Date(e.created_at).toLocaleString()}</Table.Td>
                        <Table.Td ta="right" ff="monospace">
                          {e.amount > 0 ? '+' : ''}
                          {n(e.amount)}
                        </Table.Td>
                        <Table.Td>
                          <Badge size="sm" variant="light" color={e.amount < 0 ? 'orange' : 'teal'}>
                            {e.kind}
                          </Badge>{' '}
                          {e.feature}
                        </Table.Td>
                        <Table.Td>
                          {e.pool}
                          {e.entity && (
                            <Text size="xs" c="dimmed">
                              {e.entity}
                            </Text>
                          )}
                        </Table.Td>
                        <Table.Td>
                          <Source e={e} />
                        </Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </Table.ScrollContainer>
              <CursorPager cursors={cursors} setCursors={setCursors} next={data.next_cursor} />
            </>
          ))}
      </Loading>
    </Stack>
  );
}

const GRANT_FIELDS = ['pool', 'entity', 'amount', 'expires_at', 'reason'] as const;

/** Grant credits, with an Idempotency-Key per body: a second click (or the SDK's retry) grants once. */
function GrantDialog({
  appId,
  accountId,
  pools,
  entities,
  onClose,
  onGranted,
}: {
  appId: string;
  accountId: string;
  pools: { value: string; label: string; perEntity: boolean }[];
  entities: { value: string; label: string }[];
  onClose: () => void;
  onGranted: () => void;
}) {
  // The key goes with the body: the same body sent again (a double click, a retry) reuses it, a changed one (after a
  // refusal, which the server keeps under the key too) gets a new one.
  const [sent, setSent] = useState<{ body: string; key: string } | null>(null);
  const [pool, setPool] = useState<string | null>(pools.length === 1 ? pools[0].value : null);
  const [entity, setEntity] = useState<string | null>(null);
  const [amount, setAmount] = useState<string | number>('');
  // A pool kept per member grants to one member: the dialog asks which (the server refuses a grant without one).
  const perEntity = pools.find((p) => p.value === pool)?.perEntity ?? false;
  const [expires, setExpires] = useState('');
  const [reason, setReason] = useState('');
  const action = useAction(GRANT_FIELDS);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const body = {
      pool: pool ?? '',
      ...(perEntity ? { entity: entity ?? '' } : {}),
      amount: amount === '' ? 0 : Number(amount),
      expires_at: isoFromLocal(expires),
      reason: reason.trim() || null,
    };
    const text = JSON.stringify(body);
    const key = sent?.body === text ? sent.key : crypto.randomUUID();
    setSent({ body: text, key });
    if (await action.run(() => appApi(appId).credits.grant(accountId, body, { idempotencyKey: key }))) onGranted();
  };
  return (
    <Modal opened onClose={onClose} title={`Grant credits to ${accountId}`}>
      <form onSubmit={submit} aria-label="Grant credits">
        <Stack gap="xs">
          <Select
            label="Pool"
            required
            data={pools.map(({ value, label }) => ({ value, label }))}
            value={pool}
            error={action.field('pool')}
            onChange={setPool}
            allowDeselect={false}
          />
          {perEntity && (
            <Select
              label="Member"
              description="The pool is kept per member: the credits go to this one."
              required
              data={entities}
              value={entity}
              error={action.field('entity') ?? (entities.length ? undefined : 'No members registered yet')}
              onChange={setEntity}
              allowDeselect={false}
            />
          )}
          <NumberInput
            label="Credits"
            required
            min={1}
            clampBehavior="none"
            allowDecimal={false}
            thousandSeparator=","
            value={amount}
            error={action.field('amount')}
            onChange={setAmount}
          />
          <TextInput
            type="datetime-local"
            label="Expires"
            description="Blank: never. On the app's clock (a test clock moves it)."
            value={expires}
            error={action.field('expires_at')}
            onChange={(e) => setExpires(e.currentTarget.value)}
          />
          <TextInput
            label="Reason"
            placeholder="support: outage credit"
            maxLength={500}
            value={reason}
            error={action.field('reason')}
            onChange={(e) => setReason(e.currentTarget.value)}
          />
          <ErrorText error={action.error} title="Not granted" />
          <Group justify="flex-end" gap="xs">
            <Anchor component="button" type="button" size="sm" onClick={onClose}>
              Cancel
            </Anchor>
            <Button type="submit" loading={action.busy} data-route="credits.grant">
              Grant
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
