import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { sql } from '../db/sql.js';
import type { CredentialCache } from '../http/credential-cache.js';
import { badRequest } from '../errors.js';
import type { Guardrails, Level } from './mcp.entities.js';
import { guardrailsInput, guardrailsView, mergeGuardrails, viewGuardrails } from './guardrails.js';
import { toolsetsSchema, type ToolsetChoice } from './toolsets.js';

export const LEVELS = ['read', 'write', 'full'] as const;
export const levelSchema = z.enum(LEVELS);
const RANK: Record<Level, number> = { read: 0, write: 1, full: 2 };

/** Whether `have` covers something that needs `need` (read < write < full). */
export const covers = (have: Level, need: Level) => RANK[have] >= RANK[need];

/** OAuth scopes and levels: `mcp:read` is Read only, `mcp:write` Read and write, `mcp:full` Full access. */
export const scopeOf = (level: Level) => `mcp:${level}`;
export const SCOPES = LEVELS.map(scopeOf);

/** The lowest level a requested scope string names (least privilege), or null when it names none. */
export function levelOfScope(scope: string | null | undefined): Level | null {
  const named = (scope ?? '')
    .split(/\s+/)
    .filter((s) => SCOPES.includes(s))
    .map((s) => s.slice(4) as Level);
  return named.sort((a, b) => RANK[a] - RANK[b])[0] ?? null;
}

export interface McpSettingsView {
  enabled: boolean;
  access_level: Level;
  tool_overrides: Record<string, boolean>;
  /** The guard-rails of the app's key-based MCP use (secret and admin key sessions together); null: none. */
  key_guardrails: Guardrails | null;
  /** The toolsets `tools/list` names beside the core and discovery tools, unless a connection or request chooses. */
  toolsets: ToolsetChoice[];
}

export const settingsSchema = z.object({
  enabled: z.boolean(),
  access_level: levelSchema,
  tool_overrides: z.record(z.string(), z.boolean()),
  /** Caps of the app's key-based MCP use, with what was used in the current period. */
  key_guardrails: guardrailsView,
  toolsets: toolsetsSchema,
});

export const settingsPatch = z.object({
  enabled: z.boolean().optional(),
  access_level: levelSchema.optional(),
  tool_overrides: z.record(z.string(), z.boolean()).optional(),
  key_guardrails: guardrailsInput.optional(),
  toolsets: toolsetsSchema.optional(),
});

/** The settings as the console shows them: the key guard-rails with what was used of each cap. */
export async function presentSettings(em: EntityManager, appId: string, s: McpSettingsView) {
  const { key_guardrails, ...rest } = s;
  return { ...rest, key_guardrails: await viewGuardrails(em, appId, { kind: 'keys' }, key_guardrails) };
}

/** An app's MCP settings; an app that never saved any has the defaults (on, Read and write, no overrides). */
export async function getSettings(em: EntityManager, appId: string): Promise<McpSettingsView> {
  const [row] = await sql<McpSettingsView>(
    em,
    'select enabled, access_level, tool_overrides, key_guardrails, toolsets from mcp_settings where app_id = $1',
    [appId],
  );
  return row ?? { enabled: true, access_level: 'write', tool_overrides: {}, key_guardrails: null, toolsets: [] };
}

/**
 * An app's MCP settings for a request: kept beside the app in this process's credential cache while the app is
 * there (a change reaches every process before its writer is answered), else read.
 */
export function cachedSettings(em: EntityManager, credentials: CredentialCache, appId: string) {
  return credentials.companion(appId, 'mcp.settings', () => getSettings(em, appId));
}

/**
 * Merges `enabled` and `access_level`; `tool_overrides` and `toolsets`, when sent, replace the old ones;
 * `key_guardrails` merges field by field (`mergeGuardrails`).
 */
export async function updateSettings(
  em: EntityManager,
  appId: string,
  patch: z.output<typeof settingsPatch>,
  toolNames: ReadonlySet<string>,
  confirm: (change: string) => Promise<unknown>,
): Promise<McpSettingsView> {
  const unknown = Object.keys(patch.tool_overrides ?? {}).find((name) => !toolNames.has(name));
  if (unknown !== undefined) throw badRequest(`tool_overrides.${unknown}: no tool of that name`);
  const { key_guardrails: caps, ...rest } = patch;
  const current = await getSettings(em, appId);
  const next: McpSettingsView = {
    ...current,
    ...Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)),
    key_guardrails: caps === undefined ? current.key_guardrails : mergeGuardrails(current.key_guardrails, caps),
  };
  // The settings are kept beside the app in every API process (`cachedSettings`): the table's trigger announces the
  // change as the app's, and the answer waits until every process dropped the old settings.
  const [row] = await sql<{ change: string }>(
    em,
    `insert into mcp_settings (app_id, enabled, access_level, tool_overrides, key_guardrails, toolsets, updated_at)
       values ($1, $2, $3, $4, $5, $6, now())
     on conflict (app_id) do update set enabled = excluded.enabled, access_level = excluded.access_level,
       tool_overrides = excluded.tool_overrides, key_guardrails = excluded.key_guardrails,
       toolsets = excluded.toolsets, updated_at = now()
     returning app_id || ' ' || pg_current_xact_id()::text as change`,
    [
      appId,
      next.enabled,
      next.access_level,
      JSON.stringify(next.tool_overrides),
      next.key_guardrails ? JSON.stringify(next.key_guardrails) : null,
      JSON.stringify(next.toolsets),
    ],
  );
  await confirm(row.change);
  return next;
}
