import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export type Level = 'read' | 'write' | 'full';

/** A cap's period: the UTC day or the UTC calendar month it counts in. */
export type CapPeriod = 'day' | 'month';

/**
 * Agent guard-rails of an OAuth connection (or of the app's key-based MCP use): money its tools may start (checkouts,
 * plan changes) and usage they may record per entitlement, per period. Null or absent caps: no cap.
 */
export interface Guardrails {
  spend_cap: { amount: number; currency: string; period: CapPeriod } | null;
  usage_caps: { entitlement_id: string; amount: number; period: CapPeriod }[];
}

export const McpSettings = defineEntity({
  name: 'McpSettings',
  tableName: 'mcp_settings',
  properties: {
    appId: p.string().primary(),
    enabled: p.boolean().default(true),
    accessLevel: p.string().$type<Level>().default('write'),
    toolOverrides: p.json<Record<string, boolean>>(),
    /** Guard-rails of the app's key-based MCP use (secret and admin key sessions share them). */
    keyGuardrails: p.json<Guardrails>().nullable(),
    /** Toolsets `tools/list` names beside the core and discovery tools (src/mcp/toolsets.ts); none by default. */
    toolsets: p.json<string[]>(),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type IMcpSettings = InferEntity<typeof McpSettings>;

export type ConnectionKind = 'oauth' | 'secret_key' | 'admin_key';

export const McpConnection = defineEntity({
  name: 'McpConnection',
  tableName: 'mcp_connections',
  properties: {
    id: p.string().primary(),
    appId: p.string(),
    kind: p.string().$type<ConnectionKind>(),
    name: p.text(),
    clientId: p.string().nullable(),
    userId: p.text().nullable(),
    userName: p.text().nullable(),
    userEmail: p.text().nullable(),
    accessLevel: p.string().$type<Level>().nullable(),
    /** Approved by a person (console): works only while their role on the app's workspace allows its level. */
    person: p.boolean().default(false),
    /** Agent guard-rails (spend cap, usage caps), set at consent or by an operator. */
    guardrails: p.json<Guardrails>().nullable(),
    /** The client declared MCP elicitation at its last initialize: destructive tools ask the person first. */
    elicitation: p.boolean().default(false),
    /** An OAuth connection's own choice of toolsets for `tools/list`; null: the app's. */
    toolsets: p.json<string[]>().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    lastUsedAt: p.datetime().nullable(),
    /** Why and when the connection's tokens were revoked (e.g. a refresh token used twice). */
    cutOffAt: p.datetime().nullable(),
    cutOffReason: p.text().nullable(),
  },
});
export type IMcpConnection = InferEntity<typeof McpConnection>;

export const McpCall = defineEntity({
  name: 'McpCall',
  tableName: 'mcp_calls',
  properties: {
    id: p.string().primary(),
    appId: p.string(),
    connectionId: p.string().nullable(),
    tool: p.string(),
    arguments: p.json<Record<string, unknown>>(),
    status: p.integer(),
    isError: p.boolean(),
    result: p.text(),
    truncated: p.boolean().default(false),
    durationMs: p.integer(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type IMcpCall = InferEntity<typeof McpCall>;
