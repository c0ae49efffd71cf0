// The console's people routes: invitations (by mail or link, resent, revoked, looked up, accepted) and a
// workspace's members (listed, their role changed, removed). Credentials as console.routes.ts says.
import { z } from 'zod';
import { AppError, badRequest, conflict } from '../errors.js';
import { audit } from '../http/audit.js';
import { route, type Role, type Scope } from '../http/route.js';
import { type People } from '../people/better-auth.js';
import {
  acceptInvitation,
  changeMember,
  invitationsOf,
  invite,
  membersOf,
  pendingInvitation,
  renewInvitationToken,
  revokeInvitation,
  personExists,
} from '../people/workspaces.js';
import { sendInvitation } from '../people/invitation-mail.js';
import { dashboardUrl } from './urls.js';
import {
  API,
  acceptBody,
  email,
  invitationSchema,
  inviteBody,
  memberParams,
  memberRoleBody,
  memberSchema,
  passwordOk,
  pendingInvitationSchema,
  peopleOf,
  personOf,
  requireWorkspaceRole,
  roleSchema,
  sameSite,
  sessionPerson,
  tags,
  token,
  workspaceInvitationParams,
  workspaceParams,
} from './console.shared.js';

export const memberRoutes = [
  route({
    method: 'POST',
    path: `${API}/workspaces/:workspaceId/invitations`,
    sdk: 'console.invite',
    // Checked by the handler in the workspace of the path (no app here): declared for the console's buttons.
    role: 'admin',
    auth: ['C'],
    tags,
    summary: 'Invite an address to a workspace (owners and admins): the link goes to that address by email',
    description:
      'The accept link is emailed to the invited address (SMTP_URL) and is never in this answer: whoever accepts ' +
      'has shown they read that mail. `email_sent` and `message` say whether the email went. 409 when the address ' +
      'already belongs to the workspace or has a pending invitation.',
    params: workspaceParams,
    body: inviteBody,
    status: 201,
    errors: [403, 409],
    response: invitationSchema,
    handler: async (s) => {
      const person = personOf(s);
      const p = await peopleOf(s.deps);
      await requireWorkspaceRole(p, person.userId, s.params.workspaceId, 'admin');
      const inv = await invite(p, {
        workspaceId: s.params.workspaceId,
        email: s.body.email,
        role: s.body.role,
        invitedBy: person.userId,
      });
      return mailInvitation(s, p, inv, person.name);
    },
  }),
  route({
    method: 'POST',
    path: `${API}/workspaces/:workspaceId/invitations/:invitationId/resend`,
    sdk: 'console.resendInvitation',
    // Checked by the handler in the workspace of the path (no app here): declared for the console's buttons.
    role: 'admin',
    auth: ['C'],
    tags,
    summary: 'Send a pending invitation again (owners and admins): a new link by email, the older one stops',
    params: workspaceInvitationParams,
    errors: [403],
    response: invitationSchema,
    handler: async (s) => {
      const person = personOf(s);
      const p = await peopleOf(s.deps);
      await requireWorkspaceRole(p, person.userId, s.params.workspaceId, 'admin');
      const inv = await renewInvitationToken(p, s.params.workspaceId, { id: s.params.invitationId });
      return mailInvitation(s, p, inv, person.name);
    },
  }),
  route({
    method: 'POST',
    path: `${API}/workspaces/:workspaceId/invitations/link`,
    sdk: 'console.invitationLink',
    auth: ['A'],
    tags,
    summary: "A pending invitation's accept link, for the operator (admin key only): a new link, the older one stops",
    description:
      'For a deployment that sends no email (no SMTP_URL): the operator runs this from their own terminal with the ' +
      'admin key and hands the link to the invited person themselves. Never served to a person in the console. ' +
      'Logged with the address.',
    params: workspaceParams,
    body: z.object({ email }),
    errors: [404],
    response: z.object({
      id: z.string(),
      email: z.string(),
      role: roleSchema,
      expires_at: z.string(),
      url: z.string(),
    }),
    handler: async (s) => {
      const p = await peopleOf(s.deps);
      const inv = await renewInvitationToken(p, s.params.workspaceId, { email: s.body.email });
      audit(s, 'invitation_link_issued', { workspaceId: s.params.workspaceId, invitationId: inv.id, to: inv.email });
      return {
        id: inv.id,
        email: inv.email,
        role: inv.role,
        expires_at: inv.expires_at,
        url: acceptLink(s, inv.token),
      };
    },
  }),
  route({
    method: 'GET',
    path: `${API}/workspaces/:workspaceId/members`,
    sdk: 'console.members',
    // Checked by the handler in the workspace of the path (no app here): declared for the console's buttons.
    role: 'admin',
    auth: ['C'],
    tags,
    summary: "A workspace's people with their roles (owners and admins)",
    params: workspaceParams,
    errors: [403],
    response: z.array(memberSchema),
    handler: async (s) => {
      const p = await peopleOf(s.deps);
      await requireWorkspaceRole(p, personOf(s).userId, s.params.workspaceId, 'admin');
      return membersOf(p, s.params.workspaceId);
    },
  }),
  route({
    method: 'PATCH',
    path: `${API}/workspaces/:workspaceId/members/:userId`,
    sdk: 'console.updateMember',
    // Checked by the handler in the workspace of the path (no app here): declared for the console's buttons.
    role: 'admin',
    auth: ['C'],
    tags,
    summary: "Change a member's role (owners and admins)",
    description:
      'Admins set viewer, member or admin; only owners make, change or remove an owner. 409 when it would leave ' +
      'the workspace without an owner.',
    params: memberParams,
    body: memberRoleBody,
    errors: [403, 409],
    response: memberSchema,
    handler: async (s) => {
      const person = personOf(s);
      const p = await peopleOf(s.deps);
      await requireWorkspaceRole(p, person.userId, s.params.workspaceId, 'admin');
      const member = await changeMember(p, { ...s.params, role: s.body.role, actorId: person.userId });
      // A lowered role can end the person's MCP connections (a token's check is kept in every API process).
      await s.deps.credentials.announce('*');
      s.deps.logger.info(
        {
          audit: 'member_role_changed',
          workspaceId: s.params.workspaceId,
          memberId: s.params.userId,
          role: s.body.role,
          userId: person.userId,
        },
        'console: member role changed',
      );
      return member!;
    },
  }),
  route({
    method: 'DELETE',
    path: `${API}/workspaces/:workspaceId/members/:userId`,
    sdk: 'console.removeMember',
    // Checked by the handler in the workspace of the path (no app here): declared for the console's buttons.
    role: 'admin',
    auth: ['C'],
    tags,
    summary: 'Remove a person from a workspace (owners and admins)',
    description:
      'They lose access to every app of the workspace at once; their sign-in stays for other workspaces. A person ' +
      'made through an invitation who is in no other workspace is deleted (sessions and password too), so the ' +
      'address can be invited afresh. Only owners remove an owner; 409 for the last owner.',
    params: memberParams,
    errors: [403, 409],
    response: z.object({ removed: z.literal(true), user_id: z.string() }),
    handler: async (s) => {
      const person = personOf(s);
      const p = await peopleOf(s.deps);
      await requireWorkspaceRole(p, person.userId, s.params.workspaceId, 'admin');
      await changeMember(p, { ...s.params, role: null, actorId: person.userId });
      // Their MCP connections on the workspace's apps end at once in every API process.
      await s.deps.credentials.announce('*');
      s.deps.logger.info(
        {
          audit: 'member_removed',
          workspaceId: s.params.workspaceId,
          memberId: s.params.userId,
          userId: person.userId,
        },
        'console: member removed',
      );
      return { removed: true as const, user_id: s.params.userId };
    },
  }),
  route({
    method: 'GET',
    path: `${API}/workspaces/:workspaceId/invitations`,
    sdk: 'console.invitations',
    // Checked by the handler in the workspace of the path (no app here): declared for the console's buttons.
    role: 'admin',
    auth: ['C'],
    tags,
    summary: "A workspace's pending invitations (owners and admins)",
    params: workspaceParams,
    errors: [403],
    response: z.array(pendingInvitationSchema),
    handler: async (s) => {
      const p = await peopleOf(s.deps);
      await requireWorkspaceRole(p, personOf(s).userId, s.params.workspaceId, 'admin');
      return invitationsOf(p, s.params.workspaceId);
    },
  }),
  route({
    method: 'DELETE',
    path: `${API}/workspaces/:workspaceId/invitations/:invitationId`,
    sdk: 'console.revokeInvitation',
    // Checked by the handler in the workspace of the path (no app here): declared for the console's buttons.
    role: 'admin',
    auth: ['C'],
    tags,
    summary: 'Revoke a pending invitation (owners and admins): its link stops working',
    params: workspaceInvitationParams,
    errors: [403],
    response: pendingInvitationSchema,
    handler: async (s) => {
      const p = await peopleOf(s.deps);
      await requireWorkspaceRole(p, personOf(s).userId, s.params.workspaceId, 'admin');
      return revokeInvitation(p, s.params.workspaceId, s.params.invitationId);
    },
  }),
  route({
    method: 'POST',
    path: `${API}/invitations/lookup`,
    sdk: 'console.invitation',
    auth: ['N'],
    tags,
    summary: "A pending invitation, by its accept link's secret: the invited address and the workspace",
    description:
      'The secret travels in the body (the link carries it in its query string, which request logs leave out). 404 ' +
      'when the link is not valid any more (accepted, revoked, sent again since, expired, or its sender may no ' +
      'longer invite).',
    body: z.object({ token }),
    writes: false,
    idempotency: false,
    response: z.object({ email: z.string(), workspace: z.string() }),
    handler: async ({ deps, body }) => {
      const inv = await pendingInvitation(await peopleOf(deps), body.token);
      if (!inv) throw new AppError(404, 'This invitation is not valid any more');
      return { email: inv.email, workspace: inv.workspace };
    },
  }),
  route({
    method: 'POST',
    path: `${API}/invitations/accept`,
    sdk: 'console.acceptInvitation',
    auth: ['N'],
    tags,
    summary: "Accept an invitation with its accept link's secret: creates the person with the invited address",
    description:
      'The secret was emailed to the invited address only, so whoever accepts reads its mail. The person is created ' +
      'with that address, never another; someone who already has an account with it joins signed in as themselves. ' +
      'Of concurrent accepts one answers 201 and the others 409.',
    body: acceptBody,
    status: 201,
    errors: [403, 409],
    response: z.object({ user: z.object({ id: z.string(), email: z.string() }) }),
    handler: async (s) => {
      sameSite(s);
      const p = await peopleOf(s.deps);
      const inv = await pendingInvitation(p, s.body.token);
      if (!inv) throw new AppError(404, 'This invitation is not valid any more');
      // Someone who already has an account joins as themselves, signed in with the invited address.
      const signedIn = await sessionPerson(s.deps, s.headers);
      if (signedIn && signedIn.email.toLowerCase() === inv.email.toLowerCase())
        return {
          user: await acceptInvitation(
            p,
            s.body.token,
            async () => ({ id: signedIn.userId, email: signedIn.email }),
            false,
          ),
        };
      if (await personExists(p, inv.email))
        throw conflict(`${inv.email} already has an account: sign in as ${inv.email}, then open the link again`);
      if (!s.body.name) throw badRequest('name: is required');
      if (!s.body.password) throw badRequest('password: is required');
      const { name: newName, password: newPassword } = s.body;
      await passwordOk(newPassword, [newName, inv.email]);
      const user = await acceptInvitation(
        p,
        s.body.token,
        async (address) => {
          const made = await p.auth.api
            .signUpEmail({ body: { name: newName, email: address, password: newPassword } })
            .catch((err: unknown) => {
              throw conflict(`Could not create the person: ${(err as Error).message}`);
            });
          return { id: made.user.id, email: made.user.email };
        },
        true,
      );
      return { user };
    },
  }),
];

