// The house's floors (docs/architecture.md), checked on the import graph dependency-cruiser draws: generic code at
// the bottom imports no domain; domains import neither housekeeping, development code nor the composition above
// them; development code (src/dev/) is loaded only on demand; presenters are pure; the event catalog knows
// presenters, not services; workflow code imports nothing but workflow code.
import path from 'node:path';
import { expect } from 'chai';
import { importGraph, type Graph } from '../../scripts/import-graph.js';

type Floor = 'workflow' | 'generic' | 'domain' | 'housekeeping' | 'dev' | 'top' | 'activity';

/** Entry points and composition: they start and wire everything else. */
const TOP = ['main', 'api', 'worker', 'routes', 'app', 'runtime', 'supervisor', 'entities', 'worker-runtime'];
/** Generic files at the top of src/: settings, errors, ids, time, logging, and the ports the floors share. */
const GENERIC_FILES = ['config', 'errors', 'ids', 'time', 'logger', 'context', 'deps'];
const GENERIC_DIRS = ['http', 'db', 'temporal', 'security'];

export function floorOf(file: string): Floor {
  if (file.startsWith('workflows/')) return 'workflow';
  if (file.startsWith('activities/')) return 'activity';
  const rel = file.replace(/^src\//, '');
  const [first] = rel.split('/');
  if (!rel.includes('/')) {
    const name = path.basename(rel, '.ts');
    if (TOP.includes(name)) return 'top';
    if (GENERIC_FILES.includes(name)) return 'generic';
    throw new Error(`${file}: a file at the top of src/ must be listed as top or generic`);
  }
  if (GENERIC_DIRS.includes(first)) return 'generic';
  if (first === 'housekeeping') return 'housekeeping';
  if (first === 'dev') return 'dev';
  return 'domain';
}

const domainOf = (file: string) => file.replace(/^src\//, '').split('/')[0];

/**
 * The tenancy record: every request is for an app, so the generic request layer (credentials, guards, the credential
 * cache) knows the app's type. Its type only, never the entity or the apps service.
 */
const TENANCY_TYPE = 'src/apps/apps.entities.ts';

/**
 * Domains that still use another domain's entity class (a query of its table) instead of that domain's service.
 * The list may only shrink: a new pair fails the test.
 */
const ENTITY_REACHES = new Set([
  'accounts -> catalog',
  'accounts -> subscriptions',
  'cancel-flows -> accounts',
  'cancel-flows -> catalog',
  'cancel-flows -> payments',
  'cancel-flows -> subscriptions',
  'checkouts -> accounts',
  'checkouts -> offers',
  'checkouts -> payments',
  'offers -> catalog',
  'orgs -> apps',
  'payments -> checkouts',
  'payments -> subscriptions',
  'subscriptions -> apps',
  'subscriptions -> cancel-flows',
  'subscriptions -> payments',
  'usage -> catalog',
  'usage -> checkouts',
  'usage -> offers',
  'usage -> payments',
]);

export function violations(graph: Graph): string[] {
  const out: string[] = [];
  for (const { from, to, typeOnly, dynamic } of graph.imports) {
    if (!from.startsWith('src/') && !from.startsWith('workflows/') && !from.startsWith('activities/')) continue;
    const a = floorOf(from);
    const b = floorOf(to);
    const say = (why: string) => out.push(`${from} -> ${to}: ${why}`);
    // The activities' types (proxyActivities<typeof activities>) are the one thing a workflow takes from outside.
    if (a === 'workflow' && b !== 'workflow' && !(b === 'activity' && typeOnly))
      say('workflow code imports only workflow code (and the activities as types)');
    if (a === 'generic' && !['generic', 'workflow'].includes(b) && !(to === TENANCY_TYPE && typeOnly))
      say('generic code imports no domain (declare a port in src/deps.ts)');
    if (a === 'domain' && ['housekeeping', 'dev', 'top', 'activity'].includes(b)) say(`a domain imports no ${b} code`);
    if (a === 'housekeeping' && ['dev', 'top', 'activity'].includes(b)) say(`housekeeping imports no ${b} code`);
    if (b === 'dev' && a !== 'dev' && !dynamic && !typeOnly)
      say('development code is loaded on demand (a dynamic import where it is switched on), never statically');
    if (b === 'dev' && !['dev', 'top'].includes(a)) say('only the entry points load development code');
    if (from.endsWith('.present.ts') && !typeOnly && (to.endsWith('.service.ts') || /^src\/(db|temporal)\//.test(to)))
      say('a presenter is pure: it imports no service, no database and no Temporal code');
    if (from === 'src/events/event-types.ts' && to.endsWith('.service.ts'))
      say('the event catalog imports presenters, not services');
    if (
      a === 'domain' &&
      b === 'domain' &&
      domainOf(from) !== domainOf(to) &&
      to.endsWith('.entities.ts') &&
      !typeOnly &&
      !ENTITY_REACHES.has(`${domainOf(from)} -> ${domainOf(to)}`)
    )
      say('a domain reaches another through its service or a port, not its entities (or `import type` for a shape)');
  }
  return [...new Set(out)].sort();
}

describe('the house: which floor may import which (docs/architecture.md)', function () {
  this.timeout(120_000);
  let graph: Graph;
  before(async () => {
    graph = await importGraph(['src', 'workflows', 'activities']);
  });

  it('has no import running the wrong way', () => {
    expect(violations(graph)).to.deep.equal([]);
  });

  it('keeps the list of entity reaches honest: every listed pair still exists', () => {
    const pairs = new Set(
      graph.imports
        .filter(
          (i) =>
            floorOf(i.from) === 'domain' &&
            floorOf(i.to) === 'domain' &&
            i.to.endsWith('.entities.ts') &&
            !i.typeOnly &&
            domainOf(i.from) !== domainOf(i.to),
        )
        .map((i) => `${domainOf(i.from)} -> ${domainOf(i.to)}`),
    );
    expect(
      [...ENTITY_REACHES].filter((p) => !pairs.has(p)),
      'pairs no longer there: remove them',
    ).to.deep.equal([]);
  });

  it('catches each kind of wrong import (the rules themselves)', () => {
    const graphOf = (imports: Graph['imports']): Graph => ({ files: [], edges: [], imports });
    const at = (from: string, to: string, kind: { typeOnly?: boolean; dynamic?: boolean } = {}) =>
      violations(graphOf([{ from, to, typeOnly: kind.typeOnly ?? false, dynamic: kind.dynamic ?? false }]));
    expect(at('src/http/router.ts', 'src/catalog/catalog.service.ts')).to.have.length(1);
    expect(at('src/http/route.ts', TENANCY_TYPE, { typeOnly: true })).to.deep.equal([]);
    expect(at('src/http/route.ts', TENANCY_TYPE)).to.have.length(1);
    expect(at('src/catalog/catalog.service.ts', 'src/routes.ts')).to.have.length(1);
    expect(at('src/catalog/catalog.service.ts', 'src/housekeeping/retention.ts')).to.have.length(1);
    expect(at('src/main.ts', 'src/dev/demo-seed.ts')).to.have.length(1);
    expect(at('src/main.ts', 'src/dev/demo-seed.ts', { dynamic: true })).to.deep.equal([]);
    expect(at('src/webhooks/fanout.ts', 'src/dev/demo-receiver.ts', { dynamic: true })).to.have.length(2);
    expect(at('src/webhooks/fanout.ts', 'src/dev/demo-receiver.ts')).to.have.length(3);
    expect(at('src/offers/offers.present.ts', 'src/db/sql.ts')).to.have.length(1);
    expect(at('workflows/checkout.ts', 'activities/index.ts', { typeOnly: true })).to.deep.equal([]);
    expect(at('workflows/checkout.ts', 'activities/index.ts')).to.have.length(1);
    expect(at('src/offers/offers.present.ts', 'src/offers/offers.service.ts')).to.have.length(1);
    expect(at('src/events/event-types.ts', 'src/offers/offers.service.ts')).to.have.length(1);
    expect(at('src/webhooks/fanout.ts', 'src/offers/offers.entities.ts')).to.have.length(1);
    expect(at('src/webhooks/fanout.ts', 'src/offers/offers.entities.ts', { typeOnly: true })).to.deep.equal([]);
    expect(at('workflows/checkout.ts', 'src/ids.ts')).to.have.length(1);
    expect(() => floorOf('src/newthing.ts')).to.throw(/must be listed/);
  });
});
