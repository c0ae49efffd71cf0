// The baseline of the `webhooks` section: trivial workflows on the same Temporal server, burst and drained, for
// the deliveries' rates to be read against.
import path from 'node:path';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { baselineWorkflow } from './baseline/workflow.js';
import { testEnv } from '../test/helpers/servers.js';
import { root } from './settings.js';
import { cpuReading, profileMain, workflowCpuLine } from './cpu.js';

/**
 * The baseline for webhook deliveries: the same Temporal server running `deliveries` instances of a trivial
 * workflow with one no-op local activity (bench/baseline/workflow.ts), on a worker of its own with the
 * service worker's settings, started as the outbox starts deliveries (client.workflow.start, 32 at a time).
 * Returns a runner: one bundle and connection, a round at a time.
 */
export async function temporalBaseline(deliveries: number) {
  const done = new Map<number, number>();
  const taskQueue = `bench-baseline-${process.pid}`;
  const connection = await NativeConnection.connect({ address: testEnv().config.temporalAddress });
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: path.join(root, 'bench', 'baseline', 'workflow.ts'),
    logger: { debug() {}, info() {}, warn() {}, error() {}, trace() {}, log() {} } as never,
  });
  const newWorker = (queue: string) =>
    Worker.create({
      connection,
      namespace: testEnv().config.TEMPORAL_NAMESPACE,
      taskQueue: queue,
      workflowBundle,
      activities: {
        touch: async (i: number) => {
          done.set(i, Date.now());
        },
      },
      shutdownGraceTime: '10s',
    });
  const worker = await newWorker(taskQueue);
  const running = worker.run();
  const client = testEnv().deps.temporal.client;
  const run = Date.now().toString(36);
  // Warm-up: the worker's first workflow tasks create its sandbox.
  await client.workflow.execute(baselineWorkflow, { taskQueue, workflowId: `bench-baseline-${run}-warm`, args: [-1] });
  const startAll = async (queue: string, from: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < deliveries) {
          const i = from + next++;
          await client.workflow.start(baselineWorkflow, {
            taskQueue: queue,
            workflowId: `bench-baseline-${run}-${i}`,
            args: [i],
          });
        }
      }),
    );
  };
  const waitFor = async (from: number, t0: number) => {
    const finished = () => [...done.keys()].filter((k) => k >= from && k < from + deliveries);
    while (finished().length < deliveries && Date.now() - t0 < 120_000) await new Promise((r) => setTimeout(r, 20));
    const keys = finished();
    return { completed: keys.length, rate: keys.length / ((Math.max(...keys.map((k) => done.get(k)!)) - t0) / 1000) };
  };
  return {
    async round(round: number): Promise<{ burst: number; drain: number }> {
      // Burst: started 32 at a time while the worker runs.
      const from = 2 * round * deliveries;
      const t0 = Date.now();
      await startAll(taskQueue, from);
      const burst = await waitFor(from, t0);
      // Drained: deliveries workflows started on a queue no worker polls yet, then a worker of its own starts.
      const drainQueue = `${taskQueue}-drain-${round}`;
      await startAll(drainQueue, from + deliveries);
      const drainStart = Date.now();
      const drainCpu = cpuReading();
      const stopProfile = await profileMain(`baseline-drain-${round + 1}`);
      const drainWorker = await newWorker(drainQueue);
      const drainRunning = drainWorker.run();
      const drain = await waitFor(from + deliveries, drainStart);
      const cpuPerWorkflow = drainCpu(drain.completed);
      await stopProfile();
      drainWorker.shutdown();
      await drainRunning;
      process.stdout.write(
        `\nTemporal baseline (round ${round + 1}): ${deliveries} trivial workflows (one no-op local activity), same ` +
          `server, 32 starts at a time\n` +
          `  completed            ${burst.completed} of ${deliveries}\n` +
          `  throughput           ${burst.rate.toFixed(0)} workflows/s\n` +
          `  drain                ${drain.rate.toFixed(0)} workflows/s (${drain.completed} of ${deliveries} started ` +
          `while no worker ran; from the worker's start to the last completion)\n` +
          workflowCpuLine(cpuPerWorkflow),
      );
      return { burst: burst.rate, drain: drain.rate };
    },
    async close() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}
