// Starting the Temporal dev server the embedded defaults and the tests use: a start that fails the way a
// lost port does (a panic while starting, exit code 2, or "address already in use") is tried again, up to
// three times; any other failure is reported at once. The error keeps the panic's first line, not only the end
// of its goroutine dump. The "CLI" here is a real executable: a script that fails like the dev server does and,
// when told to, runs the real one.
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { ensureTemporalCli, StartFailed, startTemporalDevServer } from '../../src/temporal/devserver.js';
import { freePort, tempDir } from '../helpers/servers.js';

describe('starting the Temporal dev server', function () {
  this.timeout(120_000);
  const dir = tempDir('devserver-start-');
  const warnings: string[] = [];
  const logger = pino(
    { level: 'warn' },
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const l of chunk.toString().split('\n')) if (l.trim()) warnings.push(l);
        cb();
      },
    }),
  );
  beforeEach(() => (warnings.length = 0));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** A CLI that fails `failures` times (as `kind` says) and then runs the real dev server. */
  const fakeCli = (name: string, failures: number, kind: 'panic' | 'flag') => {
    const count = path.join(dir, `${name}.count`);
    const script = path.join(dir, `${name}.sh`);
    const real = ensureTemporalCli(process.env.TEMPORAL_CLI, logger);
    const fail =
      kind === 'panic'
        ? // The shape of a Go panic: the cause first, then a goroutine dump far longer than what is kept.
          `echo "panic: listen tcp 127.0.0.1:41234: bind: address already in use" >&2
           echo "" >&2
           for i in $(seq 1 400); do echo "goroutine $i [running]: go.temporal.io/server/common/membership.(*x).Start(0x$i)" >&2; done
           exit 2`
        : `echo 'Error: unknown flag: --no-such-flag' >&2; exit 1`;
    fs.writeFileSync(
      script,
      `#!/bin/bash
n=$(cat ${count} 2>/dev/null || echo 0); echo $((n + 1)) > ${count}
if [ "$n" -lt ${failures} ]; then
  ${fail}
fi
exec ${real} "$@"
`,
      { mode: 0o755 },
    );
    return { cli: script, attempts: () => Number(fs.readFileSync(count, 'utf8')) };
  };

  /** The error a start with this CLI fails with (undefined if it started). */
  const startFailure = async (cli: string) =>
    startTemporalDevServer({ cli, port: await freePort(), uiPort: null, namespace: 'default', logger }).then(
      () => undefined,
      (e: unknown) => e,
    );

  it('a panic while starting is tried again, and the server then starts', async () => {
    const { cli, attempts } = fakeCli('panics-once', 1, 'panic');
    const dev = await startTemporalDevServer({
      cli,
      port: await freePort(),
      uiPort: null,
      namespace: 'default',
      logger,
    });
    try {
      expect(attempts()).to.equal(2);
      expect(dev.owned).to.equal(true);
      expect(dev.alive()).to.equal(true);
      expect(warnings.join('\n')).to.include('panic: listen tcp 127.0.0.1:41234: bind: address already in use');
    } finally {
      await dev.stop();
    }
    expect(dev.alive()).to.equal(false);
  });

  it('three panics in a row are reported, with the panic’s first line and the end of its dump', async () => {
    const { cli, attempts } = fakeCli('always-panics', 99, 'panic');
    const err = await startFailure(cli);
    expect(err).to.be.instanceOf(StartFailed);
    expect(attempts()).to.equal(3);
    const message = (err as Error).message;
    expect(message).to.match(/^temporal server start-dev exited with 2: panic: listen tcp/);
    expect(message).to.include('goroutine 400 [running]');
    expect(message.length, 'the dump is cut in the middle').to.be.below(4_200);
  });

  it('any other failure is reported at once, not tried again', async () => {
    const { cli, attempts } = fakeCli('bad-flag', 99, 'flag');
    const err = await startFailure(cli);
    expect(err).to.be.instanceOf(StartFailed);
    expect((err as StartFailed).code).to.equal(1);
    expect((err as Error).message).to.include('unknown flag: --no-such-flag');
    expect(attempts()).to.equal(1);
  });
});
