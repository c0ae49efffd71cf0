// Who is calling: the credential classes a route accepts, a person's roles, and the caller a credential resolves to.
// Below the route table (src/http/route.ts hands these on) so that the ports (src/deps.ts) can name the caller
// without reaching the routes.

/**
 * Credential classes, as in the spec: S secret key, P publishable key, T account token (its own
 * account), A admin key only, N no credential, O an MCP OAuth access token (`mcp_at_...`) of the app,
 * C a person's console session (the cookie Better Auth sets), for the console's own routes.
 * The admin key is accepted on every `/apps/:appId` route. Every `/apps/:appId` route is also served to people
 * at `/console/api/apps/:appId/...` with their session (src/http/router.ts), where roles decide instead.
 */
export type Cred = 'S' | 'P' | 'T' | 'A' | 'N' | 'O' | 'C';

/** A person's role in a workspace, least to most (docs/security.md has the table of what each may do). */
export const ROLES = ['viewer', 'member', 'admin', 'owner'] as const;
export type Role = (typeof ROLES)[number];

/** A signed-in person (the console), with their role in the workspace of the route's app (null off an app). */
export interface Person {
  userId: string;
  name: string;
  email: string;
}

export type Caller =
  | { kind: 'none' }
  | { kind: 'admin' }
  | { kind: 'secret' }
  | { kind: 'publishable' }
  | { kind: 'token'; accountId: string; expiresAt: Date }
  | { kind: 'oauth'; connectionId: string; level: 'read' | 'write' | 'full'; audience: string | null }
  | ({ kind: 'person'; role: Role | null; workspaceId: string | null } & Person);
