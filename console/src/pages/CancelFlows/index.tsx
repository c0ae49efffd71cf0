// Cancel flows: the list, the step editor (CancelFlowEditor/: steps, branches, offer terms), a preview of the
// save offer for chosen answers, stats (save rate, reasons, offer results) as charts, and the flow's sessions.
// In parts: the new-flow dialog (NewFlow.tsx, its checks and body in newFlow.ts) and one flow's parts, each a file.
import { Button, Card, Code, Group, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { appApi } from '../../api';
import { useCan, useDemo } from '../../session';
import { ConfirmDialog, ErrorText, Loading, useAction, useLoad } from '../../ui';
import { FlowDetail } from './FlowDetail';
import { NewFlow } from './NewFlow';
import { plural } from '../../plural';

export function CancelFlowsPage() {
  const { appId, flowId } = useParams();
  const api = appApi(appId!);
  const demo = useDemo(appId);
  const can = useCan(appId);
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
                      : can('cancelFlows.create')
                        ? 'Start from the template: ask why, offer a discount or a pause, then confirm.'
                        : 'A member, admin or owner of the workspace creates one.'}
                  </Text>
                  <ErrorText error={action.error} />
                  {can('cancelFlows.create') && (
                    <Button
                      data-route="cancelFlows.create"
                      onClick={() => action.run(async () => (await api.cancelFlows.create({}), await reload()))}
                    >
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
                      {f.name} · {plural(f.sessions_30d ?? 0, 'session')}, {f.saves_30d ?? 0} saved
                    </Button>
                  ))}
                </Group>
                <Group gap="xs">
                  {can('cancelFlows.create') && (
                    <Button size="xs" variant="light" data-route="cancelFlows.create" onClick={() => setCreating(true)}>
                      New flow
                    </Button>
                  )}
                  {flow && can('cancelFlows.delete') && (
                    <Button
                      size="xs"
                      variant="light"
                      color="red"
                      data-route="cancelFlows.delete"
                      onClick={() => setDeleting(true)}
                    >
                      Delete this flow
                    </Button>
                  )}
                </Group>
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
                route="cancelFlows.delete"
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
