import { z } from 'zod';
import type { Deps } from '../deps.js';
import { audit } from '../http/audit.js';
import { route } from '../http/route.js';
import { deleted, deletedSchema } from '../http/schemas.js';
import { appIdParams, appSchema, createAppBody, updateAppBody } from './apps.schemas.js';
import * as apps from './apps.service.js';
import { presentApp } from './apps.present.js';

const tags = ['Apps'];

/**
 * A change to an app answers only once every API process dropped the app from its credential cache, so
 * the old key (or the deleted app) already fails everywhere when the caller sees the answer.
 */
const settled = async (deps: Deps, change: apps.AppChange) => {
  if (change) await deps.credentials.confirm(change);
};

export const appRoutes = [
  route({
    method: 'POST',
    path: '/apps',
    sdk: 'apps.create',
    auth: ['A'],
    tags,
    summary: 'Create an app',
    description: 'Creates an app with a new secret key and publishable key.',
    body: createAppBody,
    status: 201,
    response: appSchema,
    handler: async ({ em, body }) => presentApp(await apps.createApp(em, body)),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId',
    sdk: 'apps.get',
    auth: ['S'],
    mcp: {
      tool: 'get_app',
      use: 'Use it to confirm which app this server manages. Returns the app, keys redacted.',
      level: 'R',
      redact: ['api_key', 'public_key'],
    },
    secretFields: ['api_key'],
    tags,
    summary: 'Get the app',
    params: appIdParams,
    response: appSchema,
    handler: ({ app }) => presentApp(app!),
  }),
  route({
    method: 'PATCH',
    path: '/apps/:appId',
    sdk: 'apps.update',
    auth: ['S'],
    mcp: {
      tool: 'update_app',
      about: '',
      use: 'Use it to rename the app. Returns the app, keys redacted.',
      level: 'W',
      only: ['name'],
      redact: ['api_key', 'public_key'],
    },
    secretFields: ['api_key'],
    tags,
    summary: 'Update the app',
    description:
      'Merges the sent fields (`name`, `plan`, `checkout_url`). Key fields (`api_key`, `public_key`) are ignored: ' +
      'the keys change only through their regenerate routes. Any other field is a 400 naming it.',
    params: appIdParams,
    body: updateAppBody,
    response: appSchema,
    handler: async ({ em, app, body, deps }) => {
      const r = await apps.updateApp(em, app!, body);
      await settled(deps, r.change);
      return presentApp(r.app);
    },
  }),
  route({
    method: 'DELETE',
    path: '/apps/:appId',
    sdk: 'apps.delete',
    role: 'owner',
    auth: ['S'],
    tags,
    summary: 'Delete the app and everything it owns',
    params: appIdParams,
    response: deletedSchema,
    handler: async ({ em, app, deps }) => {
      await settled(deps, await apps.deleteApp(em, app!));
      return deleted(app!.id);
    },
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/keys/regenerate',
    role: 'admin',
    sdk: 'apps.regenerateSecretKey',
    auth: ['S'],
    tags,
    summary: 'Replace the secret key',
    description:
      'The old secret key and every account token stop working at once. Through the console the new key is answered ' +
      'as `[redacted]`: the person reveals it on purpose (`POST /console/api/apps/:appId/secret-key/reveal`). Each ' +
      'regeneration is logged with who asked (the person, or the credential).',
    params: appIdParams,
    // A person's browser holds a key only through the explicit, logged reveal.
    secretFields: ['api_key'],
    response: z.object({ api_key: z.string() }),
    handler: async (s) => {
      const r = await apps.regenerateSecretKey(s.em, s.app!);
      await settled(s.deps, r.change);
      audit(s, 'secret_key_regenerated');
      return { api_key: r.key };
    },
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/public-key/regenerate',
    role: 'admin',
    sdk: 'apps.regeneratePublicKey',
    auth: ['S'],
    tags,
    summary: 'Replace the publishable key',
    description: 'The old publishable key stops working at once. Each regeneration is logged with who asked.',
    params: appIdParams,
    response: z.object({ public_key: z.string() }),
    handler: async (s) => {
      const r = await apps.regeneratePublicKey(s.em, s.app!);
      await settled(s.deps, r.change);
      audit(s, 'publishable_key_regenerated');
      return { public_key: r.key };
    },
  }),
];
