// Knowledge-base folders: the shared folder tree (src/domain/folder-tree.ts) on the knowledge_base kind, with
// its failures turned into this API's answers. Paths travel percent-encoded per segment, like workflow folders.
import type { Repositories } from '../store/index.ts';
import { FolderTree, FolderTreeError } from '../domain/folder-tree.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import { MAX_FOLDERS_PER_TREE } from '../domain/folder-paths.ts';
import { folderPathToWire } from '../workflows/folder-wire.ts';

export const knowledgeTree = (repos: Repositories) => new FolderTree(repos.knowledgeFolders);

export async function inKnowledgeTree<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof FolderTreeError)) throw err;
    const wire = (key: string) => folderPathToWire(String(err.details[key] ?? '/'));
    switch (err.reason) {
      case 'TOO_LARGE':
        throw new DomainError('too_large', `The knowledge folder tree of this workspace has more than ${MAX_FOLDERS_PER_TREE} folders.`, err.details);
      case 'NOT_FOUND':
      case 'NOT_ARCHIVED':
        throw domainNotFound('Folder');
      case 'EXISTS':
        throw new DomainError('conflict', `The folder ${wire('path')} already exists.`, { path: wire('path') });
      case 'INTO_ITSELF':
        throw new DomainError('conflict', 'A folder cannot be moved into itself.', { path: wire('path'), destinationPath: wire('destinationPath') });
      case 'NOT_EMPTY':
        throw new DomainError('conflict', err.message, err.details);
    }
  }
}
