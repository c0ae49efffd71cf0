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

describe('topology: a real Temporal cluster with faults (small npm run topology)', function () {
  this.timeout(30 * 60_000);

  it('every acknowledged write applied once, every delivery delivered, every timer fired once, nothing stuck', async () => {
    ensureTemporalServer(); // built by npm test's checks; here only when the file runs alone on a new machine
    const { code, output } = await run({
      TOPOLOGY_ACCOUNTS: '40',
      TOPOLOGY_USAGE: '80',
      TOPOLOGY_CHECKOUTS: '4',
      TOPOLOGY_EXPIRY_S: '30',
      TOPOLOGY_CONCURRENCY: '8',
      TOPOLOGY_UI: '0', // the UI server is a build of its own, not needed to check anything
    });
    expect(code, output).to.equal(0);
    // The three faults happened, each followed by a restart.
    for (const victim of ['history-', 'worker-', 'api-'])
      expect(output, output).to.match(new RegExp(`fault: ${victim}\\d SIGKILLed at .* restarted after`));
    expect(output).to.match(
      /accounts {5}sent 40, acknowledged 40, retried \d+, in the database 40, account\.created events 40 \(duplicates 0\)/,
    );
    expect(output).to.match(/usage adds {3}sent 80 .* acknowledged 80, retried \d+, counted 80/);
    expect(output).to.match(/checkouts {4}opened 4, approved at the stand-in 4, completed 4 \(applied twice: 0\)/);
    expect(output).to.match(/incentive expiries {2}40 of 40 fired \(twice: 0\)/);
    expect(output).to.match(/pause resumes {7}4 of 4 fired \(twice: 0\)/);
    expect(output).to.match(
      /deliveries\n {3}events (\d+), delivery rows \1, received \d+, distinct \1, duplicates \d+, lost 0/,
    );
    expect(output).to.match(
      /outbox 0, pending deliveries 0, open checkouts 0, incentives not removed 0, pauses not resumed 0/,
    );
    expect(output).to.include('all targets met');
  });
});
