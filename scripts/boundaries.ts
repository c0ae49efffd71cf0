// The house's floors (docs/architecture.md): which folder may import which, as rules over the import graph that
// dependency-cruiser draws (scripts/import-graph.ts). test/unit/boundaries.test.ts holds the code to them;
// `npm run import-graph` counts what runs the wrong way.
import path from 'node:path';

/** One import, as the rules read it (scripts/import-graph.ts draws them): `import type` only, or a dynamic `import()`. */
export interface Import {
  from: string;
  to: string;
  typeOnly: boolean;
  dynamic: boolean;
}

type Floor = 'contract' | 'workflow' | 'generic' | 'domain' | 'housekeeping' | 'dev' | 'top' | 'activity';

/** Entry points and composition: they start and wire everything else. */
const TOP = ['main', 'api', 'worker', 'routes', 'app', 'runtime', 'supervisor', 'entities', 'worker-runtime'];
/** Generic files at the top of src/: settings, errors, ids, time, logging, and the ports the floors share. */
const GENERIC_FILES = ['config', 'errors', 'ids', 'time', 'logger', 'context', 'deps', 'tools', 'root'];
const GENERIC_DIRS = ['http', 'db', 'temporal', 'security'];

/**
 * The contracts between the service and its workflows: the workflow definitions (workflows/shared.ts), the
 * activities' interface and the account actor's vocabulary (workflows/contracts/). Below every implementation.
 */
export const isContract = (file: string) => file === 'workflows/shared.ts' || file.startsWith('workflows/contracts/');
/** The one workflow file others may import: the account actor's pure rules, which the services decide with too. */
export const SHARED_RULES = 'workflows/billing-rules.ts';

export function floorOf(file: string): Floor {
  if (isContract(file)) return 'contract';
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

export const domainOf = (file: string) => file.replace(/^src\//, '').split('/')[0];

/**
 * The tenancy record: every request is for an app, so the generic request layer (credentials, guards, the credential
 * cache) knows the app's type. Its type only, never the entity or the apps service.
 */
export const TENANCY_TYPE = 'src/apps/apps.entities.ts';

/**
 * Domains that still use another domain's entity class (a query of its table) instead of that domain's service.
 * The list may only shrink: a new pair fails the test.
 */
export const ENTITY_REACHES = new Set([
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

export function violations(graph: { imports: readonly Import[] }): string[] {
  const out: string[] = [];
  for (const { from, to, typeOnly, dynamic } of graph.imports) {
    if (!from.startsWith('src/') && !from.startsWith('workflows/') && !from.startsWith('activities/')) continue;
    const a = floorOf(from);
    const b = floorOf(to);
    const say = (why: string) => out.push(`${from} -> ${to}: ${why}`);
    if (a === 'contract' && b !== 'contract')
      say('a contract imports only other contracts (no workflow, activity or service: they implement it)');
    // A workflow calls its activities through their contract (proxyActivities<Activities>), never their code.
    if (a === 'workflow' && !['workflow', 'contract'].includes(b))
      say('workflow code imports only workflow code and contracts');
    if (b === 'workflow' && !['workflow', 'contract'].includes(a) && to !== SHARED_RULES)
      say('a workflow is started, signalled and called through its contract (workflows/shared.ts), not its code');
    if (a === 'activity' && ['workflow', 'top', 'dev'].includes(b))
      say(`activities import no ${b} code (they implement a contract)`);
    if (a === 'generic' && !['generic', 'contract'].includes(b) && !(to === TENANCY_TYPE && typeOnly))
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

/**
 * Circles of files that the house still has (type-only imports count), each as its files in order: a list that may
 * only shrink, as ENTITY_REACHES. Every other circle fails the boundaries test. The SDK's: its generated operation
 * table (packages/sdk/src/generated/api.ts) imports the request options from core.ts, while core.ts and errors.ts
 * import the operation and conflict-reason types from it; it opens when the generator writes those types to a file of
 * their own that imports no hand-written file (a change of the generated SDK, so of `npm run surface`).
 */
export const KNOWN_CIRCLES: readonly string[][] = [
  ['packages/sdk/src/core.ts', 'packages/sdk/src/errors.ts', 'packages/sdk/src/generated/api.ts'],
];

/** The circles found that are not listed, each as its files joined by ` <-> `. */
export function newCircles(found: readonly string[][]): string[] {
  const known = new Set(KNOWN_CIRCLES.map((c) => [...c].sort().join(' <-> ')));
  return found.map((c) => [...c].sort().join(' <-> ')).filter((c) => !known.has(c));
}
