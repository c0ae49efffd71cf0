import fs from 'node:fs';
import path from 'node:path';
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundle } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import type { Deps } from './deps.js';
import { installTemporalLogging } from './temporal/runtime-logger.js';
import { temporalAuth } from './temporal/client.js';
import { waitForDatabase } from './temporal/wait-for-database.js';
import { ensureRetentionSchedule } from './housekeeping/retention.js';
import { ensureRollupSchedule } from './housekeeping/rollup.js';
import { ensureReconcileSchedule } from './housekeeping/reconciler.js';
import { hashOfFiles, PROJECT_ROOT } from './root.js';

export const WORKFLOWS_PATH = path.join(PROJECT_ROOT, 'workflows', 'index.ts');

const CACHE_DIR = path.join(PROJECT_ROOT, 'node_modules', '.cache', 'offerkit-workflows');

/**
 * What the bundle is made of: every file of workflows/ (the workflow code imports nothing outside it but packages)
 * and the lockfile (the packages' versions, @temporalio/workflow's first). The same key, the same bundle.
 */
function bundleKey(): string {
  const files = fs
    .globSync('**/*', { cwd: path.dirname(WORKFLOWS_PATH) })
    .filter((f) => fs.statSync(path.join(path.dirname(WORKFLOWS_PATH), f)).isFile())
    .sort();
  return hashOfFiles([...files.map((f) => path.join('workflows', f)), 'package-lock.json']).slice(0, 32);
}

/**
 * Bundles the workflow code (webpack, about 2 CPU-seconds) and keeps it in node_modules/.cache/offerkit-workflows
 * under a hash of what it is made of, so the next worker process of the same code (a restart, a second worker, a
 * test's) reads it instead. A cache that cannot be read or written is skipped: the worker bundles as before.
 */
export async function bundleWorkflows(): Promise<WorkflowBundle> {
  let file: string | undefined;
  try {
    file = path.join(CACHE_DIR, `${bundleKey()}.js`);
    return { code: await fs.promises.readFile(file, 'utf8') };
  } catch {
    // not cached yet (or no cache): bundle
  }
  const bundle = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    logger: { debug() {}, info() {}, warn() {}, error() {}, trace() {}, log() {} } as never,
  });
  if (file) {
    // Written whole then renamed: a process reading at the same time sees the old state or the whole bundle.
    const partial = `${file}.${process.pid}.${Date.now()}.tmp`;
    await fs.promises
      .mkdir(CACHE_DIR, { recursive: true })
      .then(() => fs.promises.writeFile(partial, bundle.code))
      .then(() => fs.promises.rename(partial, file))
      .catch(() => fs.promises.rm(partial, { force: true }).catch(() => {}));
  }
  return { code: bundle.code };
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
    workflowBundle: opts.workflowBundle ?? (await bundleWorkflows()),
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
