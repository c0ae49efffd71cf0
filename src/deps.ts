import type { Config } from './config.js';
import type { Orm } from './db/orm.js';
import type { DatabaseOutage } from './db/outage.js';
import type { EventSink, Tx } from './db/transaction.js';
import type { CredentialCache } from './http/credential-cache.js';
import type { Logger } from './logger.js';
import type { TemporalHandle } from './temporal/client.js';
import type { OutboxRelay } from './temporal/relay.js';
import type { Caller } from './http/caller.js';
import type { EntityManager } from '@mikro-orm/postgresql';

/** DNS lookups (webhook URL checks and sends): the system's, or a test's. */
export type Resolver = (host: string) => Promise<string[]>;

/** An event already in the log, as the event path hands it to subscribers. */
export interface RecordedEvent {
  id: string;
  appId: string;
  type: string;
  data: Record<string, unknown>;
  createdAt: Date;
}

/** The event path (events/publish.ts implements it): records a change's events, then hands them to subscribers. */
export interface EventBus extends EventSink {
  publishRecorded(tx: Tx, event: RecordedEvent): Promise<void>;
}

/** MCP access tokens (oauth/tokens.ts implements it): the caller a token stands for on an app, or null. */
export type AccessTokenVerifier = (em: EntityManager, appId: string, token: string) => Promise<Caller | null>;

/**
 * The demo workspace's built-in webhook receiver (src/dev/demo-receiver.ts), present only where the demo runs:
 * the one URL that may point at a private address although the policy refuses those, and the receiving itself.
 */
export interface DemoReceiver {
  accepts(url: string, appId: string): boolean;
  receive(
    em: EntityManager,
    request: { pathname: string; headers: Record<string, string | string[] | undefined>; body: string },
  ): Promise<{ status: number; body: unknown }>;
}

/** The change stream's readers in a process (src/stream/stream.hub.ts implements it). */
export interface ChangeStream {
  /** A new reader of an app's changes (an account token's: `accountId`) after `from` (`Last-Event-ID`). */
  open(appId: string, accountId: string | null, from: string | undefined): Promise<import('node:stream').Readable>;
  start(): Promise<void>;
  /** Drops rows past the retention (every minute by itself). */
  prune(): Promise<void>;
  close(): Promise<void>;
}

/** What the API and the worker share: built once per process, passed down explicitly. */
export interface Deps {
  config: Config;
  logger: Logger;
  orm: Orm;
  /**
   * The process's view of a database outage: told by the first request or activity that cannot reach PostgreSQL,
   * it probes until the database answers, then wakes the activities waiting on it and runs the work registered for
   * the recovery.
   */
  dbOutage: DatabaseOutage;
  adminKey: string;
  temporal: TemporalHandle;
  outbox: OutboxRelay;
  /** Where a change's events go before its commit: the event log, then their subscribers (webhooks). */
  events: EventBus;
  /** App records behind credentials, kept per process and invalidated across processes (API only). */
  credentials: CredentialCache;
  /** The change stream's readers in this process, fed from PostgreSQL (API only; started by the first reader). */
  stream: ChangeStream;
  /** DNS for webhook URL checks and sends. */
  resolve: Resolver;
  /** Checks OAuth access tokens presented to MCP routes. */
  verifyAccessToken: AccessTokenVerifier;
  /** The demo workspace's receiver; absent outside development. */
  demoReceiver?: DemoReceiver;
  /** Under `npm start`: which supervised pieces are down and being restarted (for /health). */
  degraded?: () => string[];
  /**
   * Under `npm start`: true until the start-up work (the demo seed, the components' example) is done. /health says
   * `starting` meanwhile, and the requests that work makes are logged at debug level.
   */
  starting?: boolean;
}
