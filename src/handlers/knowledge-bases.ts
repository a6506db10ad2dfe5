// Handlers for the Knowledge Bases operations; one module per area under ./knowledge-bases/.
export * from './knowledge-bases/bases.ts';
export * from './knowledge-bases/documents.ts';
export * from './knowledge-bases/chunks.ts';
export * from './knowledge-bases/search.ts';
export * from './knowledge-bases/tags.ts';
export * from './knowledge-bases/folders.ts';
export {
  listKnowledgeConnectors, createKnowledgeConnector, getKnowledgeConnector, updateKnowledgeConnector, deleteKnowledgeConnector, syncKnowledgeConnector,
  listKnowledgeConnectorDocuments, updateKnowledgeConnectorDocuments,
} from './knowledge-bases/connectors.ts';
