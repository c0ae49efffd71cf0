// Cancel flows: the list, a step editor that shows where each answer leads, a preview of the save offer for
// chosen answers, stats (save rate, reasons, offer results) as charts, and the flow's sessions.
import { BarChart, DonutChart } from '@mantine/charts';
import {
  Badge,
  Button,
  Card,
  Group,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import type { CancelFlowsGetResponse, CancelFlowsPreviewOfferResponse } from '@offerkit/sdk';
import { useEffect, useState } from 'react';
import { Link, useParams } from 'react-router';
import { appApi, type AppApi } from '../api';
import { ErrorText, Loading, useAction, useLoad } from '../ui';

interface Answer {
  id: string;
  label: string;
  next?: string | null;
}
interface Step {
  id: string;
  type: 'question' | 'text' | 'offer' | 'confirm';
  title: string;
  next?: string | null;
  answers?: Answer[];
  offers?: {
    kind: string;
    percent?: number;
    cycles?: number;
    months?: number;
    plan?: string;
    when?: { answers: string[] };
  }[];
  [k: string]: unknown;
}
type Flow = CancelFlowsGetResponse;

const SESSION_COLORS: Record<string, string> = { open: 'yellow', saved: 'teal', cancelled: 'red', abandoned: 'gray' };

const offerText = (o: NonNullable<Step['offers']>[number]) =>
  o.kind === 'discount'
    ? `${o.percent}% off for ${o.cycles} cycles`
    : o.kind === 'pause'
      ? `pause ${o.months} month${o.months === 1 ? '' : 's'}`
      : o.kind === 'downgrade'
        ? `downgrade to ${o.plan}`
        : o.kind;

export function CancelFlowsPage() {
  const { appId, flowId } = useParams();
  const api = appApi(appId!);
  const { data, error, reload } = useLoad(() => api.cancelFlows.list(), [appId]);
  const action = useAction();
  const current = flowId ?? data?.[0]?.id;
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
                    No cancel flow yet. Start from the template: ask why, offer a discount or a pause, then confirm.
                  </Text>
                  <ErrorText error={action.error} />
                  <Button onClick={() => action.run(async () => (await api.cancelFlows.create({}), await reload()))}>
                    Create from the template
                  </Button>
                </Stack>
              </Card>
            ) : (
              <Group gap="xs">
                {data.map((f) => (
                  <Button
                    key={f.id}
                    component={Link}
                    to={`/apps/${appId}/cancel-flows/${f.id}`}
                    variant={f.id === current ? 'filled' : 'default'}
                    size="xs"
                  >
                    {f.name} · {f.sessions_30d ?? 0} sessions, {f.saves_30d ?? 0} saved
                  </Button>
                ))}
              </Group>
            )}
            {current && <FlowDetail key={current} api={api} flowId={current} onChange={reload} />}
          </>
        )}
      </Loading>
    </Stack>
  );
}

function FlowDetail({ api, flowId, onChange }: { api: AppApi; flowId: string; onChange: () => Promise<void> }) {
  const { data, error, reload } = useLoad(
    () =>
      Promise.all([
        api.cancelFlows.get(flowId),
        api.cancelFlows.stats(flowId, { days: 30 }),
        api.cancelSessions.list({ flow: flowId, limit: 20 }),
      ]),
    [api, flowId],
  );
  return (
    <Loading error={error}>
      {data && (
        <Stack>
          <StepEditor
            api={api}
            flow={data[0]}
            onSaved={async () => {
              await reload();
              await onChange();
            }}
          />
          <OfferPreview api={api} flow={data[0]} />
          <Stats stats={data[1]} />
          <Sessions sessions={data[2].data} />
        </Stack>
      )}
    </Loading>
  );
}

