// Usage analytics: an interval and entitlements pick the view (summary cards, usage over time, top accounts; credits
// consumed by pool and feature and top-up revenue on apps with credits pools, over the interval), and
// saved reports (GET/POST/PATCH/DELETE /apps/:appId/analytics/reports) keep a view under a name: pick one to load
// its controls, save the current view as a new one, update, rename or delete it. The loaded report's id is in the
// URL (`?report=rpt_...`), so a link opens the same view. Viewers load reports; members and above change them.
import { AreaChart, BarChart } from '@mantine/charts';
import {
  Alert,
  Badge,
  Button,
  Card,
  Group,
  Modal,
  MultiSelect,
  SegmentedControl,
  Select,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useEffect, useState, type FormEvent } from 'react';
import { useParams, useSearchParams } from 'react-router';
import type { AnalyticsSummaryQuery, ReportsGetResponse } from '@offerkit/sdk';
import { appApi, type AppApi } from '../api';
import { useCan, useDemo } from '../session';
import { ConfirmDialog, ErrorText, Loading, useAction, useLoad } from '../ui';
import { CreditsConsumed, CreditTopups } from './AnalyticsCredits';

const INTERVALS = ['7d', '30d', '60d', '6m', 'year', 'alltime'];
const DEFAULT_INTERVAL: Interval = '30d';

type Interval = AnalyticsSummaryQuery['interval'];
type Report = ReportsGetResponse;

/** What the page's controls pick; a saved report holds the same (no entitlements: all of them). */
interface View {
  interval: Interval;
  entitlements: string[];
}

/** A report's view: no interval saved is the page's default, no entitlements are all of them. */
const viewOf = (r: Report): View => ({ interval: r.interval ?? DEFAULT_INTERVAL, entitlements: r.entitlements ?? [] });
const sameView = (a: View, b: View) =>
  a.interval === b.interval &&
  a.entitlements.length === b.entitlements.length &&
  a.entitlements.every((e) => b.entitlements.includes(e));
/** The body that saves a view: the interval always, the entitlements only when some are picked. */
const bodyOf = (v: View) => ({ interval: v.interval, entitlements: v.entitlements.length ? v.entitlements : null });

