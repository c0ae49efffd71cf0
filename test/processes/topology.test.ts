// The small version of `npm run topology` (issue 34), in the suite: offerkit on a real Temporal cluster (frontend,
// two history, matching and worker services as processes of their own on PostgreSQL, schemas by temporal-sql-tool),
// two API processes on one port and two workers, while one history service, one worker and one API process are
// SIGKILLed and restarted. The scenario (scripts/topology.ts) checks its own targets in the database and exits 1
// when one is missed; this reads its report. Cost: about 3 minutes on two shared cores, plus building the Temporal
// server once per machine (`npm test` builds it among its checks; docs/benchmarks.md has the times).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import { ensureTemporalServer } from '../../scripts/go-tools.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

function run(env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/topology.ts'], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

/**
 * The smallest scenario that still puts work under every fault and checks every target (each added account, usage add
 * or checkout is worker, API and history work, CPU-seconds on a loaded machine):
 * - 12 accounts, each with an actor holding its incentive's timer and two deliveries: with the 16 history shards
 *   split between the two history services, the chance that none of the 12 actors lives on the killed one's shards
 *   is about 0.5^12, and the deliveries and checkouts spread the same way;
 * - 24 usage adds on those 12 accounts: two adds on each counter, so the Idempotency-Key path is concurrent;
 * - 2 checkouts: each completes, pauses and resumes (the test clock), the paths of checkout and billing workflows;
 * - incentives expire 20 s after the burst starts: the faults come at 1 to 11 s and last 2 to 8 s, so the timers are
 *   set before the kills and fire about when the last fault ends (before or after it, both must fire once).
 */
const SIZE = { accounts: 12, usage: 24, checkouts: 2 };

describe('topology: a real Temporal cluster with faults (small npm run topology)', function () {
  this.timeout(30 * 60_000);

  it('every acknowledged write applied once, every delivery delivered, every timer fired once, nothing stuck', async () => {
    ensureTemporalServer(); // built by npm test's checks; here only when the file runs alone on a new machine
    const { accounts, usage, checkouts } = SIZE;
    const { code, output } = await run({
      TOPOLOGY_ACCOUNTS: String(accounts),
      TOPOLOGY_USAGE: String(usage),
      TOPOLOGY_CHECKOUTS: String(checkouts),
      TOPOLOGY_EXPIRY_S: '20',
      TOPOLOGY_CONCURRENCY: '8',
      TOPOLOGY_UI: '0', // the UI server is a build of its own, not needed to check anything
    });
    expect(code, output).to.equal(0);
    // The three faults happened, each followed by a restart.
    for (const victim of ['history-', 'worker-', 'api-'])
      expect(output, output).to.match(new RegExp(`fault: ${victim}\\d SIGKILLed at .* restarted after`));
    expect(output).to.match(
      new RegExp(
        `accounts {5}sent ${accounts}, acknowledged ${accounts}, retried \\d+, in the database ${accounts}, ` +
          `account\\.created events ${accounts} \\(duplicates 0\\)`,
      ),
    );
    expect(output).to.match(
      new RegExp(`usage adds {3}sent ${usage} .* acknowledged ${usage}, retried \\d+, counted ${usage}`),
    );
    expect(output).to.match(
      new RegExp(
        `checkouts {4}opened ${checkouts}, approved at the stand-in ${checkouts}, completed ${checkouts} \\(applied twice: 0\\)`,
      ),
    );
    expect(output).to.match(new RegExp(`incentive expiries {2}${accounts} of ${accounts} fired \\(twice: 0\\)`));
    expect(output).to.match(new RegExp(`pause resumes {7}${checkouts} of ${checkouts} fired \\(twice: 0\\)`));
    expect(output).to.match(
      /deliveries\n {3}events (\d+), delivery rows \1, received \d+, distinct \1, duplicates \d+, lost 0/,
    );
    expect(output).to.match(
      /outbox 0, pending deliveries 0, open checkouts 0, incentives not removed 0, pauses not resumed 0/,
    );
    expect(output).to.include('all targets met');
  });
});
