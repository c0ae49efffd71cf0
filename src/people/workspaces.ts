// Workspaces and who belongs to them, in the service's own tables (migration 20261130120000): a workspace is the
// spec's org (its id, which nothing renames, holds the app ids in order); `workspace_members` says who belongs with
// which role; invitations are bound to the invited address. The demo workspace is read by everyone (viewer).
import { createHash, randomBytes } from 'node:crypto';
import type { Identity } from '../http/credentials.js';
import { AppError, conflict, notFound } from '../errors.js';
import { ROLES, type Person, type Role } from '../http/route.js';
import type pg from 'pg';
import { CREDENTIALS_TABLE, SESSIONS_TABLE, USERS_TABLE, type People } from './better-auth.js';

export const DEMO_WORKSPACE_ID = 'demo';

/** How long an invitation link stays valid. */
export const INVITATION_DAYS = 2;

export interface Workspace {
  id: string;
  name: string;
  role: Role;
  demo: boolean;
  app_ids: string[];
}

/** The person's workspaces, in the order they joined, then the demo workspace (read-only) when there is one. */
export async function workspacesOf(p: People, userId: string): Promise<Workspace[]> {
  const { rows } = await p.pool.query<{ id: string; name: string | null; role: Role; app_ids: string[] }>(
    `select o.id, o.name, m.role, o.app_ids
       from workspace_members m join orgs o on o.id = m.org_id
      where m.user_id = $1
      order by m.created_at, o.id`,
    [userId],
  );
  const list: Workspace[] = rows.map((r) => ({
    id: r.id,
    name: r.name ?? r.id,
    role: r.role,
    demo: r.id === DEMO_WORKSPACE_ID,
    app_ids: r.app_ids,
  }));
  if (!list.some((w) => w.demo)) {
    const demo = await p.pool.query<{ name: string | null; app_ids: string[] }>(
      `select name, app_ids from orgs where id = $1`,
      [DEMO_WORKSPACE_ID],
    );
    if (demo.rows[0])
      list.push({
        id: DEMO_WORKSPACE_ID,
        name: demo.rows[0].name ?? 'Demo',
        role: 'viewer',
        demo: true,
        app_ids: demo.rows[0].app_ids,
      });
  }
  return list;
}

/**
 * The person's role for an app: their highest role among the workspaces that list it, viewer on the demo
 * workspace's apps, null when no workspace of theirs has it (the app answers 404 to them).
 */
export async function roleIn(
  p: People,
  userId: string,
  appId: string,
): Promise<{ role: Role; workspaceId: string } | null> {
  const { rows } = await p.pool.query<{ role: Role; org_id: string }>(
    `select m.role, m.org_id from workspace_members m join orgs o on o.id = m.org_id
      where m.user_id = $1 and o.app_ids ? $2
     union all
     select 'viewer', o.id from orgs o where o.id = $3 and o.app_ids ? $2`,
    [userId, appId, DEMO_WORKSPACE_ID],
  );
  const best = rows.sort((a, b) => ROLES.indexOf(b.role) - ROLES.indexOf(a.role))[0];
  return best ? { role: best.role, workspaceId: best.org_id } : null;
}

/** The person's role in one workspace, or null. */
export async function roleInWorkspace(p: People, userId: string, workspaceId: string): Promise<Role | null> {
  const { rows } = await p.pool.query<{ role: Role }>(
    `select role from workspace_members where user_id = $1 and org_id = $2`,
    [userId, workspaceId],
  );
  if (rows[0]) return rows[0].role;
  return workspaceId === DEMO_WORKSPACE_ID ? 'viewer' : null;
}

/** The Identity port the router asks (src/http/credentials.ts): sessions through Better Auth, roles from our table. */
export function identityOf(people: () => Promise<People>): Identity {
  return {
    async person(headers) {
      const p = await people();
      const h = new Headers();
      for (const [k, v] of Object.entries(headers)) if (typeof v === 'string') h.set(k, v);
      const s = await p.auth.api.getSession({ headers: h });
      return s ? ({ userId: s.user.id, name: s.user.name, email: s.user.email } satisfies Person) : null;
    },
    async roleIn(userId, appId) {
      return roleIn(await people(), userId, appId);
    },
  };
}