export function AnalyticsPage() {
  const { appId } = useParams();
  const api = appApi(appId!);
  const [params, setParams] = useSearchParams();
  const reportId = params.get('report');
  const [view, setView] = useState<View>({ interval: DEFAULT_INTERVAL, entitlements: [] });
  const ents = useLoad(() => api.entitlements.list(), [appId]);
  const hasPools = (ents.data ?? []).some((e) => e.type === 'credits');
  const reports = useLoad(() => api.reports.list(), [appId]);
  const loaded = reportId ? reports.data?.find((r) => r.id === reportId) : undefined;
  // A report picked (or opened by its link) puts its view into the controls, once: changes made after stay.
  const [applied, setApplied] = useState<string | null>(null);
  useEffect(() => {
    if (loaded && applied !== loaded.id) {
      setView(viewOf(loaded));
      setApplied(loaded.id);
    } else if (!reportId && applied) setApplied(null);
  }, [loaded, applied, reportId]);
  const dirty = !!loaded && !sameView(view, viewOf(loaded));

  // Viewers read and load reports; members and above save them (the route table's roles). The read-only demo offers
  // no save: the server would refuse it.
  const can = useCan(appId);
  const canEdit = can('reports.create');

  const picked = [...view.entitlements].sort().join(',');
  const { data, error } = useLoad(async () => {
    const { interval, entitlements } = view;
    const [summary, series, top] = await Promise.all([
      api.analytics.summary({ interval }),
      seriesOf(api, interval, entitlements),
      topOf(api, interval, entitlements),
    ]);
    const cards = entitlements.length
      ? summary.entitlements.filter((e) => entitlements.includes(e.id))
      : summary.entitlements;
    return { cards, series, top };
  }, [appId, view.interval, picked]);
  const usage = (ents.data ?? []).filter((e) => e.type === 'usage');
  // A saved entitlement that is gone (or not a usage one) stays pickable under its id.
  const options = [
    ...usage.map((e) => ({ value: e.id, label: e.name })),
    ...view.entitlements.filter((id) => !usage.some((e) => e.id === id)).map((id) => ({ value: id, label: id })),
  ];

  return (
    <Stack>
      <Title order={2}>Analytics</Title>
      <SavedReports
        api={api}
        reports={reports}
        reportId={reportId}
        loaded={loaded}
        view={view}
        dirty={dirty}
        canEdit={canEdit}
        open={(id, replace = false) => setParams(id ? { report: id } : {}, { replace })}
        discard={() => loaded && setView(viewOf(loaded))}
        nameOf={(id) => (ents.data ?? []).find((e) => e.id === id)?.name ?? id}
      />
      <Group>
        <SegmentedControl
          aria-label="Interval"
          data={INTERVALS}
          value={view.interval}
          onChange={(v) => setView({ ...view, interval: v as Interval })}
        />
        <MultiSelect
          aria-label="Entitlements"
          placeholder={view.entitlements.length ? undefined : 'All entitlements'}
          clearable
          data={options}
          value={view.entitlements}
          onChange={(entitlements) => setView({ ...view, entitlements })}
          w={{ base: '100%', xs: 320 }}
        />
      </Group>
      <Loading error={error}>
        {data && (
          <>
            {data.cards.length === 0 ? (
              <Text size="sm" c="dimmed">
                No usage of {view.entitlements.length ? 'the chosen entitlements' : 'any entitlement'} in this interval.
              </Text>
            ) : (
              <SimpleGrid cols={{ base: 2, md: 4 }} aria-label="Usage per entitlement">
                {data.cards.map((e) => (
                  <Card withBorder key={e.id}>
                    <Text size="xs" c="dimmed">
                      {e.name ?? e.id}
                    </Text>
                    <Text fw={700} size="xl">
                      {e.amount.toLocaleString()}
                    </Text>
                    <Text size="xs" c="dimmed">
                      {e.calls.toLocaleString()} {e.calls === 1 ? 'call' : 'calls'}
                    </Text>
                  </Card>
                ))}
              </SimpleGrid>
            )}
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
              {data.top.length === 0 ? (
                <Text size="sm" c="dimmed">
                  No account used anything in this interval.
                </Text>
              ) : (
                <BarChart
                  h={Math.max(200, data.top.length * 28)}
                  data={data.top.map((d) => ({ account: d.account_id, Amount: d.amount }))}
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
      <CreditsConsumed appId={appId!} interval={view.interval} hasPools={hasPools} />
      <CreditTopups appId={appId!} interval={view.interval} hasPools={hasPools} />
    </Stack>
  );
}

/** Usage over time for all entitlements, one, or several (their series added bucket by bucket). */
async function seriesOf(api: AppApi, interval: Interval, entitlements: string[]) {
  if (entitlements.length <= 1) return api.analytics.timeseries({ interval, entitlement: entitlements[0] });
  const all = await Promise.all(entitlements.map((entitlement) => api.analytics.timeseries({ interval, entitlement })));
  const sums = new Map<string, { start: string; calls: number; amount: number }>();
  for (const p of all.flatMap((s) => s.points)) {
    const sum = sums.get(p.start) ?? { start: p.start, calls: 0, amount: 0 };
    sum.calls += p.calls;
    sum.amount += p.amount;
    sums.set(p.start, sum);
  }
  return { bucket: all[0].bucket, points: [...sums.values()].sort((a, b) => a.start.localeCompare(b.start)) };
}

/**
 * The ten accounts that used the most: for several entitlements, each one's top 100 added up per account (an
 * account outside one entitlement's top 100 misses that part: the API ranks one entitlement or all of them).
 */
async function topOf(api: AppApi, interval: Interval, entitlements: string[]) {
  if (entitlements.length <= 1)
    return (await api.analytics.topAccounts({ interval, entitlement: entitlements[0], limit: 10 })).data;
  const all = await Promise.all(
    entitlements.map((entitlement) => api.analytics.topAccounts({ interval, entitlement, limit: 100 })),
  );
  const sums = new Map<string, { account_id: string; calls: number; amount: number }>();
  for (const d of all.flatMap((t) => t.data)) {
    const sum = sums.get(d.account_id) ?? { account_id: d.account_id, calls: 0, amount: 0 };
    sum.calls += d.calls;
    sum.amount += d.amount;
    sums.set(d.account_id, sum);
  }
  return [...sums.values()]
    .sort((a, b) => b.amount - a.amount || a.account_id.localeCompare(b.account_id))
    .slice(0, 10);
}

function SavedReports({
  api,
  reports,
  reportId,
  loaded,
  view,
  dirty,
  canEdit,
  open,
  discard,
  nameOf,
}: {
  api: AppApi;
  reports: { data: Report[] | undefined; error: string | null; reload: () => Promise<void> };
  reportId: string | null;
  loaded: Report | undefined;
  view: View;
  dirty: boolean;
  canEdit: boolean;
  open: (id: string | null, replace?: boolean) => void;
  discard: () => void;
  nameOf: (entitlementId: string) => string;
}) {
  const demo = useDemo(useParams().appId);
  const [dialog, setDialog] = useState<'save' | 'rename' | 'delete' | null>(null);
  const update = useAction();
  const list = reports.data ?? [];
  const missing = !!reportId && !!reports.data && !loaded;
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Group gap="xs" wrap="wrap" align="flex-end">
          <Select
            label="Saved report"
            placeholder={list.length ? 'Pick a saved report' : 'No saved reports yet'}
            clearable
            searchable
            data={list.map((r) => ({ value: r.id, label: r.name }))}
            value={loaded?.id ?? null}
            onChange={(id) => {
              update.setError(null);
              open(id);
            }}
            w={{ base: '100%', xs: 280 }}
          />
          {loaded && dirty && canEdit && (
            <Button
              loading={update.busy}
              data-route="reports.update"
              onClick={() =>
                update.run(async () => {
                  await api.reports.update(loaded.id, bodyOf(view));
                  await reports.reload();
                })
              }
            >
              Update report
            </Button>
          )}
          {loaded && dirty && (
            <Button variant="default" onClick={discard}>
              Discard changes
            </Button>
          )}
          {canEdit && (
            <Button
              variant={loaded && dirty ? 'default' : 'light'}
              data-route="reports.create"
              onClick={() => setDialog('save')}
            >
              Save as report
            </Button>
          )}
          {loaded && canEdit && (
            <>
              <Button variant="default" data-route="reports.update" onClick={() => setDialog('rename')}>
                Rename
              </Button>
              <Button variant="light" color="red" data-route="reports.delete" onClick={() => setDialog('delete')}>
                Delete
              </Button>
            </>
          )}
        </Group>
        {loaded && (
          <Group gap="xs">
            {dirty ? (
              <Badge color="yellow" variant="light">
                Unsaved changes
              </Badge>
            ) : (
              <Badge color="teal" variant="light">
                Saved view
              </Badge>
            )}
            <Text size="xs" c="dimmed">
              {viewOf(loaded).interval} ·{' '}
              {loaded.entitlements?.length ? loaded.entitlements.map(nameOf).join(', ') : 'all entitlements'}
            </Text>
          </Group>
        )}
        {!canEdit && (
          <Text size="xs" c="dimmed">
            {demo
              ? 'The demo workspace is read-only: load any saved report; nothing is saved here.'
              : 'You are a viewer in this workspace: load any saved report; a member, admin or owner saves them.'}
          </Text>
        )}
        {missing && (
          <Alert color="yellow" title="Report not found">
            There is no saved report {reportId} in this app (it may have been deleted). The view below is the default.
          </Alert>
        )}
        <ErrorText error={reports.error} title="Could not load the saved reports" />
        <ErrorText error={update.error} />
      </Stack>
      <NameDialog
        opened={dialog === 'save'}
        route="reports.create"
        title="Save this view as a report"
        initial=""
        confirmLabel="Save report"
        onClose={() => setDialog(null)}
        onSubmit={async (name) => {
          const made = await api.reports.create({ name, ...bodyOf(view) });
          await reports.reload();
          open(made.id);
        }}
      />
      {loaded && (
        <NameDialog
          opened={dialog === 'rename'}
          route="reports.update"
          title={`Rename the report “${loaded.name}”`}
          initial={loaded.name}
          confirmLabel="Rename"
          onClose={() => setDialog(null)}
          onSubmit={async (name) => {
            await api.reports.update(loaded.id, { name });
            await reports.reload();
          }}
        />
      )}
      {loaded && (
        <ConfirmDialog
          opened={dialog === 'delete'}
          route="reports.delete"
          title={`Delete the report “${loaded.name}”?`}
          confirmLabel="Delete report"
          onClose={() => setDialog(null)}
          onConfirm={async () => {
            await api.reports.delete(loaded.id);
            open(null, true);
            await reports.reload();
          }}
        >
          <Text size="sm">
            The saved view “{loaded.name}” goes for everyone in this workspace and for API clients that read it, and
            links to it stop working. The charts on this page stay as they are.
          </Text>
        </ConfirmDialog>
      )}
    </Card>
  );
}

/** A report's name, asked for in a dialog: a refusal of the name shows under the input, and what was typed stays. */
function NameDialog({
  opened,
  title,
  initial,
  confirmLabel,
  onSubmit,
  onClose,
  route,
}: {
  opened: boolean;
  route: string;
  title: string;
  initial: string;
  confirmLabel: string;
  onSubmit: (name: string) => Promise<void>;
  onClose: () => void;
}) {
  const [name, setName] = useState(initial);
  const act = useAction(['name']);
  useEffect(() => {
    if (opened) {
      setName(initial);
      act.setError(null);
    }
    // Only when the dialog opens: a reload of the report behind it keeps what is being typed.
  }, [opened]);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (await act.run(() => onSubmit(name))) onClose();
  };
  return (
    <Modal opened={opened} onClose={onClose} title={title}>
      <form onSubmit={submit}>
        <Stack>
          <TextInput
            label="Report name"
            placeholder="e.g. API calls, last 30 days"
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
            error={act.field('name')}
            data-autofocus
          />
          <ErrorText error={act.error} />
          <Group justify="flex-end" gap="xs">
            <Button variant="default" onClick={onClose} disabled={act.busy}>
              Cancel
            </Button>
            <Button type="submit" loading={act.busy} data-route={route}>
              {confirmLabel}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
