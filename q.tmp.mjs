import pg from 'pg';
const c = new pg.Client({ connectionString: process.argv[2] });
await c.connect();
for (const q of process.argv.slice(3)) { try { console.log(q, JSON.stringify((await c.query(q)).rows)); } catch (e) { console.log(q, e.message); } }
await c.end();