/** Creates a workspace (the spec's org) with `ownerId` as its owner. */
export async function createWorkspace(
  p: People,
  input: { id: string; name: string; ownerId: string; appIds?: string[] },
): Promise<void> {
  const client = await p.pool.connect();
  try {
    await client.query('begin');
    await client.query(
      `insert into orgs (id, name, app_ids, created_at, updated_at) values ($1, $2, $3, now(), now())`,
      [input.id, input.name, JSON.stringify(input.appIds ?? [])],
    );
    await client.query(`insert into workspace_members (org_id, user_id, role) values ($1, $2, 'owner')`, [
      input.id,
      input.ownerId,
    ]);
    await client.query('commit');
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** A workspace id free for `base` (`acme`, `acme_2`, ...), never the demo's. */
export async function freeWorkspaceId(p: People, base: string): Promise<string> {
  for (let i = 0; ; i++) {
    const id = i === 0 ? base : `${base}_${i + 1}`;
    if (id === DEMO_WORKSPACE_ID) continue;
    const { rowCount } = await p.pool.query(`select 1 from orgs where id = $1`, [id]);
    if (!rowCount) return id;
  }
}

/** Appends an app to a workspace's ordered list. */
export async function addAppToWorkspace(p: People, workspaceId: string, appId: string): Promise<void> {
  await p.pool.query(`update orgs set app_ids = app_ids || $2::jsonb, updated_at = now() where id = $1`, [
    workspaceId,
    JSON.stringify([appId]),
  ]);
}

export interface Invitation {
  id: string;
  email: string;
  role: Role;
  workspace_id: string;
  workspace: string;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * The secret of an invitation's accept link: sent to the invited address only (src/people/invitations.ts), stored as
 * its SHA-256, never shown to anyone in the workspace. Whoever accepts has read the address's mail.
 */
const newToken = () => randomBytes(32).toString('base64url');

/**
 * Invites an address to a workspace: 409 when a person with that address already belongs to it, or when an
 * invitation for it is pending (the unique index decides under concurrency). Returns the accept link's secret.
 */
export async function invite(
  p: People,
  input: { workspaceId: string; email: string; role: Role; invitedBy: string },
): Promise<{ id: string; email: string; role: Role; expires_at: string; token: string }> {
  const email = input.email.trim();
  const member = await p.pool.query(
    `select 1 from workspace_members m join ${USERS_TABLE} u on u.id = m.user_id
      where m.org_id = $1 and lower(u.email) = lower($2)`,
    [input.workspaceId, email],
  );
  if (member.rowCount) throw conflict(`${email} is already a member of this workspace`);
  // An expired pending invitation gives way to the new one.
  await p.pool.query(
    `update workspace_invitations set status = 'revoked'
      where org_id = $1 and lower(email) = lower($2) and status = 'pending' and expires_at <= now()`,
    [input.workspaceId, email],
  );
  const id = `inv_${randomBytes(16).toString('base64url')}`;
  const token = newToken();
  const inserted = await p.pool.query<{ expires_at: Date }>(
    `insert into workspace_invitations (id, org_id, email, role, invited_by, expires_at, token_hash)
     values ($1, $2, $3, $4, $5, now() + make_interval(days => $6), $7)
     on conflict (org_id, lower(email)) where status = 'pending' do nothing
     returning expires_at`,
    [id, input.workspaceId, email, input.role, input.invitedBy, INVITATION_DAYS, sha256(token)],
  );
  if (!inserted.rowCount) throw conflict(`${email} already has a pending invitation to this workspace`);
  return { id, email, role: input.role, expires_at: new Date(inserted.rows[0].expires_at).toISOString(), token };
}

/**
 * A new secret for a pending, unexpired invitation of this workspace (sending the link again, or the operator's
 * admin-key route): the older link stops working. 404 otherwise.
 */
export async function renewInvitationToken(
  p: People,
  workspaceId: string,
  which: { id: string } | { email: string },
): Promise<{ id: string; email: string; role: Role; expires_at: string; token: string }> {
  const token = newToken();
  const byId = 'id' in which;
  const { rows } = await p.pool.query<{ id: string; email: string; role: Role; expires_at: Date }>(
    `update workspace_invitations i set token_hash = $3
      where i.org_id = $1 and ${byId ? 'i.id = $2' : 'lower(i.email) = lower($2)'}
        and i.status = 'pending' and i.expires_at > now() and ${INVITER_STILL_INVITES}
      returning i.id, i.email, i.role, i.expires_at`,
    [workspaceId, byId ? which.id : which.email, sha256(token)],
  );
  if (!rows[0]) throw notFound('Invitation');
  return { ...rows[0], expires_at: new Date(rows[0].expires_at).toISOString(), token };
}

/**
 * An invitation holds only while the person who sent it may still invite (an owner or admin of the workspace): one
 * sent by an admin who was then removed or made a member is not a way back in. Their pending invitations are revoked
 * with the change (`changeMember`); this condition also covers an invitation sent while the change was being made.
 */
const INVITER_STILL_INVITES = `(i.invited_by is null or exists (
  select 1 from workspace_members w where w.org_id = i.org_id and w.user_id = i.invited_by and w.role in ('owner', 'admin')))`;

/** The pending, unexpired invitation of an accept link's secret whose sender may still invite, or null. */
export async function pendingInvitation(p: People, token: string): Promise<Invitation | null> {
  const { rows } = await p.pool.query<Invitation>(
    `select i.id, i.email, i.role, i.org_id as workspace_id, coalesce(o.name, o.id) as workspace
       from workspace_invitations i join orgs o on o.id = i.org_id
      where i.token_hash = $1 and i.status = 'pending' and i.expires_at > now() and ${INVITER_STILL_INVITES}`,
    [sha256(token)],
  );
  return rows[0] ?? null;
}

/**
 * Accepts an invitation by its link's secret: the invitation is claimed in one statement (so of concurrent accepts
 * one goes on and the others get 409), then the person is made through `createPerson` (or is the signed-in person
 * with the invited address) and added; when that fails the claim is given back. `madePerson` records that the
 * acceptance created the person, who is then deleted when removed from their last workspace (`changeMember`).
 */
export async function acceptInvitation(
  p: People,
  token: string,
  createPerson: (email: string) => Promise<{ id: string; email: string }>,
  madePerson: boolean,
): Promise<{ id: string; email: string }> {
  const hash = sha256(token);
  const claimed = await p.pool.query<{ id: string; email: string; org_id: string; role: Role }>(
    `update workspace_invitations i set status = 'accepted'
      where i.token_hash = $1 and i.status = 'pending' and i.expires_at > now() and ${INVITER_STILL_INVITES}
      returning i.id, i.email, i.org_id, i.role`,
    [hash],
  );
  const inv = claimed.rows[0];
  if (!inv) {
    const known = await p.pool.query(`select status from workspace_invitations where token_hash = $1`, [hash]);
    if (known.rows[0]?.status === 'accepted') throw conflict('This invitation has already been accepted: sign in');
    throw notFound('Invitation');
  }
  try {
    const user = await createPerson(inv.email);
    await p.pool.query(
      `insert into workspace_members (org_id, user_id, role) values ($1, $2, $3) on conflict do nothing`,
      [inv.org_id, user.id, inv.role],
    );
    await p.pool.query(`update workspace_invitations set accepted_by = $2, made_person = $3 where id = $1`, [
      inv.id,
      user.id,
      madePerson,
    ]);
    return user;
  } catch (err) {
    await p.pool.query(`update workspace_invitations set status = 'pending' where id = $1`, [inv.id]);
    throw err;
  }
}

/** Whether a person with this address exists. */
export async function personExists(p: People, email: string): Promise<boolean> {
  const { rowCount } = await p.pool.query(`select 1 from ${USERS_TABLE} where lower(email) = lower($1)`, [email]);
  return (rowCount ?? 0) > 0;
}

export interface Member {
  user_id: string;
  name: string;
  email: string;
  role: Role;
  joined_at: string;
}

/** The people of a workspace with their roles, owners first, then in the order they joined. */
export async function membersOf(p: People, workspaceId: string): Promise<Member[]> {
  const { rows } = await p.pool.query<{ user_id: string; name: string; email: string; role: Role; joined: Date }>(
    `select m.user_id, u.name, u.email, m.role, m.created_at as joined
       from workspace_members m join ${USERS_TABLE} u on u.id = m.user_id
      where m.org_id = $1
      order by array_position(array['owner','admin','member','viewer'], m.role::text), m.created_at, u.email`,
    [workspaceId],
  );
  return rows.map((r) => ({
    user_id: r.user_id,
    name: r.name,
    email: r.email,
    role: r.role,
    joined_at: new Date(r.joined).toISOString(),
  }));
}

/**
 * A person made through an invitation, removed from their last workspace, is deleted with their sessions and
 * password: the address is free for a later, real invitation, and whoever set that password (someone who opened a
 * link not meant for them) keeps nothing. People made by the owner setup, or who belong to another workspace, stay.
 * In the removal's transaction, after the membership is gone.
 */
async function deleteIfOnlyInvited(client: pg.PoolClient, userId: string): Promise<void> {
  const { rowCount } = await client.query(
    `select 1 where not exists (select 1 from workspace_members where user_id = $1)
        and exists (select 1 from workspace_invitations where accepted_by = $1 and made_person)`,
    [userId],
  );
  if (!rowCount) return;
  for (const table of [SESSIONS_TABLE, CREDENTIALS_TABLE])
    await client.query(`delete from ${table} where "userId" = $1`, [userId]);
  await client.query(`delete from ${USERS_TABLE} where id = $1`, [userId]);
}

export interface PendingInvitation {
  id: string;
  email: string;
  role: Role;
  invited_by: string | null;
  created_at: string;
  expires_at: string;
}

/** A workspace's pending, unexpired invitations, newest first. */
export async function invitationsOf(p: People, workspaceId: string): Promise<PendingInvitation[]> {
  const { rows } = await p.pool.query<{
    id: string;
    email: string;
    role: Role;
    invited_by: string | null;
    created_at: Date;
    expires_at: Date;
  }>(
    `select i.id, i.email, i.role, u.email as invited_by, i.created_at, i.expires_at
       from workspace_invitations i left join ${USERS_TABLE} u on u.id = i.invited_by
      where i.org_id = $1 and i.status = 'pending' and i.expires_at > now() and ${INVITER_STILL_INVITES}
      order by i.created_at desc, i.id`,
    [workspaceId],
  );
  return rows.map((r) => ({
    ...r,
    created_at: new Date(r.created_at).toISOString(),
    expires_at: new Date(r.expires_at).toISOString(),
  }));
}

/** Revokes a pending invitation of this workspace in one statement: its link stops working. 404 otherwise. */
export async function revokeInvitation(p: People, workspaceId: string, id: string): Promise<PendingInvitation> {
  const { rows } = await p.pool.query<{ id: string }>(
    `update workspace_invitations set status = 'revoked'
      where id = $1 and org_id = $2 and status = 'pending' and expires_at > now() returning id`,
    [id, workspaceId],
  );
  if (!rows[0]) throw notFound('Invitation');
  const { rows: full } = await p.pool.query<{
    id: string;
    email: string;
    role: Role;
    invited_by: string | null;
    created_at: Date;
    expires_at: Date;
  }>(
    `select i.id, i.email, i.role, u.email as invited_by, i.created_at, i.expires_at
       from workspace_invitations i left join ${USERS_TABLE} u on u.id = i.invited_by where i.id = $1`,
    [id],
  );
  const r = full[0];
  return { ...r, created_at: new Date(r.created_at).toISOString(), expires_at: new Date(r.expires_at).toISOString() };
}

/**
 * Changes a member's role (`role`) or removes them (`null`), as the person `actorId`: admins manage viewers, members and
 * admins; only owners make, unmake or remove an owner; a workspace always keeps one owner (409). Someone made a
 * member or viewer, or removed, loses the invitations they sent (revoked); someone made through an invitation and
 * removed from their last workspace is deleted (`deleteIfOnlyInvited`). The workspace's
 * row is locked for the change, so two owners demoting each other at once cannot leave it without one.
 */
export async function changeMember(
  p: People,
  input: { workspaceId: string; userId: string; role: Role | null; actorId: string },
): Promise<Member | null> {
  const client = await p.pool.connect();
  try {
    await client.query('begin');
    await client.query(`select 1 from orgs where id = $1 for update`, [input.workspaceId]);
    // The actor's role as of the lock: an owner stepped down a moment ago acts as what they are now.
    const actor = await client.query<{ role: Role }>(
      `select role from workspace_members where org_id = $1 and user_id = $2`,
      [input.workspaceId, input.actorId],
    );
    const actorRole = actor.rows[0]?.role;
    if (!actorRole || (actorRole !== 'owner' && actorRole !== 'admin'))
      throw new AppError(403, 'Only owners and admins of this workspace can do that');
    const { rows } = await client.query<{ role: Role }>(
      `select role from workspace_members where org_id = $1 and user_id = $2`,
      [input.workspaceId, input.userId],
    );
    const current = rows[0]?.role;
    if (!current) throw notFound('Member');
    if ((current === 'owner' || input.role === 'owner') && actorRole !== 'owner')
      throw new AppError(403, 'Only owners can make, change or remove an owner');
    if (current === 'owner' && input.role !== 'owner') {
      const owners = await client.query(`select 1 from workspace_members where org_id = $1 and role = 'owner'`, [
        input.workspaceId,
      ]);
      if ((owners.rowCount ?? 0) <= 1)
        throw conflict('A workspace keeps at least one owner: make someone else an owner first');
    }
    // Someone who may no longer invite takes back what they sent: their pending invitations stop working.
    if (input.role !== 'owner' && input.role !== 'admin')
      await client.query(
        `update workspace_invitations set status = 'revoked' where org_id = $1 and invited_by = $2 and status = 'pending'`,
        [input.workspaceId, input.userId],
      );
    if (input.role === null) {
      await client.query(`delete from workspace_members where org_id = $1 and user_id = $2`, [
        input.workspaceId,
        input.userId,
      ]);
      await deleteIfOnlyInvited(client, input.userId);
    } else
      await client.query(`update workspace_members set role = $3 where org_id = $1 and user_id = $2`, [
        input.workspaceId,
        input.userId,
        input.role,
      ]);
    await client.query('commit');
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
  if (input.role === null) return null;
  return (await membersOf(p, input.workspaceId)).find((m) => m.user_id === input.userId)!;
}
