import type { IApp } from '../apps/apps.entities.js';
import type { Deps } from '../deps.js';
import type { Caller } from './route.js';

/**
 * One audit line for a change to a credential or a look at one (a key regenerated, a signing secret revealed or
 * rotated, an account token minted): what happened, to which app, and who did it: the person (their id, address and
 * role) when it came through the console, else the kind of credential that asked (`secret`, `admin`). The lines are
 * the service's log records with an `audit` field, so a log collector can keep them apart.
 */
export function audit(
  s: { deps: Deps; caller: Caller; app: IApp | null; requestId: string },
  action: string,
  fields: Record<string, unknown> = {},
): void {
  const who =
    s.caller.kind === 'person'
      ? { userId: s.caller.userId, email: s.caller.email, role: s.caller.role }
      : { by: s.caller.kind };
  s.deps.logger.info(
    { audit: action, appId: s.app?.id, ...fields, ...who, requestId: s.requestId },
    `audit: ${action.replace(/_/g, ' ')}`,
  );
}
