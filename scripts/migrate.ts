// Applies committed migrations to DATABASE_URL (or the embedded default's address) and exits.
import { loadConfig } from '../src/config.js';
import { migrate, openOrm } from '../src/db/orm.js';
import { entities } from '../src/entities.js';

const config = loadConfig();
const orm = await openOrm(config.databaseUrl, entities, 2);
try {
  const applied = await migrate(orm, config.databaseUrl);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
} finally {
  await orm.close();
}
