// Checkouts, by capability: creation, the records (read, completed or expired by an operator, the return page) and
// the completion the checkout workflow runs. Routes and other domains import them through this index.
export * from './checkout-creation.service.js';
export * from './checkout-records.service.js';
export * from './checkout-completion.service.js';
