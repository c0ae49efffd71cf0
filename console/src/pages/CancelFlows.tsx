// Cancel flows: the list, the step editor (CancelFlowEditor/: steps, branches, offer terms), a preview of the
// save offer for chosen answers, stats (save rate, reasons, offer results) as charts, and the flow's sessions.
import { BarChart, DonutChart } from '@mantine/charts';
import {
  Badge,
  Button,
  Card,
  Code,
  Group,
  Modal,
  Radio,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import type { CancelFlowsGetResponse, CancelFlowsPreviewOfferResponse } from '@offerkit/sdk';
import { useEffect, useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { appApi, type AppApi } from '../api';
import { useDemo } from '../session';
import { normalizeId, textProblem, uniqueId } from '../forms';
import { ConfirmDialog, CursorPager, ErrorText, Loading, useAction, useLoad } from '../ui';
import { CancelFlowEditor, type StepBody } from './CancelFlowEditor';

type Flow = CancelFlowsGetResponse;

const SESSION_COLORS: Record<string, string> = { open: 'yellow', saved: 'teal', cancelled: 'red', abandoned: 'gray' };

export function CancelFlowsPage() {
  const { appId, flowId } = useParams();
  const api = appApi(appId!);
  const demo = useDemo(appId);
  const navigate = useNavigate();
  const { data, error, reload } = useLoad(() => api.cancelFlows.list(), [appId]);
  const action = useAction();
  const [creating, setCreating] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const current = flowId ?? data?.[0]?.id;
  const flow = data?.find((f) => f.id === current);
  return (
    <Stack>
      <Title order={2}>Cancel flows</Title>
      <Loading error={error}>
        {data && (
          <>
            {data.length === 0 ? (
              <Card withBorder>
                <Stack gap="xs" align="flex-start">
                  <Text>
                    No cancel flow yet.{' '}
                    {demo
                      ? 'The demo workspace is read-only.'
                      : 'Start from the template: ask why, offer a discount or a pause, then confirm.'}
                  </Text>
                  <ErrorText error={action.error} />
                  {!demo && (
                    <Button onClick={() => action.run(async () => (await api.cancelFlows.create({}), await reload()))}>
                      Create from the template
                    </Button>
                  )}
                </Stack>
              </Card>
            ) : (
              <Group justify="space-between" align="flex-start" gap="xs">
                <Group gap="xs" role="group" aria-label="Flows" style={{ flex: '1 1 260px' }}>
                  {data.map((f) => (
                    <Button
                      key={f.id}
                      component={Link}
                      to={`/apps/${appId}/cancel-flows/${encodeURIComponent(f.id)}`}
                      variant={f.id === current ? 'filled' : 'default'}
                      size="xs"
                      h="auto"
                      py={4}
                      maw="100%"
                      aria-current={f.id === current ? 'page' : undefined}
                      // A long name wraps inside its button instead of pushing the page sideways on a phone.
                      styles={{ inner: { minHeight: 20 }, label: { whiteSpace: 'normal', lineHeight: 1.3 } }}
                    >
                      {f.name} · {f.sessions_30d ?? 0} sessions, {f.saves_30d ?? 0} saved
                    </Button>
                  ))}
                </Group>
                {!demo && (
                  <Group gap="xs">
                    <Button size="xs" variant="light" onClick={() => setCreating(true)}>
                      New flow
                    </Button>
                    {flow && (
                      <Button size="xs" variant="light" color="red" onClick={() => setDeleting(true)}>
                        Delete this flow
                      </Button>
                    )}
                  </Group>
                )}
              </Group>
            )}
            {current && <FlowDetail key={current} api={api} flowId={current} onChange={reload} />}
            <NewFlow
              opened={creating}
              api={api}
              taken={data.map((f) => f.id)}
              onClose={() => setCreating(false)}
              onCreated={async (id) => {
                setCreating(false);
                await reload();
                navigate(`/apps/${appId}/cancel-flows/${encodeURIComponent(id)}`);
              }}
            />
            {flow && (
              <ConfirmDialog
                opened={deleting}
                title={`Delete the cancel flow ${flow.name}?`}
                confirmLabel="Delete the flow"
                onClose={() => setDeleting(false)}
                onConfirm={async () => {
                  await api.cancelFlows.delete(flow.id);
                  await reload();
                  navigate(`/apps/${appId}/cancel-flows`);
                }}
              >
                <Text size="sm">
                  The flow <Code>{flow.id}</Code> and its steps are removed. Its sessions are kept, open ones included
                  (each keeps the steps it started with), and so are the stats they make.
                </Text>
                <Text size="sm">
                  {flow.id === 'default'
                    ? 'Sessions started without naming a flow use the default flow: after this they use the first ' +
                      'active flow, and fail when there is none.'
                    : `Your app's sessions that name ${flow.id} will no longer start.`}
                </Text>
              </ConfirmDialog>
            )}
          </>
        )}
      </Loading>
    </Stack>
  );
}

/** The smallest flow the API accepts that still asks something: a reason question, then the confirm step. */
function minimalSteps(): StepBody[] {
  return [
    {
      id: 'reason',
      type: 'question',
      title: 'Why are you cancelling?',
      answers: [
        { id: 'too_expensive', label: 'It is too expensive' },
        { id: 'other', label: 'Something else' },
      ],
      allow_text: true,
    },
    {
      id: 'confirm',
      type: 'confirm',
      title: 'Confirm your cancellation',
      body: 'Your subscription ends now and your account moves to the free plan.',
    },
  ];
}

function NewFlow({
  opened,
  api,
  taken,
  onClose,
  onCreated,
}: {
  opened: boolean;
  api: AppApi;
  taken: string[];
  onClose: () => void;
  onCreated: (id: string) => Promise<void>;
}) {
  const [form, setForm] = useState({ name: '', id: '', start: 'minimal' });
  const action = useAction();
  const finalId = form.id ? normalizeId(form.id) : uniqueId(form.name || 'flow', taken);
  const clash = taken.includes(finalId);
  const nameProblem = form.name ? textProblem(form.name, 200, true) : null;
  const close = () => {
    action.setError(null);
    onClose();
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const ok = await action.run(async () => {
      const f = await api.cancelFlows.create({
        id: finalId,
        name: form.name.trim(),
        ...(form.start === 'minimal' ? { steps: minimalSteps() } : {}),
      });
      await onCreated(f.id);
    });
    if (ok) setForm({ name: '', id: '', start: 'minimal' });
  };
  return (
    <Modal opened={opened} onClose={close} title="New cancel flow">
      <form onSubmit={submit}>
        <Stack gap="sm">
          <TextInput
            label="Flow name"
            required
            data-autofocus
            value={form.name}
            onChange={(e) => setForm({ ...form, name: e.currentTarget.value })}
            error={nameProblem}
          />
          <TextInput
            label="Flow id"
            description="Your app names it when it starts a session"
            placeholder={uniqueId(form.name || 'flow', taken)}
            value={form.id}
            onChange={(e) => setForm({ ...form, id: e.currentTarget.value })}
            error={clash ? `${finalId} is taken` : undefined}
          />
          <Radio.Group label="Start from" value={form.start} onChange={(v) => setForm({ ...form, start: v })}>
            <Stack gap={6} mt={6}>
              <Radio value="minimal" label="A reason question and the confirm step" />
              <Radio value="template" label="The template: a reason, a save offer chosen by the answer, confirm" />
            </Stack>
          </Radio.Group>
          <Text size="xs" c="dimmed">
            New flows are drafts: customers see them once you switch them to active.
          </Text>
          <ErrorText error={action.error} />
          <Group justify="flex-end" gap="xs">
            <Button variant="default" onClick={close} disabled={action.busy}>
              Cancel
            </Button>
            <Button type="submit" loading={action.busy} disabled={!form.name.trim() || !finalId || clash}>
              Create flow
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

function FlowDetail({ api, flowId, onChange }: { api: AppApi; flowId: string; onChange: () => Promise<void> }) {
  const demo = useDemo(useParams().appId);
  const { data, error, reload } = useLoad(
    () =>
      Promise.all([
        api.cancelFlows.get(flowId),
        api.cancelFlows.stats(flowId, { days: 30 }),
        Promise.all([api.plans.list(), api.incentives.list(), api.cancelFlows.capabilities()]),
      ]),
    [api, flowId],
  );
  const [flow, stats, [plans, incentives, capabilities]] = data ?? [undefined, undefined, []];
  return (
    <Loading error={error}>
      {flow && stats && (
        <Stack>
          {/* A save gives a new updated_at: the editor and the preview start again from the flow as stored. */}
          <CancelFlowEditor
            key={flow.updated_at}
            api={api}
            flow={flow}
            catalog={{ plans: plans!, incentives: incentives!, capabilities: capabilities! }}
            onSaved={async () => {
              await reload();
              await onChange();
            }}
            readOnly={demo}
          />
          <OfferPreview key={`preview-${flow.updated_at}`} api={api} flow={flow} />
          <Stats stats={stats} />
          <Sessions api={api} flowId={flowId} />
        </Stack>
      )}
    </Loading>
  );
}

function OfferPreview({ api, flow }: { api: AppApi; flow: Flow }) {
  const steps = flow.steps as StepBody[];
  const questions = steps.filter((s) => s.type === 'question' && s.answers?.length);
  const offerSteps = steps.filter((s) => s.type === 'offer');
  const [answers, setAnswers] = useState<Record<string, string>>(
    Object.fromEntries(questions.map((q) => [q.id, q.answers?.[0]?.id ?? ''])),
  );
  const [step, setStep] = useState<string | null>(offerSteps[0]?.id ?? null);
  const [result, setResult] = useState<CancelFlowsPreviewOfferResponse | null>(null);
  const [error, setError] = useState<string | null>(null);
  const key = JSON.stringify({ answers, step });
  useEffect(() => {
    if (!offerSteps.length) return;
    const body = JSON.parse(key) as { answers: Record<string, string>; step: string | null };
    let current = true;
    api.cancelFlows.previewOffer(flow.id, { answers: body.answers, ...(body.step ? { step: body.step } : {}) }).then(
      (r) => current && (setResult(r), setError(null)),
      (e: Error) => current && setError(e.message),
    );
    return () => {
      current = false;
    };
  }, [api, flow.id, key, offerSteps.length]);
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Title order={3} size="h5">
          Preview: the offer for these answers
        </Title>
        <Text size="xs" c="dimmed">
          From the saved flow, before any account checks (an offer that does not apply to an account is skipped).
        </Text>
        {offerSteps.length === 0 ? (
          <Text size="sm">The flow has no offer step: every customer goes straight on to confirm.</Text>
        ) : (
          <>
            <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }} spacing="xs">
              {offerSteps.length > 1 && (
                <Select
                  label="Offer step"
                  data={offerSteps.map((s) => ({ value: s.id, label: `${s.title} (${s.id})` }))}
                  value={step}
                  onChange={setStep}
                  allowDeselect={false}
                />
              )}
              {questions.map((q) => (
                <Select
                  key={q.id}
                  label={q.title}
                  data={(q.answers ?? []).map((a) => ({ value: a.id, label: a.label }))}
                  value={answers[q.id] || null}
                  onChange={(v) => setAnswers({ ...answers, [q.id]: v ?? '' })}
                  allowDeselect={false}
                />
              ))}
            </SimpleGrid>
            <ErrorText error={error} />
            {result && (
              <Card withBorder bg="gray.0" aria-label="Offer preview">
                {result.offer ? (
                  <Stack gap={4}>
                    <Text fw={700}>{result.offer.headline}</Text>
                    <Text size="sm">{result.offer.body}</Text>
                    <Button size="xs" w="fit-content" variant="light" tabIndex={-1}>
                      {result.offer.cta}
                    </Button>
                  </Stack>
                ) : (
                  <Text size="sm">No offer for these answers: the offer step is skipped.</Text>
                )}
              </Card>
            )}
          </>
        )}
      </Stack>
    </Card>
  );
}

function Stats({ stats }: { stats: Awaited<ReturnType<AppApi['cancelFlows']['stats']>> }) {
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
            Last {stats.days} days
          </Title>
          <Text size="sm" aria-label="Save rate">
            {stats.sessions} sessions · save rate {(stats.save_rate * 100).toFixed(0)}%
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

/** The flow's sessions, newest first, 20 a page (Newer / Older over the list's cursor pages). */
function Sessions({ api, flowId }: { api: AppApi; flowId: string }) {
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
