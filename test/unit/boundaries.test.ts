// The house's floors (docs/architecture.md), checked on the import graph dependency-cruiser draws: generic code at
// the bottom imports no domain; domains import neither housekeeping, development code nor the composition above
// them; development code (src/dev/) is loaded only on demand; presenters are pure; the event catalog knows
// presenters, not services; workflow code imports nothing but workflow code.
import { expect } from 'chai';
import { domainOf, ENTITY_REACHES, floorOf, TENANCY_TYPE, violations } from '../../scripts/boundaries.js';
import { importGraph, type Graph } from '../../scripts/import-graph.js';

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
