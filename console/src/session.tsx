// The signed-in person's session, shared by every page: who they are, their workspaces and apps, and a reload.
// Its own module so that pages import it and App imports the pages, with no circle between them.
import { createContext, useContext, type ReactNode } from 'react';
import type { Me } from './api';

export interface Session {
  me: Me;
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
