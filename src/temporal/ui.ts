// Links into the Temporal UI for records that name a workflow.
import type { Config } from '../config.js';

/** The Temporal UI's origin: TEMPORAL_UI_URL, else the embedded dev server's UI, else none. */
export function temporalUiUrl(
  config: Pick<Config, 'TEMPORAL_UI_URL' | 'embeddedTemporal' | 'TEMPORAL_UI_PORT'>,
): string | null {
  return (
    config.TEMPORAL_UI_URL?.replace(/\/+$/, '') ??
    (config.embeddedTemporal ? `http://127.0.0.1:${config.TEMPORAL_UI_PORT}` : null)
  );
}

/** The UI page of one workflow run (or of the workflow's latest run without a run id); null without a UI. */
export function temporalWorkflowUrl(
  config: Pick<Config, 'TEMPORAL_UI_URL' | 'embeddedTemporal' | 'TEMPORAL_UI_PORT' | 'TEMPORAL_NAMESPACE'>,
  workflowId: string,
  runId?: string | null,
): string | null {
  const ui = temporalUiUrl(config);
  if (!ui) return null;
  const base = `${ui}/namespaces/${encodeURIComponent(config.TEMPORAL_NAMESPACE)}/workflows/${encodeURIComponent(workflowId)}`;
  return runId ? `${base}/${encodeURIComponent(runId)}/history` : base;
}
