// The console's side of the MCP server's OAuth sign-in: the tools a level allows, and a person's consent to an
// authorization request (shown, approved for one of their apps up to their role's ceiling, or denied).
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { AppError } from '../errors.js';
import { ROLES, route, type Role } from '../http/route.js';
import { getSettings, levelSchema } from '../mcp/settings.js';
import { appCap, lower, toolsOf } from '../mcp/tools.js';
import * as oauth from '../oauth/oauth.service.js';
import { workspacesOf } from '../people/workspaces.js';
import { API, consentBody, peopleOf, personOf, requestParams, tags, userSchema } from './console.shared.js';

export const consentRoutes = [
  route({
    method: 'GET',
    path: `${API}/mcp-tools`,
    sdk: 'console.mcpTools',
    auth: ['C'],
    tags,
    summary: "The MCP tools an app's server offers (from the route table), for the MCP page's switches",
    response: z.array(
      z.object({ name: z.string(), level: z.string(), method: z.string(), path: z.string(), summary: z.string() }),
    ),
    handler: ({ routes }) =>
      routes
        .filter((r) => r.mcp)
        .map((r) => ({ name: r.mcp!.tool, level: r.mcp!.level, method: r.method, path: r.path, summary: r.summary })),
  }),
  route({
    method: 'GET',
    path: `${API}/oauth/requests/:requestId`,
    sdk: 'console.oauthRequest',
    auth: ['C'],
    tags,
    summary: 'A pending MCP authorization request, with the apps the person may connect it to',
    params: requestParams,
    response: z.object({
      request: oauth.requestSchema,
      apps: z.array(z.object({ id: z.string(), name: z.string(), max_level: levelSchema })),
      user: userSchema,
    }),
    handler: async (s) => {
      const person = personOf(s);
      const tools = toolsOf(s.routes);
      const request = await oauth.describeRequest(s.em, s.params.requestId, tools);
      // The most this person may approve on each app: their role's ceiling, lowered to the app's MCP cap.
      const apps = await Promise.all(
        (await consentApps(s.deps, person.userId)).map(async (a) => ({
          id: a.id,
          name: a.name,
          max_level: lower(LEVEL_CEILING[a.role], appCap(tools, await getSettings(s.em, a.id))),
        })),
      );
      return { request, apps, user: userOf(person) };
    },
  }),
  route({
    method: 'POST',
    path: `${API}/oauth/requests/:requestId/approve`,
    sdk: 'console.approveOAuthRequest',
    // Any person approves for their own apps, up to their role's ceiling (LEVEL_CEILING).
    role: 'viewer',
    auth: ['C'],
    tags,
    summary: 'Approve an MCP authorization request as the signed-in person',
    params: requestParams,
    body: consentBody,
    errors: [403],
    response: z.object({ redirect_url: z.string() }),
    handler: async (s) => {
      const person = personOf(s);
      const pending = await oauth.describeRequest(s.em, s.params.requestId, toolsOf(s.routes));
      const appId = pending.app?.id ?? s.body.app_id;
      const allowed = await consentApps(s.deps, person.userId);
      const target = allowed.find((a) => a.id === appId);
      if (appId && !target) throw new AppError(403, 'This app is not in your workspaces: ask its owner to invite you');
      if (target) {
        const ceiling = LEVEL_CEILING[target.role];
        if (LEVELS.indexOf(s.body.access_level) > LEVELS.indexOf(ceiling))
          throw new AppError(
            403,
            `Your role in this workspace (${target.role}) can approve at most ${ceiling} access for an MCP client`,
          );
      }
      return oauth.approveRequest(
        s.em,
        s.params.requestId,
        {
          user: userOf(person),
          access_level: s.body.access_level,
          app_id: s.body.app_id,
          guardrails: s.body.guardrails,
        },
        s.origin,
        toolsOf(s.routes),
        { person: true, announce: (appId) => s.deps.credentials.announce(appId) },
      );
    },
  }),
  route({
    method: 'POST',
    path: `${API}/oauth/requests/:requestId/deny`,
    sdk: 'console.denyOAuthRequest',
    // Any person approves for their own apps, up to their role's ceiling (LEVEL_CEILING).
    role: 'viewer',
    auth: ['C'],
    tags,
    summary: 'Deny an MCP authorization request',
    params: requestParams,
    errors: [403],
    response: z.object({ redirect_url: z.string() }),
    handler: (s) => oauth.denyRequest(s.em, s.params.requestId, s.origin),
  }),
];

const userOf = (p: { userId: string; name: string; email: string }) => ({ id: p.userId, name: p.name, email: p.email });

/** The apps a person may connect an MCP client to: those of their own workspaces (never the read-only demo's). */
async function consentApps(deps: Deps, userId: string) {
  const p = await peopleOf(deps);
  const workspaces = (await workspacesOf(p, userId)).filter((w) => !w.demo);
  const ids = [...new Set(workspaces.flatMap((w) => w.app_ids))];
  const { rows } = await p.pool.query<{ id: string; name: string }>(
    `select id, name from apps where id = any($1) and not read_only`,
    [ids],
  );
  const roleOf = (id: string) =>
    workspaces
      .filter((w) => w.app_ids.includes(id))
      .map((w) => w.role)
      .sort((a, b) => ROLES.indexOf(b) - ROLES.indexOf(a))[0];
  return ids
    .filter((id) => rows.some((r) => r.id === id))
    .map((id) => ({ ...rows.find((r) => r.id === id)!, role: roleOf(id) }));
}

/**
 * The most an MCP connection a person approves may do: no more than the person may do in the console (a viewer
 * reads, a member writes, owners and admins may approve full access).
 */
export const LEVEL_CEILING: Record<Role, 'read' | 'write' | 'full'> = {
  viewer: 'read',
  member: 'write',
  admin: 'full',
  owner: 'full',
};
export const LEVELS = ['read', 'write', 'full'] as const;
