import type { Config } from './config.js';
import type { Orm } from './db/orm.js';
import type { EventPublisher } from './events/publish.js';
import type { CredentialCache } from './http/credential-cache.js';
import type { Logger } from './logger.js';
import type { TemporalHandle } from './temporal/client.js';
import type { OutboxRelay } from './temporal/outbox.js';
import type { Resolver } from './webhooks/url-policy.js';

/** What the API and the worker share: built once per process, passed down explicitly. */
export interface Deps {
  config: Config;
  logger: Logger;
  orm: Orm;
  adminKey: string;
  temporal: TemporalHandle;
  outbox: OutboxRelay;
  /** Where a change's events go before its commit: the event log, then their subscribers (webhooks). */
  events: EventPublisher;
  /** App records behind credentials, kept per process and invalidated across processes (API only). */
  credentials: CredentialCache;
  /** DNS for webhook URL checks and sends. */
  resolve: Resolver;
  /** Under `npm start`: which supervised pieces are down and being restarted (for /health). */
  degraded?: () => string[];
  /**
   * Under `npm start`: true until the start-up work (the demo seed, the components' example) is done. /health says
   * `starting` meanwhile, and the requests that work makes are logged at debug level.
   */
  starting?: boolean;
}