const acceptLink = (s: Pick<Scope<unknown, unknown, unknown>, 'deps' | 'origin'>, secret: string) =>
  `${dashboardUrl(s.deps.config, s.origin)}/invite?token=${encodeURIComponent(secret)}`;

/** Emails an invitation's accept link to the invited address; the answer to its sender carries no link. */
async function mailInvitation(
  s: Scope<{ workspaceId: string }, unknown, unknown>,
  p: People,
  inv: { id: string; email: string; role: Role; expires_at: string; token: string },
  inviter: string,
) {
  const { rows } = await p.pool.query<{ name: string }>(`select coalesce(name, id) as name from orgs where id = $1`, [
    s.params.workspaceId,
  ]);
  const sent = await sendInvitation(s.deps, {
    to: inv.email,
    workspace: rows[0]?.name ?? s.params.workspaceId,
    role: inv.role,
    inviter,
    url: acceptLink(s, inv.token),
    expiresAt: inv.expires_at,
  });
  return {
    id: inv.id,
    email: inv.email,
    role: inv.role,
    expires_at: inv.expires_at,
    email_sent: sent.sent,
    message: sent.message,
  };
}

/**
 * What the console shows to whom, from the route table: each route a person may call (every `/apps/:appId` route
 * served under `/console/api`, and the console's own routes that take a session), by SDK name, with the least role
 * it takes (`requiredRole`, the guard's own rule), whether it writes, and whether the read-only demo allows it.
 */
