import { importGraph, circles } from '../scripts/import-graph.ts';
const g = await importGraph();
for (const c of circles(g.files, g.edges)) console.log(c.length, c.join(' '));
