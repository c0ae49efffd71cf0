// Every write route of the catalog (plans, entitlements, add-ons, incentives and their links) has an action on the
// console's catalog page: the page calls the route's SDK method. The few left to the API are named here, with why.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { catalogRoutes } from '../../src/catalog/catalog.routes.js';

const PAGE = path.resolve('console/src/pages/Catalog');

/** Write routes the catalog page leaves to the API, and why (docs/decisions/README.md, "The catalog page does every catalog action"). */
const API_ONLY: Record<string, string> = {
  // The plan editor sends the whole meta with plans.update; merging some keys is for code.
  'plans.mergeMeta': 'the editor replaces meta as a whole',
};

describe('the console catalog page has an action for every catalog write route', () => {
  const source = fs
    .readdirSync(PAGE)
    .filter((f) => f.endsWith('.tsx'))
    .map((f) => fs.readFileSync(path.join(PAGE, f), 'utf8'))
    .join('\n');
  const writes = catalogRoutes.filter((r) => r.method !== 'GET');

  it('lists the write routes (the table has them)', () => {
    expect(writes.length).to.be.greaterThan(20);
  });

  for (const r of writes) {
    it(`${r.method} ${r.path} (${r.sdk})`, () => {
      if (API_ONLY[r.sdk]) return expect(API_ONLY[r.sdk]).to.be.a('string');
      const [group, method] = r.sdk.split('.');
      expect(source, `no call of api.${r.sdk} in console/src/pages/Catalog`).to.match(
        new RegExp(`api\\.${group}\\.${method}\\(`),
      );
    });
  }

  it('names no API-only route that does not exist', () => {
    for (const sdk of Object.keys(API_ONLY)) expect(writes.map((r) => r.sdk)).to.include(sdk);
  });
});
