// The console names each action by its route (the SDK name), so that what it shows to whom is the route table's rule
// (session.tsx `useCan`) and the role walk (test/browser/console-roles.test.ts) can check every control it finds: every
// name the console uses is a route people may call, and every write the console makes is named on the control that
// makes it (`data-route`, or a dialog's `route`).
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { consoleRoles } from '../../src/console-api/console.routes.js';
import { routes } from '../../src/routes.js';

const root = path.resolve('console/src');
const source = (fs.readdirSync(root, { recursive: true }) as string[])
  .filter((f) => /\.tsx?$/.test(f))
  .map((f) => fs.readFileSync(path.join(root, f), 'utf8'))
  .join('\n');
const table = consoleRoles(routes);
const KINDS = ['plans', 'entitlements', 'addons', 'incentives'];

/** Every action name the console writes down: `data-route="x.y"`, `route="x.y"`, `can('x.y')`, and RowActions' kinds. */
function named(): Set<string> {
  const out = new Set<string>();
  for (const m of source.matchAll(/(?:data-route|route)=\{?["'`]([a-zA-Z]+\.[a-zA-Z]+)["'`]/g)) out.add(m[1]);
  for (const m of source.matchAll(/\bcan\(['"]([a-zA-Z]+\.[a-zA-Z]+)['"]\)/g)) out.add(m[1]);
  if (/data-route=\{`\$\{kind\}\.update`\}/.test(source) && /data-route=\{`\$\{kind\}\.delete`\}/.test(source))
    for (const kind of KINDS) for (const verb of ['update', 'delete']) out.add(`${kind}.${verb}`);
  return out;
}

/**
 * Writes the console makes without a control of their own to name: the links of the catalog's grid and of an
 * incentive's grants are member writes like every catalog write, and the catalog shows its inputs disabled below
 * member (`canEdit`, from `plans.update`), so the same role rule holds.
 */
const UNDER_CATALOG_FIELDSET = new Set([
  'plans.attachEntitlement',
  'plans.detachEntitlement',
  'plans.setEntitlementLimit',
  'plans.attachAddon',
  'plans.detachAddon',
  'incentives.attachEntitlement',
  'incentives.detachEntitlement',
  'incentives.setEntitlementLimit',
  'incentives.attachAddon',
  'incentives.detachAddon',
]);

describe('the console names its actions by route', () => {
  it('every name it uses is a route a person may call (GET /console/api/roles has it)', () => {
    const unknown = [...named()].filter((n) => !table[n]);
    expect(unknown).to.deep.equal([]);
  });

  it('every write it makes through the SDK is named on its control', () => {
    const calls = new Set([...source.matchAll(/\bapi\.([a-zA-Z]+)\.([a-zA-Z]+)\(/g)].map((m) => `${m[1]}.${m[2]}`));
    const writes = [...calls].filter((n) => table[n]?.writes);
    expect(writes.length).to.be.greaterThan(30);
    const names = named();
    const unnamed = writes.filter((n) => !names.has(n) && !UNDER_CATALOG_FIELDSET.has(n));
    expect(unnamed).to.deep.equal([]);
  });

  it('the roles the console reads are those the guard applies (member for catalog writes, admin for keys)', () => {
    expect(table['plans.create'].role).to.equal('member');
    expect(table['apps.regenerateSecretKey'].role).to.equal('admin');
    expect(table['payments.connect'].role).to.equal('admin');
    expect(table['mcp.updateSettings'].role).to.equal('admin');
    expect(table['webhooks.sendTest'].read_only_exempt).to.equal(true);
  });
});