function StepEditor({ api, flow, onSaved }: { api: AppApi; flow: Flow; onSaved: () => Promise<void> }) {
  const [steps, setSteps] = useState<Step[]>(flow.steps as Step[]);
  const [active, setActive] = useState(flow.status === 'active');
  const action = useAction();
  const ids = steps.map((s) => s.id);
  const setStep = (i: number, patch: Partial<Step>) =>
    setSteps(steps.map((s, j) => (j === i ? { ...s, ...patch } : s)));
  const following = (i: number) => steps[i].next ?? steps[i + 1]?.id ?? null;
  return (
    <Card withBorder>
      <Stack gap="sm">
        <Group justify="space-between" wrap="wrap">
          <Title order={3} size="h4">
            {flow.name}
          </Title>
          <Switch
            label="Active (customers see it)"
            checked={active}
            onChange={(e) => setActive(e.currentTarget.checked)}
          />
        </Group>
        <Stack gap="xs" aria-label="Steps">
          {steps.map((s, i) => (
            <Card key={s.id} withBorder padding="sm" bg={s.type === 'offer' ? 'indigo.0' : undefined}>
              <Stack gap={6}>
                <Group gap="xs" wrap="nowrap">
                  <Badge variant="light">{i + 1}</Badge>
                  <Badge color="gray">{s.type}</Badge>
                  <TextInput
                    aria-label={`Step ${s.id} title`}
                    size="xs"
                    value={s.title}
                    onChange={(e) => setStep(i, { title: e.currentTarget.value })}
                    style={{ flex: 1 }}
                  />
                </Group>
                {s.type === 'question' &&
                  (s.answers ?? []).map((a, k) => (
                    <Group key={a.id} gap="xs" pl="lg" wrap="wrap">
                      <Text size="sm" style={{ flex: 1, minWidth: 140 }}>
                        “{a.label}”
                      </Text>
                      <Text size="xs" c="dimmed">
                        →
                      </Text>
                      <Select
                        aria-label={`After “${a.label}”`}
                        size="xs"
                        w={170}
                        data={[
                          { value: '', label: `next step (${following(i) ?? 'end'})` },
                          ...ids.filter((x) => x !== s.id).map((x) => ({ value: x, label: x })),
                        ]}
                        value={a.next ?? ''}
                        onChange={(v) =>
                          setStep(i, {
                            answers: (s.answers ?? []).map((b, m) => (m === k ? { ...b, next: v || null } : b)),
                          })
                        }
                        allowDeselect={false}
                      />
                    </Group>
                  ))}
                {s.type === 'offer' &&
                  (s.offers ?? []).map((o, k) => (
                    <Text key={k} size="sm" pl="lg">
                      {o.when ? `If ${o.when.answers.join(' or ')}: ` : 'Otherwise: '}
                      <b>{offerText(o)}</b>
                    </Text>
                  ))}
                {s.type !== 'confirm' && s.type !== 'question' && (
                  <Text size="xs" c="dimmed" pl="lg">
                    then → {following(i) ?? 'end'}
                  </Text>
                )}
              </Stack>
            </Card>
          ))}
        </Stack>
        <ErrorText error={action.error} />
        <Button
          w="fit-content"
          loading={action.busy}
          onClick={() =>
            action.run(async () => {
              await api.cancelFlows.update(flow.id, {
                status: active ? 'active' : 'draft',
                steps: steps as never,
              });
              await onSaved();
            })
          }
        >
          Save flow
        </Button>
      </Stack>
    </Card>
  );
}

function OfferPreview({ api, flow }: { api: AppApi; flow: Flow }) {
  const questions = (flow.steps as Step[]).filter((s) => s.type === 'question');
  const [answers, setAnswers] = useState<Record<string, string>>(
    Object.fromEntries(questions.map((q) => [q.id, q.answers?.[0]?.id ?? ''])),
  );
  const [result, setResult] = useState<CancelFlowsPreviewOfferResponse | null>(null);
  const [error, setError] = useState<string | null>(null);
  const key = JSON.stringify(answers);
  useEffect(() => {
    api.cancelFlows.previewOffer(flow.id, { answers: JSON.parse(key) as Record<string, string> }).then(
      (r) => (setResult(r), setError(null)),
      (e: Error) => setError(e.message),
    );
  }, [api, flow.id, key]);
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Title order={3} size="h5">
          Preview: the offer for these answers
        </Title>
        <Group wrap="wrap">
          {questions.map((q) => (
            <Select
              key={q.id}
              label={q.title}
              data={(q.answers ?? []).map((a) => ({ value: a.id, label: a.label }))}
              value={answers[q.id] || null}
              onChange={(v) => setAnswers({ ...answers, [q.id]: v ?? '' })}
              allowDeselect={false}
              w={260}
            />
          ))}
        </Group>
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
              <Text size="sm">No offer: these answers go straight to the confirm step.</Text>
            )}
          </Card>
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

function Sessions({ sessions }: { sessions: Awaited<ReturnType<AppApi['cancelSessions']['list']>>['data'] }) {
  const { appId } = useParams();
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Title order={3} size="h5">
          Sessions
        </Title>
        {sessions.length === 0 ? (
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
      </Stack>
    </Card>
  );
}
