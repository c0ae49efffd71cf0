import fs from 'node:fs';
import { Client, Connection, type ScheduleOptionsStartWorkflowAction, type TLSConfig } from '@temporalio/client';
import proto from '@temporalio/proto';
import { SA, type WorkflowDefinition, type WorkflowOf } from '../../workflows/shared.js';
import type { Logger } from '../logger.js';

export interface TemporalHandle {
  connection: Connection;
  client: Client;
  namespace: string;
  taskQueue: string;
  close(): Promise<void>;
}

/** How a client reaches Temporal beyond its address: TLS (mutual, with a client certificate) or an API key. */
export interface TemporalAuth {
  tls?: TLSConfig;
  apiKey?: string;
}

/**
 * TLS and API key from the settings (TEMPORAL_TLS_*, TEMPORAL_API_KEY): nothing for a plain local cluster; mutual TLS
 * when a client certificate is given (Temporal Cloud's usual way); TLS with an API key when only the key is.
 */
export function temporalAuth(config: {
  TEMPORAL_TLS_CERT?: string;
  TEMPORAL_TLS_KEY?: string;
  TEMPORAL_TLS_CA?: string;
  TEMPORAL_TLS_SERVER_NAME?: string;
  TEMPORAL_API_KEY?: string;
}): TemporalAuth {
  const read = (file: string, what: string) => {
    try {
      return fs.readFileSync(file);
    } catch (err) {
      throw new Error(`${what} (${file}) cannot be read: ${(err as Error).message}`, { cause: err });
    }
  };
  const mutual = config.TEMPORAL_TLS_CERT && config.TEMPORAL_TLS_KEY;
  if (!mutual && !config.TEMPORAL_API_KEY && !config.TEMPORAL_TLS_CA) return {};
  const tls: TLSConfig = {
    ...(mutual
      ? {
          clientCertPair: {
            crt: read(config.TEMPORAL_TLS_CERT!, 'TEMPORAL_TLS_CERT'),
            key: read(config.TEMPORAL_TLS_KEY!, 'TEMPORAL_TLS_KEY'),
          },
        }
      : {}),
    ...(config.TEMPORAL_TLS_CA ? { serverRootCACertificate: read(config.TEMPORAL_TLS_CA, 'TEMPORAL_TLS_CA') } : {}),
    ...(config.TEMPORAL_TLS_SERVER_NAME ? { serverNameOverride: config.TEMPORAL_TLS_SERVER_NAME } : {}),
  };
  return { tls, ...(config.TEMPORAL_API_KEY ? { apiKey: config.TEMPORAL_API_KEY } : {}) };
}

export async function connectTemporal(opts: {
  address: string;
  namespace: string;
  taskQueue: string;
  auth?: TemporalAuth;
}): Promise<TemporalHandle> {
  const connection = await Connection.connect({
    address: opts.address,
    ...opts.auth,
    connectTimeout: '10s',
    // gRPC's default reconnect backoff grows to 2 minutes during an outage, so a Temporal that is back
    // would be noticed only that late; retry the connection every 2 seconds at most instead.
    channelArgs: { 'grpc.initial_reconnect_backoff_ms': 500, 'grpc.max_reconnect_backoff_ms': 2000 },
  });
  const client = new Client({ connection, namespace: opts.namespace });
  return { connection, client, namespace: opts.namespace, taskQueue: opts.taskQueue, close: () => connection.close() };
}

/** True when the frontend answers within the timeout. */
export async function temporalReachable(connection: Connection, timeoutMs = 1000): Promise<boolean> {
  try {
    await connection.withDeadline(Date.now() + timeoutMs, () => connection.workflowService.getSystemInfo({}));
    return true;
  } catch {
    return false;
  }
}

/**
 * One Temporal call (or several, in `fn`), bounded: a gRPC deadline, an abort when it passes, and a timer in case
 * neither ends the call (a call made while the channel reconnects can otherwise hang). Rejects with a
 * DEADLINE_EXCEEDED-coded error (`isTemporalUnavailable`) when Temporal did not answer in time. For every call made
 * while answering a request: a frozen or unreachable Temporal must not hold the request.
 */
export async function boundedCall<T>(connection: Connection, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      abort.abort();
      reject(Object.assign(new Error(`Temporal did not answer within ${timeoutMs} ms`), { code: 4 }));
    }, timeoutMs);
  });
  const attempt = connection.withAbortSignal(abort.signal, () => connection.withDeadline(Date.now() + timeoutMs, fn));
  attempt.catch(() => undefined); // settled after the timer: nothing left to report
  try {
    return await Promise.race([attempt, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** How long a request waits for a Temporal call it makes (a signal to a checkout's workflow). */
export const REQUEST_TEMPORAL_TIMEOUT_MS = 2_000;

/** A Schedule's action: start `def`'s workflow, its arguments typed by the workflow function. */
export function scheduledStart<D extends WorkflowDefinition>(
  def: D,
  opts: Omit<ScheduleOptionsStartWorkflowAction<WorkflowOf<D>>, 'type' | 'workflowType'>,
): ScheduleOptionsStartWorkflowAction<WorkflowOf<D>> {
  return { type: 'startWorkflow', workflowType: def.name, ...opts };
}

const GRPC_ALREADY_EXISTS = 6;

/**
 * Registers the service's custom search attributes in the namespace when they are missing.
 * On a cluster where these credentials may not do that, logs what an operator must register.
 */
export async function ensureSearchAttributes(handle: TemporalHandle, logger: Logger): Promise<void> {
  const wanted = Object.values(SA);
  try {
    const existing = await handle.connection.operatorService.listSearchAttributes({ namespace: handle.namespace });
    const have = new Set(Object.keys(existing.customAttributes ?? {}));
    const missing = wanted.filter((k) => !have.has(k.name));
    if (missing.length === 0) return;
    const searchAttributes: Record<string, number> = {};
    for (const k of missing)
      searchAttributes[k.name] = proto.temporal.api.enums.v1.IndexedValueType[`INDEXED_VALUE_TYPE_${k.type}`];
    await handle.connection.operatorService.addSearchAttributes({ namespace: handle.namespace, searchAttributes });
    logger.info({ registered: missing.map((k) => k.name) }, 'registered Temporal search attributes');
  } catch (err) {
    const code = (err as { code?: number }).code;
    if (code === GRPC_ALREADY_EXISTS) return; // another process registered them first
    logger.warn(
      { err, needed: wanted.map((k) => `${k.name}=${k.type}`) },
      'could not register Temporal search attributes; register them with `temporal operator search-attribute create`',
    );
  }
}
