// The house's floors (docs/architecture.md), checked on the import graph dependency-cruiser draws: generic code at
// the bottom imports no domain; domains import neither housekeeping, development code nor the composition above
// them; development code (src/dev/) is loaded only on demand; presenters are pure; the event catalog knows
// presenters, not services; the contracts (workflows/shared.ts, workflows/contracts/) import no implementation, and
// workflow code imports nothing but workflow code and contracts. And no circle of files anywhere in the house.
import { expect } from 'chai';
import {
  domainOf,
  ENTITY_REACHES,
  floorOf,
  KNOWN_CIRCLES,
  newCircles,
  TENANCY_TYPE,
  violations,
} from '../../scripts/boundaries.js';
import { circles, houseGraph, subgraph, type Graph } from '../../scripts/import-graph.js';

describe('the house: which floor may import which (docs/architecture.md)', function () {
  this.timeout(120_000);
  let graph: Graph;
  let house: Graph;
  before(async () => {
    // One reading of the whole house; the floors' rules look at its part in src/, workflows/ and activities/.
    house = await houseGraph();
    graph = subgraph(house, ['src', 'workflows', 'activities']);
  });

  it('has no import running the wrong way', () => {
    expect(violations(graph)).to.deep.equal([]);
  });

  it('has no circle of files anywhere in the house, type-only imports included (but the listed ones)', () => {
    for (const room of ['scripts/', 'activities/', 'bench/', 'packages/sdk-python/src/offerkit/'])
      expect(
        house.files.some((f) => f.startsWith(room)),
        room,
      ).to.equal(true);
    // The Python SDK's imports are read too (the client imports its local evaluator).
    expect(house.edges).to.deep.include([
      'packages/sdk-python/src/offerkit/_client.py',
      'packages/sdk-python/src/offerkit/_local.py',
    ]);
    const found = circles(house.files, house.edges);
    expect(newCircles(found), 'a new circle: cut it where the lower file names the higher one').to.deep.equal([]);
    // The list may only shrink: a listed circle that opened is removed from it.
    const still = new Set(found.map((c) => c.join(' <-> ')));
    expect(
      KNOWN_CIRCLES.filter((c) => !still.has([...c].sort().join(' <-> '))),
      'circles no longer there',
    ).to.deep.equal([]);
  });

  it('finds a circle, a type-only one too (the rule itself)', () => {
    const files = ['workflows/shared.ts', 'workflows/index.ts', 'workflows/checkout.ts', 'src/ids.ts'];
    const edges: [string, string][] = [
      ['workflows/index.ts', 'workflows/checkout.ts'],
      ['workflows/checkout.ts', 'workflows/shared.ts'],
      ['workflows/checkout.ts', 'src/ids.ts'],
    ];
    expect(circles(files, edges)).to.deep.equal([]);
    // `import type * as Workflows from './index.js'` in the contract: a circle although the compiler erases it.
    const typeOnly: [string, string][] = [...edges, ['workflows/shared.ts', 'workflows/index.ts']];
    expect(newCircles(circles(files, typeOnly))).to.deep.equal([
      'workflows/checkout.ts <-> workflows/index.ts <-> workflows/shared.ts',
    ]);
    expect(newCircles([[...KNOWN_CIRCLES[0]].reverse()])).to.deep.equal([]);
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
    // Contracts below implementations: a workflow proxies the activities' contract, never their code (not even
    // its types); the contract imports no workflow; services reach a workflow through its contract.
    expect(at('workflows/checkout.ts', 'workflows/contracts/activities.ts', { typeOnly: true })).to.deep.equal([]);
    expect(at('workflows/checkout.ts', 'activities/index.ts', { typeOnly: true })).to.have.length(1);
    expect(at('workflows/checkout.ts', 'activities/index.ts')).to.have.length(1);
    expect(at('workflows/shared.ts', 'workflows/index.ts', { typeOnly: true })).to.have.length(1);
    expect(at('workflows/contracts/billing.ts', 'workflows/billing-rules.ts', { typeOnly: true })).to.have.length(1);
    expect(at('workflows/contracts/activities.ts', 'workflows/shared.ts', { typeOnly: true })).to.deep.equal([]);
    expect(at('workflows/contracts/activities.ts', 'src/deps.ts', { typeOnly: true })).to.have.length(1);
    expect(at('src/checkouts/checkouts.service.ts', 'workflows/shared.ts')).to.deep.equal([]);
    expect(at('src/checkouts/checkouts.service.ts', 'workflows/checkout.ts', { typeOnly: true })).to.have.length(1);
    expect(at('src/subscriptions/intents.service.ts', 'workflows/billing-rules.ts')).to.deep.equal([]);
    expect(at('activities/checkouts.ts', 'workflows/contracts/activities.ts', { typeOnly: true })).to.deep.equal([]);
    expect(at('activities/account.ts', 'workflows/billing-rules.ts', { typeOnly: true })).to.have.length(1);
    expect(at('src/temporal/client.ts', 'workflows/shared.ts')).to.deep.equal([]);
    expect(at('src/offers/offers.present.ts', 'src/offers/offers.service.ts')).to.have.length(1);
    expect(at('src/events/event-types.ts', 'src/offers/offers.service.ts')).to.have.length(1);
    expect(at('src/webhooks/fanout.ts', 'src/offers/offers.entities.ts')).to.have.length(1);
    expect(at('src/webhooks/fanout.ts', 'src/offers/offers.entities.ts', { typeOnly: true })).to.deep.equal([]);
    expect(at('workflows/checkout.ts', 'src/ids.ts')).to.have.length(1);
    expect(() => floorOf('src/newthing.ts')).to.throw(/must be listed/);
  });
});
