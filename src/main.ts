// Starts the whole service: embedded PostgreSQL and Temporal dev server (unless DATABASE_URL /
// TEMPORAL_ADDRESS point elsewhere), one worker with the outbox relay, and the API; supervises them.
import { dashboardUrl } from './console-api/urls.js';
import { loadConfig } from './config.js';
import { Supervisor, workerPiece } from './supervisor.js';
import { createLogger } from './logger.js';
import {
  closeDeps,
  closeServer,
  createWorker,
  listen,
  onShutdown,
  openDeps,
  resolveAdminKey,
  startInfrastructure,
  STANDIN_CREDENTIALS,
  type WorkerHandle,
} from './runtime.js';
import { markWorkspaceReadOnly } from './apps/apps.service.js';
import { closePeople, issueSetupToken, people } from './people/better-auth.js';
import { closeMail } from './people/mail.js';
import { DEMO_WORKSPACE_ID } from './people/workspaces.js';

const config = loadConfig();
const logger = createLogger(config.LOG_LEVEL, 'offerkit', config.LOG_FORMAT);

async function main() {
  const admin = resolveAdminKey(config);
  const infra = await startInfrastructure(config, logger);
  const deps = await openDeps(config, logger, admin.key);
  // /health says `starting` (503) until the start-up work below is done; that work's own requests log at debug.
  deps.starting = true;
  const watched = (w: WorkerHandle) => {
    w.done.catch((err) => logger.error({ err }, 'worker stopped unexpectedly; the supervisor restarts it'));
    return w;
  };
  let worker = watched(await createWorker(deps));
  deps.outbox.start();
  const server = await listen(deps);

  // Supervision: a child (or the worker) that dies is logged, restarted with backoff, and reported by
  // /health as degraded meanwhile, instead of taking the service down or going unnoticed.
  const supervisor = new Supervisor(logger);
  if (infra.postgres?.owned)
    supervisor.add({
      name: 'postgres',
      // The process we started exited (a connection that fails is /health's business, not a restart's).
      check: async () => infra.postgres?.alive() ?? false,
      restart: () => infra.restartPostgres(),
    });
  if (infra.temporal?.owned)
    supervisor.add({
      name: 'temporal',
      check: async () => infra.temporal?.alive() ?? false,
      restart: () => infra.restartTemporal(),
    });
  supervisor.add(
    workerPiece(
      () => worker,
      async () => {
        await worker.shutdown().catch(() => undefined);
        worker = watched(await createWorker(deps));
      },
    ),
  );
  if (infra.paypal)
    supervisor.add({
      name: 'paypal',
      check: async () => infra.paypal?.listening ?? false,
      restart: () => infra.restartPaypal(),
    });
  deps.degraded = () => supervisor.degraded();
  supervisor.start();

  const apiUrl = `http://${config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST}:${config.PORT}`;
  const consoleUrl = `${dashboardUrl(config, apiUrl)}/`;
  // The console: the demo workspace on first start, and a one-time setup link while nobody can sign in.
  const peopleModule = await people(deps);
  if (config.demoWorkspace) {
    // Checkouts are approved at the local PayPal stand-in, as a buyer would click through it.
    const standIn = infra.paypal;
    const paypal = standIn
      ? { credentials: STANDIN_CREDENTIALS, approve: (url: string) => standIn.approve(url) }
      : undefined;
    // Development code (src/dev/), loaded only when the demo workspace is on.
    const { seedDemo } = await import('./dev/demo-seed.js');
    await seedDemo(`http://127.0.0.1:${config.PORT}`, admin.key, logger, { paypal }).catch((err) =>
      logger.error({ err }, 'could not create the demo workspace'),
    );
    // Read-only from now on, for every credential but the admin key (src/http/guard.ts).
    for (const change of await markWorkspaceReadOnly(deps.orm.em.fork(), DEMO_WORKSPACE_ID))
      await deps.credentials.confirm(change);
  }
  const setupToken = await issueSetupToken(peopleModule);
  // The drop-in components' example page on a real app (the console's demo workspace when there is one).
  let elements = '(off: ELEMENTS_EXAMPLE)';
  if (config.elementsExample) {
    const paypal = infra.paypal;
    const { prepareElementsExample } = await import('./dev/elements-example.js');
    elements = await prepareElementsExample({
      baseUrl: `http://127.0.0.1:${config.PORT}`,
      publicUrl: apiUrl,
      adminKey: admin.key,
      paypal: paypal && { approve: (u) => paypal.approve(u), credentials: STANDIN_CREDENTIALS },
      logger,
    }).then(
      (x) => `${x.url}   (the components on ${x.source === 'demo' ? 'the demo workspace' : 'an example app'})`,
      (err: unknown) => {
        logger.error({ err }, 'could not prepare the elements example');
        return `${apiUrl}/elements   (no example data: see the log)`;
      },
    );
  }
  const uiUrl = infra.temporal?.uiUrl ?? (config.embeddedTemporal ? null : '(external Temporal: see your cluster UI)');
  const adminKeySource =
    admin.source === 'generated'
      ? '   (generated now, kept in ' + config.dataDir + '/admin-api-key)'
      : admin.source === 'file'
        ? '   (from ' + config.dataDir + '/admin-api-key)'
        : '   (ADMIN_API_KEY)';
  deps.starting = false;
  logger.info({ url: consoleUrl }, 'ready');
  process.stdout.write(
    [
      '',
      `  Console      ${consoleUrl}`,
      ...(setupToken
        ? [`  Owner setup  ${new URL(`setup?token=${setupToken}`, consoleUrl)}   (one-time link, valid 24 hours)`]
        : []),
      `  API          ${apiUrl}   (reference: ${apiUrl}/docs)`,
      `  Elements     ${elements}`,
      `  Temporal UI  ${uiUrl ?? '(headless)'}`,
      `  Admin key    ${admin.key}${adminKeySource}`,
      `  Data         ${config.embeddedPostgres || config.embeddedTemporal ? config.dataDir : '(external servers)'}`,
      infra.paypal
        ? `  PayPal       local stand-in at ${infra.paypal.baseUrl} (no money moves): ` +
          `client_id ${STANDIN_CREDENTIALS.client_id}, client_secret ${STANDIN_CREDENTIALS.client_secret}`
        : `  PayPal       ${config.PAYPAL_BASE_URL ?? 'api-m.paypal.com / api-m.sandbox.paypal.com, per connection'}`,
      infra.mail
        ? `  Mail         ${infra.mail.webUrl}   (MailDev: the email the service sends, invitation links included)`
        : `  Mail         ${config.SMTP_URL ? 'SMTP_URL' : '(no SMTP_URL: no email is sent; see docs/security.md, Invitations)'}`,
      `  MCP          ${apiUrl}/apps/<app id>/mcp   (OAuth consent: ${dashboardUrl(config, apiUrl)}/oauth/consent)`,
      config.OPENAI_API_KEY
        ? `  Models       dynamic cancel-flow offers on (${config.OPENAI_MODEL})`
        : '  Models       dynamic cancel-flow offers off (set OPENAI_API_KEY)',
      '',
      '  Ctrl-C stops everything.',
      '',
    ].join('\n') + '\n',
  );

  onShutdown(logger, async () => {
    supervisor.stop();
    await closeServer(server);
    await closePeople(deps);
    closeMail(deps);
    await worker.shutdown().catch(() => undefined);
    await closeDeps(deps);
    await infra.stop();
  });
}

main().catch((err) => {
  logger.fatal({ err }, 'start-up failed');
  process.stderr.write(`\nStart-up failed: ${(err as Error).message}\n`);
  process.exit(1);
});
