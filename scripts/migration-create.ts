// Writes a new, blank migration to fill in by hand; then add it to src/db/migrations/index.ts.
// test/api/schema.test.ts fails while the entities and the migrated schema disagree, and prints the SQL
// the ORM would run, as a starting point.
import fs from 'node:fs';
import path from 'node:path';

const name = (process.argv[2] ?? '').replace(/[^A-Za-z0-9_]/g, '_');
if (!name) {
  console.error('usage: npm run migration:create -- <name>');
  process.exit(2);
}
const stamp = new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
const cls = `Migration${stamp}_${name}`;
const file = path.join('src/db/migrations', `${cls}.ts`);
fs.writeFileSync(
  file,
  `import { Migration } from '@mikro-orm/migrations';

export class ${cls} extends Migration {
  override name = '${cls}';

  override up(): void {
    this.addSql(\`\`);
  }
}
`,
);
console.log(`created ${file}`);
