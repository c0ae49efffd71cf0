// One flow: its editor, the offer preview for chosen answers, its stats and its sessions, loaded together.
import { Stack } from '@mantine/core';
import { useParams } from 'react-router';
import type { AppApi } from '../../api';
import { useCan, useDemo } from '../../session';
import { Loading, useLoad } from '../../ui';
import { CancelFlowEditor } from '../CancelFlowEditor';
import { OfferPreview } from './OfferPreview';
import { Sessions } from './Sessions';
import { Stats } from './Stats';

export function FlowDetail({ api, flowId, onChange }: { api: AppApi; flowId: string; onChange: () => Promise<void> }) {
  const { appId } = useParams();
  const demo = useDemo(appId);
  const can = useCan(appId);
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
            readOnly={demo ? 'demo' : can('cancelFlows.update') ? false : 'role'}
          />
          <OfferPreview key={`preview-${flow.updated_at}`} api={api} flow={flow} />
          <Stats stats={stats} />
          <Sessions api={api} flowId={flowId} />
        </Stack>
      )}
    </Loading>
  );
}
