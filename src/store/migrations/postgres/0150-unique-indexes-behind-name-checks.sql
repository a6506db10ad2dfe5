-- unique indexes behind every name check, so a check-then-write holds without a single writer
-- A workflow's name is unique among the active workflows of its folder (the check in the workflow handlers).
-- Rows that already repeat a name (possible only through a race before this index) keep the oldest one's name,
-- each later one gets its id appended, so nothing is lost and the index can be built.
UPDATE workflows SET name = name || ' (' || substr(id, 1, 8) || ')'
WHERE archived = 0 AND EXISTS (
  SELECT 1 FROM workflows o
  WHERE o.workspace_id = workflows.workspace_id AND o.folder_path = workflows.folder_path AND o.name = workflows.name AND o.archived = 0
    AND (o.created_at < workflows.created_at OR (o.created_at = workflows.created_at AND o.id < workflows.id))
);
CREATE UNIQUE INDEX workflows_active_name ON workflows (workspace_id, folder_path, name) WHERE archived = 0;
-- A tag's display name is unique in its knowledge base ignoring case (the check compares lowercased names): the
-- index folds ASCII case, the check folds the rest. Earlier repeats are renamed as above.
UPDATE knowledge_tag_definitions SET display_name = display_name || ' (' || substr(id, 1, 8) || ')'
WHERE EXISTS (
  SELECT 1 FROM knowledge_tag_definitions o
  WHERE o.knowledge_base_id = knowledge_tag_definitions.knowledge_base_id AND lower(o.display_name) = lower(knowledge_tag_definitions.display_name)
    AND (o.created_at < knowledge_tag_definitions.created_at OR (o.created_at = knowledge_tag_definitions.created_at AND o.id < knowledge_tag_definitions.id))
);
CREATE UNIQUE INDEX knowledge_tags_by_folded_name ON knowledge_tag_definitions (knowledge_base_id, lower(display_name));
