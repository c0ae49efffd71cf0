// What the MCP page's cards share: the settings, tool, connection and call shapes, and the access levels' order.
import { type GuardrailsView } from '../Guardrails';

export type Level = 'read' | 'write' | 'full';
export interface Settings {
  enabled: boolean;
  access_level: Level;
  tool_overrides: Record<string, boolean>;
  key_guardrails: GuardrailsView;
  toolsets: string[];
}
export interface Tool {
  name: string;
  level: 'R' | 'W' | 'F';
  method: string;
  path: string;
  summary?: string;
}
export interface Connection {
  id: string;
  kind: 'oauth' | 'secret_key' | 'admin_key';
  name: string;
  user: { id: string; name: string | null; email: string | null } | null;
  access_level: Level | null;
  effective_level: Level | null;
  last_used_at: string | null;
  calls_last_7_days: number;
  cut_off: { at: string; reason: string } | null;
  guardrails: GuardrailsView | null;
}
export interface Call {
  id: string;
  connection_id: string | null;
  tool: string;
  arguments: Record<string, unknown>;
  status: number;
  is_error: boolean;
  result: string;
  duration_ms: number;
  created_at: string;
}

export const RANK = { read: 0, write: 1, full: 2 } as const;
export const NEEDS = { R: 'read', W: 'write', F: 'full' } as const;
export const GROUP_LABEL = { R: 'Read', W: 'Write', F: 'Full' } as const;
