// Links into the Temporal UI: to one workflow, by the id the API presents on its record (`workflow_id`, null when
// none was started), so a link never leads to the Temporal UI's "not found". Shown only when the service runs its
// own Temporal (the session's `temporal_ui_url`).
import { Anchor } from '@mantine/core';
import { useSession } from './session';

/** The Temporal UI's page of the service's namespace (`TEMPORAL_NAMESPACE`), or null when there is no UI to open. */
export function useTemporalUi(): string | null {
  const { temporal_ui_url: ui, temporal_namespace: ns } = useSession().me;
  return ui ? `${ui}/namespaces/${encodeURIComponent(ns ?? 'default')}` : null;
}

/** One workflow's page (its latest run), or one run's history (as the API's `workflow.url`, src/temporal/ui.ts). */
export const workflowUrl = (ui: string, workflowId: string, runId?: string | null) =>
  `${ui}/workflows/${encodeURIComponent(workflowId)}` + (runId ? `/${encodeURIComponent(runId)}/history` : '');

/** The namespace's workflows that match a visibility query (`AppId="app_1" AND AccountId="alice"`). */
export const workflowsQueryUrl = (ui: string, query: string) => `${ui}/workflows?query=${encodeURIComponent(query)}`;

/** A visibility query's string literal: quotes and backslashes escaped. */
const literal = (v: string) => `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/**
 * The visibility query for one account's workflows. Account ids are unique only within an app, and every workflow
 * carries its app's `AppId` search attribute, so the query names both.
 */
export const accountWorkflowsQuery = (appId: string, accountId: string) =>
  `AppId=${literal(appId)} AND AccountId=${literal(accountId)}`;

/**
 * A link to one workflow (or one of its runs, given `runId`), or nothing when the record has none (or there is no
 * Temporal UI to open).
 */
export function WorkflowLink({
  id,
  runId,
  children,
  size = 'xs',
}: {
  id: string | null | undefined;
  runId?: string | null;
  children: string;
  size?: 'xs' | 'sm';
}) {
  const ui = useTemporalUi();
  if (!ui || !id) return null;
  return (
    <Anchor
      size={size}
      href={workflowUrl(ui, id, runId)}
      target="_blank"
      rel="noreferrer"
      aria-label={`${children}: ${id}`}
    >
      {children}
    </Anchor>
  );
}
