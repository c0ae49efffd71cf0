// The console is built into console/dist and served by the API at /console (src/console-api/console.ts).
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, chunkSizeWarningLimit: 2000 },
  // `npm run console:dev` proxies the API so the console can be developed with hot reload.
  server: {
    proxy: Object.fromEntries(
      ['/api/auth', '/console/api', '/event-types'].map((p) => [
        p,
        process.env.OFFERKIT_API ?? 'http://127.0.0.1:3000',
      ]),
    ),
  },
});
