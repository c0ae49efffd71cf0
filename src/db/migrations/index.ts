// Every committed migration, in order. `npm run migration:create -- <name>` writes a new file; add it here.
import { Migration20261121082939_initial } from './Migration20261121082939_initial.js';

export const migrationsList = [Migration20261121082939_initial];
