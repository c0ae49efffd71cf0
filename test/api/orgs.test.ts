import { expect } from 'chai';
import { createTestApp } from '../helpers/factories.js';
import { del, get, patch, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

describe('orgs (admin)', () => {
  const admin = () => testEnv().adminKey;

  it('CRUD with ordered app_ids; /apps in that order; delete leaves the apps', async () => {
    const [a, b, c] = [await createTestApp('A'), await createTestApp('B'), await createTestApp('C')];
    const id = `org-${Date.now()}`;
    const created = await post('/orgs', admin(), { id, name: 'Acme', app_ids: [c.id, a.id] });
    expect(created.status).to.equal(201);
    expect(created.body).to.deep.include({ id, name: 'Acme', app_ids: [c.id, a.id] });
    expect((await post('/orgs', admin(), { id })).status).to.equal(409);
    expect((await get(`/orgs/${id}/apps`, admin())).body.map((x: { name: string }) => x.name)).to.deep.equal([
      'C',
      'A',
    ]);
    expect((await patch(`/orgs/${id}`, admin(), { app_ids: [b.id, a.id, c.id] })).body.app_ids).to.deep.equal([
      b.id,
      a.id,
      c.id,
    ]);
    expect((await patch(`/orgs/${id}`, admin(), { app_ids: [a.id, a.id] })).body.error).to.equal(
      'app_ids: must not repeat an app id',
    );
    expect((await patch(`/orgs/${id}`, admin(), { app_ids: ['app_nope'] })).body.error).to.equal(
      'app_ids: app app_nope does not exist',
    );
    await del(`/apps/${a.id}`, a.api_key);
    expect(
      (await get(`/orgs/${id}/apps`, admin())).body.map((x: { name: string }) => x.name),
      'deleted apps left out',
    ).to.deep.equal(['B', 'C']);
    expect((await get('/orgs', admin())).body.map((o: { id: string }) => o.id)).to.include(id);
    expect((await del(`/orgs/${id}`, admin())).status).to.equal(200);
    expect((await get(`/orgs/${id}`, admin())).status).to.equal(404);
    expect((await get(`/apps/${b.id}`, b.api_key)).status, 'apps stay').to.equal(200);
  });

  it('401 for app keys', async () => {
    const app = await createTestApp();
    expect((await get('/orgs', app.api_key)).status).to.equal(401);
    expect((await post('/orgs', app.api_key, { id: 'x' })).status).to.equal(401);
  });
});
