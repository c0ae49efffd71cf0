import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';

describe('PUBLIC_API_URL and the host-provided URL', () => {
  const origin = (env: Record<string, string>) => loadConfig(env).PUBLIC_API_URL;

  it('PUBLIC_API_URL wins over what the platform announces', () => {
    expect(
      origin({ PUBLIC_API_URL: 'https://api.example.com', RENDER_EXTERNAL_URL: 'https://svc.onrender.com' }),
    ).to.equal('https://api.example.com');
  });

  it("falls back to the hosting platform's external URL", () => {
    expect(origin({ RENDER_EXTERNAL_URL: 'https://svc.onrender.com/' })).to.equal('https://svc.onrender.com');
    expect(origin({ RAILWAY_PUBLIC_DOMAIN: 'svc.up.railway.app' })).to.equal('https://svc.up.railway.app');
    expect(origin({ FLY_APP_NAME: 'offers' })).to.equal('https://offers.fly.dev');
    expect(origin({ HEROKU_APP_DEFAULT_DOMAIN_NAME: 'offers-123.herokuapp.com' })).to.equal(
      'https://offers-123.herokuapp.com',
    );
    expect(origin({ VERCEL_URL: 'offers-git-main.vercel.app' })).to.equal('https://offers-git-main.vercel.app');
    expect(origin({ WEBSITE_HOSTNAME: 'offers.azurewebsites.net' })).to.equal('https://offers.azurewebsites.net');
    expect(origin({ KOYEB_PUBLIC_DOMAIN: 'offers-acme.koyeb.app' })).to.equal('https://offers-acme.koyeb.app');
  });

  it('is unset elsewhere (the request host is used)', () => {
    expect(origin({})).to.equal(undefined);
  });
});
