// The signed-in person's session, shared by every page: who they are, their workspaces and apps, what each console
// action needs (from the route table), and a reload. Its own module so that pages import it and App imports the
// pages, with no circle between them.
import { createContext, useContext, type ReactNode } from 'react';
import type { Me } from './api';

/** The least role a console action needs (GET /console/api/roles, the route table's own rule), by SDK name. */
export interface ActionRole {
  role: Role;
  writes: boolean;
  read_only_exempt: boolean;
}
export type Role = 'viewer' | 'member' | 'admin' | 'owner';
const ORDER: Role[] = ['viewer', 'member', 'admin', 'owner'];

export interface Session {
  me: Me;
  roles: Record<string, ActionRole>;
  reload: () => Promise<void>;
}

const SessionContext = createContext<Session | null>(null);

export function SessionProvider({ session, children }: { session: Session; children: ReactNode }) {
  return <SessionContext.Provider value={session}>{children}</SessionContext.Provider>;
}

export const useSession = () => useContext(SessionContext)!;

/** Whether an app sits in the read-only demo workspace (its secret key refuses writes with 403). */
export function useDemo(appId: string | undefined): boolean {
  const { me } = useSession();
  return me.workspaces.some((w) => w.demo && w.apps.some((a) => a.id === appId));
}

/** The person's role for an app: their highest among the workspaces that list it (as the server decides). */
export function roleFor(me: Me, appId: string | undefined): Role | null {
  const roles = me.workspaces.filter((w) => w.apps.some((a) => a.id === appId)).map((w) => w.role as Role);
  return roles.sort((a, b) => ORDER.indexOf(b) - ORDER.indexOf(a))[0] ?? null;
}

/** Whether `role` is at least `least`. */
export const atLeast = (role: Role | null, least: Role) => role !== null && ORDER.indexOf(role) >= ORDER.indexOf(least);

/**
 * What the person may do on an app, by the action's SDK name (`webhooks.create`, `console.revealSecretKey`): the
 * server's own rule from the route table, so a page shows an action only to the roles the server lets through. On
 * the read-only demo a write is allowed only where the route exempts it (a test send to the demo's receiver).
 * Unknown names are refused (nothing shown that the table does not name). Each control carries its action's name
 * as `data-route`, which the role walk (test/browser/console-roles.test.ts) checks against the same table.
 */
export function useCan(appId: string | undefined): (action: string) => boolean {
  const { me, roles } = useSession();
  const demo = me.workspaces.some((w) => w.demo && w.apps.some((a) => a.id === appId));
  const role = roleFor(me, appId);
  return (action) => {
    const r = roles[action];
    if (!r || role === null) return false;
    if (demo && r.writes) return r.read_only_exempt;
    return atLeast(role, r.role);
  };
}

/** The same for a workspace's own actions (its people, its apps): the person's role in that workspace. */
export function useCanInWorkspace(workspaceId: string | undefined): (action: string) => boolean {
  const { me, roles } = useSession();
  const ws = me.workspaces.find((w) => w.id === workspaceId);
  return (action) => {
    const r = roles[action];
    return !!r && !!ws && !ws.demo && atLeast(ws.role as Role, r.role);
  };
}
