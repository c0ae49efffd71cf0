import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundle } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import type { Deps } from './deps.js';
import { installTemporalLogging } from './temporal/runtime-logger.js';
import { temporalAuth } from './temporal/client.js';
import { waitForDatabase } from './temporal/wait-for-database.js';
import { ensureRetentionSchedule } from './housekeeping/retention.js';
import { ensureRollupSchedule } from './housekeeping/rollup.js';
import { ensureReconcileSchedule } from './housekeeping/reconciler.js';

export const WORKFLOWS_PATH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../workflows/index.ts');

/** Bundles the workflow code once (webpack); pass the result to every worker of the process. */
export function bundleWorkflows(): Promise<WorkflowBundle> {
  return bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    logger: { debug() {}, info() {}, warn() {}, error() {}, trace() {}, log() {} } as never,
  });
}

export interface WorkerHandle {
  worker: Worker;
  /** Resolves when the worker has stopped. */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

export async function createWorker(deps: Deps, opts: { workflowBundle?: WorkflowBundle } = {}): Promise<WorkerHandle> {
  installTemporalLogging(deps.logger);
  const connection = await NativeConnection.connect({
    address: deps.config.temporalAddress,
    ...temporalAuth(deps.config),
  });
  const worker = await Worker.create({
    connection,
    namespace: deps.config.TEMPORAL_NAMESPACE,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    activities: createActivities({ ...deps, logger: deps.logger.child({ component: 'activity' }) }),
    ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    // An activity that cannot reach PostgreSQL waits for it here and goes on when it is back.
    interceptors: { activity: [waitForDatabase(deps.dbOutage)] },
    shutdownGraceTime: '10s',
  });
  await ensureRetentionSchedule(deps);
  await ensureRollupSchedule(deps);
  await ensureReconcileSchedule(deps);
  const done = worker.run().finally(() => connection.close());
  return {
    worker,
    done,
    async shutdown() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}
