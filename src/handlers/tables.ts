// Handlers for the Tables operations, one module per part of the family under src/handlers/tables/.
export * from './tables/tables.ts';
export * from './tables/columns.ts';
export * from './tables/rows.ts';
export * from './tables/views.ts';
export * from './tables/transfers.ts';
export * from './tables/folders.ts';
export * from './tables/groups.ts';
