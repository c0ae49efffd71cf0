// Writes a new migration from the difference between the entities and the last snapshot, using a
// throw-away embedded PostgreSQL when DATABASE_URL is not set. Then add it to src/db/migrations/index.ts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
import { migrate, openOrm } from '../src/db/orm.js';
import { createLogger } from '../src/logger.js';

const name = process.argv[2];
const logger = createLogger('warn');
let url = process.env.DATABASE_URL;
let stop = async () => {};
if (!url) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'offerkit-migration-'));
  fs.chmodSync(dir, 0o755);
  const pg = await startEmbeddedPostgres({ dir: path.join(dir, 'pg'), port: 54999, logger });
  url = pg.url;
  stop = async () => {
    await pg.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
}
const orm = await openOrm(url, 2);
try {
  await migrate(orm, url);
  const result = await orm.migrator.create(undefined, false, false, name);
  console.log(result.fileName ? `created ${result.fileName}` : 'no changes');
} finally {
  await orm.close();
  await stop();
}
