import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { Reply, route } from '../http/route.js';

export const STREAM_DESCRIPTION =
  'Server-sent events (`text/event-stream`), one per change that affects access, written in the same transaction ' +
  'as the change and read from PostgreSQL, so every API process serves every change. Events: `ready` (first, its ' +
  'id is where the stream starts), `catalog` (`{ table }`: a plan, entitlement, add-on or incentive, or their ' +
  'links, changed: read again what you keep of the catalog and of accounts), `account` (`{ accountId }`: its plan, ' +
  'incentive, add-ons, offer extras, subscription or the account itself changed, or it was deleted), `usage` ' +
  "(`{ accountId, entitlementId, usage, held }`: a counter's value now; at most one per counter per " +
  "`STREAM_USAGE_FLUSH_MS`, 250 ms by default), `credits` (`{ accountId, pool }`: a pool's balance moved by a " +
  "grant, an expiry, a refund or a top-up; a draw comes as its feature's `usage` event), and `resync` (the " +
  '`Last-Event-ID` is older than the retention, `STREAM_RETENTION_HOURS`, 24 by default, or not a position: read ' +
  'everything again, then carry on from its id). Send the last id seen as `Last-Event-ID` to resume after it. A ' +
  'comment (`: keep-alive`) comes every `STREAM_HEARTBEAT_SECONDS` (15). A reader that leaves more than ' +
  '`STREAM_MAX_BUFFER_BYTES` (1 MiB) unread is disconnected (resume with `Last-Event-ID`). An account token reads ' +
  "its own account's events and the catalog's; the publishable key cannot read the stream.";

export const streamRoutes = [
  route({
    method: 'GET',
    path: '/apps/:appId/stream',
    sdk: 'stream.open',
    auth: ['S', 'T'],
    tags: ['Change stream'],
    summary: 'Changes that affect access, as server-sent events',
    description: STREAM_DESCRIPTION,
    params: appIdParams,
    query: z.object({}),
    replies: {
      200: {
        description: 'The event stream; it stays open',
        contentType: 'text/event-stream',
        events: ['ready', 'catalog', 'account', 'usage', 'credits', 'resync'],
      },
    },
    errors: [503],
    consoleHidden: true,
    handler: async (s) => {
      const accountId = s.caller.kind === 'token' ? s.caller.accountId : null;
      const out = await s.deps.stream.open(s.app!.id, accountId, s.headers['last-event-id']);
      return new Reply(
        200,
        out,
        { 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no', Connection: 'keep-alive' },
        'text/event-stream',
      );
    },
  }),
];
