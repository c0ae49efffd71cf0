// Every workflow type the worker runs.
export { pingWorkflow } from './diagnostics.js';
