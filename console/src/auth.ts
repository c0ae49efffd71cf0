// People's sign-in through Better Auth's client, at /api/auth on the console's own origin.
import { createAuthClient } from 'better-auth/react';

export const authClient = createAuthClient({ basePath: '/api/auth' });
