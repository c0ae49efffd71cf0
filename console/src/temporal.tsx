// Links into the Temporal UI: to one workflow, by the id the API presents on its record (`workflow_id`, null when
// none was started), so a link never leads to the Temporal UI's "not found". Shown only when the service runs its
// own Temporal (the session's `temporal_ui_url`).
import { Anchor } from '@mantine/core';
import { useSession } from './session';

export function useTemporalUi(): string | null {
  return useSession().me.temporal_ui_url ?? null;
}

export const workflowUrl = (ui: string, workflowId: string) =>
  `${ui}/namespaces/default/workflows/${encodeURIComponent(workflowId)}`;

/** A link to one workflow, or nothing when the record has none (or there is no Temporal UI to open). */
export function WorkflowLink({
  id,
  children,
  size = 'xs',
}: {
  id: string | null | undefined;
  children: string;
  size?: 'xs' | 'sm';
}) {
  const ui = useTemporalUi();
  if (!ui || !id) return null;
  return (
    <Anchor size={size} href={workflowUrl(ui, id)} target="_blank" rel="noreferrer" aria-label={`${children}: ${id}`}>
      {children}
    </Anchor>
  );
}
